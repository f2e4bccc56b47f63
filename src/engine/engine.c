/* An operation's life on the loop thread (engine.h): made, submitted to
 * the server's backend, completed, finished. */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "backend/pg/backend.h"
#include "backend/pg/sql.h"
#include "backend/sqlite/backend.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/metrics.h"
#include "engine/engine.h"

rb_eng *rb_eng_new(rb_srv *srv, const rb_config *cfg, const rb_eng_client *client)
{
    rb_eng *eng = rb_xcalloc(1, sizeof *eng);
    eng->srv = srv;
    eng->cfg = cfg;
    eng->client = client;
    eng->metrics = rb_metrics_new();
    rb_eng_workers_init(eng);
    return eng;
}

void rb_eng_free(rb_eng *eng)
{
    if (!eng)
        return;
    rb_eng_workers_release(eng);
    rb_metrics_free(eng->metrics);
    free(eng);
}

rb_eng_op *rb_eng_op_new(rb_eng_kind kind, rb_conn *c, void (*done)(rb_srv *, rb_eng_op *))
{
    rb_eng_op *op = rb_xcalloc(1, sizeof *op);
    op->kind = kind;
    op->c = c;
    op->done = done;
    return op;
}

static void op_free(rb_eng_op *op);

void rb_eng_submit(rb_eng *eng, rb_eng_op *op)
{
    if (op->c)
        eng->client->hold(op->c);
    op->eng = eng;
    op->now = rb_now_ms();
    const rb_backend *b = eng->backend;
    void (*fn)(rb_eng *, rb_eng_op *) = NULL;
    switch (op->kind) {
    case RB_ENG_PUSH:
        fn = b->push;
        break;
    case RB_ENG_FETCH:
        fn = b->fetch;
        break;
    case RB_ENG_ACK:
        fn = b->ack;
        break;
    case RB_ENG_FAIL:
        fn = b->fail;
        break;
    case RB_ENG_SNOOZE:
        fn = b->snooze;
        break;
    case RB_ENG_EXTEND:
        fn = b->extend;
        break;
    case RB_ENG_FLUSH:
        fn = b->flush;
        break;
    case RB_ENG_MUTATE:
        fn = b->mutate;
        break;
    case RB_ENG_INFO:
        fn = b->info;
        break;
    case RB_ENG_QUEUE:
        fn = b->queue;
        break;
    case RB_ENG_LATENCY:
        fn = b->latency;
        break;
    case RB_ENG_JOB:
        fn = b->job;
        break;
    case RB_ENG_JOBS:
        fn = b->jobs;
        break;
    case RB_ENG_WORKERS:
        fn = b->workers;
        break;
    case RB_ENG_JOB_ACTION:
        fn = b->job_action;
        break;
    case RB_ENG_BULK:
        fn = b->bulk;
        break;
    case RB_ENG_WORKER_LIST:
        fn = b->worker_list;
        break;
    case RB_ENG_BATCH:
        if (!b->batch) { /* refused: nothing to do */
            op->submitting = true;
            op->rc = rb_eng_batch_check(eng, &op->err);
            rb_eng_complete(eng, op);
            op->submitting = false;
            goto submitted;
        }
        fn = b->batch;
        break;
    case RB_ENG_WORKFLOW:
        fn = b->workflow;
        break;
    case RB_ENG_TRACK:
        if (!b->track) { /* refused: nothing to do */
            op->submitting = true;
            op->rc = rb_eng_track_check(eng, &op->err);
            rb_eng_complete(eng, op);
            op->submitting = false;
            goto submitted;
        }
        fn = b->track;
        break;
    case RB_ENG_BACKUP:
        if (!b->backup) { /* refused: nothing to do */
            op->submitting = true;
            op->rc = rb_err_set(&op->err, RB_EINVAL, "%s", RB_BACKUP_UNSUPPORTED);
            rb_eng_complete(eng, op);
            op->submitting = false;
            goto submitted;
        }
        fn = b->backup;
        break;
    case RB_ENG_GROUP:
        if (!b->group) { /* refused: nothing to do */
            op->submitting = true;
            op->rc = rb_eng_group_check(eng, rb_group_verb_name(op->u.group.req.verb),
                                        &op->err);
            rb_eng_complete(eng, op);
            op->submitting = false;
            goto submitted;
        }
        fn = b->group;
        break;
    case RB_ENG_HELLO:
        fn = b->hello;
        break;
    case RB_ENG_BEAT:
        fn = b->beat;
        break;
    case RB_ENG_KINDS:
        break;
    }
    if (!fn)
        abort(); /* an op kind without a backend function: a programming error */
    op->submitting = true;
    fn(eng, op);
    op->submitting = false;
submitted:
    if (op->finished) {
        /* done ran inside fn: the handler's caller (conn.c's loop over
         * the buffered lines) runs the next command, unless c waits */
        rb_conn *c = op->c;
        op_free(op);
        if (c)
            eng->client->release(c, false);
    }
}

