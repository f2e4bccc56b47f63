/* Job dependencies (a DAG) as both backends decide them: a job's
 * depends_on and on_dep_failure read and checked from its JSON, a push's
 * set of jobs checked for unknown parents and cycles, and what a child
 * does when one of its parents succeeds, dies, is requeued or discarded
 * (docs/workflows.md). Pure: no I/O, no clocks, no server state. */
#ifndef RB_ENGINE_DEPEND_H
#define RB_ENGINE_DEPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* The refusal of a push naming a dead parent (a printf format taking its
 * jid twice): what it is, and what the user can do. */
#define RB_DEP_DEAD_FMT \
    "depends_on: job %s is dead, and a dead job is not accepted as a parent: retry it " \
    "first (rebound retry %s, or MUTATE requeue), or push without it"

/* The most parents one job may name. */
#define RB_DEP_MAX_PARENTS 1000

/* What a child does when a parent dies (custom.on_dep_failure). */
typedef enum rb_dep_mode {
    RB_DEP_BLOCK = 0,  /* default: blocked until the parent is requeued and succeeds */
    RB_DEP_CANCEL = 1, /* dies at once, reason dependency */
    RB_DEP_IGNORE = 2, /* as if the parent had succeeded */
} rb_dep_mode;

/* A job's dependencies as its JSON states them. parents borrow from the
 * job object (valid while it lives); duplicates removed, order kept. */
typedef struct rb_dep_spec {
    const char **parents; /* owned array (rb_dep_spec_release), NULL when none */
    size_t n;
    rb_dep_mode mode;
} rb_dep_spec;

/* Reads custom.depends_on and top-level depends_on (both given: their
 * union) and custom.on_dep_failure of job (an object). Returns 0 with *out
 * filled (n 0: no dependencies), or RB_EINVAL with err saying which rule
 * was broken ("depends_on must be an array of non-empty strings", "...at
 * most 1000 parents", "depends_on: cycle through J" for the job itself,
 * "on_dep_failure must be ..."); then *out is empty. */
int rb_dep_parse(const json_t *job, rb_dep_spec *out, rb_err *err);
void rb_dep_spec_release(rb_dep_spec *s);
/* Whether job names any parent (cheap: no allocation). */
bool rb_dep_has(const json_t *job);
/* "block", "cancel", "ignore". */
const char *rb_dep_mode_name(rb_dep_mode m);

/* What the caller's storage knows of a parent named by a pushed job that
 * is not itself in the push. */
typedef enum rb_dep_known {
    RB_DEP_UNKNOWN = 0,   /* no such job (or a finished one not recorded) */
    RB_DEP_LIVE = 1,      /* scheduled, enqueued, working, retries, waiting or blocked */
    RB_DEP_SUCCEEDED = 2, /* ACKed recently (the workflow retention) */
    RB_DEP_DEAD = 3,      /* in the dead set: refused until it is retried */
    RB_DEP_DEBOUNCED = 4, /* a debounced push's jid merged into another job
                           * (an alias, engine/debounce.h): refused, naming
                           * the job it runs as */
} rb_dep_known;
/* For RB_DEP_DEBOUNCED the lookup sets *into to the jid the alias was
 * merged into (a new string: rb_dep_check_push frees it); otherwise it
 * leaves *into alone. */
typedef rb_dep_known (*rb_dep_lookup_fn)(void *arg, const char *jid, char **into);

/* Checks a push of n validated jobs (PUSH: 1; PUSHB: the batch) as one
 * unit: every parent is in the push or known to lookup as live or
 * succeeded, and the push's own edges have no cycle. Returns 0, or
 * RB_EINVAL with err "depends_on: unknown job J", "depends_on: job J is
 * dead ..." (with what to do: RB_DEP_DEAD_FMT), "depends_on: job A was
 * debounced into J; name J" (A an alias: docs/flow-control.md, "Debounce"),
 * or "depends_on: cycle through J" (J on the cycle), or a job's
 * rb_dep_parse error. */
int rb_dep_check_push(json_t *const *jobs, size_t n, rb_dep_lookup_fn lookup, void *arg,
                      rb_err *err);

/* A parent's event, as its child sees it. */
typedef enum rb_dep_event {
    RB_DEP_PARENT_SUCCEEDED = 0, /* ACKed */
    RB_DEP_PARENT_DIED = 1,      /* moved to the dead set */
    RB_DEP_PARENT_REQUEUED = 2,  /* moved out of the dead set to run again */
    RB_DEP_PARENT_DISCARDED = 3, /* deleted without succeeding */
} rb_dep_event;

/* A child's counts: parents not yet succeeded (remaining) and, of those,
 * parents dead that block it (dead <= remaining). */
typedef struct rb_dep_counts {
    uint32_t remaining, dead;
} rb_dep_counts;

/* Where a child goes after an event. */
typedef enum rb_dep_next {
    RB_DEP_NEXT_WAIT = 0,    /* waiting: parents remain */
    RB_DEP_NEXT_BLOCK = 1,   /* blocked by a dead parent */
    RB_DEP_NEXT_RELEASE = 2, /* every parent done: enqueue (or schedule) it */
    RB_DEP_NEXT_DIE = 3,     /* dies with reason dependency */
} rb_dep_next;

/* Applies event ev of one of a child's parents (mode: the child's) to *c
 * and says where the child goes. *consumed is set when the edge is used up
 * (the parent no longer concerns the child: it succeeded, was ignored, or
 * the child dies), else the edge stays for a later event. An event that
 * cannot apply (a requeue while nothing is dead) leaves *c as is. A
 * requeued parent unblocks a child of any mode it blocks (a "cancel"
 * child is blocked only after its own retry, rb_dep_on_retry). */
rb_dep_next rb_dep_on_parent(rb_dep_mode mode, rb_dep_event ev, rb_dep_counts *c, bool *consumed);
/* The state a child with counts c is in: WAIT, BLOCK or RELEASE. */
rb_dep_next rb_dep_state_of(const rb_dep_counts *c);

/* Whether a parent in state st (an rb_job_state of a stored job; -1 when
 * it is not stored: ACKed, discarded, or never seen) holds back a child of
 * mode that is being held by its parents now (at start-up, or retried):
 * a parent not stored is done with, a dead one the child ignores too;
 * any other holds it, counted in *c (remaining, and dead when it is
 * dead). The rule both backends derive a held job's edges by. */
bool rb_dep_parent_holds(int st, rb_dep_mode mode, rb_dep_counts *c);

/* A dead job naming parents (spec) is retried (MUTATE requeue, `rebound
 * retry`, the HTTP API's retry: docs/workflows.md "Retrying a job killed
 * by its dependency"): it goes back under its parents' states now, which
 * state_of gives (as rb_dep_parent_holds takes them). holds (spec->n
 * entries) says which parents hold it, *c its counts; returns WAIT or
 * BLOCK (held again: waiting, or blocked by a dead parent whatever its
 * mode, until that parent is retried or deleted) or RELEASE (nothing
 * holds it: enqueued as any retried job). */
rb_dep_next rb_dep_on_retry(const rb_dep_spec *spec, int (*state_of)(void *arg, const char *jid),
                            void *arg, bool *holds, rb_dep_counts *c);

#endif
