/* The distributed backend of the job engine (engine/engine.h): each
 * operation becomes a request to a database thread (pgmode.h), which runs
 * it as one transaction on the shared PostgreSQL database; its completion
 * comes back to the loop thread and completes the op. */
#include "engine/engine.h"

#include <string.h>

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

const rb_backend rb_backend_pg = {
    .name = "postgresql",
    .flush = pg_flush,
    .mutate = pg_mutate,
};
