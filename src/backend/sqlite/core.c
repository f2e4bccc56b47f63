/* The single-node backend's state machine over the in-memory indexes and
 * the store: persisting rows, enqueueing, reserving for FETCH, the timer,
 * the completions that send replies once a commit is on disk, and the
 * creation of a pushed job (rb_sq_push, at the end). */
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

#include "backend/sqlite/debounce.h"
#include "backend/sqlite/groups.h"
#include "backend/sqlite/throttle.h"
#include "backend/sqlite/track.h"
#include "backend/sqlite/unique.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/jobdef.h"
#include "common/log.h"
#include "common/json.h"
#include "engine/metrics.h"

static int stored_state(const rb_sq *sq, const rb_job *j)
{
    if (j->state != RB_JOB_PENDING)
        return j->state;
    if (sq->deps.nodes.size && rb_deps_pending_waits(sq, j))
        return RB_JOB_WAITING;
    return j->timer.at_ms > rb_now_ms() ? RB_JOB_SCHEDULED : RB_JOB_ENQUEUED;
}

void rb_sq_persist(rb_sq *sq, const rb_job *j)
{
    /* The stored text carries a server-made created_at (loaded back as
     * part of the text). */
    char *json = j->created_us ? rb_job_json_out(j, 0) : NULL;
    rb_job_row row = {
        .id = j->row_id,
        .jid = j->jid,
        .state = stored_state(sq, j),
        .queue = rb_job_queue(j)->name,
        .priority = j->priority,
        .seq = j->timer.seq,
        .due_ms = j->timer.at_ms,
        .due_us = (int)j->enq_frac_us, /* 0 unless enqueued (or pushed so) */
        .first_ms = j->first_ms,
        .attempts = j->attempts,
        .reserve_s = j->reserve_s,
        .wid = j->wid,
        .json = json ? json : j->json,
        .history = j->history,
        .grp = rb_job_group_name(j),
    };
    rb_writer_put(sq->writer, &row);
    free(json);
}

void rb_sq_forget(rb_sq *sq, rb_job *j)
{
    if (sq->deps.nodes.size) /* deleted without succeeding (an ACK told its children first) */
        rb_deps_discarded(sq, j, rb_now_ms());
    rb_sq_unique_gone(sq, j); /* its unique lock and expiry (an ACK's too) */
    rb_sq_debounce_gone(sq, j, rb_now_ms()); /* its key, its aliases' retention */
    rb_sq_track_ended(sq, j, RB_TRACK_DEAD, rb_now_ms()); /* an ACK's stays success */
    rb_sq_throttle_gone(sq, j);
    rb_writer_del(sq->writer, j->row_id, j->jid);
    rb_jobs_delete(&sq->jobs, j);
}

void rb_sq_persist_counters(rb_sq *sq)
{
    rb_writer_counter(sq->writer, "total_processed", sq->total_processed);
    rb_writer_counter(sq->writer, "total_failures", sq->total_failures);
}

void rb_job_set_field(rb_job *j, const char *key, json_t *value)
{
    json_t *o = json_loads(j->json, 0, NULL);
    if (!o) { /* cannot happen: json came from json_dumps */
        json_decref(value);
        return;
    }
    if (value)
        json_object_set_new(o, key, value);
    else
        json_object_del(o, key);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s) {
        free(j->json);
        j->json = s;
    }
}

void rb_sq_enqueue(rb_sq *sq, rb_job *j, int64_t at_ms, int64_t now)
{
    if (at_ms > now) {
        rb_jobs_set_state(&sq->jobs, j, RB_JOB_SCHEDULED, at_ms);
        return;
    }
    /* enqueued_at is kept outside the text while the job waits */
    if (strstr(j->json, "\"enqueued_at\""))
        rb_job_set_field(j, "enqueued_at", NULL);
    if (!j->first_ms)
        j->first_ms = now;
    rb_jobs_enqueue_us(&sq->jobs, j, rb_now_us_from(now)); /* enqueued_at's microseconds */
}

void rb_sq_queue_known(rb_sq *sq, rb_queue *q, bool known)
{
    if (q->known == known)
        return;
    char key[256];
    snprintf(key, sizeof key, "%s%s", RB_QUEUE_META_KEY, q->name);
    q->known = known;
    rb_writer_meta(sq->writer, key, known ? "1" : NULL);
}

/* --- completions --- */

/* After a commit of work no client waits for (a batch's callback, an
 * expired parent's row): the waiting FETCHes get another try. */
static void on_commit(void *arg, int status, const rb_err *err)
{
    rb_sq *sq = arg;
    if (status)
        rb_log(RB_LOG_ERROR, "commit failed: %s", rb_err_msg(err));
    rb_eng_wake(sq->eng, NULL, 0);
    rb_sq_arm(sq);
}

void rb_sq_commit_then_wake(rb_sq *sq)
{
    rb_writer_then(sq->writer, on_commit, sq);
}

