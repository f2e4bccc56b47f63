/* The single-node backend of the job engine (engine/engine.h): operations
 * applied at once to the in-memory indexes (jobs.h), their rows handed to
 * the SQLite group-commit writer, and the op completed when that commit is
 * on disk. Reads (INFO, QUEUE LATENCY, JOB, JOBS) and WORKERS's signals,
 * which live in memory only, complete at once, before rb_eng_submit
 * returns. Loop thread only. */
#include "backend/sqlite/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/sqlite/batch.h"
#include "backend/sqlite/debounce.h"
#include "backend/sqlite/groups.h"
#include "backend/sqlite/throttle.h"
#include "backend/sqlite/track.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/cron.h"
#include "common/log.h"
#include "common/json.h"
#include "engine/metrics.h"
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

/* The writer's completion: the op's changes are on disk, or the commit
 * failed (then memory is ahead of the disk, as for any failed commit:
 * applied is unknown). */
static void commit_status(rb_eng_op *op, int status, const rb_err *err)
{
    if (status) {
        op->rc = status;
        op->err = *err;
        op->applied = RB_ENG_UNKNOWN;
        rb_log(RB_LOG_ERROR, "commit failed: %s", rb_err_msg(err));
    } else {
        op->applied = RB_ENG_APPLIED;
    }
}

static void committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    rb_sq *sq = rb_sq_of(op->eng);
    commit_status(op, status, err);
    rb_eng_complete(sq->eng, op);
    rb_eng_wake(sq->eng, NULL, 0);
    rb_sq_arm(sq);
}

void rb_sq_after_commit(rb_sq *sq, rb_eng_op *op)
{
    rb_writer_then(sq->writer, committed, op);
}

/* --- PUSH, PUSHB --- */

/* The writer's completion of a push: its PENDING jobs become visible
 * (enqueued, or scheduled for their time) and are counted pushed, or are
 * dropped when the commit failed; then as for any op. */
static void push_committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    rb_sq *sq = rb_sq_of(op->eng);
    int64_t now = rb_now_ms();
    if (!status && op->u.push.meta_key) /* the tick is stored: the mirror follows */
        json_object_set_new(sq->cron_ticks, op->u.push.meta_key, json_integer(op->u.push.tick_s));
    for (size_t i = 0; i < op->u.push.n; i++) {
        if (op->u.push.status[i])
            continue;
        rb_job *j = rb_jobs_find(&sq->jobs, rb_json_str(op->u.push.jobs[i], "jid"));
        if (!j || j->state != RB_JOB_PENDING)
            continue; /* flushed meanwhile */
        if (status) {
            if (sq->deps.nodes.size)
                rb_deps_drop(sq, j->jid);
            rb_sq_unique_gone(sq, j);
            rb_sq_debounce_unpushed(sq, j);
            rb_jobs_delete(&sq->jobs, j);
        } else if (sq->deps.nodes.size && rb_deps_pending_waits(sq, j)) {
            rb_deps_pending_commit(sq, j, now); /* waiting for its parents */
        } else if (j->timer.at_ms > now) {
            rb_jobs_set_state(&sq->jobs, j, RB_JOB_SCHEDULED, j->timer.at_ms);
        } else { /* enqueued as of the PUSH, as its stored row says */
            rb_jobs_set_state(&sq->jobs, j, RB_JOB_ENQUEUED, j->timer.at_ms);
        }
        if (!status)
            rb_job_metric(sq->metrics, RB_M_PUSHED, j);
    }
    committed(arg, status, err);
}

/* The stored tick of a cron push's meta row (the mirror of the store's
 * "cron:NAME" rows, sq->cron_ticks) is not older than its tick: nothing
 * to push. */
static bool cron_stale(rb_sq *sq, rb_eng_op *op)
{
    if (!op->u.push.meta_key)
        return false;
    json_t *t = json_object_get(sq->cron_ticks, op->u.push.meta_key);
    if (!t || json_integer_value(t) < op->u.push.tick_s)
        return false;
    op->u.push.stale = true;
    for (size_t i = 0; i < op->u.push.n; i++)
        op->u.push.status[i] = RB_EEXIST;
    return true;
}

