/* The distributed backend of the job engine (engine/engine.h): each
 * operation becomes a request to a database thread (mode.h), which runs
 * it as one transaction on the shared PostgreSQL database (ACK and FAIL
 * batched with the others the thread takes at once); its completion comes
 * back to the loop thread and completes the op. */
#include "backend/pg/backend.h"

#include <stdlib.h>
#include <string.h>

#include "backend/pg/mode.h"
#include "backend/pg/registry.h"
#include "backend/pg/request.h"
#include "engine/depend.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/metrics.h"

/* The engine's labels hold every queue name a job may have. */
_Static_assert(RB_PG_QUEUE_MAX >= RB_QUEUE_NAME_MAX, "rb_pg_labels.queue is too short");

/* A push's results: each job's status, the pushed ones counted, and the
 * parked FETCHes of this node woken for those enqueued at once (before
 * the NOTIFY reaches the other nodes; before op's done frees the queue
 * names). */
static void push_results(rb_eng *eng, rb_eng_op *op, rb_pgreq *r)
{
    size_t n = r->u.push.n, n_ready = 0;
    const char **ready = rb_xcalloc(n + 1, sizeof *ready);
    size_t made = 0;
    op->u.push.stale = r->u.push.stale;
    for (size_t i = 0; i < n; i++) {
        const rb_pg_new_job *j = &r->u.push.jobs[i];
        op->u.push.status[i] = r->u.push.status[i];
        if (r->u.push.status[i]) /* the jid taken, no such batch, or not unique */
            continue;
        made++;
        bool merged = r->u.push.deb && r->u.push.deb[i].merged;
        rb_metrics_event(eng->metrics, merged ? RB_M_DEBOUNCED : RB_M_PUSHED, j->queue, j->json);
        if (j->at_ms <= r->now && !(r->u.push.handed && r->u.push.handed[i]))
            ready[n_ready++] = j->queue; /* (a job handed off went to its FETCH) */
        else if (j->at_ms > r->now && r->u.push.deb && r->u.push.deb[i].on)
            rb_pgmode_retry_due(eng, j->at_ms); /* promoted at its run time */
    }
    if (!made)
        op->applied = RB_ENG_NOT_APPLIED; /* every jid was taken (or batch unknown) */
    if (n_ready)
        rb_pgmode_wake(eng, ready, n_ready);
    free(ready);
}

/* Loop thread, r succeeded: its results to op, and what this node's
 * /metrics counts of them. */
static void results(rb_eng *eng, rb_eng_op *op, rb_pgreq *r)
{
    switch (op->kind) {
    case RB_ENG_PUSH:
        push_results(eng, op, r);
        return;
    case RB_ENG_ACK:
        op->u.job.status = (rb_job_status)r->u.ack.status;
        if (op->u.job.status == RB_JOB_DONE)
            rb_metrics_event_labels(eng->metrics, RB_M_PROCESSED, r->u.ack.labels.queue,
                                    r->u.ack.labels.jobtype);
        break;
    case RB_ENG_FAIL:
        op->u.job.status = (rb_job_status)r->u.fail.res.status;
        if (op->u.job.status == RB_JOB_DONE)
            rb_pgmode_count_failure(eng, &r->u.fail.res);
        if (op->u.job.status == RB_JOB_DONE && r->u.fail.res.outcome == RB_OUTCOME_RETRY)
            rb_pgmode_retry_due(eng, rb_now_ms() + r->u.fail.res.delay_ms);
        break;
    case RB_ENG_SNOOZE:
    case RB_ENG_EXTEND:
        op->u.job.status = (rb_job_status)r->u.ref.status;
        op->u.job.state = (rb_job_state)r->u.ref.state;
        break;
    case RB_ENG_INFO: /* this node's own */
        if (op->u.info.rebound) {
            rb_eng_health h;
            rb_eng_health_of(eng, &h);
            json_object_set_new(op->u.info.rebound, "prefetch", rb_pgmode_prefetch_json(eng));
            json_object_set_new(op->u.info.rebound, "database", rb_eng_health_json(&h, true));
        }
        return;
    default:
        return;
    }
    if (op->u.job.status != RB_JOB_DONE)
        op->applied = RB_ENG_NOT_APPLIED; /* refused, or nothing to do */
}

