/* Flow control's rules (engine/group.h). */
#include "engine/group.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "config/schema.h"
#include "engine/gcra.h"
#include "policy/duration.h"

const char *const rb_flow_field_names[RB_FLOW_NFIELDS] = {"concurrency", "rate", "period",
                                                          "burst"};

const char *rb_group_hold_name(rb_group_hold h)
{
    switch (h) {
    case RB_HOLD_CONCURRENCY: return "concurrency";
    case RB_HOLD_RATE: return "rate";
    case RB_HOLD_PAUSED: return "paused";
    default: return NULL;
    }
}

bool rb_group_name_valid(const char *s, size_t len)
{
    if (len == 0 || len > RB_GROUP_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* Appends s quoted for a message, shortened past 60 bytes, control bytes
 * as \xNN. */
static void add_quoted(rb_buf *b, const char *s, size_t len)
{
    rb_buf_addc(b, '\'');
    for (size_t i = 0; i < len && i < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < ' ' || c == 0x7f)
            rb_buf_printf(b, "\\x%02x", c);
        else
            rb_buf_addc(b, (char)c);
    }
    if (len > 60)
        rb_buf_adds(b, "...");
    rb_buf_addc(b, '\'');
}

int rb_group_of_job(const json_t *job, const char **name, rb_err *err)
{
    *name = NULL;
    const json_t *v = json_object_get(json_object_get(job, "custom"), "group");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return rb_err_set(err, RB_EINVAL, "custom.group must be a string (a tenant, an account), got %s",
                          json_type_name(v));
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (!rb_group_name_valid(s, len) || strlen(s) != len) {
        rb_buf b = RB_BUF_INIT;
        add_quoted(&b, s, len);
        rb_err_set(err, RB_EINVAL,
                   "custom.group must be 1 to %d bytes without spaces or control characters, "
                   "got %s%s",
                   RB_GROUP_NAME_MAX, rb_buf_str(&b),
                   len > RB_GROUP_NAME_MAX ? " (too long)" : "");
        rb_buf_release(&b);
        return RB_EINVAL;
    }
    *name = s;
    return 0;
}

/* "got -1", "got 1.5", "got string" */
static int bad_value(rb_err *err, const char *rule, const json_t *v)
{
    if (json_is_integer(v))
        return rb_err_set(err, RB_EINVAL, "%s, got %lld", rule, (long long)json_integer_value(v));
    if (json_is_real(v))
        return rb_err_set(err, RB_EINVAL, "%s, got %g", rule, json_real_value(v));
    if (json_is_string(v))
        return rb_err_set(err, RB_EINVAL, "%s, got '%s'", rule, json_string_value(v));
    return rb_err_set(err, RB_EINVAL, "%s, got %s", rule, json_type_name(v));
}

int rb_flow_key_parse(rb_flow_override *o, const char *key, const json_t *v, rb_err *err)
{
    int f;
    for (f = 0; f < RB_FLOW_NFIELDS; f++)
        if (!strcmp(key, rb_flow_field_names[f]))
            break;
    if (f == RB_FLOW_NFIELDS)
        return RB_ENOENT;
    int64_t n;
    switch ((rb_flow_field)f) {
    case RB_FLOW_CONCURRENCY:
    case RB_FLOW_RATE:
    case RB_FLOW_BURST: {
        int64_t max = f == RB_FLOW_CONCURRENCY ? RB_GROUP_MAX_CONCURRENCY : RB_GCRA_MAX_RATE;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
            char rule[96];
            snprintf(rule, sizeof rule, "must be an integer from 0 to %lld%s", (long long)max,
                     f == RB_FLOW_BURST ? "" : " (0: no limit)");
            return bad_value(err, rule, v);
        }
        n = json_integer_value(v);
        break;
    }
    case RB_FLOW_PERIOD: {
        int64_t ms = -1;
        if ((json_is_string(v) || json_is_number(v)) && rb_duration_from_json(v, &ms, NULL))
            ms = -1;
        if (ms < RB_GCRA_MIN_PERIOD_MS || ms > RB_GCRA_MAX_PERIOD_MS)
            return bad_value(err, "must be a duration from \"1s\" to \"7d\" (or seconds)", v);
        n = ms;
        break;
    }
    default:
        return RB_ENOENT;
    }
    o->set |= 1u << f;
    switch ((rb_flow_field)f) {
    case RB_FLOW_CONCURRENCY: o->v.concurrency = n; break;
    case RB_FLOW_RATE: o->v.rate = n; break;
    case RB_FLOW_PERIOD: o->v.period_ms = n; break;
    default: o->v.burst = n; break;
    }
    return 0;
}

int rb_flow_override_check(const rb_flow_override *o, rb_err *err)
{
    if ((o->set & (1u << RB_FLOW_RATE)) && o->v.rate > 0 && !(o->set & (1u << RB_FLOW_PERIOD)))
        return rb_err_set(err, RB_EINVAL, "rate needs a period (\"1s\" to \"7d\")");
    return 0;
}

