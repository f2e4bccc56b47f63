/* The retry-policy engine: one canonical policy that every dialect parses into,
 * and one pure decision function. No I/O, no clocks: time comes in as
 * arguments and randomness from a seedable rb_rng. Rules: docs/semantics.md. */
#ifndef RB_POLICY_POLICY_H
#define RB_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "policy/rng.h"

typedef enum rb_dialect {
    RB_DIALECT_FAKTORY = 0, /* retry: N; also the built-in default (25) */
    RB_DIALECT_TEMPORAL,
    RB_DIALECT_TASKER,
    RB_DIALECT_FTL,
    RB_DIALECT_TUTORIAL,
} rb_dialect;

typedef enum rb_backoff_kind {
    RB_BACKOFF_EXPONENTIAL, /* initial * coefficient^(k-1), capped */
    RB_BACKOFF_LINEAR,      /* initial * k, capped (tasker "linear") */
    RB_BACKOFF_FIXED,       /* initial, capped (tasker "fixed") */
    RB_BACKOFF_LIST,        /* delays[k-1], last reused past the end, capped */
    RB_BACKOFF_SIDEKIQ,     /* c^4 + 15 + rand(0..29) * (c+1) seconds, c = k-1 */
} rb_backoff_kind;

typedef enum rb_jitter_kind {
    RB_JITTER_NONE,
    RB_JITTER_TASKER, /* +/- uniform integer seconds in [0, floor(delay*pct)] */
} rb_jitter_kind;

/* tasker-core's system [backoff] section (seed 001). */
typedef struct rb_backoff_config {
    int64_t *default_backoff_ms; /* owned; list of delays */
    size_t n_default_backoff;
    int64_t max_backoff_ms;      /* default 60 s */
    double backoff_multiplier;   /* default 2.0 */
    bool jitter_enabled;         /* default true */
    double jitter_max_percentage; /* default 0.1 */
} rb_backoff_config;

/* The canonical policy. Invariant: a policy that came out of a parser is
 * valid; rb_policy_decide() never fails on it. */
typedef struct rb_policy {
    rb_dialect dialect;
    rb_backoff_kind backoff;
    int64_t initial_ms;      /* first delay (exponential/linear/fixed) */
    double coefficient;      /* exponential growth, >= 1 */
    int64_t max_interval_ms; /* cap on computed delays; 0 = no cap */
    int64_t *delays_ms;      /* RB_BACKOFF_LIST; owned */
    size_t n_delays;
    /* Total executions allowed including the first; 0 = unlimited. */
    int64_t max_attempts;
    bool retryable;             /* false: no retries after attempt 1 */
    bool first_always_eligible; /* tasker: attempts == 0 always runs */
    /* Faktory retry 0 / -1: what a failure does when no retry is left. */
    enum { RB_ON_EXHAUST_DEAD, RB_ON_EXHAUST_DISCARD } on_exhaust;
    rb_jitter_kind jitter;
    double jitter_pct;
    /* Server-requested delay (Retry-After) cap; 0 = none. */
    int64_t retry_after_cap_ms;
    char **non_retryable; /* exact errtype matches; owned */
    size_t n_non_retryable;
    int64_t deadline_ms;  /* schedule-to-close from first enqueue; 0 = none */
    char *catch_jobtype;  /* FTL catch verb; NULL = none; owned */
    /* Warnings for likely mistakes ("max_attempts 0 ..."); owned, may be 0. */
    char **warnings;
    size_t n_warnings;
} rb_policy;

/* The failure being decided. Strings are borrowed and may be NULL. */
typedef struct rb_failure {
    const char *errtype;
    const char *message;
    bool non_retryable;        /* the worker said: never retry this */
    const char *retry_after;   /* "120" or an HTTP-date; NULL = none */
    int64_t next_retry_delay_ms; /* override; <= 0 = none */
} rb_failure;

typedef enum rb_outcome {
    RB_OUTCOME_RETRY,
    RB_OUTCOME_DEAD,
    RB_OUTCOME_DISCARD,
    RB_OUTCOME_CATCH,
} rb_outcome;

typedef enum rb_delay_source {
    RB_SOURCE_COMPUTED,
    RB_SOURCE_SERVER_REQUESTED,
    RB_SOURCE_OVERRIDE,
} rb_delay_source;

typedef enum rb_dead_reason {
    RB_REASON_NONE,
    RB_REASON_EXHAUSTED,
    RB_REASON_NON_RETRYABLE_TYPE,
    RB_REASON_NON_RETRYABLE_FLAG,
    RB_REASON_DEADLINE,
    RB_REASON_NOT_RETRYABLE, /* policy retryable = false */
    RB_REASON_DEPENDENCY,    /* a parent it depends on failed (docs/workflows.md) */
} rb_dead_reason;

