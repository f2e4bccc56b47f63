/* Prometheus metrics: the text exposition /metrics serves, of the engine's
 * counters (engine/metrics.h), the server's connections and workers, and
 * the job state the engine's INFO gives. Loop thread only. */
#ifndef RB_SERVER_METRICS_H
#define RB_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"
#include "engine/metrics.h"

struct rb_srv;

/* The job-state part of the exposition given as numbers (the job engine's
 * INFO figures: the node's memory, or the cluster's database). Strings
 * borrowed. */
typedef struct rb_metrics_queue {
    const char *name;
    int64_t size;
    bool paused;
    double latency_s;
} rb_metrics_queue;
/* A queue throttle ([throttles.QUEUE], engine/throttle.h): its limit and
 * timeout from the configuration, its slots in use as the engine counts
 * them (in_use < 0: the backend reports none). */
typedef struct rb_metrics_throttle {
    const char *queue;
    int64_t concurrency, timeout_s, in_use;
    int64_t rate, period_ms, burst; /* its rate (rate 0: none) */
} rb_metrics_throttle;
typedef struct rb_metrics_state {
    const rb_metrics_queue *queues;
    size_t n_queues;
    int64_t scheduled, enqueued, working, retries, dead;
    int64_t waiting, blocked; /* job dependencies (docs/workflows.md) */
    /* batches (docs/workflows.md): false where the backend keeps none */
    bool has_batches;
    int64_t batches_open, batch_callbacks;
    /* unique jobs (docs/enterprise.md): false where the backend keeps none */
    bool has_unique;
    int64_t unique_locks, unique_rejected;
    /* expiring jobs dropped, all time (the store's counter): false where
     * the backend keeps none */
    bool has_expired;
    int64_t expired;
    const rb_metrics_throttle *throttles; /* every configured one */
    size_t n_throttles;
    /* INFO's rebound.groups (docs/protocol.md), NULL where the backend
     * keeps no groups: borrowed */
    const json_t *groups;
    /* the store could not be read (distributed mode, its database
     * unreachable): the queue and job figures above are unknown and left
     * out; the node's own are rendered */
    bool jobs_unknown;
    /* the store's link (distributed mode; false elsewhere): up, when its
     * state began, its last successful commit (wall ms, 0: none) */
    bool has_link, link_up;
    int64_t link_since_ms, last_commit_ms;
} rb_metrics_state;
/* Appends the Prometheus text exposition (format 0.0.4) of m, of srv's
 * connections and workers, and of the job state st (the job engine's INFO
 * figures: the node's memory, or the cluster's database; http.c) to out. */
void rb_metrics_render_state(const rb_metrics *m, const struct rb_srv *srv,
                             const rb_metrics_state *st, rb_buf *out);

#endif
