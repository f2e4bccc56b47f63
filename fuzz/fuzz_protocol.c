/* Fuzzes the wire protocol end to end: the input is a client's byte stream
 * (command lines ending in LF or CRLF), sent over a socketpair to a
 * connection (rb_conn_accept) on a fresh in-memory server per input
 * (rb_srv_alloc / rb_sq_open_store on the null store / rb_srv_loop_new, see
 * srv.h). The loop runs until the server is idle: every line read, no
 * commit outstanding; a FETCH that waits for work is timed out at once
 * instead of after 2 s. Properties: the server does not crash or leak; it
 * greets with +HI; every reply is a well-formed RESP frame (+line, -line,
 * $N bulk of exactly N bytes, or $-1); there is exactly one reply per
 * command line while the connection stays open (fewer only once the
 * server closed it, e.g. END or a refused HELLO); every bulk reply is valid
 * JSON (INFO, FETCH, JOB, JOBS, WORKERS, BEAT, PUSHB), and INFO's is an
 * object; at the end no job is PENDING and the jid table, ready queues,
 * state lists and timer heap agree (counts, and jobs.h's invariants).
 * A first line "#!HEX" makes the commits HEX's bits name fail (see below):
 * the storage-error replies and what they undo are fuzzed too. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "backend/sqlite/backend.h"
#include "backend/sqlite/null.h"
#include "backend/sqlite/sq.h"
#include "config/config.h"
#include "fuzz.h"
#include "common/log.h"
#include "server/srv.h"

/* What the harness saw: the bytes the server sent back. */
typedef struct sink {
    char *p;
    size_t n, cap;
} sink;

