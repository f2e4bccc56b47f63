/* The job indexes (see jobs.h). */
#include "backend/sqlite/jobs.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/timeutil.h"
#include "engine/metrics.h"

static const char *job_key(const void *e)
{
    return ((const rb_job *)e)->jid;
}

static const char *queue_key(const void *e)
{
    return ((const rb_queue *)e)->name;
}

void rb_jobs_init(rb_jobs *js)
{
    memset(js, 0, sizeof *js);
    rb_table_init(&js->by_jid, offsetof(rb_job, hnext), job_key);
    rb_table_init(&js->queues, offsetof(rb_queue, hnext), queue_key);
    rb_heap_init(&js->timers);
}

static void free_job(void *e, void *arg)
{
    (void)arg;
    rb_job *j = e;
    free(j->json);
    free(j->history);
    free(j->wid);
    free(j);
}

static void free_queue(void *e, void *arg)
{
    (void)arg;
    rb_queue *q = e;
    free(q->name);
    free(q);
}

void rb_jobs_release(rb_jobs *js)
{
    rb_table_each(&js->by_jid, free_job, NULL);
    rb_table_each(&js->queues, free_queue, NULL);
    rb_table_release(&js->by_jid);
    rb_table_release(&js->queues);
    rb_heap_release(&js->timers);
}

rb_job *rb_job_new(const char *jid, char *json, rb_queue *q, int priority)
{
    size_t n = strlen(jid) + 1;
    rb_job *j = rb_xcalloc(1, sizeof *j + n);
    memcpy(j->jid, jid, n);
    rb_heap_node_init(&j->timer);
    j->json = json;
    j->queue = q;
    j->priority = (uint8_t)priority;
    j->state = RB_JOB_PENDING;
    return j;
}

rb_job *rb_jobs_find(const rb_jobs *js, const char *jid)
{
    return rb_table_get(&js->by_jid, jid);
}

void rb_jobs_add(rb_jobs *js, rb_job *j)
{
    if (j->row_id <= 0)
        j->row_id = ++js->last_row_id;
    else if (j->row_id > js->last_row_id)
        js->last_row_id = j->row_id;
    rb_table_put(&js->by_jid, j);
}

rb_queue *rb_jobs_queue(rb_jobs *js, const char *name, bool create)
{
    rb_queue *q = rb_table_get(&js->queues, name);
    if (q || !create)
        return q;
    q = rb_xcalloc(1, sizeof *q);
    q->name = rb_xstrdup(name);
    rb_table_put(&js->queues, q);
    return q;
}

void rb_jobs_queue_free(rb_jobs *js, rb_queue *q)
{
    rb_table_del(&js->queues, q);
    free_queue(q, NULL);
}

rb_list *rb_jobs_state_list(rb_jobs *js, rb_job_state st)
{
    switch (st) {
    case RB_JOB_SCHEDULED: return &js->scheduled;
    case RB_JOB_WORKING: return &js->working;
    case RB_JOB_RETRIES: return &js->retries;
    case RB_JOB_DEAD: return &js->dead;
    case RB_JOB_WAITING: return &js->waiting;
    case RB_JOB_BLOCKED: return &js->blocked;
    default: return NULL;
    }
}

/* --- the invariants of jobs.h, checked where a job changes index --- */

/* Whether e is linked in l: its neighbours, or l's ends, point back at it
 * (an element is in one list at a time, so this says which). */
static bool linked_in(const rb_list *l, const rb_link *e)
{
    return (e->prev ? e->prev->next == e : l->head == e) &&
           (e->next ? e->next->prev == e : l->tail == e);
}

/* A job is in exactly the index its state names: its queue's ready list
 * for its priority when ENQUEUED, its state's list when listed, none when
 * PENDING; and in the timer heap exactly when it has a deadline
 * (SCHEDULED, WORKING, RETRIES, DEAD). */
static void check_indexed(rb_jobs *js, const rb_job *j)
{
    const rb_list *l = j->state == RB_JOB_ENQUEUED ? &j->queue->ready[j->priority - 1]
                                                   : rb_jobs_state_list(js, j->state);
    if (j->state == RB_JOB_PENDING)
        rb_assert(!j->link.prev && !j->link.next, "pending job %s is linked in a list", j->jid);
    else
        rb_assert(l && linked_in(l, &j->link), "job %s (state %s) is not in its state's list",
                  j->jid, rb_job_state_name(j->state));
    bool timed = j->state == RB_JOB_SCHEDULED || j->state == RB_JOB_WORKING ||
                 j->state == RB_JOB_RETRIES || j->state == RB_JOB_DEAD;
    rb_assert((j->timer.idx != RB_HEAP_NONE) == timed,
              "job %s (state %s) is %sin the timer heap", j->jid, rb_job_state_name(j->state),
              timed ? "not " : "");
}

/* Only a WORKING job has a holder (the wid that fetched it; a job fetched
 * without one has none): every way out of WORKING drops it first. */
static void check_holder(const rb_job *j)
{
    rb_assert(!j->wid || j->state == RB_JOB_WORKING, "job %s (state %s) still has holder %s",
              j->jid, rb_job_state_name(j->state), j->wid);
}

