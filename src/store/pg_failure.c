/* One failed execution through the job's policy, for the PostgreSQL engine:
 * the decision, the attempt history entry, Faktory's `failure` hash and the
 * catch job, as texts to write into the locked row. The rules and shapes
 * are docs/protocol.md's and the same as the single-node server's fail.c. */
#include "store/pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
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
    return v ? v : json_string("unknown");
}

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

/* The catch job's own policy, stored in it (Temporal dialect): a fixed
 * delay at the original's maximum backoff, unlimited attempts. */
static json_t *catch_policy_json(const rb_policy *orig)
{
    rb_policy cp;
    rb_policy_for_catch(orig, &cp);
    int64_t ms = cp.initial_ms > 0 ? cp.initial_ms : 3600000;
    rb_policy_release(&cp);
    char d[32];
    snprintf(d, sizeof d, "%lldms", (long long)ms);
    return json_pack("{s:s, s:s, s:f, s:s, s:i}", "dialect", "temporal", "initial_interval", d,
                     "backoff_coefficient", 1.0, "maximum_interval", d, "maximum_attempts", 0);
}

static char *new_jid(rb_pg *pg)
{
    char *s = rb_xmalloc(25);
    uint64_t a = rb_rng_next(&pg->rng), b = rb_rng_next(&pg->rng);
    snprintf(s, 25, "%016llx%08llx", (unsigned long long)a,
             (unsigned long long)(b & 0xffffffffULL));
    return s;
}

static void make_catch(rb_pg *pg, const pg_locked *row, json_t *job, const rb_policy *pol,
                       json_t *errtype, json_t *message, json_t *bt, int64_t now,
                       pg_fail_out *out)
{
    out->catch_jid = new_jid(pg);
    json_t *args = json_object_get(job, "args");
    json_t *orig = json_pack("{s:s, s:O, s:O, s:{s:O, s:O, s:O}}", "jid", row->jid, "jobtype",
                             json_object_get(job, "jobtype"), "args", args ? args : json_null(),
                             "error", "errtype", errtype, "message", message, "backtrace", bt);
    char ts[RB_TIME_STRLEN];
    json_t *cj = json_pack("{s:s, s:s, s:s, s:[o], s:I, s:o, s:s, s:{s:s}}", "jid",
                           out->catch_jid, "jobtype", pol->catch_jobtype, "queue", row->queue,
                           "args", orig, "priority", (json_int_t)row->priority, "retry_policy",
                           catch_policy_json(pol), "created_at", rb_time_format(now, ts),
                           "custom", "catch_of", row->jid);
    out->catch_json = json_dumps(cj, JSON_COMPACT);
    json_decref(cj);
}

int pg_failure_decide(rb_pg *pg, const pg_locked *row, const rb_pg_failure *in, int64_t now,
                      pg_fail_out *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *job = json_loads(row->json, 0, NULL);
    if (!job)
        return rb_err_set(err, RB_ESTATE, "job %s has unreadable JSON", row->jid);
    rb_policy pol;
    rb_policy_layer layer;
    if (rb_config_effective_policy(pg_cfg(pg), job, &pol, &layer, NULL))
        rb_policy_default(&pol); /* validated at PUSH: only a config change gets here */
    rb_failure f = {
        .errtype = in->errtype,
        .message = in->message,
        .non_retryable = in->non_retryable,
        .retry_after = in->retry_after,
        .next_retry_delay_ms = in->next_retry_delay_ms,
    };
    rb_policy_decide(&pol, row->attempts, &f, now, row->first_ms ? row->first_ms : now, &pg->rng,
                     &out->d);
    const rb_decision *d = &out->d;

    json_int_t bt_limit = json_integer_value(json_object_get(job, "backtrace"));
    json_t *errtype = trimmed(in->errtype, 100), *message = trimmed(in->message, 1000);
    json_t *bt = trimmed_backtrace(in->backtrace, bt_limit > 0 ? bt_limit : 0);
    char ts[RB_TIME_STRLEN], ts2[RB_TIME_STRLEN];

    json_t *hist = row->history ? json_loads(row->history, 0, NULL) : NULL;
    if (!json_is_array(hist)) {
        json_decref(hist);
        hist = json_array();
    }
    json_t *entry = json_pack("{s:I, s:s, s:O, s:O, s:O, s:s}", "attempt",
                              (json_int_t)row->attempts, "at", rb_time_format(now, ts), "errtype",
                              errtype, "message", message, "backtrace", bt, "outcome",
                              rb_outcome_name(d->outcome));
    if (d->outcome == RB_OUTCOME_RETRY) {
        json_object_set_new(entry, "delay_ms", json_integer(d->delay_ms));
        json_object_set_new(entry, "source", json_string(rb_source_name(d->source)));
    } else {
        json_object_set_new(entry, "reason", json_string(rb_reason_name(d->reason)));
    }
    json_array_append_new(hist, entry);

    int64_t remaining = 0;
    if (d->outcome == RB_OUTCOME_RETRY)
        remaining = pol.max_attempts > 0 ? pol.max_attempts - row->attempts : -1;
    json_t *failure = json_pack("{s:I, s:I, s:s, s:O, s:O, s:O}", "retry_count",
                                (json_int_t)json_array_size(hist) - 1, "remaining",
                                (json_int_t)remaining, "failed_at", rb_time_format(now, ts),
                                "errtype", errtype, "message", message, "backtrace", bt);
    if (d->outcome == RB_OUTCOME_RETRY)
        json_object_set_new(failure, "next_at", json_string(rb_time_format(d->retry_at_ms, ts2)));
    json_object_set_new(job, "failure", failure);

    if (d->outcome != RB_OUTCOME_DISCARD) {
        out->json = json_dumps(job, JSON_COMPACT);
        out->history = json_dumps(hist, JSON_COMPACT);
        if (d->outcome == RB_OUTCOME_CATCH && pol.catch_jobtype)
            make_catch(pg, row, job, &pol, errtype, message, bt, now, out);
    }
    json_decref(errtype);
    json_decref(message);
    json_decref(bt);
    json_decref(hist);
    json_decref(job);
    rb_policy_release(&pol);
    return 0;
}

void pg_fail_out_release(pg_fail_out *o)
{
    free(o->json);
    free(o->history);
    free(o->catch_jid);
    free(o->catch_json);
    memset(o, 0, sizeof *o);
}
