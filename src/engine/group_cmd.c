/* GROUP and GROUPS: requests, views and replies (engine/group_cmd.h). */
#include "engine/group_cmd.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "config/config.h"

void rb_group_req_release(rb_group_req *r)
{
    free(r->queue);
    free(r->group);
    free(r->reason);
    memset(r, 0, sizeof *r);
}

const char *rb_group_verb_name(rb_group_verb v)
{
    switch (v) {
    case RB_GROUP_SET: return "GROUP SET";
    case RB_GROUP_PAUSE: return "GROUP PAUSE";
    case RB_GROUP_RESUME: return "GROUP RESUME";
    case RB_GROUP_GET: return "GROUP GET";
    default: return "GROUPS";
    }
}

static const char *const usages[] = {
    [RB_GROUP_SET] = "GROUP SET QUEUE GROUP JSON",
    [RB_GROUP_PAUSE] = "GROUP PAUSE QUEUE GROUP UNTIL [REASON]",
    [RB_GROUP_RESUME] = "GROUP RESUME QUEUE GROUP",
    [RB_GROUP_GET] = "GROUP GET QUEUE GROUP",
};

/* err's message prefixed with the verb's name ("GROUP SET: ..."). */
static int fail(rb_group_req *r, rb_err *err, int rc)
{
    rb_err_prefix(err, "%s", rb_group_verb_name(r->verb));
    rb_group_verb v = r->verb;
    rb_group_req_release(r);
    r->verb = v;
    return rc;
}

/* The queue and group names into r: the queue-name rule for both; the
 * ungrouped jobs cannot be named. */
static int set_names(rb_group_req *r, const char *queue, size_t qlen, const char *group,
                     size_t glen, rb_err *err)
{
    if (!queue || !rb_group_name_valid(queue, qlen) || strlen(queue) < qlen)
        return rb_err_set(err, RB_EINVAL,
                          "queue must be 1 to %d bytes without spaces or control characters",
                          RB_GROUP_NAME_MAX);
    r->queue = rb_xstrndup(queue, qlen);
    if (!group || !rb_group_name_valid(group, glen) || strlen(group) < glen)
        return rb_err_set(err, RB_EINVAL,
                          "group must be 1 to %d bytes without spaces or control characters "
                          "(ungrouped jobs: use QUEUE PAUSE or [throttles.%s])",
                          RB_GROUP_NAME_MAX, r->queue);
    r->group = rb_xstrndup(group, glen);
    return 0;
}

static int set_reason(rb_group_req *r, const char *reason, size_t len, rb_err *err)
{
    if (!reason || !len)
        return 0;
    if (len > RB_GROUP_REASON_MAX)
        return rb_err_set(err, RB_EINVAL, "reason is longer than %d bytes", RB_GROUP_REASON_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)reason[i] < ' ' || reason[i] == 0x7f)
            return rb_err_set(err, RB_EINVAL, "reason must not hold control characters");
    r->reason = rb_xstrndup(reason, len);
    return 0;
}

static int set_limits(rb_group_req *r, const json_t *v, rb_err *err)
{
    return rb_flow_override_parse(v, &r->over, err);
}

/* The next blank-separated word of *p: its start and length (0 at the
 * end); *p moves past it and the blanks after it. */
static size_t word(const char **p, const char **start)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    *start = s;
    size_t n = strcspn(s, " \t");
    s += n;
    while (*s == ' ' || *s == '\t')
        s++;
    *p = s;
    return n;
}

