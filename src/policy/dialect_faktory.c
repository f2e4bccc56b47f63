/* Faktory / Sidekiq's `retry: N` (semantics.md §5): 25 by default, 0 discards
 * on failure, -1 sends to dead, N allows N retries with Sidekiq's backoff. */
#include "policy/dialect.h"

const char *const rb_dialect_faktory_keys[] = {"retry", NULL};

int rb_dialect_parse_faktory(const json_t *obj, rb_policy *out, rb_err *err)
{
    int64_t retry = 25;
    int rc = rb_json_get_int(obj, "retry", &retry, err);
    if (rc < 0)
        return rc;
    if (retry < -1)
        return rb_err_set(err, RB_EINVAL, "retry: must be -1, 0 or a positive count, got '%lld'",
                          (long long)retry);
    rb_policy_default(out);
    out->max_attempts = retry <= 0 ? 1 : retry == INT64_MAX ? INT64_MAX : retry + 1;
    out->on_exhaust = retry == 0 ? RB_ON_EXHAUST_DISCARD : RB_ON_EXHAUST_DEAD;
    return 0;
}
