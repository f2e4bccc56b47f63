/* The operator's side of flow control, once for every backend
 * (docs/protocol.md "GROUP", docs/http.md "/api/groups"): GROUP SET,
 * PAUSE, RESUME and GET and GROUPS as one request (rb_group_req), parsed
 * and checked here whether it came from the work protocol or the HTTP API;
 * what a backend reports of a group (rb_group_view) and of a queue's
 * groups (rb_group_sum); and the replies' JSON, built here from those. A
 * backend keeps the overrides and pauses durably and fills the views
 * (rb_backend.group, engine.h). Pure: no I/O, no clocks (times are
 * arguments); any thread. */
#ifndef RB_ENGINE_GROUP_CMD_H
#define RB_ENGINE_GROUP_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "engine/group.h"

struct rb_config;

/* The refusal where a backend keeps no groups (rb_backend.group NULL):
 * "GROUP: groups are not supported in distributed mode yet". */
#define RB_GROUP_CMD_UNSUPPORTED "groups are not supported in distributed mode yet"

/* The longest pause reason, in bytes. */
#define RB_GROUP_REASON_MAX 200
/* GROUPS' page size: default and largest. */
#define RB_GROUPS_LIMIT_DEFAULT 50
#define RB_GROUPS_LIMIT_MAX 1000

typedef enum rb_group_verb {
    RB_GROUP_SET,    /* the group's whole override (over; none set: removed) */
    RB_GROUP_PAUSE,  /* paused until until_ms, with reason (replaces a pause) */
    RB_GROUP_RESUME, /* the pause ended now (not paused: nothing changes) */
    RB_GROUP_GET,    /* one group's view */
    RB_GROUP_LIST,   /* GROUPS: a queue's groups, or every queue's summary */
} rb_group_verb;

/* GROUPS' state filter. */
typedef enum rb_group_state {
    RB_GROUPS_ALL,    /* every group the backend knows of */
    RB_GROUPS_ACTIVE, /* with jobs (ready or working) and not held */
    RB_GROUPS_HELD,   /* held by its concurrency or its rate */
    RB_GROUPS_PAUSED, /* paused */
} rb_group_state;

/* One request. Strings owned (rb_group_req_release). */
typedef struct rb_group_req {
    rb_group_verb verb;
    char *queue;  /* a queue name; LIST: NULL for every queue's summary */
    char *group;  /* a group name (not for LIST) */
    rb_flow_override over; /* SET: checked; over.set == 0: remove the override */
    int64_t until_ms;      /* PAUSE: in the future, at most a year away */
    char *reason;          /* PAUSE: NULL or 1..RB_GROUP_REASON_MAX bytes */
    rb_group_state state;  /* LIST */
    int64_t offset, limit; /* LIST: the page (limit 1..RB_GROUPS_LIMIT_MAX) */
} rb_group_req;

void rb_group_req_release(rb_group_req *r);

/* The verb's name as replies and logs say it: "GROUP SET", ..., "GROUPS". */
const char *rb_group_verb_name(rb_group_verb v);

/* GROUP's argument, the protocol's "SET QUEUE GROUP JSON", "PAUSE QUEUE
 * GROUP UNTIL [REASON...]", "RESUME QUEUE GROUP" or "GET QUEUE GROUP"
 * (verb case-insensitive), at now_ms. 0 with r filled, or RB_EINVAL with
 * err the whole reply text ("GROUP: subcommand must be SET, PAUSE, RESUME
 * or GET", "GROUP PAUSE: usage: GROUP PAUSE QUEUE GROUP UNTIL [REASON]",
 * "GROUP SET: group must be 1 to 200 bytes ...", "GROUP SET: limits must
 * be a JSON object, got '[1]'", "GROUP PAUSE: until '...' is in the past",
 * ...; docs/protocol.md lists them) and r released. */
int rb_group_cmd_parse(const char *arg, int64_t now_ms, rb_group_req *r, rb_err *err);

/* GROUPS' argument: empty (every queue's summary) or a JSON object
 * {"queue", "state": "all|active|held|paused", "offset", "limit"}. 0 with
 * r filled, or RB_EINVAL with err the reply text ("GROUPS: state must be
 * all, active, held or paused, got 'x'", "GROUPS: limit must be an integer
 * from 1 to 1000, got 0", ...) and r released. */
int rb_groups_cmd_parse(const char *arg, rb_group_req *r, rb_err *err);
/* The same from a parsed object (the HTTP API's query, as strings or
 * numbers); o may be NULL (defaults). */
int rb_groups_req_from_json(const json_t *o, rb_group_req *r, rb_err *err);

