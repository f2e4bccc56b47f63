/* The single node's operator settings of groups (backend/sqlite/groups.h,
 * "group_conf.c"): GROUP SET's overrides and GROUP PAUSE's pauses by
 * queue and group name, their durable meta rows, the timer that ends
 * pauses, and RB_ENG_GROUP: the changes, GROUP GET's view and GROUPS'
 * listing and summaries (engine/group_cmd.h builds the replies). Loop
 * thread only. */
#include "backend/sqlite/groups.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "backend/sqlite/heap.h"
#include "backend/sqlite/throttle.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "engine/group_cmd.h"

/* One group's settings. Invariants: in the table while it has an
 * override or a pause (freed with its row when neither remains); `wake`
 * in the pauses heap exactly while paused_until_ms > 0 (at_ms = the end).
 * The key is "QUEUE GROUP": neither name holds a space. */
typedef struct conf {
    void *hnext;
    rb_heap_node wake;
    bool has_over;
    rb_flow_override over;
    int64_t paused_until_ms; /* 0: not paused */
    char *reason;            /* the pause's, or NULL; owned */
    size_t qlen;             /* the queue name's length in key */
    char key[];
} conf;

struct rb_sq_group_confs {
    rb_table by_key;
    rb_heap pauses;         /* paused confs by their end */
    struct event *pause_ev; /* the heap's top */
};

static const char *conf_key(const void *e)
{
    return ((const conf *)e)->key;
}

static void conf_free(void *e, void *arg)
{
    (void)arg;
    conf *c = e;
    free(c->reason);
    free(c);
}

void rb_sq_group_confs_init(rb_sq *sq)
{
    rb_sq_group_confs *s = rb_xcalloc(1, sizeof *s);
    rb_table_init(&s->by_key, offsetof(conf, hnext), conf_key);
    rb_heap_init(&s->pauses);
    sq->group_confs = s;
}

void rb_sq_group_confs_close(rb_sq *sq)
{
    rb_sq_group_confs *s = sq->group_confs;
    if (s && s->pause_ev) {
        event_free(s->pause_ev);
        s->pause_ev = NULL;
    }
}

void rb_sq_group_confs_release(rb_sq *sq)
{
    rb_sq_group_confs *s = sq->group_confs;
    if (!s)
        return;
    rb_sq_group_confs_close(sq);
    rb_heap_release(&s->pauses);
    rb_table_each(&s->by_key, conf_free, NULL);
    rb_table_release(&s->by_key);
    free(s);
    sq->group_confs = NULL;
}

void rb_sq_group_confs_flush(rb_sq *sq)
{
    rb_sq_group_confs *s = sq->group_confs;
    rb_heap_release(&s->pauses);
    rb_heap_init(&s->pauses);
    rb_table_each(&s->by_key, conf_free, NULL);
    rb_table_release(&s->by_key);
    rb_table_init(&s->by_key, offsetof(conf, hnext), conf_key);
}

/* The settings of queue's group (NULL: none); created when create. */
static conf *conf_get(const rb_sq *sq, const char *queue, const char *group, bool create)
{
    rb_sq_group_confs *s = sq->group_confs;
    if (!create && !s->by_key.size)
        return NULL;
    rb_buf k = RB_BUF_INIT;
    rb_buf_printf(&k, "%s %s", queue, group);
    conf *c = rb_table_get(&s->by_key, rb_buf_str(&k));
    if (!c && create) {
        c = rb_xcalloc(1, sizeof *c + k.len + 1);
        memcpy(c->key, rb_buf_str(&k), k.len + 1);
        c->qlen = strlen(queue);
        rb_heap_node_init(&c->wake);
        rb_table_put(&s->by_key, c);
    }
    rb_buf_release(&k);
    return c;
}

const rb_flow_override *rb_sq_group_override(const rb_sq *sq, const rb_group *g)
{
    conf *c = conf_get(sq, g->queue->name, g->name, false);
    return c && c->has_over ? &c->over : NULL;
}

int64_t rb_sq_group_paused_until(const rb_sq *sq, const rb_group *g)
{
    conf *c = conf_get(sq, g->queue->name, g->name, false);
    return c ? c->paused_until_ms : 0;
}

/* --- rows --- */

