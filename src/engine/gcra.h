/* Rate buckets as GCRA (the generic cell rate algorithm): one number of
 * state per bucket, its theoretical arrival time (TAT, microseconds; 0 is
 * a full bucket). For rate starts per period with burst extra: emission
 * interval T = ceil(period / rate), tolerance tau = burst * T. Bound (the
 * reason T rounds up): in any half-open window of one period at most
 * rate + burst starts conform. docs/flow-control.md says why GCRA and not
 * a token bucket or a window. Pure: no clocks (times are arguments), any
 * thread. */
#ifndef RB_ENGINE_GCRA_H
#define RB_ENGINE_GCRA_H

#include <stdbool.h>
#include <stdint.h>

/* The largest rate and burst accepted (config, GROUP SET). */
#define RB_GCRA_MAX_RATE 1000000
/* A period's bounds in milliseconds: 1 s (so that T >= 1 us at the
 * largest rate) to 7 days. */
#define RB_GCRA_MIN_PERIOD_MS 1000
#define RB_GCRA_MAX_PERIOD_MS (7LL * 86400 * 1000)

typedef struct rb_gcra {
    int64_t t_us;   /* emission interval; 0: no rate (every start conforms) */
    int64_t tau_us; /* burst tolerance */
} rb_gcra;

/* The bucket of rate starts per period_ms with burst (rate 0: none).
 * rate 1..RB_GCRA_MAX_RATE, period_ms within the bounds above, burst
 * 0..RB_GCRA_MAX_RATE (the caller checked them). */
void rb_gcra_init(rb_gcra *g, int64_t rate, int64_t period_ms, int64_t burst);

/* Whether a start at now_us conforms to the bucket in state tat_us. */
bool rb_gcra_conforms(const rb_gcra *g, int64_t tat_us, int64_t now_us);

/* The state after a start at now_us (whether or not it conformed):
 * max(tat, now) + T, saturating at INT64_MAX. */
int64_t rb_gcra_start(const rb_gcra *g, int64_t tat_us, int64_t now_us);

/* The first time a start conforms: TAT - tau (<= now: at once). */
int64_t rb_gcra_next_us(const rb_gcra *g, int64_t tat_us);

/* How many starts conform one after another at now_us (INT64_MAX without
 * a rate). */
int64_t rb_gcra_available(const rb_gcra *g, int64_t tat_us, int64_t now_us);

#endif
