/* faultproxy: a TCP proxy that injects network faults between a client
 * (a Rebound node) and a server (PostgreSQL), for the fault suite
 * (tests/faults/). It forwards bytes both ways until told, on its control
 * socket, to:
 *
 *   blackhole [up|down|both]  stop forwarding (client to server: up) without
 *                             closing anything: what a partition, a dead
 *                             switch or a hung host looks like to TCP. The
 *                             kernel still accepts what fits in the socket
 *                             buffers, so keepalives and tcp_user_timeout do
 *                             not fire; new connections wait unaccepted.
 *   arm PATTERN...            forward normally until a chunk from a client
 *                             holds every PATTERN (and none of those given
 *                             as !PATTERN), forward that chunk, then
 *                             blackhole both ways (an outage that begins
 *                             right after a given statement was sent)
 *   heal                      forward again (a side that closed meanwhile is
 *                             then closed on the other side too)
 *   reset                     close every proxied connection with a reset
 *                             (RST, both sides), then forward again
 *   delay MS                  hold every chunk MS milliseconds (0: none)
 *   status                    "ok mode=M conns=N triggered=T up=B down=B"
 *
 * Each command is one line on a new connection to the Unix socket
 * --control PATH, answered by one line ("ok ..." or "error ...") before the
 * proxy closes it; a command takes effect before its answer.
 *
 *   faultproxy --to HOST:PORT --control PATH [--listen HOST:PORT]
 *              [--port-file PATH]
 *
 * --listen defaults to 127.0.0.1:0; the bound port is written to
 * --port-file (when given) once the proxy is ready. Runs until SIGTERM.
 * One thread, one poll loop. Exit 2 on bad usage, 1 when it cannot set up. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#define MAX_PAIRS 64
#define MAX_PATTERNS 8
#define CHUNK 65536

/* Bytes read from one side, waiting to be written to the other: a queue
 * of chunks, each released at its due time (delay). */
typedef struct chunk {
    struct chunk *next;
    int64_t due_ms;
    size_t len, off;
    char data[];
} chunk;

/* One direction of a pair: from fd `from` to fd `to`. */
typedef struct flow {
    chunk *head, *tail;
    bool eof; /* `from` closed (or failed): shut `to` down once drained */
} flow;

/* A proxied connection: the client's socket and the server's. */
typedef struct pair {
    int cfd, sfd;
    flow up, down; /* up: client to server; down: server to client */
    bool used;
} pair;

static pair pairs[MAX_PAIRS];
static bool hole_up, hole_down; /* blackholed directions */
static int64_t delay_ms;
static char *patterns[MAX_PATTERNS];
static int n_patterns; /* armed when > 0 */
static bool triggered;
static uint64_t bytes_up, bytes_down;
static volatile sig_atomic_t stopping;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

static void nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* "HOST:PORT" into a; false when malformed. */
static bool parse_addr(const char *s, struct sockaddr_in *a)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return false;
    char host[64];
    size_t n = (size_t)(colon - s);
    if (n >= sizeof host)
        return false;
    memcpy(host, s, n);
    host[n] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return false;
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &a->sin_addr) == 1;
}

static void flow_clear(flow *f)
{
    while (f->head) {
        chunk *c = f->head;
        f->head = c->next;
        free(c);
    }
    f->tail = NULL;
    f->eof = false;
}

