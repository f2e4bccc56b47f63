/* The job engine's metrics: the counters every backend bumps as jobs move
 * (pushed, processed, failed, retried, dead, discarded, expired, by queue
 * and job type), the histograms (applied retry delays, scheduler
 * lateness, commit batch sizes and commit time), distributed mode's claim
 * counts, and a per-second throughput history for the dashboard. The
 * server writes them out (server/metrics.h). Loop thread only. */
#ifndef RB_ENGINE_METRICS_H
#define RB_ENGINE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rb_metrics rb_metrics;
typedef enum rb_metric_event {
    RB_M_PUSHED,    /* a PUSHed job became visible (its commit is done) */
    RB_M_PROCESSED, /* ACKed */
    RB_M_FAILED,    /* an execution failed (FAIL or an expired reservation) */
    RB_M_RETRIED,   /* ... and the policy scheduled a retry */
    RB_M_DEAD,      /* ... and the job is dead (exhausted, non-retryable, caught) */
    RB_M_DISCARDED, /* ... and the job was discarded */
    RB_M_EXPIRED,   /* dropped unrun: its custom.expires_at passed (engine/unique.h) */
    RB_M_DEBOUNCED, /* a push merged into its key's pending job (engine/debounce.h) */
    RB_M_EVENTS
} rb_metric_event;

/* Distinct (queue, job type) label pairs kept; events of further pairs are
 * counted under job type "_other" so a flood of names cannot grow memory. */
#define RB_METRICS_MAX_SERIES 2000
/* Seconds of throughput history kept for the dashboard. */
#define RB_METRICS_HISTORY 300

rb_metrics *rb_metrics_new(void);
/* Frees m; NULL is a no-op. */
void rb_metrics_free(rb_metrics *m);

/* Counts one event for a job of queue (NULL: "unknown") whose JSON text is
 * json (NULL: job type "unknown"). Every hook below is a no-op when m is
 * NULL. */
void rb_metrics_event(rb_metrics *m, rb_metric_event ev, const char *queue, const char *json);
/* Counts one event for a job of queue (NULL or "": "unknown") whose job
 * type is the decoded text jobtype (NULL or "": "unknown"), as distributed
 * mode's engine reports it. The label is the one rb_metrics_event gives
 * for the stored job's JSON text: the type as the server's JSON encoder
 * writes it (quotes, backslashes and control characters escaped), cut at
 * 127 bytes. */
void rb_metrics_event_labels(rb_metrics *m, rb_metric_event ev, const char *queue,
                             const char *jobtype);
/* A retry was scheduled delay_ms later (backoff_delay_applied_seconds). */
void rb_metrics_retry_delay(rb_metrics *m, int64_t delay_ms);
/* A scheduled or retrying job was moved to its queue late_ms after its time. */
void rb_metrics_lateness(rb_metrics *m, int64_t late_ms);
/* A commit finished: n_ops row writes, its COMMIT (with the fsync) took
 * commit_us. Signature of rb_writer_stats_fn, arg = the rb_metrics. */
void rb_metrics_commit(void *m, size_t n_ops, int64_t commit_us);

/* Distributed mode ran claim statements for FETCHes (wake: for FETCHes
 * parked and woken, else for FETCHes just received), `empty` of them
 * finding no job (rebound_fetch_claims_total and _empty_total). */
void rb_metrics_claims(rb_metrics *m, bool wake, size_t statements, size_t empty);

/* The sum of an event's counter over every label pair since start. */
uint64_t rb_metrics_total(const rb_metrics *m, rb_metric_event ev);

/* Records the current totals for second now_s (call about once a second). */
void rb_metrics_sample(rb_metrics *m, int64_t now_s);
/* Calls fn for every recorded second, oldest first, with the events of that
 * second (pushed, processed, failed) as differences from the one before. */
void rb_metrics_history(const rb_metrics *m,
                        void (*fn)(void *arg, int64_t t_s, uint64_t pushed, uint64_t processed,
                                   uint64_t failed),
                        void *arg);

/* The "jobtype" of a top-level JSON object text, copied into out (at most
 * outlen-1 bytes, escapes left as written); "unknown" when absent. A key of
 * that name inside a nested value is not taken. */
void rb_metrics_jobtype(const char *json, char *out, size_t outlen);

#endif
