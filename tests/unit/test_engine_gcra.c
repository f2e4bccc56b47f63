/* GCRA rate buckets (engine/gcra.h): conformance, the state after a start,
 * the next conforming time, starts available at once, and the documented
 * bound (at most rate + burst starts in any window of one period) over
 * random arrival sequences. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "engine/gcra.h"

#define S 1000000LL /* a second in microseconds */

Test(engine_gcra, no_rate_always_conforms)
{
    rb_gcra g;
    rb_gcra_init(&g, 0, 1000, 5);
    cr_assert_eq(g.t_us, 0);
    cr_assert(rb_gcra_conforms(&g, INT64_MAX, 0));
    cr_assert_eq(rb_gcra_start(&g, 123, 456), 123);
    cr_assert_eq(rb_gcra_available(&g, 0, 0), INT64_MAX);
}

Test(engine_gcra, interval_rounds_up)
{
    rb_gcra g;
    rb_gcra_init(&g, 3, 1000, 0);
    cr_assert_eq(g.t_us, 333334); /* 3 x 333,333 would let a 4th start in the same second */
    rb_gcra_init(&g, 1000000, 1000, 2);
    cr_assert_eq(g.t_us, 1);
    cr_assert_eq(g.tau_us, 2);
    rb_gcra_init(&g, 50, 1000, 10);
    cr_assert_eq(g.t_us, 20000);
    cr_assert_eq(g.tau_us, 200000);
}

Test(engine_gcra, starts_without_burst_are_spaced)
{
    rb_gcra g;
    rb_gcra_init(&g, 10, 1000, 0); /* T = 100 ms */
    int64_t tat = 0, now = 50 * S;
    cr_assert(rb_gcra_conforms(&g, tat, now)); /* a full bucket */
    cr_assert_eq(rb_gcra_available(&g, tat, now), 1);
    tat = rb_gcra_start(&g, tat, now);
    cr_assert_eq(tat, now + 100000);
    cr_assert_not(rb_gcra_conforms(&g, tat, now));
    cr_assert_not(rb_gcra_conforms(&g, tat, now + 99999));
    cr_assert_eq(rb_gcra_next_us(&g, tat), now + 100000);
    cr_assert(rb_gcra_conforms(&g, tat, now + 100000));
    cr_assert_eq(rb_gcra_available(&g, tat, now + 50000), 0);
    /* idle for long: the bucket refills, no credit beyond it */
    cr_assert_eq(rb_gcra_available(&g, tat, now + 100 * S), 1);
}

Test(engine_gcra, burst_allows_that_many_more_at_once)
{
    rb_gcra g;
    rb_gcra_init(&g, 10, 1000, 4); /* T = 100 ms, tau = 400 ms */
    int64_t tat = 0, now = 10 * S;
    cr_assert_eq(rb_gcra_available(&g, tat, now), 5);
    int n = 0;
    while (rb_gcra_conforms(&g, tat, now)) {
        tat = rb_gcra_start(&g, tat, now);
        n++;
    }
    cr_assert_eq(n, 5);
    cr_assert_eq(rb_gcra_next_us(&g, tat), now + 100000);
    cr_assert_eq(rb_gcra_available(&g, tat, now + 250000), 2);
}

Test(engine_gcra, saturates_near_the_end_of_time)
{
    rb_gcra g;
    rb_gcra_init(&g, 1, 7LL * 86400 * 1000, 0);
    cr_assert_eq(rb_gcra_start(&g, INT64_MAX - 5, 0), INT64_MAX);
    cr_assert_not(rb_gcra_conforms(&g, INT64_MAX, INT64_MAX - g.t_us - 1));
}

/* Counts the most starts any half-open window [t, t + period) holds: the
 * window starting at each start is the worst one beginning there. */
static int max_in_window(const int64_t *t, int n, int64_t period_us)
{
    int best = 0, j = 0;
    for (int i = 0; i < n; i++) {
        while (j < n && t[j] < t[i] + period_us)
            j++;
        if (j - i > best)
            best = j - i;
    }
    return best;
}

Test(engine_gcra, bound_holds_over_random_arrivals)
{
    static const struct {
        int64_t rate, period_ms, burst;
    } cases[] = {{50, 1000, 0}, {3, 1000, 0}, {7, 3000, 2}, {100, 60000, 10}, {1, 1000, 0},
                 {999, 1000, 1}};
    srand(20260601);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rb_gcra g;
        rb_gcra_init(&g, cases[c].rate, cases[c].period_ms, cases[c].burst);
        int64_t period_us = cases[c].period_ms * 1000;
        enum { ARRIVALS = 20000 };
        int64_t *starts = malloc(sizeof *starts * ARRIVALS);
        int n = 0;
        int64_t tat = 0, now = 1000 * S;
        /* arrivals in bursts and lulls, mostly faster than the rate, and
         * often exactly at the next conforming time (a held group's timer) */
        for (int i = 0; i < ARRIVALS; i++) {
            int r = rand() % 100;
            if (r < 30 && rb_gcra_next_us(&g, tat) > now)
                now = rb_gcra_next_us(&g, tat);
            else
                now += r < 80   ? rand() % (g.t_us + 1) / 4
                       : r < 95 ? rand() % (2 * g.t_us + 1)
                                : rand() % (3 * period_us + 1);
            if (rb_gcra_conforms(&g, tat, now)) {
                tat = rb_gcra_start(&g, tat, now);
                starts[n++] = now;
            }
        }
        int most = max_in_window(starts, n, period_us);
        cr_assert_leq(most, cases[c].rate + cases[c].burst,
                      "rate %lld/%lld ms burst %lld: %d starts in one window",
                      (long long)cases[c].rate, (long long)cases[c].period_ms,
                      (long long)cases[c].burst, most);
        cr_assert_gt(n, 0);
        free(starts);
    }
}
