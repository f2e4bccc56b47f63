/* Distributed mode's requests (request.h) and their hand-over between the
 * threads and the loop: making, posting and freeing requests (loop thread),
 * the finished requests, ready queues and observations the threads hand
 * back under pm->mu with one eventfd write (any thread; mode.c's on_efd
 * takes them on the loop thread), counting those observations into
 * /metrics, and the storage error/ok bookkeeping (loop thread). A request
 * belongs to the loop until posted, to the database thread that took it
 * until it is on pm->done, then to the loop again, whose done frees it. */
#include "backend/pg/mode_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/log.h"
#include "engine/metrics.h"

/* --- the hand-over between the loop and the threads --- */

/* Wakes the loop (mu held). */
void mode_signal_loop(rb_pgmode *pm)
{
    if (pm->signalled)
        return;
    pm->signalled = true;
    uint64_t one = 1;
    ssize_t w = write(pm->efd, &one, sizeof one);
    (void)w;
}

/* Records that jobs arrived in queues (NULL: anywhere) for the loop. */
void mode_note_ready(rb_pgmode *pm, char **queues, size_t n)
{
    pthread_mutex_lock(&pm->mu);
    if (!queues) {
        pm->notify_all = true;
    } else {
        pm->notified = rb_xrealloc(pm->notified, (pm->n_notified + n) * sizeof *pm->notified);
        for (size_t i = 0; i < n; i++)
            pm->notified[pm->n_notified++] = queues[i];
    }
    mode_signal_loop(pm);
    pthread_mutex_unlock(&pm->mu);
}

/* Appends n items of size sz from src to arr (holding *len items);
 * returns the array, reallocated when n > 0. */
void *mode_append(void *arr, size_t *len, const void *src, size_t n, size_t sz)
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
void mode_note_maintenance(rb_pgmode *pm, const rb_pg_fail_result *reaped, size_t n_reaped,
                             const int64_t *late, size_t n_late)
{
    if (!n_reaped && !n_late)
        return;
    pthread_mutex_lock(&pm->mu);
    pm->seen.reaped = mode_append(pm->seen.reaped, &pm->seen.n_reaped, reaped, n_reaped,
                             sizeof *reaped);
    pm->seen.late = mode_append(pm->seen.late, &pm->seen.n_late, late, n_late, sizeof *late);
    mode_signal_loop(pm);
    pthread_mutex_unlock(&pm->mu);
}

void mode_note_expired_locked(rb_pgmode *pm, rb_pg *pg)
{
    rb_pg_labels *l = NULL;
    size_t n = 0;
    rb_pg_take_expired(pg, &l, &n);
    pm->seen.expired = mode_append(pm->seen.expired, &pm->seen.n_expired, l, n, sizeof *l);
    free(l);
}

void mode_observed_release(mode_observed *o)
{
    free(o->expired);
    free(o->reaped);
    free(o->late);
    free(o->commits);
    memset(o, 0, sizeof *o);
}

/* Counts what the threads saw into this node's /metrics (loop thread). */
void mode_observed_count(rb_eng *eng, const mode_observed *o)
{
    for (size_t i = 0; i < o->n_reaped; i++)
        rb_pgmode_count_failure(eng, &o->reaped[i]);
    for (size_t i = 0; i < o->n_late; i++)
        rb_metrics_lateness(eng->metrics, o->late[i]);
    for (size_t i = 0; i < o->n_commits; i++)
        rb_metrics_commit(eng->metrics, o->commits[i].n_ops, o->commits[i].us);
    for (int w = 0; w < 2; w++)
        if (o->claims[w])
            rb_metrics_claims(eng->metrics, w, o->claims[w], o->claims_empty[w]);
    for (size_t i = 0; i < o->n_expired; i++)
        rb_metrics_event_labels(eng->metrics, RB_M_EXPIRED, o->expired[i].queue,
                                o->expired[i].jobtype);
}

void rb_pgmode_count_failure(rb_eng *eng, const rb_pg_fail_result *res)
{
    const rb_pg_labels *l = &res->labels;
    rb_metrics_event_labels(eng->metrics, RB_M_FAILED, l->queue, l->jobtype);
    rb_metrics_event_labels(eng->metrics,
                            res->outcome == RB_OUTCOME_RETRY     ? RB_M_RETRIED
                            : res->outcome == RB_OUTCOME_DISCARD ? RB_M_DISCARDED
                                                                 : RB_M_DEAD,
                            l->queue, l->jobtype);
    if (res->outcome == RB_OUTCOME_RETRY)
        rb_metrics_retry_delay(eng->metrics, res->delay_ms);
}