static void mem_push(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    if (cron_stale(sq, op)) {
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(sq->eng, op);
        return;
    }
    /* a push naming parents is checked as one unit, and refused whole */
    if ((op->rc = rb_deps_check_push(sq, op->u.push.jobs, op->u.push.n, op->now, &op->err)) ||
        (op->rc = rb_sq_unique_check_push(sq, op->u.push.jobs, op->u.push.n, op->now,
                                           &op->err))) {
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(sq->eng, op);
        return;
    }
    size_t made = 0;
    for (size_t i = 0; i < op->u.push.n; i++) {
        const char *bid;
        /* uniqueness first: a unique job's own jid again is NOTUNIQUE */
        if ((op->u.push.status[i] = rb_sq_unique_check(sq, op->u.push.jobs[i], op->now)))
            continue;
        if ((op->u.push.status[i] = rb_sq_batch_check_push(sq, op->u.push.jobs[i], &bid)))
            continue; /* no such batch */
        rb_debounce_spec ds = {0}; /* checked by rb_eng_flow_check */
        if (rb_debounce_has(op->u.push.jobs[i]) &&
            !rb_debounce_parse(op->u.push.jobs[i], &ds, NULL) && ds.on &&
            rb_sq_debounce_merge(sq, op->u.push.jobs[i], &ds, op->now)) {
            made++; /* merged into its key's pending job */
            continue;
        }
        if (!(op->u.push.status[i] = rb_sq_push(sq, op->u.push.jobs[i]))) {
            made++;
            rb_job *j = rb_jobs_find(&sq->jobs, rb_json_str(op->u.push.jobs[i], "jid"));
            rb_sq_unique_pushed(sq, j, op->u.push.jobs[i], op->now);
            if (ds.on)
                rb_sq_debounce_pushed(sq, j, op->u.push.jobs[i], &ds, op->now);
            if (bid)
                rb_sq_batch_pushed(sq, bid, op->now);
        }
    }
    if (!made && !op->u.push.meta_key) { /* every jid was taken: nothing to commit */
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(sq->eng, op);
        return;
    }
    if (op->u.push.meta_key) { /* in the same commit as the jobs (cron's last tick) */
        char tick[24];
        snprintf(tick, sizeof tick, "%lld", (long long)op->u.push.tick_s);
        rb_writer_meta(sq->writer, op->u.push.meta_key, tick);
    }
    rb_writer_then(sq->writer, push_committed, op);
}

/* --- FETCH --- */

/* The first try's commit: as for any op. */
static void fetch_committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    if (status)
        rb_sq_unreserve(rb_sq_of(op->eng), op->u.fetch.jid);
    committed(arg, status, err);
}

/* A parked FETCH's try committed (mem_refetch). */
static void refetch_committed(void *arg, int status, const rb_err *err)
{
    rb_eng_op *op = arg;
    rb_sq *sq = rb_sq_of(op->eng);
    if (status) /* the job goes back */
        rb_sq_unreserve(sq, op->u.fetch.jid);
    commit_status(op, status, err);
    rb_eng_fetch_tried(sq->eng, op);
    rb_eng_wake(sq->eng, NULL, 0);
    rb_sq_arm(sq);
}

/* Reserves the first ready job of op's queues for it (op's results set,
 * the commit queued with then); false when none is ready. */
static bool fetch_reserve(rb_sq *sq, rb_eng_op *op, void (*then)(void *, int, const rb_err *))
{
    rb_job *j = rb_sq_reserve(sq, op->u.fetch.wid, op->u.fetch.queues, op->u.fetch.n);
    if (!j)
        return false;
    op->u.fetch.jid = rb_xstrdup(j->jid);
    op->u.fetch.job = rb_xstrdup(j->json);
    rb_writer_then(sq->writer, then, op);
    return true;
}

static void mem_fetch(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    if (!fetch_reserve(sq, op, fetch_committed))
        rb_eng_complete(sq->eng, op); /* none ready: nothing changed */
}

static rb_eng_try mem_refetch(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    if (sq->jobs.enqueued == 0)
        return RB_ENG_TRY_NONE;
    return fetch_reserve(sq, op, refetch_committed) ? RB_ENG_TRY_STARTED : RB_ENG_TRY_MISS;
}

