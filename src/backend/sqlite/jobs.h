/* The job model and the in-memory indexes: a jid table, ready queues (per
 * queue its groups, each one FIFO per priority, and the turn order of the
 * groups with ready jobs), one list per other state, and one timer heap for
 * every deadline (scheduled time, retry time, reservation end, dead-job
 * expiry). Pure data structures: no I/O, no clocks. */
#ifndef RB_BACKEND_MEM_JOBS_H
#define RB_BACKEND_MEM_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/sqlite/heap.h"
#include "common/list.h"
#include "common/table.h"
#include "engine/gcra.h"
#include "engine/group.h"
#include "engine/job_state.h"

#define RB_PRIORITIES 9

typedef struct rb_queue rb_queue;
typedef struct rb_group rb_group;

/* A known queue (INFO lists it until QUEUE REMOVE) is stored as the meta
 * row RB_QUEUE_META_KEY + its name, value "1". */
#define RB_QUEUE_META_KEY "queue:"

/* One job, compact: the job's JSON is one string, everything the indexes
 * need is a field. Invariants: `link` is in group->ready[priority-1] when
 * ENQUEUED, in the state list when SCHEDULED/WORKING/RETRIES/DEAD/WAITING/
 * BLOCKED, in no list when PENDING; `timer` is in the heap exactly when
 * SCHEDULED, WORKING, RETRIES or DEAD (at_ms = run/lease-end/expiry); when
 * WAITING or BLOCKED timer.at_ms is the job's `at` (not in the heap); when ENQUEUED
 * timer.at_ms is the enqueue time and timer.seq its FIFO rank (persisted as
 * the row's seq). To keep waiting jobs small, the JSON text of a PENDING or
 * ENQUEUED job has no enqueued_at (it is timer.at_ms and enq_frac_us, added
 * on output: rb_job_enqueued_us), and no server-made created_at
 * (created_us). Job timestamps keep microseconds (docs/protocol.md).
 * Only a WORKING job has a holder (wid). jobs.c checks these (rb_assert)
 * each time a job changes state. */
typedef struct rb_job {
    rb_link link;
    rb_heap_node timer;
    void *hnext;      /* jid table chain */
    rb_group *group;  /* its group (its queue: rb_job_queue), in every state */
    char *json;       /* compact Faktory job JSON; owned */
    char *history;    /* JSON array of failed attempts, or NULL; owned */
    char *wid;        /* reservation holder (WORKING only), or NULL; owned */
    int64_t first_ms; /* first enqueue (policy deadline) */
    /* When the server made created_at: its time in microseconds, and the
     * JSON text leaves it out (added on output); 0 when created_at is in
     * the text. */
    int64_t created_us;
    /* The key of its stored row (rb_job_row.id), set by rb_jobs_add: 2^53
     * rows, over a century at a million jobs a second. Shares its word with
     * enq_frac_us, the microseconds (0-999) past timer.at_ms of an ENQUEUED
     * job's enqueue instant (0 in any other state), so that the job stays
     * 112 bytes (see below; _Static_assert after the struct). */
    int64_t row_id : 54;
    uint64_t enq_frac_us : 10;
    int32_t attempts; /* executions started (counted at FETCH) */
    /* Packed in one word so that a job with a 22-character jid fits a
     * 144-byte malloc chunk (memory per waiting job, docs/design.md):
     * reserve_s up to 2^21-1 s (server.reserve_for is at most 7 days,
     * a job's reserve_for at most one), state an rb_job_state, priority
     * 1..9, flags RB_JOB_EXPIRED/RB_JOB_REFETCHED. */
    uint32_t reserve_s : 21; /* reservation length at FETCH */
    uint32_t state : 3, priority : 4, flags : 4;
    char jid[];
} rb_job;
/* Memory per waiting job (docs/design.md): a field added costs a malloc
 * size class for common jid lengths. */
_Static_assert(sizeof(rb_job) == 112, "rb_job grew: see docs/design.md, memory per job");

