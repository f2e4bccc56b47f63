/* Distributed mode's work commands: PUSH, PUSHB, FETCH, ACK, FAIL, SNOOZE
 * and EXTEND on the PostgreSQL engine (pg_cmds_impl.h). */
#include "server/pg_cmds_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"
#include "server/metrics.h"

static char *dup_wid(const rb_conn *c)
{
    return c->worker ? rb_xstrdup(c->worker->wid) : NULL;
}

/* --- PUSH, PUSHB --- */

static void push_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
    const char **ready = rb_xcalloc(r->u.push.n + 1, sizeof *ready);
    size_t n_ready = 0;
    for (size_t i = 0; i < r->u.push.n; i++) {
        const rb_pg_new_job *j = &r->u.push.jobs[i];
        if (r->u.push.status[i] == RB_EEXIST) {
            if (d->bulk) {
                char msg[300];
                snprintf(msg, sizeof msg, "job %s already exists", j->jid);
                json_object_set_new(d->errors, j->jid, json_string(msg));
            } else {
                rb_reply_err(r->c, "job %s already exists", j->jid);
            }
        } else {
            rb_metrics_event(srv->metrics, RB_M_PUSHED, j->queue, j->json);
            if (j->at_ms <= r->now)
                ready[n_ready++] = j->queue;
        }
    }
    if (d->bulk) {
        char *s = json_dumps(d->errors, JSON_COMPACT);
        rb_reply_bulk(r->c, s, strlen(s));
        free(s);
    } else if (r->u.push.status[0] != RB_EEXIST) {
        rb_reply_ok(r->c);
    }
    if (n_ready)
        rb_pgmode_kick(srv, ready, n_ready); /* this node's waiters, before the NOTIFY */
    free(ready);
    rb_pgreq_finish(srv, r);
}

/* Posts the valid jobs of jobs[0..n) (validated already). */
static void post_push(rb_conn *c, json_t *arg, json_t **jobs, size_t n, json_t *errors, bool bulk)
{
    rb_srv *srv = c->srv;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_PUSH, c);
    rb_pgcmd_data *d = rb_pgcmd_attach(r, arg);
    d->errors = errors;
    d->bulk = bulk;
    d->texts = rb_xcalloc(n, sizeof *d->texts);
    r->u.push.jobs = rb_xcalloc(n, sizeof *r->u.push.jobs);
    r->u.push.status = rb_xcalloc(n, sizeof *r->u.push.status);
    r->u.push.n = n;
    int64_t now = rb_now_ms();
    for (size_t i = 0; i < n; i++) {
        rb_pg_job_from_json(jobs[i], now, (int)srv->cfg.server.reserve_for_s,
                            &r->u.push.jobs[i], &d->texts[i]);
        d->n_texts++;
    }
    r->done = push_done;
    rb_pgreq_post(srv, r);
}

void rb_pgcmd_push(rb_conn *c, char *arg)
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
    post_push(c, job, &job, 1, NULL, false);
}

void rb_pgcmd_pushb(rb_conn *c, char *arg)
{
    json_t *arr = rb_cmd_json_arg(c, "PUSHB", arg, JSON_ARRAY);
    if (!arr)
        return;
    size_t n = json_array_size(arr), ok = 0;
    json_t **valid = rb_xcalloc(n ? n : 1, sizeof *valid);
    json_t *errors = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *job = json_array_get(arr, i);
        rb_err err = {0};
        char key[RB_CMD_PUSHB_KEY];
        const char *jid = rb_cmd_pushb_key(job, i, key);
        if (rb_job_validate(c->srv, job, &err))
            json_object_set_new(errors, jid, json_string(rb_err_msg(&err)));
        else
            valid[ok++] = job;
    }
    if (ok == 0) {
        char *s = json_dumps(errors, JSON_COMPACT);
        rb_reply_bulk(c, s, strlen(s));
        free(s);
        json_decref(errors);
        json_decref(arr);
    } else {
        post_push(c, arr, valid, ok, errors, true);
    }
    free(valid);
}

/* --- FETCH --- */

void rb_pgcmd_fetch(rb_conn *c, char *arg)
{
    int n;
    char **queues = rb_cmd_fetch_queues(c, arg, &n);
    if (!queues)
        return;
    rb_pgmode_fetch(c->srv, c, queues, n);
}

/* --- ACK, FAIL --- */

/* A request of kind for c naming jid (copied) and c's wid; it holds o
 * (taken over) while out. */
static rb_pgreq *ref_request(rb_conn *c, rb_pgreq_kind kind, const char *jid, json_t *o)
{
    rb_pgreq *r = rb_pgreq_new(kind, c);
    r->jid = rb_xstrdup(jid);
    r->wid = dup_wid(c);
    rb_pgcmd_attach(r, o);
    return r;
}

static void ack_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    if (r->u.ack.status == RB_JOB_DONE)
        rb_metrics_event_labels(srv->metrics, RB_M_PROCESSED, r->u.ack.labels.queue,
                                r->u.ack.labels.jobtype);
    if (r->u.ack.status == RB_JOB_OTHER_HOLDER)
        rb_reply_err(r->c, RB_JOB_OTHER_HOLDER_FMT, r->jid);
    else
        rb_reply_ok(r->c); /* done, unknown (Faktory: fine), or never reserved */
    rb_pgreq_finish(srv, r);
}

