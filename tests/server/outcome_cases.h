/* The rule for a worker's ACK, FAIL, SNOOZE and EXTEND of a job
 * (engine/job_state.h, rb_job_outcome) as a table: every stored shape of a
 * job, every verb, the asking worker being its holder, another one, or
 * none. The engine's unit test (test_engine_outcome.c) runs it through the
 * pure function, the server suites (test_server_outcome.c on a single
 * node, test_pg_server_outcome.c in distributed mode) through real jobs
 * and replies; PostgreSQL's SQL applies the same rule (test_pg_rules.c
 * compares it with the pure function over every shape). Header-only. */
#ifndef RB_TESTS_OUTCOME_CASES_H
#define RB_TESTS_OUTCOME_CASES_H

#include "engine/job_state.h"

/* A job's shape before the verb: its state, flags and holder as stored. */
typedef enum oc_setup {
    OC_MISSING,      /* no such job */
    OC_ENQUEUED,     /* pushed, never fetched */
    OC_SCHEDULED,    /* pushed with a future `at` */
    OC_WORKING,      /* fetched by worker "w1" */
    OC_WORKING_ANON, /* fetched by a connection that said no wid */
    OC_EXPIRED,      /* fetched by "w1", its lease ran out: reaped into retries */
    OC_RETRIES,      /* fetched by "w1" and failed: waiting for its retry */
    OC_DEAD,         /* killed */
    OC_SETUPS
} oc_setup;

/* What the pure function sees for each shape. */
static const struct {
    const char *name;
    bool exists;
    rb_job_state state;
    int flags;
    const char *holder;
} oc_shapes[OC_SETUPS] = {
    [OC_MISSING] = {"missing", false, RB_JOB_PENDING, 0, NULL},
    [OC_ENQUEUED] = {"enqueued", true, RB_JOB_ENQUEUED, 0, NULL},
    [OC_SCHEDULED] = {"scheduled", true, RB_JOB_SCHEDULED, 0, NULL},
    [OC_WORKING] = {"working", true, RB_JOB_WORKING, 0, "w1"},
    [OC_WORKING_ANON] = {"working-anon", true, RB_JOB_WORKING, 0, NULL},
    [OC_EXPIRED] = {"expired", true, RB_JOB_RETRIES, RB_JOB_EXPIRED, NULL},
    [OC_RETRIES] = {"retries", true, RB_JOB_RETRIES, 0, NULL},
    [OC_DEAD] = {"dead", true, RB_JOB_DEAD, 0, NULL},
};

/* The asking worker. */
enum { OC_W1, OC_W2, OC_NONE, OC_WIDS };
static const char *const oc_wids[OC_WIDS] = {"w1", "w2", NULL};

/* The expected outcome of each verb (RB_VERB_ACK .. RB_VERB_EXTEND) for
 * each asking worker (w1, w2, none). */
static const rb_job_status oc_want[OC_SETUPS][4][OC_WIDS] = {
#define ALL(s) {s, s, s}
    [OC_MISSING] = {ALL(RB_JOB_MISSING), ALL(RB_JOB_MISSING), ALL(RB_JOB_MISSING),
                    ALL(RB_JOB_MISSING)},
    /* never reserved: nothing to acknowledge; FAIL, SNOOZE, EXTEND refused */
    [OC_ENQUEUED] = {ALL(RB_JOB_NOOP), ALL(RB_JOB_NOT_WORKING), ALL(RB_JOB_NOT_WORKING),
                     ALL(RB_JOB_NOT_WORKING)},
    [OC_SCHEDULED] = {ALL(RB_JOB_NOOP), ALL(RB_JOB_NOT_WORKING), ALL(RB_JOB_NOT_WORKING),
                      ALL(RB_JOB_NOT_WORKING)},
    /* its holder and a request without a wid apply it; another worker
     * is refused */
    [OC_WORKING] = {{RB_JOB_DONE, RB_JOB_OTHER_HOLDER, RB_JOB_DONE},
                    {RB_JOB_DONE, RB_JOB_OTHER_HOLDER, RB_JOB_DONE},
                    {RB_JOB_DONE, RB_JOB_OTHER_HOLDER, RB_JOB_DONE},
                    {RB_JOB_DONE, RB_JOB_OTHER_HOLDER, RB_JOB_DONE}},
    /* no holder recorded: nobody is refused */
    [OC_WORKING_ANON] = {ALL(RB_JOB_DONE), ALL(RB_JOB_DONE), ALL(RB_JOB_DONE),
                         ALL(RB_JOB_DONE)},
    /* the work was done, late: an ACK counts; a FAIL's failure was the
     * expiry; it is not working */
    [OC_EXPIRED] = {ALL(RB_JOB_DONE), ALL(RB_JOB_NOOP), ALL(RB_JOB_NOT_WORKING),
                    ALL(RB_JOB_NOT_WORKING)},
    [OC_RETRIES] = {ALL(RB_JOB_NOOP), ALL(RB_JOB_NOT_WORKING), ALL(RB_JOB_NOT_WORKING),
                    ALL(RB_JOB_NOT_WORKING)},
    [OC_DEAD] = {ALL(RB_JOB_NOOP), ALL(RB_JOB_NOT_WORKING), ALL(RB_JOB_NOT_WORKING),
                 ALL(RB_JOB_NOT_WORKING)},
#undef ALL
};

static const char *const oc_verbs[4] = {"ACK", "FAIL", "SNOOZE", "EXTEND"};

#endif
