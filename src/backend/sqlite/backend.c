/* The single-node backend of the job engine (engine/engine.h): operations
 * applied at once to the in-memory indexes (jobs.h), their rows handed to
 * the SQLite group-commit writer, and the op completed when that commit is
 * on disk. Reads (INFO, QUEUE LATENCY, JOB, JOBS) and WORKERS's signals,
 * which live in memory only, complete at once, before rb_eng_submit
 * returns. Loop thread only. */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/sqlite/batch.h"
#include "backend/sqlite/throttle.h"
#include "backend/sqlite/track.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "server/cron.h"
#include "common/log.h"
#include "engine/metrics.h"
#include "server/srv.h"

/* The writer's completion: the op's changes are on disk, or the commit
 * failed (then memory is ahead of the disk, as for any failed commit:
 * applied is unknown). */
static void committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    rb_srv *srv = op->srv;
    if (status) {
        op->rc = status;
        op->err = *err;
        op->applied = RB_ENG_UNKNOWN;
        rb_log(RB_LOG_ERROR, "commit failed: %s", rb_err_msg(err));
    } else {
        op->applied = RB_ENG_APPLIED;
    }
    rb_eng_complete(srv, op);
    rb_eng_wake(srv, NULL, 0);
    rb_srv_arm(srv);
}

void rb_mem_after_commit(rb_srv *srv, rb_eng_op *op)
{
    rb_writer_then(srv->writer, committed, op);
}

/* --- PUSH, PUSHB --- */

/* The writer's completion of a push: its PENDING jobs become visible
 * (enqueued, or scheduled for their time) and are counted pushed, or are
 * dropped when the commit failed; then as for any op. */
static void push_committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    rb_srv *srv = op->srv;
    int64_t now = rb_now_ms();
    if (!status && op->u.push.meta_key) /* the tick is stored: the mirror follows */
        json_object_set_new(srv->cron_ticks, op->u.push.meta_key, json_integer(op->u.push.tick_s));
    for (size_t i = 0; i < op->u.push.n; i++) {
        if (op->u.push.status[i])
            continue;
        rb_job *j = rb_jobs_find(&srv->jobs, rb_srv_json_str(op->u.push.jobs[i], "jid"));
        if (!j || j->state != RB_JOB_PENDING)
            continue; /* flushed meanwhile */
        if (status) {
            if (srv->deps.nodes.size)
                rb_deps_drop(srv, j->jid);
            rb_mem_unique_gone(srv, j);
            rb_jobs_delete(&srv->jobs, j);
        } else if (srv->deps.nodes.size && rb_deps_pending_waits(srv, j)) {
            rb_deps_pending_commit(srv, j, now); /* waiting for its parents */
        } else if (j->timer.at_ms > now) {
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_SCHEDULED, j->timer.at_ms);
        } else { /* enqueued as of the PUSH, as its stored row says */
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_ENQUEUED, j->timer.at_ms);
        }
        if (!status)
            rb_job_metric(srv->metrics, RB_M_PUSHED, j);
    }
    committed(arg, status, err);
}

/* The stored tick of a cron push's meta row (the mirror of the store's
 * "cron:NAME" rows, srv->cron_ticks) is not older than its tick: nothing
 * to push. */
static bool cron_stale(rb_srv *srv, rb_eng_op *op)
{
    if (!op->u.push.meta_key)
        return false;
    json_t *t = json_object_get(srv->cron_ticks, op->u.push.meta_key);
    if (!t || json_integer_value(t) < op->u.push.tick_s)
        return false;
    op->u.push.stale = true;
    for (size_t i = 0; i < op->u.push.n; i++)
        op->u.push.status[i] = RB_EEXIST;
    return true;
}

