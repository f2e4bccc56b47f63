/* Distributed mode's machinery (mode.h): the database threads and their
 * batches, completions through an eventfd, the listen thread (NOTIFY ->
 * waking parked FETCHes), the maintenance thread (promote, reap, expire,
 * forget stale workers on every node), the hand-over of what the threads
 * saw to the loop's /metrics, and the FETCH life cycle on top of them. */
#include "backend/pg/mode.h"

#include "engine/engine.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include "backend/pg/registry.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"
#include "server/metrics.h"

/* A write transaction a database thread ran for a PUSH, ACK or FAIL batch:
 * its rows and how long it took, for rb_metrics_commit. */
typedef struct pg_commit {
    size_t n_ops;
    int64_t us;
} pg_commit;

/* What the threads saw for this node's /metrics, waiting for the loop
 * thread (the only one that may touch srv->metrics). */
typedef struct pg_observed {
    rb_pg_fail_result *reaped; /* expired reservations failed (status DONE) */
    size_t n_reaped;
    int64_t *late; /* lateness of promoted jobs, ms */
    size_t n_late;
    pg_commit *commits;
    size_t n_commits;
} pg_observed;

struct rb_pgmode {
    rb_srv *srv;
    rb_pg *work[RB_PGMODE_THREADS];
    pthread_t threads[RB_PGMODE_THREADS];
    int n_threads;

    /* Guarded by mu: the requests to run, the finished ones, and the
     * queues the listen or maintenance thread saw jobs arrive in. */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* requests queued, or stop */
    pthread_cond_t maint_cv; /* maintenance: stop */
    rb_pgreq *todo, **todo_tail;
    rb_pgreq *done, **done_tail;
    char **notified;
    size_t n_notified;
    bool notify_all;
    pg_observed seen; /* for /metrics */
    bool signalled; /* efd written since the loop last read it */
    bool stop;

    int efd;
    struct event *efd_ev, *poll_ev;
    struct event *held_ev; /* refreshes the registry rows of this node's workers */

    rb_pg *listen, *maint;
    pthread_t listen_th, maint_th;
    bool listen_started, maint_started;
    int stop_pipe[2]; /* wakes the listen thread's poll() */

    /* Loop thread only. */
    uint64_t notify_seq; /* wake-ups delivered so far */
    bool outage;         /* an outage was logged and has not ended */
};

bool rb_pgmode_is_url(const char *url)
{
    return url && (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13) ||
                   strchr(url, '=') != NULL);
}

/* --- the hand-over between the loop and the threads --- */

/* Wakes the loop (mu held). */
static void signal_loop(rb_pgmode *pm)
{
    if (pm->signalled)
        return;
    pm->signalled = true;
    uint64_t one = 1;
    ssize_t w = write(pm->efd, &one, sizeof one);
    (void)w;
}

/* Records that jobs arrived in queues (NULL: anywhere) for the loop. */
static void note_ready(rb_pgmode *pm, char **queues, size_t n)
{
    pthread_mutex_lock(&pm->mu);
    if (!queues) {
        pm->notify_all = true;
    } else {
        pm->notified = rb_xrealloc(pm->notified, (pm->n_notified + n) * sizeof *pm->notified);
        for (size_t i = 0; i < n; i++)
            pm->notified[pm->n_notified++] = queues[i];
    }
    signal_loop(pm);
    pthread_mutex_unlock(&pm->mu);
}

/* Appends n items of size sz from src to arr (holding *len items);
 * returns the array, reallocated when n > 0. */
static void *append(void *arr, size_t *len, const void *src, size_t n, size_t sz)
{
    if (!n)
        return arr;
    char *a = rb_xrealloc(arr, (*len + n) * sz);
    memcpy(a + *len * sz, src, n * sz);
    *len += n;
    return a;
}

/* Hands the maintenance thread's reaps and promotions to the loop (mu
 * not held); wakes it. */
static void note_maintenance(rb_pgmode *pm, const rb_pg_fail_result *reaped, size_t n_reaped,
                             const int64_t *late, size_t n_late)
{
    if (!n_reaped && !n_late)
        return;
    pthread_mutex_lock(&pm->mu);
    pm->seen.reaped = append(pm->seen.reaped, &pm->seen.n_reaped, reaped, n_reaped,
                             sizeof *reaped);
    pm->seen.late = append(pm->seen.late, &pm->seen.n_late, late, n_late, sizeof *late);
    signal_loop(pm);
    pthread_mutex_unlock(&pm->mu);
}

