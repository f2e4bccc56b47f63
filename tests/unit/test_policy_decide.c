/* Unit tests for the decision function, tasker-core's predicates, jitter,
 * saturation, Retry-After and the simulation (semantics.md §1-6, §8). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "policy/policy.h"
#include "policy/simulate.h"

#define S(x) ((int64_t)(x) * 1000)
static const int64_t T0 = INT64_C(1700000000000); /* an arbitrary "now" */

static rb_policy spec(const char *s)
{
    rb_policy p;
    rb_err err = {0};
    cr_assert_eq(rb_policy_parse_spec(s, NULL, &p, &err), 0, "%s: %s", s, err.msg);
    return p;
}

static rb_decision decide(const rb_policy *p, int64_t attempt, const rb_failure *f)
{
    rb_rng rng;
    rb_rng_seed(&rng, 1);
    rb_decision d;
    rb_policy_decide(p, attempt, f, T0, T0, &rng, &d);
    return d;
}

static void expect_retry(const rb_policy *p, int64_t attempt, int64_t delay)
{
    rb_decision d = decide(p, attempt, NULL);
    cr_assert_eq(d.outcome, RB_OUTCOME_RETRY, "attempt %lld: %s", (long long)attempt,
                 rb_outcome_name(d.outcome));
    cr_assert_eq(d.delay_ms, delay, "attempt %lld: %lld != %lld", (long long)attempt,
                 (long long)d.delay_ms, (long long)delay);
    cr_assert_eq(d.retry_at_ms, T0 + delay);
    cr_assert_eq(d.source, RB_SOURCE_COMPUTED);
}

static void expect_end(const rb_policy *p, int64_t attempt, const rb_failure *f, rb_outcome o,
                       rb_dead_reason r)
{
    rb_decision d = decide(p, attempt, f);
    cr_assert_eq(d.outcome, o, "attempt %lld: %s", (long long)attempt, rb_outcome_name(d.outcome));
    cr_assert_eq(d.reason, r, "attempt %lld: %s", (long long)attempt, rb_reason_name(d.reason));
}

/* ---- tasker-core (§1) ---- */

Test(tasker, retry_eligible_boundary_table)
{
    /* semantics.md §1's table, then seed 000's two behaviour tables */
    const struct {
        int64_t attempts;
        bool retryable;
        int64_t max;
        bool eligible;
    } rows[] = {
        {0, false, 0, true}, {1, true, 0, false}, {1, true, 1, false}, {1, true, 3, true},
        {2, true, 3, true},  {3, true, 3, false}, {1, false, 3, false},
        {0, false, 1, true}, {1, false, 1, false},
        {0, true, 3, true},  {4, true, 3, false}, {0, true, 0, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_assert_eq(rb_tasker_retry_eligible(rows[i].attempts, rows[i].retryable, rows[i].max),
                     rows[i].eligible, "row %zu", i);
}

Test(tasker, decisions_match_eligibility)
{
    /* after attempt n fails, a retry happens iff retry_eligible(n, ...) */
    const char *specs[] = {"{\"max_attempts\": 0}", "{\"max_attempts\": 1}", "{\"max_attempts\": 3}",
                           "{\"max_attempts\": 3, \"retryable\": false}", "{\"max_attempts\": 7}"};
    const int64_t raw_max[] = {0, 1, 3, 3, 7};
    const bool raw_retryable[] = {true, true, true, false, true};
    for (size_t i = 0; i < 5; i++) {
        rb_policy p = spec(specs[i]);
        for (int64_t n = 1; n <= 9; n++) {
            rb_decision d = decide(&p, n, NULL);
            cr_assert_eq(d.outcome == RB_OUTCOME_RETRY,
                         rb_tasker_retry_eligible(n, raw_retryable[i], raw_max[i]), "%s n=%lld",
                         specs[i], (long long)n);
            if (d.outcome != RB_OUTCOME_RETRY)
                cr_assert_eq(d.reason, raw_retryable[i] ? RB_REASON_EXHAUSTED : RB_REASON_NOT_RETRYABLE);
        }
        rb_policy_release(&p);
    }
}

Test(tasker, list_delays_reuse_last_and_cap)
{
    rb_policy p = spec("{\"max_attempts\": 20, \"jitter_enabled\": false}");
    const int64_t want[] = {1, 2, 4, 8, 16, 32, 32, 32};
    for (int64_t k = 1; k <= 8; k++)
        expect_retry(&p, k, S(want[k - 1]));
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 20, \"jitter_enabled\": false, \"default_backoff_seconds\": "
             "[1, 90], \"max_backoff_ms\": 45000}");
    expect_retry(&p, 1, S(1));
    expect_retry(&p, 2, S(45));
    expect_retry(&p, 19, S(45));
    rb_policy_release(&p);
}

Test(tasker, job_base_backoffs)
{
    rb_policy p = spec("{\"max_attempts\": 0, \"backoff_base_ms\": 1000, \"jitter_enabled\": false}");
    cr_assert_eq(decide(&p, 1, NULL).outcome, RB_OUTCOME_DEAD); /* max_attempts 0 */
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 100, \"backoff_base_ms\": 1000, \"jitter_enabled\": false}");
    const int64_t exp[] = {1, 2, 4, 8, 16, 32, 60, 60};
    for (int64_t k = 1; k <= 8; k++)
        expect_retry(&p, k, S(exp[k - 1]));
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 100, \"backoff\": \"linear\", \"backoff_base_ms\": 1500, "
             "\"max_backoff_ms\": 10000, \"jitter_enabled\": false}");
    expect_retry(&p, 1, 1500);
    expect_retry(&p, 2, 3000);
    expect_retry(&p, 6, 9000);
    expect_retry(&p, 7, 10000);
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 100, \"backoff\": \"fixed\", \"backoff_base_ms\": 2500, "
             "\"jitter_enabled\": false}");
    expect_retry(&p, 1, 2500);
    expect_retry(&p, 50, 2500);
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 100, \"backoff_base_ms\": 1000, \"backoff_multiplier\": 3, "
             "\"jitter_enabled\": false}");
    expect_retry(&p, 3, S(9));
    rb_policy_release(&p);
}

