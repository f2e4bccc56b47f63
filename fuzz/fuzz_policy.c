/* Fuzzes the retry-policy engine (src/policy/policy.h): rb_policy_parse_spec
 * on the text (JSON object of any dialect, FTL directive, faktory:N), then
 * rb_policy_decide on what parsed, with attempts, clocks, overrides and
 * Retry-After values taken from the input. Properties: a parsed policy is
 * valid; every decision keeps delay in [0, limit], retry_at = now + delay,
 * computed delays within the policy's cap, overrides and requested delays as
 * the rules say, stops with a reason; decisions are reproducible from the rng
 * seed and survive rb_policy_copy, the client's retry bound and the catch
 * policy.
 *
 * Input: 42 bytes of parameters, then the SPEC, optionally followed by a
 * newline and a Retry-After value. */
#include <jansson.h>

#include "common/buf.h"
#include "fuzz.h"
#include "policy/policy.h"

typedef struct params {
    int64_t attempt, now, first, override_ms, client_retry;
    uint64_t seed;
    unsigned flags;
    const char *retry_after;
} params;

static void check_valid(const rb_policy *p)
{
    FUZZ_CHECK(p->initial_ms >= 0);
    FUZZ_CHECK(p->max_interval_ms >= 0);
    FUZZ_CHECK(p->max_attempts >= 0);
    FUZZ_CHECK(p->deadline_ms >= 0);
    FUZZ_CHECK(p->retry_after_cap_ms >= 0);
    FUZZ_CHECK(p->jitter_pct >= 0);
    if (p->backoff == RB_BACKOFF_EXPONENTIAL)
        FUZZ_CHECK(p->coefficient >= 1.0);
    if (p->backoff == RB_BACKOFF_LIST)
        FUZZ_CHECK(p->n_delays > 0 && p->delays_ms);
    for (size_t i = 0; i < p->n_delays; i++)
        FUZZ_CHECK(p->delays_ms[i] >= 0);
    for (size_t i = 0; i < p->n_non_retryable; i++)
        FUZZ_CHECK(p->non_retryable[i] != NULL);
}

static void check_decision(const rb_policy *p, const params *in, const rb_failure *f,
                           const rb_decision *d)
{
    if (d->outcome != RB_OUTCOME_RETRY) {
        FUZZ_CHECK(d->reason != RB_REASON_NONE);
        FUZZ_CHECK((d->outcome == RB_OUTCOME_DISCARD) == (p->on_exhaust == RB_ON_EXHAUST_DISCARD));
        if (d->outcome == RB_OUTCOME_CATCH)
            FUZZ_CHECK(p->catch_jobtype != NULL);
        return;
    }
    FUZZ_CHECK(!f->non_retryable);
    FUZZ_CHECK(p->retryable);
    FUZZ_CHECK(p->max_attempts == 0 || in->attempt < p->max_attempts);
    FUZZ_CHECK(d->delay_ms >= 0);
    FUZZ_CHECK(d->delay_ms <= RB_POLICY_DELAY_LIMIT_MS);
    FUZZ_CHECK(d->retry_at_ms == in->now + d->delay_ms); /* now < 2^62: no saturation */
    if (p->deadline_ms > 0)
        FUZZ_CHECK(d->retry_at_ms <= in->first + p->deadline_ms);
    switch (d->source) {
    case RB_SOURCE_COMPUTED:
        FUZZ_CHECK(f->next_retry_delay_ms <= 0);
        if (p->max_interval_ms > 0)
            FUZZ_CHECK(d->delay_ms <= p->max_interval_ms);
        break;
    case RB_SOURCE_OVERRIDE:
        FUZZ_CHECK(f->next_retry_delay_ms > 0);
        FUZZ_CHECK(d->delay_ms == (f->next_retry_delay_ms < RB_POLICY_DELAY_LIMIT_MS
                                       ? f->next_retry_delay_ms
                                       : RB_POLICY_DELAY_LIMIT_MS));
        break;
    case RB_SOURCE_SERVER_REQUESTED:
        FUZZ_CHECK(f->next_retry_delay_ms <= 0 && f->retry_after);
        if (p->retry_after_cap_ms > 0)
            FUZZ_CHECK(d->delay_ms <= p->retry_after_cap_ms);
        break;
    default:
        FUZZ_CHECK(!"unknown delay source");
    }
}

