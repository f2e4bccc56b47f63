/* What the job engine's reads return, whichever backend answers (the
 * in-memory indexes or PostgreSQL, backend/pg/sql.h, which fills these
 * types directly): a stored job as JOB, JOBS and the HTTP API show it, a
 * listing's filter, a queue's size; and the JSON of JOB and JOBS, built
 * once for both. Plain data and pure functions: any thread may use them. */
#ifndef RB_ENGINE_READS_H
#define RB_ENGINE_READS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* One stored job. Strings owned (rb_job_view_release). */
typedef struct rb_job_view {
    char *jid, *queue;
    char *json;    /* as clients see it: created_at and enqueued_at included */
    char *history; /* JSON array text of the failed attempts, or NULL */
    char *wid;     /* holder while working, or NULL */
    int state;     /* an rb_job_state, never PENDING */
    int priority, attempts, reserve_s, flags;
    int64_t due_ms;   /* run at / lease end / retention end; enqueue time when enqueued */
    int64_t first_ms; /* first enqueue, 0 when never enqueued */
    char *waits_for;  /* waiting/blocked: JSON array text of the parents not
                         done yet, or NULL */
    char *blocked_by; /* blocked: the dead parent that blocks it, or NULL */
    int64_t lock_until_ms; /* JOB: when the unique lock it holds runs out
                              (engine/unique.h; may have passed), 0 when it
                              holds none; 0 in listings */
    /* JOB: why an enqueued job is held back now (flow control, computed at
     * read time, never stored; 0 in listings): hold_by "group" or "queue"
     * (NULL: nothing holds it), hold the reason ("concurrency", "rate",
     * "paused"), hold_until_ms its end when known (0: none), hold_detail a
     * sentence for people ("group acme runs 2 of 2"); static names, the
     * detail owned. */
    const char *hold_by, *hold;
    int64_t hold_until_ms;
    char *hold_detail;
} rb_job_view;

/* Frees j's strings and zeroes it. */
void rb_job_view_release(rb_job_view *j);
/* Releases n views and frees the array (NULL is fine). */
void rb_job_views_free(rb_job_view *v, size_t n);

/* JOBS's entry for j: {"state", "job", "attempts"} (docs/protocol.md). The
 * caller owns the result. */
json_t *rb_job_view_json(const rb_job_view *j);
/* JOB's reply for j: JOBS's entry plus "history", "next_at", for a
 * working job "reserved_until" and "wid", and for a waiting or blocked one
 * "waits_for" (the parents not done) and "blocked_by" (a dead parent, or
 * null); "group" (its custom.group, null when ungrouped) and "held" (null,
 * or {"by", "reason", "detail", "until"} from the view's hold). The
 * caller owns the result. */
json_t *rb_job_view_detail(const rb_job_view *j);

/* A listing's request (JOBS, GET /api/jobs). Strings borrowed. Order, in
 * both backends: enqueued jobs by queue name (bytewise), then priority
 * (high first), then FIFO; the other states by deadline (run time, lease
 * end, retention end), earliest first, ties in push order. */
typedef struct rb_job_filter {
    int state;                             /* required: an rb_job_state but PENDING */
    const char *queue, *jobtype, *errtype; /* NULL = any */
    const char *group;                     /* custom.group; NULL = any */
    int64_t offset, limit;                 /* the page: matches [offset, offset + limit) */
} rb_job_filter;

/* Whether a job of f's state in queue, with this JSON text, passes f's
 * queue, job type and last-failure errtype filters (what PostgreSQL's
 * query selects). */
bool rb_job_filter_matches(const rb_job_filter *f, const char *queue, const char *json);

/* One queue as INFO lists it. */
typedef struct rb_queue_size {
    char *name; /* owned */
    int64_t size;
    bool paused;
} rb_queue_size;

#endif
