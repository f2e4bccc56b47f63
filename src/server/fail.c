/* A failed execution (FAIL, or an expired reservation) through the job's
 * policy: the attempt history, Faktory's `failure` hash, and the outcome:
 * retry, dead, discard, or catch (the original dead, a catch job enqueued). */
#include "server/srv.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "policy/policy.h"
#include "server/log.h"
#include "server/metrics.h"

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

static json_t *trimmed_backtrace(const json_t *bt, int64_t limit)
{
    json_t *out = json_array();
    if (!json_is_array(bt))
        return out;
    for (size_t i = 0; i < json_array_size(bt) && (int64_t)i < limit; i++) {
        json_t *line = json_array_get(bt, i);
        if (json_is_string(line))
            json_array_append(out, line);
    }
    return out;
}

/* The delay's source as docs/protocol.md spells it on the wire. */
/* The catch job's retry policy as a Temporal-dialect object: a fixed delay
 * (the catch policy's), no limit on attempts. Stored in the job itself so it
 * survives restarts and needs no lookup of the original. */
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

static void spawn_catch(rb_srv *srv, const rb_job *j, json_t *job, const rb_policy *pol,
                        json_t *errtype, json_t *message, json_t *bt, int64_t now)
{
    char *jid = rb_srv_new_jid(srv);
    json_t *args = json_object_get(job, "args");
    json_t *orig = json_pack("{s:s, s:O, s:O, s:{s:O, s:O, s:O}}", "jid", j->jid, "jobtype",
                             json_object_get(job, "jobtype"), "args",
                             args ? args : json_null(), "error", "errtype", errtype, "message",
                             message, "backtrace", bt);
    char ts[RB_TIME_STRLEN];
    json_t *cj = json_pack("{s:s, s:s, s:s, s:[o], s:I, s:o, s:s, s:{s:s}}", "jid", jid,
                           "jobtype", pol->catch_jobtype, "queue", j->queue->name, "args", orig,
                           "priority", (json_int_t)j->priority, "retry_policy",
                           catch_policy_json(pol), "created_at", rb_time_format(now, ts),
                           "custom", "catch_of", j->jid);
    char *text = json_dumps(cj, JSON_COMPACT);
    json_decref(cj);
    rb_job *c = rb_job_new(jid, text, j->queue, j->priority);
    c->reserve_s = (int32_t)srv->cfg.server.reserve_for_s;
    rb_jobs_add(&srv->jobs, c);
    rb_srv_enqueue(srv, c, now, now);
    rb_srv_persist(srv, c);
    rb_log(RB_LOG_INFO, "job %s exhausted its retries: catch job %s (%s) enqueued", j->jid, jid,
           pol->catch_jobtype);
    free(jid);
}

