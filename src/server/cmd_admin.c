/* Inspection and administration: INFO, FLUSH, MUTATE, QUEUE, JOB, JOBS,
 * WORKERS. One handler per command for both modes: each checks its
 * argument, submits one job-engine op (engine/engine.h) and replies from
 * its results. */
#include "server/cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/version.h"
#include "engine/engine.h"
#include "server/cron.h"
#include "server/forward.h"
#include "common/log.h"
#include "common/json.h"

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

static int by_name(const void *a, const void *b)
{
    return strcmp(((const rb_queue_size *)a)->name, ((const rb_queue_size *)b)->name);
}

/* INFO's JSON for both modes (docs/protocol.md): Faktory's keys as stock
 * clients read them (server.faktory_version is RB_FAKTORY_VERSION) and a
 * "rebound" object with Rebound's version, the protocol's, the paused
 * queues by name, and the backend's own figures. Sorts f->queues by name
 * in place. The caller owns the result. */
static json_t *info_json(const rb_srv *srv, rb_eng_info *f)
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
    json_t *info = json_pack(
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
    /* job dependencies (docs/workflows.md): Rebound's own states */
    json_object_set_new(json_object_get(info, "rebound"), "waiting", json_integer(f->waiting));
    json_object_set_new(json_object_get(info, "rebound"), "blocked", json_integer(f->blocked));
    /* this node's connections in a FETCH that waits for a job (Redis's
     * blocked_clients): what a test or an operator waits on */
    json_object_set_new(json_object_get(info, "rebound"), "fetches_waiting",
                        json_integer((json_int_t)rb_eng_fetches_waiting(srv->eng)));
    if (f->rebound)
        json_object_update(json_object_get(info, "rebound"), f->rebound);
    rb_cron_info(srv, json_object_get(info, "rebound")); /* this node's timer, either mode */
    rb_forward_stats fs; /* storage.forward: the node that answers (a relayed client: the leader) */
    if (rb_forward_stats_of(srv, &fs))
        json_object_set_new(json_object_get(info, "rebound"), "forward",
                            json_pack("{s:b, s:s?, s:I, s:I, s:I}", "leader", fs.leader,
                                      "leader_addr", fs.leader_addr[0] ? fs.leader_addr : NULL,
                                      "relays_open", (json_int_t)fs.open, "relayed_total",
                                      (json_int_t)fs.total, "fallbacks_total",
                                      (json_int_t)fs.fallbacks));
    return info;
}

static void info_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    rb_reply_json(op->c, info_json(srv, &op->u.info));
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_info(rb_conn *c, char *arg)
{
    (void)arg;
    rb_eng_submit(c->srv->eng, rb_eng_op_new(RB_ENG_INFO, c, info_done));
}

/* FLUSH and MUTATE reply +OK once their change is durable. */
static void ok_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->kind == RB_ENG_FLUSH)
        rb_log(RB_LOG_INFO, "FLUSH: every job and counter deleted");
    else
        rb_log(RB_LOG_INFO, "MUTATE %s %s: %zu jobs", op->u.mutate.m.cmd,
               rb_job_state_name(op->u.mutate.m.target), op->u.mutate.changed);
    rb_reply_ok(op->c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_flush(rb_conn *c, char *arg)
{
    (void)arg;
    rb_eng_submit(c->srv->eng, rb_eng_op_new(RB_ENG_FLUSH, c, ok_done));
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
    rb_eng_submit(c->srv->eng, op);
}

/* --- QUEUE --- */

/* QUEUE's changes by name; LATENCY is a read of its own (RB_ENG_LATENCY). */
static const char *const queue_verbs[] = {
    [RB_ENG_QUEUE_PAUSE] = "PAUSE",
    [RB_ENG_QUEUE_RESUME] = "RESUME",
    [RB_ENG_QUEUE_REMOVE] = "REMOVE",
};
#define QUEUE_VERBS (int)(sizeof queue_verbs / sizeof *queue_verbs)

static void queue_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->kind == RB_ENG_LATENCY) {
        json_t *out = json_object();
        for (int i = 0; i < op->u.queue.n; i++)
            json_object_set_new(out, op->u.queue.names[i], json_real(op->u.queue.latency[i]));
        rb_reply_json(op->c, out);
    } else {
        rb_log(RB_LOG_INFO, "QUEUE %s by a client", queue_verbs[op->u.queue.verb]);
        rb_reply_ok(op->c);
    }
    rb_eng_op_finish(srv->eng, op);
}

/* The most queue names one QUEUE command takes. */
#define QUEUE_NAMES 256

