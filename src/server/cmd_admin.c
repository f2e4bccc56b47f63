/* Inspection and administration: INFO, FLUSH, MUTATE, QUEUE, JOB, JOBS,
 * WORKERS. */
#include "server/cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/version.h"
#include "engine/engine.h"
#include "server/log.h"

long rb_cmd_rss_mb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * 4096 / (1024 * 1024);
}

/* rb_table_each: a queue INFO lists into the rb_cmd_info_figures arg. */
static void collect_queue(void *e, void *arg)
{
    rb_queue *q = e;
    rb_cmd_info_figures *f = arg;
    if (q->size > 0 || q->paused)
        f->queues[f->n_queues++] = (rb_cmd_info_queue){q->name, (int64_t)q->size, q->paused};
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const rb_cmd_info_queue *)a)->name, ((const rb_cmd_info_queue *)b)->name);
}

json_t *rb_cmd_info_json(const rb_srv *srv, rb_cmd_info_figures *f)
{
    int64_t now = rb_now_ms();
    char ts[RB_TIME_STRLEN], utc[16];
    rb_time_format(now, ts);
    snprintf(utc, sizeof utc, "%.8s UTC", ts + 11);
    if (f->n_queues > 1)
        qsort(f->queues, f->n_queues, sizeof *f->queues, by_name);
    json_t *queues = json_object(), *paused = json_array();
    for (size_t i = 0; i < f->n_queues; i++) {
        json_object_set_new(queues, f->queues[i].name, json_integer(f->queues[i].size));
        if (f->queues[i].paused)
            json_array_append_new(paused, json_string(f->queues[i].name));
    }
    return json_pack(
        "{s:s, s:s, s:{s:I, s:I, s:I, s:I, s:o, s:{s:{s:I}, s:{s:I}, s:{s:I}, s:{s:I}, s:{s:I}}},"
        " s:{s:s, s:s, s:I, s:I, s:I, s:I}, s:{s:s, s:s, s:o}}",
        "now", ts, "server_utc_time", utc, "faktory", "total_failures", (json_int_t)f->failures,
        "total_processed", (json_int_t)f->processed, "total_enqueued", (json_int_t)f->enqueued,
        "total_queues", (json_int_t)f->n_queues, "queues", queues, "tasks", "Scheduled", "size",
        (json_int_t)f->scheduled, "Retries", "size", (json_int_t)f->retries, "Dead", "size",
        (json_int_t)f->dead, "Busy", "size", (json_int_t)f->working, "Workers", "size",
        (json_int_t)f->workers, "server", "description", "Rebound", "faktory_version",
        RB_FAKTORY_VERSION, "uptime", (json_int_t)((now - srv->started_ms) / 1000), "connections",
        (json_int_t)srv->conns.size, "command_count", (json_int_t)srv->command_count,
        "used_memory_mb", (json_int_t)rb_cmd_rss_mb(), "rebound", "version", RB_VERSION,
        "faktory_protocol_version", RB_FAKTORY_VERSION, "paused_queues", paused);
}

/* INFO's "rebound" key: the group-commit figures (Faktory's keys stay as
 * they are). Each commit is one fsync of the WAL. */
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

void rb_cmd_info(rb_conn *c, char *arg)
{
    (void)arg;
    rb_srv *srv = c->srv;
    rb_cmd_info_figures f = {
        .processed = (int64_t)srv->total_processed,
        .failures = (int64_t)srv->total_failures,
        .enqueued = (int64_t)srv->jobs.enqueued,
        .scheduled = (int64_t)srv->jobs.scheduled.size,
        .retries = (int64_t)srv->jobs.retries.size,
        .dead = (int64_t)srv->jobs.dead.size,
        .working = (int64_t)srv->jobs.working.size,
        .workers = (int64_t)srv->workers.size,
        .queues = rb_xcalloc(srv->jobs.queues.size + 1, sizeof(rb_cmd_info_queue)),
    };
    rb_table_each(&srv->jobs.queues, collect_queue, &f);
    json_t *info = rb_cmd_info_json(srv, &f);
    free(f.queues);
    json_object_update_new(json_object_get(info, "rebound"), group_commit_info(srv));
    rb_reply_json(c, info);
}