/* Whether op made jobs ready at once, for the parked FETCHes. */
static bool readies(const rb_eng_op *op)
{
    if (op->rc)
        return false;
    if (op->kind == RB_ENG_MUTATE)
        return !strcmp(op->u.mutate.m.cmd, "requeue");
    if (op->kind == RB_ENG_BULK)
        return op->u.bulk.changed && !strcmp(op->u.bulk.cmd, "requeue");
    if (op->kind == RB_ENG_JOB_ACTION)
        return op->u.job_action.state == RB_JOB_ENQUEUED;
    if (op->kind == RB_ENG_QUEUE) /* a resumed queue's jobs */
        return op->u.queue.verb == RB_ENG_QUEUE_RESUME;
    return op->kind == RB_ENG_SNOOZE && op->u.job.status == RB_JOB_DONE && op->u.job.seconds == 0;
}

/* Whether op only reads (a lost connection changed nothing either way). */
static bool op_reads(const rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_INFO:
    case RB_ENG_LATENCY:
    case RB_ENG_JOB:
    case RB_ENG_JOBS:
    case RB_ENG_WORKER_LIST:
    case RB_ENG_WORKFLOW:
        return true;
    case RB_ENG_BATCH:
        return op->u.batch.verb == RB_ENG_BATCH_OPEN || op->u.batch.verb == RB_ENG_BATCH_STATUS ||
               op->u.batch.verb == RB_ENG_BATCH_VIEW || op->u.batch.verb == RB_ENG_BATCH_LIST;
    case RB_ENG_TRACK:
        return op->u.track.get;
    default:
        return false;
    }
}

void rb_pgmode_doubt_text(rb_eng_op *op, int rc)
{
    if (op_reads(op) || !rb_eng_store_error(rc))
        return;
    const char *tail;
    if (rc != RB_EDOUBT)
        tail = "; not applied";
    else if (op->kind == RB_ENG_FETCH)
        tail = "; outcome unknown: a job may have been reserved for this worker, it runs again "
               "when its reservation ends";
    else
        tail = "; outcome unknown: the commit was sent and its reply lost, the change may or "
               "may not have been made";
    size_t n = strlen(op->err.msg);
    snprintf(op->err.msg + n, sizeof op->err.msg - n, "%s", tail);
}

/* Loop thread: the request ran; its results go to the op. */
static void req_done(rb_eng *eng, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    if (r->rc == RB_EINVAL || r->rc == RB_ENOTUNIQUE ||
        (op->kind == RB_ENG_BATCH && r->rc == RB_ENOENT)) {
        /* refused (a push's depends_on or unique parent, no such batch):
         * nothing changed */
        op->rc = r->rc;
        op->err = r->err;
        op->applied = RB_ENG_NOT_APPLIED;
    } else if (r->rc) {
        rb_pgmode_storage_error(eng, r); /* logs; r has no connection to answer */
        op->rc = r->rc;
        op->err = r->err;
        /* a transaction that failed was rolled back, unless the connection
         * broke while its COMMIT was in flight */
        op->applied = r->rc == RB_EDOUBT ? RB_ENG_UNKNOWN : RB_ENG_NOT_APPLIED;
        rb_pgmode_doubt_text(op, r->rc);
    } else {
        op->applied = RB_ENG_APPLIED;
        results(eng, op, r);
    }
    rb_pgreq_finish(eng, r);
    bool kick = readies(op);
    rb_eng_complete(eng, op);
    if (kick)
        rb_pgmode_wake(eng, NULL, 0);
}

/* Whether op is administration or inspection, which may read or change
 * many rows ([storage] admin_timeout; BATCH's client verbs and TRACK are a
 * worker's, bounded by request_timeout). */
static bool op_slow(const rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_BATCH:
        return op->u.batch.verb == RB_ENG_BATCH_VIEW || op->u.batch.verb == RB_ENG_BATCH_LIST;
    case RB_ENG_TRACK:
        return false;
    default:
        return true; /* post's other callers: FLUSH, MUTATE, INFO, QUEUE, ... */
    }
}

