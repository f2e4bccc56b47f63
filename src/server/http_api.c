/* The API's read endpoints: server info, throughput history, queues, job
 * lists with filters and paging, one job with its attempts and the schedule
 * its policy gives, workers, and policy simulation. */
#include "server/http_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/version.h"
#include "common/json.h"
#include "policy/simulate.h"
#include "server/metrics.h"

json_t *rb_api_time_or_null(int64_t ms)
{
    char ts[RB_TIME_STRLEN];
    return ms > 0 ? json_string(rb_time_format(ms, ts)) : json_null();
}

/* --- GET /api/info --- */

/* The answer from the engine's figures f: this node's server numbers and
 * counters since start, and f's job counts, all-time counters and queues
 * (a single node counts every known queue, distributed mode those with
 * jobs enqueued or paused: docs/http.md). */
static json_t *info_json(rb_srv *srv, const rb_eng_info *f)
{
    const rb_metrics *m = srv->eng->metrics;
    int64_t now = rb_now_ms();
    return json_pack(
        "{s:{s:s, s:s, s:s, s:o, s:o, s:I, s:s, s:s, s:I, s:I, s:I, s:b},"
        " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
        " s:{s:I, s:I, s:I, s:I, s:I, s:I},"
        " s:{s:I, s:I}, s:I}",
        "server", "name", "Rebound", "version", RB_VERSION, "faktory_protocol_version",
        RB_FAKTORY_VERSION, "now", rb_api_time_or_null(now), "started_at",
        rb_api_time_or_null(srv->started_ms), "uptime_s",
        (json_int_t)((now - srv->started_ms) / 1000), "store", f->store, "listen",
        srv->cfg.server.listen ? srv->cfg.server.listen : "", "connections",
        (json_int_t)srv->conns.size, "workers", (json_int_t)f->workers, "commands",
        (json_int_t)srv->command_count, "stopping", srv->eng->stopping,
        "jobs", "scheduled", (json_int_t)f->scheduled, "enqueued", (json_int_t)f->enqueued,
        "working", (json_int_t)f->working, "retries", (json_int_t)f->retries, "dead",
        (json_int_t)f->dead, "waiting", (json_int_t)f->waiting, "blocked",
        (json_int_t)f->blocked,
        "since_start", "pushed", (json_int_t)rb_metrics_total(m, RB_M_PUSHED), "processed",
        (json_int_t)rb_metrics_total(m, RB_M_PROCESSED), "failed",
        (json_int_t)rb_metrics_total(m, RB_M_FAILED), "retried",
        (json_int_t)rb_metrics_total(m, RB_M_RETRIED), "dead",
        (json_int_t)rb_metrics_total(m, RB_M_DEAD), "discarded",
        (json_int_t)rb_metrics_total(m, RB_M_DISCARDED),
        "all_time", "processed", (json_int_t)f->processed, "failures", (json_int_t)f->failures,
        "queues", (json_int_t)f->n_queues);
}

static void info_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    json_t *info = info_json(srv, &op->u.info);
    rb_api_enterprise_info(srv, &op->u.info, info);
    rb_http_reply_json(rb_api_call_of(op)->req, 200, info);
    rb_eng_op_finish(srv->eng, op);
}

rb_eng_op *rb_api_info_op(struct evhttp_request *req, void (*done)(rb_srv *, rb_eng_op *),
                          bool latency)
{
    rb_eng_op *op = rb_api_op_for(req, RB_ENG_INFO, done);
    op->u.info.latency = latency;
    return op;
}

void rb_api_info(rb_http_req *r)
{
    rb_eng_submit(r->h->srv->eng, rb_api_info_op(r->req, info_done, false));
}

/* --- GET /api/stats --- */

static void add_sample(void *arg, int64_t t_s, uint64_t pushed, uint64_t processed,
                       uint64_t failed)
{
    json_array_append_new(arg, json_pack("{s:I, s:I, s:I, s:I}", "t", (json_int_t)t_s, "pushed",
                                         (json_int_t)pushed, "processed", (json_int_t)processed,
                                         "failed", (json_int_t)failed));
}

void rb_api_stats(rb_http_req *r)
{
    json_t *samples = json_array();
    rb_metrics_history(r->h->srv->eng->metrics, add_sample, samples);
    rb_http_reply_json(r->req, 200,
                       json_pack("{s:i, s:o}", "interval_s", 1, "samples", samples));
}

/* --- GET /api/queues --- */

