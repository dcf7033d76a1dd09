// What the C load generators (wsload.c, sendfloor.c) share: the headers they use, one monotonic
// clock, and a fatal error that names the program. Each defines LOADGEN_NAME before including this.
#ifndef LOADGEN_H
#define LOADGEN_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/// Seconds on the monotonic clock.
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/// Prints "<program>: <message> (<errno text>)" and exits 2.
static void die(const char *message) {
    fprintf(stderr, LOADGEN_NAME ": %s (%s)\n", message, strerror(errno));
    exit(2);
}
#endif
