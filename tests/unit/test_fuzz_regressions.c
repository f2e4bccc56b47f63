/* The fuzz targets' properties (fuzz/fuzz_*.c) on edge inputs, as plain unit
 * tests so they also run in the gcc and ASan builds. A crash or broken
 * invariant the fuzzers find gets its input added here. So far (see
 * docs/hardening.md) the fuzzers have found none; these are the edges the
 * seed corpora and the properties were built around. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "config/toml.h"
#include "policy/duration.h"
#include "policy/policy.h"
#include "server/srv.h"

/* fuzz_duration: what parses formats and parses back to the same value; a
 * failure leaves the output alone. */
Test(fuzz_regressions, duration_round_trip_at_the_edges)
{
    const char *inputs[] = {"9223372036854775807ms", "-9223372036854775807ms", "106751991167d",
                            "106751991167d7h12m55s807ms", "0.001", "-0", "0s", "1.5s",
                            "0.0005s", "9223372036854775808ms", "106751991168d", "1e3", "1m1m",
                            "30s1m", "", "-", "ms", "5", "1d24h"};
    int parsed = 0;
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        int64_t ms = 4242, back = -1;
        rb_err err = {0};
        int rc = rb_duration_parse(inputs[i], &ms, &err);
        if (rc) {
            cr_assert(rc == RB_EPARSE || rc == RB_ERANGE, "'%s': code %d", inputs[i], rc);
            cr_assert_eq(ms, 4242, "'%s' changed the output on failure", inputs[i]);
            cr_assert(strstr(err.msg, "invalid duration"), "'%s': message '%s'", inputs[i], err.msg);
            continue;
        }
        parsed++;
        char text[RB_DURATION_STRLEN];
        rb_duration_format(ms, text, sizeof text);
        cr_assert_eq(rb_duration_parse(text, &back, NULL), 0, "'%s' formats as unparsable '%s'",
                     inputs[i], text);
        cr_assert_eq(back, ms, "'%s' -> %lld -> '%s' -> %lld", inputs[i], (long long)ms, text,
                     (long long)back);
    }
    cr_assert_gt(parsed, 5);
    int64_t ms = 1;
    cr_assert_eq(rb_duration_parse("9223372036854775808ms", &ms, NULL), RB_ERANGE);
    cr_assert_eq(rb_duration_parse("9223372036854775807ms", &ms, NULL), 0);
    cr_assert_eq(ms, INT64_MAX);
}

/* fuzz_duration: FTL's grammar is a subset of the general one, same value. */
Test(fuzz_regressions, ftl_durations_mean_the_same_in_the_general_grammar)
{
    const char *inputs[] = {"1d2h3m4s", "0s", "59s", "90s", "1d", "106751991167d", "24h",
                            "00001s", "1h0m"};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        int64_t ftl = -1, general = -2;
        if (rb_duration_parse_ftl(inputs[i], &ftl, NULL) != 0)
            continue;
        cr_assert(ftl >= 0);
        cr_assert_eq(rb_duration_parse(inputs[i], &general, NULL), 0, "'%s'", inputs[i]);
        cr_assert_eq(general, ftl, "'%s': ftl %lld, general %lld", inputs[i], (long long)ftl,
                     (long long)general);
    }
    int64_t ms = 7;
    cr_assert_neq(rb_duration_parse_ftl("1.5s", &ms, NULL), 0);
    cr_assert_neq(rb_duration_parse_ftl("-1s", &ms, NULL), 0);
    cr_assert_neq(rb_duration_parse_ftl("250ms", &ms, NULL), 0);
    cr_assert_eq(ms, 7);
}

/* fuzz_policy: decisions at the extremes keep delay in [0, limit], retry_at =
 * now + delay, computed delays under the cap, and are reproducible. */
