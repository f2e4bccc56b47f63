/* The single node's flow control at FETCH (backend/sqlite/groups.h). */
#include "backend/sqlite/groups.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "backend/sqlite/heap.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "config/config.h"
#include "engine/gcra.h"
#include "engine/group.h"

/* A bucket whose group is not in memory: loaded from its row before the
 * group's jobs claimed it, or kept when its group was freed while the
 * bucket was not yet full again (so the group, back later, starts where it
 * left off). Freed with its row by the sweep once full. */
typedef struct bucket {
    void *hnext;
    int64_t tat_us;
    char key[]; /* "QUEUE GROUP" or "QUEUE" */
} bucket;

struct rb_sq_groups {
    rb_heap held;             /* groups held by rate, by the time they may start */
    struct event *held_ev;    /* the heap's top */
    int64_t held_armed_ms;    /* held_ev's time, INT64_MAX when unset */
    struct event *queue_ev;   /* the earliest queue bucket a FETCH found empty */
    int64_t queue_armed_ms;
    rb_table buckets;         /* bucket by key */
    struct event *sweep_ev;   /* frees full buckets (and their rows) */
};

#define SWEEP_MS 60000

static const char *bucket_key(const void *e)
{
    return ((const bucket *)e)->key;
}

static void free_bucket(void *e, void *arg)
{
    (void)arg;
    free(e);
}

static void group_freed(void *arg, rb_group *g);

void rb_sq_groups_init(rb_sq *sq)
{
    rb_sq_groups *s = rb_xcalloc(1, sizeof *s);
    rb_heap_init(&s->held);
    rb_table_init(&s->buckets, offsetof(bucket, hnext), bucket_key);
    s->held_armed_ms = s->queue_armed_ms = INT64_MAX;
    sq->groups = s;
    rb_sq_group_confs_init(sq);
    sq->jobs.group_freed = group_freed;
    sq->jobs.group_freed_arg = sq;
}

static void free_event(struct event **ev)
{
    if (*ev)
        event_free(*ev);
    *ev = NULL;
}

void rb_sq_groups_close(rb_sq *sq)
{
    rb_sq_groups *s = sq->groups;
    if (!s)
        return;
    rb_sq_group_confs_close(sq);
    free_event(&s->held_ev);
    free_event(&s->queue_ev);
    free_event(&s->sweep_ev);
    s->held_armed_ms = s->queue_armed_ms = INT64_MAX;
}

void rb_sq_groups_release(rb_sq *sq)
{
    rb_sq_groups *s = sq->groups;
    if (!s)
        return;
    rb_sq_groups_close(sq);
    rb_sq_group_confs_release(sq);
    rb_heap_release(&s->held);
    rb_table_each(&s->buckets, free_bucket, NULL);
    rb_table_release(&s->buckets);
    free(s);
    sq->groups = NULL;
}

void rb_sq_groups_flush(rb_sq *sq)
{
    rb_sq_groups *s = sq->groups;
    rb_heap_release(&s->held); /* its groups were freed with the jobs */
    rb_heap_init(&s->held);
    rb_table_each(&s->buckets, free_bucket, NULL);
    rb_table_release(&s->buckets);
    rb_table_init(&s->buckets, offsetof(bucket, hnext), bucket_key);
    sq->jobs.group_freed = group_freed;
    sq->jobs.group_freed_arg = sq;
    rb_sq_group_confs_flush(sq);
}

/* "gcra:QUEUE GROUP" (group NULL or "": the queue's own) into b. */
static void meta_key(rb_buf *b, const char *queue, const char *group)
{
    rb_buf_printf(b, RB_GCRA_META_KEY "%s%s%s", queue, group && *group ? " " : "",
                  group ? group : "");
}

static void write_bucket(rb_sq *sq, const char *queue, const char *group, int64_t tat_us)
{
    rb_buf k = RB_BUF_INIT;
    meta_key(&k, queue, group);
    char v[24];
    snprintf(v, sizeof v, "%lld", (long long)tat_us);
    rb_writer_meta(sq->writer, rb_buf_str(&k), tat_us ? v : NULL);
    rb_buf_release(&k);
}

