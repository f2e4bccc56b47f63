/* The failure record both storage modes write (failrec.h): history entry,
 * Faktory's `failure` hash and the catch job, from a decision. */
#include "policy/failrec.h"

#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"

/* s cut to at most max UTF-8 characters; "unknown" when empty. */
static json_t *trimmed(const char *s, size_t max)
{
    if (!s || !*s)
        return json_string("unknown");
    size_t i = 0, chars = 0;
    while (s[i] && chars < max) {
        i++;
        while (((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        chars++;
    }
    json_t *v = json_stringn(s, i);
    return v ? v : json_string("unknown"); /* invalid UTF-8 cannot come from jansson */
}

/* The first limit string lines of bt (an array or NULL). */
static json_t *trimmed_backtrace(const json_t *bt, int64_t limit)
{
    json_t *out = json_array();
    for (size_t i = 0; json_is_array(bt) && i < json_array_size(bt) && (int64_t)i < limit; i++) {
        json_t *line = json_array_get(bt, i);
        if (json_is_string(line))
            json_array_append(out, line);
    }
    return out;
}

void rb_failrec_build(json_t *job, const rb_failrec_input *in, const rb_policy *pol,
                      const rb_decision *d, rb_failrec *out)
{
    json_int_t bt_limit = json_integer_value(json_object_get(job, "backtrace"));
    out->errtype = trimmed(in->errtype, RB_FAILREC_ERRTYPE_MAX);
    out->message = trimmed(in->message, RB_FAILREC_MESSAGE_MAX);
    out->backtrace = trimmed_backtrace(in->backtrace, bt_limit > 0 ? bt_limit : 0);
    char ts[RB_TIME_STRLEN], ts2[RB_TIME_STRLEN];

    json_t *hist = in->history ? json_loads(in->history, 0, NULL) : NULL;
    if (!json_is_array(hist)) {
        json_decref(hist);
        hist = json_array();
    }
    int64_t at_us = in->now_us ? in->now_us : in->now * 1000;
    json_t *entry = json_pack("{s:I, s:s, s:O, s:O, s:O, s:s}", "attempt",
                              (json_int_t)in->attempt, "at", rb_time_format_us(at_us, ts),
                              "errtype", out->errtype, "message", out->message, "backtrace",
                              out->backtrace, "outcome", rb_outcome_name(d->outcome));
    if (d->outcome == RB_OUTCOME_RETRY) {
        json_object_set_new(entry, "delay_ms", json_integer(d->delay_ms));
        json_object_set_new(entry, "source", json_string(rb_source_name(d->source)));
    } else {
        json_object_set_new(entry, "reason", json_string(rb_reason_name(d->reason)));
    }
    json_array_append_new(hist, entry);
    out->history = hist;

    /* retries left after this one: -1 = unlimited; 0 when not retried */
    int64_t remaining = 0;
    if (d->outcome == RB_OUTCOME_RETRY)
        remaining = pol->max_attempts > 0 ? pol->max_attempts - in->attempt : -1;
    json_t *failure = json_pack("{s:I, s:I, s:s, s:O, s:O}", "retry_count",
                                (json_int_t)json_array_size(hist) - 1, "remaining",
                                (json_int_t)remaining, "failed_at", rb_time_format_us(at_us, ts),
                                "errtype", out->errtype, "message", out->message);
    /* optional keys are left out rather than empty, as Faktory's omitempty */
    if (json_array_size(out->backtrace))
        json_object_set(failure, "backtrace", out->backtrace);
    if (d->outcome == RB_OUTCOME_RETRY)
        json_object_set_new(failure, "next_at",
                            json_string(rb_time_format_us(d->retry_at_ms * 1000, ts2)));
    json_object_set_new(job, "failure", failure);
}

/* The catch job's retry policy as a Temporal-dialect object: a fixed delay
 * (the catch policy's), no limit on attempts. Stored in the job itself so
 * it survives restarts and needs no lookup of the original. */
static json_t *catch_policy_json(const rb_policy *orig)
{
    rb_policy cp;
    rb_policy_for_catch(orig, &cp);
    int64_t ms = cp.initial_ms > 0 ? cp.initial_ms : 3600000;
    rb_policy_release(&cp);
    char dur[32];
    snprintf(dur, sizeof dur, "%lldms", (long long)ms);
    return json_pack("{s:s, s:s, s:f, s:s, s:i}", "dialect", "temporal", "initial_interval", dur,
                     "backoff_coefficient", 1.0, "maximum_interval", dur, "maximum_attempts", 0);
}

json_t *rb_failrec_catch_job(const rb_failrec *r, const json_t *job, const char *jid,
                             const char *catch_jid, const char *queue, int64_t priority,
                             const rb_policy *pol, int64_t now)
{
    json_t *args = json_object_get(job, "args");
    json_t *jobtype = json_object_get(job, "jobtype");
    json_t *orig = json_pack("{s:s, s:O, s:O, s:{s:O, s:O, s:O}}", "jid", jid, "jobtype",
                             jobtype ? jobtype : json_null(), "args", args ? args : json_null(),
                             "error", "errtype", r->errtype, "message", r->message, "backtrace",
                             r->backtrace);
    char ts[RB_TIME_STRLEN];
    return json_pack("{s:s, s:s, s:s, s:[o], s:I, s:o, s:s, s:{s:s}}", "jid", catch_jid,
                     "jobtype", pol->catch_jobtype, "queue", queue, "args", orig, "priority",
                     (json_int_t)priority, "retry_policy", catch_policy_json(pol), "created_at",
                     rb_time_format_us(now * 1000, ts), "custom", "catch_of", jid);
}

void rb_failrec_release(rb_failrec *r)
{
    json_decref(r->errtype);
    json_decref(r->message);
    json_decref(r->backtrace);
    json_decref(r->history);
    memset(r, 0, sizeof *r);
}