static void decide_twice(const rb_policy *p, const params *in)
{
    rb_failure f = {0};
    f.errtype = (in->flags & 1) && p->n_non_retryable ? p->non_retryable[0] : "SomeError";
    f.message = "boom";
    f.non_retryable = (in->flags & 2) != 0;
    f.retry_after = (in->flags & 4) ? in->retry_after : NULL;
    f.next_retry_delay_ms = (in->flags & 8) ? in->override_ms : 0;
    rb_rng r1, r2;
    rb_rng_seed(&r1, in->seed);
    rb_rng_seed(&r2, in->seed);
    rb_decision d1, d2;
    rb_policy_decide(p, in->attempt, &f, in->now, in->first, &r1, &d1);
    check_decision(p, in, &f, &d1);
    rb_policy copy;
    rb_policy_copy(&copy, p);
    rb_policy_decide(&copy, in->attempt, &f, in->now, in->first, &r2, &d2);
    FUZZ_CHECK(memcmp(&d1, &d2, sizeof d1) == 0);
    rb_policy_release(&copy);
}

static void exercise(const rb_policy *p, const params *in)
{
    check_valid(p);
    decide_twice(p, in);

    json_t *j = rb_policy_to_json(p);
    FUZZ_CHECK(json_is_object(j));
    json_decref(j);
    rb_buf b;
    rb_buf_init(&b);
    rb_policy_describe(p, &b);
    rb_buf_release(&b);

    rb_policy bounded;
    rb_policy_copy(&bounded, p);
    rb_policy_apply_client_retry(&bounded, in->client_retry);
    check_valid(&bounded);
    decide_twice(&bounded, in);
    rb_policy_release(&bounded);

    rb_policy c;
    rb_policy_for_catch(p, &c);
    check_valid(&c);
    FUZZ_CHECK(c.catch_jobtype == NULL && c.deadline_ms == 0);
    decide_twice(&c, in);
    rb_policy_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    params in;
    in.attempt = (int64_t)fuzz_u64(&r, 8);
    in.now = (int64_t)(fuzz_u64(&r, 8) & ((UINT64_C(1) << 62) - 1));
    in.first = in.now - (int64_t)(fuzz_u64(&r, 8) & ((UINT64_C(1) << 40) - 1));
    in.override_ms = (int64_t)fuzz_u64(&r, 8);
    in.seed = fuzz_u64(&r, 8);
    in.client_retry = (int64_t)(int8_t)fuzz_u64(&r, 1);
    in.flags = (unsigned)fuzz_u64(&r, 1);
    char *text = fuzz_cstr(r.p, r.n);
    char *nl = strchr(text, '\n');
    in.retry_after = "";
    if (nl) {
        *nl = '\0';
        in.retry_after = nl + 1;
    }

    rb_policy p;
    memset(&p, 0xa5, sizeof p); /* untouched on failure: nothing to release */
    rb_err err = {0};
    int rc = rb_policy_parse_spec(text, NULL, &p, &err);
    if (rc == 0) {
        exercise(&p, &in);
        rb_policy_release(&p);
    } else {
        FUZZ_CHECK(rc < 0 && err.msg[0]);
    }

    /* The same text as a JSON value (object, SPEC string or retry count). */
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (v) {
        rc = rb_policy_parse_json(v, NULL, &p, &err);
        if (rc == 0) {
            exercise(&p, &in);
            rb_policy_release(&p);
        }
        json_decref(v);
    }
    free(text);
    return 0;
}
