/* Distributed mode's wake rounds (src/backend/pg/fetch.c, rb_pgmode_wake):
 * two nodes on one schema, FETCHes parked on node B, notifications for
 * their queue. While the claim of B's parked FETCHes is held up in the
 * database (a test transaction holds an EXCLUSIVE lock on rb_jobs), 30
 * more notifications start no other claim: exactly one claim statement is
 * in flight for the six FETCHes; a seventh FETCH arriving meanwhile waits
 * for that batch (one database thread runs a node's batches, db_thread.c)
 * and starts no statement of its own either. When the lock goes, the wake
 * that came meanwhile makes them claim once more (none is lost), and the
 * jobs pushed on node A afterwards reach all seven each exactly once. The claims are counted by B's /metrics
 * (rebound_fetch_claims_total). */
#define RBH_PG 1
#include "test_http_harness.h"

#include <libpq-fe.h>

#define PARKED 6
#define NOTIFIES 30

static rbh_server a, b;
static PGconn *lock, *ctl; /* the test's own connections to the schema */

static void fini(void)
{
    if (lock) /* first: its lock would hold up node B's claim and exit */
        PQfinish(lock);
    if (ctl)
        PQfinish(ctl);
    lock = ctl = NULL;
    if (a.dir[0])
        rbh_stop(&a);
    if (b.dir[0])
        rbh_stop(&b);
}

TestSuite(wake, .fini = fini, .timeout = 120);

#define WAKE_CLAIMS "rebound_fetch_claims_total{trigger=\"wake\"} "
#define FETCH_EMPTY "rebound_fetch_claims_empty_total{trigger=\"fetch\"} "

static void exec_ok(PGconn *pc, const char *sql)
{
    PGresult *r = PQexec(pc, sql);
    cr_assert(r && (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK),
              "%s: %s", sql, PQerrorMessage(pc));
    PQclear(r);
}