static void mem_push(rb_srv *srv, rb_eng_op *op)
{
    if (cron_stale(srv, op)) {
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(srv, op);
        return;
    }
    /* a push naming parents is checked as one unit, and refused whole */
    if ((op->rc = rb_deps_check_push(srv, op->u.push.jobs, op->u.push.n, &op->err)) ||
        (op->rc = rb_mem_unique_check_push(srv, op->u.push.jobs, op->u.push.n, op->now,
                                           &op->err))) {
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(srv, op);
        return;
    }
    size_t made = 0;
    for (size_t i = 0; i < op->u.push.n; i++) {
        const char *bid;
        /* uniqueness first: a unique job's own jid again is NOTUNIQUE */
        if ((op->u.push.status[i] = rb_mem_unique_check(srv, op->u.push.jobs[i], op->now)))
            continue;
        if ((op->u.push.status[i] = rb_mem_batch_check_push(srv, op->u.push.jobs[i], &bid)))
            continue; /* no such batch */
        if (!(op->u.push.status[i] = rb_srv_push(srv, op->u.push.jobs[i]))) {
            made++;
            rb_mem_unique_pushed(srv, rb_jobs_find(&srv->jobs, rb_srv_json_str(op->u.push.jobs[i], "jid")),
                                 op->u.push.jobs[i], op->now);
            if (bid)
                rb_mem_batch_pushed(srv, bid, op->now);
        }
    }
    if (!made && !op->u.push.meta_key) { /* every jid was taken: nothing to commit */
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(srv, op);
        return;
    }
    if (op->u.push.meta_key) { /* in the same commit as the jobs (cron's last tick) */
        char tick[24];
        snprintf(tick, sizeof tick, "%lld", (long long)op->u.push.tick_s);
        rb_writer_meta(srv->writer, op->u.push.meta_key, tick);
    }
    rb_writer_then(srv->writer, push_committed, op);
}

/* --- FETCH --- */

/* The writer's completion of a FETCH: a commit that failed puts the job
 * back; then as for any op. */
static void fetch_committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    if (status)
        rb_srv_unreserve(op->srv, op->u.fetch.jid);
    committed(arg, status, err);
}

static void mem_fetch(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = rb_srv_reserve(srv, op->u.fetch.wid, op->u.fetch.queues, op->u.fetch.n);
    if (!j) { /* none ready: nothing changed */
        rb_eng_complete(srv, op);
        return;
    }
    op->u.fetch.jid = rb_xstrdup(j->jid);
    op->u.fetch.job = rb_xstrdup(j->json);
    rb_writer_then(srv->writer, fetch_committed, op);
}

/* --- ACK, FAIL, SNOOZE, EXTEND --- */

/* Completes a job op at once with status: nothing changed, so there is no
 * commit to wait for. */
static void decided(rb_srv *srv, rb_eng_op *op, rb_job_status status)
{
    op->u.job.status = status;
    op->applied = RB_ENG_NOT_APPLIED;
    rb_eng_complete(srv, op);
}

/* A job op's change is made: completes it once it is durable. */
static void changed(rb_srv *srv, rb_eng_op *op)
{
    op->u.job.status = RB_JOB_DONE;
    rb_mem_after_commit(srv, op);
}

/* The job a job op names, or NULL after completing op: there is no such
 * job (a PENDING one is not visible yet), or another worker holds it (a
 * working job belongs to the wid that fetched it; an op without a wid is
 * not checked, as in Faktory). */
static rb_job *held_job(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = rb_jobs_find(&srv->jobs, op->u.job.jid);
    if (!j || j->state == RB_JOB_PENDING) {
        decided(srv, op, RB_JOB_MISSING);
        return NULL;
    }
    const char *wid = op->u.job.wid;
    if (j->state == RB_JOB_WORKING && j->wid && wid && strcmp(j->wid, wid) != 0) {
        decided(srv, op, RB_JOB_OTHER_HOLDER);
        return NULL;
    }
    return j;
}

/* A working job held by op's worker, or NULL after completing op. */
static rb_job *working_job(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = held_job(srv, op);
    if (j && j->state != RB_JOB_WORKING) {
        op->u.job.state = j->state;
        decided(srv, op, RB_JOB_NOT_WORKING);
        return NULL;
    }
    return j;
}

static void mem_ack(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = held_job(srv, op);
    if (!j)
        return;
    if (j->state != RB_JOB_WORKING && !(j->flags & RB_JOB_EXPIRED)) {
        decided(srv, op, RB_JOB_NOOP); /* never reserved: nothing to acknowledge */
        return;
    }
    rb_job_metric(srv->metrics, RB_M_PROCESSED, j);
    rb_mem_batch_acked(srv, j, op->now);
    if (srv->deps.nodes.size) /* a job in a workflow: recorded, its children told */
        rb_deps_succeeded(srv, j, op->now);
    rb_mem_track_ended(srv, j, RB_TRACK_SUCCESS, op->now);
    rb_srv_forget(srv, j);
    srv->total_processed++;
    rb_srv_persist_counters(srv);
    changed(srv, op);
}