typedef struct rb_decision {
    rb_outcome outcome;
    int64_t delay_ms;   /* RETRY: the delay applied */
    int64_t retry_at_ms; /* RETRY: now + delay */
    rb_delay_source source;
    rb_dead_reason reason; /* DEAD/DISCARD/CATCH: why no retry */
} rb_decision;

/* Fills cfg with seed 001's defaults ([1,2,4,8,16,32] s, max 60 s, 2.0,
 * jitter on, 10%). Release with rb_backoff_config_release(). */
void rb_backoff_config_init(rb_backoff_config *cfg);
void rb_backoff_config_release(rb_backoff_config *cfg);
/* Deep copy; dst must be released after. */
void rb_backoff_config_copy(rb_backoff_config *dst, const rb_backoff_config *src);

/* No delay, computed, requested or overridden, is ever longer than this
 * (100 years): exponentials and Sidekiq's c^4 saturate here when the policy
 * has no smaller cap, so now + delay never overflows. */
#define RB_POLICY_DELAY_LIMIT_MS INT64_C(3155760000000)

/* The built-in default policy: Faktory's (25 retries, Sidekiq backoff). */
void rb_policy_default(rb_policy *p);
void rb_policy_release(rb_policy *p);
void rb_policy_copy(rb_policy *dst, const rb_policy *src);

/* Parses a SPEC: a JSON object text (dialect named by "dialect" or detected from
 * its keys), an FTL directive ("ftl:10 5s 1m" or "//ftl:retry 10 5s 1m"), or
 * "faktory:N". sys supplies tasker's [backoff] defaults (NULL = seed defaults).
 * On success returns 0 and fills *out (release it); on failure returns a
 * negative code, err names the field and the rule broken, *out untouched. */
int rb_policy_parse_spec(const char *spec, const rb_backoff_config *sys, rb_policy *out,
                         rb_err *err);
/* Same for an already-parsed JSON value: an object, or a string SPEC, or an
 * integer (Faktory retry N). err names keys inside the value, never the
 * field that holds it (retry_policy, custom.retry_policy, ...): the caller
 * prefixes that, once. */
int rb_policy_parse_json(const json_t *v, const rb_backoff_config *sys, rb_policy *out,
                         rb_err *err);

/* Applies Faktory's `retry` field as the client's bound (semantics.md §8):
 * 0 -> a failure discards, -1 -> a failure is dead, N -> at most N retries.
 * retry < -1 is no value (PUSH and rb_config_effective_policy reject it);
 * given anyway it is taken as -1. */
void rb_policy_apply_client_retry(rb_policy *p, int64_t retry);

/* The policy of a catch job spawned when orig is exhausted (FTL, semantics.md
 * §4): retried indefinitely at orig's maximum backoff (fixed delay; 1 h when
 * orig has no maximum), no catch of its own, no deadline, no non-retryable
 * types. Fills *out (release it). */
void rb_policy_for_catch(const rb_policy *orig, rb_policy *out);

/* Decides what follows the failure of execution number `attempt` (1-based).
 * now_ms is the failure time, first_ms the job's first enqueue time (for the
 * deadline). rng is used only for jitter/Sidekiq randomness. Pure: the same
 * inputs and rng state give the same decision. */
void rb_policy_decide(const rb_policy *p, int64_t attempt, const rb_failure *f, int64_t now_ms,
                      int64_t first_ms, rb_rng *rng, rb_decision *out);

/* tasker-core's retry_eligible (semantics.md §1): attempts == 0 ||
 * (retryable && attempts < max_attempts). */
bool rb_tasker_retry_eligible(int64_t attempts, bool retryable, int64_t max_attempts);

/* The canonical policy as JSON (new reference), and in words (appended to a
 * caller-owned buffer via the callback-free rb_buf API in common/buf.h). */
json_t *rb_policy_to_json(const rb_policy *p);
struct rb_buf;
void rb_policy_describe(const rb_policy *p, struct rb_buf *out);

const char *rb_dialect_name(rb_dialect d);
/* The dialect called name ("temporal", "tasker", "ftl", "faktory",
 * "tutorial"); 0 and *d set, or RB_ENOENT. */
int rb_dialect_from_name(const char *name, rb_dialect *d);
const char *rb_outcome_name(rb_outcome o);
const char *rb_source_name(rb_delay_source s);
const char *rb_reason_name(rb_dead_reason r);

#endif