int rb_srv_fail_job(rb_srv *srv, rb_job *j, const rb_fail_input *in, int64_t now, rb_err *err)
{
    json_t *job = json_loads(j->json, 0, NULL);
    if (!job)
        return rb_err_set(err, RB_ESTATE, "job %s has unreadable JSON", j->jid);
    rb_policy pol;
    rb_policy_layer layer;
    rb_err perr = {0};
    if (rb_config_effective_policy(&srv->cfg, job, &pol, &layer, &perr)) {
        /* validated at PUSH, so only a config change can get here */
        rb_log(RB_LOG_WARN, "job %s: %s; using the default policy", j->jid, rb_err_msg(&perr));
        rb_policy_default(&pol);
    }
    rb_failure f = {
        .errtype = in->errtype,
        .message = in->message,
        .non_retryable = in->non_retryable,
        .retry_after = in->retry_after,
        .next_retry_delay_ms = in->next_retry_delay_ms,
    };
    rb_decision d;
    rb_policy_decide(&pol, j->attempts, &f, now, j->first_ms ? j->first_ms : now, &srv->rng, &d);
    srv->total_failures++;
    rb_metrics_job(srv->metrics, RB_M_FAILED, j);
    rb_metrics_job(srv->metrics, d.outcome == RB_OUTCOME_RETRY ? RB_M_RETRIED
                                 : d.outcome == RB_OUTCOME_DISCARD ? RB_M_DISCARDED : RB_M_DEAD, j);
    if (d.outcome == RB_OUTCOME_RETRY)
        rb_metrics_retry_delay(srv->metrics, d.delay_ms);

    json_int_t bt_limit = json_integer_value(json_object_get(job, "backtrace"));
    json_t *errtype = trimmed(in->errtype, 100), *message = trimmed(in->message, 1000);
    json_t *bt = trimmed_backtrace(in->backtrace, bt_limit > 0 ? bt_limit : 0);
    char ts[RB_TIME_STRLEN], ts2[RB_TIME_STRLEN];

    json_t *hist = j->history ? json_loads(j->history, 0, NULL) : NULL;
    if (!json_is_array(hist)) {
        json_decref(hist);
        hist = json_array();
    }
    json_t *entry = json_pack("{s:I, s:s, s:O, s:O, s:O, s:s}", "attempt", (json_int_t)j->attempts,
                              "at", rb_time_format(now, ts), "errtype", errtype, "message",
                              message, "backtrace", bt, "outcome", rb_outcome_name(d.outcome));
    if (d.outcome == RB_OUTCOME_RETRY) {
        json_object_set_new(entry, "delay_ms", json_integer(d.delay_ms));
        json_object_set_new(entry, "source", json_string(rb_source_name(d.source)));
    } else {
        json_object_set_new(entry, "reason", json_string(rb_reason_name(d.reason)));
    }
    json_array_append_new(hist, entry);

    int64_t remaining = 0;
    if (d.outcome == RB_OUTCOME_RETRY)
        remaining = pol.max_attempts > 0 ? pol.max_attempts - j->attempts : -1;
    json_t *failure = json_pack(
        "{s:I, s:I, s:s, s:O, s:O, s:O}", "retry_count", (json_int_t)json_array_size(hist) - 1,
        "remaining", (json_int_t)(remaining < 0 && d.outcome == RB_OUTCOME_RETRY ? -1 : remaining),
        "failed_at", rb_time_format(now, ts), "errtype", errtype, "message", message,
        "backtrace", bt);
    if (d.outcome == RB_OUTCOME_RETRY)
        json_object_set_new(failure, "next_at", json_string(rb_time_format(d.retry_at_ms, ts2)));
    json_object_set_new(job, "failure", failure);

    free(j->wid);
    j->wid = NULL;
    if (d.outcome == RB_OUTCOME_DISCARD) {
        rb_log(RB_LOG_INFO, "job %s discarded after a failure", j->jid);
        rb_srv_forget(srv, j);
    } else {
        char *text = json_dumps(job, JSON_COMPACT);
        char *htext = json_dumps(hist, JSON_COMPACT);
        if (text) {
            free(j->json);
            j->json = text;
        }
        free(j->history);
        j->history = htext;
        if (d.outcome == RB_OUTCOME_RETRY) {
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_RETRIES, d.retry_at_ms);
        } else {
            if (d.outcome == RB_OUTCOME_CATCH && pol.catch_jobtype)
                spawn_catch(srv, j, job, &pol, errtype, message, bt, now);
            else
                rb_log(RB_LOG_INFO, "job %s (%s) is dead: %s", j->jid,
                       rb_srv_json_str(job, "jobtype"), rb_reason_name(d.reason));
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_DEAD,
                              now + srv->cfg.server.dead_retention_s * 1000);
        }
        rb_srv_persist(srv, j);
    }
    rb_srv_persist_counters(srv);
    json_decref(errtype);
    json_decref(message);
    json_decref(bt);
    json_decref(hist);
    json_decref(job);
    rb_policy_release(&pol);
    return 0;
}
