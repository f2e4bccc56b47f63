/* The pure rules of cron (engine/cron.h): the five-field syntax, the macros,
 * errors with their column, and the next tick in UTC and in zones with
 * daylight saving time. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/cron.h"

/* Seconds of an RFC 3339 text. */
static int64_t T(const char *s)
{
    int64_t ms = 0;
    cr_assert_eq(rb_time_parse_rfc3339(s, &ms), 0, "bad test time %s", s);
    return ms / 1000;
}

static const char *fmt(int64_t s, char *buf)
{
    return rb_time_format(s * 1000, buf);
}

/* The next tick of sched after `after` in tz, as text ("none" when none). */
static void expect_next(const char *sched, const char *tz, const char *after, const char *want)
{
    rb_cron_spec s;
    rb_err err = {0};
    cr_assert_eq(rb_cron_parse(sched, &s, &err), 0, "%s: %s", sched, rb_err_msg(&err));
    int64_t next = 0;
    int rc = rb_cron_next(&s, tz, T(after), &next);
    char buf[RB_TIME_STRLEN];
    const char *got = rc == 0 ? fmt(next, buf) : "none";
    cr_assert_str_eq(got, want, "'%s' in %s after %s", sched, tz ? tz : "UTC", after);
}

static void expect_error(const char *sched, const char *want)
{
    rb_cron_spec s;
    rb_err err = {0};
    cr_assert_eq(rb_cron_parse(sched, &s, &err), RB_EPARSE, "'%s' accepted", sched);
    cr_assert(strstr(rb_err_msg(&err), want), "'%s': got '%s', want '%s'", sched,
              rb_err_msg(&err), want);
}

Test(engine_cron, parses_fields_lists_ranges_steps_and_names)
{
    rb_cron_spec s;
    cr_assert_eq(rb_cron_parse("*/15 9-17 * * mon-fri", &s, NULL), 0);
    cr_assert_eq(s.minute, 1ull | 1ull << 15 | 1ull << 30 | 1ull << 45);
    cr_assert_eq(s.hour, 0x3fe00u);
    cr_assert_eq(s.dow, 0x3eu);
    cr_assert(s.dom_star && !s.dow_star && !s.hour_star);
    cr_assert_eq(rb_cron_parse("0,30 0 1,15 JAN,jul 7", &s, NULL), 0);
    cr_assert_eq(s.month, 1u << 1 | 1u << 7);
    cr_assert_eq(s.dow, 1u); /* 7 = Sunday */
    cr_assert_eq(rb_cron_parse("5/20 * * * 5-7", &s, NULL), 0);
    cr_assert_eq(s.minute, 1ull << 5 | 1ull << 25 | 1ull << 45);
    cr_assert_eq(s.dow, 1u | 1u << 5 | 1u << 6);
    cr_assert_eq(rb_cron_parse("\t0  *\t* * *  ", &s, NULL), 0);
    cr_assert(s.hour_star);
    cr_assert_eq(rb_cron_parse("1-10/3 * * * *", &s, NULL), 0);
    cr_assert_eq(s.minute, 1ull << 1 | 1ull << 4 | 1ull << 7 | 1ull << 10);
}

