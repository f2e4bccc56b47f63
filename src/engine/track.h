/* Faktory Enterprise's progress tracking, the rules both backends share
 * (docs/enterprise.md, "Tracking"): what TRACK SET means, which jobs are
 * tracked, the six state words and TRACK GET's reply. Pure functions: any
 * thread may use them. */
#ifndef RB_ENGINE_TRACK_H
#define RB_ENGINE_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* The one refusal where a backend keeps no tracking (rb_eng_track_check;
 * both backends keep it today). */
#define RB_TRACK_UNSUPPORTED "tracking is not supported by this storage backend"
/* How long a tracked job's record outlives the job (Faktory: "callers can
 * still request the job track for 30 minutes"). */
#define RB_TRACK_RETENTION_MS (30 * 60 * 1000LL)
/* The furthest reserve_until may push a lease, from now (Ruby's client
 * refuses more than 24 h; the server caps it there). */
#define RB_TRACK_RESERVE_MAX_MS (24 * 3600 * 1000LL)
/* The longest desc kept, in bytes. */
#define RB_TRACK_DESC_MAX 1000

/* The state words TRACK GET answers (the Rust client's enum: nothing else). */
typedef enum rb_track_state {
    RB_TRACK_UNKNOWN = 0,
    RB_TRACK_ENQUEUED,
    RB_TRACK_WORKING,
    RB_TRACK_SUCCESS,
    RB_TRACK_FAILED,
    RB_TRACK_DEAD,
} rb_track_state;

/* TRACK SET's request, checked. Strings borrowed from the parsed JSON. */
typedef struct rb_track_set {
    const char *jid;
    bool has_percent;     /* false: keep the stored percent */
    int percent;          /* 0..100 */
    const char *desc;     /* NULL: keep the stored desc */
    int64_t reserve_until; /* ms, 0: none */
} rb_track_set;

/* TRACK SET's argument o into out: jid a non-empty string (required);
 * percent a number, truncated to an integer and clamped to 0..100
 * (33.7 -> 33, 150 -> 100; the brief's decision: a worker's progress
 * call must not fail its job), absent or null keeps the stored one; desc
 * a string of at most RB_TRACK_DESC_MAX bytes, absent or null keeps it;
 * reserve_until an RFC 3339 time, absent, null or "" for none. 0, or
 * RB_EINVAL with err "TRACK SET: ..." and out unusable. */
int rb_track_parse_set(const json_t *o, rb_track_set *out, rb_err *err);

/* Whether job (its JSON object) opted in: custom.track true or a number
 * other than 0. */
bool rb_track_enabled(const json_t *job);
/* The same for a job's compact JSON text (a cheap test first: most jobs
 * never mention "track"). */
bool rb_track_enabled_text(const char *json);

/* The word for a live job in state st (an rb_job_state): scheduled,
 * enqueued, waiting and blocked are "enqueued", retries "failed". */
rb_track_state rb_track_state_of(int st);
/* "unknown", "enqueued", "working", "success", "failed" or "dead". */
const char *rb_track_state_name(rb_track_state s);

/* The lease end reserve_until asks for: lease_end itself unless
 * reserve_until is later, and never past now + RB_TRACK_RESERVE_MAX_MS
 * (nor earlier than lease_end). */
int64_t rb_track_lease_end(int64_t now, int64_t lease_end, int64_t reserve_until);

/* What a backend found for one jid at TRACK GET or SET: its stored job
 * (dead ones included) and its progress record, each when there is one.
 * Strings borrowed. */
typedef struct rb_track_seen {
    bool live;            /* a stored job */
    int job_state;        /* its rb_job_state */
    bool tracked;         /* it opted in (rb_track_enabled_text) */
    int64_t state_ms;     /* when it entered that state, 0: unknown */
    bool has_rec;         /* a progress record */
    int percent;          /* -1: never set */
    const char *desc;     /* NULL: never set */
    int64_t updated_ms;   /* its last TRACK SET, 0: none */
    int64_t ended_ms;     /* when its job ended, 0 while the job lives */
    rb_track_state ended; /* then RB_TRACK_SUCCESS or RB_TRACK_DEAD */
} rb_track_seen;

/* TRACK GET's answer at now: a live tracked job's state from its row
 * (untracked: unknown, whatever record there is); a gone job's from its
 * record while the record's RB_TRACK_RETENTION_MS after the end last;
 * else unknown. updated_at the later of state_ms (or the end) and the last
 * SET, never after now. The caller owns it. */
json_t *rb_track_get(const char *jid, const rb_track_seen *v, int64_t now);

/* Whether TRACK SET at now stores anything: for a live job, when it is
 * tracked; for a gone one, when its record is still remembered. Otherwise
 * SET answers +OK and changes nothing. A stored SET on a live job whose
 * record ended (its jid pushed again) makes the record live again, and a
 * working job's lease is extended to rb_track_lease_end. */
bool rb_track_set_stores(const rb_track_seen *v, int64_t now);

/* TRACK GET's reply, key order as Faktory's: {"jid","percent","desc",
 * "state","updated_at"}, percent (when >= 0) and desc (when not NULL)
 * left out when never set. For RB_TRACK_UNKNOWN, exactly
 * {"jid":J,"state":"unknown","updated_at":""}. The caller owns it. */
json_t *rb_track_reply(const char *jid, rb_track_state s, int percent, const char *desc,
                       int64_t updated_ms);

#endif
