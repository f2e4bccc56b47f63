/* Distributed mode's life cycle (mode.h): opening the engines and
 * starting the database threads (rb_pgmode_open, before the event base
 * exists), registering the loop's events and starting the listen and
 * maintenance threads (rb_pgmode_attach), and stopping and freeing it all
 * (rb_pgmode_free). On the loop thread: the eventfd callback that takes
 * what the threads handed back (finished requests, ready queues,
 * observations) and the poll timer that covers lost notifications. The
 * rb_pgmode and its engines are this file's: made by open, freed by free. */
#include "backend/pg/backend.h"
#include "backend/pg/mode_impl.h"

#include "engine/engine.h"

#include <event2/event.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "backend/pg/registry.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/cron.h"
#include "common/log.h"

/* --- the loop's side --- */

static void on_efd(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng *eng = arg;
    rb_pgmode *pm = rb_pgm_of(eng);
    uint64_t v;
    ssize_t r = read(pm->efd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&pm->mu);
    pm->signalled = false;
    rb_pgreq *list = pm->done;
    pm->done = NULL;
    pm->done_tail = &pm->done;
    char **queues = pm->notified;
    size_t nq = pm->n_notified;
    bool all = pm->notify_all;
    pm->notified = NULL;
    pm->n_notified = 0;
    pm->notify_all = false;
    mode_observed seen = pm->seen;
    memset(&pm->seen, 0, sizeof pm->seen);
    pthread_mutex_unlock(&pm->mu);
    mode_observed_count(eng, &seen);
    mode_observed_release(&seen);
    while (list) {
        rb_pgreq *next = list->next;
        list->done(eng, list);
        list = next;
    }
    if (all || nq) {
        pm->notify_seq++;
        rb_pgmode_wake(eng, all ? NULL : (const char *const *)queues, all ? 0 : nq);
    }
    for (size_t i = 0; i < nq; i++)
        free(queues[i]);
    free(queues);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng *eng = arg;
    rb_pgmode_wake(eng, NULL, 0);
}

/* Opens one of the node's engines: listen for the listen thread's, keyed
 * for the work thread whose batches run the job statements (work[0]). */