/* --- ACK, FAIL, SNOOZE, EXTEND --- */

/* Completes a job op at once with status: nothing changed, so there is no
 * commit to wait for. */
static void decided(rb_sq *sq, rb_eng_op *op, rb_job_status status)
{
    op->u.job.status = status;
    op->applied = RB_ENG_NOT_APPLIED;
    rb_eng_complete(sq->eng, op);
}

/* A job op's change is made: completes it once it is durable. */
static void changed(rb_sq *sq, rb_eng_op *op)
{
    op->u.job.status = RB_JOB_DONE;
    rb_sq_after_commit(sq, op);
}

/* The job a worker's op names when the engine's rule (rb_job_outcome)
 * says to apply it, or NULL after completing op with the rule's outcome
 * (no such job, another worker's, not working, nothing to do). */
static rb_job *job_for(rb_sq *sq, rb_eng_op *op, rb_job_verb verb)
{
    rb_job *j = rb_jobs_find(&sq->jobs, op->u.job.jid);
    rb_job_status st = j ? rb_job_outcome(verb, true, j->state, j->flags, j->wid, op->u.job.wid)
                         : RB_JOB_MISSING;
    if (st == RB_JOB_DONE)
        return j;
    if (st == RB_JOB_NOT_WORKING)
        op->u.job.state = j->state;
    decided(sq, op, st);
    return NULL;
}

static void mem_ack(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_job *j = job_for(sq, op, RB_VERB_ACK);
    if (!j)
        return;
    rb_job_metric(sq->metrics, RB_M_PROCESSED, j);
    rb_sq_batch_acked(sq, j, op->now);
    if (sq->deps.nodes.size) /* a job in a workflow: recorded, its children told */
        rb_deps_succeeded(sq, j, op->now);
    rb_sq_track_ended(sq, j, RB_TRACK_SUCCESS, op->now);
    rb_sq_forget(sq, j);
    sq->total_processed++;
    rb_sq_persist_counters(sq);
    changed(sq, op);
}

static void mem_fail(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_job *j = job_for(sq, op, RB_VERB_FAIL);
    if (!j)
        return;
    j->flags = 0;
    op->rc = rb_sq_fail_job(sq, j, &op->u.job.fail, op->now, &op->err);
    if (op->rc) { /* the job's JSON is unreadable: nothing changed */
        rb_eng_complete(sq->eng, op);
        return;
    }
    changed(sq, op);
}

static void mem_snooze(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_job *j = job_for(sq, op, RB_VERB_SNOOZE);
    if (!j)
        return;
    j->attempts--; /* a snooze does not consume an attempt */
    j->flags = 0;
    free(j->wid);
    j->wid = NULL;
    rb_sq_enqueue(sq, j, op->now + op->u.job.seconds * 1000, op->now);
    rb_sq_persist(sq, j);
    changed(sq, op);
    rb_eng_wake(sq->eng, NULL, 0);
}

static void mem_extend(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_job *j = job_for(sq, op, RB_VERB_EXTEND);
    if (!j)
        return;
    rb_jobs_set_state(&sq->jobs, j, RB_JOB_WORKING, op->now + op->u.job.seconds * 1000);
    rb_sq_persist(sq, j);
    changed(sq, op);
}

/* --- FLUSH, MUTATE --- */

static void mem_flush(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    uint64_t seq = sq->jobs.next_seq;
    rb_jobs_release(&sq->jobs);
    rb_jobs_init(&sq->jobs);
    rb_sq_groups_flush(sq); /* holds and buckets: everything goes (docs/protocol.md, FLUSH) */
    rb_deps_release(&sq->deps);
    rb_deps_init(&sq->deps);
    sq->jobs.next_seq = seq;
    sq->total_processed = sq->total_failures = 0;
    rb_sq_batches_flush(sq);
    rb_sq_unique_flush(sq);
    rb_sq_debounce_flush(sq);
    rb_sq_track_flush(sq);
    rb_writer_clear(sq->writer);
    json_object_clear(sq->cron_ticks); /* the meta rows go too */
    rb_sq_after_commit(sq, op);
}