static void mem_fail(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = held_job(srv, op);
    if (!j)
        return;
    if (j->state != RB_JOB_WORKING) {
        /* a late FAIL after the lease expired: its expiry already counted
         * as this failure */
        decided(srv, op, (j->flags & RB_JOB_EXPIRED) ? RB_JOB_NOOP : RB_JOB_NOT_WORKING);
        return;
    }
    j->flags = 0;
    op->rc = rb_srv_fail_job(srv, j, &op->u.job.fail, op->now, &op->err);
    if (op->rc) { /* the job's JSON is unreadable: nothing changed */
        rb_eng_complete(srv, op);
        return;
    }
    changed(srv, op);
}

static void mem_snooze(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = working_job(srv, op);
    if (!j)
        return;
    j->attempts--; /* a snooze does not consume an attempt */
    j->flags = 0;
    free(j->wid);
    j->wid = NULL;
    rb_srv_enqueue(srv, j, op->now + op->u.job.seconds * 1000, op->now);
    rb_srv_persist(srv, j);
    changed(srv, op);
    rb_eng_wake(srv, NULL, 0);
}

static void mem_extend(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = working_job(srv, op);
    if (!j)
        return;
    rb_jobs_set_state(&srv->jobs, j, RB_JOB_WORKING, op->now + op->u.job.seconds * 1000);
    rb_srv_persist(srv, j);
    changed(srv, op);
}

/* --- FLUSH, MUTATE --- */

static void mem_flush(rb_srv *srv, rb_eng_op *op)
{
    uint64_t seq = srv->jobs.next_seq;
    rb_jobs_release(&srv->jobs);
    rb_jobs_init(&srv->jobs);
    rb_deps_release(&srv->deps);
    rb_deps_init(&srv->deps);
    srv->jobs.next_seq = seq;
    srv->total_processed = srv->total_failures = 0;
    rb_mem_batches_flush(srv);
    rb_mem_unique_flush(srv);
    rb_mem_track_flush(srv);
    rb_writer_clear(srv->writer);
    json_object_clear(srv->cron_ticks); /* the meta rows go too */
    rb_mem_after_commit(srv, op);
}

/* MUTATE's cmd applied to one job of its target; j may be freed. */
static void mutate_one(rb_srv *srv, const char *cmd, rb_job *j, int64_t now)
{
    if (!strcmp(cmd, "discard") || !strcmp(cmd, "clear")) {
        rb_srv_forget(srv, j);
        return;
    }
    if (!strcmp(cmd, "kill")) {
        if (j->state == RB_JOB_DEAD)
            return;
        rb_jobs_set_state(&srv->jobs, j, RB_JOB_DEAD,
                          now + srv->cfg.server.dead_retention_s * 1000);
        rb_srv_persist(srv, j);
        rb_mem_unique_died(srv, j);
        rb_deps_died(srv, j, now);
        return;
    }
    /* requeue: a dead job naming parents goes back under them when they
     * hold it (docs/workflows.md) */
    bool was_dead = j->state == RB_JOB_DEAD;
    j->flags = 0;
    if (!was_dead || !rb_deps_retried(srv, j, now)) {
        rb_srv_enqueue(srv, j, now, now);
        rb_srv_persist(srv, j);
    }
    if (was_dead)
        rb_deps_requeued(srv, j, now);
}

static void mem_mutate(rb_srv *srv, rb_eng_op *op)
{
    const rb_mutation *m = &op->u.mutate.m;
    size_t changed = 0;
    if (m->jids) {
        for (size_t i = 0; i < m->n_jids; i++) {
            rb_job *j = rb_jobs_find(&srv->jobs, m->jids[i]);
            if (j && (int)j->state == m->target && rb_mutation_matches(m, j->json)) {
                mutate_one(srv, m->cmd, j, op->now);
                changed++;
            }
        }
    } else {
        rb_list *l = rb_jobs_state_list(&srv->jobs, m->target);
        for (rb_link *e = l->head, *next; e; e = next) {
            next = e->next;
            rb_job *j = rb_job_of_link(e);
            if (rb_mutation_matches(m, j->json)) {
                mutate_one(srv, m->cmd, j, op->now);
                changed++;
            }
        }
    }
    op->u.mutate.changed = changed;
    rb_mem_after_commit(srv, op);
    rb_eng_wake(srv, NULL, 0);
}

/* --- the administration and inspection commands --- */

