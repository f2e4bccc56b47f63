/* The canonical policy shown to people: as JSON (`policy check --json`, the
 * job page) and in words (`policy check`). */
#include "policy/policy.h"
#include "policy/duration.h"

#include "common/buf.h"

static const char *backoff_name(rb_backoff_kind k)
{
    switch (k) {
    case RB_BACKOFF_EXPONENTIAL: return "exponential";
    case RB_BACKOFF_LINEAR: return "linear";
    case RB_BACKOFF_FIXED: return "fixed";
    case RB_BACKOFF_LIST: return "list";
    case RB_BACKOFF_SIDEKIQ: return "sidekiq";
    }
    return "?";
}

static json_t *str_array(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *rb_policy_to_json(const rb_policy *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "dialect", json_string(rb_dialect_name(p->dialect)));
    json_object_set_new(o, "backoff", json_string(backoff_name(p->backoff)));
    if (p->backoff == RB_BACKOFF_LIST) {
        json_t *d = json_array();
        for (size_t i = 0; i < p->n_delays; i++)
            json_array_append_new(d, json_integer(p->delays_ms[i]));
        json_object_set_new(o, "delays_ms", d);
    } else if (p->backoff != RB_BACKOFF_SIDEKIQ) {
        json_object_set_new(o, "initial_ms", json_integer(p->initial_ms));
    }
    if (p->backoff == RB_BACKOFF_EXPONENTIAL)
        json_object_set_new(o, "coefficient", json_real(p->coefficient));
    json_object_set_new(o, "max_interval_ms",
                        p->max_interval_ms > 0 ? json_integer(p->max_interval_ms) : json_null());
    json_object_set_new(o, "max_attempts", json_integer(p->max_attempts));
    json_object_set_new(o, "retryable", json_boolean(p->retryable));
    json_object_set_new(o, "first_always_eligible", json_boolean(p->first_always_eligible));
    json_object_set_new(o, "on_exhaust",
                        json_string(p->on_exhaust == RB_ON_EXHAUST_DISCARD ? "discard" : "dead"));
    json_object_set_new(o, "jitter", json_string(p->jitter == RB_JITTER_TASKER ? "tasker" : "none"));
    if (p->jitter != RB_JITTER_NONE)
        json_object_set_new(o, "jitter_pct", json_real(p->jitter_pct));
    json_object_set_new(o, "retry_after_cap_ms", p->retry_after_cap_ms > 0
                                                     ? json_integer(p->retry_after_cap_ms)
                                                     : json_null());
    json_object_set_new(o, "non_retryable", str_array(p->non_retryable, p->n_non_retryable));
    json_object_set_new(o, "deadline_ms",
                        p->deadline_ms > 0 ? json_integer(p->deadline_ms) : json_null());
    json_object_set_new(o, "catch", p->catch_jobtype ? json_string(p->catch_jobtype) : json_null());
    json_object_set_new(o, "warnings", str_array(p->warnings, p->n_warnings));
    return o;
}

static const char *dur(int64_t ms, char *b)
{
    return rb_duration_format(ms, b, RB_DURATION_STRLEN);
}

static void describe_backoff(const rb_policy *p, rb_buf *out)
{
    char a[RB_DURATION_STRLEN], b[RB_DURATION_STRLEN];
    rb_buf_adds(out, "backoff:     ");
    switch (p->backoff) {
    case RB_BACKOFF_EXPONENTIAL:
        rb_buf_printf(out, "exponential: %s before the first retry, x%g each retry",
                      dur(p->initial_ms, a), p->coefficient);
        break;
    case RB_BACKOFF_LINEAR:
        rb_buf_printf(out, "linear: %s x the retry number", dur(p->initial_ms, a));
        break;
    case RB_BACKOFF_FIXED:
        rb_buf_printf(out, "fixed: %s before every retry", dur(p->initial_ms, a));
        break;
    case RB_BACKOFF_LIST:
        rb_buf_adds(out, "list:");
        for (size_t i = 0; i < p->n_delays; i++)
            rb_buf_printf(out, "%s %s", i ? "," : "", dur(p->delays_ms[i], a));
        rb_buf_adds(out, ", then the last again");
        break;
    case RB_BACKOFF_SIDEKIQ:
        rb_buf_adds(out, "sidekiq: c^4 + 15 + rand(0..29) x (c+1) seconds, c = retries so far");
        break;
    }
    if (p->max_interval_ms > 0)
        rb_buf_printf(out, ", capped at %s", dur(p->max_interval_ms, b));
    rb_buf_addc(out, '\n');
}

void rb_policy_describe(const rb_policy *p, rb_buf *out)
{
    char a[RB_DURATION_STRLEN];
    rb_buf_printf(out, "dialect:     %s\n", rb_dialect_name(p->dialect));
    rb_buf_adds(out, "executions:  ");
    if (!p->retryable) /* what happens, not what max_attempts says */
        rb_buf_adds(out, "1 (the first execution only: retryable is false)\n");
    else if (p->max_attempts == 0)
        rb_buf_adds(out, "unlimited (no maximum attempts)\n");
    else if (p->max_attempts == 1)
        rb_buf_adds(out, "1 (the first execution only, no retries)\n");
    else
        rb_buf_printf(out, "at most %lld (the first + %lld retries)\n", (long long)p->max_attempts,
                      (long long)(p->max_attempts - 1));
    if (!p->retryable)
        rb_buf_adds(out, "retryable:   no: a failure never retries\n");
    if (p->first_always_eligible)
        rb_buf_adds(out, "first run:   always eligible, whatever retryable and max_attempts say\n");
    if (p->max_attempts != 1 && p->retryable)
        describe_backoff(p, out);
    if (p->jitter == RB_JITTER_TASKER)
        rb_buf_printf(out, "jitter:      +/- up to %g%% of the delay, in whole seconds\n",
                      p->jitter_pct * 100);
    else
        rb_buf_adds(out, "jitter:      none\n");
    rb_buf_adds(out, "retry-after: a server-requested delay replaces the computed one, no jitter");
    if (p->retry_after_cap_ms > 0)
        rb_buf_printf(out, ", capped at %s", dur(p->retry_after_cap_ms, a));
    rb_buf_addc(out, '\n');
    rb_buf_adds(out, "never retry: ");
    if (!p->n_non_retryable)
        rb_buf_adds(out, "failures flagged non-retryable by the worker\n");
    else {
        rb_buf_adds(out, "failures flagged non-retryable, and error types");
        for (size_t i = 0; i < p->n_non_retryable; i++)
            rb_buf_printf(out, "%s '%s'", i ? "," : "", p->non_retryable[i]);
        rb_buf_addc(out, '\n');
    }
    if (p->deadline_ms > 0)
        rb_buf_printf(out, "deadline:    %s after the first enqueue (no retry may start later)\n",
                      dur(p->deadline_ms, a));
    else
        rb_buf_adds(out, "deadline:    none\n");
    rb_buf_adds(out, "at the end:  ");
    if (p->on_exhaust == RB_ON_EXHAUST_DISCARD)
        rb_buf_adds(out, "discarded (not kept in the dead set)\n");
    else if (p->catch_jobtype)
        rb_buf_printf(out, "a catch job '%s' runs with the job's type, arguments and last error; "
                           "the job itself ends dead\n",
                      p->catch_jobtype);
    else
        rb_buf_adds(out, "dead\n");
    for (size_t i = 0; i < p->n_warnings; i++)
        rb_buf_printf(out, "warning:     %s\n", p->warnings[i]);
}
