/* The SQLite backend's life cycle (engine.h's open, attach, close and
 * release; backend.h): the store opened from the configuration's file (or
 * given: the null store), its jobs, counters and meta rows recovered into
 * the in-memory indexes, the group-commit writer started and hooked to the
 * loop, and everything finished and freed at the end. The mirror of the
 * PostgreSQL backend's mode.c. Loop thread only. */
#include "backend/sqlite/backend.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "backend/sqlite/batch.h"
#include "backend/sqlite/debounce.h"
#include "backend/sqlite/groups.h"
#include "backend/sqlite/sq.h"
#include "backend/sqlite/throttle.h"
#include "backend/sqlite/track.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "engine/cron.h"
#include "engine/engine.h"

rb_sq *rb_sq_of(const rb_eng *eng)
{
    return eng->be;
}

/* --- recovery --- */

static int load_job(void *arg, const rb_job_row *r)
{
    rb_sq *sq = arg;
    if (r->state < RB_JOB_SCHEDULED || r->state > RB_JOB_BLOCKED || !r->jid || !r->json ||
        !r->queue || rb_jobs_find(&sq->jobs, r->jid)) {
        rb_log(RB_LOG_WARN, "skipping unreadable stored job %s", r->jid ? r->jid : "?");
        return 0;
    }
    rb_queue *q = rb_jobs_queue(&sq->jobs, r->queue, true);
    int prio = r->priority >= 1 && r->priority <= RB_PRIORITIES ? r->priority : 5;
    rb_job *j = rb_job_new(r->jid, rb_xstrdup(r->json), q, prio);
    if (r->grp)
        rb_sq_group_set(sq, j, r->grp);
    else
        rb_sq_group_of_text(sq, j); /* a row from before the column, or imported */
    j->history = r->history ? rb_xstrdup(r->history) : NULL;
    /* a holder only while working (jobs.c checks it) */
    j->wid = r->wid && r->state == RB_JOB_WORKING ? rb_xstrdup(r->wid) : NULL;
    j->attempts = r->attempts;
    j->reserve_s = r->reserve_s > 0 ? r->reserve_s : (int32_t)sq->cfg->server.reserve_for_s;
    j->first_ms = r->first_ms;
    j->row_id = r->id;
    j->timer.seq = r->seq; /* rows come in (due, seq) order: ENQUEUED renumbers in that order */
    rb_jobs_add(&sq->jobs, j);
    rb_jobs_set_state(&sq->jobs, j, (rb_job_state)r->state, r->due_ms);
    if (r->state == RB_JOB_ENQUEUED && r->due_us > 0 && r->due_us < 1000)
        j->enq_frac_us = (uint64_t)r->due_us; /* enqueued_at to the microsecond */
    return 0;
}

static int load_counter(void *arg, const char *name, int64_t value)
{
    rb_sq *sq = arg;
    if (!strcmp(name, "total_processed"))
        sq->total_processed = value;
    else if (!strcmp(name, "total_failures"))
        sq->total_failures = value;
    else if (!strcmp(name, "batch_callbacks"))
        sq->batch_callbacks = value;
    else
        rb_sq_unique_load_counter(sq, name, value);
    rb_sq_debounce_load_counter(sq, name, value);
    return 0;
}

static int load_meta(void *arg, const char *key, const char *value)
{
    rb_sq *sq = arg;
    if (!strncmp(key, "paused:", 7))
        rb_jobs_queue(&sq->jobs, key + 7, true)->paused = true;
    else if (!strncmp(key, RB_QUEUE_META_KEY, strlen(RB_QUEUE_META_KEY)))
        rb_jobs_queue(&sq->jobs, key + strlen(RB_QUEUE_META_KEY), true)->known = true;
    else
        rb_deps_load_meta(sq, key, value);
    rb_sq_batch_load(sq, key, value);
    rb_sq_unique_load(sq, key, value);
    if (!strncmp(key, RB_CRON_META_KEY, strlen(RB_CRON_META_KEY))) /* mem_push's condition */
        json_object_set_new(sq->cron_ticks, key, json_integer(strtoll(value, NULL, 10)));
    rb_sq_track_load(sq, key, value);
    rb_sq_groups_load(sq, key, value);
    rb_sq_debounce_load(sq, key, value);
    return 0;
}

/* --- the loop's events --- */

static void on_writer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    rb_writer_reap(sq->writer);
}

/* Runs after every callback that was ready when it was activated, i.e. at
 * the end of the loop iteration in which the open batch got its first
 * request: one hand-over (and at most one wake-up of the writer thread)
 * carries every request read in that iteration, and every change made by
 * the completions just reaped. */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    rb_writer_seal(sq->writer);
}

