/* Job dependencies on a single node (docs/workflows.md): a side table
 * keyed by jid, only for jobs in a workflow, holding each child's parents
 * and counts (engine/depend.h decides them) and each parent's children, so
 * that every event costs O(its edges); and the durable record of workflow
 * jobs ACKed recently, which a later push may still name. Plain jobs pay
 * one size test on ACK and delete. Loop thread only. */
#ifndef RB_BACKEND_MEM_DEPS_H
#define RB_BACKEND_MEM_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/depend.h"
#include "engine/job_state.h"
#include "common/list.h"
#include "common/table.h"

typedef struct rb_sq rb_sq;

/* A succeeded record's key in the store's meta table (value: its expiry,
 * ms); read back by rb_deps_load_meta and by the export (port.c). */
#define RB_DEPS_DONE_KEY "dep_done:"

typedef struct rb_job rb_job;

/* One job in a workflow. As a child (n_parents > 0 while it waits or is
 * blocked): its parents still to be heard from and its counts. As a
 * parent: its children's jids (NULL entries: edges used up). Strings owned. */
typedef struct rb_dep_node {
    void *hnext;
    char **parents;
    uint32_t n_parents;
    uint32_t n_children, cap_children;
    char **children;
    rb_dep_counts counts;
    rb_dep_mode mode;
    char jid[];
} rb_dep_node;

/* A workflow job ACKed at some time: kept until expires_ms (FIFO by
 * expiry, its meta key "dep_done:<jid>" in the store, whose value is the
 * expiry and, after a space, parents). */
typedef struct rb_dep_done {
    void *hnext;
    rb_link link;
    int64_t expires_ms;
    char *parents; /* the job's depends_on when ACKed, a JSON array text (owned), or NULL */
    char jid[];
} rb_dep_done;

/* Who names a job, for the workflow graph (docs/workflows.md "Seeing
 * it"): the jobs whose depends_on named jid (pushed naming it, or a
 * succeeded record's parents), whether their edge is used up or not. Kept
 * while jid is stored or recorded as succeeded; its entries may name jobs
 * gone since (rb_deps_children keeps the known ones). Strings owned. */
typedef struct rb_dep_named {
    void *hnext;
    char **kids;
    uint32_t n, cap;
    char jid[];
} rb_dep_named;

typedef struct rb_deps {
    rb_table nodes; /* rb_dep_node by jid */
    rb_table done;  /* rb_dep_done by jid */
    rb_table named; /* rb_dep_named by jid (the parent) */
    rb_list done_fifo;
    /* Jobs dead of a dependency whose children are still to be told: the
     * chain is walked with this list rather than recursion (a long chain
     * would not fit the stack). Owned strings. */
    char **dying;
    size_t n_dying, cap_dying;
    bool draining;
} rb_deps;

void rb_deps_init(rb_deps *d);
/* Frees every node and record (FLUSH, shutdown). */
void rb_deps_release(rb_deps *d);

/* PUSH/PUSHB on a single node: the push's dependency check (unknown
 * parents, debounce aliases named as parents, cycles) against sq's jobs
 * and records at now. 0 or RB_EINVAL, err set; nothing changes either
 * way. */
int rb_deps_check_push(rb_sq *sq, json_t *const *jobs, size_t n, int64_t now, rb_err *err);
/* After rb_sq_push made the PENDING job j from job: records its edges to
 * the parents not yet done (the push's check passed). Returns true when j
 * waits (stored WAITING), false when every parent is done already (or it
 * names none). */
bool rb_deps_add_child(rb_sq *sq, rb_job *j, const json_t *job);
/* Whether the PENDING job j waits for parents (stored as WAITING). */
bool rb_deps_pending_waits(const rb_sq *sq, const rb_job *j);
/* The push of PENDING job j, which waits (rb_deps_pending_waits), is
 * committed: it becomes WAITING (or BLOCKED, or dies when a parent was
 * discarded meanwhile). */
void rb_deps_pending_commit(rb_sq *sq, rb_job *j, int64_t now);
/* A PENDING child whose push commit failed (or was flushed): its node
 * goes. */
void rb_deps_drop(rb_sq *sq, const char *jid);

/* Parent events. j is the parent. ACK: before it is deleted; records it
 * as succeeded, releases children whose parents are all done. Died: after
 * it moved to dead (failure, kill, or a child's own dependency death).
 * Requeued: after it left the dead set to run again. Discarded: it is
 * being deleted without success (rb_sq_forget). Each handles the
 * children's own consequences (a dying child's children in turn), and
 * persists what changed. */
void rb_deps_succeeded(rb_sq *sq, rb_job *j, int64_t now);
void rb_deps_died(rb_sq *sq, rb_job *j, int64_t now);
void rb_deps_requeued(rb_sq *sq, rb_job *j, int64_t now);
/* MUTATE requeue of the dead job j (before it is enqueued): when it names
 * parents that hold it now (rb_dep_on_retry), it goes back to waiting or
 * blocked under them, persisted, and true is returned; false: nothing holds
 * it, the caller enqueues it. Either way the caller then tells j's own
 * children it was requeued (rb_deps_requeued). */
bool rb_deps_retried(rb_sq *sq, rb_job *j, int64_t now);
void rb_deps_discarded(rb_sq *sq, rb_job *j, int64_t now);

/* For JOB: what the waiting/blocked job jid waits for (a new JSON array of
 * jids, or NULL when none) and the parent that blocks it (a new string, or
 * NULL). */
json_t *rb_deps_waits_for(const rb_sq *sq, const char *jid);
char *rb_deps_blocked_by(const rb_sq *sq, const char *jid);
/* For a workflow's graph: whether jid has a succeeded record; the jobs
 * that named jid and are still stored or recorded as succeeded; and a
 * record's parents (new arrays of new strings, *n entries; NULL when
 * none). */
bool rb_deps_is_done(const rb_sq *sq, const char *jid);
char **rb_deps_children(const rb_sq *sq, const char *jid, size_t *n);
char **rb_deps_record_parents(const rb_sq *sq, const char *jid, size_t *n);

/* Start-up: a "dep_done:" meta key (the store's), and after every row is
 * loaded, the edges rebuilt from the waiting and blocked jobs' depends_on
 * and their parents' states. */
void rb_deps_load_meta(rb_sq *sq, const char *key, const char *value);
void rb_deps_rebuild(rb_sq *sq);

/* The succeeded records' timer: drops those expired by now; the earliest
 * expiry left (INT64_MAX: none). */
void rb_deps_expire(rb_sq *sq, int64_t now);
int64_t rb_deps_next_expiry(const rb_sq *sq);

#endif
