/* The HTTP API and /metrics in distributed mode: the endpoints that read or
 * change jobs and queues and still have a PostgreSQL twin (info, queues,
 * job, bulk and queue actions) run on the PostgreSQL engine. Each handler
 * checks its request on the loop thread with the single-node rules and
 * messages, posts one request to a database thread (pgmode.h) and answers
 * from its completion; actions answer after the engine's COMMIT, through
 * the same engine calls as the protocol's MUTATE and QUEUE; the workers'
 * list is the cluster's (pg_workers.c). GET /api/jobs, GET /api/job/JID
 * and the worker actions have one handler for both modes, through the job
 * engine (http_api.c, http_actions.c); stats and policy simulation stay
 * per node. */
#include "server/http_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/pg_workers.h"
#include "server/pgmode.h"

/* What an HTTP request keeps while its database request is out. */
typedef struct hreq {
    rb_http *h;
    struct evhttp_request *req;
    char *jid, *name;           /* the path's job id or queue name (owned) */
    char action[16];            /* retry, kill, discard; pause, resume */
    const char *cmd;            /* MUTATE cmd of the action */
    bool pause;
    /* bulk filters (owned strings) */
    rb_pg_filter f;
    char *queue, *jobtype, *errtype;
    char **jids;                /* bulk: the named jids (owned) */
    size_t n_jids;
    bool all;
    /* results */
    int status;                 /* 0, or the HTTP error found in the database */
    char msg[400];
    rb_pg_info info;
    bool have_info;
    double *latency;            /* per info queue, or for name */
    rb_pg_job job;
    bool have_job;
    int prev_state, new_state;  /* job action: before, after (0: gone) */
    size_t changed;
} hreq;

static void hreq_free(void *p)
{
    hreq *d = p;
    free(d->jid);
    free(d->name);
    free(d->queue);
    free(d->jobtype);
    free(d->errtype);
    for (size_t i = 0; i < d->n_jids; i++)
        free(d->jids[i]);
    free(d->jids);
    if (d->have_info)
        rb_pg_info_release(&d->info);
    free(d->latency);
    if (d->have_job)
        rb_pg_job_release(&d->job);
    free(d);
}

static hreq *hreq_new(rb_http_req *r)
{
    hreq *d = rb_xcalloc(1, sizeof *d);
    d->h = r->h;
    d->req = r->req;
    return d;
}

static void post(rb_srv *srv, hreq *d, void (*call)(rb_pg *, rb_pgreq *),
                 void (*done)(rb_srv *, rb_pgreq *))
{
    rb_pgreq_post(srv, rb_pgreq_new_call(NULL, d, hreq_free, call, done));
}

/* For a done handler: true after answering a database error (500) or an
 * error found on the database thread (d->status), and finishing r. */
static bool answered(rb_srv *srv, rb_pgreq *r)
{
    hreq *d = r->data;
    if (r->rc) {
        rb_pgmode_storage_error(srv, r); /* logs; no connection to answer */
        rb_http_reply_error(d->req, 500, "storage error: %s", rb_err_msg(&r->err));
    } else {
        rb_pgmode_storage_ok(srv);
        if (!d->status)
            return false;
        rb_http_reply_error(d->req, d->status, "%s", d->msg);
    }
    rb_pgreq_finish(srv, r);
    return true;
}

/* The cluster's numbers and every listed queue's latency. */
static int read_info(rb_pg *pg, hreq *d, rb_err *err)
{
    int rc = rb_pg_info_get(pg, &d->info, err);
    if (rc)
        return rc;
    d->have_info = true;
    size_t n = d->info.n_queues;
    const char **names = rb_xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = d->info.queues[i].name;
    d->latency = rb_xcalloc(n + 1, sizeof *d->latency);
    rc = n ? rb_pg_queue_latency(pg, names, (int)n, rb_now_ms(), d->latency, err) : 0;
    free(names);
    return rc;
}

static void info_call(rb_pg *pg, rb_pgreq *r)
{
    r->rc = read_info(pg, r->data, &r->err);
}

static json_t *queue_json(const char *name, int64_t size, double latency, bool paused)
{
    return json_pack("{s:s, s:I, s:f, s:b}", "name", name, "size", (json_int_t)size, "latency_s",
                     latency, "paused", paused);
}

/* --- GET /api/info, GET /api/queues --- */

