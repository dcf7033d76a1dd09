// wsload: a single-threaded epoll WebSocket load generator for Benchmarks/*.sh (C, no dependencies:
// `gcc -O2 -o wsload wsload.c`). Plain ws:// over loopback, no extensions offered (so neither server
// compresses), client frames masked as RFC 6455 requires. One monotonic clock (CLOCK_MONOTONIC) for
// every timestamp. Written in C so the generator costs the servers as little CPU as possible on a
// 2-core machine it shares with them.
//
//   wsload echo   --port P [--path /] [--conns 64] [--window 16] [--size 32] [--seconds 10] [--warmup 2]
//       Each connection keeps WINDOW text messages of SIZE bytes in flight; prints echoed messages/s.
//   wsload fanout --port P --path /subscribe [--subs 1000] [--tokens FILE] [--subscribe JSON]
//                 --method POST --target /broadcast [--auth TOKEN] [--body FMT] [--latency-runs 100]
//                 [--seconds 10] [--inflight 4] [--backlog 100] [--settle 3] [--http-port P2] [--rate R]
//       SUBS sockets (bearer tokens from FILE round-robin, SUBSCRIBE sent after the upgrade; ready when
//       a message containing "snapshot" arrived). Then (1) latency: LATENCY_RUNS mutations one at a
//       time (HTTP METHOD TARGET with BODY, %d → the mutation number), each waiting until every
//       subscriber received it, then 5–205 ms (or, with --rate R, until 1/R s after it was sent); (2) throughput: INFLIGHT keep-alive HTTP connections each with one
//       mutation outstanding for SECONDS while fewer than BACKLOG mutations are undelivered somewhere;
//       deliveries_per_s counts the deliveries within those SECONDS; then the drain. A delivery is
//       the first "bench N" a subscriber sees for each N (concurrent mutations may commit in any
//       order; a message naming N twice counts once). Prints one `key value` line per result.
//       --http-port sends the mutations to another server than the subscribers' (two instances on
//       one database: a change made on one, delivered by the other); --seconds 0 skips (2).
//   wsload idle   --port P --path PATH [--conns 10000] [--tokens FILE] [--subscribe JSON] [--ready-file F]
//       Opens CONNS sockets (≤ 200 handshakes at a time), waits until each is ready (the 101, or with
//       --subscribe a "snapshot" message), prints `ready N`, writes F, then holds them (answering
//       pings) until killed.
#define LOADGEN_NAME "wsload"
#include "loadgen.h"
#include <poll.h>

// ---------------------------------------------------------------- growable byte buffer
typedef struct { char *data; size_t len, cap, off; } Buf;

static void buf_reserve(Buf *b, size_t extra) {
    if (b->off > 0 && b->off == b->len) b->off = b->len = 0;
    if (b->len + extra <= b->cap) return;
    if (b->off > 0) { memmove(b->data, b->data + b->off, b->len - b->off); b->len -= b->off; b->off = 0; }
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    b->data = realloc(b->data, cap);
    if (!b->data) die("out of memory");
    b->cap = cap;
}
static void buf_append(Buf *b, const void *p, size_t n) { buf_reserve(b, n); memcpy(b->data + b->len, p, n); b->len += n; }

// ---------------------------------------------------------------- connections
enum { WS, HTTP };
enum { CONNECTING, HANDSHAKING, OPEN, CLOSED };
typedef struct {
    int fd, kind, state, ready, want_out;
    Buf in, out, msg;     // msg: payload of a fragmented message being assembled
    int msg_opcode;
    long last_seen;       // fanout: every mutation ≤ this was delivered (concurrent mutations may
    uint64_t seen_above;  //   commit out of order: bit i = last_seen + 1 + i arrived already)
    long pending;         // echo: messages in flight; http: 1 while a request is outstanding
    double sent_at;       // http: when the outstanding request was written
} Conn;

static int epfd;
static struct sockaddr_in server, http_server;  // the WebSockets' server; the mutations' (fanout --http-port)
static const char *opt_path = "/", *opt_tokens = NULL, *opt_subscribe = NULL;
static char **tokens; static size_t token_count;
static long ready_count, closed_count, failed_count, snapshots_after_ready;
static uint32_t rng = 2463534242u;