Test(tasker, jitter_bounds_over_many_seeds)
{
    rb_policy p = spec("{\"max_attempts\": 0}"); /* pretend-unlimited below */
    p.max_attempts = 0;
    /* delay 32 s, 10%: r = 3 whole seconds; delay 60 s (the cap): r = 6, never above 60 s;
     * delay 1..8 s: r = 0, unchanged */
    const struct {
        int64_t attempt, base, lo, hi;
    } cases[] = {{6, 32, 29, 35}, {7, 32, 29, 35}, {1, 1, 1, 1}, {4, 8, 8, 8}, {5, 16, 15, 17}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool seen_lo = false, seen_hi = false;
        for (uint64_t seed = 0; seed < 4000; seed++) {
            rb_rng rng;
            rb_rng_seed(&rng, seed);
            rb_decision d;
            rb_policy_decide(&p, cases[c].attempt, NULL, T0, T0, &rng, &d);
            cr_assert_eq(d.outcome, RB_OUTCOME_RETRY);
            cr_assert_eq(d.delay_ms % 1000, 0, "jitter is whole seconds");
            cr_assert_geq(d.delay_ms, S(cases[c].lo));
            cr_assert_leq(d.delay_ms, S(cases[c].hi));
            seen_lo |= d.delay_ms == S(cases[c].lo);
            seen_hi |= d.delay_ms == S(cases[c].hi);
        }
        cr_assert(seen_lo && seen_hi, "case %zu: both ends reached", c);
    }
    rb_policy_release(&p);
    p = spec("{\"max_attempts\": 100, \"backoff_base_ms\": 100000, \"max_backoff_ms\": 300000, "
             "\"max_backoff_seconds\": 60}");
    for (uint64_t seed = 0; seed < 2000; seed++) {
        rb_rng rng;
        rb_rng_seed(&rng, seed);
        rb_decision d;
        rb_policy_decide(&p, 3, NULL, T0, T0, &rng, &d);
        cr_assert_geq(d.delay_ms, S(54));
        cr_assert_leq(d.delay_ms, S(60), "never above the cap");
    }
    rb_policy_release(&p);
}

/* ---- the tutorial (§2) ---- */