json_t *rb_api_queue_json(const char *name, int64_t size, double latency_s, bool paused)
{
    return json_pack("{s:s, s:I, s:f, s:b}", "name", name, "size", (json_int_t)size, "latency_s",
                     latency_s, "paused", paused);
}

/* Sorts the queues by name, with their latencies. */
typedef struct queue_at {
    const rb_queue_size *q;
    double latency_s;
} queue_at;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const queue_at *)a)->q->name, ((const queue_at *)b)->q->name);
}

static void queues_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    const rb_eng_info *f = &op->u.info;
    queue_at *v = rb_xcalloc(f->n_queues + 1, sizeof *v);
    for (size_t i = 0; i < f->n_queues; i++)
        v[i] = (queue_at){&f->queues[i], f->latency_s[i]};
    qsort(v, f->n_queues, sizeof *v, by_name);
    json_t *arr = json_array();
    for (size_t i = 0; i < f->n_queues; i++)
        json_array_append_new(arr, rb_api_queue_json(v[i].q->name, v[i].q->size, v[i].latency_s,
                                                     v[i].q->paused));
    free(v);
    rb_http_reply_json(rb_api_call_of(op)->req, 200, json_pack("{s:o}", "queues", arr));
    rb_eng_op_finish(srv->eng, op);
}

/* As /api/info: every known queue on a single node, those with jobs
 * enqueued or paused in distributed mode (docs/http.md). */
void rb_api_queues(rb_http_req *r)
{
    rb_eng_submit(r->h->srv->eng, rb_api_info_op(r->req, queues_done, true));
}

/* --- GET /api/jobs --- */

json_t *rb_api_summary(const rb_job_view *j)
{
    json_t *o = json_loads(j->json, 0, NULL);
    json_t *v = json_pack("{s:s, s:s, s:s, s:i, s:i}", "jid", j->jid, "state",
                          rb_job_state_name((rb_job_state)j->state), "queue", j->queue,
                          "priority", j->priority, "attempts", j->attempts);
    const char *jt = rb_json_str(o, "jobtype");
    json_object_set_new(v, "jobtype", json_string(jt ? jt : "unknown"));
    json_t *args = json_object_get(o, "args");
    json_object_set(v, "args", args ? args : json_array());
    json_t *created = json_object_get(o, "created_at");
    json_object_set(v, "created_at", created ? created : json_null());
    switch (j->state) {
    case RB_JOB_SCHEDULED:
    case RB_JOB_RETRIES:
        json_object_set_new(v, "next_at", rb_api_time_or_null(j->due_ms));
        break;
    case RB_JOB_WORKING:
        json_object_set_new(v, "reserved_until", rb_api_time_or_null(j->due_ms));
        json_object_set_new(v, "wid", j->wid ? json_string(j->wid) : json_null());
        break;
    case RB_JOB_DEAD:
        json_object_set_new(v, "expires_at", rb_api_time_or_null(j->due_ms));
        break;
    case RB_JOB_ENQUEUED:
        json_object_set_new(v, "enqueued_at", rb_api_time_or_null(j->due_ms));
        break;
    case RB_JOB_WAITING:
    case RB_JOB_BLOCKED: { /* as JOB gives them */
        json_t *d = rb_job_view_detail(j);
        json_object_set(v, "waits_for", json_object_get(d, "waits_for"));
        json_object_set(v, "blocked_by", json_object_get(d, "blocked_by"));
        json_decref(d);
        break;
    }
    default:
        break;
    }
    json_t *f = json_object_get(o, "failure");
    if (json_is_object(f)) {
        json_t *keep = json_object();
        const char *keys[] = {"errtype", "message", "failed_at", "retry_count"};
        for (size_t i = 0; i < 4; i++) {
            json_t *x = json_object_get(f, keys[i]);
            if (x)
                json_object_set(keep, keys[i], x);
        }
        json_object_set_new(v, "failure", keep);
    } else {
        json_object_set_new(v, "failure", json_null());
    }
    json_decref(o);
    return v;
}

static void jobs_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    const rb_job_filter *f = &op->u.jobs.f;
    json_t *arr = json_array();
    for (size_t i = 0; i < op->u.jobs.n; i++)
        json_array_append_new(arr, rb_api_summary(&op->u.jobs.views[i]));
    rb_http_reply_json(rb_api_call_of(op)->req, 200,
                       json_pack("{s:s, s:I, s:I, s:I, s:o}", "state",
                                 rb_job_state_name((rb_job_state)f->state), "total",
                                 (json_int_t)op->u.jobs.total, "offset", (json_int_t)f->offset,
                                 "limit", (json_int_t)f->limit, "jobs", arr));
    rb_eng_op_finish(srv->eng, op);
}