static uint32_t xorshift(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }

static void conn_events(Conn *c) {
    struct epoll_event ev = { .events = EPOLLIN | (c->want_out ? EPOLLOUT : 0), .data.ptr = c };
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl mod");
}

static void conn_close(Conn *c) {
    if (c->state == CLOSED) return;
    if (c->kind == WS && c->state == OPEN) closed_count++;
    else if (c->kind == WS) failed_count++;
    c->state = CLOSED;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
}

static void conn_flush(Conn *c) {
    while (c->out.len > c->out.off) {
        ssize_t n = send(c->fd, c->out.data + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (n > 0) { c->out.off += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_out) { c->want_out = 1; conn_events(c); }
            return;
        }
        conn_close(c);
        return;
    }
    c->out.off = c->out.len = 0;
    if (c->want_out) { c->want_out = 0; conn_events(c); }
}

static void conn_open(Conn *c, int kind) {
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) die("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const struct sockaddr_in *to = kind == HTTP ? &http_server : &server;
    if (connect(c->fd, (const struct sockaddr *)to, sizeof *to) < 0 && errno != EINPROGRESS) die("connect");
    c->state = CONNECTING;
    c->want_out = 1;
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl add");
}

// A masked client frame (RFC 6455 §5.2) appended to the connection's output.
static void ws_frame(Conn *c, int opcode, const char *payload, size_t n) {
    unsigned char head[14]; size_t h = 0;
    head[h++] = 0x80 | (unsigned char)opcode;
    if (n < 126) head[h++] = 0x80 | (unsigned char)n;
    else if (n < 65536) { head[h++] = 0x80 | 126; head[h++] = n >> 8; head[h++] = n & 255; }
    else { head[h++] = 0x80 | 127; for (int i = 7; i >= 0; i--) head[h++] = (n >> (8 * i)) & 255; }
    uint32_t key = xorshift();
    memcpy(head + h, &key, 4); h += 4;
    buf_reserve(&c->out, h + n);
    memcpy(c->out.data + c->out.len, head, h);
    unsigned char *dst = (unsigned char *)c->out.data + c->out.len + h;
    const unsigned char *mask = head + h - 4;
    for (size_t i = 0; i < n; i++) dst[i] = (unsigned char)payload[i] ^ mask[i & 3];
    c->out.len += h + n;
}

static long ws_index;  // round-robin over tokens
static void ws_start_handshake(Conn *c) {
    char request[2048];
    int n = snprintf(request, sizeof request,
        "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
        opt_path, ntohs(server.sin_port));
    if (token_count) n += snprintf(request + n, sizeof request - n, "Authorization: Bearer %s\r\n", tokens[ws_index++ % token_count]);
    n += snprintf(request + n, sizeof request - n, "\r\n");
    buf_append(&c->out, request, (size_t)n);
    c->state = HANDSHAKING;
}

// Called for every complete server message (text/binary) on an open socket.
typedef void (*MessageHandler)(Conn *c, const char *p, size_t n, int opcode);
static MessageHandler on_message;

static void ws_mark_ready(Conn *c) { if (!c->ready) { c->ready = 1; ready_count++; } }

