/* Distributed mode's forwarding (storage.forward, src/server/forward.c;
 * docs/distributed.md "Forwarding to a leader"), two nodes on one schema:
 * - relay: a stock-protocol client of node B pushes, fetches and ACKs, and
 *   node A (the leader) runs every command: B's command counter stays
 *   still while A's moves, B counts the relay, INFO on B's port is A's;
 * - leader killed with SIGKILL: B's relayed connections close, a new
 *   client of B is served once the lease ends (B leads), the job A's
 *   worker held comes back after its lease (B's maintenance resumed), and
 *   every job pushed is ACKed exactly once;
 * - a leader nobody answers for: B serves its clients itself at once
 *   (a refused port) or within the connect timeout (no answer), and
 *   counts the fallbacks;
 * - TLS: a TLS client of B reaches the leader through the relay (the
 *   bytes cross still encrypted, the session ends at A, which presents the
 *   same certificate); a node with another certificate, or plain TCP,
 *   serves its clients itself;
 * - bad settings refused at start with a message naming the key.
 * The lease runs 3 s here (fault pg.leader_lease_ms). Waits poll INFO,
 * /metrics or the database, never sleep blindly. */
#define RBH_PG 1
#include "test_http_harness.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "rebound/client.h"
#include "tls_certs.h"

static rbh_server a, b, c3;

static void init(void)
{
    rbh_fault_set("pg.leader_lease_ms", "3000");
}

static void fini(void)
{
    if (c3.dir[0])
        rbh_stop(&c3);
    if (b.dir[0])
        rbh_stop(&b);
    if (a.dir[0] && a.pid > 0)
        rbh_stop(&a);
    rbh_fault_set("pg.leader_lease_ms", NULL);
}

TestSuite(forward, .init = init, .fini = fini, .timeout = 120);

#define FWD_CONFIG "[storage]\nforward = true\n"

/* Starts s with config and an HTTP port (*http) on db (NULL: a fresh
 * schema); fails the test when it does not start. */
static void start_node(rbh_server *s, const char *db, const char *config, int *http)
{
    rbh_init(s);
    if (db)
        snprintf(s->db, sizeof s->db, "%s", db);
    rbh_write_file(s, "rebound.toml", config, s->config, sizeof s->config);
    char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", s->dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    cr_assert_eq(rbh_launch(s, extra), 0, "a node did not start (see %s)", s->log);
    FILE *f = fopen(hpf, "r");
    cr_assert(f && fscanf(f, "%d", http) == 1);
    fclose(f);
}

/* Polls the metric on http until it is at least want (10 s). */
static double wait_metric(int http, const char *prefix, double want)
{
    int64_t until = rbh_now_ms() + 10000;
    double v;
    while ((v = rbh_metric(http, prefix)) < want && rbh_now_ms() < until)
        rbh_sleep_ms(20);
    return v;
}

/* INFO over a new connection to s: whether the node that answered leads
 * (rebound.forward.leader); -1 when no connection or no such field. */
static int info_leader(const rbh_server *s)
{
    rbh_conn *c = rbh_connect(s, NULL);
    if (!c)
        return -1;
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    json_t *x = rbh_get(v, "rebound.forward.leader");
    int r = json_is_boolean(x) ? json_is_true(x) : -1;
    json_decref(v);
    rbh_close(c);
    return r;
}

/* Polls until a new connection to s is answered by a node whose INFO says
 * leader is want (15 s). */
static bool wait_leader_answer(const rbh_server *s, int want)
{
    int64_t until = rbh_now_ms() + 15000;
    do {
        if (info_leader(s) == want)
            return true;
        rbh_sleep_ms(50);
    } while (rbh_now_ms() < until);
    return false;
}

/* Whether the peer closed c within ms (EOF or an error on read). */
static bool closed_within(rbh_conn *c, int ms)
{
    int64_t until = rbh_now_ms() + ms;
    while (rbh_now_ms() < until) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0) {
            char buf[512];
            ssize_t n = read(c->fd, buf, sizeof buf);
            if (n <= 0)
                return true;
        }
    }
    return false;
}

/* A and B with forward on, A the leader, B relaying to it. */
static void two_nodes(int *ha, int *hb)
{
    start_node(&a, NULL, FWD_CONFIG, ha);
    cr_assert_geq(wait_metric(*ha, "rebound_forward_leader ", 1), 1, "A never led (see %s)", a.log);
    start_node(&b, a.db, FWD_CONFIG, hb);
    /* B relays once it has read the lease: its clients get A's INFO */
    cr_assert(wait_leader_answer(&b, 1), "B's clients are not served by the leader (see %s)",
              b.log);
    cr_assert_eq(rbh_metric(*hb, "rebound_forward_leader "), 0, "B thinks it leads");
}