static void observed_release(pg_observed *o)
{
    free(o->reaped);
    free(o->late);
    free(o->commits);
    memset(o, 0, sizeof *o);
}

/* Counts what the threads saw into this node's /metrics (loop thread). */
static void observed_count(rb_srv *srv, const pg_observed *o)
{
    for (size_t i = 0; i < o->n_reaped; i++)
        rb_pgmode_count_failure(srv, &o->reaped[i]);
    for (size_t i = 0; i < o->n_late; i++)
        rb_metrics_lateness(srv->metrics, o->late[i]);
    for (size_t i = 0; i < o->n_commits; i++)
        rb_metrics_commit(srv->metrics, o->commits[i].n_ops, o->commits[i].us);
}

void rb_pgmode_count_failure(rb_srv *srv, const rb_pg_fail_result *res)
{
    const rb_pg_labels *l = &res->labels;
    rb_metrics_event_labels(srv->metrics, RB_M_FAILED, l->queue, l->jobtype);
    rb_metrics_event_labels(srv->metrics,
                            res->outcome == RB_OUTCOME_RETRY     ? RB_M_RETRIED
                            : res->outcome == RB_OUTCOME_DISCARD ? RB_M_DISCARDED
                                                                 : RB_M_DEAD,
                            l->queue, l->jobtype);
    if (res->outcome == RB_OUTCOME_RETRY)
        rb_metrics_retry_delay(srv->metrics, res->delay_ms);
}

rb_pgreq *rb_pgreq_new(rb_pgreq_kind kind, rb_conn *c)
{
    rb_pgreq *r = rb_xcalloc(1, sizeof *r);
    r->kind = kind;
    r->c = c;
    return r;
}

rb_pgreq *rb_pgreq_new_call(rb_conn *c, void *data, void (*data_free)(void *),
                            void (*call)(rb_pg *, rb_pgreq *),
                            void (*done)(rb_srv *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    r->data = data;
    r->data_free = data_free;
    r->call = call;
    r->done = done;
    return r;
}

void rb_pgreq_post(rb_srv *srv, rb_pgreq *r)
{
    rb_pgmode *pm = srv->pgm;
    if (r->c) {
        r->c->busy = true;
        r->c->refs++;
    }
    r->now = rb_now_ms();
    r->next = NULL;
    pthread_mutex_lock(&pm->mu);
    *pm->todo_tail = r;
    pm->todo_tail = &r->next;
    pthread_cond_signal(&pm->cv);
    pthread_mutex_unlock(&pm->mu);
}

static void req_free(rb_pgreq *r)
{
    if (r->kind == RB_PGR_PUSH) {
        for (size_t i = 0; r->u.push.texts && i < r->u.push.n; i++)
            free(r->u.push.texts[i]);
        free(r->u.push.texts);
        free(r->u.push.jobs);
        free(r->u.push.status);
    }
    if (r->kind == RB_PGR_CLAIM) {
        for (int i = 0; i < r->u.claim.nq; i++)
            free(r->u.claim.queues[i]);
        free(r->u.claim.queues);
        free(r->u.claim.job.jid);
        free(r->u.claim.job.json);
    }
    if (r->data_free)
        r->data_free(r->data);
    free(r->jid);
    free(r->wid);
    free(r);
}

void rb_pgreq_finish(rb_srv *srv, rb_pgreq *r)
{
    (void)srv;
    rb_conn *c = r->c;
    req_free(r);
    if (c) {
        rb_conn_done(c);
        rb_conn_unref(c);
    }
}

/* Frees r and drops its reference without running c's next command (c
 * was parked in a waiting FETCH). */
static void req_drop(rb_pgreq *r)
{
    rb_conn *c = r->c;
    req_free(r);
    if (c)
        rb_conn_unref(c);
}

void rb_pgmode_storage_ok(rb_srv *srv)
{
    if (srv->pgm->outage) {
        srv->pgm->outage = false;
        rb_log(RB_LOG_INFO, "database reachable again");
    }
}

void rb_pgmode_storage_error(rb_srv *srv, rb_pgreq *r)
{
    if (!srv->pgm->outage && r->rc == RB_ECONN) {
        srv->pgm->outage = true;
        rb_log(RB_LOG_ERROR, "database unreachable: %s (answering errors, reconnecting)",
               rb_err_msg(&r->err));
    } else if (r->rc != RB_ECONN) {
        rb_log(RB_LOG_WARN, "storage error: %s", rb_err_msg(&r->err));
    }
    if (r->c)
        rb_reply_err(r->c, "storage error: %s", rb_err_msg(&r->err));
}

/* --- database threads: one batch per turn --- */

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The write transactions of one batch (at most one each for pushes, acks
 * and fails). */
typedef struct batch_commits {
    pg_commit c[3];
    size_t n;
} batch_commits;

/* A write transaction of n_ops rows that began at start_us committed. */
static void commit_seen(batch_commits *bc, size_t n_ops, int64_t start_us)
{
    if (bc->n < sizeof bc->c / sizeof *bc->c)
        bc->c[bc->n++] = (pg_commit){n_ops, mono_us() - start_us};
}

static void fail_all(rb_pgreq **v, size_t n, int rc, const rb_err *err)
{
    for (size_t i = 0; i < n; i++) {
        v[i]->rc = rc;
        v[i]->err = *err;
    }
}

static void run_pushes(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i]->u.push.n;
    rb_pg_new_job *jobs = rb_xcalloc(total ? total : 1, sizeof *jobs);
    int *status = rb_xcalloc(total ? total : 1, sizeof *status);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < v[i]->u.push.n; j++)
            jobs[k++] = v[i]->u.push.jobs[j];
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = total ? rb_pg_push(pg, jobs, total, rb_now_ms(), status, &err) : 0;
    if (!rc && total)
        commit_seen(bc, total, t0);
    if (rc) {
        fail_all(v, n, rc, &err);
    } else {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < v[i]->u.push.n; j++)
                v[i]->u.push.status[j] = status[k++];
    }
    free(jobs);
    free(status);
}