/* --- timers --- */

static void arm_at(rb_sq *sq, struct event **ev, int64_t *armed, int64_t at,
                   void (*fn)(evutil_socket_t, short, void *))
{
    if (at >= *armed || !sq->base)
        return;
    if (!*ev)
        *ev = evtimer_new(sq->base, fn, sq);
    int64_t delay = at - rb_now_ms();
    if (delay < 0)
        delay = 0;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(*ev, &tv);
    *armed = at;
}

static void on_held(evutil_socket_t fd, short what, void *arg);

static void arm_held(rb_sq *sq)
{
    rb_sq_groups *s = sq->groups;
    rb_heap_node *top = rb_heap_top(&s->held);
    if (top)
        arm_at(sq, &s->held_ev, &s->held_armed_ms, top->at_ms, on_held);
}

static void decide_hold(rb_sq *sq, rb_group *g, int64_t now);

static void on_held(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    rb_sq_groups *s = sq->groups;
    s->held_armed_ms = INT64_MAX;
    int64_t now = rb_now_ms();
    rb_heap_node *top;
    while ((top = rb_heap_top(&s->held)) && top->at_ms <= now) {
        rb_group *g = rb_container_of(top, rb_group, wake);
        rb_heap_remove(&s->held, top);
        decide_hold(sq, g, now); /* its turn again, unless at a limit meanwhile */
    }
    arm_held(sq);
    rb_eng_wake(sq->eng, NULL, 0); /* groups may start again */
}

static void on_queue_rate(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    sq->groups->queue_armed_ms = INT64_MAX;
    rb_eng_wake(sq->eng, NULL, 0); /* a queue's bucket has room again */
}

static void on_sweep(evutil_socket_t fd, short what, void *arg);

static void arm_sweep(rb_sq *sq)
{
    rb_sq_groups *s = sq->groups;
    if (!sq->base || (s->sweep_ev && evtimer_pending(s->sweep_ev, NULL)))
        return;
    if (!s->sweep_ev)
        s->sweep_ev = evtimer_new(sq->base, on_sweep, sq);
    struct timeval tv = {.tv_sec = SWEEP_MS / 1000, .tv_usec = 0};
    evtimer_add(s->sweep_ev, &tv);
}

typedef struct sweep_arg {
    rb_sq *sq;
    int64_t now_us;
    bucket **full;
    size_t n;
} sweep_arg;

static void collect_full(void *e, void *arg)
{
    bucket *b = e;
    sweep_arg *a = arg;
    if (b->tat_us <= a->now_us)
        a->full[a->n++] = b;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    rb_sq_groups *s = sq->groups;
    sweep_arg a = {sq, rb_now_us(), rb_xcalloc(s->buckets.size + 1, sizeof *a.full), 0};
    rb_table_each(&s->buckets, collect_full, &a);
    for (size_t i = 0; i < a.n; i++) {
        rb_buf k = RB_BUF_INIT;
        rb_buf_printf(&k, RB_GCRA_META_KEY "%s", a.full[i]->key);
        rb_writer_meta(sq->writer, rb_buf_str(&k), NULL);
        rb_buf_release(&k);
        rb_table_del(&s->buckets, a.full[i]);
        free(a.full[i]);
    }
    free(a.full);
    if (s->buckets.size)
        arm_sweep(sq);
}

/* --- buckets kept apart from their groups --- */

static void bucket_put(rb_sq *sq, const char *key, int64_t tat_us)
{
    rb_sq_groups *s = sq->groups;
    bucket *b = rb_table_get(&s->buckets, key);
    if (!b) {
        size_t n = strlen(key) + 1;
        b = rb_xcalloc(1, sizeof *b + n);
        memcpy(b->key, key, n);
        rb_table_put(&s->buckets, b);
    }
    b->tat_us = tat_us;
    arm_sweep(sq);
}

