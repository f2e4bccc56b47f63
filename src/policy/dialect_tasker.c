/* tasker-core (seeds 000 and 001, semantics.md §1): a step's retry fields
 * plus the system [backoff] settings, which the SPEC object may override
 * under their TOML names. */
#include "policy/dialect.h"
#include "policy/duration.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

const char *const rb_dialect_tasker_keys[] = {
    "max_attempts",        "retryable",          "backoff",
    "backoff_base_ms",     "max_backoff_ms",     "default_backoff_seconds",
    "max_backoff_seconds", "backoff_multiplier", "jitter_enabled",
    "jitter_max_percentage", NULL,
};

/* Seconds (a JSON number) to whole milliseconds; false when not representable. */
static bool seconds_to_ms(double s, int64_t *ms)
{
    double x = s * 1000.0;
    if (!isfinite(x) || x < 0 || x > (double)RB_POLICY_DELAY_LIMIT_MS)
        return false;
    double r = nearbyint(x);
    if (fabs(x - r) > 1e-6)
        return false;
    *ms = (int64_t)r;
    return true;
}

/* The [backoff] keys present in obj, over the system settings in sys. */
static int read_system(const json_t *obj, rb_backoff_config *sys, rb_err *err)
{
    char b[64];
    int rc;
    const json_t *list = json_object_get(obj, "default_backoff_seconds");
    if (list) {
        if (!json_is_array(list) || json_array_size(list) == 0)
            return rb_err_set(err, RB_EINVAL,
                              "default_backoff_seconds: must be a non-empty array of seconds, got '%s'",
                              rb_json_brief(list, b, sizeof b));
        size_t n = json_array_size(list);
        int64_t *ms = rb_xcalloc(n, sizeof *ms);
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(list, i);
            if (!json_is_number(e) || !seconds_to_ms(json_number_value(e), &ms[i])) {
                free(ms);
                return rb_err_set(err, RB_EINVAL,
                                  "default_backoff_seconds[%zu]: must be a non-negative number of "
                                  "seconds (whole milliseconds), got '%s'",
                                  i, rb_json_brief(e, b, sizeof b));
            }
        }
        free(sys->default_backoff_ms);
        sys->default_backoff_ms = ms;
        sys->n_default_backoff = n;
    }
    double secs;
    if ((rc = rb_json_get_number(obj, "max_backoff_seconds", &secs, err)) < 0)
        return rc;
    if (rc == 0 && (!seconds_to_ms(secs, &sys->max_backoff_ms) || sys->max_backoff_ms <= 0))
        return rb_err_set(err, RB_EINVAL, "max_backoff_seconds: must be positive, got '%g'", secs);
    if ((rc = rb_json_get_number(obj, "backoff_multiplier", &sys->backoff_multiplier, err)) < 0)
        return rc;
    if (rc == 0 && !(sys->backoff_multiplier >= 1 && isfinite(sys->backoff_multiplier)))
        return rb_err_set(err, RB_EINVAL, "backoff_multiplier: cannot be less than 1, got '%g'",
                          sys->backoff_multiplier);
    if ((rc = rb_json_get_bool(obj, "jitter_enabled", &sys->jitter_enabled, err)) < 0)
        return rc;
    if ((rc = rb_json_get_number(obj, "jitter_max_percentage", &sys->jitter_max_percentage,
                                 err)) < 0)
        return rc;
    if (rc == 0 && !(sys->jitter_max_percentage >= 0 && sys->jitter_max_percentage <= 1))
        return rb_err_set(err, RB_EINVAL,
                          "jitter_max_percentage: must be between 0 and 1, got '%g'",
                          sys->jitter_max_percentage);
    return 0;
}

