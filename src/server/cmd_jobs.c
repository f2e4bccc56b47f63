/* The work commands: PUSH, PUSHB, FETCH, ACK, FAIL, SNOOZE, EXTEND. Every
 * change is persisted and answered only after its commit. ACK, FAIL, SNOOZE
 * and EXTEND are one handler each for both modes: the argument checked
 * here, the op submitted to the job engine (engine/engine.h), the job's
 * outcome turned into the reply in job_done. */
#include "engine/depend.h"
#include "server/cmds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/json.h"
#include "server/metrics.h"

/* --- PUSH, PUSHB: validated here, created by the job engine --- */

/* The error of a job whose jid is taken, in err (cut as any rb_err). */
static const char *taken(rb_err *err, const char *jid)
{
    rb_err_set(err, RB_EEXIST, "job %s already exists", jid);
    return rb_err_msg(err);
}

/* The error of a job whose batch (custom.bid) is unknown or expired. */
static const char *no_batch(rb_err *err, const json_t *job)
{
    const char *bid = NULL;
    rb_batch_member_bid(job, &bid, err);
    rb_err_set(err, RB_ENOENT, "No such batch %s", bid ? bid : "");
    return rb_err_msg(err);
}

/* PUSHB's invalid elements: msg[i] is element i's error, NULL when it is
 * valid. */
typedef struct pushb_bad {
    size_t n;
    char *msg[];
} pushb_bad;

static void pushb_bad_free(void *p)
{
    pushb_bad *b = p;
    for (size_t i = 0; b && i < b->n; i++)
        free(b->msg[i]);
    free(b);
}

/* PUSHB's reply: the error object, its keys in the order of the array: an
 * invalid element's message (bad, NULL when all are valid), or for a valid
 * one whose jid is taken "job J already exists", or whose batch is unknown
 * "No such batch B" (status: one entry per valid element). */
static void pushb_reply(rb_conn *c, json_t *arr, const pushb_bad *bad, const int *status)
{
    json_t *errors = json_object();
    rb_err err;
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char key[RB_CMD_PUSHB_KEY];
        const char *jid = rb_cmd_pushb_key(json_array_get(arr, i), i, key);
        if (bad && bad->msg[i])
            json_object_set_new(errors, jid, json_string(bad->msg[i]));
        else if (status[k] == RB_EEXIST)
            json_object_set_new(errors, jid, json_string(taken(&err, jid)));
        else if (status[k] == RB_ENOTUNIQUE) /* Faktory's coded error as text */
            json_object_set_new(errors, jid,
                                json_string(RB_NOTUNIQUE_CODE " " RB_NOTUNIQUE_MSG));
        else if (status[k] == RB_ENOENT)
            json_object_set_new(errors, jid,
                                json_string(no_batch(&err, json_array_get(arr, i))));
        if (!(bad && bad->msg[i]))
            k++;
    }
    char *s = json_dumps(errors, JSON_COMPACT);
    rb_reply_bulk(c, s, strlen(s));
    free(s);
    json_decref(errors);
}

/* PUSH's reply, once its job is durable (or its jid taken). */
static void push_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    rb_err err;
    if (op->u.push.status[0] == RB_EEXIST) {
        rb_reply_err(op->c, "%s", taken(&err, rb_json_str(op->u.push.jobs[0], "jid")));
    } else if (op->u.push.status[0] == RB_ENOENT) {
        rb_reply_err(op->c, "%s", no_batch(&err, op->u.push.jobs[0]));
    } else if (op->u.push.status[0] == RB_ENOTUNIQUE) {
        rb_reply_err_code(op->c, RB_NOTUNIQUE_CODE, RB_NOTUNIQUE_MSG);
    } else {
        rb_reply_ok(op->c);
    }
    rb_eng_op_finish(srv->eng, op);
}

/* PUSHB's reply, once its valid jobs are durable; op->arg: its pushb_bad. */
static void pushb_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    pushb_reply(op->c, op->json, op->arg, op->u.push.status);
    rb_eng_op_finish(srv->eng, op);
}

/* A push op for c of the n validated jobs (array taken over) of arg (the
 * parsed argument, taken over), not yet submitted. */
