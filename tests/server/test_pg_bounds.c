/* Distributed mode's bounds (issue 27; docs/distributed.md, "Network
 * faults"): administration runs under [storage] admin_timeout, alone on a
 * database thread, so that
 * - a QUEUE PAUSE waiting for a row lock a test transaction holds longer
 *   than request_timeout is answered +OK once the lock goes (its bound is
 *   admin_timeout), while PUSH, FETCH and ACK on the node go on meanwhile,
 *   each answered within request_timeout;
 * - one still waiting at admin_timeout is answered "-ERR storage error:
 *   ... lock timeout ...; not applied" by PostgreSQL's lock_timeout (80 %
 *   of it) before the node would drop its connection: the node stays up
 *   (GET /healthz 200) and logs no outage. */
#define RBH_PG 1
#include "test_http_harness.h"

#define REQUEST_TIMEOUT_S 1
#define ADMIN_TIMEOUT_S 3

static rbh_server srv;
static int http;

static void setup(void)
{
    char cfg[256];
    snprintf(cfg, sizeof cfg, "[storage]\nrequest_timeout = \"%ds\"\nadmin_timeout = \"%ds\"\n",
             REQUEST_TIMEOUT_S, ADMIN_TIMEOUT_S);
    cr_assert_eq(rbh_start_http(&srv, cfg, &http), 0, "the server did not start (see %s)", srv.log);
}

static void teardown(void)
{
    cr_assert_eq(rbh_stop(&srv), 0);
}

TestSuite(bounds, .init = setup, .fini = teardown, .timeout = 60);

/* A transaction on the node's schema holding queue q's row. */
static PGconn *hold_queue(const char *q)
{
    PGconn *c = PQconnectdb(srv.db);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    char sql[160];
    snprintf(sql, sizeof sql,
             "BEGIN; INSERT INTO rb_queues (name) VALUES ('%s') ON CONFLICT DO NOTHING;"
             " SELECT name FROM rb_queues WHERE name = '%s' FOR UPDATE", q, q);
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return c;
}

/* Sends a command without reading its reply. */
static void send_line(rbh_conn *c, const char *line)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s\r\n", line);
    cr_assert_eq(rbh_send(c, buf, (size_t)n), 0);
}

/* PUSH, FETCH, ACK of one job on c, each answered as done: a request
 * queued behind the administration's past its own request_timeout would
 * have been answered "-ERR storage error" (no wall-clock assertion: a
 * loaded machine is slow, not wrong). */
static void work_once(rbh_conn *c, int i)
{
    char jid[32];
    snprintf(jid, sizeof jid, "bound-%04d", i);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"w\",\"args\":[],\"queue\":\"wq\"}",
                         jid));
    char *got = rbh_fetch_jid(c, "wq");
    cr_assert(got && !strcmp(got, jid), "FETCH wq: %s", got ? got : "none");
    free(got);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jid));
}

Test(bounds, administration_waits_up_to_its_own_bound_while_work_goes_on)
{
    rbh_conn *adm = rbh_connect(&srv, NULL), *w = rbh_connect(&srv, "bw");
    cr_assert(adm && w);
    work_once(w, 0); /* the queue wq exists: its pushes take no lock below */
    PGconn *holder = hold_queue("held-q");
    int64_t t0 = rbh_now_ms();
    send_line(adm, "QUEUE PAUSE held-q");
    int n = 1;
    /* beyond request_timeout: the work commands are served meanwhile */
    while (rbh_now_ms() - t0 < REQUEST_TIMEOUT_S * 1000 + 800)
        work_once(w, n++);
    PQclear(PQexec(holder, "ROLLBACK"));
    PQfinish(holder);
    char *r = rbh_reply(adm);
    int64_t took = rbh_now_ms() - t0;
    cr_assert(r && !strcmp(r, "+OK"), "QUEUE PAUSE after %lld ms: %s", (long long)took,
              r ? r : "(closed)");
    free(r);
    cr_assert_gt(took, REQUEST_TIMEOUT_S * 1000, "the lock was not waited for");
    fprintf(stderr, "bounds: QUEUE PAUSE answered +OK after %lld ms; %d jobs done meanwhile\n",
            (long long)took, n - 1);
    rbh_close(adm);
    rbh_close(w);
}

Test(bounds, administration_past_its_bound_fails_cleanly)
{
    rbh_conn *adm = rbh_connect(&srv, NULL), *w = rbh_connect(&srv, "bw");
    cr_assert(adm && w);
    PGconn *holder = hold_queue("held-q");
    int64_t t0 = rbh_now_ms();
    char *r = rbh_cmd(adm, "QUEUE PAUSE held-q");
    int64_t took = rbh_now_ms() - t0;
    cr_assert(r && strstr(r, "-ERR storage error") && strstr(r, "timeout") &&
                  strstr(r, "not applied"),
              "QUEUE PAUSE: %s", r ? r : "(closed)");
    free(r);
    cr_assert(took < ADMIN_TIMEOUT_S * 1000, "answered after %lld ms", (long long)took);
    PQclear(PQexec(holder, "ROLLBACK"));
    PQfinish(holder);
    /* the server's clean error, not a dropped connection: no outage */
    rbh_resp *h = rbh_http(http, "GET", "/healthz", NULL, NULL);
    cr_assert(h && h->status == 200, "GET /healthz: %d", h ? h->status : -1);
    cr_assert_str_eq(json_string_value(rbh_get(h->json, "database.state")), "up");
    rbh_resp_free(h);
    work_once(w, 1);
    cr_assert(rbh_expect(adm, "+OK", "QUEUE PAUSE held-q"));
    char cmd[400];
    snprintf(cmd, sizeof cmd, "grep -c 'database unreachable' '%s'", srv.log);
    FILE *p = popen(cmd, "r");
    int lines = -1;
    cr_assert(p && fscanf(p, "%d", &lines) == 1);
    pclose(p);
    cr_assert_eq(lines, 0, "an outage was logged");
    rbh_close(adm);
    rbh_close(w);
}
