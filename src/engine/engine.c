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

static void op_free(rb_eng_op *op);

void rb_eng_submit(rb_srv *srv, rb_eng_op *op)
{
    if (op->c) {
        op->c->busy = true;
        op->c->refs++;
    }
    op->srv = srv;
    op->now = rb_now_ms();
    const rb_backend *b = srv->backend;
    void (*fn)(rb_srv *, rb_eng_op *) = NULL;
    switch (op->kind) {
    case RB_ENG_PUSH:
        fn = b->push;
        break;
    case RB_ENG_FETCH:
        fn = b->fetch;
        break;
    case RB_ENG_ACK:
        fn = b->ack;
        break;
    case RB_ENG_FAIL:
        fn = b->fail;
        break;
    case RB_ENG_SNOOZE:
        fn = b->snooze;
        break;
    case RB_ENG_EXTEND:
        fn = b->extend;
        break;
    case RB_ENG_FLUSH:
        fn = b->flush;
        break;
    case RB_ENG_MUTATE:
        fn = b->mutate;
        break;
    case RB_ENG_KINDS:
        break;
    }
    if (!fn)
        abort(); /* an op kind without a backend function: a programming error */
    op->submitting = true;
    fn(srv, op);
    op->submitting = false;
    if (op->finished) {
        /* done ran inside fn: the handler's caller (conn.c's loop over
         * the buffered lines) runs the next command, unless c waits */
        rb_conn *c = op->c;
        bool parked = op->parked;
        op_free(op);
        if (c) {
            if (!parked)
                c->busy = false;
            rb_conn_unref(c);
        }
    }
}

void rb_eng_complete(rb_srv *srv, rb_eng_op *op)
{
    op->done(srv, op);
}

static void op_free(rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_PUSH:
        free(op->u.push.jobs);
        free(op->u.push.status);
        break;
    case RB_ENG_FETCH:
        for (int i = 0; i < op->u.fetch.n; i++)
            free(op->u.fetch.queues[i]);
        free(op->u.fetch.queues);
        free(op->u.fetch.jid);
        free(op->u.fetch.job);
        break;
    case RB_ENG_ACK:
    case RB_ENG_FAIL:
    case RB_ENG_SNOOZE:
    case RB_ENG_EXTEND:
        free(op->u.job.jid);
        break;
    case RB_ENG_MUTATE:
        rb_mutation_release(&op->u.mutate.m);
        break;
    default:
        break;
    }
    json_decref(op->json);
    if (op->arg_free)
        op->arg_free(op->arg);
    free(op);
}

void rb_eng_op_finish(rb_srv *srv, rb_eng_op *op)
{
    (void)srv;
    if (op->submitting) {
        op->finished = true; /* rb_eng_submit frees it */
        return;
    }
    rb_conn *c = op->c;
    bool parked = op->parked;
    op_free(op);
    if (c) {
        if (!parked)
            rb_conn_done(c);
        rb_conn_unref(c);
    }
}

void rb_eng_op_park(rb_srv *srv, rb_eng_op *op)
{
    op->parked = true;
    rb_eng_op_finish(srv, op);
}

bool rb_eng_failed(rb_srv *srv, rb_eng_op *op)
{
    if (!op->rc)
        return false;
    if (op->c) {
        bool store = op->rc == RB_ESTORE || op->rc == RB_EIO || op->rc == RB_ECONN ||
                     op->rc == RB_ENOMEM || op->rc == RB_ETIMEDOUT;
        if (store)
            rb_reply_err(op->c, "storage error: %s", rb_err_msg(&op->err));
        else
            rb_reply_err(op->c, "%s", rb_err_msg(&op->err));
    }
    rb_eng_op_finish(srv, op);
    return true;
}
