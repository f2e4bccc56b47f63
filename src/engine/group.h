/* Flow control's rules, once for every backend (docs/flow-control.md):
 * a job's group (custom.group), group names, the limits of a group or a
 * queue (concurrency, rate, period, burst) as written in [groups.QUEUE],
 * [groups."*"] and GROUP SET, their resolution field by field, a pause's
 * UNTIL, and the names of holds. Pure: no I/O, no clocks (times are
 * arguments); any thread may call these. A backend keeps the groups, their
 * turns and holds. */
#ifndef RB_ENGINE_GROUP_H
#define RB_ENGINE_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* A group name's longest length in bytes (the queue-name rule). */
#define RB_GROUP_NAME_MAX 200
/* The largest concurrency accepted. */
#define RB_GROUP_MAX_CONCURRENCY 1000000

/* The refusals where a backend keeps no groups (rb_backend.groups false)
 * or applies no limits (rb_backend.flow_limits false): rb_eng_flow_check
 * and rb_eng_flow_limits_check (engine/flow.h). */
#define RB_GROUP_UNSUPPORTED "custom.group is not supported in distributed mode yet"
#define RB_FLOW_LIMITS_UNSUPPORTED                                                             \
    "group limits and queue rates ([groups] concurrency or rate, [throttles] rate) are not "   \
    "supported in distributed mode yet"

/* Why a group's jobs wait although it has some (stored: never renumber). */
typedef enum rb_group_hold {
    RB_HOLD_NONE = 0,        /* runnable */
    RB_HOLD_CONCURRENCY = 1, /* its working jobs reached its concurrency */
    RB_HOLD_RATE = 2,        /* its bucket does not conform until a time */
    RB_HOLD_PAUSED = 3,      /* GROUP PAUSE until a time */
} rb_group_hold;

/* "concurrency", "rate", "paused", or NULL for RB_HOLD_NONE. */
const char *rb_group_hold_name(rb_group_hold h);

/* Whether s (len bytes) is a group name: 1 to RB_GROUP_NAME_MAX bytes, no
 * space, control byte or DEL (so it can be named on the wire). */
bool rb_group_name_valid(const char *s, size_t len);

/* The group job names in custom.group: *name is the string (borrowed from
 * job), or NULL for an ungrouped job (no custom, no custom.group, or
 * null). 0, or RB_EINVAL with err "custom.group must be a string (a
 * tenant, an account), got number" / "custom.group must be 1 to 200 bytes
 * without spaces or control characters, got 'a b'" (no "job J" prefix: the
 * caller adds it). */
int rb_group_of_job(const json_t *job, const char **name, rb_err *err);

/* Limits of a group or a queue. 0 in concurrency or rate: no limit. */
typedef struct rb_flow_limits {
    int64_t concurrency; /* 0..RB_GROUP_MAX_CONCURRENCY */
    int64_t rate;        /* starts per period, 0..RB_GCRA_MAX_RATE */
    int64_t period_ms;   /* with a rate: RB_GCRA_MIN_PERIOD_MS..RB_GCRA_MAX_PERIOD_MS */
    int64_t burst;       /* with a rate: 0..RB_GCRA_MAX_RATE */
} rb_flow_limits;

/* The fields of limits, in resolution and output order. */
typedef enum rb_flow_field {
    RB_FLOW_CONCURRENCY,
    RB_FLOW_RATE,
    RB_FLOW_PERIOD,
    RB_FLOW_BURST,
    RB_FLOW_NFIELDS
} rb_flow_field;

/* Limits as written in one place ([groups.QUEUE], [groups."*"], a GROUP
 * SET): the fields set (bit 1 << rb_flow_field) and their values; the
 * others inherit. */
typedef struct rb_flow_override {
    unsigned set;
    rb_flow_limits v;
} rb_flow_override;

/* "concurrency", "rate", "period", "burst". */
extern const char *const rb_flow_field_names[RB_FLOW_NFIELDS];

/* One key of limits into o: key one of rb_flow_field_names, v its JSON
 * value (concurrency and rate integers 0..1000000, 0 meaning no limit;
 * period a duration "1s" to "7d" or whole seconds; burst an integer
 * 0..1000000). 0; RB_ENOENT for an unknown key (err unset: callers suggest
 * the nearest name their own way); RB_EINVAL with err "must be an integer
 * from 0 to 1000000 (0: no limit), got -1" (no key: the caller prefixes
 * it). */
int rb_flow_key_parse(rb_flow_override *o, const char *key, const json_t *v, rb_err *err);

/* The cross-field rule of one place's limits: a rate other than 0 needs a
 * period. 0, or RB_EINVAL with err "rate needs a period (\"1s\" to
 * \"7d\")". */
int rb_flow_override_check(const rb_flow_override *o, rb_err *err);

/* GROUP SET's JSON: an object of the keys above ({} clears the override).
 * 0, or RB_EINVAL with err "limits must be a JSON object, got '[1]'",
 * "concurrency must be ...", "unknown key 'concurency' (did you mean
 * 'concurrency'?)" or "rate needs a period ...". */
int rb_flow_override_parse(const json_t *v, rb_flow_override *out, rb_err *err);

/* o's fields as a JSON object (new reference): period in seconds. */
json_t *rb_flow_override_json(const rb_flow_override *o);

/* Where a resolved field came from. */
typedef enum rb_flow_from {
    RB_FLOW_FROM_NONE,
    RB_FLOW_FROM_OVERRIDE, /* the group's GROUP SET */
    RB_FLOW_FROM_QUEUE,    /* [groups.QUEUE] */
    RB_FLOW_FROM_DEFAULT,  /* [groups."*"] */
} rb_flow_from;

/* "none", "override", "queue", "default". */
const char *rb_flow_from_name(rb_flow_from f);

/* A named group's effective limits, field by field the first place that
 * sets it: over (the group's GROUP SET), queue ([groups.QUEUE]), deflt
 * ([groups."*"]); each may be NULL. from (may be NULL) gets each field's
 * source. A rate of 0 clears period and burst. */
void rb_flow_limits_resolve(const rb_flow_override *over, const rb_flow_override *queue,
                            const rb_flow_override *deflt, rb_flow_limits *out,
                            rb_flow_from from[RB_FLOW_NFIELDS]);

/* The longest GROUP PAUSE, in seconds (a year). */
#define RB_GROUP_PAUSE_MAX_S 31536000

/* GROUP PAUSE's UNTIL: an RFC 3339 time, or seconds from now_ms (integer
 * or decimal, > 0). 0 with *until_ms set, or RB_EINVAL with err "until
 * must be an RFC 3339 time or seconds from now, got 'soon'", "until
 * '2020-01-01T00:00:00Z' is in the past" or "until is more than a year
 * away ('2099-01-01T00:00:00Z')". */
int rb_group_until_parse(const char *s, int64_t now_ms, int64_t *until_ms, rb_err *err);

#endif