static void run_acks(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    rb_pg_ref *refs = rb_xcalloc(n, sizeof *refs);
    int *status = rb_xcalloc(n, sizeof *status);
    rb_pg_labels *labels = rb_xcalloc(n, sizeof *labels);
    for (size_t i = 0; i < n; i++)
        refs[i] = v[i]->u.ack.ref;
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = rb_pg_ack(pg, refs, n, status, labels, &err);
    if (rc) {
        fail_all(v, n, rc, &err);
    } else {
        commit_seen(bc, n, t0);
        for (size_t i = 0; i < n; i++) {
            v[i]->u.ack.status = status[i];
            v[i]->u.ack.labels = labels[i];
        }
    }
    free(refs);
    free(status);
    free(labels);
}

static void run_fails(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    rb_pg_failure *f = rb_xcalloc(n, sizeof *f);
    rb_pg_fail_result *res = rb_xcalloc(n, sizeof *res);
    for (size_t i = 0; i < n; i++)
        f[i] = v[i]->u.fail.f;
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = rb_pg_fail(pg, f, n, rb_now_ms(), res, &err);
    if (!rc)
        commit_seen(bc, n, t0);
    if (rc)
        fail_all(v, n, rc, &err);
    else
        for (size_t i = 0; i < n; i++)
            v[i]->u.fail.res = res[i];
    free(f);
    free(res);
}

static bool same_queues(const rb_pgreq *a, const rb_pgreq *b)
{
    if (a->u.claim.nq != b->u.claim.nq)
        return false;
    for (int i = 0; i < a->u.claim.nq; i++)
        if (strcmp(a->u.claim.queues[i], b->u.claim.queues[i]))
            return false;
    return true;
}

/* One rb_pg_claim per distinct queue list. */
static void run_claims(rb_pg *pg, rb_pgreq **v, size_t n)
{
    bool *taken = rb_xcalloc(n, sizeof *taken);
    rb_pgreq **group = rb_xcalloc(n, sizeof *group);
    const char **wids = rb_xcalloc(n, sizeof *wids);
    for (size_t i = 0; i < n; i++) {
        if (taken[i])
            continue;
        int g = 0;
        for (size_t j = i; j < n; j++) {
            if (!taken[j] && same_queues(v[i], v[j])) {
                taken[j] = true;
                wids[g] = v[j]->wid;
                group[g++] = v[j];
            }
        }
        rb_pg_claimed *out = NULL;
        int nout = 0;
        rb_err err = {0};
        int rc = rb_pg_claim(pg, (const char *const *)v[i]->u.claim.queues, v[i]->u.claim.nq,
                             wids, g, rb_now_ms(), &out, &nout, &err);
        if (rc) {
            fail_all(group, (size_t)g, rc, &err);
            continue;
        }
        for (int k = 0; k < nout; k++) {
            rb_pgreq *r = group[out[k].slot];
            r->u.claim.job = out[k];
            r->u.claim.got = true;
        }
        free(out); /* the strings moved into the requests */
    }
    free(taken);
    free(group);
    free(wids);
}