static void ws_read(Conn *c) {
    Buf *in = &c->in;
    if (c->state == HANDSHAKING) {
        char *end = memmem(in->data + in->off, in->len - in->off, "\r\n\r\n", 4);
        if (!end) return;
        if (in->len - in->off < 12 || memcmp(in->data + in->off + 9, "101", 3) != 0) {
            fprintf(stderr, "wsload: upgrade refused: %.*s\n", (int)(end - in->data - in->off), in->data + in->off);
            conn_close(c);
            return;
        }
        in->off = (size_t)(end + 4 - in->data);
        c->state = OPEN;
        if (opt_subscribe) { ws_frame(c, 1, opt_subscribe, strlen(opt_subscribe)); conn_flush(c); }
        else ws_mark_ready(c);
        if (c->state == CLOSED) return;
    }
    for (;;) {
        unsigned char *p = (unsigned char *)in->data + in->off;
        size_t avail = in->len - in->off;
        if (avail < 2) return;
        int fin = p[0] & 0x80, opcode = p[0] & 0x0f;
        uint64_t len = p[1] & 0x7f; size_t h = 2;
        if (p[1] & 0x80) { fprintf(stderr, "wsload: masked server frame\n"); conn_close(c); return; }
        if (len == 126) { if (avail < 4) return; len = (p[2] << 8) | p[3]; h = 4; }
        else if (len == 127) { if (avail < 10) return; len = 0; for (int i = 0; i < 8; i++) len = (len << 8) | p[2 + i]; h = 10; }
        if (avail < h + len) { buf_reserve(in, h + len - avail); return; }
        const char *payload = (const char *)p + h;
        in->off += h + len;
        switch (opcode) {
        case 0x9: ws_frame(c, 0xA, payload, len); break;           // ping → pong
        case 0xA: break;
        case 0x8: ws_frame(c, 0x8, payload, len < 2 ? len : 2); conn_flush(c); conn_close(c); return;
        case 0x0:
            buf_append(&c->msg, payload, len);
            if (fin) { on_message(c, c->msg.data, c->msg.len, c->msg_opcode); c->msg.len = c->msg.off = 0; }
            break;
        default:
            if (fin) on_message(c, payload, len, opcode);
            else { c->msg_opcode = opcode; c->msg.len = c->msg.off = 0; buf_append(&c->msg, payload, len); }
        }
        if (c->state == CLOSED) return;
    }
}

// ---------------------------------------------------------------- HTTP mutations (fanout)
static const char *opt_method = "POST", *opt_target = "/broadcast", *opt_auth = NULL, *opt_body = "{\"name\":\"bench %d\"}";
static long http_errors, http_done;
static double *sent_at; static long sent_cap, next_mutation = 1;

static void http_send(Conn *c) {
    char body[1024], request[4096];
    long k = next_mutation++;
    int bn = snprintf(body, sizeof body, opt_body, (int)k);
    int n = snprintf(request, sizeof request, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                              "Content-Length: %d\r\n", opt_method, opt_target, bn);
    if (opt_auth) n += snprintf(request + n, sizeof request - n, "Authorization: Bearer %s\r\n", opt_auth);
    n += snprintf(request + n, sizeof request - n, "\r\n%s", body);
    if (k >= sent_cap) { fprintf(stderr, "wsload: too many mutations\n"); exit(2); }
    sent_at[k] = now();
    c->pending = 1;
    buf_append(&c->out, request, (size_t)n);
    conn_flush(c);
}

// Reads whole responses (Content-Length or no body); returns when one completed (c->pending = 0).
static void http_read(Conn *c) {
    Buf *in = &c->in;
    for (;;) {
        char *start = in->data + in->off;
        char *end = memmem(start, in->len - in->off, "\r\n\r\n", 4);
        if (!end) return;
        long length = 0;
        char *cl = memmem(start, (size_t)(end - start), "\r\nContent-Length:", 17);
        if (!cl) cl = memmem(start, (size_t)(end - start), "\r\ncontent-length:", 17);
        if (cl) length = strtol(cl + 17, NULL, 10);
        if (memmem(start, (size_t)(end - start), "hunked", 6)) { fprintf(stderr, "wsload: chunked response not supported\n"); exit(2); }
        size_t total = (size_t)(end + 4 - start) + (size_t)length;
        if (in->len - in->off < total) { buf_reserve(in, total); return; }
        int status = atoi(start + 9);
        if (status < 200 || status > 299) {
            if (http_errors++ < 3) fprintf(stderr, "wsload: mutation answered %.*s\n", (int)total, start);
        }
        http_done++;
        in->off += total;
        c->pending = 0;
    }
}

// ---------------------------------------------------------------- event loop
static Conn *conns; static long conn_count;