/* Claim statements of this schema's nodes waiting for a lock now. */
static long blocked_claims(PGconn *pc)
{
    PGresult *r = PQexec(pc, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                             " AND query LIKE '%rb_claim%' AND pid <> pg_backend_pid()");
    cr_assert(r && PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(pc));
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

Test(wake, parked_fetches_claim_once_per_round_and_miss_no_wake)
{
    int http = 0;
    cr_assert_eq(rbh_start(&a, NULL, NULL), 0, "node A did not start");
    /* node B on node A's schema, with its HTTP listener for /metrics */
    rbh_init(&b);
    snprintf(b.db, sizeof b.db, "%s", a.db);
    char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", b.dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    cr_assert_eq(rbh_launch(&b, extra), 0, "node B did not start (see %s)", b.log);
    FILE *f = fopen(hpf, "r");
    cr_assert(f && fscanf(f, "%d", &http) == 1);
    fclose(f);

    /* six FETCHes parked on B, each after its own first claim came back empty */
    rbh_conn *w[PARKED + 1];
    for (int i = 0; i < PARKED; i++) {
        char wid[16];
        snprintf(wid, sizeof wid, "w%d", i);
        w[i] = rbh_connect(&b, wid);
        cr_assert_not_null(w[i]);
        double before = rbh_metric(http, FETCH_EMPTY);
        cr_assert_eq(rbh_send(w[i], "FETCH wq\r\n", 10), 0);
        int64_t until = rbh_now_ms() + 10000;
        while (rbh_metric(http, FETCH_EMPTY) < before + 1 && rbh_now_ms() < until)
            rbh_sleep_ms(10);
        cr_assert(rbh_metric(http, FETCH_EMPTY) >= before + 1, "FETCH %d did not park", i);
    }

    lock = PQconnectdb(a.db);
    ctl = PQconnectdb(a.db);
    cr_assert(PQstatus(lock) == CONNECTION_OK && PQstatus(ctl) == CONNECTION_OK, "%s",
              PQerrorMessage(lock));
    exec_ok(lock, "BEGIN");
    exec_ok(lock, "LOCK TABLE rb_jobs IN EXCLUSIVE MODE");
    double wake0 = rbh_metric(http, WAKE_CLAIMS);
    exec_ok(ctl, "SELECT pg_notify(rb_channel(), 'wq')");
    int64_t until = rbh_now_ms() + 10000;
    while (blocked_claims(ctl) < 1 && rbh_now_ms() < until)
        rbh_sleep_ms(10);
    cr_assert_eq(blocked_claims(ctl), 1, "the parked FETCHes' claim is not waiting for the lock");
    for (int i = 0; i < NOTIFIES; i++) /* each its own transaction: its own notification */
        exec_ok(ctl, "SELECT pg_notify(rb_channel(), 'wq')");
    rbh_sleep_ms(300); /* (lets B take them: a claim they started would show below) */
    cr_assert_eq(blocked_claims(ctl), 1,
                 "wakes while the claim was in flight started more claim statements");
    cr_assert_eq(rbh_metric(http, WAKE_CLAIMS), wake0, "a wake claim finished under the lock");
    /* a FETCH for the same queue arriving now waits for the batch in
     * flight (B's one batch thread) and is claimed after it; it has
     * reached B once B's fetches counter moved */
    double fetch0 = rbh_metric(http, "rebound_fetch_claims_total{trigger=\"fetch\"} ");
    w[PARKED] = rbh_connect(&b, "newcomer");
    cr_assert_not_null(w[PARKED]);
    cr_assert_eq(rbh_send(w[PARKED], "FETCH wq\r\n", 10), 0);
    rbh_sleep_ms(300); /* (lets B take it: a statement it started would show below) */
    cr_assert_eq(blocked_claims(ctl), 1, "a FETCH arriving meanwhile started a second claim");
    cr_assert_eq(rbh_metric(http, "rebound_fetch_claims_total{trigger=\"fetch\"} "), fetch0,
                 "a FETCH's claim finished under the lock");
    exec_ok(lock, "COMMIT");

    /* the held claim comes back empty; the wakes noted meanwhile claim again */
    until = rbh_now_ms() + 10000;
    while (rbh_metric(http, WAKE_CLAIMS) < wake0 + 2 && rbh_now_ms() < until)
        rbh_sleep_ms(10);
    double wake1 = rbh_metric(http, WAKE_CLAIMS);
    cr_assert_geq(wake1, wake0 + 2, "no claim after the wakes that came during the first");
    int64_t settled = rbh_now_ms();
    rbh_sleep_ms(300);
    /* at most one claim round more: the poll timer's (once a second) */
    double wake2 = rbh_metric(http, WAKE_CLAIMS);
    cr_assert_leq(wake2, wake1 + 1 + (double)(rbh_now_ms() - settled) / 1000,
                  "%g claim statements after the lock went, want 2 (and a poll's)",
                  wake2 - wake0);

    /* seven jobs pushed on A: each waiting FETCH gets one, each job once */
    rbh_conn *p = rbh_connect(&a, NULL);
    cr_assert_not_null(p);
    for (int i = 0; i <= PARKED; i++)
        cr_assert(rbh_expect(p, "+OK",
                             "PUSH {\"jid\":\"wakejob-%d\",\"jobtype\":\"x\",\"args\":[],\"queue\":\"wq\"}",
                             i));
    int seen[PARKED + 1] = {0};
    for (int i = 0; i <= PARKED; i++) {
        char *reply = rbh_reply(w[i]);
        for (int tries = 0; reply && !strcmp(reply, "$-1") && tries < 5; tries++) {
            free(reply); /* its 2 s ended before the jobs came: once more */
            cr_assert_eq(rbh_send(w[i], "FETCH wq\r\n", 10), 0);
            reply = rbh_reply(w[i]);
        }
        json_t *j = rbh_json(reply);
        const char *jid = json_string_value(json_object_get(j, "jid"));
        cr_assert(jid && !strncmp(jid, "wakejob-", 8), "FETCH %d got no job", i);
        int k = atoi(jid + 8);
        cr_assert(k >= 0 && k <= PARKED && !seen[k]++, "job %s twice", jid);
        cr_assert(rbh_expect(w[i], "+OK", "ACK {\"jid\":\"%s\"}", jid));
        json_decref(j);
    }
    PQfinish(lock);
    PQfinish(ctl);
    lock = ctl = NULL;
    rbh_close(p);
    for (int i = 0; i <= PARKED; i++)
        rbh_close(w[i]);
    cr_assert_eq(rbh_stop(&b), 0, "node B did not exit cleanly");
    b.dir[0] = '\0';
    cr_assert_eq(rbh_stop(&a), 0, "node A did not exit cleanly");
    a.dir[0] = '\0';
}
