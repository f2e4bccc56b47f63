/* Distributed mode's worker registry, the server's side (registry.h):
 * HELLO, BEAT and this node's refresh of its connected workers, all on the
 * cluster's rb_workers table through the database threads (WORKERS, the
 * HTTP API's list of workers and the worker actions go through the job
 * engine: backend.c). */
#include "backend/pg/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/timeutil.h"

/* --- this node's name in the registry: "host:pid" --- */

static char node_name[300];
static pthread_once_t node_once = PTHREAD_ONCE_INIT;

static void node_init(void)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(node_name, sizeof node_name, "%s:%ld", host, (long)getpid());
}

const char *rb_pgworkers_node(void)
{
    pthread_once(&node_once, node_init);
    return node_name;
}

/* --- HELLO and BEAT: sightings, batched --- */

void rb_pgworkers_run_seen(rb_pg *pg, rb_pgreq **v, size_t n)
{
    rb_pg_sighting *s = rb_xcalloc(n, sizeof *s);
    int *sig = rb_xcalloc(n, sizeof *sig);
    for (size_t i = 0; i < n; i++)
        s[i] = (rb_pg_sighting){v[i]->wid, v[i]->u.seen.kind, v[i]->data};
    rb_err err = {0};
    int rc = rb_pg_workers_seen(pg, s, n, rb_pgworkers_node(), rb_now_ms(), sig, &err);
    for (size_t i = 0; i < n; i++) {
        v[i]->rc = rc;
        if (rc)
            v[i]->err = err;
        else
            v[i]->u.seen.signal = sig[i];
    }
    free(s);
    free(sig);
}

/* Posts a sighting of op's worker; done completes op. */
static void post_seen(rb_eng *eng, rb_eng_op *op, rb_pg_seen_kind kind, char *info,
                      void (*done)(rb_eng *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_SEEN);
    r->wid = rb_xstrdup(op->u.worker.wid);
    r->u.seen.kind = kind;
    r->data = info;
    r->data_free = free;
    r->op = op;
    r->done = done;
    rb_pgreq_post(eng, r);
}

static void hello_done(rb_eng *eng, rb_pgreq *r)
{
    rb_eng_op *op = r->op;
    if (r->rc) /* logged as any storage error, but HELLO itself succeeded */
        rb_pgmode_storage_error(eng, r);
    op->applied = r->rc ? RB_ENG_UNKNOWN : RB_ENG_APPLIED;
    rb_pgreq_finish(eng, r);
    rb_eng_complete(eng, op);
}

void rb_pgworkers_hello(rb_eng *eng, rb_eng_op *op)
{
    json_t *info = json_deep_copy(op->u.worker.info);
    json_object_del(info, "pwdhash");
    post_seen(eng, op, RB_PG_SEEN_HELLO, json_dumps(info, JSON_COMPACT), hello_done);
    json_decref(info);
}

static void beat_done(rb_eng *eng, rb_pgreq *r)
{
    rb_eng_op *op = r->op;
    if (r->rc) {
        rb_pgmode_storage_error(eng, r);
        /* The database is away but the worker is connected here: this node
         * answers (with its own quiet when it is shutting down), and a
         * signal set in the registry reaches the worker at its first BEAT
         * once the database is back. */
        if (r->u.seen.kind != RB_PG_SEEN_BEAT_HELD) {
            op->rc = r->rc;
            op->err = r->err;
        }
    } else if (r->u.seen.signal < 0) {
        op->rc = rb_err_set(&op->err, RB_ENOENT, RB_UNKNOWN_WORKER, op->u.worker.wid);
    } else {
        op->u.worker.signal = r->u.seen.signal;
    }
    rb_pgreq_finish(eng, r);
    rb_eng_complete(eng, op);
}

void rb_pgworkers_beat(rb_eng *eng, rb_eng_op *op)
{
    rb_worker *w = rb_eng_worker_get(eng, op->u.worker.wid, false);
    if (w)
        w->last_beat_ms = op->now;
    post_seen(eng, op, w ? RB_PG_SEEN_BEAT_HELD : RB_PG_SEEN_BEAT, NULL, beat_done);
}

/* --- the refresh of this node's connected workers --- */

typedef struct held {
    char **wids;
    size_t n;
} held;

static void held_free(void *p)
{
    held *h = p;
    for (size_t i = 0; i < h->n; i++)
        free(h->wids[i]);
    free(h->wids);
    free(h);
}

static void held_call(rb_pg *pg, rb_pgreq *r)
{
    held *h = r->data;
    rb_pg_sighting *s = rb_xcalloc(h->n, sizeof *s);
    for (size_t i = 0; i < h->n; i++)
        s[i] = (rb_pg_sighting){h->wids[i], RB_PG_SEEN_HELD, NULL};
    r->rc = rb_pg_workers_seen(pg, s, h->n, rb_pgworkers_node(), rb_now_ms(), NULL, &r->err);
    free(s);
}

static void held_done(rb_eng *eng, rb_pgreq *r)
{
    if (r->rc)
        rb_pgmode_storage_error(eng, r); /* logged; the next refresh tries again */
    rb_pgreq_finish(eng, r);
}

static void add_held(rb_worker *w, void *arg)
{
    held *h = arg;
    h->wids[h->n++] = rb_xstrdup(w->wid);
}

void rb_pgworkers_refresh(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng *eng = arg;
    if (!rb_eng_workers_count(eng) || eng->stopping)
        return;
    held *h = rb_xcalloc(1, sizeof *h);
    h->wids = rb_xcalloc(rb_eng_workers_count(eng), sizeof *h->wids);
    rb_eng_workers_each(eng, add_held, h);
    rb_pgreq_post(eng, rb_pgreq_new_call(h, held_free, held_call, held_done));
}
