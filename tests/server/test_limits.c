/* Limits and hostile clients against the real server: over-long lines and
 * jobs, the connection limit, clients stalled in the middle of a line,
 * clients that disconnect mid-command or mid-reply, clients that never read
 * their replies, pipelining beyond the read limit, thousands of idle
 * connections, and running out of file descriptors. The server must answer
 * with a clear error, stay up, keep its memory bounded and exit cleanly. */
#include <criterion/criterion.h>

#include <sys/resource.h>

#include "harness.h"

static rbh_server S;

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(limits, .fini = stop, .timeout = 60);

/* Starts the server with the given config (TOML text or NULL). */
static void start(const char *config)
{
    cr_assert_eq(rbh_start(&S, config, NULL), 0, "server did not start (see %s)", S.log);
}

/* Criterion ignores assertion failures in .fini, so every test ends by
 * stopping the server and asserting that it exited cleanly (status 0, no
 * sanitizer or valgrind report). */
static void finish(void)
{
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define SERVER_TEST(name) \
    static void body_##name(void); \
    Test(limits, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

/* Polls INFO on c until server.connections equals want (10 s at most). */
static bool wait_connections(rbh_conn *c, long long want)
{
    int64_t deadline = rbh_now_ms() + 10000;
    long long n;
    while ((n = rbh_info_int(c, "server.connections")) != want && rbh_now_ms() < deadline)
        rbh_sleep_ms(10);
    if (n != want)
        fprintf(stderr, "server.connections is %lld, wanted %lld\n", n, want);
    return n == want;
}

/* A PUSH line whose args hold one string of n 'x' characters. */
static char *push_line(const char *jid, size_t n)
{
    char *pad = malloc(n + 1);
    memset(pad, 'x', n);
    pad[n] = '\0';
    char *line = NULL;
    cr_assert(asprintf(&line, "PUSH {\"jid\":\"%s\",\"jobtype\":\"big\",\"args\":[\"%s\"]}", jid,
                       pad) > 0);
    free(pad);
    return line;
}

/* Reads until the server closes c (30 s at most); returns everything it
 * sent meanwhile, buffered bytes included, as a string; caller frees. */
static char *read_until_closed(rbh_conn *c)
{
    size_t cap = c->len + 65536, len = c->len;
    char *all = malloc(cap + 1);
    memcpy(all, c->buf, c->len);
    c->len = 0;
    int64_t deadline = rbh_now_ms() + 30000;
    while (rbh_now_ms() < deadline) {
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (len == cap)
            all = realloc(all, (cap *= 2) + 1);
        ssize_t r = read(c->fd, all + len, cap - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    all[len] = '\0';
    return all;
}

/* True when the peer has closed c: a read returns EOF or an error within
 * 10 s (bytes that arrive meanwhile are discarded). */
static bool peer_closed(rbh_conn *c)
{
    char buf[65536];
    int64_t deadline = rbh_now_ms() + 10000;
    while (rbh_now_ms() < deadline) {
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r <= 0)
            return true;
    }
    return false;
}

SERVER_TEST(long_lines_and_big_jobs_are_refused_with_an_error)
{
    start("[server]\nmax_job_bytes = 2048\n");
    rbh_conn *c = rbh_connect(&S, "w1");
    char *ok = push_line("fits-000001", 1900);
    cr_assert(rbh_expect(c, "+OK", "%s", ok));
    free(ok);
    /* a complete line over the limit */
    char *big = push_line("toolong-0001", 3000);
    char *r = rbh_cmd(c, "%s", big);
    cr_assert(r && !strcmp(r, "-ERR command line longer than 2048 bytes"), "got %s", r);
    free(r);
    cr_assert(peer_closed(c), "the connection should be closed after the error");
    rbh_close(c);
    /* a line that never ends: refused as soon as the limit is passed */
    c = rbh_connect(&S, "w2");
    big[2500] = '\0';
    cr_assert_eq(rbh_send(c, big, strlen(big)), 0);
    char *all = read_until_closed(c);
    cr_assert(strstr(all, "-ERR command line longer than 2048 bytes"), "got '%s'", all);
    free(all);
    free(big);
    rbh_close(c);
    /* nothing of the refused jobs was stored; the server still serves */
    c = rbh_connect(&S, "w3");
    cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"toolong-0001\"}"));
    cr_assert_eq(rbh_info_int(c, "faktory.queues.default"), 1);
    cr_assert(wait_connections(c, 1));
    rbh_close(c);
}

SERVER_TEST(connection_limit_refuses_with_an_error_and_recovers)
{
    start("[server]\nmax_connections = 4\n");
    rbh_conn *c[4];
    for (int i = 0; i < 4; i++)
        cr_assert_not_null(c[i] = rbh_connect(&S, NULL));
    rbh_conn *extra = rbh_connect_raw(&S);
    cr_assert_not_null(extra, "the refused connection should still hear why");
    cr_assert_str_eq(extra->greeting, "-ERR too many connections: 4");
    cr_assert(peer_closed(extra));
    rbh_close(extra);
    rbh_close(c[3]);
    cr_assert(wait_connections(c[0], 3));
    c[3] = rbh_connect(&S, NULL);
    cr_assert_not_null(c[3], "a slot freed by a close is usable again");
    cr_assert(rbh_expect(c[3], "+OK", "PUSH {\"jid\":\"after-limit1\",\"jobtype\":\"a\",\"args\":[]}"));
    for (int i = 0; i < 4; i++)
        rbh_close(c[i]);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The two timeouts come from the configuration; neither closes early. */
SERVER_TEST(the_line_and_hello_timeouts_are_configurable)
{
    start("[server]\nline_timeout = \"2s\"\nhello_timeout = 1\n");
    rbh_conn *stalled = rbh_connect(&S, "stalled");
    cr_assert_not_null(stalled);
    double t0 = mono_s();
    const char half[] = "FAIL {\"jid\":";
    cr_assert_eq(rbh_send(stalled, half, sizeof half - 1), 0);
    char *all = read_until_closed(stalled);
    double waited = mono_s() - t0;
    cr_assert(strstr(all, "-ERR command line unfinished after 2 s"), "got '%s'", all);
    cr_assert(waited >= 1.9, "closed after %.2f s, before the 2 s line timeout", waited);
    free(all);
    rbh_close(stalled);
    t0 = mono_s();
    rbh_conn *early = rbh_connect_raw(&S); /* no HELLO at all */
    cr_assert_not_null(early);
    cr_assert(peer_closed(early), "a connection without HELLO is closed by hello_timeout");
    waited = mono_s() - t0;
    cr_assert(waited >= 0.9, "closed after %.2f s, before the 1 s HELLO timeout", waited);
    rbh_close(early);
}

SERVER_TEST(a_client_stalled_mid_line_is_closed_others_are_not)
{
    start(NULL);
    rbh_conn *stalled = rbh_connect(&S, "stalled");
    rbh_conn *idle = rbh_connect(&S, "idle");
    rbh_conn *early = rbh_connect_raw(&S); /* half a HELLO */
    cr_assert(stalled && idle && early);
    const char half[] = "PUSH {\"jid\":\"half-000001\",\"jobtype\":";
    cr_assert_eq(rbh_send(stalled, half, sizeof half - 1), 0);
    cr_assert_eq(rbh_send(early, "HEL", 3), 0);
    char *all = read_until_closed(stalled);
    cr_assert(strstr(all, "-ERR command line unfinished after 10 s"), "got '%s'", all);
    free(all);
    cr_assert(peer_closed(early), "half a HELLO is closed by the HELLO timeout");
    /* the idle worker, with no partial line, is left alone */
    cr_assert(rbh_expect(idle, "+OK", "PUSH {\"jid\":\"idle-000001\",\"jobtype\":\"a\",\"args\":[]}"));
    cr_assert(wait_connections(idle, 1));
    cr_assert(rbh_expect(idle, "$-1", "JOB {\"jid\":\"half-000001\"}"));
    rbh_close(stalled);
    rbh_close(idle);
    rbh_close(early);
}

/* Closes c with a TCP reset instead of a FIN. */
static void reset_close(rbh_conn *c)
{
    struct linger lg = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    rbh_close(c);
}

SERVER_TEST(clients_that_vanish_mid_command_or_mid_reply)
{
    start(NULL);
    rbh_conn *obs = rbh_connect(&S, "observer");
    /* half a PUSH, then gone: no job */
    rbh_conn *c = rbh_connect(&S, NULL);
    const char half[] = "PUSH {\"jid\":\"gone-000001\",\"jobtype\":\"a\",\"ar";
    rbh_send(c, half, sizeof half - 1);
    rbh_close(c);
    /* a whole PUSH, gone before the reply: the job is stored all the same */
    c = rbh_connect(&S, NULL);
    const char full[] = "PUSH {\"jid\":\"sent-000001\",\"jobtype\":\"a\",\"args\":[]}\r\n";
    rbh_send(c, full, sizeof full - 1);
    reset_close(c);
    cr_assert(rbh_wait_state(obs, "sent-000001", "enqueued", 10000));
    cr_assert(rbh_expect(obs, "$-1", "JOB {\"jid\":\"gone-000001\"}"));
    /* a FETCH whose reply nobody reads: the job is reserved (it comes back
     * when its reservation ends, like any job of a crashed worker) */
    c = rbh_connect(&S, "vanishing");
    rbh_send(c, "FETCH default\r\n", 15);
    reset_close(c);
#ifdef RBH_PG
    /* distributed mode puts a job claimed for a connection that closed
     * meanwhile back at once (docs/distributed.md); whether the claim
     * ran before the close was seen, the job ends up enqueued again */
    cr_assert(wait_connections(obs, 1));
    rbh_sleep_ms(200);
    rbh_conn *next = rbh_connect(&S, "next-worker");
    json_t *got = rbh_json(rbh_cmd(next, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(got, "jid")), "sent-000001",
                     "the job claimed for the closed connection is not back");
    json_decref(got);
    rbh_close(next);
    cr_assert(rbh_wait_state(obs, "sent-000001", "working", 10000));
#else
    cr_assert(rbh_wait_state(obs, "sent-000001", "working", 10000));
#endif
    /* a large reply abandoned after a few bytes, with a reset */
    char *big = push_line("large-000001", 600000);
    cr_assert(rbh_expect(obs, "+OK", "%s", big));
    free(big);
    for (int i = 0; i < 20; i++) {
        c = rbh_connect(&S, NULL);
        cr_assert_not_null(c);
        rbh_send(c, "JOB {\"jid\":\"large-000001\"}\r\n", 28);
        char few[16];
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 5000) > 0 && read(c->fd, few, sizeof few) < 0)
            cr_assert_fail("read failed");
        if (i % 2)
            reset_close(c);
        else
            rbh_close(c);
    }
    /* pipelined commands then gone at once, many times */
    for (int i = 0; i < 50; i++) {
        c = rbh_connect(&S, NULL);
        cr_assert_not_null(c);
        char line[200];
        int n = snprintf(line, sizeof line,
                         "PUSH {\"jid\":\"burst-%06d\",\"jobtype\":\"a\",\"args\":[]}\r\nINFO\r\nJOB {\"j",
                         i);
        rbh_send(c, line, (size_t)n);
        reset_close(c);
    }
    cr_assert(wait_connections(obs, 1));
    cr_assert(rbh_expect(obs, "+OK", "PUSH {\"jid\":\"still-00001\",\"jobtype\":\"a\",\"args\":[]}"));
    cr_assert_str_eq(obs->greeting, "+HI {\"v\":2}");
    rbh_close(obs);
}