static void fetch_park(rb_eng *eng, rb_eng_op *op);

void rb_eng_complete(rb_eng *eng, rb_eng_op *op)
{
    /* a FETCH's first try found nothing: it waits (done runs at its end) */
    if (op->kind == RB_ENG_FETCH && !op->rc && !op->u.fetch.job && !op->u.fetch.cancelled &&
        eng->base && !eng->stopping) {
        fetch_park(eng, op);
        return;
    }
    op->done(eng->srv, op);
}

/* What the administration and inspection ops own. */
static void admin_release(rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_INFO:
        for (size_t i = 0; i < op->u.info.n_queues; i++)
            free(op->u.info.queues[i].name);
        free(op->u.info.queues);
        free(op->u.info.latency_s);
        json_decref(op->u.info.rebound);
        break;
    case RB_ENG_QUEUE:
    case RB_ENG_LATENCY:
        for (int i = 0; i < op->u.queue.n; i++)
            free(op->u.queue.names[i]);
        free(op->u.queue.names);
        free(op->u.queue.latency);
        for (int i = 0; op->u.queue.sizes && i < op->u.queue.n; i++)
            free(op->u.queue.sizes[i].name);
        free(op->u.queue.sizes);
        break;
    case RB_ENG_JOB:
        rb_job_view_release(&op->u.lookup.view);
        rb_debounce_alias_release(&op->u.lookup.alias);
        break;
    case RB_ENG_WORKFLOW:
        rb_workflow_release(&op->u.workflow.g);
        break;
    case RB_ENG_JOBS:
        rb_job_views_free(op->u.jobs.views, op->u.jobs.n);
        break;
    case RB_ENG_BULK:
        free(op->u.bulk.jids);
        break;
    case RB_ENG_WORKER_LIST:
        for (size_t i = 0; i < op->u.worker_list.n; i++) {
            free(op->u.worker_list.v[i].wid);
            free(op->u.worker_list.v[i].node);
            free(op->u.worker_list.v[i].info);
        }
        free(op->u.worker_list.v);
        break;
    default:
        break;
    }
}

static void op_free(rb_eng_op *op)
{
    switch (op->kind) {
    case RB_ENG_PUSH:
        free(op->u.push.jobs);
        free(op->u.push.status);
        break;
    case RB_ENG_FETCH:
        for (int i = 0; i < op->u.fetch.n; i++)
            free(op->u.fetch.queues[i]);
        free(op->u.fetch.queues);
        free(op->u.fetch.jid);
        free(op->u.fetch.job);
        break;
    case RB_ENG_ACK:
    case RB_ENG_FAIL:
    case RB_ENG_SNOOZE:
    case RB_ENG_EXTEND:
        free(op->u.job.jid);
        break;
    case RB_ENG_MUTATE:
        rb_mutation_release(&op->u.mutate.m);
        break;
    case RB_ENG_BATCH:
        free(op->u.batch.out);
        rb_batch_view_release(&op->u.batch.view);
        for (size_t i = 0; i < op->u.batch.n; i++)
            rb_batch_free(op->u.batch.list[i]);
        free(op->u.batch.list);
        break;
    case RB_ENG_TRACK:
        json_decref(op->u.track.reply);
        break;
    case RB_ENG_GROUP:
        rb_group_req_release(&op->u.group.req);
        rb_group_view_release(&op->u.group.view);
        for (size_t i = 0; i < op->u.group.n; i++)
            rb_group_view_release(&op->u.group.views[i]);
        free(op->u.group.views);
        for (size_t i = 0; i < op->u.group.n_sums; i++)
            free(op->u.group.sums[i].queue);
        free(op->u.group.sums);
        break;
    default:
        break;
    }
    admin_release(op);
    if (op->wait_ev)
        event_free(op->wait_ev);
    json_decref(op->json);
    if (op->arg_free)
        op->arg_free(op->arg);
    free(op);
}

