/* A failed execution, as both backends decide it: FAIL's fields (or an
 * expired reservation's) and the decision through the job's effective
 * policy. Pure (no I/O, no clocks: `now` and the rng are given); any thread
 * may call it with its own rng. */
#ifndef RB_ENGINE_FAILURE_H
#define RB_ENGINE_FAILURE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "config/config.h"
#include "policy/failrec.h"
#include "policy/policy.h"
#include "policy/rng.h"

/* FAIL's fields (docs/protocol.md, "FAIL fields"). Strings and backtrace
 * borrowed. */
typedef struct rb_fail_input {
    const char *errtype, *message;
    const json_t *backtrace;     /* array or NULL */
    bool non_retryable;
    const char *retry_after;     /* NULL = none */
    int64_t next_retry_delay_ms; /* <= 0 = none */
} rb_fail_input;

/* The decision for a failure of job (its JSON object) in its `attempts`-th
 * execution, the first at first_ms (0: now), through its effective policy
 * in cfg, which goes to *pol (release it with rb_policy_release). When the
 * job's policy no longer resolves (only a configuration change since PUSH
 * can do that) the default policy decides: returns 1 with the reason in
 * perr (may be NULL), for the caller to log; else 0. */
int rb_fail_decide(const rb_config *cfg, const json_t *job, const rb_fail_input *in,
                   int64_t attempts, int64_t first_ms, int64_t now, rb_rng *rng, rb_policy *pol,
                   rb_decision *d, rb_err *perr);

/* A job dying because a job it depends on failed (docs/workflows.md, "When
 * a parent dies"), as both backends record it: its effective policy (the
 * default when it no longer resolves) into *pol, the decision (its catch
 * job when the policy names one, else dead; reason dependency) into *d,
 * and the failure record (errtype DependencyFailed, a message naming
 * parent, and the history entry's "parent": the job whose death killed
 * it, read back by rb_fail_killed_by) built into *rec, job's `failure`
 * hash set. attempt and history are the job's. Release pol and rec. */
void rb_fail_dependency(const rb_config *cfg, json_t *job, const char *parent, int64_t attempt,
                        const char *history, int64_t now, rb_policy *pol, rb_decision *d,
                        rb_failrec *rec);

/* The parent whose death killed a job, from its history (a JSON array):
 * the last entry's "parent" when its reason is dependency (an entry
 * written before it was recorded: the jid its message names), else NULL.
 * Returns a new string. */
char *rb_fail_killed_by(const json_t *history);

#endif