/* rb_table_each: a queue INFO lists into the op (the arg). */
static void info_queue(void *e, void *arg)
{
    rb_queue *q = e;
    rb_eng_op *op = arg;
    rb_eng_info *f = &op->u.info;
    if (q->known || q->size > 0 || q->paused) { /* jobs enqueued after a REMOVE show too */
        if (f->latency)
            f->latency_s[f->n_queues] = rb_queue_latency_s(q, op->now);
        f->queues[f->n_queues++] =
            (rb_queue_size){rb_xstrdup(q->name), (int64_t)q->size, q->paused};
    }
}

/* INFO's "rebound" key: the group-commit figures. Each commit is one fsync
 * of the WAL. */
static json_t *group_commit_info(const rb_srv *srv)
{
    rb_writer_stats st;
    rb_writer_get_stats(srv->writer, &st);
    double per = st.commits ? (double)st.requests / (double)st.commits : 0.0;
    double avg = st.commits ? (double)st.commit_us / (double)st.commits : 0.0;
    return json_pack("{s:{s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:I}}", "group_commit", "commits",
                     (json_int_t)st.commits, "failed", (json_int_t)st.failed, "requests",
                     (json_int_t)st.requests, "rows", (json_int_t)st.rows, "requests_per_commit",
                     per, "commit_us_total", (json_int_t)st.commit_us, "commit_us_avg", avg,
                     "commit_us_max", (json_int_t)st.commit_us_max);
}

static void mem_info(rb_srv *srv, rb_eng_op *op)
{
    rb_eng_info *f = &op->u.info;
    size_t nq = srv->jobs.queues.size + 1;
    *f = (rb_eng_info){
        .latency = f->latency,
        .latency_s = f->latency ? rb_xcalloc(nq, sizeof(double)) : NULL,
        .store = srv->store && srv->store->ops ? srv->store->ops->name : "?",
        .processed = (int64_t)srv->total_processed,
        .failures = (int64_t)srv->total_failures,
        .enqueued = (int64_t)srv->jobs.enqueued,
        .scheduled = (int64_t)srv->jobs.scheduled.size,
        .retries = (int64_t)srv->jobs.retries.size,
        .dead = (int64_t)srv->jobs.dead.size,
        .working = (int64_t)srv->jobs.working.size,
        .waiting = (int64_t)srv->jobs.waiting.size,
        .blocked = (int64_t)srv->jobs.blocked.size,
        .workers = (int64_t)srv->workers.size,
        .queues = rb_xcalloc(nq, sizeof(rb_queue_size)),
        .rebound = group_commit_info(srv),
    };
    json_object_set_new(f->rebound, "batches", rb_mem_batch_info(srv));
    rb_mem_unique_info(srv, f->rebound);
    rb_mem_throttle_info(srv, f->rebound, op->now);
    rb_table_each(&srv->jobs.queues, info_queue, op);
    rb_eng_complete(srv, op);
}

/* Pauses or resumes q, persistently. */
static void queue_pause(rb_srv *srv, rb_queue *q, bool paused)
{
    char key[256];
    snprintf(key, sizeof key, "paused:%s", q->name);
    q->paused = paused;
    rb_writer_meta(srv->writer, key, paused ? "1" : NULL);
}

/* QUEUE's change to q (the op is the arg of rb_table_each for "*"). */
static void queue_apply(void *e, void *arg)
{
    rb_queue *q = e;
    rb_eng_op *op = arg;
    switch (op->u.queue.verb) {
    case RB_ENG_QUEUE_PAUSE:
        queue_pause(op->srv, q, true);
        rb_srv_queue_known(op->srv, q, true); /* as Faktory's PauseQueue */
        break;
    case RB_ENG_QUEUE_RESUME:
        queue_pause(op->srv, q, false);
        break;
    case RB_ENG_QUEUE_REMOVE:
        for (int p = 0; p < RB_PRIORITIES; p++)
            while (q->ready[p].head)
                rb_srv_forget(op->srv, rb_job_of_link(q->ready[p].head));
        if (q->paused)
            queue_pause(op->srv, q, false);
        rb_srv_queue_known(op->srv, q, false);
        break;
    }
}