int rb_flow_override_parse(const json_t *v, rb_flow_override *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(v)) {
        char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        rb_err_set(err, RB_EINVAL, "limits must be a JSON object, got '%s'", text ? text : "");
        free(text);
        return RB_EINVAL;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        int rc = rb_flow_key_parse(out, key, val, err);
        if (rc == RB_ENOENT)
            return rb_err_set(err, RB_EINVAL, "unknown key '%s' (did you mean '%s'?)", key,
                              rb_config_nearest(key, rb_flow_field_names, RB_FLOW_NFIELDS));
        if (rc) {
            if (err) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                rb_err_set(err, rc, "%s %s", key, msg);
            }
            return rc;
        }
    }
    return rb_flow_override_check(out, err);
}

static int64_t field(const rb_flow_limits *l, int f)
{
    switch ((rb_flow_field)f) {
    case RB_FLOW_CONCURRENCY: return l->concurrency;
    case RB_FLOW_RATE: return l->rate;
    case RB_FLOW_PERIOD: return l->period_ms;
    default: return l->burst;
    }
}

json_t *rb_flow_override_json(const rb_flow_override *o)
{
    json_t *out = json_object();
    for (int f = 0; f < RB_FLOW_NFIELDS; f++) {
        if (!(o->set & (1u << f)))
            continue;
        int64_t n = field(&o->v, f);
        json_object_set_new(out, rb_flow_field_names[f],
                            f == RB_FLOW_PERIOD && n % 1000 ? json_real((double)n / 1000.0)
                                                            : json_integer(f == RB_FLOW_PERIOD
                                                                               ? n / 1000
                                                                               : n));
    }
    return out;
}

const char *rb_flow_from_name(rb_flow_from f)
{
    switch (f) {
    case RB_FLOW_FROM_OVERRIDE: return "override";
    case RB_FLOW_FROM_QUEUE: return "queue";
    case RB_FLOW_FROM_DEFAULT: return "default";
    default: return "none";
    }
}

void rb_flow_limits_resolve(const rb_flow_override *over, const rb_flow_override *queue,
                            const rb_flow_override *deflt, rb_flow_limits *out,
                            rb_flow_from from[RB_FLOW_NFIELDS])
{
    const rb_flow_override *layers[3] = {over, queue, deflt};
    static const rb_flow_from names[3] = {RB_FLOW_FROM_OVERRIDE, RB_FLOW_FROM_QUEUE,
                                          RB_FLOW_FROM_DEFAULT};
    int64_t v[RB_FLOW_NFIELDS] = {0};
    for (int f = 0; f < RB_FLOW_NFIELDS; f++) {
        rb_flow_from src = RB_FLOW_FROM_NONE;
        for (int l = 0; l < 3; l++)
            if (layers[l] && (layers[l]->set & (1u << f))) {
                v[f] = field(&layers[l]->v, f);
                src = names[l];
                break;
            }
        if (from)
            from[f] = src;
    }
    out->concurrency = v[RB_FLOW_CONCURRENCY];
    out->rate = v[RB_FLOW_RATE];
    out->period_ms = out->rate ? v[RB_FLOW_PERIOD] : 0;
    out->burst = out->rate ? v[RB_FLOW_BURST] : 0;
    if (out->rate && out->period_ms < RB_GCRA_MIN_PERIOD_MS) /* every place checked it */
        out->period_ms = RB_GCRA_MIN_PERIOD_MS;
}

int rb_group_until_parse(const char *s, int64_t now_ms, int64_t *until_ms, rb_err *err)
{
    int64_t ms;
    char *end = NULL;
    double secs = s && *s ? strtod(s, &end) : 0;
    if (s && *s && end && !*end && (*s >= '0' && *s <= '9')) {
        if (!(secs > 0) || !isfinite(secs))
            return rb_err_set(err, RB_EINVAL,
                              "until must be an RFC 3339 time or seconds from now, got '%s'", s);
        if (secs > RB_GROUP_PAUSE_MAX_S)
            return rb_err_set(err, RB_EINVAL, "until is more than a year away ('%s' seconds)", s);
        ms = now_ms + (int64_t)ceil(secs * 1000.0);
    } else if (s && rb_time_parse_rfc3339(s, &ms) == 0) {
        if (ms <= now_ms)
            return rb_err_set(err, RB_EINVAL, "until '%s' is in the past", s);
        if (ms - now_ms > (int64_t)RB_GROUP_PAUSE_MAX_S * 1000)
            return rb_err_set(err, RB_EINVAL, "until is more than a year away ('%s')", s);
    } else {
        return rb_err_set(err, RB_EINVAL,
                          "until must be an RFC 3339 time or seconds from now, got '%s'",
                          s ? s : "");
    }
    *until_ms = ms;
    return 0;
}