int rb_group_cmd_parse(const char *arg, int64_t now_ms, rb_group_req *r, rb_err *err)
{
    memset(r, 0, sizeof *r);
    const char *p = arg ? arg : "", *w;
    size_t n = word(&p, &w);
    static const struct {
        const char *name;
        rb_group_verb verb;
    } verbs[] = {{"SET", RB_GROUP_SET},
                 {"PAUSE", RB_GROUP_PAUSE},
                 {"RESUME", RB_GROUP_RESUME},
                 {"GET", RB_GROUP_GET}};
    size_t i;
    for (i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (n == strlen(verbs[i].name) && !strncasecmp(w, verbs[i].name, n))
            break;
    if (i == sizeof verbs / sizeof verbs[0])
        return rb_err_set(err, RB_EINVAL, "GROUP: subcommand must be SET, PAUSE, RESUME or GET");
    r->verb = verbs[i].verb;
    const char *q, *g;
    size_t qn = word(&p, &q), gn = word(&p, &g);
    bool rest = *p != '\0';
    bool arity = qn && gn &&
                 (r->verb == RB_GROUP_SET || r->verb == RB_GROUP_PAUSE ? rest : !rest);
    if (!arity) {
        rb_err_set(err, RB_EINVAL, "usage: %s", usages[r->verb]);
        return fail(r, err, RB_EINVAL);
    }
    if (set_names(r, q, qn, g, gn, err))
        return fail(r, err, RB_EINVAL);
    if (r->verb == RB_GROUP_SET) {
        json_t *v = json_loads(p, JSON_DECODE_ANY, NULL);
        if (!v) {
            rb_err_set(err, RB_EINVAL, "limits must be a JSON object, got '%.100s'", p);
            return fail(r, err, RB_EINVAL);
        }
        int rc = set_limits(r, v, err);
        json_decref(v);
        if (rc)
            return fail(r, err, rc);
    } else if (r->verb == RB_GROUP_PAUSE) {
        const char *u;
        size_t un = word(&p, &u);
        char *until = rb_xstrndup(u, un);
        int rc = rb_group_until_parse(until, now_ms, &r->until_ms, err);
        free(until);
        size_t rn = strlen(p);
        while (rn && (p[rn - 1] == ' ' || p[rn - 1] == '\t'))
            rn--;
        if (rc || (rc = set_reason(r, p, rn, err)))
            return fail(r, err, rc);
    }
    return 0;
}

static const char *const state_names[] = {"all", "active", "held", "paused"};

/* An integer of o's key given as a number or a decimal string (the HTTP
 * query), within [lo, hi]; def when absent. */
static int int_field(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t def,
                     int64_t *out, rb_err *err)
{
    const json_t *v = json_object_get(o, key);
    *out = def;
    if (!v)
        return 0;
    long long n = 0;
    char *end = NULL;
    bool ok = false;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
        ok = true;
    } else if (json_is_string(v) && *json_string_value(v)) {
        n = strtoll(json_string_value(v), &end, 10);
        ok = end && !*end;
    }
    if (!ok || n < lo || n > hi) {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        rb_err_set(err, RB_EINVAL, "%s must be an integer from %lld to %lld, got %s", key,
                   (long long)lo, (long long)hi, text ? text : "?");
        free(text);
        return RB_EINVAL;
    }
    *out = n;
    return 0;
}

int rb_groups_req_from_json(const json_t *o, rb_group_req *r, rb_err *err)
{
    memset(r, 0, sizeof *r);
    r->verb = RB_GROUP_LIST;
    int rc = RB_EINVAL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        if (strcmp(key, "queue") && strcmp(key, "state") && strcmp(key, "offset") &&
            strcmp(key, "limit")) {
            rb_err_set(err, RB_EINVAL, "unknown key '%s' (queue, state, offset, limit)", key);
            return fail(r, err, rc);
        }
    }
    const json_t *q = json_object_get(o, "queue");
    if (q && !json_is_null(q)) {
        if (!json_is_string(q) || !rb_group_name_valid(json_string_value(q), json_string_length(q))) {
            rb_err_set(err, RB_EINVAL,
                       "queue must be 1 to %d bytes without spaces or control characters",
                       RB_GROUP_NAME_MAX);
            return fail(r, err, rc);
        }
        r->queue = rb_xstrdup(json_string_value(q));
    }
    const json_t *s = json_object_get(o, "state");
    if (s && !json_is_null(s)) {
        const char *name = json_is_string(s) ? json_string_value(s) : "";
        size_t i;
        for (i = 0; i < 4 && strcmp(name, state_names[i]); i++)
            ;
        if (i == 4) {
            char *text = json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY);
            rb_err_set(err, RB_EINVAL, "state must be all, active, held or paused, got '%s'",
                       json_is_string(s) ? name : text ? text : "?");
            free(text);
            return fail(r, err, rc);
        }
        r->state = (rb_group_state)i;
    }
    if (int_field(o, "offset", 0, INT32_MAX, 0, &r->offset, err) ||
        int_field(o, "limit", 1, RB_GROUPS_LIMIT_MAX, RB_GROUPS_LIMIT_DEFAULT, &r->limit, err))
        return fail(r, err, rc);
    return 0;
}

