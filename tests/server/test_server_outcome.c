/* The rule for a worker's ACK, FAIL, SNOOZE and EXTEND, through real jobs
 * and replies, on a single node and (test_pg_server_outcome.c, RBH_PG) in
 * distributed mode, from this one source and the table the engine's unit
 * test runs (outcome_cases.h): for every stored shape of a job (missing,
 * enqueued, scheduled, working for w1, working without a holder, its lease
 * expired and reaped, failed, dead), every verb, asked by its holder w1,
 * by another worker w2 and without a wid: the reply the outcome gives
 * (docs/protocol.md, "Reservations and late replies") and the job's state
 * after it — changed only when the outcome is DONE. */
#include "harness.h"
#include "common_helpers.h"
#include "outcome_cases.h"

#include <stdio.h>
#include <string.h>

static void setup(void)
{
    rbh_suite_start("oc-admin");
}

TestSuite(outcome, .init = setup, .fini = rbh_suite_stop, .timeout = 120);

/* The case's job: oc-SETUP-VERB-WID. */
static void jid_of(char *out, size_t n, int s, int v, int w)
{
    snprintf(out, n, "oc-%d-%d-%d", s, v, w);
}

/* The state a shape leaves its job in ("missing": none). */
static const char *const shape_state[OC_SETUPS] = {
    [OC_MISSING] = NULL,         [OC_ENQUEUED] = "enqueued", [OC_SCHEDULED] = "scheduled",
    [OC_WORKING] = "working",    [OC_WORKING_ANON] = "working", [OC_EXPIRED] = "retries",
    [OC_RETRIES] = "retries",    [OC_DEAD] = "dead",
};

/* Gives jid shape s; conns: w1, an anonymous one. */
static void make(int s, const char *jid, rbh_conn *w1, rbh_conn *anon)
{
    if (s == OC_MISSING)
        return;
    /* a queue of its own, so that its FETCH gets this job */
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"%s\",\"jobtype\":\"oc\",\"args\":[],\"queue\":\"q%s\"%s%s}",
                         jid, jid, s == OC_SCHEDULED ? ",\"at\":\"2999-01-01T00:00:00Z\"" : "",
                         s == OC_EXPIRED ? ",\"reserve_for\":1" : s == OC_DEAD ? ",\"retry\":-1" : ""));
    if (s == OC_ENQUEUED || s == OC_SCHEDULED)
        return;
    char q[64];
    snprintf(q, sizeof q, "q%s", jid);
    char *got = rbh_fetch_jid(s == OC_WORKING_ANON ? anon : w1, q);
    cr_assert(got && !strcmp(got, jid), "FETCH %s: %s", q, got ? got : "nothing");
    free(got);
    if (s == OC_RETRIES || s == OC_DEAD)
        cr_assert(rbh_expect(w1, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"m\"}",
                             jid));
}

/* The reply verb v's outcome st gives for jid (cmd_jobs.c's job_done). */
static void want_reply(char *out, size_t n, int v, rb_job_status st, const char *jid,
                       const char *state)
{
    switch (st) {
    case RB_JOB_DONE:
    case RB_JOB_NOOP:
        snprintf(out, n, "+OK");
        break;
    case RB_JOB_OTHER_HOLDER:
        snprintf(out, n, "-ERR job %s is reserved by another worker", jid);
        break;
    case RB_JOB_MISSING:
        if (v == RB_VERB_ACK)
            snprintf(out, n, "+OK");
        else if (v == RB_VERB_FAIL)
            snprintf(out, n, "-ERR Job not found %s", jid);
        else
            snprintf(out, n, "-ERR %s: job %s not found", oc_verbs[v], jid);
        break;
    case RB_JOB_NOT_WORKING:
        if (v == RB_VERB_FAIL)
            snprintf(out, n, "-ERR Job not found %s", jid);
        else
            snprintf(out, n, "-ERR %s: job %s is not working (it is %s)", oc_verbs[v], jid, state);
        break;
    }
}

/* The state a DONE verb leaves its job in (NULL: gone). */
static const char *done_state(int v)
{
    return v == RB_VERB_ACK ? NULL : v == RB_VERB_FAIL ? "retries"
                                 : v == RB_VERB_SNOOZE ? "scheduled" : "working";
}

RBH_SERVER_TEST(outcome, every_shape_verb_and_worker_as_the_table_says)
{
    rbh_conn *w[OC_WIDS] = {rbh_connect(&S, "w1"), rbh_connect(&S, "w2"), rbh_connect(&S, NULL)};
    cr_assert(w[OC_W1] && w[OC_W2] && w[OC_NONE]);
    char jid[64];
    for (int s = 0; s < OC_SETUPS; s++)
        for (int v = RB_VERB_ACK; v <= RB_VERB_EXTEND; v++)
            for (int k = 0; k < OC_WIDS; k++) {
                jid_of(jid, sizeof jid, s, v, k);
                make(s, jid, w[OC_W1], w[OC_NONE]);
            }
    /* the expired ones: their 1 s leases run out and the reaper takes them */
    for (int v = RB_VERB_ACK; v <= RB_VERB_EXTEND; v++)
        for (int k = 0; k < OC_WIDS; k++) {
            jid_of(jid, sizeof jid, OC_EXPIRED, v, k);
            cr_assert(rbh_wait_state(C, jid, "retries", 30000), "%s was not reaped", jid);
        }
    int n = 0;
    for (int s = 0; s < OC_SETUPS; s++)
        for (int v = RB_VERB_ACK; v <= RB_VERB_EXTEND; v++)
            for (int k = 0; k < OC_WIDS; k++, n++) {
                jid_of(jid, sizeof jid, s, v, k);
                rb_job_status st = oc_want[s][v][k];
                char want[200], *before = rbh_job_state(C, jid);
                want_reply(want, sizeof want, v, st, jid, before ? before : "?");
                static const char *const args[] = {
                    "", ",\"errtype\":\"E\",\"message\":\"late\"", ",\"seconds\":60",
                    ",\"reserve_for\":600"};
                char *r = rbh_cmd(w[k], "%s {\"jid\":\"%s\"%s}", oc_verbs[v], jid, args[v]);
                cr_expect(r && !strcmp(r, want), "%s of a %s job by %s: got '%s', want '%s'",
                          oc_verbs[v], oc_shapes[s].name, oc_wids[k] ? oc_wids[k] : "no wid",
                          r ? r : "(closed)", want);
                free(r);
                const char *after_want = st == RB_JOB_DONE ? done_state(v) : shape_state[s];
                char *after = rbh_job_state(C, jid);
                cr_expect((!after && !after_want) || (after && after_want && !strcmp(after, after_want)),
                          "%s of a %s job by %s: state %s after, want %s", oc_verbs[v],
                          oc_shapes[s].name, oc_wids[k] ? oc_wids[k] : "no wid",
                          after ? after : "(gone)", after_want ? after_want : "(gone)");
                free(after);
                free(before);
            }
    cr_assert_eq(n, OC_SETUPS * 4 * OC_WIDS);
    for (int k = 0; k < OC_WIDS; k++)
        rbh_close(w[k]);
}