/* c's row value (a new string), NULL when it holds nothing. */
static char *conf_value(const conf *c)
{
    if (!c->has_over && !c->paused_until_ms)
        return NULL;
    json_t *o = json_object();
    if (c->has_over)
        json_object_set_new(o, "over", rb_flow_override_json(&c->over));
    if (c->paused_until_ms)
        json_object_set_new(o, "paused_until", json_integer(c->paused_until_ms));
    if (c->reason)
        json_object_set_new(o, "reason", json_string(c->reason));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* c's row into the open batch; a c holding nothing is deleted with its
 * row (c is then gone). */
static void conf_store(rb_sq *sq, conf *c)
{
    rb_buf k = RB_BUF_INIT;
    rb_buf_printf(&k, RB_GROUP_CONF_META_KEY "%s", c->key);
    char *v = conf_value(c);
    rb_writer_meta(sq->writer, rb_buf_str(&k), v);
    free(v);
    rb_buf_release(&k);
    if (!c->has_over && !c->paused_until_ms) {
        rb_heap_remove(&sq->group_confs->pauses, &c->wake);
        rb_table_del(&sq->group_confs->by_key, c);
        conf_free(c, NULL);
    }
}

/* c's group in memory (NULL: it has no job now). */
static rb_group *conf_group(rb_sq *sq, const conf *c)
{
    char *queue = rb_xstrndup(c->key, c->qlen);
    rb_queue *q = rb_jobs_queue(&sq->jobs, queue, false);
    free(queue);
    return q ? rb_queue_group(q, c->key + c->qlen + 1) : NULL;
}

/* --- pauses --- */

static void on_pause_end(evutil_socket_t fd, short what, void *arg);

static void arm_pauses(rb_sq *sq)
{
    rb_sq_group_confs *s = sq->group_confs;
    rb_heap_node *top = rb_heap_top(&s->pauses);
    if (!sq->base)
        return;
    if (!s->pause_ev)
        s->pause_ev = evtimer_new(sq->base, on_pause_end, sq);
    if (!top) {
        evtimer_del(s->pause_ev);
        return;
    }
    int64_t delay = top->at_ms - rb_now_ms();
    if (delay < 0)
        delay = 0;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(s->pause_ev, &tv);
}

/* c paused until until_ms (0: not paused) with reason (copied; NULL:
 * none). */
static void set_pause(rb_sq *sq, conf *c, int64_t until_ms, const char *reason)
{
    rb_heap *h = &sq->group_confs->pauses;
    rb_heap_remove(h, &c->wake);
    c->paused_until_ms = until_ms;
    free(c->reason);
    c->reason = until_ms && reason ? rb_xstrdup(reason) : NULL;
    if (until_ms)
        rb_heap_push(h, &c->wake, until_ms);
}

/* c's settings changed: stored, and its group (when it has jobs) takes
 * them at once. */
static void conf_changed(rb_sq *sq, conf *c, int64_t now)
{
    rb_group *g = conf_group(sq, c);
    conf_store(sq, c); /* may free c */
    if (g)
        rb_sq_group_apply(sq, g, now);
    arm_pauses(sq);
}

static void on_pause_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    int64_t now = rb_now_ms();
    rb_heap_node *top;
    while ((top = rb_heap_top(&sq->group_confs->pauses)) && top->at_ms <= now) {
        conf *c = rb_container_of(top, conf, wake);
        set_pause(sq, c, 0, NULL);
        rb_log(RB_LOG_INFO, "GROUP %.*s %s: paused until its time, resumed", (int)c->qlen, c->key,
               c->key + c->qlen + 1);
        conf_changed(sq, c, now);
    }
    arm_pauses(sq);
    rb_eng_wake(sq->eng, NULL, 0); /* its jobs may start */
}

/* --- QUEUE REMOVE --- */

typedef struct conf_list {
    const char *queue;
    size_t qlen;
    conf **v;
    size_t n;
} conf_list;

static void collect_queue(void *e, void *arg)
{
    conf *c = e;
    conf_list *l = arg;
    if (c->qlen == l->qlen && !memcmp(c->key, l->queue, l->qlen))
        l->v[l->n++] = c;
}