int rb_groups_cmd_parse(const char *arg, rb_group_req *r, rb_err *err)
{
    while (arg && (*arg == ' ' || *arg == '\t'))
        arg++;
    if (!arg || !*arg)
        return rb_groups_req_from_json(NULL, r, err);
    json_t *o = json_loads(arg, JSON_DECODE_ANY, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        memset(r, 0, sizeof *r);
        r->verb = RB_GROUP_LIST;
        rb_err_set(err, RB_EINVAL, "argument must be a JSON object, got '%.100s'", arg);
        return fail(r, err, RB_EINVAL);
    }
    int rc = rb_groups_req_from_json(o, r, err);
    json_decref(o);
    return rc;
}

int rb_group_req_from_json(rb_group_verb verb, const char *queue, const char *group,
                           const json_t *body, int64_t now_ms, rb_group_req *r, rb_err *err)
{
    memset(r, 0, sizeof *r);
    r->verb = verb;
    if (set_names(r, queue, queue ? strlen(queue) : 0, group, group ? strlen(group) : 0, err))
        return fail(r, err, RB_EINVAL);
    if (verb == RB_GROUP_SET && set_limits(r, body, err))
        return fail(r, err, RB_EINVAL);
    if (verb != RB_GROUP_PAUSE)
        return 0;
    if (!json_is_object(body)) {
        rb_err_set(err, RB_EINVAL, "body must be a JSON object {\"until\", \"reason\"}");
        return fail(r, err, RB_EINVAL);
    }
    const json_t *u = json_object_get(body, "until");
    char text[64] = "";
    if (json_is_string(u))
        snprintf(text, sizeof text, "%s", json_string_value(u));
    else if (json_is_integer(u))
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(u));
    else if (json_is_real(u))
        snprintf(text, sizeof text, "%.3f", json_real_value(u));
    const json_t *why = json_object_get(body, "reason");
    if (why && !json_is_null(why) && !json_is_string(why)) {
        rb_err_set(err, RB_EINVAL, "reason must be a string");
        return fail(r, err, RB_EINVAL);
    }
    if (rb_group_until_parse(text, now_ms, &r->until_ms, err) ||
        set_reason(r, json_string_value(why), why ? json_string_length(why) : 0, err))
        return fail(r, err, RB_EINVAL);
    return 0;
}

int rb_group_no_queue(const rb_group_req *r, rb_err *err)
{
    return rb_err_set(err, RB_ENOENT, "%s: no queue '%s'", rb_group_verb_name(r->verb),
                      r->queue ? r->queue : "");
}

bool rb_group_queue_configured(const rb_config *cfg, const char *queue)
{
    return rb_config_groups_of(cfg, queue) || rb_config_throttle(cfg, queue);
}

/* --- views --- */

void rb_group_view_release(rb_group_view *v)
{
    free(v->queue);
    free(v->group);
    free(v->reason);
    memset(v, 0, sizeof *v);
}