/* MUTATE's cmd applied to one job of its target; j may be freed. */
static void mutate_one(rb_sq *sq, const char *cmd, rb_job *j, int64_t now)
{
    if (!strcmp(cmd, "discard") || !strcmp(cmd, "clear")) {
        rb_sq_forget(sq, j);
        return;
    }
    if (!strcmp(cmd, "kill")) {
        if (j->state == RB_JOB_DEAD)
            return;
        rb_jobs_set_state(&sq->jobs, j, RB_JOB_DEAD,
                          now + sq->cfg->server.dead_retention_s * 1000);
        rb_sq_persist(sq, j);
        rb_sq_unique_died(sq, j);
        rb_sq_debounce_started(sq, j); /* no longer pending */
        rb_deps_died(sq, j, now);
        return;
    }
    /* requeue: a dead job naming parents goes back under them when they
     * hold it (docs/workflows.md) */
    bool was_dead = j->state == RB_JOB_DEAD;
    j->flags = 0;
    if (!was_dead || !rb_deps_retried(sq, j, now)) {
        rb_sq_enqueue(sq, j, now, now);
        rb_sq_persist(sq, j);
    }
    if (was_dead)
        rb_deps_requeued(sq, j, now);
}

static void mem_mutate(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    const rb_mutation *m = &op->u.mutate.m;
    size_t changed = 0;
    if (m->jids) {
        for (size_t i = 0; i < m->n_jids; i++) {
            rb_job *j = rb_jobs_find(&sq->jobs, m->jids[i]);
            if (j && (int)j->state == m->target && rb_mutation_matches(m, j->json)) {
                mutate_one(sq, m->cmd, j, op->now);
                changed++;
            }
        }
    } else {
        rb_list *l = rb_jobs_state_list(&sq->jobs, m->target);
        for (rb_link *e = l->head, *next; e; e = next) {
            next = e->next;
            rb_job *j = rb_job_of_link(e);
            if (rb_mutation_matches(m, j->json)) {
                mutate_one(sq, m->cmd, j, op->now);
                changed++;
            }
        }
    }
    op->u.mutate.changed = changed;
    rb_sq_after_commit(sq, op);
    rb_eng_wake(sq->eng, NULL, 0);
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
static json_t *group_commit_info(const rb_sq *sq)
{
    rb_writer_stats st;
    rb_writer_get_stats(sq->writer, &st);
    double per = st.commits ? (double)st.requests / (double)st.commits : 0.0;
    double avg = st.commits ? (double)st.commit_us / (double)st.commits : 0.0;
    return json_pack("{s:{s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:I}}", "group_commit", "commits",
                     (json_int_t)st.commits, "failed", (json_int_t)st.failed, "requests",
                     (json_int_t)st.requests, "rows", (json_int_t)st.rows, "requests_per_commit",
                     per, "commit_us_total", (json_int_t)st.commit_us, "commit_us_avg", avg,
                     "commit_us_max", (json_int_t)st.commit_us_max);
}

static void mem_info(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_eng_info *f = &op->u.info;
    size_t nq = sq->jobs.queues.size + 1;
    *f = (rb_eng_info){
        .latency = f->latency,
        .latency_s = f->latency ? rb_xcalloc(nq, sizeof(double)) : NULL,
        .store = sq->store && sq->store->ops ? sq->store->ops->name : "?",
        .processed = (int64_t)sq->total_processed,
        .failures = (int64_t)sq->total_failures,
        .enqueued = (int64_t)sq->jobs.enqueued,
        .scheduled = (int64_t)sq->jobs.scheduled.size,
        .retries = (int64_t)sq->jobs.retries.size,
        .dead = (int64_t)sq->jobs.dead.size,
        .working = (int64_t)sq->jobs.working.size,
        .waiting = (int64_t)sq->jobs.waiting.size,
        .blocked = (int64_t)sq->jobs.blocked.size,
        .workers = (int64_t)rb_eng_workers_count(sq->eng),
        .queues = rb_xcalloc(nq, sizeof(rb_queue_size)),
        .rebound = group_commit_info(sq),
    };
    json_object_set_new(f->rebound, "batches", rb_sq_batch_info(sq));
    rb_sq_unique_info(sq, f->rebound);
    rb_sq_debounce_info(sq, f->rebound);
    rb_sq_throttle_info(sq, f->rebound, op->now);
    rb_sq_groups_info(sq, f->rebound, op->now);
    rb_table_each(&sq->jobs.queues, info_queue, op);
    rb_eng_complete(sq->eng, op);
}

/* Pauses or resumes q, persistently. */
static void queue_pause(rb_sq *sq, rb_queue *q, bool paused)
{
    char key[256];
    snprintf(key, sizeof key, "paused:%s", q->name);
    q->paused = paused;
    rb_writer_meta(sq->writer, key, paused ? "1" : NULL);
}

/* QUEUE's change to q (the op is the arg of rb_table_each for "*"). */
typedef struct job_list {
    rb_job **v;
    size_t n;
} job_list;

static void list_ready(rb_group *g, void *arg)
{
    job_list *l = arg;
    for (int p = 0; p < RB_PRIORITIES; p++)
        for (rb_link *e = g->ready[p].head; e; e = e->next)
            l->v[l->n++] = rb_job_of_link(e);
}

/* Deletes every ready job of q, whatever its group's turn or hold (a
 * group goes with its last job). */
static void forget_ready(rb_sq *sq, rb_queue *q)
{
    job_list l = {rb_xcalloc(q->size + 1, sizeof *l.v), 0};
    rb_queue_each_group(q, list_ready, &l);
    for (size_t i = 0; i < l.n; i++)
        rb_sq_forget(sq, l.v[i]);
    free(l.v);
}

static void queue_apply(void *e, void *arg)
{
    rb_queue *q = e;
    rb_eng_op *op = arg;
    switch (op->u.queue.verb) {
    case RB_ENG_QUEUE_PAUSE:
        queue_pause(rb_sq_of(op->eng), q, true);
        rb_sq_queue_known(rb_sq_of(op->eng), q, true); /* as Faktory's PauseQueue */
        break;
    case RB_ENG_QUEUE_RESUME:
        queue_pause(rb_sq_of(op->eng), q, false);
        break;
    case RB_ENG_QUEUE_REMOVE:
        forget_ready(rb_sq_of(op->eng), q); /* held groups' jobs too */
        rb_sq_group_confs_queue_removed(rb_sq_of(op->eng), q->name, op->now);
        if (q->paused)
            queue_pause(rb_sq_of(op->eng), q, false);
        rb_sq_queue_known(rb_sq_of(op->eng), q, false);
        break;
    }
}

static void mem_queue(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    for (int i = 0; i < op->u.queue.n; i++) {
        const char *name = op->u.queue.names[i];
        if (!strcmp(name, "*")) {
            rb_table_each(&sq->jobs.queues, queue_apply, op);
            continue;
        }
        rb_queue *q = rb_jobs_queue(&sq->jobs, name, op->u.queue.verb == RB_ENG_QUEUE_PAUSE);
        if (q)
            queue_apply(q, op);
    }
    if (op->u.queue.read_back) {
        int n = op->u.queue.n;
        op->u.queue.sizes = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.sizes);
        op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
        for (int i = 0; i < n; i++) {
            rb_queue *q = rb_jobs_queue(&sq->jobs, op->u.queue.names[i], false);
            if (!q)
                continue;
            op->u.queue.sizes[i] = (rb_queue_size){rb_xstrdup(q->name), (int64_t)q->size,
                                                   q->paused};
            op->u.queue.latency[i] = rb_queue_latency_s(q, op->now);
        }
    }
    rb_sq_after_commit(sq, op);
    rb_eng_wake(sq->eng, NULL, 0);
}