Test(fuzz_regressions, decide_at_extreme_attempts_and_overrides)
{
    const char *specs[] = {"faktory:25", "ftl:1000 1s 1d", "{\"dialect\":\"temporal\"}",
                           "{\"dialect\":\"tasker\",\"max_attempts\":0}",
                           "{\"dialect\":\"temporal\",\"initial_interval\":\"106751991167d\","
                           "\"backoff_coefficient\":1e300}"};
    int64_t attempts[] = {1, 2, 63, 64, 10000, INT64_MAX};
    int64_t overrides[] = {0, -1, 1, INT64_MAX};
    const int64_t now = INT64_C(1) << 61;
    int checked = 0;
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        rb_policy p;
        rb_err err = {0};
        if (rb_policy_parse_spec(specs[s], NULL, &p, &err)) {
            cr_log_info("not a policy: %s (%s)", specs[s], err.msg);
            continue;
        }
        for (size_t a = 0; a < sizeof attempts / sizeof *attempts; a++)
            for (size_t o = 0; o < sizeof overrides / sizeof *overrides; o++) {
                rb_failure f = {.errtype = "E", .next_retry_delay_ms = overrides[o],
                                .retry_after = "99999999999999999999"};
                rb_rng r1, r2;
                rb_rng_seed(&r1, 7);
                rb_rng_seed(&r2, 7);
                rb_decision d, again;
                rb_policy_decide(&p, attempts[a], &f, now, now - 1000, &r1, &d);
                rb_policy_decide(&p, attempts[a], &f, now, now - 1000, &r2, &again);
                cr_assert_eq(memcmp(&d, &again, sizeof d), 0, "not reproducible: %s", specs[s]);
                if (d.outcome != RB_OUTCOME_RETRY)
                    continue;
                checked++;
                cr_assert(d.delay_ms >= 0 && d.delay_ms <= RB_POLICY_DELAY_LIMIT_MS);
                cr_assert_eq(d.retry_at_ms, now + d.delay_ms);
                if (d.source == RB_SOURCE_OVERRIDE)
                    cr_assert_eq(d.delay_ms, overrides[o] < RB_POLICY_DELAY_LIMIT_MS
                                                 ? overrides[o]
                                                 : RB_POLICY_DELAY_LIMIT_MS);
                if (d.source == RB_SOURCE_COMPUTED && p.max_interval_ms > 0)
                    cr_assert_leq(d.delay_ms, p.max_interval_ms);
            }
        rb_policy_release(&p);
    }
    cr_assert_gt(checked, 20);
}

/* fuzz_toml: NULs, lone surrogates and unterminated constructs are errors
 * with a position, never a crash. */
Test(fuzz_regressions, toml_bad_bytes_are_positioned_errors)
{
    static const char *const texts[] = {"a = \"x\0y\"", "a = \"\\ud800\"", "a = \"\"\"", "[a",
                                        "a = [1,", "a = {b = 1", "\xff = 1", "a = 1979-02-29",
                                        "a = 0x", "[[a]]\n[a]"};
    static const size_t lens[] = {9, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        size_t n = lens[i] ? lens[i] : strlen(texts[i]);
        rb_err err = {0};
        rb_toml_value *v = rb_toml_parse(texts[i], n, &err);
        cr_assert_null(v, "text %zu parsed", i);
        cr_assert_eq(err.code, RB_EPARSE);
        cr_assert(!strncmp(err.msg, "line ", 5), "text %zu: '%s'", i, err.msg);
    }
}

/* fuzz_job: validation with a bare configuration refuses out-of-range and
 * mistyped fields, leaves a refused job as it was, and takes a minimal one. */
Test(fuzz_regressions, job_validation_edges)
{
    static rb_srv srv;
    rb_config_init(&srv.cfg);
    const char *bad[] = {
        "{\"jid\":\"1234567\",\"jobtype\":\"t\",\"args\":[]}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"priority\":9223372036854775807}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"reserve_for\":-9223372036854775808}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"retry\":1e308}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"at\":\"\\u00ff\"}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"retry_policy\":\"ftl:\"}",
        "{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"custom\":{\"retry_policy\":{}}}",
        "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *job = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        cr_assert_not_null(job);
        char *before = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        rb_err err = {0};
        cr_assert_neq(rb_job_validate(&srv, job, &err), 0, "accepted: %s", bad[i]);
        cr_assert(err.msg[0]);
        char *after = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        cr_assert_str_eq(after, before, "a refused job was modified");
        free(before);
        free(after);
        json_decref(job);
    }
    json_t *ok = json_loads("{\"jid\":\"12345678\",\"jobtype\":\"t\",\"args\":[],\"priority\":9,"
                            "\"reserve_for\":86400,\"retry\":-1,\"at\":\"\"}", 0, NULL);
    rb_err err = {0};
    cr_assert_eq(rb_job_validate(&srv, ok, &err), 0, "%s", err.msg);
    json_decref(ok);
    rb_config_release(&srv.cfg);
}
