/* The SQLite backend's state (one per server): the in-memory job indexes
 * over the SQLite store, the group-commit writer, and the single node's
 * side tables (dependencies, batches, unique locks, progress records,
 * throttles, cron ticks). Shared by the backend's files; nothing outside
 * src/backend/sqlite/ sees inside it (the server holds it as the engine's
 * opaque backend handle). Loop thread only, but for the writer thread's
 * side of `writer` (writer.h). */
#ifndef RB_BACKEND_SQLITE_SQ_H
#define RB_BACKEND_SQLITE_SQ_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "backend/sqlite/deps.h"
#include "backend/sqlite/jobs.h"
#include "backend/sqlite/store.h"
#include "backend/sqlite/writer.h"
#include "common/table.h"
#include "config/config.h"
#include "engine/metrics.h"
#include "engine/engine.h"
#include "policy/rng.h"

typedef struct rb_eng rb_eng;
typedef struct rb_sq_unique rb_sq_unique;     /* unique.h */
typedef struct rb_sq_track rb_sq_track;       /* track.h */
typedef struct rb_sq_throttle rb_sq_throttle; /* throttle.h */
typedef struct rb_sq_groups rb_sq_groups;     /* groups.h */
typedef struct rb_sq_group_confs rb_sq_group_confs; /* groups.h, group_conf.c */

typedef struct rb_sq {
    rb_eng *eng;              /* the engine's context this backend serves */
    const rb_config *cfg;     /* the server's configuration */
    rb_metrics *metrics;      /* the engine's counters */
    struct event_base *base;  /* the loop, from rb_sq_attach on */
    rb_store *store;          /* owned: closed by rb_sq_free */
    rb_writer *writer;        /* the group-commit thread */
    struct event *writer_ev;  /* the writer's completions (its fd) */
    struct event *flush_ev;   /* hands the open batch to the writer */
    struct event *timer_ev;   /* the earliest deadline (core.c) */
    int64_t armed_ms;         /* deadline timer_ev is set for, INT64_MAX when unset */
    rb_jobs jobs;
    rb_deps deps;             /* job dependencies (deps.h) */
    rb_rng rng;               /* jids of jobs the backend makes */
    int64_t total_processed, total_failures;
    /* Faktory Enterprise batches by bid (batch.h) */
    rb_table batches;
    /* The jids pushed into each batch, by bid, for its page (batch.c): a
     * superset of its stored members (checked when read), built by one
     * pass over the jobs at the first page read after start, then kept up
     * by each member's PUSH. */
    rb_table batch_members;
    bool batch_members_built;
    int64_t batch_callbacks;  /* callback jobs enqueued, all time (INFO) */
    struct event *batch_ev;   /* the expiry sweep, armed with the first batch */
    rb_sq_unique *unique;     /* unique locks, expiring jobs (unique.h) */
    json_t *cron_ticks;       /* the stored "cron:NAME" meta rows (key -> tick),
                                 a cron push's condition (backend.c) */
    rb_sq_track *track;       /* progress records (track.h) */
    rb_sq_throttle *throttle; /* throttles' fetch times (throttle.h) */
    rb_sq_groups *groups;     /* flow control's holds and buckets (groups.h) */
    rb_sq_group_confs *group_confs; /* groups' overrides and pauses (group_conf.c) */
} rb_sq;

/* The backend's state of the server eng (its engine handle). */
rb_sq *rb_sq_of(const rb_eng *eng);

/* --- open.c: rb_backend's life cycle (engine.h) --- */
int rb_sq_open(rb_eng *eng, rb_err *err);
void rb_sq_attach(rb_eng *eng);
void rb_sq_close(rb_eng *eng);
void rb_sq_release(rb_eng *eng);

/* --- core.c: the state machine over jobs + store --- */
/* The job's row to the current batch. */
void rb_sq_persist(rb_sq *sq, const rb_job *j);
/* Deletes the job from memory and the store. */
void rb_sq_forget(rb_sq *sq, rb_job *j);
void rb_sq_persist_counters(rb_sq *sq);
/* Makes j ENQUEUED now (setting enqueued_at), or SCHEDULED when at_ms is in
 * the future. Does not persist. */
void rb_sq_enqueue(rb_sq *sq, rb_job *j, int64_t at_ms, int64_t now);
/* Makes q a known queue (INFO lists it until QUEUE REMOVE), writing its
 * "queue:NAME" meta row into the open batch the first time; known false:
 * forgets it and deletes the row. A no-op when nothing changes. */
void rb_sq_queue_known(rb_sq *sq, rb_queue *q, bool known);
/* The single node's end of an op that changed something (backend.c, and
 * batch.c's BATCH): completes op once everything submitted so far is on
 * disk (or with the commit's error, applied unknown). */
void rb_sq_after_commit(rb_sq *sq, rb_eng_op *op);
/* Re-arms the timer for the earliest deadline. */
void rb_sq_arm(rb_sq *sq);
/* Reserves the first ready job of the given queues (in their order; paused
 * ones skipped) for the worker wid (NULL: none recorded) and persists it;
 * NULL when none is ready. */
rb_job *rb_sq_reserve(rb_sq *sq, const char *wid, char **queues, int n);
/* Puts the job jid, reserved by a FETCH whose commit failed, back in its
 * queue (the attempt not counted). */
void rb_sq_unreserve(rb_sq *sq, const char *jid);
/* After everything submitted so far is on disk (or its commit failed,
 * logged), the waiting FETCHes get another try. */
void rb_sq_commit_then_wake(rb_sq *sq);
/* Sets a top-level field of a job's JSON text (replacing it). */
void rb_job_set_field(rb_job *j, const char *key, json_t *value);
/* Creates a PENDING job from a job object rb_job_validate accepted, filling
 * in its defaults (queue), and persists it; the job engine's single-node
 * backend makes it visible after the commit (backend/sqlite/backend.c). 0, or
 * RB_EEXIST when the jid is taken (nothing is created). */
int rb_sq_push(rb_sq *sq, json_t *job);

/* --- fail.c --- */
/* Runs a failure of working job j through its policy (rb_fail_input:
 * engine/engine.h): retry, dead, discard or catch; persists the result. j
 * may be freed (discard). */
int rb_sq_fail_job(rb_sq *sq, rb_job *j, const rb_fail_input *in, int64_t now, rb_err *err);
/* The death of waiting or blocked job j because its parent failed
 * (docs/workflows.md): dead with reason "dependency" as a failure's death
 * (history, failure hash, its policy's catch job), then its own children
 * told. */
void rb_sq_dep_kill(rb_sq *sq, rb_job *j, const char *parent, int64_t now);


#endif
