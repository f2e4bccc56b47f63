/* Distributed mode's hand-off and its notifications (issue 29;
 * src/backend/pg/fetch.c's rb_pgmode_hand_off and parked_note, the push
 * statement rb_push_hand). A job pushed on the node where a FETCH of its
 * queue is parked goes to that FETCH in the push's own transaction: the
 * row is inserted claimed for the worker (attempt counted, lease running)
 * and no claim statement runs; a paused queue's job is not handed. A push
 * notifies only when another node has a FETCH parked (rb_parked): one node
 * alone sends no NOTIFY, a second node's parked FETCH is told at once, and
 * a node that stops takes its row away. */
#define RBH_PG 1
#include "test_http_harness.h"

#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

static rbh_server a, b;
static PGconn *ctl; /* the test's own connection to the schema */

static void fini(void)
{
    if (ctl)
        PQfinish(ctl);
    ctl = NULL;
    if (a.dir[0])
        rbh_stop(&a);
    if (b.dir[0])
        rbh_stop(&b);
}

TestSuite(handoff, .fini = fini, .timeout = 120);

#define WAKE_CLAIMS "rebound_fetch_claims_total{trigger=\"wake\"} "

/* The first column of sql's first row ("" when none; caller frees). */
static char *value(const char *sql)
{
    PGresult *r = PQexec(ctl, sql);
    cr_assert(r && PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(ctl));
    char *v = strdup(PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return v;
}

static void value_is(const char *sql, const char *want)
{
    char *v = value(sql);
    cr_assert_str_eq(v, want, "%s gave '%s', expected '%s'", sql, v, want);
    free(v);
}

/* Starts n with its HTTP listener (for /metrics) on a's schema when a is
 * given, else on a fresh one; its HTTP port. */
static int launch(rbh_server *n, const rbh_server *on)
{
    rbh_init(n);
    if (on)
        snprintf(n->db, sizeof n->db, "%s", on->db);
    char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", n->dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    cr_assert_eq(rbh_launch(n, extra), 0, "the node did not start (see %s)", n->log);
    int http = 0;
    FILE *f = fopen(hpf, "r");
    cr_assert(f && fscanf(f, "%d", &http) == 1);
    fclose(f);
    return http;
}

/* Sends FETCH queue on c and returns once node s has it parked. */
static void park(const rbh_server *s, rbh_conn *c, const char *queue)
{
    char line[64];
    snprintf(line, sizeof line, "FETCH %s\r\n", queue);
    cr_assert(rbh_send_parked(s, c, line), "the FETCH of %s is not waiting", queue);
}

/* The jid of the job c's parked FETCH got (caller frees), NULL for none. */
static char *parked_jid(rbh_conn *c)
{
    json_t *j = rbh_json(rbh_reply(c));
    const char *jid = json_string_value(json_object_get(j, "jid"));
    char *out = jid ? strdup(jid) : NULL;
    json_decref(j);
    return out;
}

static void push(rbh_conn *p, const char *jid, const char *queue)
{
    cr_assert(rbh_expect(p, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"h\",\"args\":[],\"queue\":\"%s\"}",
                         jid, queue));
}

/* Whether a notification arrived on ctl within ms (it LISTENs). */
static bool notified(int ms)
{
    int64_t until = rbh_now_ms() + ms;
    do {
        PQconsumeInput(ctl);
        PGnotify *n = PQnotifies(ctl);
        if (n) {
            PQfreemem(n);
            while ((n = PQnotifies(ctl)))
                PQfreemem(n);
            return true;
        }
        rbh_sleep_ms(10);
    } while (rbh_now_ms() < until);
    return false;
}

Test(handoff, a_parked_fetch_gets_a_push_of_its_node_without_a_claim)
{
    int http = launch(&a, NULL);
    ctl = PQconnectdb(a.db);
    cr_assert(PQstatus(ctl) == CONNECTION_OK, "%s", PQerrorMessage(ctl));
    rbh_conn *w = rbh_connect(&a, "hw-1"), *p = rbh_connect(&a, NULL);
    cr_assert(w && p);
    park(&a, w, "hq");
    rbh_sleep_ms(100); /* (the claim round its node's first park starts) */
    double claims = rbh_metric(http, WAKE_CLAIMS);
    push(p, "handjob-01", "hq");
    char *jid = parked_jid(w);
    cr_assert(jid && !strcmp(jid, "handjob-01"), "the parked FETCH got %s", jid ? jid : "none");
    free(jid);
    /* inserted claimed for the worker, as a claim leaves a job */
    value_is("SELECT state || ' ' || wid || ' ' || attempts || ' ' || (due_ms - enq_ms)"
             " FROM rb_jobs WHERE jid = 'handjob-01'",
             "3 hw-1 1 1800000");
    cr_assert_eq(rbh_metric(http, WAKE_CLAIMS), claims, "a claim statement ran for the hand-off");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"handjob-01\"}"));
    value_is("SELECT count(*) FROM rb_jobs WHERE jid = 'handjob-01'", "0");

    /* a paused queue's job is not handed: it waits in its queue */
    cr_assert(rbh_expect(p, "+OK", "QUEUE PAUSE hq"));
    park(&a, w, "hq");
    push(p, "handjob-02", "hq");
    value_is("SELECT state || ' ' || coalesce(wid, '-') || ' ' || attempts FROM rb_jobs"
             " WHERE jid = 'handjob-02'",
             "2 - 0");
    cr_assert_null(parked_jid(w), "a paused queue's job was handed out");
    cr_assert(rbh_expect(p, "+OK", "QUEUE RESUME hq"));
    char *got = rbh_fetch_jid(w, "hq");
    cr_assert(got && !strcmp(got, "handjob-02"), "FETCH gave %s", got ? got : "nothing");
    free(got);
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"handjob-02\"}"));
    rbh_close(w);
    rbh_close(p);
}

