/* The single node's flow control (docs/configuration.md "Groups" and
 * "Throttles"): which job of a queue FETCH takes next, its groups in turn,
 * each named group's limits ([groups]: concurrency, rate) and a queue's
 * [throttles] rate, and a job's group from its JSON. A group held back by a
 * limit is out of the turns, so FETCH never looks at it: its jobs stay
 * enqueued, use no attempt and no lease. The groups and their turns are the
 * pure indexes of jobs.h; the clocks, the held groups' heap and its timer,
 * and the buckets' durable rows are here. Rate buckets (GCRA TATs) are meta
 * rows "gcra:QUEUE GROUP" ("gcra:QUEUE" for a queue's), written with the
 * start that advanced them, so a kill -9 never gives a bucket back more
 * than the starts that were not committed (fewer starts, never more).
 * Loop thread only. */
#ifndef RB_BACKEND_SQLITE_GROUPS_H
#define RB_BACKEND_SQLITE_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "backend/sqlite/sq.h"

/* The meta rows of rate buckets. */
#define RB_GCRA_META_KEY "gcra:"

/* Sets up sq->groups (before the store is loaded); rb_sq_groups_release
 * frees it. */
void rb_sq_groups_init(rb_sq *sq);
void rb_sq_groups_release(rb_sq *sq);
/* The loop is over (rb_sq_close, before the event base is freed): the
 * timers of holds, buckets and pauses go. */
void rb_sq_groups_close(rb_sq *sq);
/* FLUSH: every hold, bucket and timer forgotten (the jobs are gone). After
 * rb_jobs_init. */
void rb_sq_groups_flush(rb_sq *sq);

/* A stored meta row at load: the "gcra:" ones are kept for
 * rb_sq_groups_loaded. */
void rb_sq_groups_load(rb_sq *sq, const char *key, const char *value);
/* After the jobs and meta rows are loaded: buckets given to their groups
 * and queues, holds recomputed (concurrency from the working jobs, rate
 * from the buckets). */
void rb_sq_groups_loaded(rb_sq *sq);

/* Once the loop runs (rb_sq_attach): the timers of the holds and buckets
 * found at load. */
void rb_sq_groups_attach(rb_sq *sq);

/* The job FETCH takes next from q: the first (priority, then FIFO) of the
 * group at the head of q's turns. Expired jobs met at a group's head are
 * dropped on the way (never handed out). The caller reserves the job at
 * once: its group's start is counted here (its bucket advanced, the group
 * moved to the back of the turns, or held back when the start reached its
 * concurrency or its rate). NULL when no group of q may start a job now.
 * O(1) in groups (O(log held) when a hold begins). */
rb_job *rb_sq_group_take(rb_sq *sq, rb_queue *q, int64_t now);

/* Whether q's [throttles] rate (cfg: q's throttle) keeps it from starting a
 * job at now; when it does, the timer wakes waiting FETCHes at its next
 * conforming time. */
bool rb_sq_queue_rate_full(rb_sq *sq, const struct rb_throttle *cfg, rb_queue *q, int64_t now);
/* q's [throttles] rate bucket (its GCRA time, loaded on first use), for
 * reads. */
int64_t rb_sq_queue_tat(rb_sq *sq, rb_queue *q);
/* A job of q was started at now: q's [throttles] rate bucket advanced (its
 * row written into the open batch). */
void rb_sq_queue_rate_started(rb_sq *sq, const struct rb_throttle *cfg, rb_queue *q, int64_t now);

/* Puts j (not ENQUEUED) into the group named name of its queue (NULL or
 * "": ungrouped), the group's limits resolved when it is new. */
void rb_sq_group_set(rb_sq *sq, rb_job *j, const char *name);

/* Puts j (not ENQUEUED) into the group its job object names in
 * custom.group (engine/group.h's rule; ungrouped when absent or not a
 * group name). */
void rb_sq_group_of_json(rb_sq *sq, rb_job *j, const json_t *job);

/* As rb_sq_group_of_json from j's own text, for a row stored without its
 * group (written before the column, or by an import): parsed only when the
 * text names "group". */
void rb_sq_group_of_text(rb_sq *sq, rb_job *j);

/* g's limits resolved again (an override changed: GROUP SET) and its hold
 * decided afresh at now: paused, at its concurrency, out of its rate, or
 * its turn (a raised limit releases it, a lowered one holds it). */
void rb_sq_group_apply(rb_sq *sq, rb_group *g, int64_t now);

/* --- group_conf.c: the operator's settings of named groups (GROUP SET's
 * overrides, GROUP PAUSE's pauses), kept by queue and group name whether
 * or not the group has jobs, each the meta row "group:QUEUE GROUP" =
 * {"over": {...}, "paused_until": ms, "reason": "..."} written in the
 * command's commit (deleted when neither remains), read back at start; a
 * pause ends by itself at its time (a timer). Every function is called by
 * groups.c's own life cycle (init, release, flush, load, loaded, attach),
 * except the op. --- */

/* The meta rows of overrides and pauses. */
#define RB_GROUP_CONF_META_KEY "group:"

void rb_sq_group_confs_init(rb_sq *sq);
void rb_sq_group_confs_release(rb_sq *sq);
/* rb_sq_groups_close's part: the pauses' timer freed. */
void rb_sq_group_confs_close(rb_sq *sq);
/* FLUSH: every override and pause forgotten (their rows go with the
 * store's clear). */
void rb_sq_group_confs_flush(rb_sq *sq);
/* QUEUE REMOVE of queue: its groups' overrides and pauses forgotten, their
 * rows deleted in the open batch; its groups with jobs left (working,
 * scheduled) take the configured limits at once. */
void rb_sq_group_confs_queue_removed(rb_sq *sq, const char *queue, int64_t now);
/* A stored meta row at load: the "group:" ones kept. */
void rb_sq_group_confs_load(rb_sq *sq, const char *key, const char *value);
/* After load, before the groups' holds: pauses that ended while the
 * server was down dropped (their rows rewritten). */
void rb_sq_group_confs_loaded(rb_sq *sq);
/* Once the loop runs: the timer of the earliest pause's end. */
void rb_sq_group_confs_attach(rb_sq *sq);

/* Named group g's GROUP SET override, or NULL (borrowed: valid until the
 * next change of g's settings). */
const rb_flow_override *rb_sq_group_override(const rb_sq *sq, const rb_group *g);
/* The end of named group g's pause (wall ms), 0 when it is not paused. */
int64_t rb_sq_group_paused_until(const rb_sq *sq, const rb_group *g);

/* INFO's rebound.groups into rebound: every queue's groups counted
 * (rb_group_sum) and its held-back starts (docs/protocol.md, INFO). */
void rb_sq_groups_info(rb_sq *sq, json_t *rebound, int64_t now);

/* JOB's hold of enqueued job j at now into v (hold_by, hold,
 * hold_until_ms, hold_detail; reads.h): its queue paused or at a
 * [throttles] limit (rb_sq_throttle_job_hold), else its named group held
 * (concurrency, rate, paused); nothing for a job not held. */
void rb_sq_job_hold(rb_sq *sq, const rb_job *j, int64_t now, rb_job_view *v);

/* RB_ENG_GROUP (rb_backend.group, engine/engine.h). */
void rb_sq_group_op(rb_eng *eng, rb_eng_op *op);

#endif