/* Posts op to a database thread, to run call there. */
static void post(rb_eng *eng, rb_eng_op *op, void (*call)(rb_pg *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new_call(op, NULL, call, req_done);
    r->slow = op_slow(op);
    rb_pgreq_post(eng, r);
}

/* --- PUSH, PUSHB --- */

static void dist_push(rb_eng *eng, rb_eng_op *op)
{
    size_t n = op->u.push.n;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_PUSH);
    r->u.push.jobs = rb_xcalloc(n, sizeof *r->u.push.jobs);
    r->u.push.texts = rb_xcalloc(n, sizeof *r->u.push.texts);
    r->u.push.status = rb_xcalloc(n, sizeof *r->u.push.status);
    r->u.push.n = n;
    for (size_t i = 0; i < n; i++) {
        r->u.push.deps = r->u.push.deps || rb_dep_has(op->u.push.jobs[i]);
        rb_pg_job_from_json(op->u.push.jobs[i], op->now, (int)eng->cfg->server.reserve_for_s,
                            &r->u.push.jobs[i], &r->u.push.texts[i]);
        rb_debounce_spec ds; /* checked by rb_eng_flow_check */
        if (rb_debounce_has(op->u.push.jobs[i]) &&
            !rb_debounce_parse(op->u.push.jobs[i], &ds, NULL) && ds.on) {
            if (!r->u.push.deb)
                r->u.push.deb = rb_xcalloc(n, sizeof *r->u.push.deb);
            rb_pg_debounce *d = &r->u.push.deb[i];
            *d = (rb_pg_debounce){.on = true, .key = ds.key, .for_ms = ds.for_ms,
                                  .max_ms = ds.max_ms};
            rb_debounce_hash(op->u.push.jobs[i], ds.key, d->hash);
        }
        const char *bid = NULL;
        rb_err berr = {0};
        if (rb_batch_member_bid(op->u.push.jobs[i], &bid, &berr) || !bid)
            continue; /* a bad type was refused by validation */
        if (!r->u.push.bids)
            r->u.push.bids = rb_xcalloc(n, sizeof *r->u.push.bids);
        r->u.push.bids[i] = rb_xstrdup(bid);
    }
    r->u.push.meta_key = op->u.push.meta_key; /* a cron tick's condition */
    r->u.push.tick_s = op->u.push.tick_s;
    r->data = op;
    r->done = req_done;
    /* with the claims of the FETCHes parked here that take its jobs */
    rb_pgreq_post_with(eng, r, rb_pgmode_hand_off(eng, r));
}

/* --- FETCH: the first claim; fetch.c keeps a waiting FETCH --- */

static void dist_fetch(rb_eng *eng, rb_eng_op *op)
{
    rb_pgmode_fetch(eng, op);
}

/* --- ACK, FAIL, SNOOZE, EXTEND --- */

/* A request of kind for job op op, naming its jid and wid (copied: the
 * op's wid is only borrowed while it is submitted). */
static rb_pgreq *job_request(rb_eng_op *op, rb_pgreq_kind kind)
{
    rb_pgreq *r = rb_pgreq_new(kind);
    r->jid = rb_xstrdup(op->u.job.jid);
    r->wid = op->u.job.wid ? rb_xstrdup(op->u.job.wid) : NULL;
    r->data = op;
    r->done = req_done;
    return r;
}

static void dist_ack(rb_eng *eng, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_ACK);
    r->u.ack.ref = (rb_pg_ref){r->jid, r->wid};
    /* with the worker's next job, in the same transaction (prefetch.c) */
    rb_pgreq_post_with(eng, r, rb_pgmode_prefetch_claim(eng, r->wid));
}

static void dist_fail(rb_eng *eng, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_FAIL);
    r->u.fail.f = (rb_pg_failure){.ref = {r->jid, r->wid}, .in = op->u.job.fail};
    rb_pgreq_post_with(eng, r, rb_pgmode_prefetch_claim(eng, r->wid)); /* as an ACK */
}

static void snooze_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, op->u.job.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
    /* a slot came back (a SNOOZE for 0 s notifies the requeue itself); the
     * job's queue is not reported, so every throttled queue is told */
    rb_err nerr = {0};
    if (!r->rc && r->u.ref.status == RB_JOB_DONE && op->u.job.seconds > 0)
        (void)rb_pg_throttle_notify(pg, NULL, 0, &nerr);
}