Test(handoff, a_push_notifies_only_when_another_node_has_a_fetch_parked)
{
    launch(&a, NULL);
    ctl = PQconnectdb(a.db);
    cr_assert(PQstatus(ctl) == CONNECTION_OK, "%s", PQerrorMessage(ctl));
    char *ch = value("SELECT rb_channel()");
    char listen[300];
    snprintf(listen, sizeof listen, "LISTEN \"%s\"", ch);
    free(ch);
    PGresult *r = PQexec(ctl, listen);
    cr_assert(r && PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQerrorMessage(ctl));
    PQclear(r);

    /* one node, a FETCH parked there: its own pushes notify nobody */
    rbh_conn *wa = rbh_connect(&a, "na-1"), *p = rbh_connect(&a, NULL);
    cr_assert(wa && p);
    park(&a, wa, "nq");
    int64_t until = rbh_now_ms() + 10000;
    char *n = NULL;
    while ((!n || strcmp(n, "1")) && rbh_now_ms() < until) {
        free(n);
        rbh_sleep_ms(10);
        n = value("SELECT count(*) FROM rb_parked");
    }
    cr_assert_str_eq(n, "1", "node A is not listed in rb_parked");
    free(n);
    (void)notified(200); /* (nothing before the pushes) */
    push(p, "notejob-01", "nq"); /* handed to wa */
    push(p, "notejob-02", "nq"); /* ready */
    cr_assert_not(notified(300), "a push notified with no other node parked");
    char *jid = parked_jid(wa);
    cr_assert(jid && !strcmp(jid, "notejob-01"));
    free(jid);
    cr_assert(rbh_expect(wa, "+OK", "ACK {\"jid\":\"notejob-01\"}"));
    char *got = rbh_fetch_jid(wa, "nq");
    cr_assert(got && !strcmp(got, "notejob-02"), "FETCH gave %s", got ? got : "nothing");
    free(got);
    cr_assert(rbh_expect(wa, "+OK", "ACK {\"jid\":\"notejob-02\"}"));

    /* node B with a FETCH parked: node A's pushes tell it, and it gets the
     * job well before its poll would */
    launch(&b, &a);
    rbh_conn *wb = rbh_connect(&b, "nb-1");
    cr_assert(wb);
    park(&b, wb, "nq");
    until = rbh_now_ms() + 10000;
    n = NULL;
    while ((!n || strcmp(n, "2")) && rbh_now_ms() < until) {
        free(n);
        rbh_sleep_ms(10);
        n = value("SELECT count(*) FROM rb_parked");
    }
    cr_assert_str_eq(n, "2", "node B is not listed in rb_parked");
    free(n);
    (void)notified(100);
    int64_t t0 = rbh_now_ms();
    push(p, "notejob-03", "nq");
    cr_assert(notified(2000), "no notification with node B parked");
    jid = parked_jid(wb);
    cr_assert(jid && !strcmp(jid, "notejob-03"), "node B's parked FETCH got %s", jid ? jid : "none");
    free(jid);
    cr_assert_lt(rbh_now_ms() - t0, 900, "node B got the job after %lld ms",
                 (long long)(rbh_now_ms() - t0));
    cr_assert(rbh_expect(wb, "+OK", "ACK {\"jid\":\"notejob-03\"}"));

    /* a node that stops takes its row away */
    rbh_close(wb);
    cr_assert_eq(rbh_stop(&b), 0, "node B did not exit cleanly");
    b.dir[0] = '\0';
    value_is("SELECT count(*) FROM rb_parked", "1");
    rbh_close(wa);
    rbh_close(p);
}

/* A node paused between a claim's COMMIT and its reply (SIGSTOP, a
 * stalled VM) must not hand out a job whose lease ran out meanwhile: any
 * node's reaper may have taken it and another worker run it. The fault
 * pg.claim_pause_ms stops the node's loop thread 2.5 s before the reply
 * of the first job a claim got; the job's lease is 1 s, so the node's own
 * maintenance reaps it (retry 0: discarded) while the reply waits. The FETCH
 * is not given the job: it claims again and finds nothing. */
Test(handoff, a_claim_whose_lease_ran_out_before_its_reply_is_not_handed_out)
{
    rbh_fault_set("pg.claim_pause_ms", "2500");
    launch(&a, NULL);
    rbh_conn *w = rbh_connect(&a, "hw-late"), *p = rbh_connect(&a, NULL);
    cr_assert(w && p);
    cr_assert(rbh_expect(p, "+OK", "PUSH {\"jid\":\"late-00001\",\"jobtype\":\"h\",\"args\":[],"
                                   "\"queue\":\"lq\",\"reserve_for\":1,\"retry\":0}"));
    char *jid = rbh_fetch_jid(w, "lq");
    cr_assert_null(jid, "the FETCH got %s after its lease ran out", jid);
    /* the reaper's ReservationExpired, retry 0: discarded, not run */
    cr_assert_eq(rbh_info_int(p, "faktory.total_failures"), 1, "the reaper did not take it");
    cr_assert_eq(rbh_info_int(p, "faktory.total_processed"), 0);
    bool logged = false;
    FILE *f = fopen(a.log, "r");
    cr_assert_not_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f))
        logged |= strstr(line, "late-00001: claimed") && strstr(line, "not handed out");
    fclose(f);
    cr_assert(logged, "no 'not handed out' line in %s", a.log);
    rbh_close(w);
    rbh_close(p);
}
