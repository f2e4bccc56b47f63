/* Repeats the decision function over a run of failures: the schedule. */
#include "policy/simulate.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

void rb_policy_simulate(const rb_policy *p, const rb_failure *f, int64_t max_failures,
                        int64_t start_ms, rb_rng *rng, rb_simulation *out)
{
    memset(out, 0, sizeof *out);
    bool bounded = p->max_attempts > 0 || p->deadline_ms > 0;
    int64_t limit = max_failures > 0 ? max_failures
                    : bounded        ? RB_SIM_MAX_STEPS
                                     : RB_SIM_DEFAULT_FAILURES;
    out->limit = limit;
    size_t cap = 0;
    int64_t t = 0; /* from the start of attempt 1 */
    for (int64_t attempt = 1; attempt <= limit; attempt++) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            out->steps = rb_xrealloc(out->steps, cap * sizeof *out->steps);
        }
        rb_sim_step *s = &out->steps[out->n++];
        s->attempt = attempt;
        rb_policy_decide(p, attempt, f, start_ms + t, start_ms, rng, &s->d);
        if (s->d.outcome != RB_OUTCOME_RETRY) {
            s->at_ms = t;
            out->reason = s->d.reason;
            out->end = s->d.outcome == RB_OUTCOME_DISCARD ? RB_SIM_DISCARD
                       : s->d.outcome == RB_OUTCOME_CATCH ? RB_SIM_CATCH
                                                          : RB_SIM_DEAD;
            return;
        }
        t = s->d.retry_at_ms - start_ms;
        s->at_ms = t;
    }
    out->end = bounded ? RB_SIM_TRUNCATED : RB_SIM_UNLIMITED;
}

void rb_simulation_release(rb_simulation *s)
{
    free(s->steps);
    s->steps = NULL;
    s->n = 0;
}

const char *rb_sim_end_name(rb_sim_end e)
{
    switch (e) {
    case RB_SIM_DEAD: return "dead";
    case RB_SIM_DISCARD: return "discard";
    case RB_SIM_CATCH: return "catch";
    case RB_SIM_UNLIMITED: return "unlimited";
    case RB_SIM_TRUNCATED: return "truncated";
    }
    return "?";
}

const char *rb_sim_reason_text(const rb_simulation *s)
{
    switch (s->end) {
    case RB_SIM_UNLIMITED: return "no maximum attempts and no deadline";
    case RB_SIM_TRUNCATED: return "failure limit reached before the policy's end";
    default: return rb_reason_name(s->reason);
    }
}

json_t *rb_simulation_to_json(const rb_policy *p, const rb_simulation *s)
{
    json_t *attempts = json_array();
    for (size_t i = 0; i < s->n; i++) {
        const rb_sim_step *st = &s->steps[i];
        json_t *a = json_object();
        json_object_set_new(a, "attempt", json_integer(st->attempt));
        json_object_set_new(a, "outcome", json_string(rb_outcome_name(st->d.outcome)));
        if (st->d.outcome == RB_OUTCOME_RETRY) {
            json_object_set_new(a, "delay_ms", json_integer(st->d.delay_ms));
            json_object_set_new(a, "at_ms", json_integer(st->at_ms));
            json_object_set_new(a, "source", json_string(rb_source_name(st->d.source)));
        } else {
            json_object_set_new(a, "reason", json_string(rb_reason_name(st->d.reason)));
        }
        json_array_append_new(attempts, a);
    }
    json_t *o = json_object();
    json_object_set_new(o, "policy", rb_policy_to_json(p));
    json_object_set_new(o, "attempts", attempts);
    json_object_set_new(o, "final", json_string(rb_sim_end_name(s->end)));
    json_object_set_new(o, "reason", json_string(rb_sim_reason_text(s)));
    return o;
}