static void handle(Conn *c, uint32_t events) {
    if (c->state == CLOSED) return;
    if (c->state == CONNECTING) {
        int err = 0; socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) { errno = err; fprintf(stderr, "wsload: connect: %s\n", strerror(err)); conn_close(c); return; }
        if (c->kind == WS) ws_start_handshake(c); else c->state = OPEN;
        conn_flush(c);
        if (c->state == CLOSED) return;
    }
    if (events & EPOLLOUT) { conn_flush(c); if (c->state == CLOSED) return; }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        for (;;) {
            buf_reserve(&c->in, 65536);
            ssize_t n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
            if (n > 0) {
                c->in.len += (size_t)n;
                if (c->kind == WS) ws_read(c); else http_read(c);
                if (c->state == CLOSED) return;
                if ((size_t)n < 65536) break;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            conn_close(c);
            return;
        }
        if (c->out.len > c->out.off) conn_flush(c);
    }
}

// One epoll_wait round (timeout in ms).
static void poll_once(int timeout) {
    struct epoll_event events[512];
    int n = epoll_wait(epfd, events, 512, timeout);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < n; i++) handle(events[i].data.ptr, events[i].events);
}

// Opens `count` WebSocket connections, ≤ 200 handshakes in flight, until all are ready or failed.
static void open_all(long count, double timeout) {
    long started = 0;
    double deadline = now() + timeout;
    while (ready_count + failed_count + closed_count < count) {
        while (started < count && started - ready_count - failed_count - closed_count < 200) conn_open(&conns[started++], WS);
        poll_once(50);
        if (now() > deadline) { fprintf(stderr, "wsload: only %ld of %ld sockets ready after %.0f s\n", ready_count, count, timeout); exit(3); }
    }
    if (failed_count + closed_count) { fprintf(stderr, "wsload: %ld sockets failed, %ld closed\n", failed_count, closed_count); exit(3); }
}

static void load_tokens(void) {
    if (!opt_tokens) return;
    FILE *f = fopen(opt_tokens, "r");
    if (!f) die("tokens file");
    char line[512]; size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        if (token_count == cap) { cap = cap ? cap * 2 : 1024; tokens = realloc(tokens, cap * sizeof *tokens); }
        tokens[token_count++] = strdup(line);
    }
    fclose(f);
}

// ---------------------------------------------------------------- echo
static char echo_payload[65536]; static long opt_size = 32, opt_window = 16, echoed;
static void echo_message(Conn *c, const char *p, size_t n, int opcode) {
    (void)p; (void)n; (void)opcode;
    echoed++;
    ws_frame(c, 1, echo_payload, (size_t)opt_size);  // keep the window full; flushed after the read
}

// ---------------------------------------------------------------- fanout
static long dump;
static double *latencies; static long latency_count, latency_cap, deliveries;
static void fanout_message(Conn *c, const char *p, size_t n, int opcode) {
    (void)opcode;
    double t = now();
    if (!c->ready) { if (memmem(p, n, "snapshot", 8)) ws_mark_ready(c); return; }
    if (memmem(p, n, "\"snapshot\"", 10)) snapshots_after_ready++;
    if (c == conns && dump > 0) { dump--; fprintf(stderr, "message (%zu bytes): %.*s\n", n, (int)(n < 700 ? n : 700), p); }
    const char *q = p, *end = p + n;
    while ((q = memmem(q, (size_t)(end - q), "bench ", 6))) {
        q += 6;
        long k = strtol(q, NULL, 10);
        if (k <= c->last_seen || k >= next_mutation) continue;
        while (k - c->last_seen > 64) {  // a gap wider than the window: count it as lost, move on
            c->last_seen++;
            c->seen_above >>= 1;
        }
        uint64_t bit = 1ull << (k - c->last_seen - 1);
        if (c->seen_above & bit) continue;  // named twice
        c->seen_above |= bit;
        deliveries++;
        if (latency_count < latency_cap) latencies[latency_count++] = t - sent_at[k];
        while (c->seen_above & 1) { c->last_seen++; c->seen_above >>= 1; }
    }
}

static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void report_latency(const char *prefix, double *v, long n) {
    if (n == 0) { printf("%s_samples 0\n", prefix); return; }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    printf("%s_samples %ld\n%s_p50_ms %.3f\n%s_p99_ms %.3f\n%s_max_ms %.3f\n", prefix, n, prefix, v[n / 2] * 1e3,
           prefix, v[(long)(n * 0.99)] * 1e3, prefix, v[n - 1] * 1e3);
}

