/* Faktory Enterprise's unique jobs and expiring jobs (docs/enterprise.md),
 * the rules once for every backend: a job's custom.unique_for /
 * unique_until and custom.expires_at / expires_in checked, the lock's key
 * (jobtype, canonical args, queue) and its end, and expires_in turned into
 * expires_at at PUSH. Pure: no I/O, no clocks (times are arguments); any
 * thread may call these. A backend keeps the locks and drops expired jobs. */
#ifndef RB_ENGINE_UNIQUE_H
#define RB_ENGINE_UNIQUE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* The replies where the backend keeps neither (rb_backend.unique_jobs
 * false; both backends keep them since issue 16). */
#define RB_UNIQUE_UNSUPPORTED "unique jobs are not supported in distributed mode yet"
#define RB_EXPIRING_UNSUPPORTED "expiring jobs are not supported in distributed mode yet"
/* A duplicate's reply: "-NOTUNIQUE Job not unique" for PUSH, the text
 * "NOTUNIQUE Job not unique" in PUSHB's map (Faktory's coded error). */
#define RB_NOTUNIQUE_CODE "NOTUNIQUE"
#define RB_NOTUNIQUE_MSG "Job not unique"
/* The longest unique_for accepted, in seconds (a year). */
#define RB_UNIQUE_FOR_MAX 31536000.0
/* The longest expires_in accepted, in seconds (ten years). */
#define RB_EXPIRES_IN_MAX 315360000.0
/* A key's text: SHA-256 in hex and a NUL. */
#define RB_UNIQUE_KEY_LEN 65

/* A job's uniqueness. on is false for a job without custom.unique_for (or
 * unique_for 0, Go's SetUniqueFor(0)): never locked. */
typedef struct rb_unique_spec {
    bool on;
    double for_s;      /* > 0 when on */
    bool until_start;  /* unique_until "start": released at FETCH, else at ACK */
} rb_unique_spec;

/* Reads job's custom.unique_for and custom.unique_until into *out. 0, or
 * RB_EINVAL with err "custom.unique_for must be a number of seconds"
 * (negative, over RB_UNIQUE_FOR_MAX, a string, a bool) or
 * "custom.unique_until must be \"success\" or \"start\"" (no job prefix:
 * the caller adds "job J"). A job that is not an object or has no custom
 * object is not unique. */
int rb_unique_parse(const json_t *job, rb_unique_spec *out, rb_err *err);

/* Whether job names any of the keys this module reads (custom.unique_for,
 * unique_until, expires_at, expires_in): the fast path for plain jobs. */
bool rb_unique_or_expiring(const json_t *job);

/* The lock key of job into out: the hex SHA-256 of jobtype, NUL, queue
 * ("default" when absent), NUL, and the canonical JSON of args (object keys
 * sorted, integral reals written as integers, compact), so {"a":1,"b":2}
 * and {"b":2,"a":1}, 1 and 1.0 are the same job. Returns out. */
char *rb_unique_key(const json_t *job, char out[RB_UNIQUE_KEY_LEN]);

/* The hex SHA-256 of a, NUL, b, NUL and c (NULL: nothing) into out (a
 * lock's key here, a debounce key in engine/debounce.h). Returns out. */
char *rb_key_hash(const char *a, const char *b, const char *c, char out[RB_UNIQUE_KEY_LEN]);

/* When a lock taken at now ends by time: max(now, at_ms) + for_s. */
int64_t rb_unique_until_ms(const rb_unique_spec *s, int64_t now, int64_t at_ms);

/* Checks job's custom.expires_at (an RFC 3339 time, any offset) and
 * custom.expires_in (a number of seconds >= 0) and, when only expires_in
 * is given, sets custom.expires_at to now + expires_in (UTC, milliseconds,
 * "Z"; expires_in is kept). *ms: the expiry time, 0 for none. Returns 0,
 * or RB_EINVAL with err "custom.expires_at must be an RFC 3339 time" /
 * "custom.expires_in must be a number of seconds" (job unchanged). */
int rb_expiry_prepare(json_t *job, int64_t now, int64_t *ms, rb_err *err);

/* The expiry time of a stored job (its custom.expires_at), 0 for none or
 * an unreadable one. */
int64_t rb_expiry_of(const json_t *job);

#endif