rb_job *rb_sq_reserve(rb_sq *sq, const char *wid, char **queues, int n)
{
    for (int i = 0; i < n; i++) {
        rb_queue *q = rb_jobs_queue(&sq->jobs, queues[i], false);
        int64_t now = rb_now_ms();
        if (!q || q->paused || rb_sq_throttle_full(sq, q, now))
            continue; /* a throttled queue at its limit is as if empty */
        rb_job *j = rb_sq_group_take(sq, q, now); /* its groups in turn (groups.h) */
        if (!j)
            continue;
        /* From now on the text carries both times, as clients see it. */
        char *out = rb_job_json_out(j, rb_job_enqueued_us(j));
        free(j->json);
        j->json = out;
        j->created_us = 0;
        j->attempts++;
        j->flags = (j->flags & RB_JOB_EXPIRED) ? RB_JOB_REFETCHED : 0;
        free(j->wid);
        j->wid = wid ? rb_xstrdup(wid) : NULL;
        rb_jobs_set_state(&sq->jobs, j, RB_JOB_WORKING, now + (int64_t)j->reserve_s * 1000);
        rb_sq_persist(sq, j);
        rb_sq_unique_started(sq, j); /* unique_until "start" */
        rb_sq_debounce_started(sq, j); /* a later push of its key starts a new job */
        rb_sq_throttle_started(sq, j, now); /* a throttle's timeout counts from here */
        return j;
    }
    return NULL;
}

void rb_sq_unreserve(rb_sq *sq, const char *jid)
{
    rb_job *j = rb_jobs_find(&sq->jobs, jid);
    if (j && j->state == RB_JOB_WORKING) {
        j->attempts--;
        free(j->wid);
        j->wid = NULL;
        rb_jobs_enqueue_us(&sq->jobs, j, rb_now_us());
    }
}

/* A deadline passed. */
static void fire(rb_sq *sq, rb_job *j, int64_t now)
{
    switch (j->state) {
    case RB_JOB_SCHEDULED:
    case RB_JOB_RETRIES:
        if (rb_sq_unique_expire(sq, j, now))
            break; /* expired while it waited: dropped */
        rb_metrics_lateness(sq->metrics, now - j->timer.at_ms);
        rb_sq_enqueue(sq, j, now, now);
        break;
    case RB_JOB_WORKING: {
        rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name, "wid", j->wid),
                  "reservation of job %s expired", j->jid);
        rb_fail_input in = {.errtype = "ReservationExpired",
                            .message = "the job's reservation expired before ACK or FAIL"};
        rb_err err = {0};
        j->flags |= RB_JOB_EXPIRED;
        if (rb_sq_fail_job(sq, j, &in, now, &err))
            rb_log_kv(RB_LOG_ERROR, RB_LOG_KV("jid", j->jid), "expiring job: %s", rb_err_msg(&err));
        break;
    }
    case RB_JOB_DEAD:
        rb_log_kv(RB_LOG_DEBUG, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name),
                  "dead job %s reached its retention", j->jid);
        rb_sq_forget(sq, j);
        break;
    default:
        rb_heap_remove(&sq->jobs.timers, &j->timer);
        break;
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    sq->armed_ms = INT64_MAX;
    int64_t now = rb_now_ms();
    rb_job *j;
    while ((j = rb_jobs_next_timer(&sq->jobs)) && j->timer.at_ms <= now)
        fire(sq, j, now);
    rb_deps_expire(sq, now);
    rb_eng_wake(sq->eng, NULL, 0);
    rb_sq_arm(sq);
}

void rb_sq_arm(rb_sq *sq)
{
    if (!sq->timer_ev)
        sq->timer_ev = evtimer_new(sq->base, on_timer, sq);
    rb_job *j = rb_jobs_next_timer(&sq->jobs);
    int64_t at = rb_deps_next_expiry(sq); /* the workflows' succeeded records */
    if (j && j->timer.at_ms < at)
        at = j->timer.at_ms;
    if (at == INT64_MAX) {
        if (sq->armed_ms != INT64_MAX)
            evtimer_del(sq->timer_ev);
        sq->armed_ms = INT64_MAX;
        return;
    }
    if (at == sq->armed_ms)
        return;
    int64_t delay = at - rb_now_ms();
    if (delay < 0)
        delay = 0;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(sq->timer_ev, &tv);
    sq->armed_ms = at;
}

int rb_sq_push(rb_sq *sq, json_t *job)
{
    const char *jid = rb_json_str(job, "jid");
    if (rb_jobs_find(&sq->jobs, jid))
        return RB_EEXIST;
    int64_t now_us = rb_now_us(), now = now_us / 1000;
    /* the engine's defaults; created_at (when the server makes it) and
     * enqueued_at stay outside the text while the job waits: see
     * rb_job_json_out() */
    rb_job_fields nj;
    rb_job_fields_read(job, now, (int)sq->cfg->server.reserve_for_s, &nj);
    int64_t at_ms = nj.at_ms;
    bool made_created = nj.made_created;
    char *text = json_dumps(job, JSON_COMPACT);
    rb_queue *q = rb_jobs_queue(&sq->jobs, nj.queue, true);
    rb_sq_queue_known(sq, q, true);
    rb_job *j = rb_job_new(jid, text, q, nj.priority);
    rb_sq_group_of_json(sq, j, job);
    j->reserve_s = nj.reserve_s;
    j->timer.at_ms = at_ms > now ? at_ms : now;
    j->enq_frac_us = at_ms > now ? 0 : (uint64_t)(now_us % 1000); /* if enqueued at once */
    j->first_ms = at_ms > now ? 0 : now;
    j->created_us = made_created ? now_us : 0;
    j->timer.seq = sq->jobs.next_seq++;
    rb_jobs_add(&sq->jobs, j);
    if (rb_deps_add_child(sq, j, job))
        j->first_ms = 0; /* its policy counts from its release */
    rb_sq_persist(sq, j);
    return 0;
}
