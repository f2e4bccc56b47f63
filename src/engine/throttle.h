/* Faktory Enterprise's queue throttles, the rules both backends share
 * (docs/enterprise.md, "Throttles"; configured as [throttles.QUEUE],
 * config/config.h's rb_throttle). A slot is a working job of the queue:
 * nothing else is stored, so slots come back by construction when the job
 * leaves working (ACK, FAIL, SNOOZE, lease expiry) and hold across a
 * restart with the job's row. A backend only selects the queue's working
 * jobs (and their fetch times) and counts with rb_throttle_holds; the
 * distributed one does so under a lock per queue. Pure functions: any
 * thread may use them. */
#ifndef RB_ENGINE_THROTTLE_H
#define RB_ENGINE_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct rb_throttle;

/* The refusal to start where a backend keeps no throttles
 * (rb_eng_throttle_check). */
#define RB_THROTTLE_UNSUPPORTED "throttles are not supported in distributed mode yet"

/* Whether a working job fetched at fetched_ms still holds its slot at now:
 * always without a timeout (timeout_s 0: until it leaves working, its
 * lease's expiry included once the job is failed for it), else for
 * timeout_s seconds from its fetch (Faktory's meaning: afterwards the slot
 * is free even if the job still runs; EXTEND and TRACK's reserve_until do
 * not prolong it). */
bool rb_throttle_holds(int64_t fetched_ms, int64_t timeout_s, int64_t now);

/* When a slot taken at fetched_ms frees by its timeout (INT64_MAX for
 * none). */
int64_t rb_throttle_frees_at(int64_t fetched_ms, int64_t timeout_s);

/* A fetch's time read back from its lease where it was not kept (after a
 * restart; always in distributed mode): the lease's end minus the job's
 * reserve_for. An EXTEND moves it later. */
int64_t rb_throttle_fetched_from_lease(int64_t lease_end_ms, int64_t reserve_s);

struct rb_job_view;
/* JOB's hold of an enqueued job of queue by the queue itself, at now (the
 * job page's "held back because"): paused (QUEUE PAUSE), else its
 * [throttles] t (NULL: none) at its concurrency with held slots in use
 * (frees_ms: when the first frees by its timeout, INT64_MAX: none), else
 * over its rate (tat_us: its GCRA bucket). Sets v's hold_by "queue", hold
 * ("paused", "concurrency", "rate"), hold_until_ms (the next start it
 * allows; 0: none known) and hold_detail ("queue tc runs 1 of 1
 * ([throttles.tc] concurrency)", "queue tr is over its rate
 * ([throttles.tr]): next start at T", "queue tp is paused (QUEUE RESUME
 * tp)"), and returns true; false with v untouched when the queue lets it
 * start. The caller frees v's strings (rb_job_view_release). */
bool rb_throttle_job_hold(const char *queue, bool paused, const struct rb_throttle *t,
                          int64_t held, int64_t frees_ms, int64_t tat_us, int64_t now,
                          struct rb_job_view *v);

/* INFO's entry for throttle t with in_use slots held: {"concurrency",
 * "timeout", "in_use"}, and "rate", "period" (seconds), "burst" when it has
 * a rate, set into o (INFO's rebound.throttles) under its queue. */
void rb_throttle_info_set(json_t *o, const struct rb_throttle *t, int64_t in_use);

#endif