/* FLUSH and MUTATE reply +OK once their change is durable. */
static void ok_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_eng_failed(srv, op))
        return;
    if (op->kind == RB_ENG_FLUSH)
        rb_log(RB_LOG_INFO, "FLUSH: every job and counter deleted");
    else
        rb_log(RB_LOG_INFO, "MUTATE %s %s: %zu jobs", op->u.mutate.m.cmd,
               rb_job_state_name(op->u.mutate.m.target), op->u.mutate.changed);
    rb_reply_ok(op->c);
    rb_eng_op_finish(srv, op);
}

void rb_cmd_flush(rb_conn *c, char *arg)
{
    (void)arg;
    rb_eng_submit(c->srv, rb_eng_op_new(RB_ENG_FLUSH, c, ok_done));
}

/* --- MUTATE --- */

void rb_cmd_mutate(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "MUTATE", arg, JSON_OBJECT);
    if (!o)
        return;
    rb_mutation m;
    rb_err err = {0};
    if (rb_mutation_parse(o, &m, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        json_decref(o);
        return;
    }
    rb_eng_op *op = rb_eng_op_new(RB_ENG_MUTATE, c, ok_done);
    op->u.mutate.m = m;
    op->json = o; /* m borrows its strings */
    rb_eng_submit(c->srv, op);
}

/* --- QUEUE --- */

static void queue_set_paused(rb_srv *srv, rb_queue *q, bool paused)
{
    char key[256];
    snprintf(key, sizeof key, "paused:%s", q->name);
    q->paused = paused;
    rb_writer_meta(srv->writer, key, paused ? "1" : NULL);
}

static void queue_remove(rb_srv *srv, rb_queue *q)
{
    for (int p = 0; p < RB_PRIORITIES; p++)
        while (q->ready[p].head)
            rb_srv_forget(srv, rb_job_of_link(q->ready[p].head));
    if (q->paused)
        queue_set_paused(srv, q, false);
}

typedef struct qop {
    rb_srv *srv;
    const char *verb;
} qop;

static void queue_apply(void *e, void *arg)
{
    qop *op = arg;
    if (!strcmp(op->verb, "PAUSE"))
        queue_set_paused(op->srv, e, true);
    else if (!strcmp(op->verb, "RESUME"))
        queue_set_paused(op->srv, e, false);
    else
        queue_remove(op->srv, e);
}

static double latency_s(const rb_queue *q, int64_t now)
{
    int64_t oldest = now;
    for (int p = 0; p < RB_PRIORITIES; p++)
        if (q->ready[p].head && rb_job_of_link(q->ready[p].head)->timer.at_ms < oldest)
            oldest = rb_job_of_link(q->ready[p].head)->timer.at_ms;
    return (double)(now - oldest) / 1000.0;
}

