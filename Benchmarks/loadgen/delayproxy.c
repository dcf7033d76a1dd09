// delayproxy: a TCP proxy on loopback that delays every chunk by a fixed time per direction, to put a
// network's round trip between the instances and PostgreSQL (kernel netem is not available here).
//
//   delayproxy LISTEN_PORT UPSTREAM_PORT DELAY_US [MAX_SECONDS]
//
// Listens on 127.0.0.1:LISTEN_PORT; each accepted connection gets its own connection to
// 127.0.0.1:UPSTREAM_PORT (loopback only, both ways). Every chunk read from one side is written to
// the other DELAY_US microseconds after it was read (clock_nanosleep on CLOCK_MONOTONIC with an
// absolute deadline: precise to tens of microseconds, where Go or Python timers round to the
// millisecond), in order; a round trip through the proxy therefore gains 2 × DELAY_US. The delay is
// a latency, not a bandwidth limit: chunks queue behind each other without waiting for the previous
// one's delay. An end of stream is passed on (shutdown(SHUT_WR)) after the same delay.
//
// Bounds: at most MAX_CONNECTIONS connections at once (more are closed at accept), at most
// QUEUE_CHUNKS chunks of at most CHUNK_BYTES in flight per direction (the reader then waits: back
// pressure instead of unbounded memory), and the process exits after MAX_SECONDS (default 3600)
// so a forgotten proxy does not outlive its benchmark. Two threads per direction per connection.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNECTIONS = 1024, QUEUE_CHUNKS = 64, CHUNK_BYTES = 16384 };

static int upstream_port;
static long delay_ns;
static atomic_int open_connections;

struct chunk {
    struct timespec due;
    int length;  // 0: end of stream
    char bytes[CHUNK_BYTES];
};

// One direction: a reader thread fills the ring, a writer thread drains it at each chunk's due time.
struct direction {
    int from, to;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct chunk *ring;  // QUEUE_CHUNKS entries
    int head, count;
    int failed;  // the writer gave up (peer gone): the reader stops too
    struct link *link;
};

// Both directions of one proxied connection; freed by the last of its four threads.
struct link {
    struct direction up, down;
    atomic_int threads;
};

static void add_ns(struct timespec *t, long ns) {
    t->tv_nsec += ns % 1000000000L;
    t->tv_sec += ns / 1000000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec += 1;
    }
}

static void release(struct link *link) {
    if (atomic_fetch_sub(&link->threads, 1) != 1) return;
    close(link->up.from);
    close(link->up.to);
    free(link->up.ring);
    free(link->down.ring);
    free(link);
    atomic_fetch_sub(&open_connections, 1);
}

static void *reader(void *arg) {
    struct direction *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->lock);
        while (d->count == QUEUE_CHUNKS && !d->failed) pthread_cond_wait(&d->changed, &d->lock);
        if (d->failed) {
            pthread_mutex_unlock(&d->lock);
            break;
        }
        struct chunk *c = &d->ring[(d->head + d->count) % QUEUE_CHUNKS];
        pthread_mutex_unlock(&d->lock);
        // Only this thread writes the slot past the end of the queue, so reading into it unlocked is safe.
        ssize_t n;
        do n = read(d->from, c->bytes, CHUNK_BYTES);
        while (n < 0 && errno == EINTR);
        clock_gettime(CLOCK_MONOTONIC, &c->due);
        add_ns(&c->due, delay_ns);
        c->length = n > 0 ? (int)n : 0;
        pthread_mutex_lock(&d->lock);
        d->count += 1;
        pthread_cond_broadcast(&d->changed);
        pthread_mutex_unlock(&d->lock);
        if (n <= 0) break;
    }
    release(d->link);
    return NULL;
}

static void *writer(void *arg) {
    struct direction *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->lock);
        while (d->count == 0) pthread_cond_wait(&d->changed, &d->lock);
        struct chunk *c = &d->ring[d->head];
        pthread_mutex_unlock(&d->lock);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR) {}
        int length = c->length, ok = 1;
        for (int sent = 0; sent < length;) {
            ssize_t n = send(d->to, c->bytes + sent, (size_t)(length - sent), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                ok = 0;
                break;
            }
            sent += (int)n;
        }
        pthread_mutex_lock(&d->lock);
        d->head = (d->head + 1) % QUEUE_CHUNKS;
        d->count -= 1;
        if (!ok || length == 0) d->failed = 1;
        pthread_cond_broadcast(&d->changed);
        pthread_mutex_unlock(&d->lock);
        if (length == 0) {
            shutdown(d->to, SHUT_WR);
            break;
        }
        if (!ok) {
            // The receiving side is gone: wake the reader of this direction by closing its input.
            shutdown(d->from, SHUT_RD);
            break;
        }
    }
    release(d->link);
    return NULL;
}

static int connect_upstream(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)upstream_port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void start_direction(struct direction *d, struct link *link, int from, int to) {
    d->from = from;
    d->to = to;
    d->link = link;
    d->ring = calloc(QUEUE_CHUNKS, sizeof(struct chunk));
    if (!d->ring) {
        perror("calloc");
        exit(1);
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_t thread;
    if (pthread_create(&thread, &attributes, reader, d) || pthread_create(&thread, &attributes, writer, d)) {
        perror("pthread_create");
        exit(1);
    }
    pthread_attr_destroy(&attributes);
}

static void stop_after(int seconds) {
    struct sigaction action = {.sa_handler = SIG_DFL};
    sigaction(SIGALRM, &action, NULL);
    alarm((unsigned)seconds);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s LISTEN_PORT UPSTREAM_PORT DELAY_US [MAX_SECONDS]\n", argv[0]);
        return 2;
    }
    int listen_port = atoi(argv[1]);
    upstream_port = atoi(argv[2]);
    delay_ns = atol(argv[3]) * 1000L;
    stop_after(argc > 4 ? atoi(argv[4]) : 3600);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 128) < 0) {
        perror("bind/listen");
        return 1;
    }
    fprintf(stderr, "delayproxy: 127.0.0.1:%d -> 127.0.0.1:%d, %ld us per direction\n", listen_port, upstream_port,
            delay_ns / 1000);
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            perror("accept");
            return 1;
        }
        int upstream = atomic_load(&open_connections) < MAX_CONNECTIONS ? connect_upstream() : -1;
        if (upstream < 0) {
            close(client);
            continue;
        }
        atomic_fetch_add(&open_connections, 1);
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct link *link = calloc(1, sizeof *link);
        atomic_init(&link->threads, 4);
        start_direction(&link->up, link, client, upstream);
        start_direction(&link->down, link, upstream, client);
    }
}