static void api_info_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    const rb_pg_info *in = &d->info;
    json_t *jobs = json_pack("{s:I, s:I, s:I, s:I, s:I}", "scheduled", (json_int_t)in->scheduled,
                             "enqueued", (json_int_t)in->enqueued, "working",
                             (json_int_t)in->working, "retries", (json_int_t)in->retries, "dead",
                             (json_int_t)in->dead);
    json_t *v = rb_api_info_json(srv, "postgresql", jobs, (int64_t)in->processed,
                                 (int64_t)in->failures, (size_t)in->n_queues);
    json_object_set_new(json_object_get(v, "server"), "workers", json_integer(in->workers));
    rb_http_reply_json(d->req, 200, v);
    rb_pgreq_finish(srv, r);
}

static void pg_api_info(rb_http_req *r)
{
    post(r->h->srv, hreq_new(r), info_call, api_info_done);
}

static void api_queues_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    json_t *arr = json_array();
    for (size_t i = 0; i < d->info.n_queues; i++) /* by name already */
        json_array_append_new(arr, queue_json(d->info.queues[i].name, d->info.queues[i].size,
                                              d->latency[i], d->info.queues[i].paused));
    rb_http_reply_json(d->req, 200, json_pack("{s:o}", "queues", arr));
    rb_pgreq_finish(srv, r);
}

static void pg_api_queues(rb_http_req *r)
{
    post(r->h->srv, hreq_new(r), info_call, api_queues_done);
}

/* Reads d->jid into d->job; a missing job is d->status 404. */
static int get_job(rb_pg *pg, hreq *d, rb_err *err)
{
    int rc = rb_pg_job_get(pg, d->jid, &d->job, err);
    if (rc == RB_ENOENT) {
        d->status = 404;
        snprintf(d->msg, sizeof d->msg, "no job '%s'", d->jid);
        return 0;
    }
    d->have_job = rc == 0;
    return rc;
}

/* --- POST /api/job/JID/ACTION, POST /api/jobs/ACTION --- */

static bool mutable_state(int st)
{
    return st == RB_JOB_SCHEDULED || st == RB_JOB_RETRIES || st == RB_JOB_DEAD;
}

static void job_action_call(rb_pg *pg, rb_pgreq *r)
{
    hreq *d = r->data;
    if ((r->rc = get_job(pg, d, &r->err)) || d->status)
        return;
    d->prev_state = d->job.state;
    if (!mutable_state(d->prev_state)) {
        d->status = 409;
        snprintf(d->msg, sizeof d->msg,
                 "job '%s' is %s: only scheduled, retries and dead jobs can be changed", d->jid,
                 rb_job_state_name((rb_job_state)d->prev_state));
        return;
    }
    const char *jids[1] = {d->jid};
    rb_mutation m = {.cmd = d->cmd, .target = d->prev_state, .jids = jids, .n_jids = 1};
    if ((r->rc = rb_pg_mutate(pg, &m, rb_now_ms(), &d->changed, &r->err)))
        return;
    rb_pg_job_release(&d->job);
    d->have_job = false;
    r->rc = get_job(pg, d, &r->err);
    d->new_state = d->have_job ? d->job.state : 0;
    d->status = 0; /* gone (discarded) is an answer here, not a 404 */
}

static void job_action_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    rb_log(RB_LOG_INFO, "HTTP: %s job %s", d->action, d->jid);
    json_t *v = json_pack("{s:s, s:s, s:s, s:o}", "jid", d->jid, "action", d->action,
                          "previous_state", rb_job_state_name((rb_job_state)d->prev_state),
                          "state", d->new_state ? json_string(rb_job_state_name(
                                                      (rb_job_state)d->new_state))
                                                : json_null());
    rb_http_reply_json(d->req, 200, v);
    if (d->new_state == RB_JOB_ENQUEUED)
        rb_pgmode_kick(srv, NULL, 0);
    rb_pgreq_finish(srv, r);
}

static void pg_api_job_action(rb_http_req *r)
{
    const char *cmd = rb_api_action_cmd(r, "job", r->seg[2]);
    if (!cmd)
        return;
    hreq *d = hreq_new(r);
    d->jid = rb_xstrdup(r->seg[1]);
    d->cmd = cmd;
    snprintf(d->action, sizeof d->action, "%s", r->seg[2]);
    post(r->h->srv, d, job_action_call, job_action_done);
}

