/* The layout behind rb_metrics, shared by engine/metrics.c (updates) and
 * server/metrics_text.c (exposition). Not for other files. */
#ifndef RB_ENGINE_METRICS_IMPL_H
#define RB_ENGINE_METRICS_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/table.h"
#include "engine/metrics.h"

/* A histogram with fixed upper bounds; buckets[n] is the +Inf bucket.
 * Counts are per bucket (made cumulative when written out). */
typedef struct rb_histogram {
    const double *bounds;
    size_t n;
    uint64_t buckets[24];
    uint64_t count;
    double sum;
} rb_histogram;

void rb_histogram_observe(rb_histogram *h, double v);

/* The counters of one (queue, job type) pair. key is "QUEUE\x1fJOBTYPE". */
typedef struct rb_series {
    void *hnext;
    const char *jobtype; /* into key */
    size_t qlen;         /* the queue name is key[0 .. qlen) */
    uint64_t n[RB_M_EVENTS];
    char key[];
} rb_series;

typedef struct rb_sample {
    int64_t t_s;
    uint64_t pushed, processed, failed;
} rb_sample;

struct rb_metrics {
    rb_table series;
    uint64_t totals[RB_M_EVENTS];
    rb_histogram retry_delay, lateness, batch_ops, commit_s;
    uint64_t claims[2], claims_empty[2]; /* [0] FETCH received, [1] wake (distributed mode) */
    rb_sample hist[RB_METRICS_HISTORY]; /* ring: n_hist samples from hist_start */
    size_t hist_start, n_hist;
};

#endif
