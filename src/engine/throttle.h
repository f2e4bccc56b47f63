/* Faktory Enterprise's queue throttles, the rules both backends share
 * (docs/enterprise.md, "Throttles"; configured as [throttles.QUEUE],
 * config/config.h's rb_throttle). A slot is a working job of the queue:
 * nothing else is stored, so slots come back by construction when the job
 * leaves working (ACK, FAIL, SNOOZE, lease expiry) and hold across a
 * restart with the job's row. A backend only selects the queue's working
 * jobs (their fetch and lease end) and counts with rb_throttle_slot_end;
 * the distributed one does so under a lock per queue. Pure functions: any
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

/* When a working job fetched at fetched_ms, whose lease ends at
 * lease_end_ms, gives its slot back: at its lease's end (its worker lost
 * it, a crash included), or with a timeout (timeout_s > 0) timeout_s
 * seconds after its fetch if that comes first (Faktory's meaning:
 * afterwards the slot is free even if the job still runs; EXTEND and
 * TRACK's reserve_until prolong the lease, not the timeout). The slot is
 * held at now while this is later than now. */
int64_t rb_throttle_slot_end(int64_t fetched_ms, int64_t lease_end_ms, int64_t timeout_s);

/* A fetch's time read back from its lease where it was not kept (after a
 * restart; always in distributed mode): the lease's end minus the job's
 * reserve_for. An EXTEND moves it later. */
int64_t rb_throttle_fetched_from_lease(int64_t lease_end_ms, int64_t reserve_s);

/* INFO's entry for throttle t with in_use slots held: {"concurrency",
 * "timeout", "in_use"} set into o (INFO's rebound.throttles) under its
 * queue. */
void rb_throttle_info_set(json_t *o, const struct rb_throttle *t, int64_t in_use);

#endif
