/* The distributed backend of the job engine (engine/engine.h): each
 * operation becomes a request to a database thread (pgmode.h), which runs
 * it as one transaction on the shared PostgreSQL database; its completion
 * comes back to the loop thread and completes the op. */
#include "engine/engine.h"

#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/pgmode.h"

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
    }
    rb_pgreq_finish(srv, r);
    /* requeued jobs are ready: claim them for the parked FETCHes */
    bool kick = !op->rc && op->kind == RB_ENG_MUTATE && !strcmp(op->u.mutate.m.cmd, "requeue");
    /* and so are a resumed queue's */
    kick = kick || (!op->rc && op->kind == RB_ENG_QUEUE && op->u.queue.verb == RB_ENG_QUEUE_RESUME);
    rb_eng_complete(srv, op);
    if (kick)
        rb_pgmode_kick(srv, NULL, 0);
}

/* Posts op to a database thread, to run call there. */
static void post(rb_srv *srv, rb_eng_op *op, void (*call)(rb_pg *, rb_pgreq *))
{
    rb_pgreq_post(srv, rb_pgreq_new_call(NULL, op, NULL, call, req_done));
}

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

/* --- the administration and inspection commands --- */

static void info_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_info in;
    if ((r->rc = rb_pg_info_get(pg, &in, &r->err)))
        return;
    op->u.info = (rb_eng_info){
        .processed = in.processed,
        .failures = in.failures,
        .enqueued = in.enqueued,
        .scheduled = in.scheduled,
        .retries = in.retries,
        .dead = in.dead,
        .working = in.working,
        .workers = in.workers,
        .queues = in.queues, /* taken over */
        .n_queues = in.n_queues,
        .rebound = json_pack("{s:{s:s, s:i}}", "storage", "backend", "postgresql",
                             "schema_version", RB_PG_SCHEMA_VERSION),
    };
}

static void pg_info(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, info_call);
}

static void queue_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    const char *const *names = (const char *const *)op->u.queue.names;
    if (op->u.queue.verb == RB_ENG_QUEUE_REMOVE)
        r->rc = rb_pg_queue_remove(pg, names, op->u.queue.n, NULL, &r->err);
    else
        r->rc = rb_pg_queue_pause(pg, names, op->u.queue.n,
                                  op->u.queue.verb == RB_ENG_QUEUE_PAUSE, &r->err);
}

static void pg_queue(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, queue_call);
}

static void latency_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    int n = op->u.queue.n;
    op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
    r->rc = rb_pg_queue_latency(pg, (const char *const *)op->u.queue.names, n, rb_now_ms(),
                                op->u.queue.latency, &r->err);
}

static void pg_latency(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, latency_call);
}

static void job_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_job_get(pg, op->u.job.jid, &op->u.job.view, &r->err);
    op->u.job.found = r->rc == 0;
    if (r->rc == RB_ENOENT)
        r->rc = 0;
}

static void pg_job(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, job_call);
}

static void jobs_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_jobs(pg, &op->u.jobs.f, &op->u.jobs.views, &op->u.jobs.n, &op->u.jobs.total,
                       &r->err);
}

static void pg_jobs(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, jobs_call);
}

/* Signals are the cluster's (the worker registry, pg_workers.h). */
static void workers_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_workers_signal(pg, op->u.workers.wid, op->u.workers.signal, rb_now_ms(),
                                 &op->u.workers.changed, &r->err);
}

static void pg_workers(rb_srv *srv, rb_eng_op *op)
{
    post(srv, op, workers_call);
}

const rb_backend rb_backend_pg = {
    .name = "postgresql",
    .flush = pg_flush,
    .mutate = pg_mutate,
    .info = pg_info,
    .queue = pg_queue,
    .latency = pg_latency,
    .job = pg_job,
    .jobs = pg_jobs,
    .workers = pg_workers,
};
