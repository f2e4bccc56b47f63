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
#include "server/cmds.h"

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

static void post_seen(rb_conn *c, const char *wid, rb_pg_seen_kind kind, char *info,
                      void (*done)(rb_srv *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_SEEN, c);
    r->wid = rb_xstrdup(wid);
    r->u.seen.kind = kind;
    r->data = info;
    r->data_free = free;
    r->done = done;
    rb_pgreq_post(c->srv, r);
}

/* Logs r's storage error as any other, without answering r's client. */
static void log_storage_error(rb_srv *srv, rb_pgreq *r)
{
    rb_conn *c = r->c;
    r->c = NULL;
    rb_pgmode_storage_error(srv, r);
    r->c = c;
}

static void hello_done(rb_srv *srv, rb_pgreq *r)
{
    if (r->rc) /* logged as any storage error, but HELLO itself succeeded */
        log_storage_error(srv, r);
    rb_reply_ok(r->c);
    rb_pgreq_finish(srv, r);
}

void rb_pgworkers_hello(rb_conn *c, const json_t *hello)
{
    json_t *info = json_deep_copy(hello);
    json_object_del(info, "pwdhash");
    post_seen(c, c->worker->wid, RB_PG_SEEN_HELLO, json_dumps(info, JSON_COMPACT), hello_done);
    json_decref(info);
}

static void beat_done(rb_srv *srv, rb_pgreq *r)
{
    if (r->rc && r->u.seen.kind == RB_PG_SEEN_BEAT_HELD) {
        /* The database is away but the worker is connected here: this node
         * answers (with its own quiet when it is shutting down), and a
         * signal set in the registry reaches the worker at its first BEAT
         * once the database is back. */
        log_storage_error(srv, r);
        rb_cmd_beat_reply(r->c, 0);
        rb_pgreq_finish(srv, r);
        return;
    }
    if (r->rc) {
        rb_pgmode_storage_error(srv, r);
        rb_pgreq_finish(srv, r);
        return;
    }
    if (r->u.seen.signal < 0)
        rb_reply_err(r->c, "unknown worker %s (say HELLO with this wid first)", r->wid);
    else
        rb_cmd_beat_reply(r->c, r->u.seen.signal);
    rb_pgreq_finish(srv, r);
}

void rb_pgworkers_beat(rb_conn *c, const char *wid)
{
    rb_worker *w = rb_srv_worker(c->srv, wid, false);
    if (w)
        w->last_beat_ms = rb_now_ms();
    post_seen(c, wid, w ? RB_PG_SEEN_BEAT_HELD : RB_PG_SEEN_BEAT, NULL, beat_done);
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

static void held_done(rb_srv *srv, rb_pgreq *r)
{
    if (r->rc)
        rb_pgmode_storage_error(srv, r); /* logged; the next refresh tries again */
    rb_pgreq_finish(srv, r);
}

void rb_pgworkers_refresh(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    if (!srv->workers.size || srv->stopping)
        return;
    held *h = rb_xcalloc(1, sizeof *h);
    h->wids = rb_xcalloc(srv->workers.size, sizeof *h->wids);
    for (size_t i = 0; i < srv->workers.nbuckets; i++)
        for (rb_worker *w = srv->workers.buckets[i]; w; w = w->hnext)
            h->wids[h->n++] = rb_xstrdup(w->wid);
    rb_pgreq_post(srv, rb_pgreq_new_call(NULL, h, held_free, held_call, held_done));
}