void rb_sq_group_confs_queue_removed(rb_sq *sq, const char *queue, int64_t now)
{
    rb_sq_group_confs *s = sq->group_confs;
    if (!s->by_key.size)
        return;
    conf_list l = {queue, strlen(queue), rb_xcalloc(s->by_key.size + 1, sizeof *l.v), 0};
    rb_table_each(&s->by_key, collect_queue, &l);
    for (size_t i = 0; i < l.n; i++) {
        conf *c = l.v[i];
        c->has_over = false;
        set_pause(sq, c, 0, NULL);
        conf_changed(sq, c, now); /* its row deleted, c freed */
    }
    free(l.v);
}

/* --- recovery --- */

void rb_sq_group_confs_load(rb_sq *sq, const char *key, const char *value)
{
    size_t n = strlen(RB_GROUP_CONF_META_KEY);
    if (strncmp(key, RB_GROUP_CONF_META_KEY, n))
        return;
    const char *name = key + n, *sp = strchr(name, ' ');
    json_t *o = value ? json_loads(value, 0, NULL) : NULL;
    const json_t *over = json_object_get(o, "over");
    const json_t *until = json_object_get(o, "paused_until");
    const json_t *reason = json_object_get(o, "reason");
    rb_flow_override ov = {0};
    if (!sp || !json_is_object(o) || (over && rb_flow_override_parse(over, &ov, NULL)) ||
        (until && !json_is_integer(until)) || (reason && !json_is_string(reason))) {
        rb_log(RB_LOG_WARN, "group settings %s: unreadable value '%.200s': ignored (the group "
               "takes the configured limits, unpaused)", name, value ? value : "");
        json_decref(o);
        return;
    }
    char *queue = rb_xstrndup(name, (size_t)(sp - name));
    conf *c = conf_get(sq, queue, sp + 1, true);
    rb_jobs_queue(&sq->jobs, queue, true); /* GROUP knows the queue */
    free(queue);
    c->has_over = over != NULL;
    c->over = ov;
    set_pause(sq, c, until ? json_integer_value(until) : 0, json_string_value(reason));
    json_decref(o);
}

void rb_sq_group_confs_loaded(rb_sq *sq)
{
    int64_t now = rb_now_ms();
    rb_heap_node *top;
    while ((top = rb_heap_top(&sq->group_confs->pauses)) && top->at_ms <= now) {
        conf *c = rb_container_of(top, conf, wake);
        set_pause(sq, c, 0, NULL); /* ended while the server was down */
        conf_store(sq, c);
    }
}

void rb_sq_group_confs_attach(rb_sq *sq)
{
    arm_pauses(sq);
}

/* --- views --- */

/* The view of queue's group name: g its groups in memory (NULL: none), c
 * its settings (NULL: none). */
static void view_fill(const char *queue, const char *name, const rb_group *g, const conf *c,
                      int64_t now, rb_group_view *v)
{
    *v = (rb_group_view){.queue = rb_xstrdup(queue), .group = rb_xstrdup(name)};
    v->known = g || c;
    if (c) {
        v->has_override = c->has_over;
        v->over = c->over;
        v->paused_until_ms = c->paused_until_ms;
        v->reason = c->reason ? rb_xstrdup(c->reason) : NULL;
        v->hold = c->paused_until_ms ? RB_HOLD_PAUSED : RB_HOLD_NONE;
        v->hold_until_ms = c->paused_until_ms;
    }
    if (!g)
        return;
    v->ready = g->size;
    v->working = g->working;
    v->hold = (rb_group_hold)g->hold;
    if (g->hold == RB_HOLD_RATE)
        v->hold_until_ms = g->wake.at_ms;
    else if (g->hold != RB_HOLD_PAUSED)
        v->hold_until_ms = 0;
    int64_t next_us = g->gcra.t_us ? rb_gcra_next_us(&g->gcra, g->tat_us) : 0;
    if (next_us > now * 1000)
        v->next_start_ms = (next_us + 999) / 1000;
}

typedef struct vlist {
    rb_sq *sq;
    const char *queue;
    const rb_queue *q;
    int64_t now;
    rb_group_view *v;
    size_t n, cap;
} vlist;

static rb_group_view *vlist_add(vlist *l)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = rb_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    return &l->v[l->n++];
}