/* The kept bucket of key, removed from the table; 0 when none. */
static int64_t bucket_take(rb_sq *sq, const char *key)
{
    rb_sq_groups *s = sq->groups;
    bucket *b = rb_table_get(&s->buckets, key);
    if (!b)
        return 0;
    int64_t tat = b->tat_us;
    rb_table_del(&s->buckets, b);
    free(b);
    return tat;
}

static void group_key(rb_buf *b, const rb_group *g)
{
    rb_buf_printf(b, "%s %s", g->queue->name, g->name);
}

/* jobs.h's hook: g is about to be freed (its last job gone). */
static void group_freed(void *arg, rb_group *g)
{
    rb_sq *sq = arg;
    rb_heap_remove(&sq->groups->held, &g->wake);
    if (g->tat_us > 0) { /* its bucket outlives it until full: kept apart, row kept */
        rb_buf k = RB_BUF_INIT;
        group_key(&k, g);
        bucket_put(sq, rb_buf_str(&k), g->tat_us);
        rb_buf_release(&k);
    }
}

/* --- limits --- */

/* g's bucket from a kept one (its row loaded, or kept when it was freed),
 * when g has a rate and one is kept. */
static void restore_bucket(rb_sq *sq, rb_group *g)
{
    if (!g->gcra.t_us || !sq->groups->buckets.size)
        return;
    rb_buf k = RB_BUF_INIT;
    group_key(&k, g);
    int64_t tat = bucket_take(sq, rb_buf_str(&k));
    if (tat)
        g->tat_us = tat;
    rb_buf_release(&k);
}

/* g's limits: its GROUP SET override (group_conf.c), then [groups.QUEUE],
 * then [groups."*"]. The none group has none (docs/configuration.md). */
static void resolve_limits(rb_sq *sq, rb_group *g)
{
    g->limits_set = true;
    g->concurrency = 0;
    g->gcra = (rb_gcra){0};
    const rb_flow_override *over = g->name[0] ? rb_sq_group_override(sq, g) : NULL;
    if (!g->name[0] || (!over && !sq->cfg->n_groups))
        return;
    rb_flow_limits l;
    rb_config_group_limits(sq->cfg, g->queue->name, over, &l, NULL);
    g->concurrency = (uint32_t)l.concurrency;
    rb_gcra_init(&g->gcra, l.rate, l.period_ms, l.burst);
}

/* A new group's limits, its bucket from a kept one, and its pause. */
static void limits_of(rb_sq *sq, rb_group *g)
{
    resolve_limits(sq, g);
    restore_bucket(sq, g);
    if (g->name[0] && rb_sq_group_paused_until(sq, g))
        rb_group_hold_back(g, RB_HOLD_PAUSED);
}

void rb_sq_group_set(rb_sq *sq, rb_job *j, const char *name)
{
    rb_jobs_set_group(&sq->jobs, j, name);
    if (!j->group->limits_set)
        limits_of(sq, j->group);
}

/* A hold on g by its bucket until it conforms again. */
static void hold_for_rate(rb_sq *sq, rb_group *g)
{
    int64_t next_us = rb_gcra_next_us(&g->gcra, g->tat_us);
    rb_group_hold_back(g, RB_HOLD_RATE);
    rb_heap_remove(&sq->groups->held, &g->wake);
    rb_heap_push(&sq->groups->held, &g->wake, (next_us + 999) / 1000);
    arm_held(sq);
}

/* g's hold decided afresh at now, by precedence: paused (GROUP PAUSE),
 * at its concurrency, out of its rate; else its turn (at the back of the
 * turns, or where it is when it already has one). */
static void decide_hold(rb_sq *sq, rb_group *g, int64_t now)
{
    rb_heap_remove(&sq->groups->held, &g->wake);
    if (g->name[0] && rb_sq_group_paused_until(sq, g))
        rb_group_hold_back(g, RB_HOLD_PAUSED);
    else if (g->concurrency && g->working >= g->concurrency)
        rb_group_hold_back(g, RB_HOLD_CONCURRENCY);
    else if (g->gcra.t_us && !rb_gcra_conforms(&g->gcra, g->tat_us, now * 1000))
        hold_for_rate(sq, g);
    else
        rb_group_release(g);
}