static void flush_soon(void *arg)
{
    rb_sq *sq = arg;
    event_active(sq->flush_ev, EV_TIMEOUT, 1);
}

/* --- the life cycle --- */

static void free_event(struct event **ev)
{
    if (*ev)
        event_free(*ev);
    *ev = NULL;
}

int rb_sq_open_store(rb_eng *eng, rb_store *store, rb_err *err)
{
    rb_sq *sq = rb_xcalloc(1, sizeof *sq);
    sq->eng = eng;
    sq->cfg = eng->cfg;
    sq->metrics = eng->metrics;
    sq->armed_ms = INT64_MAX;
    sq->store = store;
    sq->cron_ticks = json_object();
    rb_jobs_init(&sq->jobs);
    rb_sq_batches_init(sq);
    rb_sq_unique_init(sq);
    rb_sq_track_init(sq);
    rb_deps_init(&sq->deps);
    rb_sq_groups_init(sq);
    rb_sq_debounce_init(sq);
    rb_rng_seed_os(&sq->rng);
    eng->backend = &rb_backend_sqlite;
    eng->be = sq;
    rb_store_loader loader = {sq, load_job, load_counter, load_meta};
    int64_t t0 = rb_mono_ms();
    int rc = store->ops->load(store, &loader, err);
    if (rc)
        return rc;
    rb_log(RB_LOG_INFO, "recovered %zu jobs from %s in %lld ms", sq->jobs.by_jid.size,
           sq->cfg->storage.url ? sq->cfg->storage.url : store->ops->name,
           (long long)(rb_mono_ms() - t0));
    if (!(sq->writer = rb_writer_start(store, err)))
        return err ? err->code : RB_EIO;
    rb_writer_observe(sq->writer, rb_metrics_commit, sq->metrics);
    rb_deps_rebuild(sq);       /* the waiting and blocked jobs' edges */
    rb_sq_unique_rebuild(sq); /* unique locks whose holder is gone, expiring jobs */
    rb_sq_track_rebuild(sq);  /* progress records past their retention */
    rb_sq_groups_loaded(sq);  /* buckets to their groups, holds recomputed */
    rb_sq_debounce_rebuild(sq, rb_now_ms()); /* pending keys back to their jobs */
    return 0;
}

int rb_sq_open(rb_eng *eng, rb_err *err)
{
    rb_store *store;
    int rc = rb_store_open(eng->cfg->storage.url, &store, err);
    return rc ? rc : rb_sq_open_store(eng, store, err);
}

void rb_sq_attach(rb_eng *eng)
{
    rb_sq *sq = rb_sq_of(eng);
    sq->base = eng->base;
    sq->writer_ev = event_new(sq->base, rb_writer_fd(sq->writer), EV_READ | EV_PERSIST,
                              on_writer, sq);
    event_add(sq->writer_ev, NULL);
    sq->flush_ev = event_new(sq->base, -1, 0, on_flush, sq);
    rb_writer_defer(sq->writer, flush_soon, sq);
    rb_sq_arm(sq);
    rb_sq_groups_attach(sq);
}

/* The loop is over: the commit in progress finishes (its completions
 * run), then the loop's events go. */
void rb_sq_close(rb_eng *eng)
{
    rb_sq *sq = rb_sq_of(eng);
    if (!sq)
        return;
    if (sq->writer)
        rb_writer_defer(sq->writer, NULL, NULL); /* the loop is over: seal at once */
    rb_writer_free(sq->writer);                  /* finishes the commit in progress */
    sq->writer = NULL;
    free_event(&sq->timer_ev);
    free_event(&sq->writer_ev);
    free_event(&sq->flush_ev);
    free_event(&sq->batch_ev);
    rb_sq_throttle_close(sq);
    rb_sq_groups_close(sq);
}

void rb_sq_release(rb_eng *eng)
{
    rb_sq *sq = rb_sq_of(eng);
    if (!sq)
        return;
    rb_sq_close(eng);
    if (sq->store)
        sq->store->ops->close(sq->store);
    json_decref(sq->cron_ticks);
    rb_jobs_release(&sq->jobs);
    rb_sq_batches_release(sq);
    rb_sq_unique_release(sq);
    rb_sq_track_release(sq);
    rb_sq_throttle_release(sq);
    rb_sq_groups_release(sq);
    rb_sq_debounce_release(sq);
    rb_deps_release(&sq->deps);
    free(sq);
    eng->be = NULL;
}
