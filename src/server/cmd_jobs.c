/* The work commands: PUSH, PUSHB, FETCH, ACK, FAIL, SNOOZE, EXTEND. Every
 * change is persisted and answered only after its commit. */
#include "server/cmds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/metrics.h"

void rb_cmd_push(rb_conn *c, char *arg)
{
    json_t *job = rb_cmd_json_arg(c, "PUSH", arg, JSON_OBJECT);
    if (!job)
        return;
    rb_err err = {0};
    if (rb_srv_push(c->srv, job, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
    } else {
        char **jids = rb_xmalloc(sizeof *jids);
        jids[0] = rb_xstrdup(rb_srv_json_str(job, "jid"));
        rb_srv_push_reply(c->srv, c, jids, 1, NULL);
    }
    json_decref(job);
}

const char *rb_cmd_pushb_key(const json_t *job, size_t i, char key[RB_CMD_PUSHB_KEY])
{
    const char *jid = json_is_object(job) ? rb_srv_json_str(job, "jid") : NULL;
    if (!jid) {
        snprintf(key, RB_CMD_PUSHB_KEY, "#%zu", i);
        jid = key;
    }
    return jid;
}

void rb_cmd_pushb(rb_conn *c, char *arg)
{
    json_t *arr = rb_cmd_json_arg(c, "PUSHB", arg, JSON_ARRAY);
    if (!arr)
        return;
    size_t n = json_array_size(arr), ok = 0;
    char **jids = rb_xcalloc(n ? n : 1, sizeof *jids);
    json_t *errors = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *job = json_array_get(arr, i);
        rb_err err = {0};
        char key[RB_CMD_PUSHB_KEY];
        const char *jid = rb_cmd_pushb_key(job, i, key);
        if (rb_srv_push(c->srv, job, &err))
            json_object_set_new(errors, jid, json_string(rb_err_msg(&err)));
        else
            jids[ok++] = rb_xstrdup(jid);
    }
    char *bulk = json_dumps(errors, JSON_COMPACT);
    json_decref(errors);
    json_decref(arr);
    rb_srv_push_reply(c->srv, c, jids, ok, bulk);
}

char **rb_cmd_fetch_queues(rb_conn *c, char *arg, int *n)
{
    char **queues = NULL;
    *n = 0;
    for (char *save = NULL, *q = strtok_r(arg, " \t", &save); q; q = strtok_r(NULL, " \t", &save)) {
        queues = rb_xrealloc(queues, (size_t)(*n + 1) * sizeof *queues);
        queues[(*n)++] = rb_xstrdup(q);
    }
    if (*n == 0)
        rb_reply_err(c, "must call fetch with at least one queue");
    return queues;
}

void rb_cmd_fetch(rb_conn *c, char *arg)
{
    int n;
    char **queues = rb_cmd_fetch_queues(c, arg, &n);
    if (!queues)
        return;
    if (rb_srv_try_fetch(c->srv, c, queues, n)) {
        for (int i = 0; i < n; i++)
            free(queues[i]);
        free(queues);
        return;
    }
    rb_conn_wait_fetch(c, queues, n);
}

/* The job named jid for ACK/FAIL/SNOOZE/EXTEND, after checking that nobody
 * else holds it: a working job belongs to the wid that fetched it, and a
 * connection that said HELLO with another wid is refused (one without a
 * wid is not checked, as in Faktory). NULL after replying an error, or
 * *missing set when there is no such job (nothing replied). */
static rb_job *held_jid(rb_conn *c, const char *jid, bool *missing)
{
    *missing = false;
    rb_job *j = rb_jobs_find(&c->srv->jobs, jid);
    if (!j || j->state == RB_JOB_PENDING) {
        *missing = true;
        return NULL;
    }
    if (j->state == RB_JOB_WORKING && j->wid && c->worker && strcmp(j->wid, c->worker->wid) != 0) {
        rb_reply_err(c, RB_JOB_OTHER_HOLDER_FMT, jid);
        return NULL;
    }
    return j;
}

/* The jid of an argument of exactly the form {"jid":"X"}, X one or more
 * printable ASCII characters other than '"' and '\\' (what clients send),
 * cut out of arg in place; NULL for anything else, which then goes through
 * the JSON parser (same jid, and the same error replies, as this subset
 * decodes to itself). */
