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

static const char *group_key(const void *e)
{
    return ((const rb_group *)e)->name;
}

static rb_group *group_new(rb_queue *q, const char *name)
{
    size_t n = strlen(name) + 1;
    rb_group *g = rb_xcalloc(1, sizeof *g + n);
    memcpy(g->name, name, n);
    g->queue = q;
    rb_heap_node_init(&g->wake);
    return g;
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

static void free_group(void *e, void *arg)
{
    (void)arg;
    free(e);
}

static void free_queue(void *e, void *arg)
{
    (void)arg;
    rb_queue *q = e;
    rb_table_each(&q->groups, free_group, NULL);
    rb_table_release(&q->groups);
    free(q->none);
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
    j->group = q->none;
    q->none->refs++;
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
    rb_table_init(&q->groups, offsetof(rb_group, hnext), group_key);
    q->none = group_new(q, "");
    rb_table_put(&js->queues, q);
    return q;
}

rb_group *rb_queue_group(const rb_queue *q, const char *name)
{
    return name && *name ? rb_table_get(&q->groups, name) : q->none;
}

/* A job of g let go of it: a named group nobody points at is freed. */
static void group_unref(rb_jobs *js, rb_group *g)
{
    if (--g->refs == 0 && g != g->queue->none) {
        if (js->group_freed)
            js->group_freed(js->group_freed_arg, g);
        rb_table_del(&g->queue->groups, g);
        free(g);
    }
}

void rb_group_hold_back(rb_group *g, rb_group_hold h)
{
    if (g->hold != h)
        g->queue->holds[h & 3]++;
    g->hold = (uint8_t)h;
    if (g->in_turns) {
        rb_list_remove(&g->queue->turns, &g->turn);
        g->in_turns = false;
    }
}

void rb_group_release(rb_group *g)
{
    g->hold = RB_HOLD_NONE;
    if (g->size > 0 && !g->in_turns) {
        rb_list_append(&g->queue->turns, &g->turn);
        g->in_turns = true;
    }
}

void rb_jobs_set_group(rb_jobs *js, rb_job *j, const char *name)
{
    rb_queue *q = rb_job_queue(j);
    rb_group *g = rb_queue_group(q, name);
    if (g == j->group)
        return;
    if (!g) {
        g = group_new(q, name);
        rb_table_put(&q->groups, g);
    }
    g->refs++;
    if (j->state == RB_JOB_WORKING) {
        j->group->working--;
        g->working++;
    }
    group_unref(js, j->group);
    j->group = g;
}

rb_job *rb_group_first(const rb_group *g)
{
    if (!g->ready_mask)
        return NULL;
    int p = 31 - __builtin_clz((unsigned)g->ready_mask); /* the highest priority with jobs */
    return rb_job_of_link(g->ready[p].head);
}

void rb_group_next_turn(rb_group *g)
{
    rb_list *turns = &g->queue->turns;
    if (turns->tail != &g->turn) {
        rb_list_remove(turns, &g->turn);
        rb_list_append(turns, &g->turn);
    }
}

typedef struct each_arg {
    void (*fn)(rb_group *g, void *arg);
    void *arg;
} each_arg;

static void each_group(void *e, void *arg)
{
    each_arg *a = arg;
    a->fn(e, a->arg);
}

void rb_queue_each_group(const rb_queue *q, void (*fn)(rb_group *g, void *arg), void *arg)
{
    fn(q->none, arg);
    each_arg a = {fn, arg};
    rb_table_each(&q->groups, each_group, &a);
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

/* A job is in exactly the index its state names: its group's ready list
 * for its priority when ENQUEUED, its state's list when listed, none when
 * PENDING; and in the timer heap exactly when it has a deadline
 * (SCHEDULED, WORKING, RETRIES, DEAD). */
static void check_indexed(rb_jobs *js, const rb_job *j)
{
    const rb_list *l = j->state == RB_JOB_ENQUEUED ? &j->group->ready[j->priority - 1]
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
    rb_group *g = j->group;
    if (j->state == RB_JOB_ENQUEUED) {
        rb_list *l = &g->ready[j->priority - 1];
        rb_list_remove(l, &j->link);
        if (!l->head)
            g->ready_mask &= (uint16_t)~(1u << (j->priority - 1));
        if (--g->size == 0 && g->in_turns) { /* no ready job: out of the turns */
            rb_list_remove(&g->queue->turns, &g->turn);
            g->in_turns = false;
        }
        g->queue->size--;
        js->enqueued--;
    } else if (j->state != RB_JOB_PENDING) {
        if (j->state == RB_JOB_WORKING && --g->working < g->concurrency &&
            g->hold == RB_HOLD_CONCURRENCY)
            rb_group_release(g); /* a slot freed: its turn again */
        rb_list_remove(rb_jobs_state_list(js, j->state), &j->link);
    }
    rb_heap_remove(&js->timers, &j->timer);
}

/* Links j into the indexes of its new state st (unlinked from the old). */
static void link_state(rb_jobs *js, rb_job *j, rb_job_state st, int64_t at_ms)
{
    if (st == RB_JOB_PENDING)
        return;
    rb_group *g = j->group;
    if (st == RB_JOB_ENQUEUED) {
        rb_list_append(&g->ready[j->priority - 1], &j->link);
        g->ready_mask |= (uint16_t)(1u << (j->priority - 1));
        if (g->size++ == 0 && !g->in_turns && g->hold == RB_HOLD_NONE) { /* it waits its turn */
            rb_list_append(&g->queue->turns, &g->turn);
            g->in_turns = true;
        }
        g->queue->size++;
        js->enqueued++;
        j->timer.at_ms = at_ms;
        j->timer.seq = js->next_seq++;
        return;
    }
    j->enq_frac_us = 0;
    if (st == RB_JOB_WORKING)
        g->working++;
    rb_list_append(rb_jobs_state_list(js, st), &j->link);
    if (st == RB_JOB_WAITING || st == RB_JOB_BLOCKED) {
        j->timer.at_ms = at_ms; /* its `at`, for when it is released: no deadline */
        return;
    }
    rb_heap_push(&js->timers, &j->timer, at_ms);
}

void rb_jobs_set_state(rb_jobs *js, rb_job *j, rb_job_state st, int64_t at_ms)
{
    unlink_state(js, j);
    j->state = (uint8_t)st;
    link_state(js, j, st, at_ms);
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
    group_unref(js, j->group);
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

rb_job *rb_jobs_next_timer(const rb_jobs *js)
{
    rb_heap_node *n = rb_heap_top(&js->timers);
    return n ? rb_container_of(n, rb_job, timer) : NULL;
}

static void oldest_of(rb_group *g, void *arg)
{
    int64_t *oldest = arg;
    for (int p = 0; g->size && p < RB_PRIORITIES; p++)
        if (g->ready[p].head && rb_job_of_link(g->ready[p].head)->timer.at_ms < *oldest)
            *oldest = rb_job_of_link(g->ready[p].head)->timer.at_ms;
}

double rb_queue_latency_s(const rb_queue *q, int64_t now_ms)
{
    int64_t oldest = now_ms;
    if (q->size)
        rb_queue_each_group(q, oldest_of, &oldest);
    return (double)(now_ms - oldest) / 1000.0;
}

void rb_job_metric(struct rb_metrics *m, int ev, const rb_job *j)
{
    rb_metrics_event(m, (rb_metric_event)ev, j->group ? rb_job_queue(j)->name : "default",
                     j->json);
}