static void add_group(void *e, void *arg)
{
    const rb_group *g = e;
    vlist *l = arg;
    view_fill(l->queue, g->name, g, conf_get(l->sq, l->queue, g->name, false), l->now,
              vlist_add(l));
}

/* A conf of l's queue whose group has no job. */
static void add_conf(void *e, void *arg)
{
    const conf *c = e;
    vlist *l = arg;
    if (c->qlen != strlen(l->queue) || strncmp(c->key, l->queue, c->qlen))
        return;
    const char *name = c->key + c->qlen + 1;
    if (!l->q || !rb_table_get(&l->q->groups, name))
        view_fill(l->queue, name, NULL, c, l->now, vlist_add(l));
}

static int view_cmp(const void *a, const void *b)
{
    return strcmp(((const rb_group_view *)a)->group, ((const rb_group_view *)b)->group);
}

/* Every group of queue known here (named, with jobs or settings), by
 * name, into l. */
static void collect(rb_sq *sq, const char *queue, int64_t now, vlist *l)
{
    *l = (vlist){.sq = sq, .queue = queue, .now = now};
    l->q = rb_jobs_queue(&sq->jobs, queue, false);
    if (l->q)
        rb_table_each(&l->q->groups, add_group, l);
    rb_table_each(&sq->group_confs->by_key, add_conf, l);
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, view_cmp);
}

static void vlist_release(vlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        rb_group_view_release(&l->v[i]);
    free(l->v);
}

/* queue's summary over the views of l. */
static void sum_of(const char *queue, const vlist *l, rb_group_sum *s)
{
    *s = (rb_group_sum){.queue = rb_xstrdup(queue)};
    for (size_t i = 0; i < l->n; i++)
        rb_group_sum_add(s, &l->v[i]);
}

/* GROUPS of one queue: the page of the views the state selects. */
static void list_queue(rb_sq *sq, rb_eng_op *op)
{
    const rb_group_req *r = &op->u.group.req;
    vlist l;
    collect(sq, r->queue, op->now, &l);
    op->u.group.sums = rb_xcalloc(1, sizeof *op->u.group.sums);
    op->u.group.n_sums = 1;
    sum_of(r->queue, &l, &op->u.group.sums[0]);
    op->u.group.views = rb_xcalloc((size_t)r->limit + 1, sizeof *op->u.group.views);
    for (size_t i = 0; i < l.n; i++) {
        if (!rb_group_view_matches(&l.v[i], r->state))
            continue;
        int64_t k = op->u.group.total++;
        if (k >= r->offset && (int64_t)op->u.group.n < r->limit) {
            op->u.group.views[op->u.group.n++] = l.v[i];
            memset(&l.v[i], 0, sizeof l.v[i]); /* moved */
        }
    }
    vlist_release(&l);
}

/* The set of queues with groups, settings or a [groups] table: keys of a
 * JSON object. */
static void queue_with_groups(void *e, void *arg)
{
    const rb_queue *q = e;
    if (q->groups.size)
        json_object_set_new(arg, q->name, json_true());
}