static json_t *time_or_null(int64_t ms)
{
    char t[RB_TIME_STRLEN];
    return ms > 0 ? json_string(rb_time_format(ms, t)) : json_null();
}

json_t *rb_group_limits_json(const rb_config *cfg, const char *queue, const rb_flow_override *over)
{
    rb_flow_limits l;
    rb_flow_from from[RB_FLOW_NFIELDS];
    rb_config_group_limits(cfg, queue, over, &l, from);
    rb_flow_override all = {.set = (1u << RB_FLOW_NFIELDS) - 1, .v = l};
    json_t *o = rb_flow_override_json(&all);
    json_t *f = json_object();
    for (int i = 0; i < RB_FLOW_NFIELDS; i++)
        json_object_set_new(f, rb_flow_field_names[i], json_string(rb_flow_from_name(from[i])));
    json_object_set_new(o, "from", f);
    return o;
}

json_t *rb_group_view_json(const rb_config *cfg, const rb_group_view *v)
{
    json_t *o = json_pack("{s:s, s:s, s:b, s:I, s:I}", "queue", v->queue, "group", v->group,
                          "known", v->known, "ready", (json_int_t)v->ready, "working",
                          (json_int_t)v->working);
    if (v->ready_capped)
        json_object_set_new(o, "ready_capped", json_true());
    json_object_set_new(o, "limits",
                        rb_group_limits_json(cfg, v->queue, v->has_override ? &v->over : NULL));
    json_object_set_new(o, "override",
                        v->has_override ? rb_flow_override_json(&v->over) : json_null());
    const char *held = rb_group_hold_name(v->hold);
    json_object_set_new(o, "held", held ? json_string(held) : json_null());
    json_object_set_new(o, "held_until", time_or_null(v->hold_until_ms));
    json_object_set_new(o, "paused_until", time_or_null(v->paused_until_ms));
    json_object_set_new(o, "reason", v->reason ? json_string(v->reason) : json_null());
    json_object_set_new(o, "next_start_at", time_or_null(v->next_start_ms));
    return o;
}

bool rb_group_view_matches(const rb_group_view *v, rb_group_state s)
{
    switch (s) {
    case RB_GROUPS_ACTIVE: return v->hold == RB_HOLD_NONE && (v->ready || v->working);
    case RB_GROUPS_HELD: return v->hold == RB_HOLD_CONCURRENCY || v->hold == RB_HOLD_RATE;
    case RB_GROUPS_PAUSED: return v->hold == RB_HOLD_PAUSED;
    default: return true;
    }
}

void rb_group_sum_add(rb_group_sum *s, const rb_group_view *v)
{
    s->total++;
    if (rb_group_view_matches(v, RB_GROUPS_ACTIVE))
        s->active++;
    else if (v->hold == RB_HOLD_CONCURRENCY)
        s->held_concurrency++;
    else if (v->hold == RB_HOLD_RATE)
        s->held_rate++;
    else if (v->hold == RB_HOLD_PAUSED)
        s->paused++;
}

/* s's counts into o. */
static void sum_into(const rb_config *cfg, json_t *o, const rb_group_sum *s)
{
    json_object_set_new(o, "active", json_integer(s->active));
    json_object_set_new(o, "held", json_pack("{s:I, s:I}", "concurrency",
                                             (json_int_t)s->held_concurrency, "rate",
                                             (json_int_t)s->held_rate));
    json_object_set_new(o, "paused", json_integer(s->paused));
    json_object_set_new(o, "limits", rb_group_limits_json(cfg, s->queue, NULL));
}

