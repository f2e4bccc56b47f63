/* The Go job-queue tutorial (seed 002, semantics.md §2): `max_retries` N is
 * checked as Attempts < MaxRetries after each claim, so N is the number of
 * executions in total. The sweeper re-queues a failed job on its next pass:
 * there is no backoff, so the delay is 0. */
#include "policy/dialect.h"

const char *const rb_dialect_tutorial_keys[] = {"max_retries", NULL};

int rb_dialect_parse_tutorial(const json_t *obj, rb_policy *out, rb_err *err)
{
    int64_t n = 3;
    int rc = rb_json_get_int(obj, "max_retries", &n, err);
    if (rc < 0)
        return rc;
    if (n < 0)
        return rb_err_set(err, RB_EINVAL, "max_retries: cannot be negative, got '%lld'",
                          (long long)n);
    rb_policy_blank(out, RB_DIALECT_TUTORIAL);
    out->backoff = RB_BACKOFF_FIXED;
    out->initial_ms = 0;
    out->coefficient = 1.0;
    /* A claimed job always runs once: max_retries 0 behaves as 1. */
    out->max_attempts = n > 0 ? n : 1;
    if (n == 0)
        rb_policy_warn(out, "max_retries 0 still runs the job once (it is claimed before the "
                            "check) and never retries; write max_retries 1 to say so");
    else
        rb_policy_warn(out, "max_retries %lld means %lld executions in total (%lld %s), not "
                            "%lld retries: the tutorial checks Attempts < MaxRetries",
                       (long long)n, (long long)n, (long long)(n - 1),
                       n - 1 == 1 ? "retry" : "retries", (long long)n);
    return 0;
}