/* An empty string as absent: the query's filters. */
static char *nonempty(char *s)
{
    if (s && !*s) {
        free(s);
        return NULL;
    }
    return s;
}

void rb_api_jobs(rb_http_req *r)
{
    char *state = rb_http_query(r->req, "state");
    int st = state ? rb_job_state_parse(state) : -1;
    long long offset, limit;
    if (st < RB_JOB_SCHEDULED) {
        rb_http_reply_error(r->req, 400,
                            "query parameter state='%s' must be scheduled, enqueued, working, "
                            "retries, dead, waiting or blocked", state ? state : "");
    } else if (rb_http_query_int(r->req, "offset", 0, INT64_MAX, 0, &offset) &&
               rb_http_query_int(r->req, "limit", 0, 1000, 50, &limit)) {
        rb_eng_op *op = rb_api_op(r, RB_ENG_JOBS, jobs_done);
        char **s = rb_api_call_of(op)->strs; /* the filter's strings */
        s[0] = nonempty(rb_http_query(r->req, "queue"));
        s[1] = nonempty(rb_http_query(r->req, "jobtype"));
        s[2] = nonempty(rb_http_query(r->req, "errtype"));
        s[3] = nonempty(rb_http_query(r->req, "group"));
        op->u.jobs.f = (rb_job_filter){.state = st, .queue = s[0], .jobtype = s[1],
                                       .errtype = s[2], .group = s[3], .offset = offset,
                                       .limit = limit};
        rb_eng_submit(r->h->srv->eng, op);
    }
    free(state);
}

/* --- GET /api/job/JID --- */

/* The job's effective policy, where it came from, and the whole schedule it
 * gives when every attempt fails, with absolute times from the first
 * enqueue. */
json_t *rb_api_schedule(rb_srv *srv, int64_t first_ms, json_t *job)
{
    rb_policy pol;
    rb_policy_layer layer;
    rb_err err = {0};
    if (rb_config_effective_policy(&srv->cfg, job, &pol, &layer, &err))
        return json_pack("{s:n, s:s}", "policy", "error", rb_err_msg(&err));
    rb_rng rng;
    rb_rng_seed(&rng, rb_rng_next(&srv->rng));
    int64_t first = first_ms ? first_ms : rb_now_ms();
    rb_simulation sim;
    rb_policy_simulate(&pol, NULL, 0, first, &rng, &sim);
    json_t *v = rb_simulation_to_json(&pol, &sim);
    json_t *steps = json_object_get(v, "attempts");
    size_t i;
    json_t *s;
    json_array_foreach(steps, i, s) {
        json_t *at = json_object_get(s, "at_ms");
        if (at)
            json_object_set_new(s, "at", rb_api_time_or_null(first + json_integer_value(at)));
    }
    rb_buf b = RB_BUF_INIT;
    rb_policy_describe(&pol, &b);
    json_object_set_new(v, "description", json_string(rb_buf_str(&b)));
    json_object_set_new(v, "layer", json_string(rb_policy_layer_name(layer)));
    json_object_set_new(v, "first_enqueued_at", rb_api_time_or_null(first_ms));
    rb_buf_release(&b);
    rb_simulation_release(&sim);
    rb_policy_release(&pol);
    return v;
}

static void job_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    struct evhttp_request *req = rb_api_call_of(op)->req;
    const rb_job_view *j = &op->u.lookup.view;
    if (!op->u.lookup.found) {
        rb_http_reply_error(req, 404, "no job '%s'", op->u.lookup.jid);
        rb_eng_op_finish(srv->eng, op);
        return;
    }
    json_t *v = rb_api_summary(j);
    json_t *job = json_loads(j->json, 0, NULL);
    json_t *h = j->history ? json_loads(j->history, 0, NULL) : NULL;
    json_object_set_new(v, "history", json_is_array(h) ? h : json_array());
    if (h && !json_is_array(h))
        json_decref(h);
    json_object_set_new(v, "schedule", job ? rb_api_schedule(srv, j->first_ms, job) : json_null());
    rb_api_job_unique(j, job, op->now, v);
    json_t *d = rb_job_view_detail(j); /* group and held: as JOB gives them */
    json_object_set(v, "group", json_object_get(d, "group"));
    json_object_set(v, "held", json_object_get(d, "held"));
    json_decref(d);
    json_object_set_new(v, "job", job ? job : json_null());
    rb_http_reply_json(req, 200, v);
    rb_eng_op_finish(srv->eng, op);
}

