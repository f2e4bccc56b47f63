/* The single-node backend of the job engine (engine/engine.h): operations
 * applied at once to the in-memory indexes (jobs.h), their rows handed to
 * the SQLite group-commit writer, and the op completed when that commit is
 * on disk. Loop thread only. */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"
#include "server/metrics.h"
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
    rb_srv_kick(srv);
    rb_srv_arm(srv);
}

/* Completes op after everything submitted so far is durable. */
static void after_commit(rb_srv *srv, rb_eng_op *op)
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
    for (size_t i = 0; i < op->u.push.n; i++) {
        if (op->u.push.status[i])
            continue;
        rb_job *j = rb_jobs_find(&srv->jobs, rb_srv_json_str(op->u.push.jobs[i], "jid"));
        if (!j || j->state != RB_JOB_PENDING)
            continue; /* flushed meanwhile */
        if (status) {
            rb_jobs_delete(&srv->jobs, j);
        } else if (j->timer.at_ms > now) {
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_SCHEDULED, j->timer.at_ms);
        } else { /* enqueued as of the PUSH, as its stored row says */
            rb_jobs_set_state(&srv->jobs, j, RB_JOB_ENQUEUED, j->timer.at_ms);
        }
        if (!status)
            rb_metrics_job(srv->metrics, RB_M_PUSHED, j);
    }
    committed(arg, status, err);
}

static void mem_push(rb_srv *srv, rb_eng_op *op)
{
    size_t made = 0;
    for (size_t i = 0; i < op->u.push.n; i++)
        if (!(op->u.push.status[i] = rb_srv_push(srv, op->u.push.jobs[i])))
            made++;
    if (!made) { /* every jid was taken: nothing to commit */
        op->applied = RB_ENG_NOT_APPLIED;
        rb_eng_complete(srv, op);
        return;
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
    after_commit(srv, op);
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
    rb_metrics_job(srv->metrics, RB_M_PROCESSED, j);
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
    rb_srv_kick(srv);
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
    srv->jobs.next_seq = seq;
    srv->total_processed = srv->total_failures = 0;
    rb_writer_clear(srv->writer);
    after_commit(srv, op);
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
    } else { /* requeue */
        j->flags = 0;
        rb_srv_enqueue(srv, j, now, now);
    }
    rb_srv_persist(srv, j);
}

void rb_srv_mutate_job(rb_srv *srv, rb_job *j, const char *cmd, int64_t now)
{
    mutate_one(srv, cmd, j, now);
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
    after_commit(srv, op);
    rb_srv_kick(srv);
}

const rb_backend rb_backend_mem = {
    .name = "sqlite",
    .push = mem_push,
    .fetch = mem_fetch,
    .ack = mem_ack,
    .fail = mem_fail,
    .snooze = mem_snooze,
    .extend = mem_extend,
    .flush = mem_flush,
    .mutate = mem_mutate,
};