/* An ENQUEUED job's enqueue instant in microseconds. */
static inline int64_t rb_job_enqueued_us(const rb_job *j)
{
    return j->timer.at_ms * 1000 + (int64_t)j->enq_frac_us;
}

/* A group of a queue's jobs (custom.group, docs/configuration.md
 * "Groups"; name "" for the queue's ungrouped jobs, its `none` group): its
 * ENQUEUED jobs in priority lists, its WORKING count, its limits and hold.
 * Invariants: `turn` is in queue->turns exactly when in_turns, which holds
 * exactly when size > 0 and hold is RB_HOLD_NONE (FETCH takes the head's
 * first job, then moves the head to the back); hold is RB_HOLD_CONCURRENCY
 * only while working >= concurrency > 0 (left as soon as a job stops
 * working); `wake` is in the backend's heap of held groups exactly when
 * hold is RB_HOLD_RATE (groups.c); size == its ENQUEUED jobs, working ==
 * its WORKING jobs, refs == the jobs whose `group` it is. A named group is
 * freed when refs drops to 0 (rb_jobs.group_freed told first); the none
 * group lives with its queue and has no limits. */
struct rb_group {
    void *hnext;                  /* queue->groups chain, keyed by name */
    rb_queue *queue;
    rb_list ready[RB_PRIORITIES]; /* index priority-1; higher runs first */
    rb_link turn;                 /* queue->turns while in_turns */
    rb_heap_node wake;            /* held by rate: at_ms = when it may start again */
    rb_gcra gcra;                 /* its rate (t_us 0: none), set by groups.c */
    int64_t tat_us;               /* its rate bucket (engine/gcra.h), 0: full */
    uint32_t size, working, refs;
    uint32_t concurrency;         /* its limit, 0: none, set by groups.c */
    uint16_t ready_mask;          /* bit p: ready[p] is not empty */
    uint8_t hold;                 /* rb_group_hold */
    bool in_turns;
    bool limits_set;              /* concurrency and gcra resolved (groups.c) */
    char name[];
};

/* A named queue. Queues are created on first use and live until FLUSH
 * (a job of any state points at a group of its queue). */
struct rb_queue {
    void *hnext;
    char *name;
    rb_table groups;  /* its named groups, by name */
    rb_group *none;   /* its ungrouped jobs' group */
    rb_list turns;    /* groups with ready jobs, in turn order: the head goes next */
    size_t size;      /* ENQUEUED jobs, every group */
    int64_t tat_us;   /* [throttles] rate bucket (groups.c), 0: full */
    /* Held-back starts since the queue was made (INFO, /metrics'
     * rebound_group_holds_total): holds[h] groups that entered hold h
     * (rb_group_hold), rate_passes FETCHes that passed the queue over
     * for its [throttles] rate while it had ready jobs. */
    uint64_t holds[4], rate_passes;
    bool paused;
    /* INFO lists it (Faktory's known queues): a job was pushed into it or
     * it was paused, and no QUEUE REMOVE since; kept as the "queue:NAME"
     * meta row (backend/sqlite/core.c, rb_sq_queue_known). */
    bool known;
};

static inline rb_queue *rb_job_queue(const rb_job *j)
{
    return j->group->queue;
}

/* The name of j's group as stored and shown: NULL for an ungrouped job. */
static inline const char *rb_job_group_name(const rb_job *j)
{
    return j->group->name[0] ? j->group->name : NULL;
}

typedef struct rb_jobs {
    rb_table by_jid;
    rb_table queues;
    rb_list scheduled, working, retries, dead;
    rb_list waiting, blocked; /* job dependencies (backend/sqlite/deps.h): no timer */
    rb_heap timers;
    uint64_t next_seq; /* FIFO rank of the next enqueued job */
    int64_t last_row_id; /* the highest row id given or loaded */
    size_t enqueued;   /* jobs in all ready queues */
    /* Told before a named group is freed (its last job gone), or NULL. */
    void (*group_freed)(void *arg, rb_group *g);
    void *group_freed_arg;
} rb_jobs;

