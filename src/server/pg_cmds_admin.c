/* Distributed mode's inspection and administration commands: INFO, FLUSH,
 * MUTATE, QUEUE, JOB and JOBS on the PostgreSQL engine (pg_cmds_impl.h). */
#include "server/pg_cmds_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"

/* --- INFO, FLUSH --- */

static void info_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pgcmd_data *d = r->data;
    r->rc = rb_pg_info_get(pg, &d->info, &r->err);
    d->have_info = r->rc == 0;
}

static void info_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pg_info *in = &((rb_pgcmd_data *)r->data)->info;
    rb_cmd_info_figures f = {
        .processed = in->processed,
        .failures = in->failures,
        .enqueued = in->enqueued,
        .scheduled = in->scheduled,
        .retries = in->retries,
        .dead = in->dead,
        .working = in->working,
        .workers = in->workers,
        .queues = rb_xcalloc(in->n_queues + 1, sizeof(rb_cmd_info_queue)),
        .n_queues = in->n_queues,
    };
    for (size_t i = 0; i < in->n_queues; i++)
        f.queues[i] = (rb_cmd_info_queue){in->queues[i].name, in->queues[i].size,
                                          in->queues[i].paused};
    json_t *info = rb_cmd_info_json(srv, &f);
    free(f.queues);
    json_object_set_new(json_object_get(info, "rebound"), "storage",
                        json_pack("{s:s, s:i}", "backend", "postgresql", "schema_version",
                                  RB_PG_SCHEMA_VERSION));
    rb_reply_json(r->c, info);
    rb_pgreq_finish(srv, r);
}

static void post_call(rb_conn *c, json_t *arg, void (*call)(rb_pg *, rb_pgreq *),
                      void (*done)(rb_srv *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    rb_pgcmd_attach(r, arg);
    r->call = call;
    r->done = done;
    rb_pgreq_post(c->srv, r);
}

void rb_pgcmd_info(rb_conn *c, char *arg)
{
    (void)arg;
    post_call(c, NULL, info_call, info_done);
}

/* --- QUEUE --- */

static void queue_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pgcmd_data *d = r->data;
    const char *const *names = (const char *const *)d->names;
    if (!strcmp(d->verb, "LATENCY")) {
        d->latency = rb_xcalloc((size_t)d->n_names, sizeof *d->latency);
        r->rc = rb_pg_queue_latency(pg, names, d->n_names, rb_now_ms(), d->latency, &r->err);
    } else if (!strcmp(d->verb, "REMOVE")) {
        r->rc = rb_pg_queue_remove(pg, names, d->n_names, NULL, &r->err);
    } else {
        r->rc = rb_pg_queue_pause(pg, names, d->n_names, !strcmp(d->verb, "PAUSE"), &r->err);
    }
}

static void queue_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
    if (!strcmp(d->verb, "LATENCY")) {
        json_t *out = json_object();
        for (int i = 0; i < d->n_names; i++)
            json_object_set_new(out, d->names[i], json_real(d->latency[i]));
        rb_reply_json(r->c, out);
    } else {
        rb_log(RB_LOG_INFO, "QUEUE %s by a client", d->verb);
        rb_reply_ok(r->c);
        if (!strcmp(d->verb, "RESUME"))
            rb_pgmode_kick(srv, NULL, 0);
    }
    rb_pgreq_finish(srv, r);
}

void rb_pgcmd_queue(rb_conn *c, char *arg)
{
    char *verb, *names[RB_CMD_QUEUE_NAMES];
    int n = rb_cmd_queue_args(c, arg, &verb, names);
    if (n < 0)
        return;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    rb_pgcmd_data *d = rb_pgcmd_attach(r, NULL);
    snprintf(d->verb, sizeof d->verb, "%s", verb);
    d->names = rb_xcalloc((size_t)n, sizeof *d->names);
    for (int i = 0; i < n; i++)
        d->names[d->n_names++] = rb_xstrdup(names[i]);
    r->call = queue_call;
    r->done = queue_done;
    rb_pgreq_post(c->srv, r);
}

/* --- JOB, JOBS --- */

static json_t *job_view(const rb_pg_job *j)
{
    json_t *job = json_loads(j->json, 0, NULL);
    return json_pack("{s:s, s:o, s:I}", "state", rb_job_state_name((rb_job_state)j->state), "job",
                     job ? job : json_null(), "attempts", (json_int_t)j->attempts);
}

static void job_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pgcmd_data *d = r->data;
    r->rc = rb_pg_job_get(pg, r->jid, &d->job, &r->err);
    d->have_job = r->rc == 0;
    if (r->rc == RB_ENOENT)
        r->rc = 0;
}

static void job_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
    if (!d->have_job) {
        rb_reply_null(r->c);
        rb_pgreq_finish(srv, r);
        return;
    }
    const rb_pg_job *j = &d->job;
    json_t *v = job_view(j);
    json_t *h = j->history ? json_loads(j->history, 0, NULL) : NULL;
    json_object_set_new(v, "history", h ? h : json_array());
    char ts[RB_TIME_STRLEN];
    bool timed = j->state == RB_JOB_SCHEDULED || j->state == RB_JOB_RETRIES;
    json_object_set_new(v, "next_at", timed ? json_string(rb_time_format(j->due_ms, ts)) : json_null());
    if (j->state == RB_JOB_WORKING) {
        json_object_set_new(v, "reserved_until", json_string(rb_time_format(j->due_ms, ts)));
        json_object_set_new(v, "wid", j->wid ? json_string(j->wid) : json_null());
    }
    rb_reply_json(r->c, v);
    rb_pgreq_finish(srv, r);
}

void rb_pgcmd_job(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "JOB", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *jid = rb_cmd_jid(c, "JOB", o);
    if (!jid) {
        json_decref(o);
        return;
    }
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    rb_pgcmd_attach(r, o);
    r->jid = rb_xstrdup(jid);
    r->call = job_call;
    r->done = job_done;
    rb_pgreq_post(c->srv, r);
}

static void jobs_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pgcmd_data *d = r->data;
    r->rc = rb_pg_jobs(pg, &d->f, &d->jobs, &d->n_jobs, &d->total, &r->err);
}

static void jobs_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
    json_t *arr = json_array();
    for (size_t i = 0; i < d->n_jobs; i++)
        json_array_append_new(arr, job_view(&d->jobs[i]));
    rb_reply_json(r->c, json_pack("{s:I, s:o}", "total", (json_int_t)d->total, "jobs", arr));
    rb_pgreq_finish(srv, r);
}

void rb_pgcmd_jobs(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "JOBS", arg, JSON_OBJECT);
    if (!o)
        return;
    rb_cmd_jobs_args a;
    if (rb_cmd_jobs_args_get(c, o, &a) == 0) {
        rb_pg_filter f = {.state = a.state,
                          .queue = a.queue,
                          .jobtype = a.jobtype,
                          .errtype = a.errtype,
                          .offset = a.offset,
                          .limit = a.limit};
        rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
        rb_pgcmd_attach(r, o)->f = f;
        r->call = jobs_call;
        r->done = jobs_done;
        rb_pgreq_post(c->srv, r);
        return;
    }
    json_decref(o);
}