int rb_eng_batch_check(const rb_eng *eng, rb_err *err)
{
    if (eng->backend->batch)
        return 0;
    return rb_err_set(err, RB_EINVAL, "%s", RB_BATCH_UNSUPPORTED);
}

int rb_eng_track_check(const rb_eng *eng, rb_err *err)
{
    if (eng->backend->track)
        return 0;
    return rb_err_set(err, RB_EINVAL, "%s", RB_TRACK_UNSUPPORTED);
}

int rb_eng_group_check(const rb_eng *eng, const char *cmd, rb_err *err)
{
    if (eng->backend->group)
        return 0;
    return rb_err_set(err, RB_EINVAL, "%s: %s", cmd, RB_GROUP_CMD_UNSUPPORTED);
}

int rb_eng_throttle_check(const rb_eng *eng, rb_err *err)
{
    if (!eng->cfg->n_throttles || eng->backend->throttles)
        return 0;
    return rb_err_set(err, RB_EINVAL, "%s", RB_THROTTLE_UNSUPPORTED);
}

int rb_eng_unique_check(const rb_eng *eng, json_t *job, int64_t now, rb_err *err)
{
    if (!rb_unique_or_expiring(job))
        return 0;
    const char *jid = json_string_value(json_object_get(job, "jid"));
    rb_unique_spec spec;
    int rc;
    if ((rc = rb_unique_parse(job, &spec, err)))
        goto bad;
    json_t *c = json_object_get(job, "custom");
    bool expiring = json_object_get(c, "expires_at") || json_object_get(c, "expires_in");
    /* refused whole, as batches are (the message alone, no "job J") */
    if (!eng->backend->unique_jobs && (spec.on || json_object_get(c, "unique_until")))
        return rb_err_set(err, RB_EINVAL, "%s", RB_UNIQUE_UNSUPPORTED);
    if (!eng->backend->unique_jobs && expiring)
        return rb_err_set(err, RB_EINVAL, "%s", RB_EXPIRING_UNSUPPORTED);
    int64_t ms;
    if ((rc = rb_expiry_prepare(job, now, &ms, err)))
        goto bad;
    return 0;
bad:
    rb_err_prefix(err, "job %s", jid ? jid : "?");
    return rc;
}

void rb_eng_op_finish(rb_eng *eng, rb_eng_op *op)
{
    (void)eng;
    if (op->submitting) {
        op->finished = true; /* rb_eng_submit frees it */
        return;
    }
    rb_conn *c = op->c;
    op_free(op);
    if (c)
        eng->client->release(c, true);
}

bool rb_eng_store_error(int rc)
{
    return rc == RB_ESTORE || rc == RB_EIO || rc == RB_ECONN || rc == RB_ENOMEM ||
           rc == RB_ETIMEDOUT || rc == RB_EDOUBT;
}

void rb_eng_health_of(rb_eng *eng, rb_eng_health *h)
{
    memset(h, 0, sizeof *h);
    h->up = true;
    if (eng->backend->health)
        eng->backend->health(eng, h);
}

bool rb_eng_leader_supported(const rb_eng *eng)
{
    return eng->backend && eng->backend->leader;
}

void rb_eng_leader_offer(rb_eng *eng, const char *addr, const char *tls_id)
{
    if (eng->backend && eng->backend->leader_offer)
        eng->backend->leader_offer(eng, addr, tls_id);
}

void rb_eng_leader_of(rb_eng *eng, rb_eng_leader *out)
{
    memset(out, 0, sizeof *out);
    if (eng->backend && eng->backend->leader)
        eng->backend->leader(eng, out);
}

