/* Unit tests for the policy dialects: SPEC forms and detection, each
 * dialect's defaults, rules and validation messages (semantics.md §1-5, §7). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/dialect.h"
#include "policy/policy.h"

static rb_policy parse_ok(const char *spec)
{
    rb_policy p;
    rb_err err = {0};
    cr_assert_eq(rb_policy_parse_spec(spec, NULL, &p, &err), 0, "%s: %s", spec, err.msg);
    return p;
}

/* The spec fails with exactly msg, and leaves the output untouched. */
static void parse_bad(const char *spec, const char *msg)
{
    rb_policy p;
    memset(&p, 0xAB, sizeof p);
    rb_err err = {0};
    cr_assert_lt(rb_policy_parse_spec(spec, NULL, &p, &err), 0, "%s parsed", spec);
    cr_assert_str_eq(err.msg, msg, "spec %s", spec);
    cr_assert_eq(p.max_attempts, (int64_t)0xABABABABABABABABULL, "%s touched *out", spec);
}

static bool has_warning(const rb_policy *p, const char *needle)
{
    for (size_t i = 0; i < p->n_warnings; i++)
        if (strstr(p->warnings[i], needle))
            return true;
    return false;
}

/* ---- Temporal (§3) ---- */

Test(temporal, defaults)
{
    rb_policy p = parse_ok("{\"dialect\": \"temporal\"}");
    cr_assert_eq(p.dialect, RB_DIALECT_TEMPORAL);
    cr_assert_eq(p.backoff, RB_BACKOFF_EXPONENTIAL);
    cr_assert_eq(p.initial_ms, 1000);
    cr_assert_float_eq(p.coefficient, 2.0, 1e-9);
    cr_assert_eq(p.max_interval_ms, 100000);
    cr_assert_eq(p.max_attempts, 0);
    cr_assert(p.retryable);
    cr_assert_eq(p.jitter, RB_JITTER_NONE);
    cr_assert_eq(p.n_non_retryable, 0);
    cr_assert_eq(p.deadline_ms, 0);
    cr_assert_null(p.catch_jobtype);
    cr_assert_eq(p.retry_after_cap_ms, p.max_interval_ms);
    rb_policy_release(&p);
}

Test(temporal, defaults_fill_only_unset_fields)
{
    rb_policy p = parse_ok("{\"initial_interval\": \"3s\", \"maximum_attempts\": 5}");
    cr_assert_eq(p.initial_ms, 3000);
    cr_assert_eq(p.max_interval_ms, 300000); /* 100 x initial */
    cr_assert_eq(p.max_attempts, 5);
    rb_policy_release(&p);
    p = parse_ok("{\"initial_interval\": 2, \"backoff_coefficient\": 1.5, \"maximum_interval\": "
                 "\"1m\", \"non_retryable_error_types\": [\"Fatal\", \"bad\"], "
                 "\"schedule_to_close_timeout\": \"1h\"}");
    cr_assert_eq(p.initial_ms, 2000);
    cr_assert_float_eq(p.coefficient, 1.5, 1e-9);
    cr_assert_eq(p.max_interval_ms, 60000);
    cr_assert_eq(p.n_non_retryable, 2);
    cr_assert_str_eq(p.non_retryable[0], "Fatal");
    cr_assert_str_eq(p.non_retryable[1], "bad");
    cr_assert_eq(p.deadline_ms, 3600000);
    rb_policy_release(&p);
    /* zero means unset, as in Temporal */
    p = parse_ok("{\"initial_interval\": 0, \"backoff_coefficient\": 0, \"maximum_interval\": 0}");
    cr_assert_eq(p.initial_ms, 1000);
    cr_assert_float_eq(p.coefficient, 2.0, 1e-9);
    cr_assert_eq(p.max_interval_ms, 100000);
    rb_policy_release(&p);
}