static void mem_queue(rb_srv *srv, rb_eng_op *op)
{
    for (int i = 0; i < op->u.queue.n; i++) {
        const char *name = op->u.queue.names[i];
        if (!strcmp(name, "*")) {
            rb_table_each(&srv->jobs.queues, queue_apply, op);
            continue;
        }
        rb_queue *q = rb_jobs_queue(&srv->jobs, name, op->u.queue.verb == RB_ENG_QUEUE_PAUSE);
        if (q)
            queue_apply(q, op);
    }
    if (op->u.queue.read_back) {
        int n = op->u.queue.n;
        op->u.queue.sizes = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.sizes);
        op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
        for (int i = 0; i < n; i++) {
            rb_queue *q = rb_jobs_queue(&srv->jobs, op->u.queue.names[i], false);
            if (!q)
                continue;
            op->u.queue.sizes[i] = (rb_queue_size){rb_xstrdup(q->name), (int64_t)q->size,
                                                   q->paused};
            op->u.queue.latency[i] = rb_queue_latency_s(q, op->now);
        }
    }
    rb_mem_after_commit(srv, op);
    rb_eng_wake(srv, NULL, 0);
}

static void mem_latency(rb_srv *srv, rb_eng_op *op)
{
    int n = op->u.queue.n;
    op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
    for (int i = 0; i < n; i++) {
        rb_queue *q = rb_jobs_queue(&srv->jobs, op->u.queue.names[i], false);
        op->u.queue.latency[i] = q ? rb_queue_latency_s(q, op->now) : 0.0;
    }
    rb_eng_complete(srv, op);
}

/* j as the engine's reads show it. */
static void view_of(const rb_srv *srv, const rb_job *j, rb_job_view *v)
{
    *v = (rb_job_view){
        .jid = rb_xstrdup(j->jid),
        .queue = rb_xstrdup(j->queue->name),
        .json = rb_job_json_out(j, j->state == RB_JOB_ENQUEUED ? rb_job_enqueued_us(j) : 0),
        .history = j->history ? rb_xstrdup(j->history) : NULL,
        .wid = j->wid ? rb_xstrdup(j->wid) : NULL,
        .state = (int)j->state,
        .priority = (int)j->priority,
        .attempts = (int)j->attempts,
        .reserve_s = (int)j->reserve_s,
        .flags = (int)j->flags,
        .due_ms = j->timer.at_ms,
        .first_ms = j->first_ms,
    };
    if (j->state == RB_JOB_WAITING || j->state == RB_JOB_BLOCKED) {
        json_t *w = rb_deps_waits_for(srv, j->jid);
        v->waits_for = w ? json_dumps(w, JSON_COMPACT) : NULL;
        json_decref(w);
        v->blocked_by = rb_deps_blocked_by(srv, j->jid);
    }
}

static void mem_job(rb_srv *srv, rb_eng_op *op)
{
    rb_job *j = rb_jobs_find(&srv->jobs, op->u.lookup.jid);
    op->u.lookup.found = j && j->state != RB_JOB_PENDING;
    if (op->u.lookup.found) {
        view_of(srv, j, &op->u.lookup.view);
        op->u.lookup.view.lock_until_ms = rb_mem_unique_lock_until(srv, j->jid);
    }
    rb_eng_complete(srv, op);
}

/* A listing's page being filled: every match is counted, those from the
 * offset on are viewed until the page is full. */
typedef struct page {
    const rb_srv *srv;
    const rb_job_filter *f;
    rb_job_view *views;
    size_t n, cap;
    int64_t total;
} page;

static void page_add(page *pg, const rb_job *j)
{
    if (pg->total++ < pg->f->offset || (int64_t)pg->n >= pg->f->limit)
        return;
    if (pg->n == pg->cap) {
        pg->cap = pg->cap ? pg->cap * 2 : 16;
        pg->views = rb_xrealloc(pg->views, pg->cap * sizeof *pg->views);
    }
    view_of(pg->srv, j, &pg->views[pg->n++]);
}

/* q's matching jobs in claim order: priority high first, FIFO. */
static void page_queue(page *pg, const rb_queue *q)
{
    for (int p = RB_PRIORITIES - 1; p >= 0; p--)
        for (rb_link *e = q->ready[p].head; e; e = e->next) {
            rb_job *j = rb_job_of_link(e);
            if (rb_job_filter_matches(pg->f, q->name, j->json))
                page_add(pg, j);
        }
}

typedef struct queue_list {
    const rb_queue **v;
    size_t n;
} queue_list;