/* Runs a batch: pushes first (so claims in the same batch see them), then
 * the single calls, acks, fails, claims and worker sightings. bc receives
 * the timings of the push, ack and fail transactions that committed. */
static void run_batch(rb_pg *pg, rb_pgreq *list, batch_commits *bc)
{
    size_t n = 0;
    for (rb_pgreq *r = list; r; r = r->next)
        n++;
    rb_pgreq **by[RB_PGR_KINDS];
    size_t cnt[RB_PGR_KINDS] = {0};
    for (int k = 0; k < RB_PGR_KINDS; k++)
        by[k] = rb_xcalloc(n, sizeof **by);
    for (rb_pgreq *r = list; r; r = r->next)
        by[r->kind][cnt[r->kind]++] = r;
    if (cnt[RB_PGR_PUSH])
        run_pushes(pg, by[RB_PGR_PUSH], cnt[RB_PGR_PUSH], bc);
    for (size_t i = 0; i < cnt[RB_PGR_CALL]; i++)
        by[RB_PGR_CALL][i]->call(pg, by[RB_PGR_CALL][i]);
    if (cnt[RB_PGR_ACK])
        run_acks(pg, by[RB_PGR_ACK], cnt[RB_PGR_ACK], bc);
    if (cnt[RB_PGR_FAIL])
        run_fails(pg, by[RB_PGR_FAIL], cnt[RB_PGR_FAIL], bc);
    if (cnt[RB_PGR_CLAIM])
        run_claims(pg, by[RB_PGR_CLAIM], cnt[RB_PGR_CLAIM]);
    if (cnt[RB_PGR_SEEN])
        rb_pgworkers_run_seen(pg, by[RB_PGR_SEEN], cnt[RB_PGR_SEEN]);
    for (int k = 0; k < RB_PGR_KINDS; k++)
        free(by[k]);
}

typedef struct thread_arg {
    rb_pgmode *pm;
    rb_pg *pg;
} thread_arg;

static void *db_thread(void *arg)
{
    thread_arg ta = *(thread_arg *)arg;
    free(arg);
    rb_pgmode *pm = ta.pm;
    for (;;) {
        pthread_mutex_lock(&pm->mu);
        while (!pm->todo && !pm->stop)
            pthread_cond_wait(&pm->cv, &pm->mu);
        rb_pgreq *list = pm->todo;
        pm->todo = NULL;
        pm->todo_tail = &pm->todo;
        pthread_mutex_unlock(&pm->mu);
        if (!list)
            break; /* stopping, and nothing left */
        batch_commits bc = {.n = 0};
        run_batch(ta.pg, list, &bc);
        rb_pgreq **last = &list;
        while (*last)
            last = &(*last)->next;
        pthread_mutex_lock(&pm->mu);
        *pm->done_tail = list;
        pm->done_tail = last;
        pm->seen.commits = append(pm->seen.commits, &pm->seen.n_commits, bc.c, bc.n,
                                  sizeof *bc.c);
        signal_loop(pm);
        pthread_mutex_unlock(&pm->mu);
    }
    return NULL;
}

/* --- the listen thread --- */

static bool stopping(rb_pgmode *pm)
{
    pthread_mutex_lock(&pm->mu);
    bool s = pm->stop;
    pthread_mutex_unlock(&pm->mu);
    return s;
}

/* Waits up to ms for the stop pipe; true when stopping. */
static bool nap(rb_pgmode *pm, int ms)
{
    struct pollfd p = {pm->stop_pipe[0], POLLIN, 0};
    poll(&p, 1, ms);
    return stopping(pm);
}