Test(forward, client_of_b_is_served_by_the_leader)
{
    int ha, hb;
    two_nodes(&ha, &hb);
    double b_cmds = rbh_metric(hb, "rebound_commands_total ");
    double a_cmds = rbh_metric(ha, "rebound_commands_total ");
    double relayed = rbh_metric(hb, "rebound_forward_relayed_total ");

    rbh_conn *c = rbh_connect(&b, "fw1"); /* HELLO goes to A */
    cr_assert_not_null(c);
    cr_assert_eq(rbh_metric(hb, "rebound_forward_relays "), 1, "B relays no connection");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"fwdjob-0001\",\"jobtype\":\"t\",\"args\":[1],"
                                   "\"queue\":\"fq\"}"));
    char *jid = rbh_fetch_jid(c, "fq");
    cr_assert(jid && !strcmp(jid, "fwdjob-0001"), "FETCH through B got %s", jid ? jid : "nothing");
    free(jid);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"fwdjob-0001\"}"));
    char *st = rbh_job_state(c, "fwdjob-0001");
    cr_assert_null(st, "the ACKed job is still there (%s)", st);
    rbh_close(c);

    /* B ran none of it, A all of it (HELLO, PUSH, FETCH, ACK, JOB) */
    cr_assert_eq(rbh_metric(hb, "rebound_commands_total "), b_cmds,
                 "B ran commands of a client it should relay");
    cr_assert_geq(rbh_metric(ha, "rebound_commands_total "), a_cmds + 5,
                  "A did not run the relayed client's commands");
    cr_assert_geq(rbh_metric(hb, "rebound_forward_relayed_total "), relayed + 1);
    /* the client's close ends the relay */
    int64_t until = rbh_now_ms() + 5000;
    while (rbh_metric(hb, "rebound_forward_relays ") > 0 && rbh_now_ms() < until)
        rbh_sleep_ms(20);
    cr_assert_eq(rbh_metric(hb, "rebound_forward_relays "), 0, "the relay outlived its client");
    cr_assert_eq(rbh_metric(hb, "rebound_forward_fallbacks_total "), 0);
}

/* A stand-in leader for the relay's flow control: accepts one connection
 * on its listening socket and writes FLOW_BYTES of a known pattern to it
 * (blocking), counting what the socket took, then closes. */
#define FLOW_BYTES (48u << 20)

typedef struct fake_leader {
    int lfd;
    _Atomic size_t sent;
    _Atomic bool done;
} fake_leader;

static unsigned char flow_byte(size_t i)
{
    return (unsigned char)((i * 7 + i / 4096) & 0xff);
}

static void *fake_leader_run(void *arg)
{
    fake_leader *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    if (fd >= 0) {
        unsigned char buf[65536];
        size_t at = 0;
        while (at < FLOW_BYTES) {
            size_t n = FLOW_BYTES - at < sizeof buf ? FLOW_BYTES - at : sizeof buf;
            for (size_t i = 0; i < n; i++)
                buf[i] = flow_byte(at + i);
            ssize_t w = write(fd, buf, n);
            if (w <= 0)
                break;
            at += (size_t)w;
            f->sent = at;
        }
        close(fd);
    }
    f->done = true;
    return NULL;
}

/* The relay's flow control: a leader that sends far more than the sockets
 * hold to a client that does not read yet fills them and the relay's
 * buffer (1 MiB), where the relay stops reading from the leader; as the
 * client drains, the relay resumes, and every byte arrives in order. It
 * fails when the relay never resumes (checked) or loses or reorders a
 * byte. */
