/* The decision function: what follows a failed execution. Pure: time comes in
 * as arguments, randomness from the caller's rb_rng. Also tasker-core's
 * retry_eligible predicate. */
#include "policy/policy.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include "common/timeutil.h"

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* The cap computed delays respect: the policy's maximum, never above the limit. */
static int64_t delay_cap(const rb_policy *p)
{
    if (p->max_interval_ms > 0 && p->max_interval_ms < RB_POLICY_DELAY_LIMIT_MS)
        return p->max_interval_ms;
    return RB_POLICY_DELAY_LIMIT_MS;
}

/* x (ms, possibly huge or non-finite) clamped to [0, cap], rounded down. */
static int64_t clamp_ms(double x, int64_t cap)
{
    if (!(x > 0)) /* also NaN */
        return 0;
    if (x >= (double)cap)
        return cap;
    return (int64_t)floor(x);
}

/* The schedule's delay before retry k (k = the attempt that failed, >= 1),
 * jitter excluded. Saturates at the cap for any k. */
static int64_t computed_delay(const rb_policy *p, int64_t k, rb_rng *rng)
{
    int64_t cap = delay_cap(p);
    switch (p->backoff) {
    case RB_BACKOFF_EXPONENTIAL: {
        if (p->initial_ms <= 0)
            return 0;
        if (p->coefficient <= 1.0)
            return p->initial_ms < cap ? p->initial_ms : cap;
        /* coefficient^(k-1) overflows double long before k reaches 2^63; pow
         * returns inf then, which clamps to the cap. */
        double x = (double)p->initial_ms * pow(p->coefficient, (double)(k - 1));
        return clamp_ms(x, cap);
    }
    case RB_BACKOFF_LINEAR:
        return clamp_ms((double)p->initial_ms * (double)k, cap);
    case RB_BACKOFF_FIXED:
        return clamp_ms((double)p->initial_ms, cap);
    case RB_BACKOFF_LIST: {
        if (!p->n_delays)
            return 0;
        uint64_t i = (uint64_t)k - 1 < p->n_delays ? (uint64_t)k - 1 : p->n_delays - 1;
        return clamp_ms((double)p->delays_ms[i], cap);
    }
    case RB_BACKOFF_SIDEKIQ: {
        /* c^4 + 15 + rand(0..29) * (c + 1) seconds, c = retry count so far. */
        double c = (double)(k - 1);
        int64_t r = rb_rng_range(rng, 0, 29);
        double s = c * c * c * c + 15.0 + (double)r * (c + 1.0);
        return clamp_ms(s * 1000.0, cap);
    }
    }
    return 0;
}

/* tasker-core's jitter: r = floor(delay_s * pct) whole seconds; if r > 0 the
 * delay moves by a uniform integer number of seconds in [-r, r], kept in
 * [0, cap]. */
static int64_t apply_jitter(const rb_policy *p, int64_t delay, rb_rng *rng)
{
    if (p->jitter != RB_JITTER_TASKER || p->jitter_pct <= 0)
        return delay;
    int64_t r = (int64_t)floor((double)delay / 1000.0 * p->jitter_pct);
    if (r <= 0)
        return delay;
    int64_t d = delay + rb_rng_range(rng, -r, r) * 1000;
    int64_t cap = delay_cap(p);
    return d < 0 ? 0 : d > cap ? cap : d;
}

/* A Retry-After value as a delay from now: whole seconds ("120") or an
 * HTTP-date not in the past. Returns false when it should be ignored
 * (missing, empty, negative, malformed, past). */
static bool parse_retry_after(const char *s, int64_t now_ms, int64_t *delay)
{
    if (!s)
        return false;
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (!n)
        return false;
    size_t digits = strspn(s, "0123456789");
    if (digits == n) {
        int64_t v = 0;
        for (size_t i = 0; i < n; i++) {
            if (v > RB_POLICY_DELAY_LIMIT_MS / 1000) {
                v = RB_POLICY_DELAY_LIMIT_MS / 1000 + 1;
                break;
            }
            v = v * 10 + (s[i] - '0');
        }
        *delay = v > RB_POLICY_DELAY_LIMIT_MS / 1000 ? RB_POLICY_DELAY_LIMIT_MS : v * 1000;
        return true;
    }
    char tmp[64];
    if (n >= sizeof tmp)
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    int64_t at;
    if (rb_time_parse_http_date(tmp, &at) != 0)
        return false;
    /* HTTP-dates have whole seconds: a date in the current second is "now". */
    if (at < now_ms - now_ms % 1000)
        return false;
    *delay = at > now_ms ? at - now_ms : 0;
    return true;
}