/* The HTTP API's forms of the other verbs: queue and group checked as
 * GROUP checks them; SET's limits a JSON value (an object), PAUSE's
 * {"until": RFC 3339 text or seconds, "reason": text} (body may be NULL
 * for RESUME and GET). 0 with r filled, or RB_EINVAL with err the reply
 * text, prefixed as GROUP's ("GROUP PAUSE: until must be ..."). */
int rb_group_req_from_json(rb_group_verb verb, const char *queue, const char *group,
                           const json_t *body, int64_t now_ms, rb_group_req *r, rb_err *err);

/* The unknown queue's refusal, for a backend that finds no queue named
 * r->queue in its store: RB_ENOENT with err "GROUP SET: no queue 'emials'".
 * A queue named in cfg's [groups] or [throttles] is known without jobs:
 * rb_group_queue_configured. */
int rb_group_no_queue(const rb_group_req *r, rb_err *err);
bool rb_group_queue_configured(const struct rb_config *cfg, const char *queue);

/* What a backend reports of one group (strings owned:
 * rb_group_view_release). */
typedef struct rb_group_view {
    char *queue, *group;
    bool known;         /* it has jobs, an override, a pause or a bucket */
    int64_t ready;      /* its enqueued jobs */
    bool ready_capped;  /* ready is a lower bound (a backend that counts no further) */
    int64_t working;    /* its working jobs */
    bool has_override;  /* over is its GROUP SET */
    rb_flow_override over;
    rb_group_hold hold;      /* why its jobs wait now */
    int64_t hold_until_ms;   /* a rate hold's or a pause's end, 0: none */
    int64_t paused_until_ms; /* 0: not paused */
    char *reason;            /* the pause's reason, or NULL */
    int64_t next_start_ms;   /* its rate bucket's next conforming time when
                                later than now, 0: none */
} rb_group_view;

void rb_group_view_release(rb_group_view *v);

/* A group's view as GROUP GET answers it (a new object): queue, group,
 * known, ready (and ready_capped when set), working, limits (resolved
 * through cfg's [groups] with each field's "from"), override, held,
 * held_until, paused_until, reason, next_start_at. */
json_t *rb_group_view_json(const struct rb_config *cfg, const rb_group_view *v);

/* Whether v passes GROUPS' state filter. */
bool rb_group_view_matches(const rb_group_view *v, rb_group_state s);

/* A queue's groups counted (GROUPS without a queue, INFO): its named
 * groups with jobs not held (active), held by concurrency or rate, paused,
 * and every group known (total). queue owned. */
typedef struct rb_group_sum {
    char *queue;
    int64_t total, active, held_concurrency, held_rate, paused;
} rb_group_sum;

/* Counts v into s. */
void rb_group_sum_add(rb_group_sum *s, const rb_group_view *v);

/* GROUPS' reply (a new object): with r->queue {"queue", "total" (the
 * groups the state selects), "active", "held": {"concurrency", "rate"},
 * "paused" (the queue's, any state), "limits" (cfg's for the queue),
 * "groups": views}; without {"queues": [{"queue", "total", "active",
 * "held", "paused", "limits"}]}. */
json_t *rb_groups_reply_json(const struct rb_config *cfg, const rb_group_req *r,
                             const rb_group_sum *sums, size_t n_sums, const rb_group_view *views,
                             size_t n_views, int64_t total);

/* A queue's limits for its named groups from cfg's [groups] (no override),
 * each field with its "from" (a new object). */
json_t *rb_group_limits_json(const struct rb_config *cfg, const char *queue,
                             const rb_flow_override *over);

/* A queue's held-back starts as a backend counts them (INFO): a group
 * entering each hold, a FETCH passing the queue over for its rate. */
typedef struct rb_group_holds {
    int64_t concurrency, rate, paused, queue_rate;
} rb_group_holds;

/* INFO's rebound.groups (a new object) from each queue's counts (sums, n,
 * by name) and held-back starts (holds[i] for sums[i]; NULL: none
 * counted): {"queues", "active", "held": {"concurrency", "rate"},
 * "paused", "by_queue": {Q: {"active", "held", "paused", "holds":
 * {"concurrency", "rate", "paused", "queue_rate"}}}}. */
json_t *rb_groups_info_json(const rb_group_sum *sums, size_t n, const rb_group_holds *holds);

/* The sentence JOB shows for an enqueued job of group held by h (not
 * RB_HOLD_NONE): "group acme runs 2 of 2" (working of limit), "group acme
 * is over its rate: next start at T", "group acme is paused until T[:
 * reason]" (T: until_ms). Caller frees. */
char *rb_group_hold_detail(const char *group, rb_group_hold h, int64_t working, int64_t limit,
                           int64_t until_ms, const char *reason);

/* The log line of a change ("GROUP PAUSE emails acme until ...Z (upstream
 * 429) by a client"), at INFO; who: "a client", "the HTTP API". */
void rb_group_log_change(const rb_group_req *r, const char *who);

#endif