SERVER_TEST(a_client_that_never_reads_is_disconnected_memory_stays_bounded)
{
    /* The bound is on the server's resident memory. In the sanitized build
     * ASan keeps freed blocks in a quarantine (256 MB by default) that counts
     * as resident: each 200 kB reply's buffers stay there, so RSS would
     * measure the quarantine rather than the unread-output cap. A 16 MB
     * quarantine keeps the bound meaningful (no effect without ASan). */
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[512];
    snprintf(opts, sizeof opts, "%s%squarantine_size_mb=16", asan ? asan : "",
             asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    start(NULL);
    rbh_conn *obs = rbh_connect(&S, "observer");
    char *big = push_line("reply-000001", 200000);
    cr_assert(rbh_expect(obs, "+OK", "%s", big));
    free(big);
    long long mem_before = rbh_info_int(obs, "server.used_memory_mb");
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert_not_null(c);
    int small = 4096;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    /* Each request asks for 200 kB; the client reads nothing. 2000 requests
     * (58 kB, all fit in the socket buffers) would be 400 MB of replies: the
     * server must hang up once its unread output passes the cap, not buffer
     * them. */
    static const char req[] = "JOB {\"jid\":\"reply-000001\"}\r\n";
    int sent = 0;
    bool gone = false;
    int64_t deadline = rbh_now_ms() + 30000;
    while (sent < 2000 && !gone && rbh_now_ms() < deadline) {
        struct pollfd p = {c->fd, POLLOUT, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (p.revents & (POLLERR | POLLHUP)) {
            gone = true;
            break;
        }
        ssize_t w = send(c->fd, req, sizeof req - 1, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN)
            gone = true;
        else if (w == (ssize_t)sizeof req - 1)
            sent++;
        else if (w > 0)
            cr_assert_fail("partial send of a tiny request");
    }
    /* Whether or not our sends noticed yet, the server dropped the client. */
    cr_assert(wait_connections(obs, 1), "the non-reading client is still connected after %d requests",
              sent);
    long long mem_after = rbh_info_int(obs, "server.used_memory_mb");
    cr_assert_lt(mem_after, mem_before + 100, "RSS grew from %lld to %lld MB", mem_before, mem_after);
    char *log = NULL;
    size_t loglen = 0;
    FILE *f = fopen(S.log, "r");
    cr_assert_not_null(f);
    cr_assert_gt(getdelim(&log, &loglen, '\0', f), 0);
    fclose(f);
    cr_assert(strstr(log, "does not read its replies"), "no log line for the disconnect");
    free(log);
    rbh_close(c);
    cr_assert(rbh_expect(obs, "+OK", "PUSH {\"jid\":\"after-00001\",\"jobtype\":\"a\",\"args\":[]}"));
    rbh_close(obs);
}

SERVER_TEST(pipelining_past_the_read_limit_loses_nothing)
{
    start("[server]\nmax_job_bytes = 2048\n");
    rbh_conn *c = rbh_connect(&S, "piper");
    /* ~70 KB, past the 40 KB read limit; each PUSH is its own commit (the
     * replies keep the order), so 3,000 of them outlasted the test's 60 s
     * at a load average of 19 */
    enum { N = 1000 };
    size_t cap = (size_t)N * 100, len = 0;
    char *all = malloc(cap);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(all + len, cap - len,
                                "PUSH {\"jid\":\"pipe-%06d\",\"jobtype\":\"a\",\"args\":[%d]}\r\n", i, i);
    cr_assert_gt(len, 20 * 2048, "the pipeline must exceed the server's read limit");
    cr_assert_eq(rbh_send(c, all, len), 0);
    free(all);
    for (int i = 0; i < N; i++) {
        char *r = rbh_reply(c);
        cr_assert(r && !strcmp(r, "+OK"), "reply %d: %s", i, r ? r : "(closed)");
        free(r);
    }
    cr_assert_eq(rbh_info_int(c, "faktory.queues.default"), N);
    rbh_close(c);
}

SERVER_TEST(thousands_of_idle_connections)
{
    start("[server]\nmax_connections = 2500\n");
    enum { N = 2000 };
    rbh_conn **c = calloc(N, sizeof *c);
    for (int i = 0; i < N; i++) {
        char wid[32];
        snprintf(wid, sizeof wid, "idle-%d", i);
        c[i] = rbh_connect(&S, i % 2 ? wid : NULL);
        cr_assert_not_null(c[i], "connection %d failed", i);
    }
    rbh_conn *w = rbh_connect(&S, "busy");
    cr_assert_eq(rbh_info_int(w, "server.connections"), N + 1);
    cr_assert_eq(rbh_info_int(w, "faktory.tasks.Workers.size"), N / 2 + 1);
    cr_assert(rbh_expect(w, "+OK", "PUSH {\"jid\":\"amid-000001\",\"jobtype\":\"a\",\"args\":[]}"));
    json_t *j = rbh_json(rbh_cmd(w, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "amid-000001");
    json_decref(j);
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"amid-000001\"}"));
    /* the idle ones still answer */
    cr_assert(rbh_expect(c[0], "$-1", "JOB {\"jid\":\"no-such-job1\"}"));
    cr_assert(rbh_expect(c[N - 1], "+OK", "BEAT {\"wid\":\"idle-%d\"}", N - 1));
    for (int i = 0; i < N; i++)
        rbh_close(c[i]);
    free(c);
    cr_assert(wait_connections(w, 1));
#ifdef RBH_PG
    /* the cluster's registry keeps a worker listed until it is stale (60 s
     * after its last connection and BEAT, docs/distributed.md "Workers"):
     * a node cannot know of the other nodes' connections */
    cr_assert_eq(rbh_info_int(w, "faktory.tasks.Workers.size"), N / 2 + 1);
#else
    cr_assert_eq(rbh_info_int(w, "faktory.tasks.Workers.size"), 1);
#endif
    rbh_close(w);
}

/* Connects without waiting for the greeting; the fd. */
static int connect_nowait(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* True when fd has bytes to read within ms. */
static bool readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

SERVER_TEST(out_of_file_descriptors_pauses_accepting_then_recovers)
{
    start(NULL);
    rbh_conn *obs = rbh_connect(&S, "observer");
    /* Lower the running server's descriptor limit (lowering needs no
     * privilege): the listener soon gets EMFILE. */
    struct rlimit rl = {64, 64};
    cr_assert_eq(prlimit(S.pid, RLIMIT_NOFILE, &rl, NULL), 0, "prlimit: %s", strerror(errno));
    enum { N = 90 };
    int fds[N], greeted = 0, waiting = -1;
    for (int i = 0; i < N; i++) {
        fds[i] = connect_nowait(S.port);
        if (readable(fds[i], waiting < 0 ? 2000 : 0))
            greeted++;
        else if (waiting < 0)
            waiting = i; /* in the backlog: the server cannot accept it yet */
    }
    cr_assert_geq(waiting, 0, "all %d connections were accepted under a limit of 64", N);
    cr_assert_lt(greeted, 64);
    /* the server is alive and answers on an existing connection */
    cr_assert_geq(rbh_info_int(obs, "server.connections"), 2);
    /* free descriptors: the waiting connections are accepted and greeted */
    for (int i = 0; i < waiting; i++)
        close(fds[i]);
    cr_assert(readable(fds[waiting], 10000), "a waiting connection was never accepted");
    char buf[64];
    ssize_t n = read(fds[waiting], buf, sizeof buf - 1);
    cr_assert_gt(n, 0);
    buf[n] = '\0';
    cr_assert(strstr(buf, "+HI") == buf, "got '%s'", buf);
    for (int i = waiting; i < N; i++)
        close(fds[i]);
    cr_assert(wait_connections(obs, 1));
    char *log = NULL;
    size_t loglen = 0;
    FILE *f = fopen(S.log, "r");
    cr_assert_gt(getdelim(&log, &loglen, '\0', f), 0);
    fclose(f);
    cr_assert(strstr(log, "pausing accepts"), "no log line for EMFILE");
    free(log);
    rbh_close(obs);
}
