/* The single-node backend's queue throttles (backend/sqlite/throttle.h). */
#include "backend/sqlite/throttle.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/groups.h"
#include "backend/sqlite/jobs.h"
#include "common/buf.h"
#include "common/list.h"
#include "common/timeutil.h"
#include "engine/engine.h"
#include "backend/sqlite/sq.h"
#include "engine/reads.h"
#include "engine/throttle.h"

/* A fetch's time, by jid: kept for jobs of throttled queues with a
 * timeout, from their fetch until they leave the server (overwritten at
 * the next fetch). */
typedef struct fetched {
    void *hnext;
    int64_t ms;
    char jid[];
} fetched;

struct rb_sq_throttle {
    rb_table fetched;  /* fetched, by jid */
    struct event *ev;  /* wakes waiting FETCHes when a slot's timeout passes */
    int64_t armed_ms;  /* ev's time, INT64_MAX when not armed */
};

static const char *fetched_jid(const void *e)
{
    return ((const fetched *)e)->jid;
}

static void free_fetched(void *e, void *arg)
{
    (void)arg;
    free(e);
}

static rb_sq_throttle *state(rb_sq *sq)
{
    if (!sq->throttle) {
        sq->throttle = rb_xcalloc(1, sizeof *sq->throttle);
        rb_table_init(&sq->throttle->fetched, offsetof(fetched, hnext), fetched_jid);
        sq->throttle->armed_ms = INT64_MAX;
    }
    return sq->throttle;
}

void rb_sq_throttle_close(rb_sq *sq)
{
    rb_sq_throttle *t = sq->throttle;
    if (t && t->ev) {
        event_free(t->ev);
        t->ev = NULL;
    }
}

void rb_sq_throttle_release(rb_sq *sq)
{
    rb_sq_throttle *t = sq->throttle;
    if (!t)
        return;
    rb_sq_throttle_close(sq);
    rb_table_each(&t->fetched, free_fetched, NULL);
    rb_table_release(&t->fetched);
    free(t);
    sq->throttle = NULL;
}

/* When working job j was fetched: recorded at its fetch, else (loaded at
 * start-up) its lease's start. */
static int64_t fetch_ms(rb_sq_throttle *t, const rb_job *j)
{
    fetched *f = rb_table_get(&t->fetched, j->jid);
    return f ? f->ms : rb_throttle_fetched_from_lease(j->timer.at_ms, j->reserve_s);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    sq->throttle->armed_ms = INT64_MAX;
    rb_eng_wake(sq->eng, NULL, 0); /* a slot freed by its timeout: another try */
}

static void arm(rb_sq *sq, rb_sq_throttle *t, int64_t at, int64_t now)
{
    if (at >= t->armed_ms || !sq->base)
        return;
    if (!t->ev)
        t->ev = evtimer_new(sq->base, on_timeout, sq);
    int64_t delay = at > now ? at - now : 0;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(t->ev, &tv);
    t->armed_ms = at;
}

/* The slots of throttle cfg on q held at now, and in *frees the earliest
 * time one frees by its timeout (INT64_MAX: none). */
static int64_t held_slots(rb_sq *sq, const rb_throttle *cfg, const rb_queue *q, int64_t now,
                          int64_t *frees)
{
    rb_sq_throttle *t = state(sq);
    int64_t held = 0;
    *frees = INT64_MAX;
    /* The working jobs are the slots (a scan of the working set, which is
     * as large as the workers' concurrency, for a throttled queue only). */
    for (rb_link *l = sq->jobs.working.head; l; l = l->next) {
        const rb_job *j = rb_container_of(l, rb_job, link);
        if (rb_job_queue(j) != q)
            continue;
        int64_t at = rb_throttle_frees_at(fetch_ms(t, j), cfg->timeout_s);
        if (!rb_throttle_holds(fetch_ms(t, j), cfg->timeout_s, now))
            continue; /* its timeout passed: the slot is free, the job may run on */
        held++;
        if (at < *frees)
            *frees = at;
    }
    return held;
}

bool rb_sq_throttle_full(rb_sq *sq, rb_queue *q, int64_t now)
{
    if (!sq->cfg->n_throttles)
        return false;
    const rb_throttle *cfg = rb_config_throttle(sq->cfg, q->name);
    if (!cfg)
        return false;
    if (cfg->rate && rb_sq_queue_rate_full(sq, cfg, q, now))
        return true;
    int64_t frees;
    if (!cfg->concurrency || held_slots(sq, cfg, q, now, &frees) < cfg->concurrency)
        return false;
    if (frees != INT64_MAX)
        arm(sq, state(sq), frees, now);
    return true;
}

bool rb_sq_throttle_job_hold(rb_sq *sq, rb_queue *q, int64_t now, rb_job_view *v)
{
    const rb_throttle *cfg = sq->cfg->n_throttles ? rb_config_throttle(sq->cfg, q->name) : NULL;
    if (!q->paused && !cfg)
        return false;
    int64_t held = 0, frees = INT64_MAX;
    if (cfg && cfg->concurrency)
        held = held_slots(sq, cfg, q, now, &frees);
    int64_t tat = cfg && cfg->rate ? rb_sq_queue_tat(sq, q) : 0;
    return rb_throttle_job_hold(q->name, q->paused, cfg, held, frees, tat, now, v);
}

void rb_sq_throttle_info(rb_sq *sq, json_t *rebound, int64_t now)
{
    if (!sq->cfg->n_throttles)
        return;
    json_t *o = json_object();
    for (size_t i = 0; i < sq->cfg->n_throttles; i++) {
        const rb_throttle *cfg = &sq->cfg->throttles[i];
        rb_queue *q = rb_jobs_queue(&sq->jobs, cfg->queue, false);
        int64_t frees, held = q ? held_slots(sq, cfg, q, now, &frees) : 0;
        rb_throttle_info_set(o, cfg, held);
    }
    json_object_set_new(rebound, "throttles", o);
}

void rb_sq_throttle_started(rb_sq *sq, const rb_job *j, int64_t now)
{
    if (!sq->cfg->n_throttles)
        return;
    const rb_throttle *cfg = rb_config_throttle(sq->cfg, rb_job_queue(j)->name);
    if (cfg && cfg->rate)
        rb_sq_queue_rate_started(sq, cfg, rb_job_queue(j), now);
    if (!cfg || !cfg->timeout_s)
        return;
    rb_sq_throttle *t = state(sq);
    fetched *f = rb_table_get(&t->fetched, j->jid);
    if (!f) {
        size_t n = strlen(j->jid) + 1;
        f = rb_xmalloc(sizeof *f + n);
        f->hnext = NULL;
        memcpy(f->jid, j->jid, n);
        rb_table_put(&t->fetched, f);
    }
    f->ms = now;
}

void rb_sq_throttle_gone(rb_sq *sq, const rb_job *j)
{
    rb_sq_throttle *t = sq->throttle;
    fetched *f = t ? rb_table_get(&t->fetched, j->jid) : NULL;
    if (f) {
        rb_table_del(&t->fetched, f);
        free(f);
    }
}