static void unlink_state(rb_jobs *js, rb_job *j)
{
    check_indexed(js, j);
    if (j->state == RB_JOB_ENQUEUED) {
        rb_list_remove(&j->queue->ready[j->priority - 1], &j->link);
        j->queue->size--;
        js->enqueued--;
    } else if (j->state != RB_JOB_PENDING) {
        rb_list_remove(rb_jobs_state_list(js, j->state), &j->link);
    }
    rb_heap_remove(&js->timers, &j->timer);
}

void rb_jobs_set_state(rb_jobs *js, rb_job *j, rb_job_state st, int64_t at_ms)
{
    unlink_state(js, j);
    j->state = (uint8_t)st;
    if (st == RB_JOB_ENQUEUED) {
        rb_list_append(&j->queue->ready[j->priority - 1], &j->link);
        j->queue->size++;
        js->enqueued++;
        j->timer.at_ms = at_ms;
        j->timer.seq = js->next_seq++;
    } else if (st != RB_JOB_PENDING) {
        j->enq_frac_us = 0;
        rb_list_append(rb_jobs_state_list(js, st), &j->link);
        if (st == RB_JOB_WAITING || st == RB_JOB_BLOCKED)
            j->timer.at_ms = at_ms; /* its `at`, for when it is released: no deadline */
        else
            rb_heap_push(&js->timers, &j->timer, at_ms);
    }
    check_indexed(js, j);
    check_holder(j);
}

void rb_jobs_enqueue_us(rb_jobs *js, rb_job *j, int64_t us)
{
    rb_jobs_set_state(js, j, RB_JOB_ENQUEUED, us / 1000);
    j->enq_frac_us = (uint64_t)(us % 1000);
}

void rb_jobs_delete(rb_jobs *js, rb_job *j)
{
    unlink_state(js, j);
    rb_table_del(&js->by_jid, j);
    free_job(j, NULL);
}

/* Writes rb_time_format_us's text for us into ts. The text of the last
 * whole second is kept (per thread): jobs pushed and fetched within one
 * second share gmtime and snprintf, which were a tenth of the server's
 * user time, and only the microseconds are written here. */
static const char *format_time(int64_t us, char ts[RB_TIME_STRLEN])
{
    static _Thread_local int64_t cached_sec = INT64_MIN;
    static _Thread_local char cached[RB_TIME_STRLEN];
    static _Thread_local size_t cached_len;
    int64_t sec = us >= 0 ? us / 1000000 : (us - 999999) / 1000000;
    int micro = (int)(us - sec * 1000000);
    if (sec != cached_sec) {
        rb_time_format_us(sec * 1000000, cached);
        cached_len = strlen(cached);
        cached_sec = sec;
    }
    if (cached_len != 27) /* not "YYYY-MM-DDTHH:MM:SS.000000Z" */
        return rb_time_format_us(us, ts);
    memcpy(ts, cached, 20);
    for (int i = 25; i >= 20; i--, micro /= 10)
        ts[i] = (char)('0' + micro % 10);
    ts[26] = 'Z';
    ts[27] = '\0';
    return ts;
}

/* Appends ,"key":"<time>" */
static void add_time(rb_buf *b, const char *key, int64_t us)
{
    char ts[RB_TIME_STRLEN];
    if (b->len > 1)
        rb_buf_addc(b, ',');
    rb_buf_addc(b, '"');
    rb_buf_adds(b, key);
    rb_buf_add(b, "\":\"", 3);
    rb_buf_adds(b, format_time(us, ts));
    rb_buf_addc(b, '"');
}

char *rb_job_json_out(const rb_job *j, int64_t enqueued_us)
{
    size_t n = strlen(j->json);
    if ((!j->created_us && enqueued_us <= 0) || n < 2 || j->json[n - 1] != '}')
        return rb_xstrdup(j->json);
    rb_buf b = RB_BUF_INIT;
    rb_buf_add(&b, j->json, n - 1);
    if (j->created_us)
        add_time(&b, "created_at", j->created_us);
    if (enqueued_us > 0)
        add_time(&b, "enqueued_at", enqueued_us);
    rb_buf_addc(&b, '}');
    return rb_buf_detach(&b, NULL);
}

rb_job *rb_queue_first(const rb_queue *q)
{
    for (int p = RB_PRIORITIES - 1; p >= 0; p--)
        if (q->ready[p].head)
            return rb_job_of_link(q->ready[p].head);
    return NULL;
}

rb_job *rb_jobs_next_timer(const rb_jobs *js)
{
    rb_heap_node *n = rb_heap_top(&js->timers);
    return n ? rb_container_of(n, rb_job, timer) : NULL;
}

double rb_queue_latency_s(const rb_queue *q, int64_t now_ms)
{
    int64_t oldest = now_ms;
    for (int p = 0; p < RB_PRIORITIES; p++)
        if (q->ready[p].head && rb_job_of_link(q->ready[p].head)->timer.at_ms < oldest)
            oldest = rb_job_of_link(q->ready[p].head)->timer.at_ms;
    return (double)(now_ms - oldest) / 1000.0;
}

void rb_job_metric(struct rb_metrics *m, int ev, const rb_job *j)
{
    rb_metrics_event(m, (rb_metric_event)ev, j->queue ? j->queue->name : "default", j->json);
}
