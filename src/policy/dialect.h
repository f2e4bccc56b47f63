/* Internal to src/policy: the per-dialect parsers behind rb_policy_parse_spec()
 * and rb_policy_parse_json(), and the small JSON and policy-building helpers
 * they share. Not a public interface. */
#ifndef RB_POLICY_DIALECT_H
#define RB_POLICY_DIALECT_H

#include "policy/policy.h"

/* Each parser: obj is the whole SPEC object (its "dialect" key, if any, is
 * ignored); fills *out (zeroed by the caller, released by the caller on
 * failure) and returns 0, or a negative code with err naming the field and
 * the rule. */
int rb_dialect_parse_temporal(const json_t *obj, rb_policy *out, rb_err *err);
int rb_dialect_parse_tasker(const json_t *obj, const rb_backoff_config *sys, rb_policy *out,
                            rb_err *err);
int rb_dialect_parse_faktory(const json_t *obj, rb_policy *out, rb_err *err);
int rb_dialect_parse_tutorial(const json_t *obj, rb_policy *out, rb_err *err);
/* FTL from the directive text after "ftl:" / "//ftl:retry" (count min max
 * catch verb). */
int rb_dialect_parse_ftl_text(const char *text, rb_policy *out, rb_err *err);

/* The keys each dialect owns, NULL-terminated (for detection and for
 * rejecting stray keys). */
extern const char *const rb_dialect_temporal_keys[];
extern const char *const rb_dialect_tasker_keys[];
extern const char *const rb_dialect_faktory_keys[];
extern const char *const rb_dialect_tutorial_keys[];
extern const char *const rb_dialect_ftl_keys[];

/* A JSON value as short text for messages (strings unquoted), into out. */
const char *rb_json_brief(const json_t *v, char *out, size_t n);
/* obj[key] as an integer (JSON integer only): 0 and *val set, 1 when absent,
 * negative with err "KEY: must be an integer, got 'V'". */
int rb_json_get_int(const json_t *obj, const char *key, int64_t *val, rb_err *err);
/* obj[key] as a number (integer or real). Same returns. */
int rb_json_get_number(const json_t *obj, const char *key, double *val, rb_err *err);
/* obj[key] as a boolean. Same returns. */
int rb_json_get_bool(const json_t *obj, const char *key, bool *val, rb_err *err);
/* obj[key] as a duration (rb_duration_from_json). Same returns, err prefixed. */
int rb_json_get_duration(const json_t *obj, const char *key, int64_t *ms, rb_err *err);

/* Appends a printf-formatted warning to p->warnings. */
void rb_policy_warn(rb_policy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a policy of dialect d with the neutral defaults: retryable, no
 * jitter, unlimited, dead on exhaustion, exponential x2 from 1 s. */
void rb_policy_blank(rb_policy *p, rb_dialect d);

#endif