Test(temporal, validation_messages)
{
    parse_bad("{\"initial_interval\": \"-1s\"}", "initial_interval: cannot be negative, got '-1s'");
    parse_bad("{\"backoff_coefficient\": 0.5}", "backoff_coefficient: cannot be less than 1, got '0.5'");
    parse_bad("{\"maximum_interval\": \"-2s\"}", "maximum_interval: cannot be negative, got '-2s'");
    parse_bad("{\"initial_interval\": \"10s\", \"maximum_interval\": \"5s\"}",
              "maximum_interval: cannot be less than initial_interval, got '5s' < '10s'");
    parse_bad("{\"maximum_attempts\": -1}", "maximum_attempts: cannot be negative, got '-1'");
    parse_bad("{\"maximum_attempts\": 2.5}", "maximum_attempts: must be an integer, got '2.5'");
    parse_bad("{\"initial_interval\": \"5q\"}",
              "initial_interval: invalid duration '5q': unknown unit 'q' (use d, h, m, s or ms)");
    parse_bad("{\"initial_interval\": true}",
              "initial_interval: must be a duration (a string such as \"5s\" or a number of seconds)");
    parse_bad("{\"backoff_coefficient\": \"2\"}", "backoff_coefficient: must be a number, got '2'");
    parse_bad("{\"non_retryable_error_types\": \"Fatal\"}",
              "non_retryable_error_types: must be an array of strings, got 'Fatal'");
    parse_bad("{\"non_retryable_error_types\": [\"a\", 3]}",
              "non_retryable_error_types[1]: must be a non-empty string, got '3'");
    parse_bad("{\"schedule_to_close_timeout\": \"-1m\"}",
              "schedule_to_close_timeout: cannot be negative, got '-1m'");
}

Test(temporal, validation_order_first_failure_wins)
{
    /* every rule broken at once: initial_interval is checked first */
    parse_bad("{\"initial_interval\": \"-1s\", \"backoff_coefficient\": 0.5, "
              "\"maximum_interval\": \"-1s\", \"maximum_attempts\": -3}",
              "initial_interval: cannot be negative, got '-1s'");
    parse_bad("{\"backoff_coefficient\": 0.5, \"maximum_interval\": \"-1s\", \"maximum_attempts\": -3}",
              "backoff_coefficient: cannot be less than 1, got '0.5'");
    parse_bad("{\"maximum_interval\": \"-1s\", \"maximum_attempts\": -3}",
              "maximum_interval: cannot be negative, got '-1s'");
    parse_bad("{\"maximum_interval\": \"500ms\", \"maximum_attempts\": -3}",
              "maximum_interval: cannot be less than initial_interval, got '500ms' < '1s'");
}

Test(temporal, maximum_attempts_one_is_accepted_at_once)
{
    rb_policy p = parse_ok("{\"maximum_attempts\": 1, \"initial_interval\": \"-1s\", "
                           "\"backoff_coefficient\": 0.5, \"maximum_interval\": \"-5s\"}");
    cr_assert_eq(p.max_attempts, 1);
    cr_assert_geq(p.initial_ms, 0);
    cr_assert_geq(p.coefficient, 1.0);
    cr_assert_geq(p.max_interval_ms, p.initial_ms);
    rb_policy_release(&p);
}

/* ---- tasker-core (§1) ---- */

Test(tasker, defaults_from_system_backoff)
{
    rb_policy p = parse_ok("{\"dialect\": \"tasker\"}");
    cr_assert_eq(p.dialect, RB_DIALECT_TASKER);
    cr_assert_eq(p.max_attempts, 3);
    cr_assert(p.retryable);
    cr_assert(p.first_always_eligible);
    cr_assert_eq(p.backoff, RB_BACKOFF_LIST);
    cr_assert_eq(p.n_delays, 6);
    const int64_t want[] = {1000, 2000, 4000, 8000, 16000, 32000};
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(p.delays_ms[i], want[i]);
    cr_assert_eq(p.max_interval_ms, 60000);
    cr_assert_eq(p.jitter, RB_JITTER_TASKER);
    cr_assert_float_eq(p.jitter_pct, 0.1, 1e-9);
    cr_assert_eq(p.retry_after_cap_ms, 60000);
    cr_assert_eq(p.n_warnings, 0);
    rb_policy_release(&p);
}