static bool named(const hreq *d, const char *jid)
{
    for (size_t i = 0; i < d->n_jids; i++)
        if (!strcmp(d->jids[i], jid))
            return true;
    return false;
}

/* The bulk action: MUTATE's own filters when they suffice (jids, or every
 * job of the state with an optional job type); otherwise the jids of the
 * matching jobs are read first (queue and errtype filters) and mutated as
 * a list, in one MUTATE. */
static void bulk_call(rb_pg *pg, rb_pgreq *r)
{
    hreq *d = r->data;
    rb_mutation m = {.cmd = d->cmd, .target = d->f.state};
    int64_t now = rb_now_ms();
    if (!d->queue && !d->errtype) {
        if (d->all) {
            m.jobtype = d->jobtype;
        } else {
            if (d->jobtype) /* a job type with a list: read the list's jobs below */
                goto collect;
            if (!d->n_jids) /* an empty list changes nothing */
                return;
            m.jids = (const char *const *)d->jids;
            m.n_jids = d->n_jids;
        }
        r->rc = rb_pg_mutate(pg, &m, now, &d->changed, &r->err);
        return;
    }
collect:;
    rb_pg_filter f = {.state = d->f.state, .queue = d->queue, .jobtype = d->jobtype,
                      .errtype = d->errtype, .offset = 0, .limit = 1000};
    char **pick = NULL;
    size_t n_pick = 0;
    for (;;) {
        rb_pg_job *jobs = NULL;
        size_t n = 0;
        int64_t total = 0;
        if ((r->rc = rb_pg_jobs(pg, &f, &jobs, &n, &total, &r->err)))
            break;
        for (size_t i = 0; i < n; i++) {
            if (!d->all && !named(d, jobs[i].jid))
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
        r->rc = rb_pg_mutate(pg, &m, now, &d->changed, &r->err);
    }
    for (size_t i = 0; i < n_pick; i++)
        free(pick[i]);
    free(pick);
}

static void bulk_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    const char *state = rb_job_state_name((rb_job_state)d->f.state);
    rb_log(RB_LOG_INFO, "HTTP: %s %zu %s jobs", d->action, d->changed, state);
    rb_http_reply_json(d->req, 200,
                       json_pack("{s:s, s:s, s:I}", "action", d->action, "state", state,
                                 "changed", (json_int_t)d->changed));
    if (!strcmp(d->cmd, "requeue") && d->changed)
        rb_pgmode_kick(srv, NULL, 0);
    rb_pgreq_finish(srv, r);
}

static char *opt_string(json_t *o, const char *key, bool *bad)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        *bad = true;
    const char *s = json_string_value(v);
    return s && *s ? rb_xstrdup(s) : NULL;
}

static void pg_api_bulk_action(rb_http_req *r)
{
    const char *action = r->seg[1], *cmd = rb_api_action_cmd(r, "bulk", action);
    if (!cmd)
        return;
    json_t *body = rb_http_body_json(r->req);
    if (!body)
        return;
    hreq *d = hreq_new(r);
    d->cmd = cmd;
    snprintf(d->action, sizeof d->action, "%s", action);
    bool bad = !json_is_object(body);
    char *state = bad ? NULL : opt_string(body, "state", &bad);
    d->queue = bad ? NULL : opt_string(body, "queue", &bad);
    d->jobtype = bad ? NULL : opt_string(body, "jobtype", &bad);
    d->errtype = bad ? NULL : opt_string(body, "errtype", &bad);
    json_t *jids = bad ? NULL : json_object_get(body, "jids");
    json_t *all = bad ? NULL : json_object_get(body, "all");
    d->f.state = state ? rb_job_state_parse(state) : -1;
    free(state);
    if (bad || (jids && !json_is_array(jids)) || (all && !json_is_boolean(all))) {
        rb_http_reply_error(r->req, 400, "the body must be an object: {\"state\", \"jids\": [...]} "
                            "or {\"state\", \"all\": true, \"queue\", \"jobtype\", \"errtype\"}");
    } else if (!mutable_state(d->f.state)) {
        rb_http_reply_error(r->req, 400, "state must be scheduled, retries or dead");
    } else if (!jids && !json_is_true(all)) {
        rb_http_reply_error(r->req, 400, "name the jobs: \"jids\": [...] or \"all\": true");
    } else {
        d->all = !jids;
        if (jids) {
            d->jids = rb_xcalloc(json_array_size(jids) + 1, sizeof *d->jids);
            size_t i;
            json_t *v;
            json_array_foreach(jids, i, v) {
                if (json_is_string(v))
                    d->jids[d->n_jids++] = rb_xstrdup(json_string_value(v));
            }
        }
        json_decref(body);
        post(r->h->srv, d, bulk_call, bulk_done);
        return;
    }
    json_decref(body);
    hreq_free(d);
}