Test(engine_cron, macros)
{
    const char *pairs[][2] = {{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
                              {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
                              {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
                              {"@hourly", "0 * * * *"},  {" @HOURLY ", "0 * * * *"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        rb_cron_spec a, b;
        cr_assert_eq(rb_cron_parse(pairs[i][0], &a, NULL), 0, "%s", pairs[i][0]);
        cr_assert_eq(rb_cron_parse(pairs[i][1], &b, NULL), 0);
        cr_assert(!memcmp(&a, &b, sizeof a), "%s", pairs[i][0]);
    }
}

Test(engine_cron, errors_name_the_column)
{
    expect_error("", "column 1: expected five fields");
    expect_error("* * * *", "column 8: expected five fields");
    expect_error("* * * * * *", "column 11: more than five fields");
    expect_error("60 * * * *", "column 1: minute 60 out of range 0-59");
    expect_error("0 24 * * *", "column 3: hour 24 out of range 0-23");
    expect_error("0 0 0 * *", "column 5: day of month 0 out of range 1-31");
    expect_error("0 0 1 13 *", "column 7: month 13 out of range 1-12");
    expect_error("0 0 * * 8", "column 9: day of week 8 out of range 0-7");
    expect_error("0 0 * foo *", "column 7: unknown month name 'foo'");
    expect_error("0 0 * * funday", "column 9: unknown day of week name 'funday'");
    expect_error("*/0 * * * *", "column 3: minute step must be a number from 1 to 59");
    expect_error("*/ * * * *", "column 3: minute step");
    expect_error("10-5 * * * *", "column 1: minute range 10-5 is backwards");
    expect_error("1,,2 * * * *", "column 3: expected a minute number");
    expect_error("1, * * * *", "column 2: unexpected ','");
    expect_error("0 x * * *", "column 3: expected a hour number, got 'x'");
    expect_error("@every 5m", "column 1: unknown '@every'");
    expect_error("@daily 5", "column 8: unexpected text after @daily");
    expect_error("1-2-3 * * * *", "column 4: unexpected '-'");
}

Test(engine_cron, next_in_utc)
{
    expect_next("*/5 * * * *", NULL, "2026-11-25T10:02:30Z", "2026-11-25T10:05:00.000Z");
    expect_next("*/5 * * * *", "UTC", "2026-11-25T10:05:00Z", "2026-11-25T10:10:00.000Z");
    expect_next("* * * * *", NULL, "2026-11-25T23:59:59Z", "2026-11-26T00:00:00.000Z");
    expect_next("@hourly", NULL, "2026-11-25T10:00:00Z", "2026-11-25T11:00:00.000Z");
    expect_next("@daily", NULL, "2026-12-31T12:00:00Z", "2027-01-01T00:00:00.000Z");
    expect_next("@yearly", NULL, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00.000Z");
    expect_next("@monthly", NULL, "2026-01-31T10:00:00Z", "2026-02-01T00:00:00.000Z");
    expect_next("@weekly", NULL, "2026-11-25T10:00:00Z", "2026-11-29T00:00:00.000Z");
    expect_next("30 9 * * mon-fri", NULL, "2026-11-27T10:00:00Z", "2026-11-30T09:30:00.000Z");
    expect_next("0 0 31 * *", NULL, "2026-04-01T00:00:00Z", "2026-05-31T00:00:00.000Z");
    expect_next("0 0 31 2 *", NULL, "2026-01-01T00:00:00Z", "none");
    expect_next("0 12 * * *", NULL, "1969-12-31T11:00:00Z", "1969-12-31T12:00:00.000Z");
}

Test(engine_cron, february_29)
{
    expect_next("0 0 29 2 *", NULL, "2026-03-01T00:00:00Z", "2028-02-29T00:00:00.000Z");
    expect_next("0 0 29 2 *", NULL, "2028-02-29T00:00:00Z", "2032-02-29T00:00:00.000Z");
    expect_next("15 6 29 feb *", "Europe/Berlin", "2099-03-01T00:00:00Z",
                "2104-02-29T05:15:00.000Z");
}

Test(engine_cron, vixie_day_rule)
{
    /* Both restricted: the 13th or any Friday. 2026-11-13 is a Friday; the
     * next after it is Friday the 20th, then the 27th, then December 4th
     * (Friday), and 2026-12-13 (a Sunday). */
    expect_next("0 0 13 * fri", NULL, "2026-11-13T00:00:00Z", "2026-11-20T00:00:00.000Z");
    expect_next("0 0 13 * 5", NULL, "2026-12-05T00:00:00Z", "2026-12-11T00:00:00.000Z");
    expect_next("0 0 13 * 5", NULL, "2026-12-11T00:00:00Z", "2026-12-13T00:00:00.000Z");
    /* One of them '*': both must match. */
    expect_next("0 0 * * fri", NULL, "2026-11-13T00:00:00Z", "2026-11-20T00:00:00.000Z");
    expect_next("0 0 13 * *", NULL, "2026-11-13T00:00:00Z", "2026-12-13T00:00:00.000Z");
    /* "*\/2" counts as '*' (Vixie looks at the first character). */
    expect_next("0 0 */2 * mon", NULL, "2026-11-25T00:00:00Z", "2026-12-07T00:00:00.000Z");
}

Test(engine_cron, time_zones)
{
    /* 09:00 in New York in November is 14:00 UTC (EST). */
    expect_next("0 9 * * *", "America/New_York", "2026-11-25T10:00:00Z",
                "2026-11-25T14:00:00.000Z");
    /* In July, 13:00 UTC (EDT). */
    expect_next("0 9 * * *", "America/New_York", "2026-07-01T00:00:00Z",
                "2026-07-01T13:00:00.000Z");
    /* Berlin: midnight local on New Year is 23:00 UTC the day before. */
    expect_next("@yearly", "Europe/Berlin", "2026-06-01T00:00:00Z", "2026-12-31T23:00:00.000Z");
    expect_next("0 0 * * *", "Asia/Kolkata", "2026-11-25T00:00:00Z", "2026-11-25T18:30:00.000Z");
    /* TZ is left as it was. */
    cr_assert_null(getenv("TZ"));
    rb_cron_spec s;
    int64_t n;
    cr_assert_eq(rb_cron_parse("* * * * *", &s, NULL), 0);
    cr_assert_eq(rb_cron_next(&s, "Mars/Olympus", 0, &n), RB_EINVAL);
}

Test(engine_cron, spring_forward_fires_once_after_the_gap)
{
    /* 2026-03-08: New York skips 02:00-02:59 (07:00 UTC is 03:00 EDT). */
    expect_next("30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z",
                "2026-03-08T07:00:00.000Z");
    expect_next("30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z",
                "2026-03-09T06:30:00.000Z");
    /* Every 15 minutes: 01:45 EST, then once at 03:00 EDT, then 03:15. */
    expect_next("*/15 * * * *", "America/New_York", "2026-03-08T06:45:00Z",
                "2026-03-08T07:00:00.000Z");
    expect_next("*/15 * * * *", "America/New_York", "2026-03-08T07:00:00Z",
                "2026-03-08T07:15:00.000Z");
    /* Berlin 2026-03-29: 02:00-02:59 skipped (01:00 UTC is 03:00 CEST). */
    expect_next("0 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00.000Z");
    expect_next("0 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00.000Z");
    /* A schedule outside the gap is not moved. */
    expect_next("0 3 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00.000Z");
}

Test(engine_cron, fall_back_fires_once)
{
    /* 2026-11-01: New York repeats 01:00-01:59 (05:xx EDT, then 06:xx EST). */
    expect_next("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z",
                "2026-11-01T05:30:00.000Z");
    expect_next("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z",
                "2026-11-02T06:30:00.000Z");
    /* Berlin 2026-10-25: 02:00-02:59 twice (00:xx UTC CEST, 01:xx UTC CET). */
    expect_next("15 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", "2026-10-25T00:15:00.000Z");
    expect_next("15 2 * * *", "Europe/Berlin", "2026-10-25T00:15:00Z", "2026-10-26T01:15:00.000Z");
    /* The hour field '*': every real hour fires, the repeated one too. */
    expect_next("15 * * * *", "Europe/Berlin", "2026-10-25T00:15:00Z", "2026-10-25T01:15:00.000Z");
}

Test(engine_cron, zone_names)
{
    cr_assert(rb_cron_zone_valid("UTC"));
    cr_assert(rb_cron_zone_valid("Europe/Berlin"));
    cr_assert(rb_cron_zone_valid("America/New_York"));
    cr_assert(!rb_cron_zone_valid(""));
    cr_assert(!rb_cron_zone_valid(NULL));
    cr_assert(!rb_cron_zone_valid("Europe/Nowhere"));
    cr_assert(!rb_cron_zone_valid("/etc/passwd"));
    cr_assert(!rb_cron_zone_valid("../../etc/passwd"));
    cr_assert(!rb_cron_zone_valid("Europe")); /* a directory */
    cr_assert(!rb_cron_zone_valid("EST5EDT,M3.2.0,M11.1.0"));
}

/* After downtime (rb_cron_catch_up): skip fires nothing, run_once the
 * latest missed tick; nothing missed or a new entry fires nothing. */
Test(engine_cron, catch_up_after_downtime)
{
    rb_cron_spec s;
    rb_err err = {0};
    cr_assert_eq(rb_cron_parse("*/15 * * * *", &s, &err), 0);
    bool missed = true;
    int64_t last = T("2026-03-08T06:00:00Z");
    /* nothing missed: the next tick (06:15) is still ahead */
    cr_assert_eq(rb_cron_catch_up(&s, NULL, true, last, T("2026-03-08T06:14:59Z"), &missed), 0);
    cr_assert(!missed);
    /* 06:15 .. 07:00 missed: skip fires none, run_once the latest (07:00) */
    cr_assert_eq(rb_cron_catch_up(&s, NULL, false, last, T("2026-03-08T07:01:00Z"), &missed), 0);
    cr_assert(missed);
    cr_assert_eq(rb_cron_catch_up(&s, NULL, true, last, T("2026-03-08T07:01:00Z"), &missed),
                 T("2026-03-08T07:00:00Z"));
    cr_assert(missed);
    /* the tick at now itself counts as missed */
    cr_assert_eq(rb_cron_catch_up(&s, NULL, true, last, T("2026-03-08T06:15:00Z"), &missed),
                 T("2026-03-08T06:15:00Z"));
    /* a new entry (no stored tick) starts with its next tick */
    cr_assert_eq(rb_cron_catch_up(&s, NULL, true, 0, T("2026-03-08T07:01:00Z"), &missed), 0);
    cr_assert(!missed);
}