Test(forward, a_client_reading_late_gets_every_byte_in_order)
{
    fake_leader f = {.lfd = socket(AF_INET, SOCK_STREAM, 0)};
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(f.lfd >= 0 && bind(f.lfd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
              listen(f.lfd, 4) == 0);
    socklen_t sl = sizeof sa;
    cr_assert_eq(getsockname(f.lfd, (struct sockaddr *)&sa, &sl), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fake_leader_run, &f), 0);
    rbh_init(&a); /* only for its schema: no process */
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO rb_leader (id, node, addr, tls, until_ms) VALUES (1, 'fake:1',"
             " '127.0.0.1:%d', false, (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
             " + 60000)", ntohs(sa.sin_port));
    char *ok = rbh_pg_value(a.db, sql);
    cr_assert_not_null(ok);
    free(ok);
    int hb;
    start_node(&b, a.db, FWD_CONFIG, &hb);
    /* once B has read the lease its next client goes to the stand-in (a
     * client of B itself gets +HI, the stand-in's first byte is not '+') */
    int fd = -1;
    for (int64_t until = rbh_now_ms() + 10000; fd < 0 && rbh_now_ms() < until;) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b.port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        cr_assert(c >= 0 && connect(c, (struct sockaddr *)&to, sizeof to) == 0);
        /* relayed: B counts it while it is open (B's own +HI otherwise) */
        for (int64_t t = rbh_now_ms() + 2000; fd < 0 && rbh_now_ms() < t;) {
            if (rbh_metric(hb, "rebound_forward_relays ") >= 1)
                fd = c;
            else
                rbh_sleep_ms(20);
        }
        if (fd < 0)
            close(c);
    }
    cr_assert_geq(fd, 0, "B never relayed a client to the stand-in leader (see %s)", b.log);
    /* the stand-in writes until every buffer on the way is full: its count
     * stops moving well short of the end */
    size_t last = 0;
    int64_t still_since = rbh_now_ms();
    for (int64_t until = rbh_now_ms() + 20000; rbh_now_ms() < until && !f.done;) {
        size_t now = f.sent;
        if (now != last)
            still_since = rbh_now_ms();
        last = now;
        if (now > (2u << 20) && rbh_now_ms() - still_since >= 300)
            break;
        rbh_sleep_ms(20);
    }
    cr_assert(!f.done, "the sockets and the relay took all %u bytes: nothing was held back",
              FLOW_BYTES);
    size_t got = 0;
    unsigned char buf[65536];
    bool same = true;
    while (got < FLOW_BYTES) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            break;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n && same; i++)
            same = buf[i] == flow_byte(got + (size_t)i);
        got += (size_t)n;
    }
    close(fd);
    pthread_join(th, NULL);
    close(f.lfd);
    cr_assert_eq(got, (size_t)FLOW_BYTES, "the client got %zu of %u bytes (the stand-in sent %zu)",
                 got, FLOW_BYTES, (size_t)f.sent);
    cr_assert(same, "the bytes arrived out of order or changed");
}

#define JOBS 60

Test(forward, leader_killed_b_takes_over_and_every_job_is_done_once)
{
    int ha, hb;
    two_nodes(&ha, &hb);
    rbh_conn *idle = rbh_connect(&b, "idle"); /* relayed, left open across the kill */
    rbh_conn *c = rbh_connect(&b, "fw2");
    cr_assert(idle && c);
    cr_assert_geq(rbh_metric(hb, "rebound_forward_relays "), 2);
    for (int i = 0; i < JOBS; i++)
        cr_assert(rbh_expect(c, "+OK",
                             "PUSH {\"jid\":\"kjob-%04d\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"kq\","
                             "\"reserve_for\":3,\"retry_policy\":{\"dialect\":\"temporal\","
                             "\"initial_interval\":\"100ms\",\"backoff_coefficient\":1.0}}",
                             i));
    static int acks[JOBS];
    for (int i = 0; i < JOBS / 2; i++) {
        char *jid = rbh_fetch_jid(c, "kq");
        cr_assert_not_null(jid);
        cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        acks[atoi(jid + 5)]++;
        free(jid);
    }

    /* one more fetched and never ACKed: held by A's worker when A dies,
     * it comes back after its 3 s lease through B's maintenance (a
     * follower leaves maintenance to the leader, and resumes it when the
     * leader's lease ends) */
    char *held = rbh_fetch_jid(c, "kq");
    cr_assert_not_null(held);

    cr_assert_eq(rbh_kill(&a, SIGKILL) != -1, 1);
    /* B's relayed connections end with the leader's */
    cr_assert(closed_within(idle, 5000), "a relayed connection outlived the leader");
    cr_assert(closed_within(c, 5000), "a relayed connection outlived the leader");
    rbh_close(idle);
    rbh_close(c);
    /* a new client of B is served: by B itself (falling back, then leading
     * once A's lease has ended) */
    cr_assert_geq(wait_metric(hb, "rebound_forward_leader ", 1), 1, "B never led (see %s)", b.log);
    cr_assert(wait_leader_answer(&b, 1), "B's clients are not served after A died");
    c = rbh_connect(&b, "fw3");
    cr_assert_not_null(c);
    bool held_again = false;
    for (int i = JOBS / 2; i < JOBS; i++) {
        char *jid = NULL;
        for (int64_t until = rbh_now_ms() + 15000; !jid && rbh_now_ms() < until;)
            jid = rbh_fetch_jid(c, "kq"); /* (the held job waits for its lease to end) */
        cr_assert_not_null(jid, "job %d of %d not fetched after the takeover", i, JOBS);
        held_again |= !strcmp(jid, held);
        cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        acks[atoi(jid + 5)]++;
        free(jid);
    }
    cr_assert(held_again, "the job A's worker held was not fetched again");
    free(held);
    for (int i = 0; i < JOBS; i++)
        cr_assert_eq(acks[i], 1, "job kjob-%04d ACKed %d times", i, acks[i]);
    char *left = rbh_pg_value(b.db, "SELECT count(*) FROM rb_jobs");
    cr_assert(left && !strcmp(left, "0"), "%s jobs left", left ? left : "?");
    free(left);
    rbh_close(c);
}