static void *listen_thread(void *arg)
{
    rb_pgmode *pm = arg;
    bool down = false;
    while (!stopping(pm)) {
        rb_err err = {0};
        if (!rb_pg_connected(pm->listen)) {
            if (rb_pg_reconnect(pm->listen, &err)) {
                if (!down)
                    rb_log(RB_LOG_WARN, "notifications lost: %s (polling until reconnected)",
                           rb_err_msg(&err));
                down = true;
                if (nap(pm, 100))
                    break;
                continue;
            }
            if (down)
                rb_log(RB_LOG_INFO, "notifications: listening again");
            down = false;
            note_ready(pm, NULL, 0); /* what was missed meanwhile */
        }
        struct pollfd p[2] = {{rb_pg_socket(pm->listen), POLLIN, 0},
                              {pm->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        char **queues = NULL;
        size_t n = 0;
        if (rb_pg_drain(pm->listen, &queues, &n, &err)) {
            if (!down)
                rb_log(RB_LOG_WARN, "notifications lost: %s (polling until reconnected)",
                       rb_err_msg(&err));
            down = true;
            continue;
        }
        if (n)
            note_ready(pm, queues, n); /* the names are taken over */
        free(queues);
    }
    return NULL;
}

/* --- the maintenance thread --- */

/* Runs op in batches until one is not full. Returns 0 or the error. */
static int batches(rb_pgmode *pm, int (*op)(rb_pg *, int64_t, int, int *, rb_err *),
                   int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = op(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, &n, err);
        *total += n;
    } while (!rc && n == RB_PGMODE_BATCH && !stopping(pm));
    return rc;
}

/* The maintenance thread's result buffers, one batch each. */
typedef struct maint_bufs {
    int64_t late[RB_PGMODE_BATCH];
    rb_pg_fail_result reaped[RB_PGMODE_BATCH];
} maint_bufs;

/* Promotes in batches until one is not full, handing each batch's
 * lateness to the loop. */
static int promote_all(rb_pgmode *pm, maint_bufs *mb, int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = rb_pg_promote(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, mb->late, &n, err);
        *total += n;
        note_maintenance(pm, NULL, 0, mb->late, (size_t)n);
    } while (!rc && n == RB_PGMODE_BATCH && !stopping(pm));
    return rc;
}

/* Reaps in batches until one is not full, handing each batch's failures
 * (queue, job type, outcome, delay) to the loop. */
static int reap_all(rb_pgmode *pm, maint_bufs *mb, int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = rb_pg_reap(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, mb->reaped, &n, err);
        *total += n;
        note_maintenance(pm, mb->reaped, (size_t)n, NULL, 0);
    } while (!rc && n == RB_PGMODE_BATCH && !stopping(pm));
    return rc;
}

static void *maint_thread(void *arg)
{
    rb_pgmode *pm = arg;
    unsigned seed = (unsigned)getpid() ^ (unsigned)rb_now_ms();
    bool down = false;
    maint_bufs *mb = rb_xmalloc(sizeof *mb);
    int64_t workers_due = 0; /* next removal of stale worker rows */
    for (;;) {
        rb_err err = {0};
        int promoted = 0, reaped = 0, dropped = 0, forgotten = 0;
        int64_t due = INT64_MAX;
        int rc = promote_all(pm, mb, &promoted, &err);
        if (!rc)
            rc = reap_all(pm, mb, &reaped, &err);
        if (!rc)
            rc = batches(pm, rb_pg_cleanup_dead, &dropped, &err);
        if (!rc && rb_now_ms() >= workers_due) {
            rc = batches(pm, rb_pg_workers_cleanup, &forgotten, &err);
            if (!rc)
                workers_due = rb_now_ms() + RB_PGWORKERS_CLEANUP_MS;
        }
        if (!rc)
            rc = rb_pg_next_due(pm->maint, &due, &err);
        if (rc && !down)
            rb_log(RB_LOG_WARN, "maintenance: %s (retrying)", rb_err_msg(&err));
        down = rc != 0;
        if (reaped)
            rb_log(RB_LOG_INFO, "%d expired reservations failed", reaped);
        if (forgotten)
            rb_log(RB_LOG_DEBUG, "%d stale workers forgotten", forgotten);
        if (promoted || reaped)
            note_ready(pm, NULL, 0); /* notifications are a hint: wake locally too */
        int64_t now = rb_now_ms();
        int64_t wait = RB_PGMODE_TICK_MS * 4 / 5 + rand_r(&seed) % (RB_PGMODE_TICK_MS * 2 / 5 + 1);
        if (!rc && due != INT64_MAX && due - now < wait)
            wait = due - now < 5 ? 5 : due - now;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += wait / 1000;
        until.tv_nsec += (long)(wait % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&pm->mu);
        while (!pm->stop && pthread_cond_timedwait(&pm->maint_cv, &pm->mu, &until) != ETIMEDOUT)
            ;
        bool stop = pm->stop;
        pthread_mutex_unlock(&pm->mu);
        if (stop)
            break;
    }
    free(mb);
    return NULL;
}

