/* The single-node backend's unique locks and expiring jobs (engine/unique.h
 * holds the rules; docs/enterprise.md). Locks live in a table by key and by
 * holder's jid, each stored as one key of the store's meta table
 * ("unique:<key>" = "<until_ms> <s|u> <jid>") written in the same commit as
 * the PUSH that took it and deleted in the commit of the ACK, FETCH, death
 * or deletion that released it, so a lock survives a restart and kill -9.
 * Expiring jobs are a table jid -> expiry time, rebuilt at start-up from
 * the jobs' custom.expires_at. Loop thread only. */
#ifndef RB_BACKEND_MEM_UNIQUE_H
#define RB_BACKEND_MEM_UNIQUE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

typedef struct rb_sq rb_sq;
struct rb_job;

/* The meta key prefix of a stored lock. */
#define RB_MEM_UNIQUE_KEY "unique:"

/* Sets up sq->unique (rb_srv_alloc); frees it (rb_srv_free). */
void rb_sq_unique_init(rb_sq *sq);
void rb_sq_unique_release(rb_sq *sq);
/* FLUSH: every lock and expiry forgotten, the expired count zeroed (the
 * store's clear drops their rows). */
void rb_sq_unique_flush(rb_sq *sq);

/* Start-up: a stored meta key (a lock when it starts with
 * RB_MEM_UNIQUE_KEY), a stored counter ("total_expired"), and, once every
 * job is loaded, the locks whose holder is gone dropped and the expiring
 * jobs found. */
void rb_sq_unique_load(rb_sq *sq, const char *key, const char *value);
void rb_sq_unique_load_counter(rb_sq *sq, const char *name, int64_t value);
void rb_sq_unique_rebuild(rb_sq *sq);

/* PUSH, before the job is made: RB_ENOTUNIQUE when job is unique and a
 * live lock holds its key (counted rejected), else 0. Nothing changes. */
int rb_sq_unique_check(rb_sq *sq, const json_t *job, int64_t now);
/* A PUSHB that names parents (job dependencies) is refused whole when one
 * of its unique jobs would be NOTUNIQUE (held by a lock, or by an earlier
 * identical job of the same PUSHB), as such a push is for any other
 * mistake: a child must not take a refused parent for a succeeded one.
 * RB_ENOTUNIQUE with err "job J: NOTUNIQUE Job not unique (...)", else 0
 * (also for a single job, and for a PUSHB without parents: their
 * duplicates are refused one by one). Nothing changes. */
int rb_sq_unique_check_push(rb_sq *sq, json_t *const *jobs, size_t n, int64_t now,
                             rb_err *err);
/* PUSH, once j is made from job (rb_sq_push succeeded): its lock taken
 * (in the push's commit) and its expiry recorded. */
void rb_sq_unique_pushed(rb_sq *sq, const struct rb_job *j, const json_t *job, int64_t now);

/* j leaves the server without succeeding or is ACKed (rb_sq_forget, a
 * failed push's commit): its lock released and its expiry forgotten. */
void rb_sq_unique_gone(rb_sq *sq, const struct rb_job *j);
/* j died (dead set): its lock released. */
void rb_sq_unique_died(rb_sq *sq, const struct rb_job *j);
/* j was fetched: its lock released when it is unique_until "start". */
void rb_sq_unique_started(rb_sq *sq, const struct rb_job *j);

/* Whether j's custom.expires_at has passed at now; if so j is dropped
 * (freed): logged "JID j: Halt: job expired", counted, its batch told of a
 * death, its children of a discarded parent, its lock released, its row
 * deleted. For a claim (FETCH) and a timer about to enqueue j. */
bool rb_sq_unique_expire(rb_sq *sq, struct rb_job *j, int64_t now);

/* When the unique lock jid holds runs out (ms, may have passed), 0 when it
 * holds none. */
int64_t rb_sq_unique_lock_until(const rb_sq *sq, const char *jid);

/* INFO's keys under "rebound": "expired" (all time) and "unique"
 * {"locks", "rejected"}; set into rebound. */
void rb_sq_unique_info(rb_sq *sq, json_t *rebound);

#endif
