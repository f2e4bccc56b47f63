/* The work commands: PUSH, PUSHB, FETCH, ACK, FAIL, SNOOZE, EXTEND. Every
 * change is persisted and answered only after its commit. ACK, FAIL, SNOOZE
 * and EXTEND are one handler each for both modes: the argument checked
 * here, the op submitted to the job engine (engine/engine.h), the job's
 * outcome turned into the reply in job_done. */
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

/* --- ACK, FAIL, SNOOZE, EXTEND: one job, through the engine --- */

static const char *job_verb(rb_eng_kind kind)
{
    switch (kind) {
    case RB_ENG_FAIL:
        return "FAIL";
    case RB_ENG_SNOOZE:
        return "SNOOZE";
    case RB_ENG_EXTEND:
        return "EXTEND";
    default:
        return "ACK";
    }
}

/* The reply to ACK, FAIL, SNOOZE or EXTEND from the job's outcome, the
 * same for both backends (docs/protocol.md, "Reservations and late
 * replies"). */
static void job_done(rb_srv *srv, rb_eng_op *op)
{
    rb_conn *c = op->c;
    const char *jid = op->u.job.jid, *verb = job_verb(op->kind);
    if (op->kind == RB_ENG_FAIL && op->rc == RB_ESTATE) {
        /* the job's policy could not run: its JSON is unreadable */
        rb_reply_err(c, "FAIL: %s", rb_err_msg(&op->err));
        rb_eng_op_finish(srv, op);
        return;
    }
    if (rb_eng_failed(srv, op))
        return;
    switch (op->u.job.status) {
    case RB_JOB_DONE:
    case RB_JOB_NOOP: /* ACK of a never-reserved job, FAIL after its expiry */
        rb_reply_ok(c);
        break;
    case RB_JOB_OTHER_HOLDER:
        rb_reply_err(c, RB_JOB_OTHER_HOLDER_FMT, jid);
        break;
    case RB_JOB_MISSING:
        if (op->kind == RB_ENG_ACK)
            rb_reply_ok(c); /* Faktory: unknown jids are fine */
        else if (op->kind == RB_ENG_FAIL)
            rb_reply_err(c, "Job not found %s", jid);
        else
            rb_reply_err(c, "%s: job %s not found", verb, jid);
        break;
    case RB_JOB_NOT_WORKING:
        if (op->kind == RB_ENG_FAIL)
            rb_reply_err(c, "Job not found %s", jid);
        else
            rb_reply_err(c, "%s: job %s is not working (it is %s)", verb, jid,
                         rb_job_state_name(op->u.job.state));
        break;
    }
    rb_eng_op_finish(srv, op);
}

/* A job op of kind for c naming jid (copied), with c's HELLO wid. */
static rb_eng_op *job_op(rb_conn *c, rb_eng_kind kind, const char *jid)
{
    rb_eng_op *op = rb_eng_op_new(kind, c, job_done);
    op->u.job.jid = rb_xstrdup(jid);
    op->u.job.wid = c->worker ? c->worker->wid : NULL;
    return op;
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
    const char *jid = simple_jid(arg);
    if (jid) {
        rb_eng_submit(c->srv, job_op(c, RB_ENG_ACK, jid));
        return;
    }
    json_t *o = rb_cmd_json_arg(c, "ACK", arg, JSON_OBJECT);
    if (!o)
        return;
    if ((jid = rb_cmd_jid(c, "ACK", o)))
        rb_eng_submit(c->srv, job_op(c, RB_ENG_ACK, jid));
    json_decref(o);
}

_Static_assert(RB_CMD_RETRY_AFTER <= RB_ENG_RETRY_AFTER, "the op's retry_after is too short");

void rb_cmd_fail(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "FAIL", arg, JSON_OBJECT);
    if (!o)
        return;
    /* the argument first (jid, then the fields), then the job */
    const char *jid = rb_cmd_jid(c, "FAIL", o);
    rb_fail_input in = {0};
    char ra[RB_CMD_RETRY_AFTER];
    rb_err err = {0};
    if (!jid) {
        json_decref(o);
        return;
    }
    if (rb_cmd_fail_fields(o, &in, ra, sizeof ra, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        json_decref(o);
        return;
    }
    rb_eng_op *op = job_op(c, RB_ENG_FAIL, jid);
    op->json = o; /* in borrows its strings */
    op->u.job.fail = in;
    if (in.retry_after == ra) { /* a numeric one, written into ra */
        memcpy(op->u.job.retry_after, ra, sizeof ra);
        op->u.job.fail.retry_after = op->u.job.retry_after;
    }
    rb_eng_submit(c->srv, op);
}

/* SNOOZE and EXTEND: the jid, then the number of seconds key in [lo, hi],
 * then the job. */
static void snooze_extend(rb_conn *c, char *arg, rb_eng_kind kind, const char *key, int64_t lo,
                          int64_t hi)
{
    const char *verb = job_verb(kind);
    json_t *o = rb_cmd_json_arg(c, verb, arg, JSON_OBJECT);
    if (!o)
        return;
    const char *jid = rb_cmd_jid(c, verb, o);
    if (jid) {
        rb_err err = {0};
        int64_t s = rb_cmd_bounded(verb, o, key, lo, hi, &err);
        if (s < 0) {
            rb_reply_err(c, "%s", rb_err_msg(&err));
        } else {
            rb_eng_op *op = job_op(c, kind, jid);
            op->u.job.seconds = s;
            rb_eng_submit(c->srv, op);
        }
    }
    json_decref(o);
}

void rb_cmd_snooze(rb_conn *c, char *arg)
{
    snooze_extend(c, arg, RB_ENG_SNOOZE, "seconds", 0, 31536000);
}

void rb_cmd_extend(rb_conn *c, char *arg)
{
    snooze_extend(c, arg, RB_ENG_EXTEND, "reserve_for", 1, 86400);
}

/* --- the argument checks (cmds.h) --- */

int rb_cmd_fail_fields(json_t *o, rb_fail_input *in, char *ra_buf, size_t ra_len, rb_err *err)
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

int64_t rb_cmd_bounded(const char *verb, json_t *o, const char *key, int64_t lo, int64_t hi,
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
