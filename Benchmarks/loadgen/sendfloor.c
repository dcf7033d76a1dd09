// sendfloor: the physical floor of a fan-out on this machine (issue 23) — the time to hand one small
// WebSocket-sized frame to the kernel for each of SUBS connected loopback TCP sockets, with nothing
// else: no parsing, no hub, no JSON, no event loop. Benchmarks/fanout.sh runs it beside the servers and
// prints it next to chronir's server-side histogram (commit → the last subscriber's frame handed to
// the kernel), which can never be below this.
// C, no dependencies: `gcc -O2 -pthread -o sendfloor sendfloor.c`.
//
//   sendfloor [--subs 1000] [--rounds 200] [--rate 20] [--size 100]
//
// Sockets: SUBS pairs over 127.0.0.1, the sending ends O_NONBLOCK + TCP_NODELAY as chronir's are. The
// receiving ends live in a forked child process that drains them with epoll on one thread, as the
// load generator (wsload.c) does. Each round sends one SIZE-byte frame (a 2-byte unmasked text-frame
// header + payload, RFC 6455 §5.2) to every socket, timed from the first `send` to the last one's
// return, ROUNDS rounds at RATE per second; first with one thread sending to all SUBS sockets, then
// with two threads each sending to half (both released together; the round ends when the later one
// finishes — chronir's two event loops split a group's subscribers the same way). A send that would
// block is counted (`would_block`), not retried: at RATE rounds per second the receiver keeps up.
// Prints `key value` lines: p50/p99/max in ms per mode.
#define LOADGEN_NAME "sendfloor"
#include "loadgen.h"
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

static int subs = 1000, rounds = 200, size = 100;
static double rate = 20;
static int *senders, *receivers;
static unsigned char frame[126];
static long would_block;

// ---------------------------------------------------------------- receiver (child process)
static void drain(void) {
    int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    for (int i = 0; i < subs; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = receivers[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, receivers[i], &ev) < 0) die("epoll_ctl");
    }
    static char buffer[65536];
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            ssize_t r = read(events[i].data.fd, buffer, sizeof buffer);
            if (r == 0) _exit(0);  // the sender closed: done
        }
    }
}

// ---------------------------------------------------------------- senders
typedef struct {
    int from, to;
    pthread_barrier_t *start, *done;
    double finished;
    long blocked;
} Slice;

static void send_slice(Slice *s) {
    for (int i = s->from; i < s->to; i++) {
        ssize_t n = send(senders[i], frame, (size_t)size, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) s->blocked++;
        else if (n < 0) die("send");
    }
    s->finished = now();
}

static void *worker(void *arg) {
    Slice *s = arg;
    for (int r = 0; r < rounds; r++) {
        pthread_barrier_wait(s->start);
        send_slice(s);
        pthread_barrier_wait(s->done);
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *mode, double *ms) {
    qsort(ms, (size_t)rounds, sizeof *ms, by_value);
    int p99 = (int)(0.99 * rounds + 0.5) - 1;
    if (p99 < 0) p99 = 0;
    printf("%s_p50_ms %.3f\n%s_p99_ms %.3f\n%s_max_ms %.3f\n", mode, ms[rounds / 2], mode, ms[p99], mode, ms[rounds - 1]);
}

static void pause_until(double deadline) {
    double wait = deadline - now();
    if (wait <= 0) return;
    struct timespec ts = {.tv_sec = (time_t)wait, .tv_nsec = (long)((wait - (time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
}

/// Rounds with `threads` senders (1 or 2); fills ms[] with each round's first-send → last-return time.
static void run(int threads, double *ms) {
    pthread_barrier_t start, done;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    Slice slices[2];
    pthread_t ids[2];
    for (int t = 0; t < threads; t++) {
        slices[t] = (Slice){.from = subs * t / threads, .to = subs * (t + 1) / threads, .start = &start, .done = &done};
        if (pthread_create(&ids[t], NULL, worker, &slices[t]) != 0) die("pthread_create");
    }
    double next = now();
    for (int r = 0; r < rounds; r++) {
        pause_until(next);
        next += 1 / rate;
        double began = now();
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        double last = slices[0].finished;
        for (int t = 1; t < threads; t++) if (slices[t].finished > last) last = slices[t].finished;
        ms[r] = (last - began) * 1000;
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        would_block += slices[t].blocked;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--subs")) subs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else { fprintf(stderr, "sendfloor: unknown option %s\n", argv[i]); return 2; }
    }
    if (subs < 2 || rounds < 1 || rate <= 0 || size < 3 || size > 125) {
        fprintf(stderr, "sendfloor: need --subs ≥ 2, --rounds ≥ 1, --rate > 0, 3 ≤ --size ≤ 125\n");
        return 2;
    }
    struct rlimit limit = {.rlim_cur = (rlim_t)subs * 2 + 64, .rlim_max = (rlim_t)subs * 2 + 64};
    if (setrlimit(RLIMIT_NOFILE, &limit) < 0) die("setrlimit (raise the open-files limit)");
    frame[0] = 0x81;  // FIN + text
    frame[1] = (unsigned char)(size - 2);
    memset(frame + 2, 'x', (size_t)size - 2);

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 4096) < 0 ||
        getsockname(listener, (struct sockaddr *)&address, &length) < 0)
        die("listen");
    senders = calloc((size_t)subs, sizeof *senders);
    receivers = calloc((size_t)subs, sizeof *receivers);
    int one = 1;
    for (int i = 0; i < subs; i++) {
        receivers[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (receivers[i] < 0 || connect(receivers[i], (struct sockaddr *)&address, sizeof address) < 0) die("connect");
        senders[i] = accept(listener, NULL, NULL);
        if (senders[i] < 0) die("accept");
        fcntl(senders[i], F_SETFL, fcntl(senders[i], F_GETFL) | O_NONBLOCK);
        setsockopt(senders[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    close(listener);
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        for (int i = 0; i < subs; i++) close(senders[i]);
        drain();
    }
    for (int i = 0; i < subs; i++) close(receivers[i]);

    double *ms = calloc((size_t)rounds, sizeof *ms);
    printf("subs %d\nrounds %d\nrate %g\nframe_bytes %d\n", subs, rounds, rate, size);
    run(1, ms);
    report("one_thread", ms);
    run(2, ms);
    report("two_threads", ms);
    printf("would_block %ld\n", would_block);
    for (int i = 0; i < subs; i++) close(senders[i]);
    waitpid(child, NULL, 0);
    return 0;
}