static rb_eng_op *push_op(rb_conn *c, json_t *arg, json_t **jobs, size_t n,
                          void (*done)(rb_srv *, rb_eng_op *))
{
    rb_eng_op *op = rb_eng_op_new(RB_ENG_PUSH, c, done);
    op->json = arg;
    op->u.push.jobs = jobs;
    op->u.push.n = n;
    op->u.push.status = rb_xcalloc(n, sizeof *op->u.push.status);
    return op;
}

void rb_cmd_push(rb_conn *c, char *arg)
{
    json_t *job = rb_cmd_json_arg(c, "PUSH", arg, JSON_OBJECT);
    if (!job)
        return;
    rb_err err = {0};
    if (rb_job_validate(c->srv, job, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        json_decref(job);
        return;
    }
    json_t **jobs = rb_xmalloc(sizeof *jobs);
    jobs[0] = job;
    rb_eng_submit(c->srv->eng, push_op(c, job, jobs, 1, push_done));
}

const char *rb_cmd_pushb_key(const json_t *job, size_t i, char key[RB_CMD_PUSHB_KEY])
{
    const char *jid = json_is_object(job) ? rb_json_str(job, "jid") : NULL;
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
    json_t **valid = rb_xcalloc(n ? n : 1, sizeof *valid);
    pushb_bad *bad = NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *job = json_array_get(arr, i);
        rb_err err = {0};
        if (!rb_job_validate(c->srv, job, &err)) {
            valid[ok++] = job;
            continue;
        }
        if (!bad) {
            bad = rb_xcalloc(1, sizeof *bad + n * sizeof *bad->msg);
            bad->n = n;
        }
        bad->msg[i] = rb_xstrdup(rb_err_msg(&err));
    }
    for (size_t i = 0; bad && i < n; i++) {
        json_t *job = json_array_get(arr, i);
        if (json_is_object(job) && rb_dep_has(job)) {
            /* a workflow batch is atomic: one bad job refuses it whole
             * (docs/workflows.md) */
            for (size_t k = 0; k < n; k++)
                if (bad->msg[k]) {
                    rb_reply_err(c, "%s", bad->msg[k]);
                    break;
                }
            pushb_bad_free(bad);
            free(valid);
            json_decref(arr);
            return;
        }
    }
    if (!ok) { /* nothing to push */
        pushb_reply(c, arr, bad, NULL);
        pushb_bad_free(bad);
        free(valid);
        json_decref(arr);
        return;
    }
    rb_eng_op *op = push_op(c, arr, valid, ok, pushb_done);
    op->arg = bad;
    op->arg_free = pushb_bad_free;
    rb_eng_submit(c->srv->eng, op);
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

/* FETCH's reply: the reserved job once durable, or null when none was
 * ready within 2 s (the engine keeps the op waiting until then). */
static void fetch_done(rb_srv *srv, rb_eng_op *op)
{
    rb_conn *c = op->c;
    c->fetch_op = NULL;
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.fetch.job)
        rb_reply_bulk(c, op->u.fetch.job, strlen(op->u.fetch.job));
    else
        rb_reply_null(c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_fetch(rb_conn *c, char *arg)
{
    int n;
    char **queues = rb_cmd_fetch_queues(c, arg, &n);
    if (!queues)
        return;
    rb_eng_op *op = rb_eng_op_new(RB_ENG_FETCH, c, fetch_done);
    op->u.fetch.queues = queues;
    op->u.fetch.n = n;
    op->u.fetch.wid = c->worker ? c->worker->wid : NULL;
    c->fetch_op = op;
    rb_eng_submit(c->srv->eng, op);
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
        rb_eng_op_finish(srv->eng, op);
        return;
    }
    if (rb_reply_failed(srv, op))
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
    rb_eng_op_finish(srv->eng, op);
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
        rb_eng_submit(c->srv->eng, job_op(c, RB_ENG_ACK, jid));
        return;
    }
    json_t *o = rb_cmd_json_arg(c, "ACK", arg, JSON_OBJECT);
    if (!o)
        return;
    if ((jid = rb_cmd_jid(c, "ACK", o)))
        rb_eng_submit(c->srv->eng, job_op(c, RB_ENG_ACK, jid));
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
    rb_eng_submit(c->srv->eng, op);
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
            rb_eng_submit(c->srv->eng, op);
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