void rb_jobs_init(rb_jobs *js);
/* Frees every job and queue. */
void rb_jobs_release(rb_jobs *js);

/* A new PENDING job (not yet in the table) of q's ungrouped jobs
 * (rb_jobs_set_group names another): json is taken over. */
rb_job *rb_job_new(const char *jid, char *json, rb_queue *q, int priority);
/* Moves j, which must not be ENQUEUED, into the group named name of its
 * queue (NULL or "": the ungrouped jobs), created when new. */
void rb_jobs_set_group(rb_jobs *js, rb_job *j, const char *name);
/* q's group named name (NULL or "": its ungrouped jobs), or NULL when it
 * has none. */
rb_group *rb_queue_group(const rb_queue *q, const char *name);
/* Unlinks j from every index and frees it. */
void rb_jobs_delete(rb_jobs *js, rb_job *j);

rb_job *rb_jobs_find(const rb_jobs *js, const char *jid);
/* Into the jid table, state as is. A job without a row id (row_id 0) gets
 * the next one; a loaded job keeps its own. */
void rb_jobs_add(rb_jobs *js, rb_job *j);

/* The queue named name, created when create is true (else NULL if unknown). */
rb_queue *rb_jobs_queue(rb_jobs *js, const char *name, bool create);
/* Removes q (must be empty) and frees it. */
void rb_jobs_queue_free(rb_jobs *js, rb_queue *q);

/* Moves j to a state, unlinking it from the old one's indexes. at_ms: the
 * deadline (SCHEDULED/WORKING/RETRIES/DEAD) or the enqueue time (ENQUEUED:
 * to the millisecond; enq_frac_us is left as it is, and cleared in every
 * other state). Ignored for PENDING. */
void rb_jobs_set_state(rb_jobs *js, rb_job *j, rb_job_state st, int64_t at_ms);
/* rb_jobs_set_state to ENQUEUED at the instant us (microseconds). */
void rb_jobs_enqueue_us(rb_jobs *js, rb_job *j, int64_t us);

/* j's JSON as clients see it: the text plus the fields kept outside it
 * (created_at when created_us is set; enqueued_at when enqueued_us > 0),
 * with microseconds. Returns a new string (free it). */
char *rb_job_json_out(const rb_job *j, int64_t enqueued_us);

/* The first ready job of g in priority order, or NULL: O(1). */
rb_job *rb_group_first(const rb_group *g);
/* Moves g, which is in its queue's turns, to their back. */
void rb_group_next_turn(rb_group *g);
/* Holds g back for reason h (not RB_HOLD_NONE): out of the turns. */
void rb_group_hold_back(rb_group *g, rb_group_hold h);
/* Ends g's hold: into the turns (at the back) when it has ready jobs. */
void rb_group_release(rb_group *g);
/* Calls fn for q's none group and each named one. */
void rb_queue_each_group(const rb_queue *q, void (*fn)(rb_group *g, void *arg), void *arg);

/* The job whose deadline is earliest, or NULL. */
rb_job *rb_jobs_next_timer(const rb_jobs *js);

/* The list of a listable state (SCHEDULED, WORKING, RETRIES, DEAD, WAITING,
 * BLOCKED), else NULL. */
rb_list *rb_jobs_state_list(rb_jobs *js, rb_job_state st);

/* Seconds since the oldest job waiting in q was enqueued (0 when empty):
 * walks q's groups. */
double rb_queue_latency_s(const rb_queue *q, int64_t now_ms);

struct rb_metrics;
/* Counts one metrics event (engine/metrics.h) for j: its queue and the
 * "jobtype" of its JSON. No-op when m is NULL. */
void rb_job_metric(struct rb_metrics *m, int ev, const rb_job *j);

static inline rb_job *rb_job_of_link(rb_link *l)
{
    return l ? rb_container_of(l, rb_job, link) : NULL;
}

#endif