Test(tasker, job_fields)
{
    rb_policy p = parse_ok("{\"max_attempts\": 10, \"backoff\": \"linear\", \"backoff_base_ms\": 500, "
                           "\"max_backoff_ms\": 30000}");
    cr_assert_eq(p.max_attempts, 10);
    cr_assert_eq(p.backoff, RB_BACKOFF_LINEAR);
    cr_assert_eq(p.initial_ms, 500);
    cr_assert_eq(p.max_interval_ms, 30000); /* min(job 30 s, system 60 s) */
    rb_policy_release(&p);
    p = parse_ok("{\"backoff_base_ms\": 1000, \"max_backoff_ms\": 300000}");
    cr_assert_eq(p.backoff, RB_BACKOFF_EXPONENTIAL);
    cr_assert_float_eq(p.coefficient, 2.0, 1e-9);
    cr_assert_eq(p.max_interval_ms, 60000); /* the system cap still applies */
    rb_policy_release(&p);
    p = parse_ok("{\"backoff\": \"fixed\", \"backoff_base_ms\": 700}");
    cr_assert_eq(p.backoff, RB_BACKOFF_FIXED);
    cr_assert_eq(p.initial_ms, 700);
    rb_policy_release(&p);
    /* backoff without a base: the system list applies */
    p = parse_ok("{\"backoff\": \"exponential\", \"max_attempts\": 1, \"retryable\": false}");
    cr_assert_eq(p.backoff, RB_BACKOFF_LIST);
    cr_assert(!p.retryable);
    cr_assert_eq(p.n_warnings, 0);
    rb_policy_release(&p);
}

Test(tasker, system_keys_in_the_object)
{
    rb_policy p = parse_ok("{\"max_attempts\": 4, \"default_backoff_seconds\": [0.5, 3], "
                           "\"max_backoff_seconds\": 2, \"backoff_multiplier\": 3, "
                           "\"jitter_enabled\": false, \"jitter_max_percentage\": 0.5}");
    cr_assert_eq(p.n_delays, 2);
    cr_assert_eq(p.delays_ms[0], 500);
    cr_assert_eq(p.delays_ms[1], 3000);
    cr_assert_eq(p.max_interval_ms, 2000);
    cr_assert_float_eq(p.coefficient, 3.0, 1e-9);
    cr_assert_eq(p.jitter, RB_JITTER_NONE);
    cr_assert_eq(p.retry_after_cap_ms, 2000);
    rb_policy_release(&p);
}

Test(tasker, system_config_argument)
{
    rb_backoff_config sys;
    rb_backoff_config_init(&sys);
    sys.max_backoff_ms = 300000;
    sys.jitter_enabled = false;
    rb_policy p;
    rb_err err = {0};
    cr_assert_eq(rb_policy_parse_spec("{\"max_attempts\": 2}", &sys, &p, &err), 0);
    cr_assert_eq(p.max_interval_ms, 300000);
    cr_assert_eq(p.jitter, RB_JITTER_NONE);
    rb_policy_release(&p);
    rb_backoff_config copy;
    rb_backoff_config_copy(&copy, &sys);
    cr_assert_neq(copy.default_backoff_ms, sys.default_backoff_ms);
    cr_assert_eq(copy.default_backoff_ms[5], 32000);
    rb_backoff_config_release(&copy);
    rb_backoff_config_release(&sys);
}

Test(tasker, max_attempts_zero_is_first_only_with_warning)
{
    rb_policy p = parse_ok("{\"max_attempts\": 0}");
    cr_assert_eq(p.max_attempts, 1);
    cr_assert(p.first_always_eligible);
    cr_assert_eq(p.n_warnings, 1);
    cr_assert(has_warning(&p, "max_attempts 0 allows the first execution and no retries"));
    cr_assert(has_warning(&p, "write max_attempts 1"));
    rb_policy_release(&p);
}