static int open_engine(rb_eng *eng, bool listen, bool keyed, rb_pg **out, rb_err *err)
{
    rb_pg_options o = {.url = eng->cfg->storage.url,
                       .cfg = eng->cfg,
                       .listen = listen,
                       .keyed = keyed,
                       .io_timeout_ms = eng->cfg->storage.request_timeout_s * 1000,
                       .idle_tx_ms = eng->cfg->storage.idle_in_transaction_timeout_s * 1000};
    int64_t backoff = 100;
    for (;;) {
        int rc = rb_pg_open(&o, out, err);
        if (!rb_pg_lost(rc))
            return rc;
        rb_log(RB_LOG_WARN, "cannot reach the database: %s (retrying in %lld ms)",
               rb_err_msg(err), (long long)backoff);
        struct timespec ts = {backoff / 1000, (long)(backoff % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
}

/* A stored "cron:NAME" row: the entry's last tick, for rb_cron_start's
 * catch-up (the pushes themselves test the row again). */
static void cron_row(void *arg, const char *key, const char *value)
{
    rb_pgmode *pm = arg;
    json_object_set_new(pm->cron_ticks, key, json_integer(strtoll(value, NULL, 10)));
}

json_t *rb_pgmode_cron_ticks(rb_eng *eng)
{
    return json_deep_copy(rb_pgm_of(eng)->cron_ticks);
}

int rb_pgmode_open(rb_eng *eng, rb_err *err)
{
    rb_pgmode *pm = rb_xcalloc(1, sizeof *pm);
    pm->eng = eng;
    pm->cron_ticks = json_object();
    pm->efd = -1;
    pm->stop_pipe[0] = pm->stop_pipe[1] = -1;
    pm->todo_tail = &pm->todo;
    pm->done_tail = &pm->done;
    pm->maint_due_min = INT64_MAX;
    pm->held_tail = &pm->held;
    mode_prefetch_init(pm);
    pthread_mutex_init(&pm->mu, NULL);
    pthread_cond_init(&pm->cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pm->maint_cv, &ca);
    pthread_condattr_destroy(&ca);
    eng->be = pm;
    eng->backend = &rb_backend_pg;
    int rc = open_engine(eng, false, true, &pm->work[0], err);
    if (!rc) {
        rc = rb_pg_check_schema(pm->work[0], err);
        while (rb_pg_lost(rc)) { /* lost between the connect and the check */
            rb_log(RB_LOG_WARN, "checking the schema: %s (retrying)", rb_err_msg(err));
            struct timespec ts = {0, 200000000L};
            nanosleep(&ts, NULL);
            rc = rb_pg_check_schema(pm->work[0], err);
        }
    }
    while (!rc && eng->cfg->n_cron &&
           rb_pg_lost(rc = rb_pg_meta_each(pm->work[0], RB_CRON_META_KEY, cron_row, pm, err))) {
        rb_log(RB_LOG_WARN, "reading the cron ticks: %s (retrying)", rb_err_msg(err));
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 1; !rc && i < RB_PGMODE_THREADS; i++)
        rc = open_engine(eng, false, false, &pm->work[i], err);
    if (!rc)
        rc = open_engine(eng, false, false, &pm->maint, err);
    for (int i = 0; !rc && i < RB_PGMODE_THREADS; i++) { /* named in rb_parked (fetch.c) */
        rb_pg_set_node(pm->work[i], rb_pgworkers_node());
        if (i > 0) /* one turn cursor per queue for the node */
            rb_pg_share_turns(pm->work[i], pm->work[0]);
    }
    if (!rc)
        rc = open_engine(eng, true, false, &pm->listen, err);
    if (!rc && ((pm->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
                pipe(pm->stop_pipe) != 0))
        rc = rb_err_set(err, RB_EIO, "cannot make an eventfd: %s", strerror(errno));
    mode_link_init(pm);
    for (int i = 0; !rc && i < RB_PGMODE_THREADS; i++) {
        mode_thread_arg *ta = rb_xmalloc(sizeof *ta);
        ta->pm = pm;
        ta->pg = pm->work[i];
        if (pthread_create(&pm->threads[i], NULL, mode_db_thread, ta) != 0) {
            free(ta);
            rc = rb_err_set(err, RB_EIO, "cannot start a database thread");
            break;
        }
        pm->n_threads++;
    }
    if (rc) {
        rb_pgmode_free(eng);
        return rc;
    }
    rb_log(RB_LOG_INFO, "distributed mode: PostgreSQL schema version %d, %d database threads",
           RB_PG_SCHEMA_VERSION, RB_PGMODE_THREADS);
    return 0;
}

void rb_pgmode_attach(rb_eng *eng)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    pm->efd_ev = event_new(eng->base, pm->efd, EV_READ | EV_PERSIST, on_efd, eng);
    event_add(pm->efd_ev, NULL);
    pm->poll_ev = event_new(eng->base, -1, EV_PERSIST, on_poll, eng);
    struct timeval tv = {RB_PGMODE_POLL_MS / 1000, (RB_PGMODE_POLL_MS % 1000) * 1000};
    event_add(pm->poll_ev, &tv);
    pm->held_ev = event_new(eng->base, -1, EV_PERSIST, rb_pgworkers_refresh, eng);
    struct timeval held = {RB_PGWORKERS_REFRESH_MS / 1000, (RB_PGWORKERS_REFRESH_MS % 1000) * 1000};
    event_add(pm->held_ev, &held);
    pm->listen_started = pthread_create(&pm->listen_th, NULL, mode_listen_thread, pm) == 0;
    pm->maint_started = pthread_create(&pm->maint_th, NULL, mode_maint_thread, pm) == 0;
    if (!pm->listen_started || !pm->maint_started)
        rb_log(RB_LOG_ERROR, "cannot start the listen or maintenance thread");
}

void rb_pgmode_free(rb_eng *eng)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!pm)
        return;
    json_decref(pm->cron_ticks);
    pm->cron_ticks = NULL;
    pthread_mutex_lock(&pm->mu);
    pm->stop = true;
    pthread_cond_broadcast(&pm->cv);
    pthread_cond_broadcast(&pm->maint_cv);
    pthread_mutex_unlock(&pm->mu);
    if (pm->stop_pipe[1] >= 0) {
        ssize_t w = write(pm->stop_pipe[1], "x", 1);
        (void)w;
    }
    for (int i = 0; i < pm->n_threads; i++)
        pthread_join(pm->threads[i], NULL);
    if (pm->listen_started)
        pthread_join(pm->listen_th, NULL);
    if (pm->maint_started)
        pthread_join(pm->maint_th, NULL);
    /* What finished after the loop ended: its connections are closed, so
     * the done handlers only free (no request is posted any more). */
    while (pm->done) {
        rb_pgreq *r = pm->done;
        pm->done = r->next;
        r->done(eng, r);
    }
    /* prefetched jobs back to their queues while a connection is open */
    mode_prefetch_release_all(eng, pm->work[0]);
    mode_parked_clear(eng, pm->work[0]);
    mode_leader_release(pm, pm->maint); /* another node takes over at once */
    while (pm->todo) { /* none without threads; freed unanswered */
        rb_pgreq *r = pm->todo;
        pm->todo = r->next;
        mode_req_free(r);
    }
    for (size_t i = 0; i < pm->n_notified; i++)
        free(pm->notified[i]);
    free(pm->notified);
    mode_rounds_free(pm);
    mode_observed_release(&pm->seen); /* the loop has ended: nobody reads /metrics */
    if (pm->efd_ev)
        event_free(pm->efd_ev);
    if (pm->poll_ev)
        event_free(pm->poll_ev);
    if (pm->held_ev)
        event_free(pm->held_ev);
    if (pm->throttle_ev)
        event_free(pm->throttle_ev);
    for (int i = 0; i < RB_PGMODE_THREADS; i++)
        if (pm->work[i])
            rb_pg_close(pm->work[i]);
    if (pm->maint)
        rb_pg_close(pm->maint);
    if (pm->listen)
        rb_pg_close(pm->listen);
    if (pm->efd >= 0)
        close(pm->efd);
    if (pm->stop_pipe[0] >= 0) {
        close(pm->stop_pipe[0]);
        close(pm->stop_pipe[1]);
    }
    pthread_mutex_destroy(&pm->mu);
    pthread_cond_destroy(&pm->cv);
    pthread_cond_destroy(&pm->maint_cv);
    free(pm);
    eng->be = NULL;
}