void rb_cmd_queue(rb_conn *c, char *arg)
{
    char *save = NULL, *verb = strtok_r(arg, " \t", &save);
    for (char *p = verb; p && *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    int v = -1;
    for (int i = 0; verb && i < QUEUE_VERBS; i++)
        if (!strcmp(verb, queue_verbs[i]))
            v = i;
    if (v < 0 && (!verb || strcmp(verb, "LATENCY"))) {
        rb_reply_err(c, "no such QUEUE subcommand: %.40s (PAUSE, RESUME, REMOVE or LATENCY)",
                     verb ? verb : "");
        return;
    }
    char *names[QUEUE_NAMES];
    int n = 0;
    for (char *q; (q = strtok_r(NULL, " \t", &save));) {
        if (n == QUEUE_NAMES) {
            rb_reply_err(c, "QUEUE: at most 256 queue names");
            return;
        }
        if (v < 0 && !strcmp(q, "*")) { /* Faktory's text: clients match it */
            rb_reply_err(c, "QUEUE LATENCY does not support wildcards");
            return;
        }
        if (strcmp(q, "*") && !rb_queue_name_valid(q)) {
            rb_reply_err(c, "QUEUE: queue name '%.40s...' is longer than %d bytes", q,
                         RB_QUEUE_NAME_MAX);
            return;
        }
        names[n++] = q;
    }
    if (n == 0) {
        rb_reply_err(c, "QUEUE %s: name at least one queue%s", verb, v < 0 ? "" : " (or *)");
        return;
    }
    rb_eng_op *op = rb_eng_op_new(v < 0 ? RB_ENG_LATENCY : RB_ENG_QUEUE, c, queue_done);
    if (v >= 0)
        op->u.queue.verb = (rb_eng_queue_verb)v;
    op->u.queue.names = rb_xcalloc((size_t)n, sizeof *op->u.queue.names);
    for (int i = 0; i < n; i++)
        op->u.queue.names[op->u.queue.n++] = rb_xstrdup(names[i]);
    rb_eng_submit(c->srv->eng, op);
}

/* --- JOB, JOBS --- */

static void job_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.lookup.found)
        rb_reply_json(op->c, rb_job_view_detail(&op->u.lookup.view));
    else if (op->u.lookup.aliased) /* a push merged into another job */
        rb_reply_json(op->c, rb_debounce_alias_json(&op->u.lookup.alias));
    else
        rb_reply_null(op->c);
    rb_eng_op_finish(srv->eng, op);
}

/* A read of one job's something named by {"jid": J} (JOB, WORKFLOW): the
 * argument checked, an op of kind with *jid borrowed from its op->json;
 * NULL after replying the error. */
static rb_eng_op *jid_op(rb_conn *c, const char *cmd, char *arg, rb_eng_kind kind,
                         void (*done)(rb_srv *, rb_eng_op *), const char **jid)
{
    json_t *o = rb_cmd_json_arg(c, cmd, arg, JSON_OBJECT);
    if (!o)
        return NULL;
    if (!(*jid = rb_cmd_jid(c, cmd, o))) {
        json_decref(o);
        return NULL;
    }
    rb_eng_op *op = rb_eng_op_new(kind, c, done);
    op->json = o; /* the jid's */
    return op;
}

void rb_cmd_job(rb_conn *c, char *arg)
{
    const char *jid;
    rb_eng_op *op = jid_op(c, "JOB", arg, RB_ENG_JOB, job_done, &jid);
    if (!op)
        return;
    op->u.lookup.jid = jid;
    rb_eng_submit(c->srv->eng, op);
}

static void workflow_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.workflow.found)
        rb_reply_json(op->c, rb_workflow_json(op->u.workflow.jid, &op->u.workflow.g));
    else
        rb_reply_null(op->c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_workflow(rb_conn *c, char *arg)
{
    const char *jid;
    rb_eng_op *op = jid_op(c, "WORKFLOW", arg, RB_ENG_WORKFLOW, workflow_done, &jid);
    if (!op)
        return;
    op->u.workflow.jid = jid;
    rb_eng_submit(c->srv->eng, op);
}

static void jobs_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    json_t *arr = json_array();
    for (size_t i = 0; i < op->u.jobs.n; i++)
        json_array_append_new(arr, rb_job_view_json(&op->u.jobs.views[i]));
    rb_reply_json(op->c,
                  json_pack("{s:I, s:o}", "total", (json_int_t)op->u.jobs.total, "jobs", arr));
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_jobs(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "JOBS", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *state = rb_json_str(o, "state");
    json_t *off = json_object_get(o, "offset"), *lim = json_object_get(o, "limit");
    rb_job_filter f = {.state = state ? rb_job_state_parse(state) : -1,
                       .queue = rb_json_str(o, "queue"),
                       .jobtype = rb_json_str(o, "jobtype"),
                       .errtype = rb_json_str(o, "errtype"),
                       .group = rb_json_str(o, "group"),
                       .offset = off ? json_integer_value(off) : 0,
                       .limit = lim ? json_integer_value(lim) : 50};
    if (f.state < 0) {
        rb_reply_err(c, "JOBS: state must be scheduled, enqueued, working, retries, dead, waiting or blocked");
    } else if ((off && !json_is_integer(off)) || f.offset < 0 || (lim && !json_is_integer(lim)) ||
               f.limit < 0 || f.limit > 10000) {
        rb_reply_err(c, "JOBS: offset must be >= 0 and limit from 0 to 10000");
    } else {
        rb_eng_op *op = rb_eng_op_new(RB_ENG_JOBS, c, jobs_done);
        op->json = o; /* the filter's strings */
        op->u.jobs.f = f;
        rb_eng_submit(c->srv->eng, op);
        return;
    }
    json_decref(o);
}

/* --- WORKERS --- */

static void workers_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.workers.wid && !op->u.workers.changed)
        rb_reply_err(op->c, "WORKERS: unknown worker %s", op->u.workers.wid);
    else
        rb_reply_ok(op->c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_workers(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "WORKERS", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *cmd = rb_json_str(o, "cmd");
    int sig = !cmd ? 0 : !strcmp(cmd, "quiet") ? RB_WORKER_QUIET
                     : !strcmp(cmd, "terminate") ? RB_WORKER_TERMINATE : 0;
    if (!sig) {
        rb_reply_err(c, "WORKERS: cmd must be quiet or terminate");
        json_decref(o);
        return;
    }
    rb_eng_op *op = rb_eng_op_new(RB_ENG_WORKERS, c, workers_done);
    op->json = o; /* the wid's */
    op->u.workers.wid = rb_json_str(o, "wid");
    op->u.workers.signal = sig;
    rb_eng_submit(c->srv->eng, op);
}