Test(forward, unreachable_leader_clients_served_here)
{
    /* a lease held by a node nobody answers for, running for a minute */
    int hb;
    rbh_init(&a); /* only for its schema: no process */
    char sql[512];
    int dead_port = rbpg_free_port();
    snprintf(sql, sizeof sql,
             "INSERT INTO rb_leader (id, node, addr, tls, until_ms) VALUES (1, 'ghost:1',"
             " '127.0.0.1:%d', false, (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
             " + 60000)", dead_port);
    char *ok = rbh_pg_value(a.db, sql);
    cr_assert_not_null(ok);
    free(ok);
    start_node(&b, a.db, FWD_CONFIG, &hb);
    /* B has read the lease once its clients are refused by the ghost */
    int64_t until = rbh_now_ms() + 10000;
    while (rbh_metric(hb, "rebound_forward_fallbacks_total ") < 1 && rbh_now_ms() < until) {
        int64_t t0 = rbh_now_ms();
        int l = info_leader(&b);
        cr_assert_eq(l, 0, "a client of B got no service (or a leader's)");
        cr_assert_lt(rbh_now_ms() - t0, 3000, "a client of B waited past the connect timeout");
    }
    cr_assert_geq(rbh_metric(hb, "rebound_forward_fallbacks_total "), 1, "B never fell back");
    cr_assert_eq(rbh_metric(hb, "rebound_forward_leader "), 0);
    cr_assert_eq(rbh_metric(hb, "rebound_forward_relays "), 0);
    /* its clients work as on any node */
    rbh_conn *c = rbh_connect(&b, "fb");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"ujob-0001\",\"jobtype\":\"t\",\"args\":[],"
                                   "\"queue\":\"uq\"}"));
    char *jid = rbh_fetch_jid(c, "uq");
    cr_assert(jid && !strcmp(jid, "ujob-0001"));
    free(jid);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"ujob-0001\"}"));
    rbh_close(c);
    char *log = rbh_read_log(&b);
    cr_assert(strstr(log, "cannot be reached"), "no fallback logged:\n%s", log);
    free(log);

    /* a leader that never answers (an address nothing routes back from):
     * served here within the connect timeout */
    ok = rbh_pg_value(a.db, "UPDATE rb_leader SET addr = '10.255.255.1:7419'");
    cr_assert_not_null(ok);
    free(ok);
    double fb = rbh_metric(hb, "rebound_forward_fallbacks_total ");
    until = rbh_now_ms() + 10000;
    while (rbh_metric(hb, "rebound_forward_fallbacks_total ") < fb + 1 && rbh_now_ms() < until) {
        int64_t t0 = rbh_now_ms();
        cr_assert_eq(info_leader(&b), 0, "a client of B got no service");
        cr_assert_lt(rbh_now_ms() - t0, 3000, "a client of B waited past the connect timeout");
    }
    cr_assert_geq(rbh_metric(hb, "rebound_forward_fallbacks_total "), fb + 1);
    a.dir[0] = '\0'; /* (no process; its directory is left to the harness's cleanup) */
}

/* Runs `rebound serve` with config and extra arguments; its exit status,
 * stderr into out. */
