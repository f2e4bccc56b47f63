/* Temporal's RetryPolicy (seed 003, semantics.md §3): defaults fill unset
 * (zero) fields, then Temporal's validation order, first failure wins. */
#include "policy/dialect.h"
#include "policy/duration.h"

#include <string.h>

#include "common/buf.h"

const char *const rb_dialect_temporal_keys[] = {
    "initial_interval",          "backoff_coefficient",       "maximum_interval",
    "maximum_attempts",          "non_retryable_error_types", "schedule_to_close_timeout",
    NULL,
};

static int read_types(const json_t *obj, rb_policy *out, rb_err *err)
{
    const json_t *v = json_object_get(obj, "non_retryable_error_types");
    char b[64];
    if (!v)
        return 0;
    if (!json_is_array(v))
        return rb_err_set(err, RB_EINVAL,
                          "non_retryable_error_types: must be an array of strings, got '%s'",
                          rb_json_brief(v, b, sizeof b));
    size_t n = json_array_size(v);
    out->non_retryable = n ? rb_xcalloc(n, sizeof *out->non_retryable) : NULL;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_string(e) || !*json_string_value(e))
            return rb_err_set(err, RB_EINVAL,
                              "non_retryable_error_types[%zu]: must be a non-empty string, got '%s'",
                              i, rb_json_brief(e, b, sizeof b));
        out->non_retryable[out->n_non_retryable++] = rb_xstrdup(json_string_value(e));
    }
    return 0;
}

int rb_dialect_parse_temporal(const json_t *obj, rb_policy *out, rb_err *err)
{
    int64_t initial = 0, maximum = 0, attempts = 0, deadline = 0;
    double coef = 0;
    int rc;
    char a[RB_DURATION_STRLEN], b[RB_DURATION_STRLEN];

    rb_policy_blank(out, RB_DIALECT_TEMPORAL);
    if ((rc = rb_json_get_duration(obj, "initial_interval", &initial, err)) < 0 ||
        (rc = rb_json_get_number(obj, "backoff_coefficient", &coef, err)) < 0 ||
        (rc = rb_json_get_duration(obj, "maximum_interval", &maximum, err)) < 0 ||
        (rc = rb_json_get_int(obj, "maximum_attempts", &attempts, err)) < 0 ||
        (rc = rb_json_get_duration(obj, "schedule_to_close_timeout", &deadline, err)) < 0 ||
        (rc = read_types(obj, out, err)) < 0)
        return rc;

    /* Temporal's EnsureDefaultRetryPolicy: zero means unset. */
    if (initial == 0)
        initial = 1000;
    if (coef == 0)
        coef = 2.0;
    if (maximum == 0)
        maximum = initial > INT64_MAX / 100 ? INT64_MAX : initial * 100;

    /* Temporal's ValidateRetryPolicy, in its order. maximum_attempts == 1
     * is accepted at once: no retry will ever be computed. */
    if (attempts != 1) {
        if (initial < 0)
            return rb_err_set(err, RB_EINVAL, "initial_interval: cannot be negative, got '%s'",
                              rb_duration_format(initial, a, sizeof a));
        if (coef < 1)
            return rb_err_set(err, RB_EINVAL, "backoff_coefficient: cannot be less than 1, got '%g'",
                              coef);
        if (maximum < 0)
            return rb_err_set(err, RB_EINVAL, "maximum_interval: cannot be negative, got '%s'",
                              rb_duration_format(maximum, a, sizeof a));
        if (maximum > 0 && maximum < initial)
            return rb_err_set(err, RB_EINVAL,
                              "maximum_interval: cannot be less than initial_interval, got '%s' < '%s'",
                              rb_duration_format(maximum, a, sizeof a),
                              rb_duration_format(initial, b, sizeof b));
        if (attempts < 0)
            return rb_err_set(err, RB_EINVAL, "maximum_attempts: cannot be negative, got '%lld'",
                              (long long)attempts);
    }
    if (deadline < 0)
        return rb_err_set(err, RB_EINVAL,
                          "schedule_to_close_timeout: cannot be negative, got '%s'",
                          rb_duration_format(deadline, a, sizeof a));

    /* With maximum_attempts 1 the intervals are never used; keep them sane so
     * the canonical policy stays valid whatever was written. */
    out->initial_ms = initial > 0 ? initial : 0;
    out->coefficient = coef >= 1 ? coef : 1.0;
    out->max_interval_ms = maximum >= out->initial_ms ? maximum : out->initial_ms;
    out->max_attempts = attempts;
    out->deadline_ms = deadline;
    out->retry_after_cap_ms = out->max_interval_ms;
    return 0;
}