static void sink_read(sink *s, int fd)
{
    for (;;) {
        if (s->cap - s->n < 65536) {
            s->cap = s->cap ? s->cap * 2 : 131072;
            s->p = realloc(s->p, s->cap);
            FUZZ_CHECK(s->p != NULL);
        }
        ssize_t r = read(fd, s->p + s->n, s->cap - s->n);
        if (r <= 0)
            return;
        s->n += (size_t)r;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    /* the refusals and commit failures it provokes are expected: quiet */
    rb_log_set_level((rb_log_level)(RB_LOG_ERROR + 1));
    return 0;
}

static rb_srv *server_new(uint64_t fail_mask)
{
    rb_srv *srv = rb_srv_alloc();
    rb_config_init(&srv->cfg);
    srv->cfg.server.max_job_bytes = 1024; /* the smallest allowed: lines over it are reachable */
    rb_rng_seed(&srv->rng, 42);           /* the same input, the same run */
    rb_err err = {0};
    rb_store *store = rb_store_null_new();
    rb_store_null_fail_commits(store, fail_mask);
    FUZZ_CHECK(rb_sq_open_store(srv->eng, store, &err) == 0);
    rb_srv_loop_new(srv);
    return srv;
}

/* The connection (at most one), NULL once closed. */
static rb_conn *the_conn(rb_srv *srv)
{
    return srv->conns.head ? rb_container_of(srv->conns.head, rb_conn, link) : NULL;
}

/* Runs the loop until the connection is gone or idle: nothing unread in
 * the socket or its buffer, no command waiting. Returns true when it was
 * still open. */
static bool run_until_idle(rb_srv *srv, int peer, sink *out)
{
    for (int rounds = 0; rounds < 1000000; rounds++) {
        event_base_loop(srv->eng->base, EVLOOP_NONBLOCK);
        sink_read(out, peer);
        rb_conn *c = the_conn(srv);
        if (!c) { /* closed by the server: read its last reply */
            if (srv->draining.size == 0)
                return false;
            event_base_loop(srv->eng->base, EVLOOP_ONCE);
            continue;
        }
        if (c->fetch_op && c->fetch_op->wait_ev) { /* a FETCH with nothing to do: its 2 s are up now */
            event_active(c->fetch_op->wait_ev, EV_TIMEOUT, 1);
            continue;
        }
        if (c->busy) { /* a reply waits for a commit: block until the writer says */
            event_base_loop(srv->eng->base, EVLOOP_ONCE);
            continue;
        }
        int pending = 0;
        ioctl(bufferevent_getfd(c->bev), FIONREAD, &pending);
        if (pending == 0 && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
            srv->draining.size == 0)
            return true;
    }
    FUZZ_CHECK(!"the server never became idle");
    return false;
}

/* The in-memory indexes agree (jobs.h's invariants), checked when idle. */
typedef struct tally {
    size_t by_state[RB_JOB_DEAD + 1], queued, bad;
} tally;

static void tally_job(void *e, void *arg)
{
    const rb_job *j = e;
    tally *t = arg;
    if (j->state > RB_JOB_DEAD || !j->group || j->priority < 1 || j->priority > RB_PRIORITIES ||
        (j->wid && j->state != RB_JOB_WORKING) || /* no wid: a FETCH without HELLO wid */
        (j->state >= RB_JOB_SCHEDULED && j->state != RB_JOB_ENQUEUED) !=
            (j->timer.idx != RB_HEAP_NONE))
        t->bad++;
    else
        t->by_state[j->state]++;
}

/* A group's ENQUEUED jobs as its priority lists hold them. */
static size_t group_ready(const rb_group *g, size_t *sum)
{
    size_t n = 0;
    for (int p = 0; p < RB_PRIORITIES; p++)
        n += g->ready[p].size;
    if (sum)
        *sum += n;
    return n;
}

static void count_group(void *e, void *arg)
{
    group_ready(e, arg);
}

static void tally_queue(void *e, void *arg)
{
    const rb_queue *q = e;
    tally *t = arg;
    size_t n = group_ready(q->none, NULL);
    rb_table_each(&q->groups, count_group, &n);
    if (n != q->size)
        t->bad++;
    t->queued += q->size;
}

static void check_indexes(rb_srv *srv)
{
    rb_jobs *js = &rb_sq_of(srv->eng)->jobs;
    tally t = {0};
    rb_table_each(&js->by_jid, tally_job, &t);
    rb_table_each(&js->queues, tally_queue, &t);
    FUZZ_CHECK(t.bad == 0);
    FUZZ_CHECK(t.by_state[RB_JOB_PENDING] == 0); /* every commit is done */
    FUZZ_CHECK(t.by_state[RB_JOB_ENQUEUED] == js->enqueued && t.queued == js->enqueued);
    FUZZ_CHECK(t.by_state[RB_JOB_SCHEDULED] == js->scheduled.size);
    FUZZ_CHECK(t.by_state[RB_JOB_WORKING] == js->working.size);
    FUZZ_CHECK(t.by_state[RB_JOB_RETRIES] == js->retries.size);
    FUZZ_CHECK(t.by_state[RB_JOB_DEAD] == js->dead.size);
    FUZZ_CHECK(js->timers.n == js->scheduled.size + js->working.size + js->retries.size +
                                   js->dead.size);
}

/* One RESP frame at *pos; returns its kind ('+', '-', '$', or 'n' for a
 * null bulk) with the payload in *data and *len, or 0 when malformed. */
static int next_frame(const sink *s, size_t *pos, const char **data, size_t *len)
{
    size_t i = *pos;
    const char *p = s->p + i, *end = s->p + s->n;
    const char *crlf = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!crlf)
        return 0;
    char kind = *p;
    if (kind == '+' || kind == '-') {
        FUZZ_CHECK(!memchr(p, '\n', (size_t)(crlf - p))); /* one line */
        *data = p + 1;
        *len = (size_t)(crlf - p - 1);
        *pos = (size_t)(crlf + 2 - s->p);
        return kind;
    }
    if (kind != '$')
        return 0;
    if (crlf - p == 3 && !memcmp(p, "$-1", 3)) {
        *pos = (size_t)(crlf + 2 - s->p);
        return 'n';
    }
    size_t n = 0;
    for (const char *q = p + 1; q < crlf; q++) {
        if (*q < '0' || *q > '9' || n > (SIZE_MAX - 9) / 10)
            return 0;
        n = n * 10 + (size_t)(*q - '0');
    }
    if (crlf - p < 2 || (size_t)(end - crlf - 2) < n + 2 || memcmp(crlf + 2 + n, "\r\n", 2))
        return 0;
    *data = crlf + 2;
    *len = n;
    *pos = (size_t)(crlf + 2 + n + 2 - s->p);
    return '$';
}