/* Closes both sides of p; with a reset (SO_LINGER 0: RST) when hard. */
static void pair_close(pair *p, bool hard)
{
    struct linger lg = {1, 0};
    if (hard) {
        setsockopt(p->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        setsockopt(p->sfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(p->cfd);
    close(p->sfd);
    flow_clear(&p->up);
    flow_clear(&p->down);
    p->used = false;
}

static bool matches(const char *data, size_t len)
{
    for (int i = 0; i < n_patterns; i++) {
        bool not = patterns[i][0] == '!' && patterns[i][1];
        const char *p = patterns[i] + not;
        if (!memmem(data, len, p, strlen(p)) != not)
            return false;
    }
    return true;
}

static void disarm(void)
{
    for (int i = 0; i < n_patterns; i++)
        free(patterns[i]);
    n_patterns = 0;
}

/* Writes every chunk of f to `to` now, due or not, waiting up to a second
 * for room (a triggering chunk goes out before the hole closes). */
static void flush_now(int to, flow *f)
{
    int64_t until = now_ms() + 1000;
    while (f->head && now_ms() < until) {
        chunk *c = f->head;
        ssize_t w = write(to, c->data + c->off, c->len - c->off);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {to, POLLOUT, 0};
            poll(&p, 1, 50);
            continue;
        }
        if (w <= 0)
            return;
        c->off += (size_t)w;
        if (c->off < c->len)
            continue;
        f->head = c->next;
        if (!f->head)
            f->tail = NULL;
        free(c);
    }
}

/* Reads what `from` has into f (up: a client's bytes, checked against the
 * armed patterns, `to` the server's socket); false when `from` closed or
 * failed. */
static bool read_into(int from, int to, flow *f, bool up)
{
    char buf[CHUNK];
    ssize_t r = read(from, buf, sizeof buf);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (r <= 0) {
        f->eof = true;
        return false;
    }
    chunk *c = malloc(sizeof *c + (size_t)r);
    if (!c)
        abort();
    c->next = NULL;
    c->due_ms = now_ms() + delay_ms;
    c->len = (size_t)r;
    c->off = 0;
    memcpy(c->data, buf, (size_t)r);
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    if (up) {
        bytes_up += (uint64_t)r;
        if (n_patterns && matches(buf, (size_t)r)) {
            /* this chunk goes through, then nothing more either way */
            disarm();
            triggered = true;
            flush_now(to, f);
            hole_up = hole_down = true;
        }
    } else {
        bytes_down += (uint64_t)r;
    }
    return true;
}

/* Writes the chunks of f that are due to `to`; false when `to` failed. */
static bool write_due(int to, flow *f)
{
    int64_t now = now_ms();
    while (f->head && f->head->due_ms <= now) {
        chunk *c = f->head;
        ssize_t w = write(to, c->data + c->off, c->len - c->off);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        if (w <= 0)
            return false;
        c->off += (size_t)w;
        if (c->off < c->len)
            return true;
        f->head = c->next;
        if (!f->head)
            f->tail = NULL;
        free(c);
    }
    if (!f->head && f->eof)
        shutdown(to, SHUT_WR);
    return true;
}

static void answer(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer(int fd, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
}

static int count_pairs(void)
{
    int n = 0;
    for (int i = 0; i < MAX_PAIRS; i++)
        n += pairs[i].used;
    return n;
}

static const char *mode_name(void)
{
    if (hole_up && hole_down)
        return "blackhole";
    if (hole_up)
        return "blackhole-up";
    if (hole_down)
        return "blackhole-down";
    return n_patterns ? "armed" : delay_ms ? "delay" : "forward";
}

/* Runs one control command (a line, no newline) and answers it on fd. */
static void command(int fd, char *line)
{
    char *save = NULL, *verb = strtok_r(line, " \t\r", &save);
    if (!verb) {
        answer(fd, "error empty command");
    } else if (!strcmp(verb, "blackhole")) {
        const char *dir = strtok_r(NULL, " \t\r", &save);
        if (!dir || !strcmp(dir, "both"))
            hole_up = hole_down = true;
        else if (!strcmp(dir, "up"))
            hole_up = true;
        else if (!strcmp(dir, "down"))
            hole_down = true;
        else {
            answer(fd, "error blackhole takes up, down or both, not '%s'", dir);
            return;
        }
        answer(fd, "ok mode=%s", mode_name());
    } else if (!strcmp(verb, "arm")) {
        disarm();
        triggered = false;
        char *p;
        while ((p = strtok_r(NULL, " \t\r", &save)) && n_patterns < MAX_PATTERNS)
            patterns[n_patterns++] = strdup(p);
        if (!n_patterns)
            answer(fd, "error arm needs at least one pattern");
        else
            answer(fd, "ok mode=%s", mode_name());
    } else if (!strcmp(verb, "heal")) {
        hole_up = hole_down = false;
        disarm();
        answer(fd, "ok mode=%s", mode_name());
    } else if (!strcmp(verb, "reset")) {
        int n = 0;
        for (int i = 0; i < MAX_PAIRS; i++)
            if (pairs[i].used) {
                pair_close(&pairs[i], true);
                n++;
            }
        hole_up = hole_down = false;
        disarm();
        answer(fd, "ok reset=%d", n);
    } else if (!strcmp(verb, "delay")) {
        const char *ms = strtok_r(NULL, " \t\r", &save);
        char *end = NULL;
        long v = ms ? strtol(ms, &end, 10) : -1;
        if (!ms || *end || v < 0 || v > 600000) {
            answer(fd, "error delay takes milliseconds from 0 to 600000");
            return;
        }
        delay_ms = v;
        answer(fd, "ok mode=%s", mode_name());
    } else if (!strcmp(verb, "status")) {
        answer(fd, "ok mode=%s conns=%d triggered=%d up=%llu down=%llu", mode_name(),
               count_pairs(), triggered ? 1 : 0, (unsigned long long)bytes_up,
               (unsigned long long)bytes_down);
    } else {
        answer(fd, "error unknown command '%s'", verb);
    }
}

/* A control connection: one line read (within a second), one answer. */
static void control(int lfd)
{
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return;
    char line[512];
    size_t n = 0;
    int64_t until = now_ms() + 1000;
    while (n < sizeof line - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)(until - now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = read(fd, line + n, sizeof line - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(line, '\n', n))
            break;
    }
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    command(fd, line);
    close(fd);
}

/* A client connected: its pair, with a connection to the server. */
static void accept_client(int lfd, const struct sockaddr_in *to)
{
    int cfd = accept(lfd, NULL, NULL);
    if (cfd < 0)
        return;
    int slot = -1;
    for (int i = 0; i < MAX_PAIRS && slot < 0; i++)
        if (!pairs[i].used)
            slot = i;
    int sfd = socket(AF_INET, SOCK_STREAM, 0);
    if (slot < 0 || sfd < 0 || connect(sfd, (const struct sockaddr *)to, sizeof *to) != 0) {
        if (sfd >= 0)
            close(sfd);
        close(cfd);
        return;
    }
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nonblock(cfd);
    nonblock(sfd);
    pairs[slot] = (pair){.cfd = cfd, .sfd = sfd, .used = true};
}

/* The poll timeout: until the earliest delayed chunk is due (-1: none). */
static int next_due(void)
{
    int64_t first = -1, now = now_ms();
    for (int i = 0; i < MAX_PAIRS; i++) {
        if (!pairs[i].used)
            continue;
        const chunk *a = pairs[i].up.head, *b = pairs[i].down.head;
        if (a && !hole_up && (first < 0 || a->due_ms < first))
            first = a->due_ms;
        if (b && !hole_down && (first < 0 || b->due_ms < first))
            first = b->due_ms;
    }
    if (first < 0)
        return 200;
    return first <= now ? 0 : (int)(first - now);
}

static void usage(void)
{
    fprintf(stderr, "usage: faultproxy --to HOST:PORT --control PATH [--listen HOST:PORT]"
                    " [--port-file PATH]\n");
}

int main(int argc, char **argv)
{
    const char *listen_at = "127.0.0.1:0", *to_s = NULL, *control_path = NULL, *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--listen") && v)
            listen_at = v;
        else if (!strcmp(argv[i], "--to") && v)
            to_s = v;
        else if (!strcmp(argv[i], "--control") && v)
            control_path = v;
        else if (!strcmp(argv[i], "--port-file") && v)
            port_file = v;
        else {
            usage();
            return 2;
        }
        i++;
    }
    struct sockaddr_in la, to;
    if (!to_s || !control_path || !parse_addr(listen_at, &la) || !parse_addr(to_s, &to)) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t alen = sizeof la;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&la, &alen) != 0) {
        fprintf(stderr, "faultproxy: cannot listen on '%s': %s\n", listen_at, strerror(errno));
        return 1;
    }
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    if (strlen(control_path) >= sizeof ua.sun_path) {
        fprintf(stderr, "faultproxy: control path '%s' is too long\n", control_path);
        return 2;
    }
    strcpy(ua.sun_path, control_path);
    unlink(control_path);
    int cfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (cfd < 0 || bind(cfd, (struct sockaddr *)&ua, sizeof ua) != 0 || listen(cfd, 8) != 0) {
        fprintf(stderr, "faultproxy: cannot listen on '%s': %s\n", control_path, strerror(errno));
        return 1;
    }
    if (port_file) {
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", ntohs(la.sin_port)) < 0 || fclose(f) != 0 ||
            rename(tmp, port_file) != 0) {
            fprintf(stderr, "faultproxy: cannot write '%s'\n", port_file);
            return 1;
        }
    }
    while (!stopping) {
        struct pollfd p[2 + 2 * MAX_PAIRS];
        int idx[2 * MAX_PAIRS];
        int n = 0;
        p[n++] = (struct pollfd){cfd, POLLIN, 0};
        /* new connections wait in the backlog while the hole is open */
        p[n++] = (struct pollfd){lfd, hole_up || hole_down ? 0 : POLLIN, 0};
        for (int i = 0; i < MAX_PAIRS; i++) {
            pair *q = &pairs[i];
            if (!q->used)
                continue;
            short ce = 0, se = 0;
            if (!hole_up && !q->up.eof)
                ce |= POLLIN;
            if (!hole_down && !q->down.eof)
                se |= POLLIN;
            if (!hole_up && q->up.head)
                se |= POLLOUT;
            if (!hole_down && q->down.head)
                ce |= POLLOUT;
            /* no events: left out (a hung-up socket would report POLLHUP
             * at every turn while the hole keeps it unread) */
            idx[n - 2] = i;
            p[n++] = (struct pollfd){ce ? q->cfd : -1, ce, 0};
            idx[n - 2] = i;
            p[n++] = (struct pollfd){se ? q->sfd : -1, se, 0};
        }
        int ready = poll(p, (nfds_t)n, next_due());
        if (ready < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            control(cfd);
        if (p[1].revents & POLLIN)
            accept_client(lfd, &to);
        for (int k = 2; k < n; k += 2) {
            pair *q = &pairs[idx[k - 2]];
            if (!q->used)
                continue; /* reset by a command above */
            bool ok = true;
            /* a side that failed (RST) or hung up: read it to learn so */
            short cr = p[k].revents, sr = p[k + 1].revents;
            if (!hole_up && !q->up.eof && (cr & (POLLIN | POLLHUP | POLLERR)))
                read_into(q->cfd, q->sfd, &q->up, true);
            if (!hole_down && !q->down.eof && (sr & (POLLIN | POLLHUP | POLLERR)))
                read_into(q->sfd, q->cfd, &q->down, false);
            if (!hole_up)
                ok = write_due(q->sfd, &q->up);
            if (ok && !hole_down)
                ok = write_due(q->cfd, &q->down);
            if (!ok || (q->up.eof && q->down.eof && !q->up.head && !q->down.head))
                pair_close(q, false);
        }
    }
    for (int i = 0; i < MAX_PAIRS; i++)
        if (pairs[i].used)
            pair_close(&pairs[i], false);
    close(lfd);
    close(cfd);
    unlink(control_path);
    return 0;
}