static void mem_latency(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    int n = op->u.queue.n;
    op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
    for (int i = 0; i < n; i++) {
        rb_queue *q = rb_jobs_queue(&sq->jobs, op->u.queue.names[i], false);
        op->u.queue.latency[i] = q ? rb_queue_latency_s(q, op->now) : 0.0;
    }
    rb_eng_complete(sq->eng, op);
}

/* j as the engine's reads show it. */
static void view_of(const rb_sq *sq, const rb_job *j, rb_job_view *v)
{
    *v = (rb_job_view){
        .jid = rb_xstrdup(j->jid),
        .queue = rb_xstrdup(rb_job_queue(j)->name),
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
        json_t *w = rb_deps_waits_for(sq, j->jid);
        v->waits_for = w ? json_dumps(w, JSON_COMPACT) : NULL;
        json_decref(w);
        v->blocked_by = rb_deps_blocked_by(sq, j->jid);
    }
}

static void mem_job(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    rb_job *j = rb_jobs_find(&sq->jobs, op->u.lookup.jid);
    op->u.lookup.found = j && j->state != RB_JOB_PENDING;
    if (op->u.lookup.found) {
        view_of(sq, j, &op->u.lookup.view);
        op->u.lookup.view.lock_until_ms = rb_sq_unique_lock_until(sq, j->jid);
        op->u.lookup.view.debounce = rb_sq_debounce_view(sq, j);
        rb_sq_job_hold(sq, j, op->now, &op->u.lookup.view);
    } else {
        op->u.lookup.aliased =
            rb_sq_debounce_alias(sq, op->u.lookup.jid, op->now, &op->u.lookup.alias);
    }
    rb_eng_complete(sq->eng, op);
}