Test(tasker, retryable_false_with_attempts_warns)
{
    rb_policy p = parse_ok("{\"retryable\": false, \"max_attempts\": 3}");
    cr_assert(!p.retryable);
    cr_assert(has_warning(&p, "retryable false with max_attempts 3 behaves as max_attempts 1"));
    rb_policy_release(&p);
}

Test(tasker, validation_messages)
{
    parse_bad("{\"max_attempts\": -1}", "max_attempts: cannot be negative, got '-1'");
    parse_bad("{\"max_attempts\": \"3\"}", "max_attempts: must be an integer, got '3'");
    parse_bad("{\"retryable\": 1}", "retryable: must be true or false, got '1'");
    parse_bad("{\"backoff\": \"cubic\"}",
              "backoff: must be \"exponential\", \"linear\" or \"fixed\", got 'cubic'");
    parse_bad("{\"backoff_base_ms\": 0}", "backoff_base_ms: must be positive, got '0'");
    parse_bad("{\"max_backoff_ms\": -5}", "max_backoff_ms: must be positive, got '-5'");
    parse_bad("{\"max_attempts\": 2, \"default_backoff_seconds\": []}",
              "default_backoff_seconds: must be a non-empty array of seconds, got '[]'");
    parse_bad("{\"max_attempts\": 2, \"default_backoff_seconds\": [1, -2]}",
              "default_backoff_seconds[1]: must be a non-negative number of seconds (whole "
              "milliseconds), got '-2'");
    parse_bad("{\"max_attempts\": 2, \"max_backoff_seconds\": 0}",
              "max_backoff_seconds: must be positive, got '0'");
    parse_bad("{\"max_attempts\": 2, \"backoff_multiplier\": 0.9}",
              "backoff_multiplier: cannot be less than 1, got '0.9'");
    parse_bad("{\"max_attempts\": 2, \"jitter_enabled\": \"yes\"}",
              "jitter_enabled: must be true or false, got 'yes'");
    parse_bad("{\"max_attempts\": 2, \"jitter_max_percentage\": 1.5}",
              "jitter_max_percentage: must be between 0 and 1, got '1.5'");
}

/* ---- FTL (§4) ---- */

Test(ftl, directive_forms)
{
    const char *forms[] = {"ftl:10 5s 1m", "//ftl:retry 10 5s 1m", "  ftl:  10   5s\t1m ",
                           "// ftl:retry 10 5s 1m", "ftl:retry 10 5s 1m",
                           "{\"ftl\": \"10 5s 1m\"}", "{\"dialect\": \"ftl\", \"ftl\": \"10 5s 1m\"}"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        rb_policy p = parse_ok(forms[i]);
        cr_assert_eq(p.dialect, RB_DIALECT_FTL, "%s", forms[i]);
        cr_assert_eq(p.max_attempts, 11, "%s", forms[i]);
        cr_assert_eq(p.initial_ms, 5000, "%s", forms[i]);
        cr_assert_eq(p.max_interval_ms, 60000, "%s", forms[i]);
        cr_assert_float_eq(p.coefficient, 2.0, 1e-9);
        cr_assert_eq(p.jitter, RB_JITTER_NONE);
        cr_assert_null(p.catch_jobtype);
        rb_policy_release(&p);
    }
}