/* --- the loop's side --- */

static void on_efd(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    rb_pgmode *pm = srv->pgm;
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
    pg_observed seen = pm->seen;
    memset(&pm->seen, 0, sizeof pm->seen);
    pthread_mutex_unlock(&pm->mu);
    observed_count(srv, &seen);
    observed_release(&seen);
    while (list) {
        rb_pgreq *next = list->next;
        list->done(srv, list);
        list = next;
    }
    if (all || nq) {
        pm->notify_seq++;
        rb_pgmode_kick(srv, all ? NULL : (const char *const *)queues, all ? 0 : nq);
    }
    for (size_t i = 0; i < nq; i++)
        free(queues[i]);
    free(queues);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    rb_pgmode_kick(srv, NULL, 0);
}

static int open_engine(rb_srv *srv, bool listen, rb_pg **out, rb_err *err)
{
    rb_pg_options o = {.url = srv->cfg.storage.url, .cfg = &srv->cfg, .listen = listen};
    int64_t backoff = 100;
    for (;;) {
        int rc = rb_pg_open(&o, out, err);
        if (rc != RB_ECONN)
            return rc;
        rb_log(RB_LOG_WARN, "cannot reach the database: %s (retrying in %lld ms)",
               rb_err_msg(err), (long long)backoff);
        struct timespec ts = {backoff / 1000, (long)(backoff % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
    }
}

int rb_pgmode_open(rb_srv *srv, rb_err *err)
{
    rb_pgmode *pm = rb_xcalloc(1, sizeof *pm);
    pm->srv = srv;
    pm->efd = -1;
    pm->stop_pipe[0] = pm->stop_pipe[1] = -1;
    pm->todo_tail = &pm->todo;
    pm->done_tail = &pm->done;
    pthread_mutex_init(&pm->mu, NULL);
    pthread_cond_init(&pm->cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pm->maint_cv, &ca);
    pthread_condattr_destroy(&ca);
    srv->pgm = pm;
    srv->backend = &rb_backend_pg;
    int rc = open_engine(srv, false, &pm->work[0], err);
    if (!rc) {
        rc = rb_pg_check_schema(pm->work[0], err);
        while (rc == RB_ECONN) { /* lost between the connect and the check */
            rb_log(RB_LOG_WARN, "checking the schema: %s (retrying)", rb_err_msg(err));
            struct timespec ts = {0, 200000000L};
            nanosleep(&ts, NULL);
            rc = rb_pg_check_schema(pm->work[0], err);
        }
    }
    for (int i = 1; !rc && i < RB_PGMODE_THREADS; i++)
        rc = open_engine(srv, false, &pm->work[i], err);
    if (!rc)
        rc = open_engine(srv, false, &pm->maint, err);
    if (!rc)
        rc = open_engine(srv, true, &pm->listen, err);
    if (!rc && ((pm->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
                pipe(pm->stop_pipe) != 0))
        rc = rb_err_set(err, RB_EIO, "cannot make an eventfd: %s", strerror(errno));
    for (int i = 0; !rc && i < RB_PGMODE_THREADS; i++) {
        thread_arg *ta = rb_xmalloc(sizeof *ta);
        ta->pm = pm;
        ta->pg = pm->work[i];
        if (pthread_create(&pm->threads[i], NULL, db_thread, ta) != 0) {
            free(ta);
            rc = rb_err_set(err, RB_EIO, "cannot start a database thread");
            break;
        }
        pm->n_threads++;
    }
    if (rc) {
        rb_pgmode_free(srv);
        return rc;
    }
    rb_log(RB_LOG_INFO, "distributed mode: PostgreSQL schema version %d, %d database threads",
           RB_PG_SCHEMA_VERSION, RB_PGMODE_THREADS);
    return 0;
}

void rb_pgmode_attach(rb_srv *srv)
{
    rb_pgmode *pm = srv->pgm;
    pm->efd_ev = event_new(srv->base, pm->efd, EV_READ | EV_PERSIST, on_efd, srv);
    event_add(pm->efd_ev, NULL);
    pm->poll_ev = event_new(srv->base, -1, EV_PERSIST, on_poll, srv);
    struct timeval tv = {RB_PGMODE_POLL_MS / 1000, (RB_PGMODE_POLL_MS % 1000) * 1000};
    event_add(pm->poll_ev, &tv);
    pm->held_ev = event_new(srv->base, -1, EV_PERSIST, rb_pgworkers_refresh, srv);
    struct timeval held = {RB_PGWORKERS_REFRESH_MS / 1000, (RB_PGWORKERS_REFRESH_MS % 1000) * 1000};
    event_add(pm->held_ev, &held);
    pm->listen_started = pthread_create(&pm->listen_th, NULL, listen_thread, pm) == 0;
    pm->maint_started = pthread_create(&pm->maint_th, NULL, maint_thread, pm) == 0;
    if (!pm->listen_started || !pm->maint_started)
        rb_log(RB_LOG_ERROR, "cannot start the listen or maintenance thread");
}

void rb_pgmode_free(rb_srv *srv)
{
    rb_pgmode *pm = srv->pgm;
    if (!pm)
        return;
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
        r->done(srv, r);
    }
    while (pm->todo) { /* none without threads; freed unanswered */
        rb_pgreq *r = pm->todo;
        pm->todo = r->next;
        req_drop(r);
    }
    for (size_t i = 0; i < pm->n_notified; i++)
        free(pm->notified[i]);
    free(pm->notified);
    observed_release(&pm->seen); /* the loop has ended: nobody reads /metrics */
    if (pm->efd_ev)
        event_free(pm->efd_ev);
    if (pm->poll_ev)
        event_free(pm->poll_ev);
    if (pm->held_ev)
        event_free(pm->held_ev);
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
    srv->pgm = NULL;
    srv->backend = &rb_backend_mem;
}

/* --- FETCH --- */

static void fetch_done(rb_srv *srv, rb_pgreq *r);

static char *dup_wid(const rb_conn *c)
{
    return c->worker ? rb_xstrdup(c->worker->wid) : NULL;
}

/* Claims again for c, parked in a FETCH that waits until wait_until_ms. */
static void post_claim(rb_srv *srv, rb_conn *c, char **queues, int n, int64_t wait_until_ms)
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CLAIM, c);
    r->u.claim.queues = queues;
    r->u.claim.nq = n;
    r->u.claim.wait_until_ms = wait_until_ms;
    r->u.claim.seq = srv->pgm->notify_seq;
    r->wid = dup_wid(c);
    r->done = fetch_done;
    rb_pgreq_post(srv, r);
}