void rb_api_job(rb_http_req *r)
{
    rb_eng_op *op = rb_api_op(r, RB_ENG_JOB, job_done);
    op->u.lookup.jid = rb_api_call_of(op)->strs[0] = rb_xstrdup(r->seg[1]);
    rb_eng_submit(r->h->srv->eng, op);
}

/* --- GET /api/workflow/JID --- */

static void workflow_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    struct evhttp_request *req = rb_api_call_of(op)->req;
    if (op->u.workflow.found)
        rb_http_reply_json(req, 200, rb_workflow_json(op->u.workflow.jid, &op->u.workflow.g));
    else
        rb_http_reply_error(req, 404, "no job '%s'", op->u.workflow.jid);
    rb_eng_op_finish(srv->eng, op);
}

/* The workflow graph of any member job (engine/workflow.h). */
void rb_api_workflow(rb_http_req *r)
{
    rb_eng_op *op = rb_api_op(r, RB_ENG_WORKFLOW, workflow_done);
    op->u.workflow.jid = rb_api_call_of(op)->strs[0] = rb_xstrdup(r->seg[1]);
    rb_eng_submit(r->h->srv->eng, op);
}

/* --- GET /api/batches, GET /api/batch/BID --- */

static void batches_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    struct evhttp_request *req = rb_api_call_of(op)->req;
    if (op->u.batch.verb == RB_ENG_BATCH_LIST)
        rb_http_reply_json(req, 200,
                           rb_batch_list_json(op->u.batch.all, op->u.batch.total,
                                              op->u.batch.offset, op->u.batch.limit,
                                              op->u.batch.list, op->u.batch.n));
    else if (op->u.batch.found)
        rb_http_reply_json(req, 200, rb_batch_view_json(&op->u.batch.view));
    else
        rb_http_reply_error(req, 404, "no batch '%s'", op->u.batch.bid);
    rb_eng_op_finish(srv->eng, op);
}

/* 0 when the backend keeps batches, else after replying 400. */
static int batches_check(rb_http_req *r)
{
    rb_err err = {0};
    if (!rb_eng_batch_check(r->h->srv->eng, &err))
        return 0;
    rb_http_reply_error(r->req, 400, "%s", rb_err_msg(&err));
    return -1;
}

/* The open batches (?state=all: every stored one), paged like /api/jobs. */
void rb_api_batches(rb_http_req *r)
{
    char *state = rb_http_query(r->req, "state");
    long long offset, limit;
    if (state && *state && strcmp(state, "open") && strcmp(state, "all")) {
        rb_http_reply_error(r->req, 400, "query parameter state='%s' must be open or all",
                            state);
    } else if (!batches_check(r) &&
               rb_http_query_int(r->req, "offset", 0, INT64_MAX, 0, &offset) &&
               rb_http_query_int(r->req, "limit", 0, RB_BATCH_LIST_MAX, RB_BATCH_LIST_LIMIT,
                                 &limit)) {
        rb_eng_op *op = rb_api_op(r, RB_ENG_BATCH, batches_done);
        op->u.batch.verb = RB_ENG_BATCH_LIST;
        op->u.batch.all = state && !strcmp(state, "all");
        op->u.batch.offset = offset;
        op->u.batch.limit = limit;
        rb_eng_submit(r->h->srv->eng, op);
    }
    free(state);
}

/* One batch's page (engine/batch_view.h); 404 for an unknown bid. */
void rb_api_batch(rb_http_req *r)
{
    if (batches_check(r))
        return;
    rb_eng_op *op = rb_api_op(r, RB_ENG_BATCH, batches_done);
    op->u.batch.verb = RB_ENG_BATCH_VIEW;
    op->u.batch.bid = rb_api_call_of(op)->strs[0] = rb_xstrdup(r->seg[1]);
    rb_eng_submit(r->h->srv->eng, op);
}

/* --- GET /api/workers --- */

