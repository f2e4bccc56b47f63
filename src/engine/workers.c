/* This node's workers (workers.h): a table by wid. */
#include "engine/workers.h"

#include <stdlib.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/engine.h"

static const char *worker_key(const void *e)
{
    return ((const rb_worker *)e)->wid;
}

static void worker_free(rb_worker *w)
{
    free(w->wid);
    free(w);
}

rb_worker *rb_eng_worker_get(rb_eng *eng, const char *wid, bool create)
{
    rb_worker *w = rb_table_get(&eng->workers, wid);
    if (w || !create)
        return w;
    w = rb_xcalloc(1, sizeof *w);
    w->wid = rb_xstrdup(wid);
    w->last_beat_ms = rb_now_ms();
    rb_table_put(&eng->workers, w);
    return w;
}

rb_worker *rb_eng_worker_attach(rb_eng *eng, const char *wid)
{
    rb_worker *w = rb_eng_worker_get(eng, wid, true);
    w->conns++;
    return w;
}

void rb_eng_worker_detach(rb_eng *eng, rb_worker *w)
{
    if (--w->conns > 0)
        return;
    rb_table_del(&eng->workers, w);
    worker_free(w);
}

size_t rb_eng_workers_count(const rb_eng *eng)
{
    return eng->workers.size;
}

void rb_eng_workers_each(rb_eng *eng, void (*fn)(rb_worker *w, void *arg), void *arg)
{
    for (size_t i = 0; i < eng->workers.nbuckets; i++) {
        rb_worker *next;
        for (rb_worker *w = eng->workers.buckets[i]; w; w = next) {
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

void rb_eng_workers_init(rb_eng *eng)
{
    rb_table_init(&eng->workers, offsetof(rb_worker, hnext), worker_key);
}

void rb_eng_workers_release(rb_eng *eng)
{
    rb_table_each(&eng->workers, free_each, NULL);
    rb_table_release(&eng->workers);
}
