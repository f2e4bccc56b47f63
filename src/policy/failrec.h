/* The record a failed execution leaves in its job, built once for both
 * storage modes (the single-node server's backend/sqlite/fail.c and the PostgreSQL
 * engine's backend/pg/sql_failure.c): the attempt history entry, Faktory's `failure`
 * hash (errtype, message and backtrace trimmed as docs/protocol.md says)
 * and the catch job FTL spawns when retries are exhausted. Pure JSON
 * building from a decision already taken (rb_policy_decide): no I/O, no
 * server or store state, so both backends may include it. */
#ifndef RB_POLICY_FAILREC_H
#define RB_POLICY_FAILREC_H

#include <stdint.h>

#include <jansson.h>

#include "policy/policy.h"

/* Longest errtype and message kept, in UTF-8 characters. */
#define RB_FAILREC_ERRTYPE_MAX 100
#define RB_FAILREC_MESSAGE_MAX 1000

/* One failure's record. Every member is an owned reference
 * (rb_failrec_release). */
typedef struct rb_failrec {
    json_t *errtype;   /* string: trimmed, "unknown" when empty or absent */
    json_t *message;   /* string: same */
    json_t *backtrace; /* array: the job's `backtrace` limit of string lines */
    json_t *history;   /* array: the earlier history with this failure appended */
} rb_failrec;

/* The failure being recorded. Strings borrowed, may be NULL. */
typedef struct rb_failrec_input {
    int64_t attempt;           /* the execution that failed (1-based) */
    const char *history;       /* the job's history so far (JSON array text) */
    const char *errtype, *message;
    const json_t *backtrace;   /* the worker's lines (array or NULL) */
    int64_t now;               /* failure time, wall-clock ms */
    int64_t now_us;            /* the same instant in microseconds, for the texts
                                  (failed_at, the history's at); 0: now's */
} rb_failrec_input;

/* Builds the record of a failure decided as d under policy pol, and sets
 * job's `failure` hash (job is changed in place: retry_count, remaining,
 * failed_at, errtype, message, backtrace when it has lines, next_at when
 * retried: an optional key is left out rather than empty). A
 * history text that is not an array starts a new history. Fills *out. */
void rb_failrec_build(json_t *job, const rb_failrec_input *in, const rb_policy *pol,
                      const rb_decision *d, rb_failrec *out);

/* The catch job (new reference) for the exhausted job jid of queue/priority,
 * whose JSON is job: jobtype pol->catch_jobtype, one argument {jid, jobtype,
 * args, error: {errtype, message, backtrace}} from r, a Temporal-dialect
 * retry_policy retrying forever at a fixed delay (rb_policy_for_catch: the
 * original's maximum backoff, 1 h when none), created_at now and
 * custom.catch_of = jid. pol->catch_jobtype must be set. */
json_t *rb_failrec_catch_job(const rb_failrec *r, const json_t *job, const char *jid,
                             const char *catch_jid, const char *queue, int64_t priority,
                             const rb_policy *pol, int64_t now);

/* Drops the record's references and zeroes it. */
void rb_failrec_release(rb_failrec *r);

#endif