Test(ftl, defaults)
{
    rb_policy p = parse_ok("ftl:5s"); /* count 10, max 1 h */
    cr_assert_eq(p.max_attempts, 11);
    cr_assert_eq(p.initial_ms, 5000);
    cr_assert_eq(p.max_interval_ms, 3600000);
    rb_policy_release(&p);
    p = parse_ok("ftl:3 2h"); /* max = max(min, 1 h) */
    cr_assert_eq(p.max_attempts, 4);
    cr_assert_eq(p.max_interval_ms, 7200000);
    rb_policy_release(&p);
    p = parse_ok("ftl:0"); /* one execution, no retries */
    cr_assert_eq(p.max_attempts, 1);
    rb_policy_release(&p);
    p = parse_ok("ftl:1d 1d"); /* 1d itself is allowed */
    cr_assert_eq(p.initial_ms, 86400000);
    rb_policy_release(&p);
    p = parse_ok("ftl:2 1m90s");
    cr_assert_eq(p.initial_ms, 150000);
    rb_policy_release(&p);
}

Test(ftl, catch)
{
    rb_policy p = parse_ok("//ftl:retry 10 5s 1m catch notify_failure");
    cr_assert_str_eq(p.catch_jobtype, "notify_failure");
    cr_assert_eq(p.max_attempts, 11);
    rb_policy_release(&p);
    p = parse_ok("ftl:0 5s catch mod.handler"); /* count 0 with a min is fine with catch */
    cr_assert_eq(p.max_attempts, 1);
    cr_assert_str_eq(p.catch_jobtype, "mod.handler");
    rb_policy_release(&p);
    p = parse_ok("ftl:0 catch cleanup");
    cr_assert_str_eq(p.catch_jobtype, "cleanup");
    rb_policy_release(&p);
}

Test(ftl, validation_messages)
{
    parse_bad("ftl:10", "ftl min: retry must have a minimum backoff");
    parse_bad("ftl:", "ftl min: retry must have a minimum backoff");
    parse_bad("ftl:0 5s", "ftl: can not define a backoff duration when retry count is 0 and no "
                          "catch is declared");
    parse_bad("ftl:5s1m", "ftl min: invalid duration '5s1m': units must go from largest to smallest");
    parse_bad("ftl:500ms", "ftl min: invalid duration '500ms': unknown unit 'ms' (FTL allows d, h, m, s)");
    parse_bad("ftl:0s", "ftl min: backoff must be at least 1s, got '0s'");
    parse_bad("ftl:1d1s", "ftl min: backoff must be at most 1d, got '1d1s'");
    parse_bad("ftl:25h", "ftl min: backoff must be at most 1d, got '25h'");
    parse_bad("ftl:10 5s 2d", "ftl max: backoff must be at most 1d, got '2d'");
    parse_bad("ftl:10 1m 5s", "ftl max: cannot be less than min, got '5s' < '1m'");
    parse_bad("ftl:10 5s 1m catch", "ftl catch: expected a verb after 'catch'");
    parse_bad("ftl:10 5s catch 9lives", "ftl catch: invalid verb name '9lives'");
    parse_bad("ftl:10 5s 1m 2m", "ftl: unexpected '2m' in '10 5s 1m 2m' (expected [count] min "
                                 "[max] [catch verb])");
    parse_bad("ftl:99999999999 5s", "ftl count: must be at most 1000000000, got '99999999999'");
    parse_bad("{\"ftl\": 10}", "ftl: must be a directive string such as \"10 5s 1m\", got '10'");
    parse_bad("ftl:-1 5s", "ftl min: invalid duration '-1': a sign is not allowed");
}

/* ---- Faktory (§5) and the tutorial (§2) ---- */

