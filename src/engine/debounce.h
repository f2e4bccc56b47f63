/* Debounce (issue 30, docs/flow-control.md "Debounce"), the rules once for
 * every backend: custom.debounce = {"key": K, "for": S, "max": M} checked,
 * the key's scope (queue, jobtype, K), which jobs may take a merge, the
 * merge itself (the pending job keeps its jid and every top-level field of
 * its first push, and takes the last push's args and custom), its next run
 * time, and what JOB answers for a pending job and for an alias (the jid of
 * a push merged into another job). Pure: no I/O, no clocks (times are
 * arguments); any thread may call these. A backend keeps the pending keys
 * and the aliases (backend/sqlite/debounce.c, backend/pg/sql_debounce.c). */
#ifndef RB_ENGINE_DEBOUNCE_H
#define RB_ENGINE_DEBOUNCE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "engine/unique.h"

/* The longest key, in bytes. */
#define RB_DEBOUNCE_KEY_MAX 200
/* The longest "for", in seconds (a week), and the longest "max" (30 days). */
#define RB_DEBOUNCE_FOR_MAX 604800.0
#define RB_DEBOUNCE_MAX_MAX 2592000.0
/* The aliases kept per debounced job: the most recent ones (older ones
 * answer null). */
#define RB_DEBOUNCE_ALIASES 1000
/* How long a debounced job's aliases outlive it (TRACK's retention). */
#define RB_DEBOUNCE_RETENTION_MS (30 * 60 * 1000LL)
/* A key's hash as stored: hex SHA-256 and a NUL. */
#define RB_DEBOUNCE_HASH_LEN RB_UNIQUE_KEY_LEN

/* A push's custom.debounce. on false: none (every other field zero). */
typedef struct rb_debounce_spec {
    bool on;
    const char *key; /* borrowed from the job */
    int64_t for_ms;  /* > 0 */
    int64_t max_ms;  /* >= for_ms, 0: no cap */
} rb_debounce_spec;

/* Whether job's custom names "debounce" at all: the fast path for plain
 * jobs. */
bool rb_debounce_has(const json_t *job);

/* Reads job's custom.debounce into *out. 0, or RB_EINVAL with err (no job
 * prefix: the caller adds "job J"):
 * "custom.debounce must be an object {\"key\", \"for\", \"max\"}",
 * "custom.debounce.key must be a non-empty string of at most 200 bytes",
 * "custom.debounce.for must be a number of seconds from 0.001 to 604800, got X",
 * "custom.debounce.max must be a number of seconds from for (S) to 2592000, got X",
 * "custom.debounce cannot be combined with custom.unique_for" (or
 * custom.bid, depends_on, at: a non-empty at). docs/flow-control.md says
 * why for each. A job without custom.debounce (or null): on false, 0. */
int rb_debounce_parse(const json_t *job, rb_debounce_spec *out, rb_err *err);

/* The key's hash into out: SHA-256 of jobtype, NUL, queue ("default" when
 * absent), NUL, key, so a key is scoped to its queue and job type.
 * Returns out. */
char *rb_debounce_hash(const json_t *job, const char *key, char out[RB_DEBOUNCE_HASH_LEN]);

/* Whether a pending job in state st (an rb_job_state) takes a merge:
 * pending (the commit of its own push not done yet), scheduled or
 * enqueued. A fetched one (working, retries, dead) does not: the next push
 * starts a new job. */
bool rb_debounce_mergeable(int st);

/* When a debounced job pushed (or merged) at now runs, first_ms being its
 * first push: now + for, never after first_ms + max. May be <= now (the
 * cap passed): it is enqueued at once. */
int64_t rb_debounce_run_at(const rb_debounce_spec *s, int64_t now, int64_t first_ms);

/* A merge: into stored (the pending job's object, changed in place), the
 * push's args and custom; every other field of stored stays. */
void rb_debounce_merge(json_t *stored, const json_t *push);
/* The same on a stored job's JSON text: a new string (free it), or NULL
 * when text cannot be read. */
char *rb_debounce_merge_text(const char *text, const json_t *push);

/* A pending job's debounce as JOB shows it ("debounce"). Strings owned
 * (rb_debounce_view_free). */
typedef struct rb_debounce_view {
    char *key;        /* the push's key K */
    int64_t first_ms; /* its first push */
    int64_t runs_ms;  /* its run time */
    int64_t merged;   /* pushes merged into it */
    char *last_alias; /* the last one's jid, or NULL */
} rb_debounce_view;

void rb_debounce_view_free(rb_debounce_view *v);
/* {"key", "first_at", "runs_at", "merged", "last_alias"}; a new reference. */
json_t *rb_debounce_view_json(const rb_debounce_view *v);

/* A push merged into another job: its jid (alias), the job's (into), the
 * key, when. Strings owned by whoever fills it (rb_debounce_alias_release). */
typedef struct rb_debounce_alias {
    char *alias, *into, *key;
    int64_t merged_ms;
} rb_debounce_alias;

void rb_debounce_alias_release(rb_debounce_alias *a);
/* JOB's answer for an alias: {"jid": alias, "state": "debounced",
 * "debounced_into": into, "key": K, "merged_at": T}; a new reference. */
json_t *rb_debounce_alias_json(const rb_debounce_alias *a);

#endif
