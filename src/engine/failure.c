/* A failed execution's decision (failure.h). */
#include "engine/failure.h"

#include <stdio.h>

int rb_fail_decide(const rb_config *cfg, const json_t *job, const rb_fail_input *in,
                   int64_t attempts, int64_t first_ms, int64_t now, rb_rng *rng, rb_policy *pol,
                   rb_decision *d, rb_err *perr)
{
    rb_policy_layer layer;
    int fell_back = 0;
    if (rb_config_effective_policy(cfg, job, pol, &layer, perr)) {
        rb_policy_default(pol);
        fell_back = 1;
    }
    rb_failure f = {
        .errtype = in->errtype,
        .message = in->message,
        .non_retryable = in->non_retryable,
        .retry_after = in->retry_after,
        .next_retry_delay_ms = in->next_retry_delay_ms,
    };
    rb_policy_decide(pol, attempts, &f, now, first_ms ? first_ms : now, rng, d);
    return fell_back;
}

void rb_fail_dependency(const rb_config *cfg, json_t *job, const char *parent, int64_t attempt,
                        const char *history, int64_t now, rb_policy *pol, rb_decision *d,
                        rb_failrec *rec)
{
    rb_policy_layer layer;
    if (rb_config_effective_policy(cfg, job, pol, &layer, NULL))
        rb_policy_default(pol);
    *d = (rb_decision){.outcome = pol->catch_jobtype ? RB_OUTCOME_CATCH : RB_OUTCOME_DEAD,
                       .reason = RB_REASON_DEPENDENCY};
    char msg[320];
    snprintf(msg, sizeof msg, "job %s it depends on failed", parent ? parent : "?");
    rb_failrec_input fin = {.attempt = attempt, .history = history,
                            .errtype = "DependencyFailed", .message = msg, .now = now};
    rb_failrec_build(job, &fin, pol, d, rec);
}