void rb_pgmode_fetch(rb_srv *srv, rb_eng_op *op)
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CLAIM, NULL);
    r->u.claim.queues = op->u.fetch.queues; /* borrowed: op_claim_done hands them back */
    r->u.claim.nq = op->u.fetch.n;
    r->u.claim.seq = srv->pgm->notify_seq;
    r->wid = op->u.fetch.wid ? rb_xstrdup(op->u.fetch.wid) : NULL;
    r->data = op;
    r->done = fetch_done;
    rb_pgreq_post(srv, r);
}

static void release_call(rb_pg *pg, rb_pgreq *r)
{
    int status, state;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, 0, rb_now_ms(), &status, &state, &r->err);
}

static void release_done(rb_srv *srv, rb_pgreq *r)
{
    (void)srv;
    if (r->rc)
        rb_log(RB_LOG_WARN, "job %s stays reserved until its lease ends: %s", r->jid,
               rb_err_msg(&r->err));
    req_free(r);
}

/* A job was claimed for a FETCH nobody waits for any more (closed, or
 * shutting down): put it back at once, without consuming the attempt. */
static void release_job(rb_srv *srv, rb_pgreq *claim)
{
    rb_log(RB_LOG_DEBUG, "job %s claimed for a closed connection: released", claim->u.claim.job.jid);
    if (!srv->base || srv->stopping)
        return; /* its lease ends it */
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, NULL);
    r->jid = rb_xstrdup(claim->u.claim.job.jid);
    r->wid = claim->wid ? rb_xstrdup(claim->wid) : NULL;
    r->call = release_call;
    r->done = release_done;
    rb_pgreq_post(srv, r);
}

/* Takes the queue list out of r (for handing back to the connection). */
static char **take_queues(rb_pgreq *r, int *n)
{
    char **q = r->u.claim.queues;
    *n = r->u.claim.nq;
    r->u.claim.queues = NULL;
    r->u.claim.nq = 0;
    return q;
}