static json_t *time_or_null(int64_t ms)
{
    char ts[RB_TIME_STRLEN];
    return ms > 0 ? json_string(rb_time_format(ms, ts)) : json_null();
}

json_t *rb_eng_health_json(const rb_eng_health *h, bool detail)
{
    json_t *v = json_pack("{s:s, s:o, s:o}", "state", h->up ? "up" : "down", "since",
                          time_or_null(h->since_ms), "last_commit",
                          time_or_null(h->last_commit_ms));
    if (detail && !h->up)
        json_object_set_new(v, "error", json_string(h->error));
    return v;
}


/* --- FETCHes waiting for a job --- */

static void fetch_unpark(rb_eng *eng, rb_eng_op *op)
{
    rb_list_remove(&eng->waiters, &op->wlink);
    event_free(op->wait_ev);
    op->wait_ev = NULL;
    op->u.fetch.parked = false;
}

/* op's wait is over: done runs (a job, null, or the error). */
static void fetch_end(rb_eng *eng, rb_eng_op *op)
{
    fetch_unpark(eng, op);
    op->done(eng->srv, op);
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng_op *op = arg;
    if (op->u.fetch.trying)
        op->u.fetch.expired = true; /* its try ends it (rb_eng_fetch_tried) */
    else
        fetch_end(op->eng, op);
}

static void fetch_park(rb_eng *eng, rb_eng_op *op)
{
    op->u.fetch.parked = true;
    rb_list_append(&eng->waiters, &op->wlink);
    op->wait_ev = evtimer_new(eng->base, on_wait_timeout, op);
    struct timeval tv = {RB_ENG_FETCH_WAIT_MS / 1000, (RB_ENG_FETCH_WAIT_MS % 1000) * 1000};
    evtimer_add(op->wait_ev, &tv);
}

void rb_eng_fetch_tried(rb_eng *eng, rb_eng_op *op)
{
    op->u.fetch.trying = false;
    if (op->rc || op->u.fetch.job || op->u.fetch.expired || op->u.fetch.cancelled)
        fetch_end(eng, op);
}

bool rb_eng_fetch_wanted(const rb_eng_op *op)
{
    return !op->u.fetch.cancelled;
}

void rb_eng_fetch_cancel(rb_eng *eng, rb_eng_op *op)
{
    op->u.fetch.cancelled = true;
    if (op->u.fetch.parked && !op->u.fetch.trying)
        fetch_end(eng, op);
}

size_t rb_eng_fetches_waiting(const rb_eng *eng)
{
    return eng->waiters.size;
}

static bool waits_for(const rb_eng_op *op, const char *const *queues, size_t n)
{
    if (!queues)
        return true;
    for (int i = 0; i < op->u.fetch.n; i++)
        for (size_t k = 0; k < n; k++)
            if (!strcmp(op->u.fetch.queues[i], queues[k]))
                return true;
    return false;
}

void rb_eng_wake(rb_eng *eng, const char *const *queues, size_t n)
{
    rb_link *l = eng->waiters.head;
    while (l) {
        rb_link *next = l->next; /* a try that ends op unlinks it */
        rb_eng_op *op = rb_container_of(l, rb_eng_op, wlink);
        if (!op->u.fetch.trying && waits_for(op, queues, n)) {
            op->u.fetch.trying = true;
            rb_eng_try t = eng->backend->refetch(eng, op);
            if (t != RB_ENG_TRY_STARTED)
                op->u.fetch.trying = false;
            if (t == RB_ENG_TRY_NONE)
                break;
        }
        l = next;
    }
}

rb_eng_op *rb_eng_waiter_take(rb_eng *eng, const char *queue)
{
    for (rb_link *l = eng->waiters.head; l; l = l->next) {
        rb_eng_op *op = rb_container_of(l, rb_eng_op, wlink);
        if (!op->u.fetch.trying && !op->u.fetch.cancelled && waits_for(op, &queue, 1)) {
            op->u.fetch.trying = true;
            return op;
        }
    }
    return NULL;
}

const rb_backend *rb_backend_for_url(const char *url)
{
    return rb_pg_is_url(url) ? &rb_backend_pg : &rb_backend_sqlite;
}