/* --- POST /api/queues/NAME/ACTION --- */

static void queue_call(rb_pg *pg, rb_pgreq *r)
{
    hreq *d = r->data;
    const char *names[1] = {d->name};
    if (!d->pause) { /* as a single node: resuming an unknown queue is a 404 */
        bool known = false;
        if ((r->rc = rb_pg_queue_known(pg, d->name, &known, &r->err)))
            return;
        if (!known) {
            d->status = 404;
            snprintf(d->msg, sizeof d->msg, "no queue '%s'", d->name);
            return;
        }
    }
    if ((r->rc = rb_pg_queue_pause(pg, names, 1, d->pause, &r->err)))
        return;
    r->rc = read_info(pg, d, &r->err);
}

static void queue_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    int64_t size = 0;
    double latency = 0;
    for (size_t i = 0; i < d->info.n_queues; i++) {
        if (!strcmp(d->info.queues[i].name, d->name)) {
            size = d->info.queues[i].size;
            latency = d->latency[i];
        }
    }
    rb_log(RB_LOG_INFO, "HTTP: %s queue %s", d->action, d->name);
    rb_http_reply_json(d->req, 200,
                       json_pack("{s:o}", "queue", queue_json(d->name, size, latency, d->pause)));
    if (!d->pause)
        rb_pgmode_kick(srv, NULL, 0);
    rb_pgreq_finish(srv, r);
}

static void pg_api_queue_action(rb_http_req *r)
{
    const char *name = r->seg[1], *action = r->seg[2];
    bool pause;
    if (!rb_api_queue_action_args(r, &pause))
        return;
    hreq *d = hreq_new(r);
    d->name = rb_xstrdup(name);
    d->pause = pause;
    snprintf(d->action, sizeof d->action, "%s", action);
    post(r->h->srv, d, queue_call, queue_done);
}

/* --- /metrics --- */

static void metrics_done(rb_srv *srv, rb_pgreq *r)
{
    if (answered(srv, r))
        return;
    hreq *d = r->data;
    const rb_pg_info *in = &d->info;
    rb_metrics_queue *qs = rb_xcalloc(in->n_queues + 1, sizeof *qs);
    for (size_t i = 0; i < in->n_queues; i++)
        qs[i] = (rb_metrics_queue){in->queues[i].name, in->queues[i].size, in->queues[i].paused,
                                   d->latency[i]};
    rb_metrics_state st = {qs,           in->n_queues, in->scheduled, in->enqueued,
                           in->working,  in->retries,  in->dead};
    rb_buf b = RB_BUF_INIT;
    rb_metrics_render_state(srv->metrics, srv, &st, &b);
    rb_http_reply_raw(d->req, 200, "text/plain; version=0.0.4; charset=utf-8", rb_buf_str(&b),
                      b.len);
    rb_buf_release(&b);
    free(qs);
    rb_pgreq_finish(srv, r);
}

void rb_http_pg_metrics(rb_http *h, struct evhttp_request *req)
{
    hreq *d = rb_xcalloc(1, sizeof *d);
    d->h = h;
    d->req = req;
    post(h->srv, d, info_call, metrics_done);
}

/* --- the table --- */

static const struct {
    rb_http_handler sqlite, pg;
} table[] = {
    {rb_api_info, pg_api_info},
    {rb_api_queues, pg_api_queues},
    {rb_api_job_action, pg_api_job_action},
    {rb_api_bulk_action, pg_api_bulk_action},
    {rb_api_queue_action, pg_api_queue_action},
    {rb_api_workers, rb_http_pg_workers},
};

rb_http_handler rb_http_pg_handler(rb_http_handler fn)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].sqlite == fn)
            return table[i].pg;
    return fn;
}