/* A listing's page being filled: every match is counted, those from the
 * offset on are viewed until the page is full. */
typedef struct page {
    const rb_sq *sq;
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
    view_of(pg->sq, j, &pg->views[pg->n++]);
}

/* g's matching jobs in claim order: priority high first, FIFO. */
static void page_group(page *pg, const rb_group *g)
{
    for (int p = RB_PRIORITIES - 1; p >= 0; p--)
        for (rb_link *e = g->ready[p].head; e; e = e->next) {
            rb_job *j = rb_job_of_link(e);
            if (rb_job_filter_matches(pg->f, g->queue->name, j->json))
                page_add(pg, j);
        }
}

typedef struct group_list {
    const rb_group **v;
    size_t n;
} group_list;

static void list_group(rb_group *g, void *arg)
{
    group_list *l = arg;
    if (g->size)
        l->v[l->n++] = g;
}

static int group_by_name(const void *a, const void *b)
{
    return strcmp((*(const rb_group *const *)a)->name, (*(const rb_group *const *)b)->name);
}

/* q's matching jobs by group (the ungrouped jobs first, then by name),
 * then in claim order inside a group (docs/protocol.md, JOBS). */
static void page_queue(page *pg, const rb_queue *q)
{
    if (pg->f->group) { /* one group's */
        const rb_group *g = rb_queue_group(q, pg->f->group);
        if (g)
            page_group(pg, g);
        return;
    }
    if (!q->groups.size) { /* a queue without groups */
        page_group(pg, q->none);
        return;
    }
    group_list l = {rb_xcalloc(q->groups.size + 1, sizeof *l.v), 0};
    rb_queue_each_group(q, list_group, &l); /* held groups too: not only the turns */
    qsort(l.v, l.n, sizeof *l.v, group_by_name);
    for (size_t i = 0; i < l.n; i++)
        page_group(pg, l.v[i]);
    free(l.v);
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

static void mem_jobs(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    const rb_job_filter *f = &op->u.jobs.f;
    page pg = {.sq = sq, .f = f};
    if (f->state == RB_JOB_ENQUEUED && f->queue) {
        const rb_queue *q = rb_jobs_queue(&sq->jobs, f->queue, false);
        if (q)
            page_queue(&pg, q);
    } else if (f->state == RB_JOB_ENQUEUED) {
        queue_list l = {rb_xcalloc(sq->jobs.queues.size + 1, sizeof *l.v), 0};
        rb_table_each(&sq->jobs.queues, list_queue, &l);
        qsort(l.v, l.n, sizeof *l.v, by_name);
        for (size_t i = 0; i < l.n; i++)
            page_queue(&pg, l.v[i]);
        free(l.v);
    } else {
        rb_list *l = rb_jobs_state_list(&sq->jobs, f->state);
        const rb_job **v = rb_xcalloc(l->size + 1, sizeof *v);
        size_t n = 0;
        for (rb_link *e = l->head; e; e = e->next) {
            const rb_job *j = rb_job_of_link(e);
            if (rb_job_filter_matches(f, rb_job_queue(j)->name, j->json))
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
    rb_eng_complete(sq->eng, op);
}

/* Signals live in memory only: nothing to commit. */
static void set_signal(rb_worker *w, void *arg)
{
    rb_eng_op *op = arg;
    w->signal = op->u.workers.signal;
    op->u.workers.changed++;
}

static void mem_workers(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    op->u.workers.changed = 0;
    if (op->u.workers.wid) {
        rb_worker *w = rb_eng_worker_get(sq->eng, op->u.workers.wid, false);
        if (w)
            set_signal(w, op);
    } else {
        rb_eng_workers_each(sq->eng, set_signal, op);
    }
    rb_eng_complete(sq->eng, op);
}

static json_t *mem_cron_ticks(rb_eng *eng)
{
    return json_deep_copy(rb_sq_of(eng)->cron_ticks);
}

/* A single node keeps its workers' beats and signals in the engine's
 * table (engine/workers.h): HELLO has nothing to store. */
static void mem_hello(rb_eng *eng, rb_eng_op *op)
{
    rb_eng_complete(eng, op);
}

static void mem_beat(rb_eng *eng, rb_eng_op *op)
{
    rb_worker *w = rb_eng_worker_get(eng, op->u.worker.wid, false);
    if (!w) {
        op->rc = rb_err_set(&op->err, RB_ENOENT, RB_UNKNOWN_WORKER, op->u.worker.wid);
    } else {
        w->last_beat_ms = op->now;
        op->u.worker.signal = w->signal;
    }
    rb_eng_complete(eng, op);
}

/* --- the HTTP API's own --- */

/* Checks, changes and reads back at once; answered after the commit. */
static void mem_job_action(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    const char *jid = op->u.job_action.jid;
    rb_job *j = rb_jobs_find(&sq->jobs, jid);
    op->u.job_action.found = j && j->state != RB_JOB_PENDING;
    if (!op->u.job_action.found || !rb_job_state_mutable(j->state)) {
        if (op->u.job_action.found)
            op->u.job_action.prev_state = (int)j->state;
        rb_eng_complete(sq->eng, op); /* refused: nothing to commit */
        return;
    }
    op->u.job_action.prev_state = (int)j->state;
    mutate_one(sq, op->u.job_action.cmd, j, op->now);
    j = rb_jobs_find(&sq->jobs, jid);
    op->u.job_action.state = j ? (int)j->state : 0;
    rb_sq_after_commit(sq, op);
    rb_eng_wake(sq->eng, NULL, 0);
}

static void bulk_one(rb_sq *sq, rb_eng_op *op, rb_job *j)
{
    const rb_job_filter *f = &op->u.bulk.f;
    if ((int)j->state != f->state || !rb_job_filter_matches(f, rb_job_queue(j)->name, j->json))
        return;
    mutate_one(sq, op->u.bulk.cmd, j, op->now);
    op->u.bulk.changed++;
}

static void mem_bulk(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    if (op->u.bulk.jids) {
        for (size_t i = 0; i < op->u.bulk.n_jids; i++) {
            rb_job *j = rb_jobs_find(&sq->jobs, op->u.bulk.jids[i]);
            if (j)
                bulk_one(sq, op, j);
        }
    } else {
        rb_list *l = rb_jobs_state_list(&sq->jobs, op->u.bulk.f.state);
        size_t n = l->size; /* a job moved to the end of the list is not seen twice */
        for (rb_link *e = l->head, *next; e && n > 0; e = next, n--) {
            next = e->next;
            bulk_one(sq, op, rb_job_of_link(e));
        }
    }
    rb_sq_after_commit(sq, op);
    rb_eng_wake(sq->eng, NULL, 0);
}

/* This node's workers, in memory only. */
static void list_worker(rb_worker *w, void *arg)
{
    rb_eng_op *op = arg;
    op->u.worker_list.v[op->u.worker_list.n++] =
        (rb_eng_worker){.wid = rb_xstrdup(w->wid), .beat_ms = w->last_beat_ms, .signal = w->signal};
}

static void mem_worker_list(rb_eng *eng, rb_eng_op *op)
{
    op->u.worker_list.v = rb_xcalloc(rb_eng_workers_count(eng) + 1, sizeof *op->u.worker_list.v);
    op->u.worker_list.n = 0;
    rb_eng_workers_each(eng, list_worker, op);
    rb_eng_complete(eng, op);
}

/* --- workflows --- */

static int mem_probe(void *arg, const char *const *jids, size_t n, rb_wf_probe *const *out,
                     rb_err *err)
{
    (void)err;
    const rb_sq *sq = arg;
    for (size_t i = 0; i < n; i++) {
        const rb_job *j = rb_jobs_find(&sq->jobs, jids[i]);
        rb_wf_probe *p = out[i];
        memset(p, 0, sizeof *p);
        if (j && j->state != RB_JOB_PENDING) {
            p->known = RB_WF_STORED;
            view_of(sq, j, &p->view);
            p->children = rb_deps_children(sq, jids[i], &p->n_children);
        } else if (rb_deps_is_done(sq, jids[i])) {
            p->known = RB_WF_SUCCEEDED;
            p->parents = rb_deps_record_parents(sq, jids[i], &p->n_parents);
            p->children = rb_deps_children(sq, jids[i], &p->n_children);
        }
    }
    return 0;
}

/* From the side table and the jobs, at once. */
static void mem_workflow(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    op->rc = rb_workflow_build(op->u.workflow.jid, op->u.workflow.max_nodes, mem_probe, sq,
                               &op->u.workflow.g, &op->err);
    op->u.workflow.found = op->rc == 0;
    if (op->rc == RB_ENOENT)
        op->rc = 0;
    rb_eng_complete(sq->eng, op);
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
    rb_eng_complete(op->eng, op);
}

/* The copy is made on the writer thread, between its batches
 * (rb_writer_backup): every request answered before BACKUP arrived is in
 * it, and requests keep being answered while it is made. */
static void mem_backup(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    int rc = rb_writer_backup(sq->writer, op->u.backup.path, backup_written, op, &op->err);
    if (rc) {
        op->rc = rc;
        rb_eng_complete(sq->eng, op);
    }
}

/* A change may move the earliest deadline (a lease, a retry, a scheduled
 * job, a succeeded record's expiry): the timer is re-armed after every op
 * that changes jobs. */
#define ARMED(fn)                                                                            \
    static void fn##_armed(rb_eng *eng, rb_eng_op *op)                                      \
    {                                                                                        \
        rb_sq *sq = rb_sq_of(eng); /* op may be freed by fn */                               \
        fn(eng, op);                                                                         \
        rb_sq_arm(sq);                                                                       \
    }
ARMED(mem_push)
ARMED(mem_fetch)
ARMED(mem_ack)
ARMED(mem_fail)
ARMED(mem_snooze)
ARMED(mem_extend)
ARMED(rb_sq_track_op)
ARMED(mem_flush)
ARMED(mem_mutate)
ARMED(mem_queue)
ARMED(mem_job_action)
ARMED(mem_bulk)
ARMED(rb_sq_batch)

const rb_backend rb_backend_sqlite = {
    .name = "sqlite",
    .open = rb_sq_open,
    .attach = rb_sq_attach,
    .close = rb_sq_close,
    .release = rb_sq_release,
    .push = mem_push_armed,
    .fetch = mem_fetch_armed,
    .ack = mem_ack_armed,
    .fail = mem_fail_armed,
    .snooze = mem_snooze_armed,
    .extend = mem_extend_armed,
    .track = rb_sq_track_op_armed,
    .flush = mem_flush_armed,
    .mutate = mem_mutate_armed,
    .info = mem_info,
    .queue = mem_queue_armed,
    .latency = mem_latency,
    .job = mem_job,
    .jobs = mem_jobs,
    .workers = mem_workers,
    .job_action = mem_job_action_armed,
    .bulk = mem_bulk_armed,
    .worker_list = mem_worker_list,
    .batch = rb_sq_batch_armed,
    .unique_jobs = true,
    .groups = true,      /* groups in turn at FETCH (groups.c) */
    .debounce = true,    /* custom.debounce (debounce.c) */
    .flow_limits = true, /* [groups] limits and [throttles] rates (groups.c) */
    .group = rb_sq_group_op, /* overrides and pauses (group_conf.c) */
    .throttles = true,
    .refetch = mem_refetch,
    .workflow = mem_workflow,
    .backup = mem_backup,
    .cron_ticks = mem_cron_ticks,
    .hello = mem_hello,
    .beat = mem_beat,
};
