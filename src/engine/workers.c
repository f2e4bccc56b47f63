/* This node's workers (workers.h): a table by wid. */
#include "engine/workers.h"

#include <stdlib.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/srv.h"

static const char *worker_key(const void *e)
{
    return ((const rb_worker *)e)->wid;
}

static void worker_free(rb_worker *w)
{
    free(w->wid);
    free(w);
}

rb_worker *rb_eng_worker_get(rb_srv *srv, const char *wid, bool create)
{
    rb_worker *w = rb_table_get(&srv->workers, wid);
    if (w || !create)
        return w;
    w = rb_xcalloc(1, sizeof *w);
    w->wid = rb_xstrdup(wid);
    w->last_beat_ms = rb_now_ms();
    rb_table_put(&srv->workers, w);
    return w;
}

rb_worker *rb_eng_worker_attach(rb_srv *srv, const char *wid)
{
    rb_worker *w = rb_eng_worker_get(srv, wid, true);
    w->conns++;
    return w;
}

void rb_eng_worker_detach(rb_srv *srv, rb_worker *w)
{
    if (--w->conns > 0)
        return;
    rb_table_del(&srv->workers, w);
    worker_free(w);
}

size_t rb_eng_workers_count(const rb_srv *srv)
{
    return srv->workers.size;
}

void rb_eng_workers_each(rb_srv *srv, void (*fn)(rb_worker *w, void *arg), void *arg)
{
    for (size_t i = 0; i < srv->workers.nbuckets; i++) {
        rb_worker *next;
        for (rb_worker *w = srv->workers.buckets[i]; w; w = next) {
            next = w->hnext;
            fn(w, arg);
        }
    }
}

static void free_each(void *e, void *arg)
{
    (void)arg;
    worker_free(e);
}

void rb_eng_workers_init(rb_srv *srv)
{
    rb_table_init(&srv->workers, offsetof(rb_worker, hnext), worker_key);
}

void rb_eng_workers_release(rb_srv *srv)
{
    rb_table_each(&srv->workers, free_each, NULL);
    rb_table_release(&srv->workers);
}