void rb_pgcmd_ack(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "ACK", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *jid = rb_cmd_jid(c, "ACK", o);
    if (!jid) {
        json_decref(o);
        return;
    }
    rb_pgreq *r = ref_request(c, RB_PGR_ACK, jid, o);
    r->u.ack.ref = (rb_pg_ref){r->jid, r->wid};
    r->done = ack_done;
    rb_pgreq_post(c->srv, r);
}

/* The engine's labels hold every queue name a job may have. */
_Static_assert(RB_PG_QUEUE_MAX >= RB_QUEUE_NAME_MAX, "rb_pg_labels.queue is too short");

static void fail_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    switch (r->u.fail.res.status) {
    case RB_JOB_OTHER_HOLDER:
        rb_reply_err(r->c, RB_JOB_OTHER_HOLDER_FMT, r->jid);
        break;
    case RB_JOB_MISSING:
    case RB_JOB_NOT_WORKING:
        rb_reply_err(r->c, "Job not found %s", r->jid);
        break;
    case RB_JOB_DONE:
        rb_pgmode_count_failure(srv, &r->u.fail.res);
        rb_reply_ok(r->c);
        break;
    default: /* a late FAIL its expiry already counted */
        rb_reply_ok(r->c);
        break;
    }
    rb_pgreq_finish(srv, r);
}

void rb_pgcmd_fail(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "FAIL", arg, JSON_OBJECT);
    if (!o)
        return;
    /* the argument first (jid, then the fields), as on a single node */
    const char *jid = rb_cmd_jid(c, "FAIL", o);
    if (!jid) {
        json_decref(o);
        return;
    }
    rb_fail_input in = {0};
    char ra[RB_CMD_RETRY_AFTER];
    rb_err bad = {0};
    if (rb_cmd_fail_fields(o, &in, ra, sizeof ra, &bad)) {
        rb_reply_err(c, "%s", rb_err_msg(&bad));
        json_decref(o);
        return;
    }
    rb_pgreq *r = ref_request(c, RB_PGR_FAIL, jid, o);
    rb_pgcmd_data *d = r->data;
    if (in.retry_after == ra) { /* a numeric one, written into ra */
        memcpy(d->retry_after, ra, sizeof ra);
        in.retry_after = d->retry_after;
    }
    r->u.fail.f = (rb_pg_failure){
        .ref = {r->jid, r->wid},
        .errtype = in.errtype,
        .message = in.message,
        .backtrace = in.backtrace,
        .non_retryable = in.non_retryable,
        .retry_after = in.retry_after,
        .next_retry_delay_ms = in.next_retry_delay_ms,
    };
    r->done = fail_done;
    rb_pgreq_post(c->srv, r);
}

/* --- SNOOZE, EXTEND --- */

static void snooze_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, r->u.ref.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void extend_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_extend(pg, &ref, r->u.ref.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void ref_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
    switch (r->u.ref.status) {
    case RB_JOB_MISSING:
        rb_reply_err(r->c, "%s: job %s not found", d->verb, r->jid);
        break;
    case RB_JOB_OTHER_HOLDER:
        rb_reply_err(r->c, RB_JOB_OTHER_HOLDER_FMT, r->jid);
        break;
    case RB_JOB_NOT_WORKING:
        rb_reply_err(r->c, "%s: job %s is not working (it is %s)", d->verb, r->jid,
                     rb_job_state_name((rb_job_state)r->u.ref.state));
        break;
    default:
        rb_reply_ok(r->c);
        if (r->call == snooze_call && r->u.ref.seconds == 0)
            rb_pgmode_kick(srv, NULL, 0);
        break;
    }
    rb_pgreq_finish(srv, r);
}

static void pg_snooze_extend(rb_conn *c, char *arg, const char *verb, const char *key, int64_t lo,
                             int64_t hi, void (*call)(rb_pg *, rb_pgreq *))
{
    json_t *o = rb_cmd_json_arg(c, verb, arg, JSON_OBJECT);
    if (!o)
        return;
    /* the argument first (jid, then the number), as on a single node */
    const char *jid = rb_cmd_jid(c, verb, o);
    if (!jid) {
        json_decref(o);
        return;
    }
    rb_err bad = {0};
    int64_t s = rb_cmd_bounded(verb, o, key, lo, hi, &bad);
    if (s < 0) {
        rb_reply_err(c, "%s", rb_err_msg(&bad));
        json_decref(o);
        return;
    }
    rb_pgreq *r = ref_request(c, RB_PGR_CALL, jid, o);
    rb_pgcmd_data *d = r->data;
    snprintf(d->verb, sizeof d->verb, "%s", verb);
    r->u.ref.seconds = s;
    r->call = call;
    r->done = ref_done;
    rb_pgreq_post(c->srv, r);
}

void rb_pgcmd_snooze(rb_conn *c, char *arg)
{
    pg_snooze_extend(c, arg, "SNOOZE", "seconds", 0, 31536000, snooze_call);
}

void rb_pgcmd_extend(rb_conn *c, char *arg)
{
    pg_snooze_extend(c, arg, "EXTEND", "reserve_for", 1, 86400, extend_call);
}