static void extend_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_extend(pg, &ref, op->u.job.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void dist_snooze(rb_eng *eng, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_CALL);
    r->call = snooze_call;
    rb_pgreq_post(eng, r);
}

static void dist_extend(rb_eng *eng, rb_eng_op *op)
{
    rb_pgreq *r = job_request(op, RB_PGR_CALL);
    r->call = extend_call;
    rb_pgreq_post(eng, r);
}

/* --- FLUSH, MUTATE --- */

static void flush_call(rb_pg *pg, rb_pgreq *r)
{
    r->rc = rb_pg_flush(pg, &r->err);
}

static void dist_flush(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, flush_call);
}

static void mutate_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_mutate(pg, &op->u.mutate.m, op->now, &op->u.mutate.changed, &r->err);
}

static void dist_mutate(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, mutate_call);
}

/* --- the administration and inspection commands --- */

static void info_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_info in;
    if ((r->rc = rb_pg_info_get(pg, &in, &r->err)))
        return;
    bool latency = op->u.info.latency;
    op->u.info = (rb_eng_info){
        .latency = latency,
        .store = "postgresql",
        .processed = in.processed,
        .failures = in.failures,
        .enqueued = in.enqueued,
        .scheduled = in.scheduled,
        .retries = in.retries,
        .dead = in.dead,
        .working = in.working,
        .waiting = in.waiting,
        .blocked = in.blocked,
        .workers = in.workers,
        .queues = in.queues, /* taken over */
        .n_queues = in.n_queues,
        .rebound = json_pack("{s:{s:s, s:i}}", "storage", "backend", "postgresql",
                             "schema_version", RB_PG_SCHEMA_VERSION),
    };
    int64_t open = 0, stored = 0, callbacks = 0, locks = 0, rejected = 0, expired = 0;
    if ((r->rc = rb_pg_batch_info(pg, &open, &stored, &callbacks, &r->err)) ||
        (r->rc = rb_pg_unique_info(pg, &locks, &rejected, &expired, &r->err)))
        return;
    int64_t pending = 0, merged = 0;
    if ((r->rc = rb_pg_debounce_info(pg, &pending, &merged, &r->err)))
        return;
    json_object_set_new(op->u.info.rebound, "debounce",
                        json_pack("{s:I, s:I}", "pending", (json_int_t)pending, "merged",
                                  (json_int_t)merged));
    json_object_set_new(op->u.info.rebound, "expired", json_integer(expired));
    json_object_set_new(op->u.info.rebound, "unique",
                        json_pack("{s:I, s:I}", "locks", (json_int_t)locks, "rejected",
                                  (json_int_t)rejected));
    json_object_set_new(op->u.info.rebound, "batches",
                        json_pack("{s:I, s:I, s:I}", "open", (json_int_t)open, "stored",
                                  (json_int_t)stored, "callbacks", (json_int_t)callbacks));
    json_t *throttles = NULL;
    if ((r->rc = rb_pg_throttle_info(pg, rb_now_ms(), &throttles, &r->err)))
        return;
    if (throttles)
        json_object_set_new(op->u.info.rebound, "throttles", throttles);
    rb_group_req all = {.verb = RB_GROUP_LIST}; /* every queue's groups counted */
    rb_pg_group_out g;
    if ((r->rc = rb_pg_group(pg, &all, op->now, &g, &r->err)))
        return;
    rb_group_holds *holds;
    if (!(r->rc = rb_pg_group_holds(pg, g.sums, g.n_sums, &holds, &r->err)))
        json_object_set_new(op->u.info.rebound, "groups",
                            rb_groups_info_json(g.sums, g.n_sums, holds));
    free(holds);
    for (size_t i = 0; i < g.n_sums; i++)
        free(g.sums[i].queue);
    free(g.sums);
    if (r->rc)
        return;
    if (!latency)
        return;
    size_t n = in.n_queues;
    const char **names = rb_xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = in.queues[i].name;
    op->u.info.latency_s = rb_xcalloc(n + 1, sizeof *op->u.info.latency_s);
    r->rc = n ? rb_pg_queue_latency(pg, names, (int)n, rb_now_ms(), op->u.info.latency_s, &r->err)
              : 0;
    free(names);
}

static void dist_info(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, info_call);
}

/* QUEUE's read-back: each named queue's size and latency after the
 * change; a queue outside the registry has no name. */