static bool listed_non_retryable(const rb_policy *p, const char *errtype)
{
    if (!errtype)
        return false;
    for (size_t i = 0; i < p->n_non_retryable; i++)
        if (!strcmp(p->non_retryable[i], errtype))
            return true;
    return false;
}

/* Ends the job: discard (Faktory retry 0) beats catch beats dead. */
static void stop(const rb_policy *p, rb_dead_reason why, rb_decision *out)
{
    out->reason = why;
    if (p->on_exhaust == RB_ON_EXHAUST_DISCARD)
        out->outcome = RB_OUTCOME_DISCARD;
    else if (p->catch_jobtype)
        out->outcome = RB_OUTCOME_CATCH;
    else
        out->outcome = RB_OUTCOME_DEAD;
}

void rb_policy_decide(const rb_policy *p, int64_t attempt, const rb_failure *f, int64_t now_ms,
                      int64_t first_ms, rb_rng *rng, rb_decision *out)
{
    static const rb_failure none = {0};
    if (!f)
        f = &none;
    if (attempt < 1)
        attempt = 1;
    memset(out, 0, sizeof *out);
    out->source = RB_SOURCE_COMPUTED;

    /* 1. what the failure says about itself, 2. the policy's list, 3. the
     * policy's retryable flag, 4. attempts: semantics.md's decision order. */
    if (f->non_retryable) {
        stop(p, RB_REASON_NON_RETRYABLE_FLAG, out);
        return;
    }
    if (listed_non_retryable(p, f->errtype)) {
        stop(p, RB_REASON_NON_RETRYABLE_TYPE, out);
        return;
    }
    if (!p->retryable) {
        stop(p, RB_REASON_NOT_RETRYABLE, out);
        return;
    }
    if (p->max_attempts > 0 && attempt >= p->max_attempts) {
        stop(p, RB_REASON_EXHAUSTED, out);
        return;
    }

    /* 5. the delay: override, else server-requested, else computed. The rng
     * is drawn for the computed delay in every case, so a schedule's random
     * sequence does not depend on which source won. */
    int64_t delay = apply_jitter(p, computed_delay(p, attempt, rng), rng);
    int64_t requested;
    if (f->next_retry_delay_ms > 0) {
        delay = f->next_retry_delay_ms < RB_POLICY_DELAY_LIMIT_MS ? f->next_retry_delay_ms
                                                                  : RB_POLICY_DELAY_LIMIT_MS;
        out->source = RB_SOURCE_OVERRIDE;
    } else if (parse_retry_after(f->retry_after, now_ms, &requested)) {
        int64_t cap = p->retry_after_cap_ms > 0 && p->retry_after_cap_ms < RB_POLICY_DELAY_LIMIT_MS
                          ? p->retry_after_cap_ms
                          : RB_POLICY_DELAY_LIMIT_MS;
        delay = requested < cap ? requested : cap;
        out->source = RB_SOURCE_SERVER_REQUESTED;
    }

    /* 6. the overall deadline: equal is still allowed. */
    if (p->deadline_ms > 0 && sat_add(now_ms, delay) > sat_add(first_ms, p->deadline_ms)) {
        stop(p, RB_REASON_DEADLINE, out);
        return;
    }

    out->outcome = RB_OUTCOME_RETRY;
    out->delay_ms = delay;
    out->retry_at_ms = sat_add(now_ms, delay);
}

bool rb_tasker_retry_eligible(int64_t attempts, bool retryable, int64_t max_attempts)
{
    return attempts == 0 || (retryable && attempts < max_attempts);
}