/* The first claim of a FETCH (the job engine's op in r->data) is done:
 * its results to the op, which replies or parks the connection; a wake-up
 * that went by meanwhile claims again for it. */
static void op_claim_done(rb_srv *srv, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->u.claim.queues = NULL; /* the op's */
    r->u.claim.nq = 0;
    if (r->rc) {
        rb_pgmode_storage_error(srv, r); /* logs; r has no connection to answer */
        op->rc = r->rc;
        op->err = r->err;
        op->applied = r->rc == RB_ECONN ? RB_ENG_UNKNOWN : RB_ENG_NOT_APPLIED;
        req_free(r);
        rb_eng_complete(srv, op);
        return;
    }
    rb_pgmode_storage_ok(srv);
    op->applied = RB_ENG_APPLIED;
    bool got = r->u.claim.got;
    if (got && op->c && op->c->closed) {
        release_job(srv, r);
    } else if (got) {
        op->u.fetch.jid = r->u.claim.job.jid;
        op->u.fetch.job = r->u.claim.job.json;
        r->u.claim.job.jid = r->u.claim.job.json = NULL;
    }
    bool missed = r->u.claim.seq != srv->pgm->notify_seq; /* a wake-up went by */
    req_free(r);
    rb_eng_complete(srv, op);
    if (!got && missed)
        rb_pgmode_kick(srv, NULL, 0);
}

/* A claim is done: a FETCH's first (op_claim_done), or a parked FETCH's. */
static void fetch_done(rb_srv *srv, rb_pgreq *r)
{
    if (r->data) {
        op_claim_done(srv, r);
        return;
    }
    rb_conn *c = r->c;
    if (!r->rc)
        rb_pgmode_storage_ok(srv);
    if (r->u.claim.got) {
        if (c->closed || !c->waiting) {
            release_job(srv, r);
            req_drop(r);
            return;
        }
        rb_conn_stop_waiting(c);
        rb_reply_bulk(c, r->u.claim.job.json, strlen(r->u.claim.job.json));
        rb_pgreq_finish(srv, r);
        return;
    }
    if (c->closed || !c->waiting) {
        req_drop(r);
        return;
    }
    bool missed = r->u.claim.seq != srv->pgm->notify_seq; /* a wake-up went by */
    int n;
    char **queues = take_queues(r, &n);
    int64_t left = r->u.claim.wait_until_ms - rb_now_ms();
    if (left <= 0) {
        for (int i = 0; i < n; i++)
            free(queues[i]);
        free(queues);
        rb_conn_stop_waiting(c);
        rb_reply_null(c);
        rb_pgreq_finish(srv, r);
        return;
    }
    c->fetch_queues = queues;
    c->n_fetch_queues = n;
    struct timeval tv = {left / 1000, (left % 1000) * 1000};
    evtimer_add(c->fetch_timeout, &tv);
    req_drop(r);
    if (missed)
        rb_pgmode_kick(srv, NULL, 0);
}

static bool wants(const rb_conn *c, const char *const *queues, size_t n)
{
    if (!queues)
        return true;
    for (int i = 0; i < c->n_fetch_queues; i++)
        for (size_t k = 0; k < n; k++)
            if (!strcmp(c->fetch_queues[i], queues[k]))
                return true;
    return false;
}

void rb_pgmode_kick(rb_srv *srv, const char *const *queues, size_t n)
{
    if (srv->stopping && !srv->base)
        return;
    for (rb_link *l = srv->waiters.head; l; l = l->next) {
        rb_conn *c = rb_container_of(l, rb_conn, wlink);
        if (!c->fetch_queues || !wants(c, queues, n))
            continue; /* a claim is in flight, or other queues */
        struct timeval at, now;
        int64_t until = rb_now_ms() + 2000;
        if (c->fetch_timeout && event_pending(c->fetch_timeout, EV_TIMEOUT, &at)) {
            gettimeofday(&now, NULL);
            until = rb_now_ms() + ((int64_t)at.tv_sec - now.tv_sec) * 1000 +
                    ((int64_t)at.tv_usec - now.tv_usec) / 1000;
        }
        if (c->fetch_timeout)
            evtimer_del(c->fetch_timeout);
        int nq;
        char **qs = c->fetch_queues;
        nq = c->n_fetch_queues;
        c->fetch_queues = NULL;
        c->n_fetch_queues = 0;
        post_claim(srv, c, qs, nq, until);
    }
}