/* Whether the line is an INFO command (as commands.c reads it). */
static bool is_info(const char *line, size_t n)
{
    while (n && *line == ' ') {
        line++;
        n--;
    }
    return n >= 4 && !strncasecmp(line, "INFO", 4) && (n == 4 || line[4] == ' ' || line[4] == '\r');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    /* A first line "#!HEX" is for the harness: commit k fails when bit k
     * of HEX is set (the null store's injection); it is not sent. */
    uint64_t fail_mask = 0;
    if (size >= 2 && data[0] == '#' && data[1] == '!') {
        size_t i = 2;
        for (; i < size && data[i] != '\n'; i++) {
            int d = data[i] >= '0' && data[i] <= '9'   ? data[i] - '0'
                    : data[i] >= 'a' && data[i] <= 'f' ? data[i] - 'a' + 10
                                                       : -1;
            if (d >= 0)
                fail_mask = fail_mask << 4 | (uint64_t)d;
        }
        i += i < size;
        data += i;
        size -= i;
    }
    /* The input as lines: a final unterminated line is completed (the
     * server would wait for the rest of it). */
    size_t in_n = size + (size == 0 || data[size - 1] != '\n');
    char *in = malloc(in_n ? in_n : 1);
    FUZZ_CHECK(in != NULL);
    if (size)
        memcpy(in, data, size);
    in[in_n - 1] = '\n';
    size_t lines = 0;
    for (size_t i = 0; i < in_n; i++)
        lines += in[i] == '\n';

    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    FUZZ_CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0 && fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
    rb_srv *srv = server_new(fail_mask);
    rb_conn_accept(srv, sv[0]);
    sink out = {0};

    /* Send the input in pieces the socket takes, running the server as it
     * reads them. */
    size_t sent = 0;
    bool open = true;
    while (open && sent < in_n) {
        ssize_t w = write(sv[1], in + sent, in_n - sent);
        if (w > 0)
            sent += (size_t)w;
        else
            FUZZ_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
        open = run_until_idle(srv, sv[1], &out);
    }
    if (open)
        open = run_until_idle(srv, sv[1], &out);

    /* The replies; FUZZ_PROTOCOL_SHOW=1 prints them (to look at a seed). */
    if (getenv("FUZZ_PROTOCOL_SHOW"))
        fprintf(stderr, "--- %zu lines, %s at the end; replies:\n%.*s", lines,
                open ? "open" : "closed", (int)out.n, out.p);
    size_t pos = 0, replies = 0;
    const char *d;
    size_t dn;
    FUZZ_CHECK(out.n >= 5 && !memcmp(out.p, "+HI {", 5));
    FUZZ_CHECK(next_frame(&out, &pos, &d, &dn) == '+');
    const char *line = in;
    while (pos < out.n) {
        int kind = next_frame(&out, &pos, &d, &dn);
        FUZZ_CHECK(kind != 0);
        FUZZ_CHECK(replies < lines);
        const char *eol = memchr(line, '\n', (size_t)(in + in_n - line));
        if (kind == '$') {
            json_t *v = json_loadb(d, dn, JSON_DECODE_ANY, NULL);
            FUZZ_CHECK(v != NULL);
            if (is_info(line, (size_t)(eol - line)))
                FUZZ_CHECK(json_is_object(v));
            json_decref(v);
        }
        replies++;
        line = eol + 1;
    }
    if (open) {
        FUZZ_CHECK(replies == lines);
        check_indexes(srv);
    }

    rb_srv_free(srv);
    close(sv[1]);
    free(out.p);
    free(in);
    return 0;
}