Test(faktory, retry_forms)
{
    rb_policy p = parse_ok("faktory:25");
    cr_assert_eq(p.dialect, RB_DIALECT_FAKTORY);
    cr_assert_eq(p.backoff, RB_BACKOFF_SIDEKIQ);
    cr_assert_eq(p.max_attempts, 26);
    cr_assert_eq(p.on_exhaust, RB_ON_EXHAUST_DEAD);
    rb_policy_release(&p);
    p = parse_ok("faktory:0");
    cr_assert_eq(p.max_attempts, 1);
    cr_assert_eq(p.on_exhaust, RB_ON_EXHAUST_DISCARD);
    rb_policy_release(&p);
    p = parse_ok("faktory:-1");
    cr_assert_eq(p.max_attempts, 1);
    cr_assert_eq(p.on_exhaust, RB_ON_EXHAUST_DEAD);
    rb_policy_release(&p);
    p = parse_ok("{\"retry\": 3}");
    cr_assert_eq(p.max_attempts, 4);
    rb_policy_release(&p);
    p = parse_ok("{\"dialect\": \"faktory\"}");
    cr_assert_eq(p.max_attempts, 26);
    rb_policy_release(&p);
    parse_bad("faktory:-2", "retry: must be -1, 0 or a positive count, got '-2'");
    parse_bad("faktory:", "retry: must be an integer, got ''");
    parse_bad("faktory:3x", "retry: must be an integer, got '3x'");
    parse_bad("faktory:99999999999999999999", "retry: must be an integer, got '99999999999999999999'");
    parse_bad("{\"retry\": true}", "retry: must be an integer, got 'true'");
}

Test(faktory, builtin_default)
{
    rb_policy p;
    rb_policy_default(&p);
    cr_assert_eq(p.dialect, RB_DIALECT_FAKTORY);
    cr_assert_eq(p.backoff, RB_BACKOFF_SIDEKIQ);
    cr_assert_eq(p.max_attempts, 26);
    cr_assert(p.retryable);
    rb_policy_release(&p);
}

Test(tutorial, max_retries_means_total_executions)
{
    rb_policy p = parse_ok("{\"max_retries\": 3}");
    cr_assert_eq(p.dialect, RB_DIALECT_TUTORIAL);
    cr_assert_eq(p.max_attempts, 3);
    cr_assert_eq(p.backoff, RB_BACKOFF_FIXED);
    cr_assert_eq(p.initial_ms, 0);
    cr_assert(has_warning(&p, "max_retries 3 means 3 executions in total (2 retries)"));
    rb_policy_release(&p);
    p = parse_ok("{\"dialect\": \"tutorial\"}"); /* MaxRetries defaults to 3 */
    cr_assert_eq(p.max_attempts, 3);
    rb_policy_release(&p);
    p = parse_ok("{\"max_retries\": 0}");
    cr_assert_eq(p.max_attempts, 1);
    cr_assert(has_warning(&p, "max_retries 0 still runs the job once"));
    rb_policy_release(&p);
    parse_bad("{\"max_retries\": -1}", "max_retries: cannot be negative, got '-1'");
}

/* ---- SPEC detection (§7) ---- */

Test(spec, detection_errors)
{
    parse_bad("{}", "dialect: no known policy key in the object (name one with \"dialect\": "
                    "temporal, tasker, ftl, faktory or tutorial)");
    parse_bad("{\"colour\": 1}", "colour: unknown key");
    parse_bad("{\"dialect\": \"sidekiq\"}", "dialect: unknown dialect 'sidekiq' (known: temporal, "
                                            "tasker, ftl, faktory, tutorial)");
    parse_bad("{\"dialect\": 3}", "dialect: unknown dialect '3' (known: temporal, tasker, ftl, "
                                  "faktory, tutorial)");
    parse_bad("{\"maximum_attempts\": 3, \"max_attempts\": 3}",
              "max_attempts: keys of two dialects: 'maximum_attempts' is temporal, 'max_attempts' "
              "is tasker");
    parse_bad("{\"dialect\": \"temporal\", \"retry\": 3}", "retry: is a faktory key, not a temporal one");
    parse_bad("{\"dialect\": \"tasker\", \"colour\": 3}", "colour: unknown key for dialect tasker");
    parse_bad("{\"retry\": 3", "spec: invalid JSON at column 11: '}' expected near end of file");
    parse_bad("five", "spec: unrecognised 'five' (expected a JSON object, 'ftl:COUNT MIN MAX', "
                      "'//ftl:retry ...' or 'faktory:N')");
    parse_bad("", "spec: unrecognised '' (expected a JSON object, 'ftl:COUNT MIN MAX', "
                  "'//ftl:retry ...' or 'faktory:N')");
    parse_bad("//ftl:retryx 5s", "spec: unrecognised '//ftl:retryx 5s' (expected a JSON object, "
                                 "'ftl:COUNT MIN MAX', '//ftl:retry ...' or 'faktory:N')");
}