static int queue_read_back(rb_pg *pg, rb_eng_op *op, rb_err *err)
{
    int n = op->u.queue.n;
    const char *const *names = (const char *const *)op->u.queue.names;
    op->u.queue.sizes = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.sizes);
    op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
    rb_pg_info in;
    int rc = rb_pg_info_get(pg, &in, err);
    if (rc)
        return rc;
    for (int i = 0; i < n && !rc; i++) {
        bool known = false;
        if ((rc = rb_pg_queue_known(pg, names[i], &known, err)) || !known)
            continue;
        rb_queue_size *q = &op->u.queue.sizes[i];
        *q = (rb_queue_size){.name = rb_xstrdup(names[i]),
                             .paused = op->u.queue.verb == RB_ENG_QUEUE_PAUSE};
        for (size_t k = 0; k < in.n_queues; k++)
            if (!strcmp(in.queues[k].name, names[i]))
                q->size = in.queues[k].size;
    }
    rb_pg_info_release(&in);
    return rc ? rc : rb_pg_queue_latency(pg, names, n, rb_now_ms(), op->u.queue.latency, err);
}

static void queue_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    const char *const *names = (const char *const *)op->u.queue.names;
    if (op->u.queue.verb == RB_ENG_QUEUE_REMOVE)
        r->rc = rb_pg_queue_remove(pg, names, op->u.queue.n, NULL, &r->err);
    else
        r->rc = rb_pg_queue_pause(pg, names, op->u.queue.n,
                                  op->u.queue.verb == RB_ENG_QUEUE_PAUSE, &r->err);
    if (!r->rc && op->u.queue.read_back)
        r->rc = queue_read_back(pg, op, &r->err);
}

static void dist_queue(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, queue_call);
}

static void latency_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    int n = op->u.queue.n;
    op->u.queue.latency = rb_xcalloc((size_t)n + 1, sizeof *op->u.queue.latency);
    r->rc = rb_pg_queue_latency(pg, (const char *const *)op->u.queue.names, n, rb_now_ms(),
                                op->u.queue.latency, &r->err);
}

static void dist_latency(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, latency_call);
}

static void job_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_job_get(pg, op->u.lookup.jid, &op->u.lookup.view, &r->err);
    op->u.lookup.found = r->rc == 0;
    if (r->rc == RB_ENOENT) /* a push merged into another job? */
        r->rc = rb_pg_debounce_alias(pg, op->u.lookup.jid, rb_now_ms(), &op->u.lookup.alias,
                                     &op->u.lookup.aliased, &r->err);
    else if (!r->rc && op->u.lookup.view.state <= RB_JOB_ENQUEUED)
        r->rc = rb_pg_debounce_view(pg, op->u.lookup.jid, op->u.lookup.view.due_ms,
                                    &op->u.lookup.view.debounce, &r->err);
    if (op->u.lookup.found) /* why it waits, when its group is held */
        rb_pg_job_hold(pg, &op->u.lookup.view, op->now);
}

static void dist_job(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, job_call);
}

static void jobs_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_jobs(pg, &op->u.jobs.f, &op->u.jobs.views, &op->u.jobs.n, &op->u.jobs.total,
                       &r->err);
}

static void dist_jobs(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, jobs_call);
}

/* Signals are the cluster's (the worker registry, registry.h). */
static void workers_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_workers_signal(pg, op->u.workers.wid, op->u.workers.signal, rb_now_ms(),
                                 &op->u.workers.changed, &r->err);
}

static void dist_workers(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, workers_call);
}

/* --- the HTTP API's own --- */

/* Reads jid's state into *state; *found false when there is no such job. */
static int job_state(rb_pg *pg, const char *jid, bool *found, int *state, rb_err *err)
{
    rb_pg_job j;
    int rc = rb_pg_job_get(pg, jid, &j, err);
    *found = rc == 0;
    if (rc)
        return rc == RB_ENOENT ? 0 : rc;
    *state = j.state;
    rb_pg_job_release(&j);
    return 0;
}