static void queue_of_conf(void *e, void *arg)
{
    const conf *c = e;
    char *queue = rb_xstrndup(c->key, c->qlen);
    json_object_set_new(arg, queue, json_true());
    free(queue);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each queue's summary, by name, into *sums (n returned). */
static size_t summaries(rb_sq *sq, int64_t now, rb_group_sum **sums)
{
    json_t *set = json_object();
    rb_table_each(&sq->jobs.queues, queue_with_groups, set);
    rb_table_each(&sq->group_confs->by_key, queue_of_conf, set);
    for (size_t i = 0; i < sq->cfg->n_groups; i++)
        if (strcmp(sq->cfg->groups[i].queue, "*"))
            json_object_set_new(set, sq->cfg->groups[i].queue, json_true());
    size_t n = json_object_size(set), k = 0;
    const char **names = rb_xcalloc(n + 1, sizeof *names);
    const char *key;
    json_t *v;
    json_object_foreach(set, key, v) names[k++] = key;
    qsort(names, n, sizeof *names, name_cmp);
    *sums = rb_xcalloc(n + 1, sizeof **sums);
    for (size_t i = 0; i < n; i++) {
        vlist l;
        collect(sq, names[i], now, &l);
        sum_of(names[i], &l, &(*sums)[i]);
        vlist_release(&l);
    }
    free(names);
    json_decref(set);
    return n;
}

void rb_sq_groups_info(rb_sq *sq, json_t *rebound, int64_t now)
{
    rb_group_sum *sums;
    size_t n = summaries(sq, now, &sums);
    rb_group_holds *holds = rb_xcalloc(n + 1, sizeof *holds);
    for (size_t i = 0; i < n; i++) {
        const rb_queue *q = rb_jobs_queue(&sq->jobs, sums[i].queue, false);
        if (q)
            holds[i] = (rb_group_holds){q->holds[RB_HOLD_CONCURRENCY], q->holds[RB_HOLD_RATE],
                                        q->holds[RB_HOLD_PAUSED], q->rate_passes};
    }
    json_object_set_new(rebound, "groups", rb_groups_info_json(sums, n, holds));
    for (size_t i = 0; i < n; i++)
        free(sums[i].queue);
    free(sums);
    free(holds);
}

/* GROUPS without a queue: each queue's summary, by name. */
static void list_queues(rb_sq *sq, rb_eng_op *op)
{
    op->u.group.n_sums = summaries(sq, op->now, &op->u.group.sums);
}

/* --- JOB --- */

void rb_sq_job_hold(rb_sq *sq, const rb_job *j, int64_t now, rb_job_view *v)
{
    const rb_group *g = j->group;
    if (j->state != RB_JOB_ENQUEUED || rb_sq_throttle_job_hold(sq, g->queue, now, v))
        return;
    if (g->hold == RB_HOLD_NONE || !g->name[0])
        return;
    v->hold_by = "group";
    v->hold = rb_group_hold_name((rb_group_hold)g->hold);
    const conf *c =
        g->hold == RB_HOLD_PAUSED ? conf_get(sq, g->queue->name, g->name, false) : NULL;
    if (g->hold == RB_HOLD_RATE)
        v->hold_until_ms = g->wake.at_ms;
    else if (g->hold == RB_HOLD_PAUSED)
        v->hold_until_ms = c ? c->paused_until_ms : 0;
    v->hold_detail = rb_group_hold_detail(g->name, (rb_group_hold)g->hold, g->working,
                                          g->concurrency, v->hold_until_ms, c ? c->reason : NULL);
}

/* --- RB_ENG_GROUP --- */

void rb_sq_group_op(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    const rb_group_req *r = &op->u.group.req;
    if (r->queue && !rb_jobs_queue(&sq->jobs, r->queue, false) &&
        !rb_group_queue_configured(sq->cfg, r->queue)) {
        op->rc = rb_group_no_queue(r, &op->err);
        rb_eng_complete(eng, op);
        return;
    }
    conf *c;
    switch (r->verb) {
    case RB_GROUP_SET:
        if (!(c = conf_get(sq, r->queue, r->group, r->over.set != 0)))
            break; /* {} and no override: nothing to change */
        rb_jobs_queue(&sq->jobs, r->queue, true);
        c->has_over = r->over.set != 0;
        c->over = r->over;
        conf_changed(sq, c, op->now);
        rb_sq_after_commit(sq, op);
        return;
    case RB_GROUP_PAUSE:
        c = conf_get(sq, r->queue, r->group, true);
        rb_jobs_queue(&sq->jobs, r->queue, true);
        set_pause(sq, c, r->until_ms, r->reason);
        conf_changed(sq, c, op->now);
        rb_sq_after_commit(sq, op);
        return;
    case RB_GROUP_RESUME:
        if (!(c = conf_get(sq, r->queue, r->group, false)) || !c->paused_until_ms)
            break; /* not paused: nothing written */
        set_pause(sq, c, 0, NULL);
        conf_changed(sq, c, op->now);
        rb_sq_after_commit(sq, op);
        return;
    case RB_GROUP_GET: {
        rb_queue *q = rb_jobs_queue(&sq->jobs, r->queue, false);
        view_fill(r->queue, r->group, q ? rb_table_get(&q->groups, r->group) : NULL,
                  conf_get(sq, r->queue, r->group, false), op->now, &op->u.group.view);
        break;
    }
    case RB_GROUP_LIST:
        if (r->queue)
            list_queue(sq, op);
        else
            list_queues(sq, op);
        break;
    }
    rb_eng_complete(eng, op);
}
