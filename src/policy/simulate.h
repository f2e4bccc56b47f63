/* The schedule a policy gives when every execution fails: what
 * `rebound policy simulate` prints and tests check. Pure, like the decision
 * function it repeats. */
#ifndef RB_POLICY_SIMULATE_H
#define RB_POLICY_SIMULATE_H

#include "policy/policy.h"

/* Longest schedule simulated when the policy is bounded and no limit given. */
#define RB_SIM_MAX_STEPS 1000
/* Failures shown for an unbounded policy when no limit is given. */
#define RB_SIM_DEFAULT_FAILURES 30

typedef struct rb_sim_step {
    int64_t attempt;     /* the execution that failed, 1-based */
    rb_decision d;       /* what followed */
    int64_t at_ms;       /* RETRY: the next execution, from the start of attempt 1 */
} rb_sim_step;

typedef enum rb_sim_end {
    RB_SIM_DEAD,
    RB_SIM_DISCARD,
    RB_SIM_CATCH,
    RB_SIM_UNLIMITED, /* no maximum attempts, no deadline: cut at the limit */
    RB_SIM_TRUNCATED, /* bounded, but the limit came first */
} rb_sim_end;

typedef struct rb_simulation {
    rb_sim_step *steps; /* owned */
    size_t n;
    rb_sim_end end;
    rb_dead_reason reason; /* DEAD/DISCARD/CATCH: why */
    int64_t limit;         /* the failure limit used */
} rb_simulation;

/* Fails attempt after attempt with failure f (NULL = a plain failure),
 * executions taking no time, the first starting at start_ms (only HTTP-date
 * Retry-After values depend on it). max_failures > 0 limits the steps;
 * 0 means RB_SIM_DEFAULT_FAILURES for an unbounded policy and
 * RB_SIM_MAX_STEPS otherwise. Fills *out (release it). */
void rb_policy_simulate(const rb_policy *p, const rb_failure *f, int64_t max_failures,
                        int64_t start_ms, rb_rng *rng, rb_simulation *out);
void rb_simulation_release(rb_simulation *s);

/* "dead", "discard", "catch", "unlimited", "truncated". */
const char *rb_sim_end_name(rb_sim_end e);
/* A sentence on why the schedule ended ("exhausted", "deadline", ...). */
const char *rb_sim_reason_text(const rb_simulation *s);

/* {"policy": {...}, "attempts": [{"attempt", "outcome", "delay_ms", "at_ms",
 * "source"} or {"attempt", "outcome", "reason"}, ...], "final", "reason"}:
 * a new reference. */
json_t *rb_simulation_to_json(const rb_policy *p, const rb_simulation *s);

#endif
