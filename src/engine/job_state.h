/* The job engine's vocabulary, shared by both backends (the in-memory
 * indexes with SQLite, and PostgreSQL): a job's states and flags as they
 * are stored, and the outcome of an operation on one job (ACK, FAIL,
 * SNOOZE, EXTEND) with its reply text. Plain data and pure functions: any
 * thread may use them. */
#ifndef RB_ENGINE_JOB_STATE_H
#define RB_ENGINE_JOB_STATE_H

#include <stdbool.h>

/* Stored as integers by SQLite and PostgreSQL alike: never renumber. */
typedef enum rb_job_state {
    RB_JOB_PENDING = 0,   /* pushed, its commit not yet done: invisible */
    RB_JOB_SCHEDULED = 1, /* waiting for `at` (or snoozed) */
    RB_JOB_ENQUEUED = 2,
    RB_JOB_WORKING = 3,   /* reserved by a worker until its lease ends */
    RB_JOB_RETRIES = 4,   /* failed, waiting for its retry time */
    RB_JOB_DEAD = 5,      /* kept until its retention ends */
    RB_JOB_WAITING = 6,   /* waits for its parents (depends_on) to be ACKed */
    RB_JOB_BLOCKED = 7,   /* a parent died (on_dep_failure "block") */
} rb_job_state;

/* Job flags, stored as an integer bit set: never renumber. */
enum {
    RB_JOB_EXPIRED = 1,   /* its last reservation expired, not fetched since */
    RB_JOB_REFETCHED = 2, /* the current reservation follows an expired one
                             (recorded; nothing reads it since PostgreSQL
                             schema 4: the holder check covers every working
                             job, and schema 3's FAIL read it) */
    RB_JOB_GROUP_SLOT = 4, /* PostgreSQL: claimed in a group with a concurrency
                              limit; leaving working frees its slot (schema 16) */
};

/* The outcome of ACK, FAIL, SNOOZE or EXTEND on one job (docs/protocol.md,
 * "Reservations and late replies"). Stored nowhere, but PostgreSQL's
 * functions return these numbers: never renumber. */
typedef enum rb_job_status {
    RB_JOB_DONE = 0,         /* applied */
    RB_JOB_MISSING = 1,      /* no such job (ACK: +OK; others: not found) */
    RB_JOB_OTHER_HOLDER = 2, /* another worker holds it: nothing changed */
    RB_JOB_NOOP = 3,         /* +OK, nothing changed: ACK of a never-reserved
                                job, late FAIL after the lease expired */
    RB_JOB_NOT_WORKING = 4,  /* FAIL: not found; SNOOZE/EXTEND: is not working */
} rb_job_status;

/* The reply to an operation refused because another worker holds the job
 * (RB_JOB_OTHER_HOLDER): a printf format taking the jid. */
#define RB_JOB_OTHER_HOLDER_FMT "job %s is reserved by another worker"

/* What a worker reports of a job it holds (docs/protocol.md). */
typedef enum rb_job_verb {
    RB_VERB_ACK,
    RB_VERB_FAIL,
    RB_VERB_SNOOZE,
    RB_VERB_EXTEND,
} rb_job_verb;

/* The one rule for a worker's ACK, FAIL, SNOOZE or EXTEND of a job, before
 * anything changes, for every backend (PostgreSQL's functions apply the
 * same: its SQL rb_holder_status is this rule for SNOOZE and EXTEND, and
 * ACK's functions add the expired-flag step; tests/server/test_pg_rules.c
 * compares them over every state, flag set, holder and wid;
 * tests/server/outcome_cases.h holds the table both backends run):
 * - no such job (exists false; a PENDING one is not visible): MISSING;
 * - a WORKING job whose holder is another wid: OTHER_HOLDER (a request
 *   without a wid, or a job recorded without a holder, is not checked, as
 *   in Faktory);
 * - ACK of a WORKING job, or of one whose reservation expired and was not
 *   fetched since (flags has RB_JOB_EXPIRED: the work was done late),
 *   DONE; of any other, NOOP (never reserved: nothing to acknowledge);
 * - FAIL of a WORKING job: DONE; of one whose reservation expired: NOOP
 *   (the expiry counted as this failure); of any other: NOT_WORKING;
 * - SNOOZE, EXTEND of a WORKING job: DONE; of any other: NOT_WORKING.
 * DONE means: apply it. holder and wid may be NULL. */
rb_job_status rb_job_outcome(rb_job_verb verb, bool exists, rb_job_state state, int flags,
                             const char *holder, const char *wid);

/* A state's name as clients see it ("scheduled", ...; "unknown" out of
 * range). Static storage. */
const char *rb_job_state_name(rb_job_state st);
/* The state a name stands for (JOBS, MUTATE targets, the HTTP API), PENDING
 * excluded; -1 if unknown. */
int rb_job_state_parse(const char *s);
/* Whether MUTATE and the HTTP API's job actions may change a job in state
 * st: scheduled, retries and dead (not waiting or blocked: a child moves
 * with its parents, docs/workflows.md). */
bool rb_job_state_mutable(int st);

#endif