int rb_cmd_queue_args(rb_conn *c, char *arg, char **verbp, char *names[RB_CMD_QUEUE_NAMES])
{
    char *save = NULL, *verb = strtok_r(arg, " \t", &save);
    for (char *p = verb; p && *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    if (!verb || (strcmp(verb, "PAUSE") && strcmp(verb, "RESUME") && strcmp(verb, "REMOVE") &&
                  strcmp(verb, "LATENCY"))) {
        rb_reply_err(c, "QUEUE: subcommand must be PAUSE, RESUME, REMOVE or LATENCY");
        return -1;
    }
    int n = 0;
    for (char *q; (q = strtok_r(NULL, " \t", &save));) {
        if (n == RB_CMD_QUEUE_NAMES) {
            rb_reply_err(c, "QUEUE: at most 256 queue names");
            return -1;
        }
        if (strcmp(q, "*") && !rb_queue_name_valid(q)) {
            rb_reply_err(c, "QUEUE: queue name '%.40s...' is longer than %d bytes", q,
                         RB_QUEUE_NAME_MAX);
            return -1;
        }
        names[n++] = q;
    }
    if (n == 0) {
        rb_reply_err(c, "QUEUE %s: name at least one queue (or *)", verb);
        return -1;
    }
    *verbp = verb;
    return n;
}

void rb_cmd_queue(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    char *verb, *names[RB_CMD_QUEUE_NAMES];
    int n = rb_cmd_queue_args(c, arg, &verb, names);
    if (n < 0)
        return;
    if (!strcmp(verb, "LATENCY")) {
        json_t *out = json_object();
        int64_t now = rb_now_ms();
        for (int i = 0; i < n; i++) {
            rb_queue *q = rb_jobs_queue(&srv->jobs, names[i], false);
            json_object_set_new(out, names[i], json_real(q ? latency_s(q, now) : 0.0));
        }
        rb_reply_json(c, out);
        return;
    }
    qop op = {srv, verb};
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "*")) {
            rb_table_each(&srv->jobs.queues, queue_apply, &op);
            continue;
        }
        rb_queue *q = rb_jobs_queue(&srv->jobs, names[i], strcmp(verb, "PAUSE") == 0);
        if (q)
            queue_apply(q, &op);
    }
    rb_log(RB_LOG_INFO, "QUEUE %s by a client", verb);
    rb_srv_reply_after_commit(srv, c);
    rb_srv_kick(srv);
}

/* --- JOB, JOBS --- */

static json_t *job_view(const rb_job *j)
{
    char *text = rb_job_json_out(j, j->state == RB_JOB_ENQUEUED ? j->timer.at_ms : 0);
    json_t *v = json_pack("{s:s, s:o, s:I}", "state", rb_job_state_name(j->state), "job",
                          json_loads(text, 0, NULL), "attempts", (json_int_t)j->attempts);
    free(text);
    return v;
}

void rb_cmd_job(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "JOB", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *jid = rb_cmd_jid(c, "JOB", o);
    if (jid) {
        rb_job *j = rb_jobs_find(&c->srv->jobs, jid);
        if (!j || j->state == RB_JOB_PENDING) {
            rb_reply_null(c);
        } else {
            json_t *v = job_view(j);
            json_t *h = j->history ? json_loads(j->history, 0, NULL) : NULL;
            json_object_set_new(v, "history", h ? h : json_array());
            char ts[RB_TIME_STRLEN];
            bool timed = j->state == RB_JOB_SCHEDULED || j->state == RB_JOB_RETRIES;
            json_object_set_new(v, "next_at",
                                timed ? json_string(rb_time_format(j->timer.at_ms, ts)) : json_null());
            if (j->state == RB_JOB_WORKING) {
                json_object_set_new(v, "reserved_until",
                                    json_string(rb_time_format(j->timer.at_ms, ts)));
                json_object_set_new(v, "wid", j->wid ? json_string(j->wid) : json_null());
            }
            rb_reply_json(c, v);
        }
    }
    json_decref(o);
}

typedef struct listing {
    const char *queue, *jobtype, *errtype;
    int64_t offset, limit, total;
    json_t *jobs;
} listing;

static void list_one(listing *ls, const rb_job *j)
{
    if (ls->queue && strcmp(ls->queue, j->queue->name))
        return;
    if (ls->jobtype || ls->errtype) {
        json_t *o = json_loads(j->json, 0, NULL);
        const char *jt = rb_srv_json_str(o, "jobtype");
        const char *et = rb_srv_json_str(json_object_get(o, "failure"), "errtype");
        bool ok = (!ls->jobtype || (jt && !strcmp(jt, ls->jobtype))) &&
                  (!ls->errtype || (et && !strcmp(et, ls->errtype)));
        json_decref(o);
        if (!ok)
            return;
    }
    if (ls->total >= ls->offset && (int64_t)json_array_size(ls->jobs) < ls->limit)
        json_array_append_new(ls->jobs, job_view(j));
    ls->total++;
}

