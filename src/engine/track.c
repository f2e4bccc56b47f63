/* Progress tracking's shared rules (engine/track.h). */
#include "engine/track.h"

#include <math.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/job_state.h"

int rb_track_parse_set(const json_t *o, rb_track_set *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(o))
        return rb_err_set(err, RB_EINVAL, "TRACK SET: argument must be a JSON object");
    out->jid = json_string_value(json_object_get(o, "jid"));
    if (!out->jid || !*out->jid)
        return rb_err_set(err, RB_EINVAL, "TRACK SET: jid must be a non-empty string");
    json_t *p = json_object_get(o, "percent");
    if (p && !json_is_null(p)) {
        if (!json_is_number(p))
            return rb_err_set(err, RB_EINVAL,
                              "TRACK SET: percent must be a number from 0 to 100");
        double v = json_number_value(p);
        if (isnan(v))
            v = 0;
        v = v < 0 ? 0 : v > 100 ? 100 : floor(v);
        out->has_percent = true;
        out->percent = (int)v;
    }
    json_t *d = json_object_get(o, "desc");
    if (d && !json_is_null(d)) {
        if (!json_is_string(d) || json_string_length(d) > RB_TRACK_DESC_MAX)
            return rb_err_set(err, RB_EINVAL,
                              "TRACK SET: desc must be a string of at most %d bytes",
                              RB_TRACK_DESC_MAX);
        out->desc = json_string_value(d);
    }
    json_t *r = json_object_get(o, "reserve_until");
    if (r && !json_is_null(r) && !(json_is_string(r) && !*json_string_value(r))) {
        int64_t ms;
        if (!json_is_string(r) || rb_time_parse_rfc3339(json_string_value(r), &ms) || ms <= 0)
            return rb_err_set(err, RB_EINVAL, "TRACK SET: reserve_until must be an RFC 3339 time");
        out->reserve_until = ms;
    }
    return 0;
}

bool rb_track_enabled(const json_t *job)
{
    json_t *t = json_object_get(json_object_get(job, "custom"), "track");
    if (json_is_true(t))
        return true;
    return json_is_number(t) && json_number_value(t) != 0;
}

bool rb_track_enabled_text(const char *json)
{
    if (!json || !strstr(json, "\"track\""))
        return false;
    json_t *o = json_loads(json, 0, NULL);
    bool on = rb_track_enabled(o);
    json_decref(o);
    return on;
}

rb_track_state rb_track_state_of(int st)
{
    switch (st) {
    case RB_JOB_WORKING:
        return RB_TRACK_WORKING;
    case RB_JOB_RETRIES:
        return RB_TRACK_FAILED;
    case RB_JOB_DEAD:
        return RB_TRACK_DEAD;
    case RB_JOB_SCHEDULED:
    case RB_JOB_ENQUEUED:
    case RB_JOB_WAITING:
    case RB_JOB_BLOCKED:
        return RB_TRACK_ENQUEUED;
    default:
        return RB_TRACK_UNKNOWN;
    }
}

const char *rb_track_state_name(rb_track_state s)
{
    static const char *const names[] = {"unknown", "enqueued", "working",
                                        "success", "failed",   "dead"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

int64_t rb_track_lease_end(int64_t now, int64_t lease_end, int64_t reserve_until)
{
    int64_t max = now + RB_TRACK_RESERVE_MAX_MS;
    if (reserve_until > max)
        reserve_until = max;
    return reserve_until > lease_end ? reserve_until : lease_end;
}

json_t *rb_track_reply(const char *jid, rb_track_state s, int percent, const char *desc,
                       int64_t updated_ms)
{
    json_t *o = json_object();
    json_object_set_new(o, "jid", json_string(jid));
    if (s == RB_TRACK_UNKNOWN) {
        json_object_set_new(o, "state", json_string("unknown"));
        json_object_set_new(o, "updated_at", json_string(""));
        return o;
    }
    if (percent >= 0)
        json_object_set_new(o, "percent", json_integer(percent));
    if (desc)
        json_object_set_new(o, "desc", json_string(desc));
    json_object_set_new(o, "state", json_string(rb_track_state_name(s)));
    char t[RB_TIME_STRLEN];
    json_object_set_new(o, "updated_at",
                        json_string(updated_ms > 0 ? rb_time_format(updated_ms, t) : ""));
    return o;
}

json_t *rb_track_get(const char *jid, const rb_track_seen *v, int64_t now)
{
    rb_track_state s = RB_TRACK_UNKNOWN;
    int64_t at = 0;
    if (v->live) {
        if (v->tracked) {
            s = rb_track_state_of(v->job_state);
            at = v->state_ms;
        }
    } else if (v->has_rec && v->ended_ms && v->ended_ms + RB_TRACK_RETENTION_MS > now) {
        s = v->ended; /* remembered */
        at = v->ended_ms;
    }
    if (v->has_rec && v->updated_ms > at)
        at = v->updated_ms;
    if (at > now || at <= 0)
        at = now;
    bool rec = v->has_rec && s != RB_TRACK_UNKNOWN;
    return rb_track_reply(jid, s, rec ? v->percent : -1, rec ? v->desc : NULL, at);
}

bool rb_track_set_stores(const rb_track_seen *v, int64_t now)
{
    if (v->live)
        return v->tracked;
    return v->has_rec && v->ended_ms && v->ended_ms + RB_TRACK_RETENTION_MS > now;
}
