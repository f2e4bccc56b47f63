/* An operation's life on the loop thread (engine.h): made, submitted to
 * the server's backend, completed, finished. */
#include "engine/engine.h"

#include <stdlib.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/srv.h"

rb_eng_op *rb_eng_op_new(rb_eng_kind kind, rb_conn *c, void (*done)(rb_srv *, rb_eng_op *))
{
    rb_eng_op *op = rb_xcalloc(1, sizeof *op);
    op->kind = kind;
    op->c = c;
    op->done = done;
    return op;
}

void rb_eng_submit(rb_srv *srv, rb_eng_op *op)
{
    if (op->c) {
        op->c->busy = true;
        op->c->refs++;
    }
    op->srv = srv;
    op->now = rb_now_ms();
    const rb_backend *b = srv->backend;
    switch (op->kind) {
    case RB_ENG_FLUSH:
        b->flush(srv, op);
        return;
    case RB_ENG_MUTATE:
        b->mutate(srv, op);
        return;
    case RB_ENG_INFO:
        b->info(srv, op);
        return;
    case RB_ENG_QUEUE:
        b->queue(srv, op);
        return;
    case RB_ENG_LATENCY:
        b->latency(srv, op);
        return;
    case RB_ENG_JOB:
        b->job(srv, op);
        return;
    case RB_ENG_JOBS:
        b->jobs(srv, op);
        return;
    case RB_ENG_WORKERS:
        b->workers(srv, op);
        return;
    case RB_ENG_JOB_ACTION:
        b->job_action(srv, op);
        return;
    case RB_ENG_BULK:
        b->bulk(srv, op);
        return;
    case RB_ENG_WORKER_LIST:
        b->worker_list(srv, op);
        return;
    case RB_ENG_KINDS:
        break;
    }
    abort(); /* an op kind without a backend function: a programming error */
}

void rb_eng_complete(rb_srv *srv, rb_eng_op *op)
{
    op->done(srv, op);
}

/* What the administration and inspection ops own. */
static void admin_release(rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_INFO:
        for (size_t i = 0; i < op->u.info.n_queues; i++)
            free(op->u.info.queues[i].name);
        free(op->u.info.queues);
        free(op->u.info.latency_s);
        json_decref(op->u.info.rebound);
        break;
    case RB_ENG_QUEUE:
    case RB_ENG_LATENCY:
        for (int i = 0; i < op->u.queue.n; i++)
            free(op->u.queue.names[i]);
        free(op->u.queue.names);
        free(op->u.queue.latency);
        for (int i = 0; op->u.queue.sizes && i < op->u.queue.n; i++)
            free(op->u.queue.sizes[i].name);
        free(op->u.queue.sizes);
        break;
    case RB_ENG_JOB:
        rb_job_view_release(&op->u.job.view);
        break;
    case RB_ENG_JOBS:
        rb_job_views_free(op->u.jobs.views, op->u.jobs.n);
        break;
    case RB_ENG_BULK:
        free(op->u.bulk.jids);
        break;
    case RB_ENG_WORKER_LIST:
        for (size_t i = 0; i < op->u.worker_list.n; i++) {
            free(op->u.worker_list.v[i].wid);
            free(op->u.worker_list.v[i].node);
            free(op->u.worker_list.v[i].info);
        }
        free(op->u.worker_list.v);
        break;
    default:
        break;
    }
}

static void op_free(rb_eng_op *op)
{
    if (op->kind == RB_ENG_MUTATE)
        rb_mutation_release(&op->u.mutate.m);
    admin_release(op);
    json_decref(op->json);
    if (op->arg_free)
        op->arg_free(op->arg);
    free(op);
}

void rb_eng_op_finish(rb_srv *srv, rb_eng_op *op)
{
    (void)srv;
    rb_conn *c = op->c;
    op_free(op);
    if (c) {
        rb_conn_done(c);
        rb_conn_unref(c);
    }
}

bool rb_eng_store_error(int rc)
{
    return rc == RB_ESTORE || rc == RB_EIO || rc == RB_ECONN || rc == RB_ENOMEM ||
           rc == RB_ETIMEDOUT;
}

bool rb_eng_failed(rb_srv *srv, rb_eng_op *op)
{
    if (!op->rc)
        return false;
    if (op->c) {
        if (rb_eng_store_error(op->rc))
            rb_reply_err(op->c, "storage error: %s", rb_err_msg(&op->err));
        else
            rb_reply_err(op->c, "%s", rb_err_msg(&op->err));
    }
    rb_eng_op_finish(srv, op);
    return true;
}