static const char *simple_jid(char *arg)
{
    static const char head[] = "{\"jid\":\"";
    if (strncmp(arg, head, sizeof head - 1) != 0)
        return NULL;
    char *jid = arg + sizeof head - 1, *p = jid;
    while (*p >= 0x20 && *p <= 0x7e && *p != '"' && *p != '\\')
        p++;
    if (p == jid || p[0] != '"' || p[1] != '}' || p[2] != '\0')
        return NULL;
    *p = '\0';
    return jid;
}

void rb_cmd_ack(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    bool missing;
    json_t *o = NULL;
    rb_job *j;
    const char *jid = simple_jid(arg);
    if (jid) {
        j = held_jid(c, jid, &missing);
    } else {
        if (!(o = rb_cmd_json_arg(c, "ACK", arg, JSON_OBJECT)))
            return;
        if (!(jid = rb_cmd_jid(c, "ACK", o))) {
            json_decref(o);
            return;
        }
        j = held_jid(c, jid, &missing);
    }
    if (!j) {
        if (missing)
            rb_reply_ok(c); /* Faktory: unknown jids are fine */
        json_decref(o);
        return;
    }
    if (j->state == RB_JOB_WORKING || (j->flags & RB_JOB_EXPIRED)) {
        rb_metrics_job(srv->metrics, RB_M_PROCESSED, j);
        rb_srv_forget(srv, j);
        srv->total_processed++;
        rb_srv_persist_counters(srv);
        rb_srv_reply_after_commit(srv, c);
    } else {
        rb_reply_ok(c); /* never reserved: nothing to acknowledge */
    }
    json_decref(o);
}

/* Reads FAIL's optional fields into in. RB_EINVAL with the reply's text in
 * err when one is malformed. */
static int fail_fields_check(json_t *o, rb_fail_input *in, char *ra_buf, size_t ra_len,
                             rb_err *err)
{
    in->errtype = json_string_value(json_object_get(o, "errtype"));
    in->message = json_string_value(json_object_get(o, "message"));
    json_t *bt = json_object_get(o, "backtrace");
    in->backtrace = json_is_array(bt) ? bt : NULL;
    json_t *r = json_object_get(o, "retryable");
    if (r && !json_is_null(r)) {
        if (!json_is_boolean(r))
            return rb_err_set(err, RB_EINVAL, "FAIL: retryable must be true or false");
        in->non_retryable = !json_is_true(r);
    }
    json_t *ra = json_object_get(o, "retry_after");
    if (json_is_string(ra)) {
        in->retry_after = json_string_value(ra);
    } else if (json_is_number(ra)) {
        /* whole seconds as text, as a worker relays a Retry-After header;
         * clamped before the cast (a double past 2^63 is undefined as an int) */
        double v = json_number_value(ra);
        if (v >= 9.2e18)
            snprintf(ra_buf, ra_len, "9200000000000000000");
        else
            snprintf(ra_buf, ra_len, "%lld", (long long)v);
        in->retry_after = v >= 0 ? ra_buf : NULL;
    } else if (ra && !json_is_null(ra)) {
        return rb_err_set(err, RB_EINVAL, "FAIL: retry_after must be seconds or an HTTP-date");
    }
    json_t *nd = json_object_get(o, "next_retry_delay");
    if (nd && !json_is_null(nd)) {
        if (!json_is_number(nd) || !isfinite(json_number_value(nd)) ||
            json_number_value(nd) > 1e12)
            return rb_err_set(err, RB_EINVAL, "FAIL: next_retry_delay must be a number of seconds");
        in->next_retry_delay_ms = (int64_t)llround(json_number_value(nd) * 1000.0);
    }
    return 0;
}

