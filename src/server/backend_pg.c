/* The distributed backend of the job engine (engine/engine.h): each
 * operation becomes a request to a database thread (pgmode.h), which runs
 * it as one transaction on the shared PostgreSQL database (ACK and FAIL
 * batched with the others the thread takes at once); its completion comes
 * back to the loop thread and completes the op. */
#include "engine/engine.h"

#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/metrics.h"
#include "server/pgmode.h"

/* The engine's labels hold every queue name a job may have. */
_Static_assert(RB_PG_QUEUE_MAX >= RB_QUEUE_NAME_MAX, "rb_pg_labels.queue is too short");

/* A push's results: each job's status, the pushed ones counted, and the
 * parked FETCHes of this node woken for those enqueued at once (before
 * the NOTIFY reaches the other nodes; before op's done frees the queue
 * names). */
static void push_results(rb_srv *srv, rb_eng_op *op, rb_pgreq *r)
{
    size_t n = r->u.push.n, n_ready = 0;
    const char **ready = rb_xcalloc(n + 1, sizeof *ready);
    size_t made = 0;
    for (size_t i = 0; i < n; i++) {
        const rb_pg_new_job *j = &r->u.push.jobs[i];
        op->u.push.status[i] = r->u.push.status[i];
        if (r->u.push.status[i] == RB_EEXIST)
            continue;
        made++;
        rb_metrics_event(srv->metrics, RB_M_PUSHED, j->queue, j->json);
        if (j->at_ms <= r->now)
            ready[n_ready++] = j->queue;
    }
    if (!made)
        op->applied = RB_ENG_NOT_APPLIED; /* every jid was taken */
    if (n_ready)
        rb_pgmode_kick(srv, ready, n_ready);
    free(ready);
}

/* Loop thread, r succeeded: its results to op, and what this node's
 * /metrics counts of them. */
static void results(rb_srv *srv, rb_eng_op *op, rb_pgreq *r)
{
    switch (op->kind) {
    case RB_ENG_PUSH:
        push_results(srv, op, r);
        return;
    case RB_ENG_ACK:
        op->u.job.status = (rb_job_status)r->u.ack.status;
        if (op->u.job.status == RB_JOB_DONE)
            rb_metrics_event_labels(srv->metrics, RB_M_PROCESSED, r->u.ack.labels.queue,
                                    r->u.ack.labels.jobtype);
        break;
    case RB_ENG_FAIL:
        op->u.job.status = (rb_job_status)r->u.fail.res.status;
        if (op->u.job.status == RB_JOB_DONE)
            rb_pgmode_count_failure(srv, &r->u.fail.res);
        break;
    case RB_ENG_SNOOZE:
    case RB_ENG_EXTEND:
        op->u.job.status = (rb_job_status)r->u.ref.status;
        op->u.job.state = (rb_job_state)r->u.ref.state;
        break;
    default:
        return;
    }
    if (op->u.job.status != RB_JOB_DONE)
        op->applied = RB_ENG_NOT_APPLIED; /* refused, or nothing to do */
}

/* Whether op made jobs ready at once, for the parked FETCHes. */
static bool readies(const rb_eng_op *op)
{
    if (op->rc)
        return false;
    if (op->kind == RB_ENG_MUTATE)
        return !strcmp(op->u.mutate.m.cmd, "requeue");
    return op->kind == RB_ENG_SNOOZE && op->u.job.status == RB_JOB_DONE && op->u.job.seconds == 0;
}

/* Loop thread: the request ran; its results go to the op. */
static void req_done(rb_srv *srv, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    if (r->rc) {
        rb_pgmode_storage_error(srv, r); /* logs; r has no connection to answer */
        op->rc = r->rc;
        op->err = r->err;
        /* a transaction that failed was rolled back, unless the failure
         * was the connection's, perhaps during COMMIT */
        op->applied = r->rc == RB_ECONN ? RB_ENG_UNKNOWN : RB_ENG_NOT_APPLIED;
    } else {
        rb_pgmode_storage_ok(srv);
        op->applied = RB_ENG_APPLIED;
        results(srv, op, r);
    }
    rb_pgreq_finish(srv, r);
    bool kick = readies(op);
    rb_eng_complete(srv, op);
    if (kick)
        rb_pgmode_kick(srv, NULL, 0);
}