static void workers_done(rb_srv *srv, rb_eng_op *op)
{
    static const char *signals[] = {"none", "quiet", "terminate"};
    if (rb_api_failed(srv, op))
        return;
    json_t *arr = json_array();
    for (size_t i = 0; i < op->u.worker_list.n; i++) {
        const rb_eng_worker *w = &op->u.worker_list.v[i];
        const rb_worker *here = rb_eng_worker_get(srv->eng, w->wid, false); /* this node's connections */
        int sig = w->signal >= 0 && w->signal <= 2 ? w->signal : 0;
        json_t *o = json_pack("{s:s, s:o, s:i, s:s}", "wid", w->wid, "last_beat",
                              rb_api_time_or_null(w->beat_ms), "connections",
                              here ? here->conns : 0, "signal", signals[sig]);
        if (w->node) { /* the cluster's registry */
            json_t *info = w->info ? json_loads(w->info, 0, NULL) : NULL;
            json_object_set_new(o, "node", json_string(w->node));
            json_object_set_new(o, "first_seen", rb_api_time_or_null(w->first_ms));
            json_object_set_new(o, "info", info ? info : json_null());
        }
        json_array_append_new(arr, o);
    }
    rb_http_reply_json(rb_api_call_of(op)->req, 200, json_pack("{s:o}", "workers", arr));
    rb_eng_op_finish(srv->eng, op);
}

void rb_api_workers(rb_http_req *r)
{
    rb_eng_submit(r->h->srv->eng, rb_api_op(r, RB_ENG_WORKER_LIST, workers_done));
}

/* --- POST /api/policy/simulate --- */

/* Parses the request: a JSON object with "policy" (any dialect: object,
 * SPEC string or Faktory integer) and options, a bare policy object, or a
 * text SPEC such as an FTL directive. Returns 0 or replies and returns -1. */
static int sim_request(rb_http_req *r, rb_policy *p, rb_failure *f, long long *failures,
                       json_t **keep)
{
    char *text = rb_http_body_text(r->req);
    json_t *body = json_loads(text, JSON_DECODE_ANY, NULL);
    rb_err err = {0};
    int rc;
    *keep = body;
    if (!body) {
        const char *t = text;
        while (*t == ' ' || *t == '\n' || *t == '\r' || *t == '\t')
            t++;
        if (!*t) {
            free(text);
            rb_http_reply_error(r->req, 400, "the body must be a policy (JSON or a SPEC)");
            return -1;
        }
        rc = rb_policy_parse_spec(t, &r->h->srv->cfg.backoff, p, &err);
        free(text);
    } else {
        free(text);
        json_t *pv = json_is_object(body) ? json_object_get(body, "policy") : NULL;
        if (pv) {
            json_t *n = json_object_get(body, "failures");
            json_t *et = json_object_get(body, "errtype"), *ra = json_object_get(body, "retry_after");
            if ((n && (!json_is_integer(n) || json_integer_value(n) < 0 ||
                       json_integer_value(n) > RB_SIM_MAX_STEPS)) ||
                (et && !json_is_string(et)) || (ra && !json_is_string(ra))) {
                rb_http_reply_error(r->req, 400,
                                    "failures must be an integer from 0 to %d; errtype and "
                                    "retry_after strings", RB_SIM_MAX_STEPS);
                return -1;
            }
            *failures = n ? json_integer_value(n) : 0;
            f->errtype = json_string_value(et);
            f->retry_after = json_string_value(ra);
        } else {
            pv = body;
        }
        rc = rb_policy_parse_json(pv, &r->h->srv->cfg.backoff, p, &err);
    }
    if (rc) {
        rb_http_reply_error(r->req, 422, "invalid policy: %s", rb_err_msg(&err));
        return -1;
    }
    return 0;
}

void rb_api_simulate(rb_http_req *r)
{
    rb_policy p;
    rb_failure f = {0};
    long long failures = 0;
    json_t *body = NULL;
    if (sim_request(r, &p, &f, &failures, &body)) {
        json_decref(body);
        return;
    }
    rb_rng rng;
    rb_rng_seed(&rng, rb_rng_next(&r->h->srv->rng));
    rb_simulation sim;
    rb_policy_simulate(&p, f.errtype || f.retry_after ? &f : NULL, failures, rb_now_ms(), &rng,
                       &sim);
    json_t *v = rb_simulation_to_json(&p, &sim);
    rb_buf b = RB_BUF_INIT;
    rb_policy_describe(&p, &b);
    json_object_set_new(v, "description", json_string(rb_buf_str(&b)));
    json_object_set_new(v, "limit", json_integer(sim.limit));
    rb_buf_release(&b);
    rb_simulation_release(&sim);
    rb_policy_release(&p);
    json_decref(body);
    rb_http_reply_json(r->req, 200, v);
}