void rb_sq_group_apply(rb_sq *sq, rb_group *g, int64_t now)
{
    resolve_limits(sq, g);
    restore_bucket(sq, g);
    decide_hold(sq, g, now);
}

/* g is about to start a job at now: its bucket advanced (and written), and
 * g held back when that start leaves it at a limit. */
static void group_started(rb_sq *sq, rb_group *g, int64_t now)
{
    int64_t now_us = now * 1000;
    if (g->gcra.t_us) {
        g->tat_us = rb_gcra_start(&g->gcra, g->tat_us, now_us);
        write_bucket(sq, g->queue->name, g->name, g->tat_us);
    }
    if (g->concurrency && g->working + 1 >= g->concurrency)
        rb_group_hold_back(g, RB_HOLD_CONCURRENCY);
    else if (g->gcra.t_us && !rb_gcra_conforms(&g->gcra, g->tat_us, now_us))
        hold_for_rate(sq, g);
    /* a concurrency hold ends when a job stops working (jobs.c); a group
     * also out of its rate then is held for its rate (rb_sq_group_take) */
}

rb_job *rb_sq_group_take(rb_sq *sq, rb_queue *q, int64_t now)
{
    rb_link *e;
    while ((e = q->turns.head)) {
        rb_group *g = rb_container_of(e, rb_group, turn);
        if (g->gcra.t_us && !rb_gcra_conforms(&g->gcra, g->tat_us, now * 1000)) {
            hold_for_rate(sq, g); /* released from concurrency, but out of its rate */
            continue;
        }
        rb_job *j = rb_group_first(g);
        if (rb_sq_unique_expire(sq, j, now))
            continue; /* dropped (its group too, if that was its last job): look again */
        rb_group_next_turn(g);
        group_started(sq, g, now);
        return j;
    }
    return NULL;
}

/* --- a queue's [throttles] rate --- */

/* q's bucket, taken from the kept ones the first time (a row loaded
 * before q had a job). */
static void queue_bucket(rb_sq *sq, rb_queue *q)
{
    if (!q->tat_us && sq->groups->buckets.size)
        q->tat_us = bucket_take(sq, q->name);
}

int64_t rb_sq_queue_tat(rb_sq *sq, rb_queue *q)
{
    queue_bucket(sq, q);
    return q->tat_us;
}

bool rb_sq_queue_rate_full(rb_sq *sq, const rb_throttle *cfg, rb_queue *q, int64_t now)
{
    queue_bucket(sq, q);
    rb_gcra b;
    rb_gcra_init(&b, cfg->rate, cfg->period_ms, cfg->burst);
    if (rb_gcra_conforms(&b, q->tat_us, now * 1000))
        return false;
    if (q->size)
        q->rate_passes++;
    rb_sq_groups *s = sq->groups;
    arm_at(sq, &s->queue_ev, &s->queue_armed_ms, (rb_gcra_next_us(&b, q->tat_us) + 999) / 1000,
           on_queue_rate);
    return true;
}

void rb_sq_queue_rate_started(rb_sq *sq, const rb_throttle *cfg, rb_queue *q, int64_t now)
{
    queue_bucket(sq, q);
    rb_gcra b;
    rb_gcra_init(&b, cfg->rate, cfg->period_ms, cfg->burst);
    q->tat_us = rb_gcra_start(&b, q->tat_us, now * 1000);
    write_bucket(sq, q->name, NULL, q->tat_us);
}

/* --- recovery --- */

/* A bucket row that cannot be read: rebuilt at rb_sq_groups_loaded as if
 * a whole period of starts had just been made (fewer starts, never more). */
#define UNREADABLE INT64_MAX