Test(spec, detection_by_keys)
{
    const struct {
        const char *spec;
        rb_dialect d;
    } cases[] = {
        {"{\"backoff_coefficient\": 3}", RB_DIALECT_TEMPORAL},
        {"{\"retryable\": true}", RB_DIALECT_TASKER},
        {"{\"jitter_enabled\": false}", RB_DIALECT_TASKER},
        {"{\"retry\": 5}", RB_DIALECT_FAKTORY},
        {"{\"max_retries\": 5}", RB_DIALECT_TUTORIAL},
        {"{\"ftl\": \"5s\"}", RB_DIALECT_FTL},
        {"{\"dialect\": \"tasker\", \"max_attempts\": 2}", RB_DIALECT_TASKER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rb_policy p = parse_ok(cases[i].spec);
        cr_assert_eq(p.dialect, cases[i].d, "%s", cases[i].spec);
        rb_policy_release(&p);
    }
}

Test(spec, json_values)
{
    rb_policy p;
    rb_err err = {0};
    json_t *v = json_integer(4);
    cr_assert_eq(rb_policy_parse_json(v, NULL, &p, &err), 0);
    cr_assert_eq(p.dialect, RB_DIALECT_FAKTORY);
    cr_assert_eq(p.max_attempts, 5);
    rb_policy_release(&p);
    json_decref(v);
    v = json_string("ftl:2 1s");
    cr_assert_eq(rb_policy_parse_json(v, NULL, &p, &err), 0);
    cr_assert_eq(p.max_attempts, 3);
    rb_policy_release(&p);
    json_decref(v);
    v = json_pack("{sisb}", "max_attempts", 2, "retryable", 1);
    cr_assert_eq(rb_policy_parse_json(v, NULL, &p, &err), 0);
    cr_assert_eq(p.dialect, RB_DIALECT_TASKER);
    rb_policy_release(&p);
    json_decref(v);
    v = json_true();
    cr_assert_lt(rb_policy_parse_json(v, NULL, &p, &err), 0);
    /* the caller names the field (retry_policy, custom.retry_policy, policy) */
    cr_assert_str_eq(err.msg, "must be an object, a SPEC string or an integer, got 'true'");
    json_decref(v);
}

Test(spec, names)
{
    rb_dialect d;
    const char *names[] = {"temporal", "tasker", "ftl", "faktory", "tutorial"};
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(rb_dialect_from_name(names[i], &d), 0);
        cr_assert_str_eq(rb_dialect_name(d), names[i]);
    }
    cr_assert_eq(rb_dialect_from_name("nope", &d), RB_ENOENT);
}

Test(spec, copy_is_deep)
{
    rb_policy p = parse_ok("{\"non_retryable_error_types\": [\"A\"], \"initial_interval\": 1}");
    rb_policy_warn(&p, "w%d", 1);
    rb_policy q;
    rb_policy_copy(&q, &p);
    cr_assert_neq(q.non_retryable, p.non_retryable);
    cr_assert_str_eq(q.non_retryable[0], "A");
    cr_assert_str_eq(q.warnings[0], "w1");
    rb_policy_release(&p);
    cr_assert_str_eq(q.non_retryable[0], "A");
    rb_policy_release(&q);
    p = parse_ok("{\"max_attempts\": 5}");
    rb_policy_copy(&q, &p);
    cr_assert_neq(q.delays_ms, p.delays_ms);
    cr_assert_eq(q.delays_ms[2], 4000);
    rb_policy_release(&p);
    rb_policy_release(&q);
}