/* Check, change (as MUTATE of the one jid), read back. */
static void job_action_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    const char *jid = op->u.job_action.jid;
    bool found;
    if ((r->rc = job_state(pg, jid, &op->u.job_action.found, &op->u.job_action.prev_state,
                           &r->err)) ||
        !op->u.job_action.found || !rb_job_state_mutable(op->u.job_action.prev_state))
        return;
    const char *jids[1] = {jid};
    rb_mutation m = {.cmd = op->u.job_action.cmd, .target = op->u.job_action.prev_state,
                     .jids = jids, .n_jids = 1};
    if ((r->rc = rb_pg_mutate(pg, &m, op->now, NULL, &r->err)))
        return;
    r->rc = job_state(pg, jid, &found, &op->u.job_action.state, &r->err);
    if (!found)
        op->u.job_action.state = 0; /* gone (discarded) */
}

static void dist_job_action(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, job_action_call);
}

/* The bulk action: MUTATE's own filters when they suffice (jids, or every
 * job of the state with an optional job type); otherwise the jids of the
 * matching jobs are read first (queue and errtype filters, or a job type
 * with a list) and mutated as a list, in one MUTATE. */
static void bulk_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    const rb_job_filter *want = &op->u.bulk.f;
    rb_mutation m = {.cmd = op->u.bulk.cmd, .target = want->state};
    const char **named = op->u.bulk.jids;
    if (!want->queue && !want->errtype && !(named && want->jobtype)) {
        if (named) {
            if (!op->u.bulk.n_jids) /* an empty list changes nothing */
                return;
            m.jids = named;
            m.n_jids = op->u.bulk.n_jids;
        } else {
            m.jobtype = want->jobtype;
        }
        r->rc = rb_pg_mutate(pg, &m, op->now, &op->u.bulk.changed, &r->err);
        return;
    }
    rb_pg_filter f = *want;
    f.offset = 0;
    f.limit = 1000;
    char **pick = NULL;
    size_t n_pick = 0;
    for (;;) {
        rb_pg_job *jobs = NULL;
        size_t n = 0;
        int64_t total = 0;
        if ((r->rc = rb_pg_jobs(pg, &f, &jobs, &n, &total, &r->err)))
            break;
        for (size_t i = 0; i < n; i++) {
            bool keep = !named;
            for (size_t k = 0; named && k < op->u.bulk.n_jids && !keep; k++)
                keep = !strcmp(named[k], jobs[i].jid);
            if (!keep)
                continue;
            pick = rb_xrealloc(pick, (n_pick + 1) * sizeof *pick);
            pick[n_pick++] = rb_xstrdup(jobs[i].jid);
        }
        rb_pg_jobs_free(jobs, n);
        f.offset += (int64_t)n;
        if (n < (size_t)f.limit || f.offset >= total)
            break;
    }
    if (!r->rc && n_pick) {
        m.jids = (const char *const *)pick;
        m.n_jids = n_pick;
        r->rc = rb_pg_mutate(pg, &m, op->now, &op->u.bulk.changed, &r->err);
    }
    for (size_t i = 0; i < n_pick; i++)
        free(pick[i]);
    free(pick);
}

static void dist_bulk(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, bulk_call);
}

/* The cluster's live workers (the worker registry, registry.h). */
static void worker_list_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_worker *l = NULL;
    size_t n = 0;
    if ((r->rc = rb_pg_workers_list(pg, rb_now_ms(), &l, &n, &r->err)))
        return;
    op->u.worker_list.v = rb_xcalloc(n + 1, sizeof *op->u.worker_list.v);
    for (size_t i = 0; i < n; i++) /* the strings taken over */
        op->u.worker_list.v[i] = (rb_eng_worker){
            .wid = l[i].wid, .node = l[i].node ? l[i].node : rb_xstrdup(""), .info = l[i].info,
            .first_ms = l[i].first_ms, .beat_ms = l[i].beat_ms, .signal = l[i].signal};
    op->u.worker_list.n = n;
    free(l);
}

static void dist_worker_list(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, worker_list_call);
}

/* --- BATCH: one transaction on a database thread (sql_batch.c) --- */