/* Posts op to a database thread, to run call there. */
static void post(rb_srv *srv, rb_eng_op *op, void (*call)(rb_pg *, rb_pgreq *))
{
    rb_pgreq_post(srv, rb_pgreq_new_call(NULL, op, NULL, call, req_done));
}

/* --- PUSH, PUSHB --- */

static void pg_push(rb_srv *srv, rb_eng_op *op)
{
    size_t n = op->u.push.n;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_PUSH, NULL);
    r->u.push.jobs = rb_xcalloc(n, sizeof *r->u.push.jobs);
    r->u.push.texts = rb_xcalloc(n, sizeof *r->u.push.texts);
    r->u.push.status = rb_xcalloc(n, sizeof *r->u.push.status);
    r->u.push.n = n;
    for (size_t i = 0; i < n; i++)
        rb_pg_job_from_json(op->u.push.jobs[i], op->now, (int)srv->cfg.server.reserve_for_s,
                            &r->u.push.jobs[i], &r->u.push.texts[i]);
    r->data = op;
    r->done = req_done;
    rb_pgreq_post(srv, r);
}

/* --- FETCH: the first claim; pgmode.c keeps a waiting FETCH --- */

static void pg_fetch(rb_srv *srv, rb_eng_op *op)
{
    rb_pgmode_fetch(srv, op);
}

/* --- ACK, FAIL, SNOOZE, EXTEND --- */

/* A request of kind for job op op, naming its jid and wid (copied: the
 * op's wid is only borrowed while it is submitted). */
static rb_pgreq *job_request(rb_eng_op *op, rb_pgreq_kind kind)
{
    rb_pgreq *r = rb_pgreq_new(kind, NULL);
    r->jid = rb_xstrdup(op->u.job.jid);
    r->wid = op->u.job.wid ? rb_xstrdup(op->u.job.wid) : NULL;
    r->data = op;
    r->done = req_done;
    return r;
}

static void pg_ack(rb_srv *srv, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_ACK);
    r->u.ack.ref = (rb_pg_ref){r->jid, r->wid};
    rb_pgreq_post(srv, r);
}

static void pg_fail(rb_srv *srv, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_FAIL);
    const rb_fail_input *in = &op->u.job.fail;
    r->u.fail.f = (rb_pg_failure){
        .ref = {r->jid, r->wid},
        .errtype = in->errtype,
        .message = in->message,
        .backtrace = in->backtrace,
        .non_retryable = in->non_retryable,
        .retry_after = in->retry_after,
        .next_retry_delay_ms = in->next_retry_delay_ms,
    };
    rb_pgreq_post(srv, r);
}

static void snooze_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, op->u.job.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void extend_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_extend(pg, &ref, op->u.job.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void pg_snooze(rb_srv *srv, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_CALL);
    r->call = snooze_call;
    rb_pgreq_post(srv, r);
}

static void pg_extend(rb_srv *srv, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_CALL);
    r->call = extend_call;
    rb_pgreq_post(srv, r);
}

/* --- FLUSH, MUTATE --- */

static void flush_call(rb_pg *pg, rb_pgreq *r)
{
    r->rc = rb_pg_flush(pg, &r->err);
}

static void pg_flush(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, flush_call);
}

static void mutate_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_mutate(pg, &op->u.mutate.m, op->now, &op->u.mutate.changed, &r->err);
}

static void pg_mutate(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, mutate_call);
}

const rb_backend rb_backend_pg = {
    .name = "postgresql",
    .push = pg_push,
    .fetch = pg_fetch,
    .ack = pg_ack,
    .fail = pg_fail,
    .snooze = pg_snooze,
    .extend = pg_extend,
    .flush = pg_flush,
    .mutate = pg_mutate,
};