static int serve_fails(const char *config, const char *db, const char *listen, char *out,
                       size_t n)
{
    rbh_server s;
    rbh_init(&s);
    rbh_write_file(&s, "rebound.toml", config, s.config, sizeof s.config);
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "timeout 20 '%s' serve --config '%s' --db '%s' --listen '%s' "
             "--http-listen 127.0.0.1:0 2>&1", rbh_bin(), s.config, db ? db : s.db, listen);
    FILE *p = popen(cmd, "r");
    size_t len = p ? fread(out, 1, n - 1, p) : 0;
    out[len] = '\0';
    int st = p ? pclose(p) : -1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", s.dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Starts s on db (NULL: a fresh schema) serving TLS with cert/key, forward
 * on, no HTTP port (it would be HTTPS: the checks go over the work
 * protocol). */
static void start_tls_node(rbh_server *s, const char *db, const char *cert, const char *key)
{
    if (db)
        snprintf(s->db, sizeof s->db, "%s", db);
    char toml[1200];
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\n" FWD_CONFIG, cert,
             key);
    rbh_write_file(s, "rebound.toml", toml, s->config, sizeof s->config);
    cr_assert_eq(rbh_launch(s, NULL), 0, "a TLS node did not start (see %s)", s->log);
}

/* A TLS client of s trusting ca (NULL with err set when the handshake or
 * HELLO failed). */
static rb_client *tls_client(const rbh_server *s, const char *ca, rb_err *e)
{
    char url[300];
    snprintf(url, sizeof url, "tcp+tls://127.0.0.1:%d", s->port);
    rb_client_opts o = {.tls_ca_file = ca, .timeout_ms = 10000};
    return rb_client_connect(url, &o, e);
}

/* INFO over a new TLS connection to s trusting ca: whether the node that
 * answered leads; -1 when the connection or INFO failed. */
static int tls_info_leader(const rbh_server *s, const char *ca)
{
    rb_err e = {0};
    rb_client *cl = tls_client(s, ca, &e);
    if (!cl)
        return -1;
    json_t *v = NULL;
    int r = -1;
    if (rb_client_info(cl, &v, &e) == 0) {
        json_t *x = rbh_get(v, "rebound.forward.leader");
        r = json_is_boolean(x) ? json_is_true(x) : -1;
    }
    json_decref(v);
    rb_client_close(cl);
    return r;
}

/* Polls until a TLS client of s (trusting ca) is answered by a node whose
 * INFO says leader is want (15 s). */
static bool wait_tls_leader(const rbh_server *s, const char *ca, int want)
{
    int64_t until = rbh_now_ms() + 15000;
    do {
        if (tls_info_leader(s, ca) == want)
            return true;
        rbh_sleep_ms(50);
    } while (rbh_now_ms() < until);
    return false;
}

