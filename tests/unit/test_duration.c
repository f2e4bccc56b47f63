/* Unit tests for src/policy/duration: the general grammar, FTL's strict one,
 * JSON values and formatting. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/duration.h"

static int64_t ok(const char *s)
{
    int64_t ms = -42;
    rb_err err = {0};
    cr_assert_eq(rb_duration_parse(s, &ms, &err), 0, "%s: %s", s, err.msg);
    return ms;
}

static void bad(const char *s, int code, const char *msg)
{
    int64_t ms = 777;
    rb_err err = {0};
    cr_assert_eq(rb_duration_parse(s, &ms, &err), code, "%s", s);
    cr_assert_eq(ms, 777, "%s changed the output", s);
    cr_assert_str_eq(err.msg, msg);
}

Test(duration, general_grammar)
{
    cr_assert_eq(ok("250ms"), 250);
    cr_assert_eq(ok("5s"), 5000);
    cr_assert_eq(ok("1m30s"), 90000);
    cr_assert_eq(ok("2h"), 7200000);
    cr_assert_eq(ok("1d"), 86400000);
    cr_assert_eq(ok("1d2h3m4s5ms"), 86400000 + 7200000 + 180000 + 4000 + 5);
    cr_assert_eq(ok("90s"), 90000);
    cr_assert_eq(ok("1m90s"), 150000);
    cr_assert_eq(ok("0"), 0);
    cr_assert_eq(ok("0s"), 0);
    cr_assert_eq(ok("5"), 5000);
    cr_assert_eq(ok("0.25"), 250);
    cr_assert_eq(ok("1.5s"), 1500);
    cr_assert_eq(ok("0.5m"), 30000);
    cr_assert_eq(ok("-1s"), -1000);
    cr_assert_eq(ok("-3"), -3000);
}

Test(duration, general_rejects)
{
    bad("", RB_EPARSE, "invalid duration '': empty");
    bad("s", RB_EPARSE, "invalid duration 's': expected a number");
    bad("5x", RB_EPARSE, "invalid duration '5x': unknown unit 'x' (use d, h, m, s or ms)");
    bad("5s1m", RB_EPARSE, "invalid duration '5s1m': units must go from largest to smallest");
    bad("1s1s", RB_EPARSE, "invalid duration '1s1s': a unit appears twice");
    bad("1m30", RB_EPARSE, "invalid duration '1m30': missing unit (d, h, m or s)");
    bad("1.0005s", RB_EPARSE, "invalid duration '1.0005s': finer than a millisecond");
    bad("0.5ms", RB_EPARSE, "invalid duration '0.5ms': finer than a millisecond");
    bad("1.s", RB_EPARSE, "invalid duration '1.s': expected a number");
    bad(" 5s", RB_EPARSE, "invalid duration ' 5s': expected a number");
    bad("5 s", RB_EPARSE, "invalid duration '5 s': unknown unit ' s' (use d, h, m, s or ms)");
    bad("--5s", RB_EPARSE, "invalid duration '--5s': expected a number");
    bad("999999999999d", RB_ERANGE, "invalid duration '999999999999d': out of range");
    bad("99999999999999999999999s", RB_ERANGE,
        "invalid duration '99999999999999999999999s': out of range");
}

Test(duration, ftl_grammar)
{
    int64_t ms = 0;
    rb_err err = {0};
    cr_assert_eq(rb_duration_parse_ftl("1m30s", &ms, &err), 0);
    cr_assert_eq(ms, 90000);
    cr_assert_eq(rb_duration_parse_ftl("1m90s", &ms, &err), 0);
    cr_assert_eq(ms, 150000);
    cr_assert_eq(rb_duration_parse_ftl("1d", &ms, &err), 0);
    cr_assert_eq(ms, 86400000);
    const struct {
        const char *s, *msg;
    } rej[] = {
        {"5s1m", "invalid duration '5s1m': units must go from largest to smallest"},
        {"500ms", "invalid duration '500ms': unknown unit 'ms' (FTL allows d, h, m, s)"},
        {"5", "invalid duration '5': missing unit (d, h, m or s)"},
        {"1.5s", "invalid duration '1.5s': fractions are not allowed"},
        {"-5s", "invalid duration '-5s': a sign is not allowed"},
        {"5w", "invalid duration '5w': unknown unit 'w' (FTL allows d, h, m, s)"},
        {"1h1h", "invalid duration '1h1h': a unit appears twice"},
    };
    for (size_t i = 0; i < sizeof rej / sizeof rej[0]; i++) {
        ms = 5;
        cr_assert_neq(rb_duration_parse_ftl(rej[i].s, &ms, &err), 0, "%s", rej[i].s);
        cr_assert_str_eq(err.msg, rej[i].msg);
        cr_assert_eq(ms, 5);
    }
}

Test(duration, json_values)
{
    int64_t ms = 0;
    rb_err err = {0};
    json_t *v = json_string("1m30s");
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), 0);
    cr_assert_eq(ms, 90000);
    json_decref(v);
    v = json_integer(7);
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), 0);
    cr_assert_eq(ms, 7000);
    json_decref(v);
    v = json_real(0.25);
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), 0);
    cr_assert_eq(ms, 250);
    json_decref(v);
    v = json_real(0.0001);
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), RB_EPARSE);
    cr_assert_str_eq(err.msg, "invalid duration '0.0001': finer than a millisecond");
    json_decref(v);
    v = json_true();
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), RB_EINVAL);
    cr_assert(strstr(err.msg, "must be a duration"));
    json_decref(v);
    v = json_integer(INT64_MAX / 10);
    cr_assert_eq(rb_duration_from_json(v, &ms, &err), RB_ERANGE);
    json_decref(v);
}

Test(duration, format_round_trips)
{
    char b[RB_DURATION_STRLEN];
    cr_assert_str_eq(rb_duration_format(0, b, sizeof b), "0s");
    cr_assert_str_eq(rb_duration_format(250, b, sizeof b), "250ms");
    cr_assert_str_eq(rb_duration_format(90000, b, sizeof b), "1m30s");
    cr_assert_str_eq(rb_duration_format(93600000, b, sizeof b), "1d2h");
    cr_assert_str_eq(rb_duration_format(-5000, b, sizeof b), "-5s");
    cr_assert_str_eq(rb_duration_format(INT64_MIN, b, sizeof b), "-106751991167d7h12m55s808ms");
    const int64_t vals[] = {1, 999, 1000, 61001, 3600000, 86400000, 123456789012, INT64_MAX,
                            -1, -86400001, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        int64_t back = 0;
        rb_duration_format(vals[i], b, sizeof b);
        cr_assert_eq(rb_duration_parse(b, &back, NULL), 0, "%s", b);
        cr_assert_eq(back, vals[i], "%s", b);
    }
}