void rb_sq_groups_load(rb_sq *sq, const char *key, const char *value)
{
    rb_sq_group_confs_load(sq, key, value);
    size_t n = strlen(RB_GCRA_META_KEY);
    if (strncmp(key, RB_GCRA_META_KEY, n))
        return;
    char *end = NULL;
    long long tat = value ? strtoll(value, &end, 10) : 0;
    if (!value || !end || *end || tat <= 0 || tat == UNREADABLE) {
        tat = UNREADABLE;
        rb_log(RB_LOG_WARN, "rate bucket %s: unreadable value '%s': rebuilt as used up for a "
               "period", key + n, value ? value : "");
    }
    bucket_put(sq, key + n, tat);
}

/* A loaded bucket's TAT: an unreadable one becomes now + tau + period. */
static int64_t loaded_tat(int64_t tat, const rb_gcra *b, int64_t period_ms, int64_t now_us)
{
    return tat == UNREADABLE ? now_us + b->tau_us + period_ms * 1000 : tat;
}

typedef struct loaded_arg {
    rb_sq *sq;
    int64_t now_us;
} loaded_arg;

static void group_loaded(rb_group *g, void *arg)
{
    loaded_arg *a = arg;
    resolve_limits(a->sq, g); /* its override's row may have come after its jobs */
    restore_bucket(a->sq, g); /* so may its bucket's */
    if (g->tat_us == UNREADABLE) {
        rb_flow_limits l;
        rb_config_group_limits(a->sq->cfg, g->queue->name,
                               g->name[0] ? rb_sq_group_override(a->sq, g) : NULL, &l, NULL);
        g->tat_us = loaded_tat(g->tat_us, &g->gcra, l.period_ms, a->now_us);
    }
    decide_hold(a->sq, g, a->now_us / 1000);
}

static void queue_loaded(void *e, void *arg)
{
    rb_queue *q = e;
    loaded_arg *a = arg;
    q->tat_us = bucket_take(a->sq, q->name);
    const rb_throttle *t = rb_config_throttle(a->sq->cfg, q->name);
    if (q->tat_us == UNREADABLE) {
        rb_gcra b = {0};
        if (t)
            rb_gcra_init(&b, t->rate, t->period_ms, t->burst);
        q->tat_us = t ? loaded_tat(q->tat_us, &b, t->period_ms, a->now_us) : 0;
    }
    rb_queue_each_group(q, group_loaded, a);
}

void rb_sq_groups_loaded(rb_sq *sq)
{
    rb_sq_group_confs_loaded(sq); /* before the groups: their overrides and pauses */
    loaded_arg a = {sq, rb_now_us()};
    rb_table_each(&sq->jobs.queues, queue_loaded, &a);
    /* a queue's unreadable row whose queue has no job yet: used up too */
    rb_sq_groups *s = sq->groups;
    for (size_t i = 0; i < sq->cfg->n_throttles; i++) {
        const rb_throttle *t = &sq->cfg->throttles[i];
        bucket *b = rb_table_get(&s->buckets, t->queue);
        if (b && t->rate && b->tat_us == UNREADABLE) {
            rb_gcra g;
            rb_gcra_init(&g, t->rate, t->period_ms, t->burst);
            b->tat_us = loaded_tat(b->tat_us, &g, t->period_ms, a.now_us);
        }
    }
}

void rb_sq_groups_attach(rb_sq *sq)
{
    rb_sq_group_confs_attach(sq);
    arm_held(sq); /* holds recomputed at load */
    if (sq->groups->buckets.size)
        arm_sweep(sq);
}

/* --- a job's group --- */

void rb_sq_group_of_json(rb_sq *sq, rb_job *j, const json_t *job)
{
    const char *name = NULL;
    if (rb_group_of_job(job, &name, NULL) == 0 && name)
        rb_sq_group_set(sq, j, name);
}

void rb_sq_group_of_text(rb_sq *sq, rb_job *j)
{
    if (!strstr(j->json, "\"group\""))
        return;
    json_t *o = json_loads(j->json, 0, NULL);
    rb_sq_group_of_json(sq, j, o);
    json_decref(o);
}