Test(forward, tls_clients_are_relayed_to_a_leader_with_the_same_certificate)
{
    rbh_init(&a);
    char cert[400], key[400], other[400], other_key[400];
    cr_assert_eq(rbh_make_cert(a.dir, "cluster", "IP:127.0.0.1", cert, key), 0);
    cr_assert_eq(rbh_make_cert(a.dir, "other", "IP:127.0.0.1", other, other_key), 0);
    start_tls_node(&a, NULL, cert, key);
    cr_assert(wait_tls_leader(&a, cert, 1), "A never led (see %s)", a.log);
    rbh_init(&b);
    start_tls_node(&b, a.db, cert, key);
    /* B's TLS clients complete their handshake with A (the relay copies
     * the encrypted bytes) and get A's INFO */
    cr_assert(wait_tls_leader(&b, cert, 1), "B's TLS clients are not served by the leader (see %s)",
              b.log);
    rb_err e = {0};
    rb_client *cl = tls_client(&b, cert, &e);
    cr_assert_not_null(cl, "%s", e.msg);
    rb_reply r;
    cr_assert_eq(rb_client_call(cl, "PUSH {\"jid\":\"tlsfwd-0001\",\"jobtype\":\"t\",\"args\":[],"
                                    "\"queue\":\"tq\"}", &r, &e),
                 0, "%s", e.msg);
    cr_assert_eq(rb_client_call(cl, "FETCH tq", &r, &e), 0, "%s", e.msg);
    cr_assert(r.type == RB_REPLY_BULK && strstr(r.str, "tlsfwd-0001"), "FETCH through B got %s",
              r.str ? r.str : "nothing");
    cr_assert_eq(rb_client_call(cl, "ACK {\"jid\":\"tlsfwd-0001\"}", &r, &e), 0, "%s", e.msg);
    rb_client_close(cl);
    char *left = rbh_pg_value(a.db, "SELECT count(*) FROM rb_jobs");
    cr_assert(left && !strcmp(left, "0"), "%s jobs left", left ? left : "?");
    free(left);
    char *id = rbh_pg_value(a.db, "SELECT tls_id FROM rb_leader");
    cr_assert(id && !strncmp(id, "sha256:", 7) && strlen(id) == 71, "the lease's tls_id: %s",
              id ? id : "?");
    free(id);

    /* another certificate: a relay would end the client's session at A,
     * whose certificate the client does not trust; C serves it itself */
    rbh_init(&c3);
    start_tls_node(&c3, a.db, other, other_key);
    /* until C has read the lease (it says why it serves here), every
     * client is C's */
    bool said = false;
    for (int64_t until = rbh_now_ms() + 15000; !said && rbh_now_ms() < until;) {
        cr_assert_eq(tls_info_leader(&c3, other), 0,
                     "a TLS client of a node with another certificate was not served there");
        char *log = rbh_read_log(&c3);
        said = log && strstr(log, "presents another certificate");
        free(log);
    }
    cr_assert(said, "C never said why it serves its clients (see %s)", c3.log);
    cr_assert_eq(tls_info_leader(&c3, other), 0);
    rbh_stop(&c3);
    c3.dir[0] = '\0';

    /* plain TCP beside a TLS leader: served there too */
    int hc;
    start_node(&c3, a.db, FWD_CONFIG, &hc);
    for (int64_t until = rbh_now_ms() + 15000;
         rbh_metric(hc, "rebound_forward_fallbacks_total ") < 1 && rbh_now_ms() < until;)
        cr_assert_eq(info_leader(&c3), 0, "a plain client was relayed to a TLS leader");
    cr_assert_geq(rbh_metric(hc, "rebound_forward_fallbacks_total "), 1,
                  "the plain node never saw the TLS leader (see %s)", c3.log);
    cr_assert_eq(info_leader(&c3), 0, "a plain client was relayed to a TLS leader");
}

Test(forward, bad_settings_refused)
{
    char out[4096];
    /* SQLite storage: no leader to forward to */
    char sqlite_db[300];
    snprintf(sqlite_db, sizeof sqlite_db, "/tmp/rb-fwd-%d.db", (int)getpid());
    cr_assert_neq(serve_fails(FWD_CONFIG, sqlite_db, "127.0.0.1:0", out, sizeof out), 0);
    unlink(sqlite_db);
    cr_assert(strstr(out, "storage.forward: needs distributed mode"), "%s", out);
    /* every interface, nothing advertised */
    rbh_init(&a);
    cr_assert_neq(serve_fails(FWD_CONFIG, a.db, "0.0.0.0:0", out, sizeof out), 0);
    cr_assert(strstr(out, "set storage.advertise"), "%s", out);
    /* an advertise that is no ip:port */
    cr_assert_neq(serve_fails(FWD_CONFIG "advertise = \"node-a:7419\"\n", a.db, "127.0.0.1:0", out,
                              sizeof out), 0);
    cr_assert(strstr(out, "storage.advertise") && strstr(out, "node-a:7419"), "%s", out);
    cr_assert_neq(serve_fails(FWD_CONFIG "advertise = \"0.0.0.0:7419\"\n", a.db, "127.0.0.1:0",
                              out, sizeof out), 0);
    cr_assert(strstr(out, "storage.advertise"), "%s", out);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", a.dir);
    cr_assert_eq(system(cmd), 0);
    a.dir[0] = '\0';
}

Test(forward, advertise_port_0_is_the_bound_port_and_a_stop_gives_the_lease_up)
{
    int h;
    start_node(&a, NULL, FWD_CONFIG "advertise = \"127.0.0.1:0\"\n", &h);
    cr_assert_geq(wait_metric(h, "rebound_forward_leader ", 1), 1, "A never led (see %s)", a.log);
    char *addr = rbh_pg_value(a.db, "SELECT addr FROM rb_leader");
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", a.port);
    cr_assert(addr && !strcmp(addr, want), "the lease names %s, want %s", addr ? addr : "?",
              want);
    free(addr);
    /* a graceful stop gives the lease up at once */
    cr_assert_eq(rbh_stop(&a), 0);
    a.pid = 0;
    addr = rbh_pg_value(a.db, "SELECT count(*) FROM rb_leader");
    cr_assert(addr && !strcmp(addr, "0"), "the stopped leader's lease is still there");
    free(addr);
    a.dir[0] = '\0';
}