static void batch_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    const char *bid = op->u.batch.bid;
    rb_batch *b = NULL;
    switch (op->u.batch.verb) {
    case RB_ENG_BATCH_NEW:
        r->rc = rb_pg_batch_new(pg, &op->u.batch.def, op->now, &op->u.batch.out, &r->err);
        return;
    case RB_ENG_BATCH_COMMIT:
        r->rc = rb_pg_batch_commit(pg, bid, op->now, &r->err);
        return;
    case RB_ENG_BATCH_OPEN:
    case RB_ENG_BATCH_STATUS:
        if ((r->rc = rb_pg_batch_get(pg, bid, op->now, &b, &r->err)))
            return;
        if (op->u.batch.verb == RB_ENG_BATCH_OPEN) {
            op->u.batch.out = rb_xstrdup(b->bid);
        } else {
            json_t *st = rb_batch_status_json(b);
            op->u.batch.out = json_dumps(st, JSON_COMPACT);
            json_decref(st);
        }
        rb_batch_free(b);
        return;
    case RB_ENG_BATCH_VIEW:
        r->rc = rb_pg_batch_view(pg, bid, op->now, &op->u.batch.found, &op->u.batch.view,
                                 &r->err);
        return;
    case RB_ENG_BATCH_LIST:
        r->rc = rb_pg_batch_list(pg, op->u.batch.all, op->u.batch.offset, op->u.batch.limit,
                                 &op->u.batch.list, &op->u.batch.n, &op->u.batch.total, &r->err);
        return;
    }
}

static void dist_batch(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, batch_call);
}

/* --- workflows --- */

static void workflow_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->rc = rb_pg_workflow(pg, op->u.workflow.jid, op->u.workflow.max_nodes, op->now,
                           &op->u.workflow.g, &r->err);
    op->u.workflow.found = r->rc == 0;
    if (r->rc == RB_ENOENT)
        r->rc = 0;
}

static void dist_workflow(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, workflow_call);
}

/* --- TRACK SET and GET: one transaction (sql_track.c) --- */

static void track_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    if (op->u.track.get)
        r->rc = rb_pg_track_get(pg, op->u.track.jid, op->now, &op->u.track.reply, &r->err);
    else
        r->rc = rb_pg_track_set(pg, &op->u.track.set, op->now, &r->err);
}

static void dist_track(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, track_call);
}

/* --- GROUP SET/PAUSE/RESUME/GET, GROUPS (sql_groups.c) --- */

static void group_call(rb_pg *pg, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    rb_pg_group_out out;
    r->rc = rb_pg_group(pg, &op->u.group.req, op->now, &out, &r->err);
    op->u.group.view = out.view;
    op->u.group.views = out.views;
    op->u.group.n = out.n;
    op->u.group.total = out.total;
    op->u.group.sums = out.sums;
    op->u.group.n_sums = out.n_sums;
}

static void dist_group(rb_eng *eng, rb_eng_op *op)
{
    post(eng, op, group_call);
}

const rb_backend rb_backend_pg = {
    .name = "postgresql",
    .open = rb_pgmode_open,
    .attach = rb_pgmode_attach,
    .close = rb_pgmode_free,
    .push = dist_push,
    .debounce = true, /* custom.debounce (sql_debounce.c) */
    .fetch = dist_fetch,
    .throttles = true, /* claimed under a lock per throttled queue (sql_throttle.c) */
    .ack = dist_ack,
    .fail = dist_fail,
    .snooze = dist_snooze,
    .extend = dist_extend,
    .flush = dist_flush,
    .mutate = dist_mutate,
    .info = dist_info,
    .queue = dist_queue,
    .latency = dist_latency,
    .job = dist_job,
    .jobs = dist_jobs,
    .workers = dist_workers,
    .job_action = dist_job_action,
    .bulk = dist_bulk,
    .worker_list = dist_worker_list,
    .batch = dist_batch,
    .refetch = rb_pgmode_refetch,
    .workflow = dist_workflow,
    .track = dist_track,
    .unique_jobs = true,
    .groups = true,      /* in turn per queue: rb_claim_groups (sql_groups.c) */
    .flow_limits = true, /* [groups] limits and [throttles] rate in the same claim */
    .group = dist_group, /* overrides and pauses on rb_groups' rows */
    .health = rb_pgmode_health,
    .leader_offer = rb_pgmode_leader_offer, /* storage.forward's lease (leader.c) */
    .leader = rb_pgmode_leader,
    .cron_ticks = rb_pgmode_cron_ticks,
    .hello = rb_pgworkers_hello,
    .beat = rb_pgworkers_beat,
    .counts_claims = true,
};