/* fail_fields_check, replying the error. Returns false after replying. */
static bool fail_fields(rb_conn *c, json_t *o, rb_fail_input *in, char *ra_buf, size_t ra_len)
{
    rb_err err = {0};
    if (fail_fields_check(o, in, ra_buf, ra_len, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return false;
    }
    return true;
}

void rb_cmd_fail(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    json_t *o = rb_cmd_json_arg(c, "FAIL", arg, JSON_OBJECT);
    if (!o)
        return;
    /* the argument first (jid, then the fields), then the job */
    bool missing = false;
    rb_fail_input in = {0};
    char ra[RB_CMD_RETRY_AFTER];
    const char *jid = rb_cmd_jid(c, "FAIL", o);
    rb_job *j = NULL;
    if (jid && fail_fields(c, o, &in, ra, sizeof ra))
        j = held_jid(c, jid, &missing);
    if (!j) {
        if (missing)
            rb_reply_err(c, "Job not found %s", jid);
    } else if (j->state != RB_JOB_WORKING) {
        if (j->flags & RB_JOB_EXPIRED)
            rb_reply_ok(c); /* its expiry already counted as this failure */
        else
            rb_reply_err(c, "Job not found %s", j->jid);
    } else {
        rb_err err = {0};
        j->flags = 0;
        if (rb_srv_fail_job(srv, j, &in, rb_now_ms(), &err))
            rb_reply_err(c, "FAIL: %s", rb_err_msg(&err));
        else
            rb_srv_reply_after_commit(srv, c);
    }
    json_decref(o);
}

/* The working job jid for SNOOZE/EXTEND, or NULL after replying. */
static rb_job *working_job(rb_conn *c, const char *verb, const char *jid)
{
    bool missing;
    rb_job *j = held_jid(c, jid, &missing);
    if (missing)
        rb_reply_err(c, "%s: job %s not found", verb, jid);
    else if (j && j->state != RB_JOB_WORKING) {
        rb_reply_err(c, "%s: job %s is not working (it is %s)", verb, j->jid,
                     rb_job_state_name(j->state));
        return NULL;
    }
    return j;
}

/* o's integer field key in [lo, hi], or -1 with the reply's text in err. */
static int64_t bounded_check(const char *verb, json_t *o, const char *key, int64_t lo, int64_t hi,
                             rb_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        rb_err_set(err, RB_EINVAL, "%s: %s must be an integer from %lld to %lld", verb, key,
                   (long long)lo, (long long)hi);
        return -1;
    }
    return json_integer_value(v);
}

/* o's integer field key in [lo, hi], or -1 after replying. */
static int64_t bounded(rb_conn *c, const char *verb, json_t *o, const char *key, int64_t lo,
                       int64_t hi)
{
    rb_err err = {0};
    int64_t v = bounded_check(verb, o, key, lo, hi, &err);
    if (v < 0)
        rb_reply_err(c, "%s", rb_err_msg(&err));
    return v;
}

void rb_cmd_snooze(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    json_t *o = rb_cmd_json_arg(c, "SNOOZE", arg, JSON_OBJECT);
    if (!o)
        return;
    /* the argument first (jid, then seconds), then the job */
    const char *jid = rb_cmd_jid(c, "SNOOZE", o);
    int64_t s = jid ? bounded(c, "SNOOZE", o, "seconds", 0, 31536000) : -1;
    rb_job *j = s >= 0 ? working_job(c, "SNOOZE", jid) : NULL;
    if (j) {
        int64_t now = rb_now_ms();
        j->attempts--; /* a snooze does not consume an attempt */
        j->flags = 0;
        free(j->wid);
        j->wid = NULL;
        rb_srv_enqueue(srv, j, now + s * 1000, now);
        rb_srv_persist(srv, j);
        rb_srv_reply_after_commit(srv, c);
        rb_srv_kick(srv);
    }
    json_decref(o);
}

void rb_cmd_extend(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    json_t *o = rb_cmd_json_arg(c, "EXTEND", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *jid = rb_cmd_jid(c, "EXTEND", o);
    int64_t s = jid ? bounded(c, "EXTEND", o, "reserve_for", 1, 86400) : -1;
    rb_job *j = s >= 0 ? working_job(c, "EXTEND", jid) : NULL;
    if (j) {
        rb_jobs_set_state(&srv->jobs, j, RB_JOB_WORKING, rb_now_ms() + s * 1000);
        rb_srv_persist(srv, j);
        rb_srv_reply_after_commit(srv, c);
    }
    json_decref(o);
}

/* --- shared with the distributed-mode handlers (cmds.h) --- */

int rb_cmd_fail_fields(json_t *o, rb_fail_input *in, char *ra_buf, size_t ra_len, rb_err *err)
{
    return fail_fields_check(o, in, ra_buf, ra_len, err);
}

int64_t rb_cmd_bounded(const char *verb, json_t *o, const char *key, int64_t lo, int64_t hi,
                       rb_err *err)
{
    return bounded_check(verb, o, key, lo, hi, err);
}