int rb_dialect_parse_tasker(const json_t *obj, const rb_backoff_config *sys, rb_policy *out,
                            rb_err *err)
{
    int64_t max_attempts = 3, base = 0, job_max = 0;
    bool retryable = true;
    rb_backoff_kind kind = RB_BACKOFF_EXPONENTIAL;
    char b[64];
    int rc;

    if ((rc = rb_json_get_int(obj, "max_attempts", &max_attempts, err)) < 0)
        return rc;
    if (max_attempts < 0)
        return rb_err_set(err, RB_EINVAL, "max_attempts: cannot be negative, got '%lld'",
                          (long long)max_attempts);
    if ((rc = rb_json_get_bool(obj, "retryable", &retryable, err)) < 0)
        return rc;
    const json_t *bk = json_object_get(obj, "backoff");
    if (bk) {
        const char *s = json_string_value(bk);
        if (s && !strcmp(s, "exponential"))
            kind = RB_BACKOFF_EXPONENTIAL;
        else if (s && !strcmp(s, "linear"))
            kind = RB_BACKOFF_LINEAR;
        else if (s && !strcmp(s, "fixed"))
            kind = RB_BACKOFF_FIXED;
        else
            return rb_err_set(err, RB_EINVAL,
                              "backoff: must be \"exponential\", \"linear\" or \"fixed\", got '%s'",
                              rb_json_brief(bk, b, sizeof b));
    }
    if ((rc = rb_json_get_int(obj, "backoff_base_ms", &base, err)) < 0)
        return rc;
    bool has_base = rc == 0;
    if (has_base && base <= 0)
        return rb_err_set(err, RB_EINVAL, "backoff_base_ms: must be positive, got '%lld'",
                          (long long)base);
    if ((rc = rb_json_get_int(obj, "max_backoff_ms", &job_max, err)) < 0)
        return rc;
    if (rc == 0 && job_max <= 0)
        return rb_err_set(err, RB_EINVAL, "max_backoff_ms: must be positive, got '%lld'",
                          (long long)job_max);

    rb_backoff_config cfg;
    if (sys)
        rb_backoff_config_copy(&cfg, sys);
    else
        rb_backoff_config_init(&cfg);
    if ((rc = read_system(obj, &cfg, err)) < 0) {
        rb_backoff_config_release(&cfg);
        return rc;
    }

    rb_policy_blank(out, RB_DIALECT_TASKER);
    out->first_always_eligible = true;
    out->retryable = retryable;
    out->coefficient = cfg.backoff_multiplier;
    out->max_interval_ms = cfg.max_backoff_ms;
    if (job_max > 0 && (out->max_interval_ms <= 0 || job_max < out->max_interval_ms))
        out->max_interval_ms = job_max;
    if (has_base) {
        out->backoff = kind;
        out->initial_ms = base;
    } else {
        out->backoff = RB_BACKOFF_LIST;
        out->n_delays = cfg.n_default_backoff;
        out->delays_ms = cfg.default_backoff_ms; /* ownership moves */
        cfg.default_backoff_ms = NULL;
        cfg.n_default_backoff = 0;
        out->initial_ms = out->n_delays ? out->delays_ms[0] : 0;
    }
    out->jitter = cfg.jitter_enabled && cfg.jitter_max_percentage > 0 ? RB_JITTER_TASKER
                                                                      : RB_JITTER_NONE;
    out->jitter_pct = cfg.jitter_enabled ? cfg.jitter_max_percentage : 0;
    out->retry_after_cap_ms = cfg.max_backoff_ms;
    rb_backoff_config_release(&cfg);

    /* max_attempts 0: tasker-core's SQL lets the first execution run and
     * nothing after it, which is max_attempts 1. */
    if (max_attempts == 0) {
        out->max_attempts = 1;
        rb_policy_warn(out, "max_attempts 0 allows the first execution and no retries "
                            "(tasker-core's rule); write max_attempts 1 to say so");
    } else {
        out->max_attempts = max_attempts;
    }
    if (!retryable && max_attempts > 1)
        rb_policy_warn(out, "retryable false with max_attempts %lld behaves as max_attempts 1: "
                            "only the first execution runs",
                       (long long)max_attempts);
    return 0;
}
