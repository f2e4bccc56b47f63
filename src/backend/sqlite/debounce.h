/* The single-node backend's debounced jobs (engine/debounce.h holds the
 * rules; docs/flow-control.md "Debounce"). Each debounced job has a record
 * (its key, first push, merges, whether it still holds its key, when it
 * ended) by jid, and while it is pending (not fetched yet) it holds its key
 * in a table by key hash; each push merged into it leaves an alias (its
 * jid) for JOB and TRACK GET. Stored as meta rows written in the commit of
 * the change that made them: "debounce:<jid>" = the record (JSON),
 * "debounced:<alias>" = "<merged_ms> <jid>", so a pending job and its key
 * survive kill -9 with the job's row. Aliases are kept while their job
 * lives and RB_DEBOUNCE_RETENTION_MS after it ends, the most recent
 * RB_DEBOUNCE_ALIASES per job. Loop thread only. */
#ifndef RB_BACKEND_SQLITE_DEBOUNCE_H
#define RB_BACKEND_SQLITE_DEBOUNCE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/debounce.h"

typedef struct rb_sq rb_sq;
struct rb_job;

/* The meta key prefixes of a record and of an alias. */
#define RB_SQ_DEBOUNCE_KEY "debounce:"
#define RB_SQ_DEBOUNCED_KEY "debounced:"

/* Sets up sq->debounce; frees it. */
void rb_sq_debounce_init(rb_sq *sq);
void rb_sq_debounce_release(rb_sq *sq);
/* FLUSH: every record and alias forgotten (the store's clear drops their
 * rows). */
void rb_sq_debounce_flush(rb_sq *sq);

/* Start-up: a stored meta row (a record or an alias by its prefix; others
 * ignored), then, once every job is loaded, the keys given back to the
 * pending jobs that still wait (scheduled or enqueued), the records of
 * jobs gone counted as ended at now, aliases without a record dropped. */
void rb_sq_debounce_load(rb_sq *sq, const char *key, const char *value);
void rb_sq_debounce_rebuild(rb_sq *sq, int64_t now);

/* PUSH of job with custom.debounce (spec parsed, on): when a job pending
 * for its key takes a merge (rb_debounce_mergeable), it is merged (its
 * text, group, run time, expiry changed and its row written), the push's
 * jid recorded as its alias (unless it is the job's own) and true
 * returned: the push is done. false: no pending job, push it as a new one
 * and call rb_sq_debounce_pushed. */
bool rb_sq_debounce_merge(rb_sq *sq, const json_t *job, const rb_debounce_spec *spec,
                          int64_t now);
/* j was just made (PENDING, rb_sq_push) from job: its run time set to
 * now + for, its record made and its key taken (rows into the push's
 * commit). */
void rb_sq_debounce_pushed(rb_sq *sq, struct rb_job *j, const json_t *job,
                           const rb_debounce_spec *spec, int64_t now);

/* j was fetched or died: it gives its key up (the next push starts a new
 * job). j is deleted (rb_sq_forget): its record ends (its aliases kept for
 * the retention). j's push did not commit: its record and key are
 * forgotten. No-ops for jobs without a record. */
void rb_sq_debounce_started(rb_sq *sq, const struct rb_job *j);
void rb_sq_debounce_gone(rb_sq *sq, const struct rb_job *j, int64_t now);
void rb_sq_debounce_unpushed(rb_sq *sq, const struct rb_job *j);

/* JOB: j's debounce while it is pending (a new view, the caller owns it),
 * else NULL. */
rb_debounce_view *rb_sq_debounce_view(const rb_sq *sq, const struct rb_job *j);
/* Whether jid is an alias still remembered at now; if so *out is filled
 * (strings owned by the caller: rb_debounce_alias_release). */
bool rb_sq_debounce_alias(const rb_sq *sq, const char *jid, int64_t now, rb_debounce_alias *out);

/* INFO's "debounce" key under "rebound": {"pending", "merged"} (merged:
 * all time). */
void rb_sq_debounce_info(const rb_sq *sq, json_t *rebound);
/* The stored counter of merges ("total_debounced") at load. */
void rb_sq_debounce_load_counter(rb_sq *sq, const char *name, int64_t value);

#endif
