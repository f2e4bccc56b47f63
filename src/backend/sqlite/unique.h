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

typedef struct rb_srv rb_srv;
struct rb_job;

/* The meta key prefix of a stored lock. */
#define RB_MEM_UNIQUE_KEY "unique:"

/* Sets up srv->unique (rb_srv_alloc); frees it (rb_srv_free). */
void rb_mem_unique_init(rb_srv *srv);
void rb_mem_unique_release(rb_srv *srv);
/* FLUSH: every lock and expiry forgotten, the expired count zeroed (the
 * store's clear drops their rows). */
void rb_mem_unique_flush(rb_srv *srv);

/* Start-up: a stored meta key (a lock when it starts with
 * RB_MEM_UNIQUE_KEY), a stored counter ("total_expired"), and, once every
 * job is loaded, the locks whose holder is gone dropped and the expiring
 * jobs found. */
void rb_mem_unique_load(rb_srv *srv, const char *key, const char *value);
void rb_mem_unique_load_counter(rb_srv *srv, const char *name, int64_t value);
void rb_mem_unique_rebuild(rb_srv *srv);

/* PUSH, before the job is made: RB_ENOTUNIQUE when job is unique and a
 * live lock holds its key (counted rejected), else 0. Nothing changes. */
int rb_mem_unique_check(rb_srv *srv, const json_t *job, int64_t now);
/* A PUSHB that names parents (job dependencies) is refused whole when one
 * of its unique jobs would be NOTUNIQUE (held by a lock, or by an earlier
 * identical job of the same PUSHB), as such a push is for any other
 * mistake: a child must not take a refused parent for a succeeded one.
 * RB_ENOTUNIQUE with err "job J: NOTUNIQUE Job not unique (...)", else 0
 * (also for a single job, and for a PUSHB without parents: their
 * duplicates are refused one by one). Nothing changes. */
int rb_mem_unique_check_push(rb_srv *srv, json_t *const *jobs, size_t n, int64_t now,
                             rb_err *err);
/* PUSH, once j is made from job (rb_srv_push succeeded): its lock taken
 * (in the push's commit) and its expiry recorded. */
void rb_mem_unique_pushed(rb_srv *srv, const struct rb_job *j, const json_t *job, int64_t now);

/* j leaves the server without succeeding or is ACKed (rb_srv_forget, a
 * failed push's commit): its lock released and its expiry forgotten. */
void rb_mem_unique_gone(rb_srv *srv, const struct rb_job *j);
/* j died (dead set): its lock released. */
void rb_mem_unique_died(rb_srv *srv, const struct rb_job *j);
/* j was fetched: its lock released when it is unique_until "start". */
void rb_mem_unique_started(rb_srv *srv, const struct rb_job *j);

/* Whether j's custom.expires_at has passed at now; if so j is dropped
 * (freed): logged "JID j: Halt: job expired", counted, its batch told of a
 * death, its children of a discarded parent, its lock released, its row
 * deleted. For a claim (FETCH) and a timer about to enqueue j. */
bool rb_mem_unique_expire(rb_srv *srv, struct rb_job *j, int64_t now);

/* When the unique lock jid holds runs out (ms, may have passed), 0 when it
 * holds none. */
int64_t rb_mem_unique_lock_until(const rb_srv *srv, const char *jid);

/* INFO's keys under "rebound": "expired" (all time) and "unique"
 * {"locks", "rejected"}; set into rebound. */
void rb_mem_unique_info(rb_srv *srv, json_t *rebound);

#endif