Test(tutorial, seed_table)
{
    /* MaxRetries 3: Attempts 1, 2 retry; 3 and 4 are permanent failures */
    rb_policy p = spec("{\"max_retries\": 3}");
    expect_retry(&p, 1, 0);
    expect_retry(&p, 2, 0);
    expect_end(&p, 3, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    expect_end(&p, 4, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
}

/* ---- Temporal (§3) ---- */

Test(temporal, default_delays)
{
    rb_policy p = spec("{\"dialect\": \"temporal\"}");
    const int64_t want[] = {1, 2, 4, 8, 16, 32, 64, 100, 100};
    for (int64_t n = 1; n <= 9; n++)
        expect_retry(&p, n, S(want[n - 1]));
    rb_policy_release(&p);
    /* the first retry waits exactly initial_interval, whatever the coefficient */
    p = spec("{\"initial_interval\": \"750ms\", \"backoff_coefficient\": 7}");
    expect_retry(&p, 1, 750);
    expect_retry(&p, 2, 5250);
    rb_policy_release(&p);
    p = spec("{\"initial_interval\": \"1s\", \"backoff_coefficient\": 1.5, \"maximum_interval\": \"5s\"}");
    expect_retry(&p, 2, 1500);
    expect_retry(&p, 3, 2250);
    expect_retry(&p, 4, 3375);
    expect_retry(&p, 5, 5000);
    rb_policy_release(&p);
}

Test(temporal, maximum_attempts)
{
    rb_policy p = spec("{\"maximum_attempts\": 3}");
    expect_retry(&p, 1, S(1));
    expect_retry(&p, 2, S(2));
    expect_end(&p, 3, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    expect_end(&p, 4, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("{\"maximum_attempts\": 1}");
    expect_end(&p, 1, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("{\"maximum_attempts\": 0}");
    expect_retry(&p, 1000000, S(100));
    rb_policy_release(&p);
}

Test(temporal, non_retryable)
{
    rb_policy p = spec("{\"non_retryable_error_types\": [\"Fatal\", \"NotFound\"]}");
    rb_failure f = {.errtype = "Fatal"};
    expect_end(&p, 1, &f, RB_OUTCOME_DEAD, RB_REASON_NON_RETRYABLE_TYPE);
    f.errtype = "NotFound";
    expect_end(&p, 5, &f, RB_OUTCOME_DEAD, RB_REASON_NON_RETRYABLE_TYPE);
    f.errtype = "fatal"; /* exact, case-sensitive */
    cr_assert_eq(decide(&p, 1, &f).outcome, RB_OUTCOME_RETRY);
    f.errtype = "Fatal2";
    cr_assert_eq(decide(&p, 1, &f).outcome, RB_OUTCOME_RETRY);
    f.errtype = NULL;
    cr_assert_eq(decide(&p, 1, &f).outcome, RB_OUTCOME_RETRY);
    f.non_retryable = true;
    expect_end(&p, 1, &f, RB_OUTCOME_DEAD, RB_REASON_NON_RETRYABLE_FLAG);
    f.errtype = "Fatal"; /* the flag is checked first */
    expect_end(&p, 1, &f, RB_OUTCOME_DEAD, RB_REASON_NON_RETRYABLE_FLAG);
    rb_policy_release(&p);
    /* a listed type beats exhaustion in the reason */
    p = spec("{\"maximum_attempts\": 2, \"non_retryable_error_types\": [\"X\"]}");
    rb_failure x = {.errtype = "X"};
    expect_end(&p, 2, &x, RB_OUTCOME_DEAD, RB_REASON_NON_RETRYABLE_TYPE);
    rb_policy_release(&p);
}

Test(temporal, deadline)
{
    rb_policy p = spec("{\"schedule_to_close_timeout\": \"10s\"}");
    rb_rng rng;
    rb_rng_seed(&rng, 1);
    rb_decision d;
    /* failure at first+8s, delay 2 s (attempt 2): lands exactly on the deadline: allowed */
    rb_policy_decide(&p, 2, NULL, T0 + S(8), T0, &rng, &d);
    cr_assert_eq(d.outcome, RB_OUTCOME_RETRY);
    cr_assert_eq(d.retry_at_ms, T0 + S(10));
    /* one millisecond later: past it */
    rb_policy_decide(&p, 2, NULL, T0 + S(8) + 1, T0, &rng, &d);
    cr_assert_eq(d.outcome, RB_OUTCOME_DEAD);
    cr_assert_eq(d.reason, RB_REASON_DEADLINE);
    /* an override that overshoots is stopped by the deadline too */
    rb_failure f = {.next_retry_delay_ms = S(11)};
    rb_policy_decide(&p, 1, &f, T0, T0, &rng, &d);
    cr_assert_eq(d.reason, RB_REASON_DEADLINE);
    rb_policy_release(&p);
}

Test(temporal, next_retry_delay_override)
{
    rb_policy p = spec("{\"maximum_interval\": \"10s\", \"maximum_attempts\": 3}");
    rb_failure f = {.next_retry_delay_ms = S(30)};
    rb_decision d = decide(&p, 1, &f);
    cr_assert_eq(d.outcome, RB_OUTCOME_RETRY);
    cr_assert_eq(d.delay_ms, S(30)); /* not capped by maximum_interval */
    cr_assert_eq(d.source, RB_SOURCE_OVERRIDE);
    expect_end(&p, 3, &f, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED); /* attempts still apply */
    f.next_retry_delay_ms = 0; /* <= 0: no override */
    cr_assert_eq(decide(&p, 1, &f).source, RB_SOURCE_COMPUTED);
    f.next_retry_delay_ms = -5;
    cr_assert_eq(decide(&p, 1, &f).delay_ms, S(1));
    /* the override beats a Retry-After */
    f.next_retry_delay_ms = 1234;
    f.retry_after = "5";
    d = decide(&p, 1, &f);
    cr_assert_eq(d.delay_ms, 1234);
    cr_assert_eq(d.source, RB_SOURCE_OVERRIDE);
    rb_policy_release(&p);
}

/* ---- FTL (§4) ---- */

Test(ftl, example_schedule)
{
    rb_policy p = spec("ftl:10 5s 1m");
    const int64_t want[] = {5, 10, 20, 40, 60, 60, 60, 60, 60, 60};
    for (int64_t n = 1; n <= 10; n++)
        expect_retry(&p, n, S(want[n - 1]));
    expect_end(&p, 11, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("ftl:0");
    expect_end(&p, 1, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
}

Test(ftl, catch_and_catch_policy)
{
    rb_policy p = spec("//ftl:retry 2 5s 1m catch notify");
    expect_retry(&p, 1, S(5));
    expect_retry(&p, 2, S(10));
    expect_end(&p, 3, NULL, RB_OUTCOME_CATCH, RB_REASON_EXHAUSTED);
    rb_failure f = {.non_retryable = true};
    expect_end(&p, 1, &f, RB_OUTCOME_CATCH, RB_REASON_NON_RETRYABLE_FLAG);

    rb_policy c;
    rb_policy_for_catch(&p, &c);
    cr_assert_null(c.catch_jobtype);
    cr_assert_eq(c.max_attempts, 0);
    cr_assert_eq(c.deadline_ms, 0);
    for (int64_t n = 1; n <= 100000; n *= 10)
        expect_retry(&c, n, S(60)); /* at the max backoff, indefinitely */
    rb_policy_release(&c);
    rb_policy_release(&p);

    p = spec("ftl:0 catch cleanup");
    rb_policy_for_catch(&p, &c);
    expect_retry(&c, 1, S(3600));
    rb_policy_release(&c);
    rb_policy_release(&p);
}

/* ---- Faktory (§5) ---- */

Test(faktory, sidekiq_bounds_over_many_seeds)
{
    rb_policy p = spec("faktory:25");
    for (int64_t c = 0; c <= 24; c++) {
        int64_t lo = c * c * c * c + 15, hi = lo + 29 * (c + 1);
        bool seen_lo = false, seen_hi = false;
        for (uint64_t seed = 0; seed < 1500; seed++) {
            rb_rng rng;
            rb_rng_seed(&rng, seed * 7919 + (uint64_t)c);
            rb_decision d;
            rb_policy_decide(&p, c + 1, NULL, T0, T0, &rng, &d);
            cr_assert_eq(d.outcome, RB_OUTCOME_RETRY);
            cr_assert_geq(d.delay_ms, S(lo), "c=%lld", (long long)c);
            cr_assert_leq(d.delay_ms, S(hi), "c=%lld", (long long)c);
            cr_assert_eq((d.delay_ms / 1000 - lo) % (c + 1), 0, "rand x (c+1)");
            seen_lo |= d.delay_ms == S(lo);
            seen_hi |= d.delay_ms == S(hi);
        }
        cr_assert(seen_lo && seen_hi, "c=%lld: both ends reached", (long long)c);
    }
    expect_end(&p, 26, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
}

Test(faktory, zero_discards_minus_one_dead)
{
    rb_policy p = spec("faktory:0");
    expect_end(&p, 1, NULL, RB_OUTCOME_DISCARD, RB_REASON_EXHAUSTED);
    rb_failure f = {.non_retryable = true};
    expect_end(&p, 1, &f, RB_OUTCOME_DISCARD, RB_REASON_NON_RETRYABLE_FLAG);
    rb_policy_release(&p);
    p = spec("faktory:-1");
    expect_end(&p, 1, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("faktory:1");
    cr_assert_eq(decide(&p, 1, NULL).outcome, RB_OUTCOME_RETRY);
    expect_end(&p, 2, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
}

/* ---- the client's bound (§8) ---- */

Test(client_retry, bounds_the_schedule)
{
    rb_policy p = spec("{\"dialect\": \"temporal\"}"); /* unlimited */
    rb_policy_apply_client_retry(&p, 25);
    cr_assert_eq(p.max_attempts, 26);
    expect_end(&p, 26, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("ftl:10 5s 1m");
    rb_policy_apply_client_retry(&p, 25); /* the schedule allows fewer: unchanged */
    cr_assert_eq(p.max_attempts, 11);
    rb_policy_apply_client_retry(&p, 3);
    cr_assert_eq(p.max_attempts, 4);
    rb_policy_release(&p);
    p = spec("//ftl:retry 10 5s catch notify");
    rb_policy_apply_client_retry(&p, 0);
    expect_end(&p, 1, NULL, RB_OUTCOME_DISCARD, RB_REASON_EXHAUSTED);
    cr_assert_null(p.catch_jobtype);
    rb_policy_release(&p);
    p = spec("{\"dialect\": \"temporal\"}");
    rb_policy_apply_client_retry(&p, -1);
    expect_end(&p, 1, NULL, RB_OUTCOME_DEAD, RB_REASON_EXHAUSTED);
    rb_policy_release(&p);
    p = spec("{\"dialect\": \"temporal\"}");
    rb_policy_apply_client_retry(&p, INT64_MAX);
    cr_assert_eq(p.max_attempts, INT64_MAX);
    rb_policy_release(&p);
}

/* ---- saturation (§6) ---- */

Test(saturation, huge_attempts_give_the_cap)
{
    const struct {
        const char *spec;
        int64_t cap;
    } cases[] = {
        {"{\"dialect\": \"temporal\"}", S(100)},
        {"{\"backoff_coefficient\": 1000, \"maximum_interval\": \"1d\"}", S(86400)},
        {"ftl:1000000 1s 1d", S(86400)},
        {"{\"max_attempts\": 2000000000, \"backoff_base_ms\": 1, \"jitter_enabled\": false}", S(60)},
        {"{\"max_attempts\": 2000000000, \"backoff\": \"linear\", \"backoff_base_ms\": 1000, "
         "\"jitter_enabled\": false}", S(60)},
        {"{\"max_attempts\": 2000000000, \"jitter_enabled\": false}", S(32)},
    };
    const int64_t attempts[] = {10000, INT64_C(1) << 40, INT64_MAX - 1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rb_policy p = spec(cases[i].spec);
        p.max_attempts = 0;
        for (size_t a = 0; a < sizeof attempts / sizeof attempts[0]; a++)
            expect_retry(&p, attempts[a], cases[i].cap);
        rb_policy_release(&p);
    }
    /* Sidekiq has no cap of its own: it saturates at the global limit */
    rb_policy p = spec("faktory:25");
    p.max_attempts = 0;
    expect_retry(&p, 10000, RB_POLICY_DELAY_LIMIT_MS); /* 9999^4 s is far beyond it */
    rb_decision c99 = decide(&p, 100, NULL); /* c = 99: still the formula, no saturation */
    cr_assert_geq(c99.delay_ms, S(INT64_C(96059601) + 15));
    cr_assert_leq(c99.delay_ms, S(INT64_C(96059601) + 15 + 29 * 100));
    expect_retry(&p, INT64_MAX, RB_POLICY_DELAY_LIMIT_MS);
    rb_decision d;
    rb_rng rng;
    rb_rng_seed(&rng, 3);
    rb_policy_decide(&p, INT64_MAX, NULL, INT64_MAX - 10, 0, &rng, &d);
    cr_assert_eq(d.retry_at_ms, INT64_MAX, "now + delay saturates");
    rb_policy_release(&p);
}

/* ---- Retry-After (§1, applied to every dialect) ---- */

Test(retry_after, seconds_win_capped_without_jitter)
{
    rb_policy p = spec("{\"max_attempts\": 10}"); /* tasker: jitter on, cap 60 s */
    for (uint64_t seed = 0; seed < 200; seed++) {
        rb_rng rng;
        rb_rng_seed(&rng, seed);
        rb_decision d;
        rb_failure f = {.retry_after = "40"};
        rb_policy_decide(&p, 6, &f, T0, T0, &rng, &d);
        cr_assert_eq(d.delay_ms, S(40), "no jitter on a server-requested delay");
        cr_assert_eq(d.source, RB_SOURCE_SERVER_REQUESTED);
    }
    rb_failure f = {.retry_after = " 120 "};
    rb_decision d = decide(&p, 1, &f);
    cr_assert_eq(d.delay_ms, S(60), "capped at max_backoff_seconds");
    f.retry_after = "0";
    d = decide(&p, 1, &f);
    cr_assert_eq(d.delay_ms, 0);
    cr_assert_eq(d.source, RB_SOURCE_SERVER_REQUESTED);
    rb_policy_release(&p);

    p = spec("faktory:25"); /* no cap of its own */
    f.retry_after = "86400";
    cr_assert_eq(decide(&p, 1, &f).delay_ms, S(86400));
    f.retry_after = "99999999999999999999999";
    cr_assert_eq(decide(&p, 1, &f).delay_ms, RB_POLICY_DELAY_LIMIT_MS);
    rb_policy_release(&p);
}

Test(retry_after, ignored_values)
{
    rb_policy p = spec("ftl:10 5s 1m");
    const char *ignored[] = {"", "   ", "-5", "abc", "5s", "1.5", "+3",
                             "Sun, 06 Nov 1994 08:49:37 GMT", /* past */
                             "Sun, 32 Nov 2094 08:49:37 GMT", "tomorrow"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        rb_failure f = {.retry_after = ignored[i]};
        rb_decision d = decide(&p, 1, &f);
        cr_assert_eq(d.source, RB_SOURCE_COMPUTED, "'%s'", ignored[i]);
        cr_assert_eq(d.delay_ms, S(5), "'%s'", ignored[i]);
    }
    rb_policy_release(&p);
}

Test(retry_after, http_dates)
{
    rb_policy p = spec("{\"dialect\": \"temporal\", \"maximum_interval\": \"1h\"}");
    char date[64];
    int64_t now = 0;
    cr_assert_eq(rb_time_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &now), 0);
    rb_rng rng;
    rb_rng_seed(&rng, 1);
    rb_decision d;
    /* IMF-fixdate, RFC 850 and asctime forms, 90 s after now */
    const char *forms[] = {"Sun, 06 Nov 1994 08:51:07 GMT", "Sunday, 06-Nov-94 08:51:07 GMT",
                           "Sun Nov  6 08:51:07 1994"};
    for (size_t i = 0; i < 3; i++) {
        rb_failure f = {.retry_after = forms[i]};
        rb_policy_decide(&p, 1, &f, now, now, &rng, &d);
        cr_assert_eq(d.source, RB_SOURCE_SERVER_REQUESTED, "%s", forms[i]);
        cr_assert_eq(d.delay_ms, S(90), "%s", forms[i]);
    }
    /* a date in the current second is now: delay 0; a second earlier is past */
    rb_failure f = {.retry_after = "Sun, 06 Nov 1994 08:49:37 GMT"};
    rb_policy_decide(&p, 1, &f, now + 400, now, &rng, &d);
    cr_assert_eq(d.source, RB_SOURCE_SERVER_REQUESTED);
    cr_assert_eq(d.delay_ms, 0);
    rb_policy_decide(&p, 1, &f, now + 1000, now, &rng, &d);
    cr_assert_eq(d.source, RB_SOURCE_COMPUTED);
    /* a far date is capped at the policy's maximum interval */
    snprintf(date, sizeof date, "Mon, 06 Nov 1995 08:49:37 GMT");
    f.retry_after = date;
    rb_policy_decide(&p, 1, &f, now, now, &rng, &d);
    cr_assert_eq(d.delay_ms, S(3600));
    rb_policy_release(&p);
}

/* ---- purity and the simulation ---- */

Test(decide, same_seed_same_decision)
{
    rb_policy p = spec("{\"max_attempts\": 50}");
    for (int64_t n = 1; n < 40; n++) {
        rb_rng a, b;
        rb_rng_seed(&a, (uint64_t)n);
        rb_rng_seed(&b, (uint64_t)n);
        rb_decision x, y;
        rb_policy_decide(&p, n, NULL, T0, T0, &a, &x);
        rb_policy_decide(&p, n, NULL, T0, T0, &b, &y);
        cr_assert_eq(memcmp(&x, &y, sizeof x), 0);
    }
    /* attempt 0 or below is taken as 1 */
    rb_policy_release(&p);
    p = spec("{\"dialect\": \"temporal\"}");
    expect_retry(&p, 0, S(1));
    expect_retry(&p, -7, S(1));
    rb_policy_release(&p);
}

Test(simulate, ftl_directive)
{
    rb_policy p = spec("ftl:10 5s 1m");
    rb_rng rng;
    rb_rng_seed(&rng, 0);
    rb_simulation s;
    rb_policy_simulate(&p, NULL, 0, T0, &rng, &s);
    cr_assert_eq(s.n, 11);
    cr_assert_eq(s.end, RB_SIM_DEAD);
    cr_assert_eq(s.reason, RB_REASON_EXHAUSTED);
    const int64_t want[] = {5, 10, 20, 40, 60, 60, 60, 60, 60, 60};
    int64_t at = 0;
    for (size_t i = 0; i < 10; i++) {
        at += S(want[i]);
        cr_assert_eq(s.steps[i].d.delay_ms, S(want[i]));
        cr_assert_eq(s.steps[i].at_ms, at);
    }
    cr_assert_eq(s.steps[10].d.outcome, RB_OUTCOME_DEAD);
    json_t *j = rb_simulation_to_json(&p, &s);
    cr_assert_str_eq(json_string_value(json_object_get(j, "final")), "dead");
    cr_assert_str_eq(json_string_value(json_object_get(j, "reason")), "exhausted");
    cr_assert_eq(json_array_size(json_object_get(j, "attempts")), 11);
    json_decref(j);
    rb_simulation_release(&s);
    /* a limit below the end: truncated */
    rb_policy_simulate(&p, NULL, 4, T0, &rng, &s);
    cr_assert_eq(s.n, 4);
    cr_assert_eq(s.end, RB_SIM_TRUNCATED);
    rb_simulation_release(&s);
    rb_policy_release(&p);
}

Test(simulate, unlimited_and_deadline)
{
    rb_policy p = spec("{\"dialect\": \"temporal\"}");
    rb_rng rng;
    rb_rng_seed(&rng, 0);
    rb_simulation s;
    rb_policy_simulate(&p, NULL, 0, T0, &rng, &s);
    cr_assert_eq(s.n, RB_SIM_DEFAULT_FAILURES);
    cr_assert_eq(s.end, RB_SIM_UNLIMITED);
    rb_simulation_release(&s);
    rb_policy_release(&p);
    p = spec("{\"schedule_to_close_timeout\": \"10m\"}");
    rb_policy_simulate(&p, NULL, 0, T0, &rng, &s);
    cr_assert_eq(s.end, RB_SIM_DEAD);
    cr_assert_eq(s.reason, RB_REASON_DEADLINE);
    /* 1+2+4+...+64 = 127 s, then 100 s steps: the last retry starts by 600 s */
    cr_assert_leq(s.steps[s.n - 2].at_ms, S(600));
    cr_assert_gt(s.steps[s.n - 2].at_ms + S(100), S(600));
    rb_simulation_release(&s);
    rb_policy_release(&p);
}
