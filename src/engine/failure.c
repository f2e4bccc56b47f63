/* A failed execution's decision (failure.h). */
#include "engine/failure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* The text of the message rb_fail_dependency writes, around the parent. */
#define KILLED_PREFIX "job "
#define KILLED_SUFFIX " it depends on failed"

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
    snprintf(msg, sizeof msg, KILLED_PREFIX "%s" KILLED_SUFFIX, parent ? parent : "?");
    rb_failrec_input fin = {.attempt = attempt, .history = history,
                            .errtype = "DependencyFailed", .message = msg, .now = now};
    rb_failrec_build(job, &fin, pol, d, rec);
    json_t *entry = json_array_get(rec->history, json_array_size(rec->history) - 1);
    if (parent && entry)
        json_object_set_new(entry, "parent", json_string(parent));
}

char *rb_fail_killed_by(const json_t *history)
{
    const json_t *e = json_array_get(history, json_array_size(history) - 1);
    const char *reason = json_string_value(json_object_get(e, "reason"));
    if (!reason || strcmp(reason, "dependency"))
        return NULL;
    const char *p = json_string_value(json_object_get(e, "parent"));
    if (p)
        return rb_xstrdup(p);
    const char *m = json_string_value(json_object_get(e, "message"));
    size_t np = strlen(KILLED_PREFIX), ns = strlen(KILLED_SUFFIX), n = m ? strlen(m) : 0;
    if (n <= np + ns || strncmp(m, KILLED_PREFIX, np) || strcmp(m + n - ns, KILLED_SUFFIX))
        return NULL;
    char *out = rb_xmalloc(n - np - ns + 1);
    memcpy(out, m + np, n - np - ns);
    out[n - np - ns] = 0;
    return out;
}
