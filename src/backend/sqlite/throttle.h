/* The single-node backend's queue throttles (engine/throttle.h holds the
 * rules; docs/enterprise.md, "Throttles"). The slots in use are counted
 * from the working jobs themselves, never stored apart: a restart reloads
 * the working rows and so the same slots. What is kept in memory is each
 * fetch's time (for a throttle's timeout; after a restart it is read back
 * from the lease: its end minus the job's reserve_for) and one timer that
 * wakes the waiting FETCHes when a slot's timeout passes. Loop thread only. */
#ifndef RB_BACKEND_MEM_THROTTLE_H
#define RB_BACKEND_MEM_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

typedef struct rb_sq rb_sq;
struct rb_job;
struct rb_queue;

/* Frees sq->throttle (rb_srv_free); it is made on first use. */
void rb_sq_throttle_release(rb_sq *sq);
/* The loop is over (rb_sq_close, before the event base is freed): the
 * wake timer goes. */
void rb_sq_throttle_close(rb_sq *sq);

/* Whether q is throttled and at its limit at now (its concurrency, or its
 * rate: groups.c): a FETCH then treats it as empty. When it is, and a held
 * slot frees by its timeout or its bucket has room at a time, a timer is
 * armed for then. */
bool rb_sq_throttle_full(rb_sq *sq, struct rb_queue *q, int64_t now);
/* j of a throttled queue was fetched at now (its slot's start; its rate's
 * bucket advanced). */
void rb_sq_throttle_started(rb_sq *sq, const struct rb_job *j, int64_t now);
struct rb_job_view;
/* JOB's hold of an enqueued job of q by q itself at now into v
 * (engine/throttle.h's rb_throttle_job_hold: paused, or its [throttles]
 * concurrency or rate); false when q lets it start. No side effect on the
 * throttle's timers or counters. */
bool rb_sq_throttle_job_hold(rb_sq *sq, struct rb_queue *q, int64_t now, struct rb_job_view *v);
/* INFO's "throttles" under "rebound" (set into rebound when any is
 * configured): {QUEUE: {"concurrency", "timeout", "in_use"}}, in_use the
 * slots held at now. */
void rb_sq_throttle_info(rb_sq *sq, json_t *rebound, int64_t now);
/* j leaves the server (rb_sq_forget): its fetch time forgotten. */
void rb_sq_throttle_gone(rb_sq *sq, const struct rb_job *j);

#endif