rb_pgreq *rb_pgreq_new(rb_pgreq_kind kind)
{
    rb_pgreq *r = rb_xcalloc(1, sizeof *r);
    r->kind = kind;
    return r;
}

rb_pgreq *rb_pgreq_new_call(void *data, void (*data_free)(void *),
                            void (*call)(rb_pg *, rb_pgreq *),
                            void (*done)(rb_eng *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL);
    r->data = data;
    r->data_free = data_free;
    r->call = call;
    r->done = done;
    return r;
}

static void hand_over(const rb_eng *eng, rb_pgreq *r)
{
    r->now = rb_now_ms();
    r->deadline_ms = rb_mono_ms() + eng->cfg->storage.request_timeout_s * 1000;
    r->next = NULL;
}

/* Appends the chain head..*tail to pm->todo and wakes the database
 * threads (every one: with prefetch each takes its own side, and a thread
 * in its collection window counts what came). mu held. */
static void append_todo_locked(rb_pgmode *pm, rb_pgreq *head, rb_pgreq **tail)
{
    *pm->todo_tail = head;
    pm->todo_tail = tail;
    /* every one: a thread in its collection window counts what came */
    pthread_cond_broadcast(&pm->cv);
}

void rb_pgreq_post_with(rb_eng *eng, rb_pgreq *r, rb_pgreq *then)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    hand_over(eng, r);
    rb_pgreq **tail = &r->next;
    while (then) {
        rb_pgreq *next = then->next;
        hand_over(eng, then);
        *tail = then;
        tail = &then->next;
        then = next;
    }
    if (pm->holding) { /* a wake round's claims: never slow */
        *pm->held_tail = r;
        pm->held_tail = tail;
        return;
    }
    pthread_mutex_lock(&pm->mu);
    if (r->slow && !pm->link.down) /* else request_timeout: the database is away */
        r->deadline_ms = rb_mono_ms() + eng->cfg->storage.admin_timeout_s * 1000;
    append_todo_locked(pm, r, tail);
    pthread_mutex_unlock(&pm->mu);
}

void rb_pgreq_post(rb_eng *eng, rb_pgreq *r)
{
    rb_pgreq_post_with(eng, r, NULL);
}

void mode_post_held(rb_pgmode *pm)
{
    if (!pm->held)
        return;
    pthread_mutex_lock(&pm->mu);
    append_todo_locked(pm, pm->held, pm->held_tail);
    pthread_mutex_unlock(&pm->mu);
    pm->held = NULL;
    pm->held_tail = &pm->held;
}

void mode_req_free(rb_pgreq *r)
{
    if (r->kind == RB_PGR_PUSH) {
        for (size_t i = 0; r->u.push.texts && i < r->u.push.n; i++)
            free(r->u.push.texts[i]);
        free(r->u.push.texts);
        for (size_t i = 0; r->u.push.bids && i < r->u.push.n; i++)
            free(r->u.push.bids[i]);
        free(r->u.push.bids);
        free(r->u.push.deb);
        free(r->u.push.jobs);
        free(r->u.push.status);
        for (size_t i = 0; r->u.push.hand_tok && i < r->u.push.n; i++) {
            free(r->u.push.hand_wids[i]);
            free(r->u.push.handed[i]);
        }
        free(r->u.push.hand_tok);
        free(r->u.push.hand_wids);
        free(r->u.push.handed);
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

void rb_pgreq_finish(rb_eng *eng, rb_pgreq *r)
{
    (void)eng;
    mode_req_free(r);
}

void rb_pgmode_storage_error(rb_eng *eng, rb_pgreq *r)
{
    (void)eng;
    /* a lost connection is the link's to log (link.c), once per outage;
     * so is a request that waited out its deadline meanwhile */
    if (!rb_pg_lost(r->rc) && r->rc != RB_ETIMEDOUT)
        rb_log(RB_LOG_WARN, "storage error: %s", rb_err_msg(&r->err));
}

void rb_pgmode_retry_due(rb_eng *eng, int64_t due_ms)
{
    mode_maint_due(rb_pgm_of(eng), due_ms);
}