static void list_queue(listing *ls, const rb_queue *q)
{
    for (int p = RB_PRIORITIES - 1; p >= 0; p--)
        for (rb_link *e = q->ready[p].head; e; e = e->next)
            list_one(ls, rb_job_of_link(e));
}

static void list_queue_cb(void *e, void *arg)
{
    list_queue(arg, e);
}

int rb_cmd_jobs_args_get(rb_conn *c, json_t *o, rb_cmd_jobs_args *a)
{
    const char *state = rb_srv_json_str(o, "state");
    json_t *off = json_object_get(o, "offset"), *lim = json_object_get(o, "limit");
    *a = (rb_cmd_jobs_args){.state = state ? rb_job_state_parse(state) : -1,
                            .queue = rb_srv_json_str(o, "queue"),
                            .jobtype = rb_srv_json_str(o, "jobtype"),
                            .errtype = rb_srv_json_str(o, "errtype"),
                            .offset = off ? json_integer_value(off) : 0,
                            .limit = lim ? json_integer_value(lim) : 50};
    if (a->state < 0) {
        rb_reply_err(c, "JOBS: state must be scheduled, enqueued, working, retries or dead");
        return -1;
    }
    if ((off && !json_is_integer(off)) || a->offset < 0 || (lim && !json_is_integer(lim)) ||
        a->limit < 0 || a->limit > 10000) {
        rb_reply_err(c, "JOBS: offset must be >= 0 and limit from 0 to 10000");
        return -1;
    }
    return 0;
}

void rb_cmd_jobs(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    json_t *o = rb_cmd_json_arg(c, "JOBS", arg, JSON_OBJECT);
    if (!o)
        return;
    rb_cmd_jobs_args a;
    if (rb_cmd_jobs_args_get(c, o, &a) == 0) {
        int st = a.state;
        listing ls = {.queue = a.queue,
                      .jobtype = a.jobtype,
                      .errtype = a.errtype,
                      .offset = a.offset,
                      .limit = a.limit,
                      .jobs = json_array()};
        if (st == RB_JOB_ENQUEUED) {
            rb_queue *q = ls.queue ? rb_jobs_queue(&srv->jobs, ls.queue, false) : NULL;
            if (q)
                list_queue(&ls, q);
            else if (!ls.queue)
                rb_table_each(&srv->jobs.queues, list_queue_cb, &ls);
        } else {
            for (rb_link *e = rb_jobs_state_list(&srv->jobs, st)->head; e; e = e->next)
                list_one(&ls, rb_job_of_link(e));
        }
        rb_reply_json(c, json_pack("{s:I, s:o}", "total", (json_int_t)ls.total, "jobs", ls.jobs));
    }
    json_decref(o);
}

int rb_cmd_workers_signal(rb_conn *c, const json_t *o)
{
    const char *cmd = rb_srv_json_str(o, "cmd");
    int sig = !cmd ? 0 : !strcmp(cmd, "quiet") ? RB_WORKER_QUIET
                     : !strcmp(cmd, "terminate") ? RB_WORKER_TERMINATE : 0;
    if (!sig)
        rb_reply_err(c, "WORKERS: cmd must be quiet or terminate");
    return sig;
}

void rb_cmd_workers(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    json_t *o = rb_cmd_json_arg(c, "WORKERS", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *wid = rb_srv_json_str(o, "wid");
    int sig = rb_cmd_workers_signal(c, o);
    if (sig && wid) {
        rb_worker *w = rb_srv_worker(srv, wid, false);
        if (!w)
            rb_reply_err(c, "WORKERS: unknown worker %s", wid);
        else {
            w->signal = sig;
            rb_reply_ok(c);
        }
    } else if (sig) {
        for (size_t i = 0; i < srv->workers.nbuckets; i++)
            for (rb_worker *w = srv->workers.buckets[i]; w; w = w->hnext)
                w->signal = sig;
        rb_reply_ok(c);
    }
    json_decref(o);
}

/* --- shared with the HTTP API (srv.h) --- */

void rb_srv_queue_pause(rb_srv *srv, rb_queue *q, bool paused)
{
    queue_set_paused(srv, q, paused);
}