json_t *rb_groups_reply_json(const rb_config *cfg, const rb_group_req *r,
                             const rb_group_sum *sums, size_t n_sums, const rb_group_view *views,
                             size_t n_views, int64_t total)
{
    if (r->queue) {
        rb_group_sum none = {.queue = r->queue};
        json_t *o = json_pack("{s:s, s:I}", "queue", r->queue, "total", (json_int_t)total);
        sum_into(cfg, o, n_sums ? &sums[0] : &none);
        json_t *a = json_array();
        for (size_t i = 0; i < n_views; i++)
            json_array_append_new(a, rb_group_view_json(cfg, &views[i]));
        json_object_set_new(o, "groups", a);
        return o;
    }
    json_t *a = json_array();
    for (size_t i = 0; i < n_sums; i++) {
        json_t *o = json_pack("{s:s, s:I}", "queue", sums[i].queue, "total",
                              (json_int_t)sums[i].total);
        sum_into(cfg, o, &sums[i]);
        json_array_append_new(a, o);
    }
    return json_pack("{s:o}", "queues", a);
}

void rb_group_log_change(const rb_group_req *r, const char *who)
{
    char t[RB_TIME_STRLEN];
    switch (r->verb) {
    case RB_GROUP_SET: {
        json_t *o = rb_flow_override_json(&r->over);
        char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        rb_log(RB_LOG_INFO, "GROUP SET %s %s %s by %s", r->queue, r->group, text ? text : "{}",
               who);
        free(text);
        json_decref(o);
        break;
    }
    case RB_GROUP_PAUSE:
        rb_log(RB_LOG_INFO, "GROUP PAUSE %s %s until %s%s%s%s by %s", r->queue, r->group,
               rb_time_format(r->until_ms, t), r->reason ? " (" : "", r->reason ? r->reason : "",
               r->reason ? ")" : "", who);
        break;
    case RB_GROUP_RESUME:
        rb_log(RB_LOG_INFO, "GROUP RESUME %s %s by %s", r->queue, r->group, who);
        break;
    default:
        break;
    }
}

char *rb_group_hold_detail(const char *group, rb_group_hold h, int64_t working, int64_t limit,
                           int64_t until_ms, const char *reason)
{
    char t[RB_TIME_STRLEN];
    rb_buf d = RB_BUF_INIT;
    if (h == RB_HOLD_CONCURRENCY)
        rb_buf_printf(&d, "group %s runs %lld of %lld", group, (long long)working,
                      (long long)limit);
    else if (h == RB_HOLD_RATE)
        rb_buf_printf(&d, "group %s is over its rate: next start at %s", group,
                      rb_time_format(until_ms, t));
    else
        rb_buf_printf(&d, "group %s is paused until %s%s%s", group, rb_time_format(until_ms, t),
                      reason ? ": " : "", reason ? reason : "");
    return rb_buf_detach(&d, NULL);
}

json_t *rb_groups_info_json(const rb_group_sum *sums, size_t n, const rb_group_holds *holds)
{
    rb_group_sum all = {0};
    json_t *by = json_object();
    for (size_t i = 0; i < n; i++) {
        all.active += sums[i].active;
        all.held_concurrency += sums[i].held_concurrency;
        all.held_rate += sums[i].held_rate;
        all.paused += sums[i].paused;
        rb_group_holds h = holds ? holds[i] : (rb_group_holds){0};
        json_object_set_new(
            by, sums[i].queue,
            json_pack("{s:I, s:{s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I}}", "active",
                      (json_int_t)sums[i].active, "held", "concurrency",
                      (json_int_t)sums[i].held_concurrency, "rate",
                      (json_int_t)sums[i].held_rate, "paused", (json_int_t)sums[i].paused,
                      "holds", "concurrency", (json_int_t)h.concurrency, "rate",
                      (json_int_t)h.rate, "paused", (json_int_t)h.paused, "queue_rate",
                      (json_int_t)h.queue_rate));
    }
    return json_pack("{s:I, s:I, s:{s:I, s:I}, s:I, s:o}", "queues", (json_int_t)n, "active",
                     (json_int_t)all.active, "held", "concurrency",
                     (json_int_t)all.held_concurrency, "rate", (json_int_t)all.held_rate,
                     "paused", (json_int_t)all.paused, "by_queue", by);
}