static void list_queue(void *e, void *arg)
{
    queue_list *l = arg;
    l->v[l->n++] = e;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const rb_queue *const *)a)->name, (*(const rb_queue *const *)b)->name);
}

/* Deadline order; the heap's sequence (the order the deadlines were set)
 * breaks ties, as PostgreSQL's push order does. */
static int by_deadline(const void *a, const void *b)
{
    const rb_heap_node *x = &(*(const rb_job *const *)a)->timer;
    const rb_heap_node *y = &(*(const rb_job *const *)b)->timer;
    if (x->at_ms != y->at_ms)
        return x->at_ms < y->at_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void mem_jobs(rb_srv *srv, rb_eng_op *op)
{
    const rb_job_filter *f = &op->u.jobs.f;
    page pg = {.srv = srv, .f = f};
    if (f->state == RB_JOB_ENQUEUED && f->queue) {
        const rb_queue *q = rb_jobs_queue(&srv->jobs, f->queue, false);
        if (q)
            page_queue(&pg, q);
    } else if (f->state == RB_JOB_ENQUEUED) {
        queue_list l = {rb_xcalloc(srv->jobs.queues.size + 1, sizeof *l.v), 0};
        rb_table_each(&srv->jobs.queues, list_queue, &l);
        qsort(l.v, l.n, sizeof *l.v, by_name);
        for (size_t i = 0; i < l.n; i++)
            page_queue(&pg, l.v[i]);
        free(l.v);
    } else {
        rb_list *l = rb_jobs_state_list(&srv->jobs, f->state);
        const rb_job **v = rb_xcalloc(l->size + 1, sizeof *v);
        size_t n = 0;
        for (rb_link *e = l->head; e; e = e->next) {
            const rb_job *j = rb_job_of_link(e);
            if (rb_job_filter_matches(f, j->queue->name, j->json))
                v[n++] = j;
        }
        qsort(v, n, sizeof *v, by_deadline);
        for (size_t i = 0; i < n; i++)
            page_add(&pg, v[i]);
        free(v);
    }
    op->u.jobs.views = pg.views;
    op->u.jobs.n = pg.n;
    op->u.jobs.total = pg.total;
    rb_eng_complete(srv, op);
}

/* Signals live in memory only: nothing to commit. */
static void mem_workers(rb_srv *srv, rb_eng_op *op)
{
    int64_t changed = 0;
    if (op->u.workers.wid) {
        rb_worker *w = rb_srv_worker(srv, op->u.workers.wid, false);
        if (w) {
            w->signal = op->u.workers.signal;
            changed = 1;
        }
    } else {
        for (size_t i = 0; i < srv->workers.nbuckets; i++)
            for (rb_worker *w = srv->workers.buckets[i]; w; w = w->hnext, changed++)
                w->signal = op->u.workers.signal;
    }
    op->u.workers.changed = changed;
    rb_eng_complete(srv, op);
}

/* --- the HTTP API's own --- */

/* Checks, changes and reads back at once; answered after the commit. */
static void mem_job_action(rb_srv *srv, rb_eng_op *op)
{
    const char *jid = op->u.job_action.jid;
    rb_job *j = rb_jobs_find(&srv->jobs, jid);
    op->u.job_action.found = j && j->state != RB_JOB_PENDING;
    if (!op->u.job_action.found || !rb_job_state_mutable(j->state)) {
        if (op->u.job_action.found)
            op->u.job_action.prev_state = (int)j->state;
        rb_eng_complete(srv, op); /* refused: nothing to commit */
        return;
    }
    op->u.job_action.prev_state = (int)j->state;
    mutate_one(srv, op->u.job_action.cmd, j, op->now);
    j = rb_jobs_find(&srv->jobs, jid);
    op->u.job_action.state = j ? (int)j->state : 0;
    rb_mem_after_commit(srv, op);
    rb_eng_wake(srv, NULL, 0);
}

static void bulk_one(rb_srv *srv, rb_eng_op *op, rb_job *j)
{
    const rb_job_filter *f = &op->u.bulk.f;
    if ((int)j->state != f->state || !rb_job_filter_matches(f, j->queue->name, j->json))
        return;
    mutate_one(srv, op->u.bulk.cmd, j, op->now);
    op->u.bulk.changed++;
}

static void mem_bulk(rb_srv *srv, rb_eng_op *op)
{
    if (op->u.bulk.jids) {
        for (size_t i = 0; i < op->u.bulk.n_jids; i++) {
            rb_job *j = rb_jobs_find(&srv->jobs, op->u.bulk.jids[i]);
            if (j)
                bulk_one(srv, op, j);
        }
    } else {
        rb_list *l = rb_jobs_state_list(&srv->jobs, op->u.bulk.f.state);
        size_t n = l->size; /* a job moved to the end of the list is not seen twice */
        for (rb_link *e = l->head, *next; e && n > 0; e = next, n--) {
            next = e->next;
            bulk_one(srv, op, rb_job_of_link(e));
        }
    }
    rb_mem_after_commit(srv, op);
    rb_eng_wake(srv, NULL, 0);
}

/* This node's workers, in memory only. */
static void mem_worker_list(rb_srv *srv, rb_eng_op *op)
{
    rb_eng_worker *v = rb_xcalloc(srv->workers.size + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < srv->workers.nbuckets; i++)
        for (rb_worker *w = srv->workers.buckets[i]; w; w = w->hnext)
            v[n++] = (rb_eng_worker){.wid = rb_xstrdup(w->wid), .beat_ms = w->last_beat_ms,
                                     .signal = w->signal};
    op->u.worker_list.v = v;
    op->u.worker_list.n = n;
    rb_eng_complete(srv, op);
}

/* --- workflows --- */

static int mem_probe(void *arg, const char *const *jids, size_t n, rb_wf_probe *const *out,
                     rb_err *err)
{
    (void)err;
    const rb_srv *srv = arg;
    for (size_t i = 0; i < n; i++) {
        const rb_job *j = rb_jobs_find(&srv->jobs, jids[i]);
        rb_wf_probe *p = out[i];
        memset(p, 0, sizeof *p);
        if (j && j->state != RB_JOB_PENDING) {
            p->known = RB_WF_STORED;
            view_of(srv, j, &p->view);
            p->children = rb_deps_children(srv, jids[i], &p->n_children);
        } else if (rb_deps_is_done(srv, jids[i])) {
            p->known = RB_WF_SUCCEEDED;
            p->parents = rb_deps_record_parents(srv, jids[i], &p->n_parents);
            p->children = rb_deps_children(srv, jids[i], &p->n_children);
        }
    }
    return 0;
}

/* From the side table and the jobs, at once. */
static void mem_workflow(rb_srv *srv, rb_eng_op *op)
{
    op->rc = rb_workflow_build(op->u.workflow.jid, op->u.workflow.max_nodes, mem_probe, srv,
                               &op->u.workflow.g, &op->err);
    op->u.workflow.found = op->rc == 0;
    if (op->rc == RB_ENOENT)
        op->rc = 0;
    rb_eng_complete(srv, op);
}

/* --- BACKUP --- */

/* The writer's completion of the backup: the copy is durable at its path,
 * or failed (nothing left there). */
static void backup_written(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    struct stat st;
    if (status) {
        op->rc = status;
        op->err = *err;
    } else if (stat(op->u.backup.path, &st) == 0) {
        op->u.backup.bytes = (int64_t)st.st_size;
    }
    rb_eng_complete(op->srv, op);
}

/* The copy is made on the writer thread, between its batches
 * (rb_writer_backup): every request answered before BACKUP arrived is in
 * it, and requests keep being answered while it is made. */
static void mem_backup(rb_srv *srv, rb_eng_op *op)
{
    int rc = rb_writer_backup(srv->writer, op->u.backup.path, backup_written, op, &op->err);
    if (rc) {
        op->rc = rc;
        rb_eng_complete(srv, op);
    }
}

const rb_backend rb_backend_mem = {
    .name = "sqlite",
    .push = mem_push,
    .fetch = mem_fetch,
    .ack = mem_ack,
    .fail = mem_fail,
    .snooze = mem_snooze,
    .extend = mem_extend,
    .track = rb_mem_track_op,
    .flush = mem_flush,
    .mutate = mem_mutate,
    .info = mem_info,
    .queue = mem_queue,
    .latency = mem_latency,
    .job = mem_job,
    .jobs = mem_jobs,
    .workers = mem_workers,
    .job_action = mem_job_action,
    .bulk = mem_bulk,
    .worker_list = mem_worker_list,
    .batch = rb_mem_batch,
    .unique_jobs = true,
    .throttles = true,
    .refetch = rb_srv_refetch,
    .workflow = mem_workflow,
    .backup = mem_backup,
};