static long min_last_seen(long subs) {
    long m = -1;
    for (long i = 0; i < subs; i++) if (conns[i].state == OPEN && (m < 0 || conns[i].last_seen < m)) m = conns[i].last_seen;
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: see the comment at the top of wsload.c\n"); return 64; }
    const char *mode = argv[1];
    long port = 0, http_port = 0, opt_conns = 64, opt_subs = 1000, latency_runs = 100, inflight = 4, backlog = 100;
    double seconds = 10, warmup = 2, settle = 3, rate = 0;
    const char *ready_file = NULL;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "wsload: %s needs a value\n", k); return 64; }
        i++;
        if (!strcmp(k, "--port")) port = atol(v);
        else if (!strcmp(k, "--http-port")) http_port = atol(v);
        else if (!strcmp(k, "--path")) opt_path = v;
        else if (!strcmp(k, "--conns")) opt_conns = atol(v);
        else if (!strcmp(k, "--window")) opt_window = atol(v);
        else if (!strcmp(k, "--size")) opt_size = atol(v);
        else if (!strcmp(k, "--seconds")) seconds = atof(v);
        else if (!strcmp(k, "--warmup")) warmup = atof(v);
        else if (!strcmp(k, "--subs")) opt_subs = atol(v);
        else if (!strcmp(k, "--tokens")) opt_tokens = v;
        else if (!strcmp(k, "--subscribe")) opt_subscribe = v;
        else if (!strcmp(k, "--method")) opt_method = v;
        else if (!strcmp(k, "--target")) opt_target = v;
        else if (!strcmp(k, "--auth")) opt_auth = v;
        else if (!strcmp(k, "--body")) opt_body = v;
        else if (!strcmp(k, "--latency-runs")) latency_runs = atol(v);
        else if (!strcmp(k, "--rate")) rate = atof(v);
        else if (!strcmp(k, "--inflight")) inflight = atol(v);
        else if (!strcmp(k, "--settle")) settle = atof(v);
        else if (!strcmp(k, "--backlog")) backlog = atol(v);
        else if (!strcmp(k, "--dump")) dump = atol(v);  // debugging: print subscriber 0's first N messages
        else if (!strcmp(k, "--ready-file")) ready_file = v;
        else { fprintf(stderr, "wsload: unknown option %s\n", k); return 64; }
    }
    if (!port) { fprintf(stderr, "wsload: --port is required\n"); return 64; }
    server.sin_family = AF_INET;
    server.sin_port = htons((uint16_t)port);
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    http_server = server;
    if (http_port) http_server.sin_port = htons((uint16_t)http_port);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");
    load_tokens();

    if (!strcmp(mode, "echo")) {
        if (opt_size > (long)sizeof echo_payload) opt_size = sizeof echo_payload;
        for (long i = 0; i < opt_size; i++) echo_payload[i] = 'a' + (char)(i % 26);
        on_message = echo_message;
        conns = calloc((size_t)opt_conns, sizeof *conns);
        conn_count = opt_conns;
        open_all(opt_conns, 30);
        for (long i = 0; i < opt_conns; i++) {
            for (long w = 0; w < opt_window; w++) ws_frame(&conns[i], 1, echo_payload, (size_t)opt_size);
            conn_flush(&conns[i]);
        }
        double start = now();
        while (now() < start + warmup) poll_once(10);
        long before = echoed; double t0 = now();
        while (now() < t0 + seconds) poll_once(10);
        double elapsed = now() - t0; long count = echoed - before;
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
        printf("echo_messages %ld\nelapsed_s %.3f\nmessages_per_s %.0f\nclosed %ld\nclient_cpu_percent %.0f\n", count, elapsed,
               count / elapsed, closed_count, 100 * cpu / (now() - start));
        return closed_count ? 1 : 0;
    }

    if (!strcmp(mode, "idle")) {
        on_message = fanout_message;  // "snapshot" → ready; everything later ignored
        conns = calloc((size_t)opt_conns, sizeof *conns);
        conn_count = opt_conns;
        double t0 = now();
        open_all(opt_conns, 300);
        printf("ready %ld\nopen_s %.2f\n", ready_count, now() - t0);
        fflush(stdout);
        if (ready_file) { FILE *f = fopen(ready_file, "w"); if (f) { fprintf(f, "%ld\n", ready_count); fclose(f); } }
        for (;;) poll_once(1000);  // until killed (SIGTERM)
    }

    if (!strcmp(mode, "fanout")) {
        on_message = fanout_message;
        sent_cap = 4 * 1000 * 1000;
        sent_at = calloc((size_t)sent_cap, sizeof *sent_at);
        latency_cap = 20 * 1000 * 1000;
        latencies = malloc((size_t)latency_cap * sizeof *latencies);
        conns = calloc((size_t)(opt_subs + inflight), sizeof *conns);
        conn_count = opt_subs + inflight;
        double t0 = now();
        open_all(opt_subs, 300);
        printf("subscribers %ld\nsubscribe_s %.2f\n", ready_count, now() - t0);
        fflush(stdout);
        double s = now();
        while (now() < s + settle) poll_once(10);  // presence announcements etc. drain
        for (long i = 0; i < inflight; i++) conn_open(&conns[opt_subs + i], HTTP);
        while (now() < s + settle + 0.2) poll_once(10);
        Conn *h0 = &conns[opt_subs];
        if (h0->state != OPEN) { fprintf(stderr, "wsload: HTTP connection failed\n"); return 3; }
        snapshots_after_ready = 0;

        // (1) latency: one mutation at a time, each delivered everywhere before the next.
        long timeouts = 0;
        for (long r = 0; r < latency_runs; r++) {
            long k = next_mutation;
            http_send(h0);
            double deadline = now() + 5;
            while ((h0->pending || min_last_seen(opt_subs) < k) && now() < deadline) poll_once(5);
            if (now() >= deadline) { timeouts++; if (timeouts > 3) break; }
            // 5–205 ms apart, uniformly: a server that batches on a timer (chronir polls every
            // 150 ms) is then hit at every phase of it, not always just after its last tick.
            // With --rate R: the next one 1/R s after this one was sent (or at once, if later).
            double pause = rate > 0 ? sent_at[k] + 1.0 / rate : now() + 0.005 + (xorshift() % 2000) / 10000.0;
            while (now() < pause) poll_once(1);
        }
        printf("latency_mutations %ld\nlatency_timeouts %ld\n", next_mutation - 1, timeouts);
        report_latency("latency", latencies, latency_count);
        fflush(stdout);
        if (seconds <= 0) return 0;

        // (2) throughput: INFLIGHT HTTP connections, one mutation outstanding on each, while fewer
        // than BACKLOG mutations are still on their way to some subscriber (bounds the servers'
        // queues, so the rate measured over the window is one they sustain).
        latency_count = 0;
        long first = next_mutation;
        long before = deliveries;
        double start = now();
        while (now() < start + seconds) {
            if (next_mutation - 1 - min_last_seen(opt_subs) < backlog) {
                for (long i = 0; i < inflight; i++) {
                    Conn *h = &conns[opt_subs + i];
                    if (h->state == OPEN && !h->pending) http_send(h);
                }
            }
            poll_once(1);
        }
        double sent_end = now();
        long in_window = deliveries - before;
        long last = next_mutation - 1;
        double drain = now() + 10;
        while ((min_last_seen(opt_subs) < last || conns[opt_subs].pending) && now() < drain) poll_once(5);
        double end = now();
        long delivered = deliveries - before, mutations = last - first + 1;
        long open_subs = 0;
        for (long i = 0; i < opt_subs; i++) open_subs += conns[i].state == OPEN;
        printf("mutations %ld\nmutations_per_s %.0f\ndeliveries %ld\nexpected_deliveries %ld\n"
               "deliveries_per_s %.0f\nsend_s %.3f\ndrain_s %.3f\nconflation_snapshots %ld\nsubscribers_closed %ld\nhttp_errors %ld\n",
               mutations, mutations / (sent_end - start), delivered, mutations * open_subs, in_window / (sent_end - start),
               sent_end - start, end - sent_end, snapshots_after_ready, opt_subs - open_subs, http_errors);
        report_latency("loaded_latency", latencies, latency_count);
        return 0;
    }
    fprintf(stderr, "wsload: unknown mode %s\n", mode);
    return 64;
}
