/* Unit tests for src/common: errors, buffers, time parsing. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "policy/rng.h"

Test(error, codes_have_messages)
{
    cr_assert_str_eq(rb_strerror(RB_OK), "success");
    cr_assert_str_eq(rb_strerror(RB_EINVAL), "invalid argument");
    cr_assert_str_eq(rb_strerror(12345), "unknown error");
    rb_err e = {0};
    cr_assert_eq(rb_err_set(&e, RB_ERANGE, "'%s' too big", "x"), RB_ERANGE);
    rb_err_prefix(&e, "field %s", "f");
    cr_assert_str_eq(rb_err_msg(&e), "field f: 'x' too big");
}

Test(buf, grows_and_detaches)
{
    rb_buf b = RB_BUF_INIT;
    cr_assert_str_eq(rb_buf_str(&b), "");
    for (int i = 0; i < 1000; i++)
        rb_buf_printf(&b, "%d,", i);
    cr_assert(b.len > 2000);
    rb_buf_consume(&b, 2);
    cr_assert_eq(strncmp(b.data, "1,2,", 4), 0);
    size_t n;
    char *s = rb_buf_detach(&b, &n);
    cr_assert_eq(strlen(s), n);
    cr_assert_null(b.data);
    free(s);
    s = rb_buf_detach(&b, NULL);
    cr_assert_str_eq(s, "");
    free(s);
}

Test(time, rfc3339_round_trip)
{
    int64_t ms = 0;
    cr_assert_eq(rb_time_parse_rfc3339("1970-01-01T00:00:00Z", &ms), 0);
    cr_assert_eq(ms, 0);
    cr_assert_eq(rb_time_parse_rfc3339("2026-11-21T10:00:00.5+01:00", &ms), 0);
    char out[RB_TIME_STRLEN];
    cr_assert_str_eq(rb_time_format(ms, out), "2026-11-21T09:00:00.500Z");
    cr_assert_eq(rb_time_parse_rfc3339("2024-02-29T23:59:59.123456789Z", &ms), 0);
    cr_assert_str_eq(rb_time_format(ms, out), "2024-02-29T23:59:59.123Z");
}

/* A job's timestamps keep microseconds (issue 25), before 1970 too. */
Test(time, microseconds_formatted)
{
    char out[RB_TIME_STRLEN];
    cr_assert_str_eq(rb_time_format_us(1795856400123456LL, out), "2026-11-28T09:00:00.123456Z");
    cr_assert_str_eq(rb_time_format_us(0, out), "1970-01-01T00:00:00.000000Z");
    cr_assert_str_eq(rb_time_format_us(-1, out), "1969-12-31T23:59:59.999999Z");
    int64_t a = rb_now_us(), ms = rb_now_ms(), b = rb_now_us();
    cr_assert(a / 1000 <= ms && ms <= b / 1000 + 1, "%lld %lld %lld", (long long)a,
              (long long)ms, (long long)b);
    int64_t back = 0;
    cr_assert_eq(rb_time_parse_rfc3339(rb_time_format_us(a, out), &back), 0);
    cr_assert_eq(back, a / 1000);
    cr_assert_eq(rb_time_parse_rfc3339_us(out, &back), 0);
    cr_assert_eq(back, a);
    cr_assert_eq(rb_time_parse_rfc3339_us("2024-02-29T23:59:59.123456789+01:00", &back), 0);
    cr_assert_eq(back, 1709251199123456LL - 3600000000LL);
    cr_assert_eq(rb_time_parse_rfc3339("1969-12-31T23:59:59.9995Z", &back), 0);
    cr_assert_eq(back, -1); /* milliseconds round down, before 1970 too */
}

Test(time, rfc3339_rejects_garbage)
{
    int64_t ms = 42;
    const char *bad[] = {"", "2026-11-21", "2026-11-21T10:00:00", "2023-02-29T00:00:00Z",
                         "2026-13-01T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T10:00:00Zx",
                         "2026-11-21T10:00:00+0100", "2026-11-21T10:00:00.Z", "tomorrow"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(rb_time_parse_rfc3339(bad[i], &ms), RB_EPARSE, "%s", bad[i]);
    cr_assert_eq(ms, 42);
}

Test(time, http_date_three_forms)
{
    int64_t a, b, c, want;
    cr_assert_eq(rb_time_parse_rfc3339("1994-11-06T08:49:37Z", &want), 0);
    cr_assert_eq(rb_time_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &a), 0);
    cr_assert_eq(rb_time_parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", &b), 0);
    cr_assert_eq(rb_time_parse_http_date("Sun Nov  6 08:49:37 1994", &c), 0);
    cr_assert_eq(a, want);
    cr_assert_eq(b, want);
    cr_assert_eq(c, want);
}

Test(time, http_date_rejects_garbage)
{
    int64_t ms;
    const char *bad[] = {"", "120", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT",
                         "Foo, 06 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
                         "Sun, 06 Nov 1994 08:49 GMT", "Sun Nov  6 08:49:37 1994 extra"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(rb_time_parse_http_date(bad[i], &ms), RB_EPARSE, "%s", bad[i]);
}

Test(rng, seeded_is_reproducible_and_bounded)
{
    rb_rng a, b;
    rb_rng_seed(&a, 7);
    rb_rng_seed(&b, 7);
    for (int i = 0; i < 10000; i++) {
        int64_t x = rb_rng_range(&a, -3, 3);
        cr_assert_eq(x, rb_rng_range(&b, -3, 3));
        cr_assert(x >= -3 && x <= 3);
    }
    cr_assert_eq(rb_rng_range(&a, 5, 5), 5);
    cr_assert_eq(rb_rng_range(&a, 5, 1), 5);
}

/* The fault seam reads $REBOUND_FAULTS once, at the first question (each
 * Criterion test is a process of its own). */
Test(fault, reads_each_named_fault_once)
{
    setenv(RB_FAULTS_ENV, "pg.tick_ms=50,sqlite.fault_file=/tmp/x/full,bogus=1,cron.clock_rate",
           1);
    cr_assert_str_eq(rb_fault_get("sqlite.fault_file"), "/tmp/x/full");
    cr_assert_eq(rb_fault_int("pg.tick_ms", 0), 50);
    cr_assert_null(rb_fault_get("pg.batch_fault"), "not asked for");
    cr_assert_eq(rb_fault_int("pg.batch_fault", 7), 7);
    cr_assert_null(rb_fault_get("cron.clock_rate"), "an entry without '=' is ignored");
    setenv(RB_FAULTS_ENV, "pg.tick_ms=99", 1);
    cr_assert_eq(rb_fault_int("pg.tick_ms", 0), 50, "read once");
}

/* A name production code asks for is one of the list: a typo aborts. */
Test(fault, asking_for_an_unlisted_fault_aborts, .signal = SIGABRT)
{
    rb_fault_get("pg.tick");
}

Test(fault, none_without_the_variable)
{
    unsetenv(RB_FAULTS_ENV);
    cr_assert_null(rb_fault_get("sqlite.fault_file"));
    cr_assert_eq(rb_fault_int("cron.clock_offset_ms", 0), 0);
}
