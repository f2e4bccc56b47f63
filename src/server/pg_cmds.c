/* The job commands in distributed mode (pgmode.h): PUSH, PUSHB, FETCH, ACK,
 * FAIL, SNOOZE, EXTEND, INFO, FLUSH, MUTATE, QUEUE, JOB and JOBS on the
 * PostgreSQL engine. Each handler checks its argument on the loop thread
 * with the single-node rules and messages, posts one request and replies
 * from its completion; the engine's statuses map onto the same replies as
 * the single-node server's (docs/distributed.md). */
#include "server/pg_cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/log.h"
#include "server/pgmode.h"

/* What a command keeps alive while its request is out. */
typedef struct cmd_data {
    json_t *arg;      /* the parsed argument (strings borrowed from it) */
    json_t *errors;   /* PUSHB: per-jid errors */
    char **texts;     /* PUSH: job texts */
    size_t n_texts;
    bool bulk;        /* PUSHB */
    char **names;     /* QUEUE names, MUTATE jids (owned) */
    int n_names;
    char verb[16];
    char retry_after[32]; /* FAIL: a numeric retry_after as text */
    rb_pg_mutation m;
    rb_pg_filter f;
    rb_pg_info info;
    bool have_info;
    rb_pg_job job;
    bool have_job;
    rb_pg_job *jobs;
    size_t n_jobs;
    int64_t total;
    double *latency;
    size_t changed;
} cmd_data;

static void data_free(void *p)
{
    cmd_data *d = p;
    if (!d)
        return;
    json_decref(d->arg);
    json_decref(d->errors);
    for (size_t i = 0; i < d->n_texts; i++)
        free(d->texts[i]);
    free(d->texts);
    for (int i = 0; i < d->n_names; i++)
        free(d->names[i]);
    free(d->names);
    if (d->have_info)
        rb_pg_info_release(&d->info);
    if (d->have_job)
        rb_pg_job_release(&d->job);
    rb_pg_jobs_free(d->jobs, d->n_jobs);
    free(d->latency);
    free(d);
}

static cmd_data *attach(rb_pgreq *r, json_t *arg)
{
    cmd_data *d = rb_xcalloc(1, sizeof *d);
    d->arg = arg;
    r->data = d;
    r->data_free = data_free;
    return d;
}

static char *dup_wid(const rb_conn *c)
{
    return c->worker ? rb_xstrdup(c->worker->wid) : NULL;
}

/* A request that failed in the database: the error reply and the end. */
static bool failed(rb_srv *srv, rb_pgreq *r)
{
    if (!r->rc) {
        rb_pgmode_storage_ok(srv);
        return false;
    }
    rb_pgmode_storage_error(srv, r);
    rb_pgreq_finish(srv, r);
    return true;
}

/* --- PUSH, PUSHB --- */

static void push_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
    const char **ready = rb_xcalloc(r->u.push.n + 1, sizeof *ready);
    size_t n_ready = 0;
    for (size_t i = 0; i < r->u.push.n; i++) {
        const rb_pg_new_job *j = &r->u.push.jobs[i];
        if (r->u.push.status[i] == RB_EEXIST) {
            if (d->bulk) {
                char msg[300];
                snprintf(msg, sizeof msg, "job %s already exists", j->jid);
                json_object_set_new(d->errors, j->jid, json_string(msg));
            } else {
                rb_reply_err(r->c, "job %s already exists", j->jid);
            }
        } else if (j->at_ms <= r->now) {
            ready[n_ready++] = j->queue;
        }
    }
    if (d->bulk) {
        char *s = json_dumps(d->errors, JSON_COMPACT);
        rb_reply_bulk(r->c, s, strlen(s));
        free(s);
    } else if (r->u.push.status[0] != RB_EEXIST) {
        rb_reply_ok(r->c);
    }
    if (n_ready)
        rb_pgmode_kick(srv, ready, n_ready); /* this node's waiters, before the NOTIFY */
    free(ready);
    rb_pgreq_finish(srv, r);
}

/* Posts the valid jobs of jobs[0..n) (validated already). */
static void post_push(rb_conn *c, json_t *arg, json_t **jobs, size_t n, json_t *errors, bool bulk)
{
    rb_srv *srv = c->srv;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_PUSH, c);
    cmd_data *d = attach(r, arg);
    d->errors = errors;
    d->bulk = bulk;
    d->texts = rb_xcalloc(n, sizeof *d->texts);
    r->u.push.jobs = rb_xcalloc(n, sizeof *r->u.push.jobs);
    r->u.push.status = rb_xcalloc(n, sizeof *r->u.push.status);
    r->u.push.n = n;
    int64_t now = rb_now_ms();
    for (size_t i = 0; i < n; i++) {
        rb_pg_job_from_json(jobs[i], now, (int)srv->cfg.server.reserve_for_s,
                            &r->u.push.jobs[i], &d->texts[i]);
        d->n_texts++;
    }
    r->done = push_done;
    rb_pgreq_post(srv, r);
}

static void pg_push(rb_conn *c, char *arg)
{
    json_t *job = rb_cmd_json_arg(c, "PUSH", arg, JSON_OBJECT);
    if (!job)
        return;
    rb_err err = {0};
    if (rb_job_validate(c->srv, job, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        json_decref(job);
        return;
    }
    post_push(c, job, &job, 1, NULL, false);
}

static void pg_pushb(rb_conn *c, char *arg)
{
    json_t *arr = rb_cmd_json_arg(c, "PUSHB", arg, JSON_ARRAY);
    if (!arr)
        return;
    size_t n = json_array_size(arr), ok = 0;
    json_t **valid = rb_xcalloc(n ? n : 1, sizeof *valid);
    json_t *errors = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *job = json_array_get(arr, i);
        rb_err err = {0};
        const char *jid = json_is_object(job) ? rb_srv_json_str(job, "jid") : NULL;
        char key[32];
        if (!jid) {
            snprintf(key, sizeof key, "#%zu", i);
            jid = key;
        }
        if (rb_job_validate(c->srv, job, &err))
            json_object_set_new(errors, jid, json_string(rb_err_msg(&err)));
        else
            valid[ok++] = job;
    }
    if (ok == 0) {
        char *s = json_dumps(errors, JSON_COMPACT);
        rb_reply_bulk(c, s, strlen(s));
        free(s);
        json_decref(errors);
        json_decref(arr);
    } else {
        post_push(c, arr, valid, ok, errors, true);
    }
    free(valid);
}

/* --- FETCH --- */

static void pg_fetch(rb_conn *c, char *arg)
{
    char **queues = NULL;
    int n = 0;
    for (char *save = NULL, *q = strtok_r(arg, " \t", &save); q; q = strtok_r(NULL, " \t", &save)) {
        queues = rb_xrealloc(queues, (size_t)(n + 1) * sizeof *queues);
        queues[n++] = rb_xstrdup(q);
    }
    if (n == 0) {
        rb_reply_err(c, "must call fetch with at least one queue");
        return;
    }
    rb_pgmode_fetch(c->srv, c, queues, n);
}

/* --- ACK, FAIL --- */

/* A request naming o's jid for c (NULL after replying an error). */
static rb_pgreq *ref_request(rb_conn *c, rb_pgreq_kind kind, const char *verb, json_t *o)
{
    const char *jid = rb_cmd_jid(c, verb, o);
    if (!jid)
        return NULL;
    rb_pgreq *r = rb_pgreq_new(kind, c);
    r->jid = rb_xstrdup(jid);
    r->wid = dup_wid(c);
    attach(r, o);
    return r;
}

static void ack_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    if (r->u.ack.status == RB_PG_OTHER_HOLDER)
        rb_reply_err(r->c, "job %s is reserved by another worker", r->jid);
    else
        rb_reply_ok(r->c); /* done, unknown (Faktory: fine), or never reserved */
    rb_pgreq_finish(srv, r);
}

static void pg_ack(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "ACK", arg, JSON_OBJECT);
    if (!o)
        return;
    rb_pgreq *r = ref_request(c, RB_PGR_ACK, "ACK", o);
    if (!r) {
        json_decref(o);
        return;
    }
    r->u.ack.ref = (rb_pg_ref){r->jid, r->wid};
    r->done = ack_done;
    rb_pgreq_post(c->srv, r);
}

static void fail_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    switch (r->u.fail.res.status) {
    case RB_PG_OTHER_HOLDER:
        rb_reply_err(r->c, "job %s is reserved by another worker", r->jid);
        break;
    case RB_PG_MISSING:
    case RB_PG_NOT_WORKING:
        rb_reply_err(r->c, "Job not found %s", r->jid);
        break;
    default: /* applied, or a late FAIL its expiry already counted */
        rb_reply_ok(r->c);
        break;
    }
    rb_pgreq_finish(srv, r);
}

static void pg_fail(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "FAIL", arg, JSON_OBJECT);
    if (!o)
        return;
    rb_pgreq *r = ref_request(c, RB_PGR_FAIL, "FAIL", o);
    if (!r) {
        json_decref(o);
        return;
    }
    rb_fail_input in = {0};
    cmd_data *d = r->data;
    if (!rb_cmd_fail_fields(c, o, &in, d->retry_after, sizeof d->retry_after)) {
        data_free(d);
        free(r->jid);
        free(r->wid);
        free(r);
        return;
    }
    r->u.fail.f = (rb_pg_failure){
        .ref = {r->jid, r->wid},
        .errtype = in.errtype,
        .message = in.message,
        .backtrace = in.backtrace,
        .non_retryable = in.non_retryable,
        .retry_after = in.retry_after,
        .next_retry_delay_ms = in.next_retry_delay_ms,
    };
    r->done = fail_done;
    rb_pgreq_post(c->srv, r);
}

/* --- SNOOZE, EXTEND --- */

static void snooze_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, r->u.ref.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void extend_call(rb_pg *pg, rb_pgreq *r)
{
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_extend(pg, &ref, r->u.ref.seconds, rb_now_ms(), &r->u.ref.status,
                         &r->u.ref.state, &r->err);
}

static void ref_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
    switch (r->u.ref.status) {
    case RB_PG_MISSING:
        rb_reply_err(r->c, "%s: job %s not found", d->verb, r->jid);
        break;
    case RB_PG_OTHER_HOLDER:
        rb_reply_err(r->c, "job %s is reserved by another worker", r->jid);
        break;
    case RB_PG_NOT_WORKING:
        rb_reply_err(r->c, "%s: job %s is not working (it is %s)", d->verb, r->jid,
                     rb_job_state_name((rb_job_state)r->u.ref.state));
        break;
    default:
        rb_reply_ok(r->c);
        if (r->call == snooze_call && r->u.ref.seconds == 0)
            rb_pgmode_kick(srv, NULL, 0);
        break;
    }
    rb_pgreq_finish(srv, r);
}

static void pg_snooze_extend(rb_conn *c, char *arg, const char *verb, const char *key, int64_t lo,
                             int64_t hi, void (*call)(rb_pg *, rb_pgreq *))
{
    json_t *o = rb_cmd_json_arg(c, verb, arg, JSON_OBJECT);
    if (!o)
        return;
    rb_pgreq *r = ref_request(c, RB_PGR_CALL, verb, o);
    if (!r) {
        json_decref(o);
        return;
    }
    int64_t s = rb_cmd_bounded(c, verb, o, key, lo, hi);
    if (s < 0) {
        data_free(r->data);
        free(r->jid);
        free(r->wid);
        free(r);
        return;
    }
    snprintf(((cmd_data *)r->data)->verb, sizeof ((cmd_data *)r->data)->verb, "%s", verb);
    r->u.ref.seconds = s;
    r->call = call;
    r->done = ref_done;
    rb_pgreq_post(c->srv, r);
}

static void pg_snooze(rb_conn *c, char *arg)
{
    pg_snooze_extend(c, arg, "SNOOZE", "seconds", 0, 31536000, snooze_call);
}

static void pg_extend(rb_conn *c, char *arg)
{
    pg_snooze_extend(c, arg, "EXTEND", "reserve_for", 1, 86400, extend_call);
}

/* --- INFO, FLUSH --- */

static void info_call(rb_pg *pg, rb_pgreq *r)
{
    cmd_data *d = r->data;
    r->rc = rb_pg_info_get(pg, &d->info, &r->err);
    d->have_info = r->rc == 0;
}

static long rss_mb(void)
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

static void info_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    rb_pg_info *in = &((cmd_data *)r->data)->info;
    int64_t now = rb_now_ms();
    char ts[RB_TIME_STRLEN], utc[16];
    rb_time_format(now, ts);
    snprintf(utc, sizeof utc, "%.8s UTC", ts + 11);
    json_t *queues = json_object();
    for (size_t i = 0; i < in->n_queues; i++)
        json_object_set_new(queues, in->queues[i].name, json_integer(in->queues[i].size));
    json_t *info = json_pack(
        "{s:s, s:s, s:{s:I, s:I, s:I, s:I, s:o, s:{s:{s:I}, s:{s:I}, s:{s:I}, s:{s:I}, s:{s:I}}},"
        " s:{s:s, s:s, s:I, s:I, s:I, s:I}}",
        "now", ts, "server_utc_time", utc, "faktory", "total_failures", (json_int_t)in->failures,
        "total_processed", (json_int_t)in->processed, "total_enqueued", (json_int_t)in->enqueued,
        "total_queues", (json_int_t)json_object_size(queues), "queues", queues, "tasks",
        "Scheduled", "size", (json_int_t)in->scheduled, "Retries", "size",
        (json_int_t)in->retries, "Dead", "size", (json_int_t)in->dead, "Busy", "size",
        (json_int_t)in->working, "Workers", "size", (json_int_t)srv->workers.size, "server",
        "description", "Rebound", "faktory_version", "1.10.0", "uptime",
        (json_int_t)((now - srv->started_ms) / 1000), "connections", (json_int_t)srv->conns.size,
        "command_count", (json_int_t)srv->command_count, "used_memory_mb", (json_int_t)rss_mb());
    json_object_set_new(info, "rebound",
                        json_pack("{s:{s:s, s:i}}", "storage", "backend", "postgresql",
                                  "schema_version", RB_PG_SCHEMA_VERSION));
    rb_reply_json(r->c, info);
    rb_pgreq_finish(srv, r);
}

static void post_call(rb_conn *c, json_t *arg, void (*call)(rb_pg *, rb_pgreq *),
                      void (*done)(rb_srv *, rb_pgreq *))
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    attach(r, arg);
    r->call = call;
    r->done = done;
    rb_pgreq_post(c->srv, r);
}

static void pg_info(rb_conn *c, char *arg)
{
    (void)arg;
    post_call(c, NULL, info_call, info_done);
}

static void flush_call(rb_pg *pg, rb_pgreq *r)
{
    r->rc = rb_pg_flush(pg, &r->err);
}

static void ok_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    rb_reply_ok(r->c);
    rb_pgreq_finish(srv, r);
}

static void pg_flush(rb_conn *c, char *arg)
{
    (void)arg;
    rb_log(RB_LOG_INFO, "FLUSH: every job and counter deleted (cluster-wide)");
    post_call(c, NULL, flush_call, ok_done);
}

/* --- MUTATE --- */

static void mutate_call(rb_pg *pg, rb_pgreq *r)
{
    cmd_data *d = r->data;
    r->rc = rb_pg_mutate(pg, &d->m, rb_now_ms(), &d->changed, &r->err);
}

static void mutate_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
    rb_log(RB_LOG_INFO, "MUTATE %s: %zu jobs", d->m.cmd, d->changed);
    rb_reply_ok(r->c);
    if (!strcmp(d->m.cmd, "requeue"))
        rb_pgmode_kick(srv, NULL, 0);
    rb_pgreq_finish(srv, r);
}

static void pg_mutate(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "MUTATE", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *cmd = rb_srv_json_str(o, "cmd"), *target = rb_srv_json_str(o, "target");
    json_t *filter = json_object_get(o, "filter"), *jids = NULL;
    const char *pattern = NULL, *jobtype = NULL;
    int st = target ? rb_job_state_parse(target) : -1;
    if (!cmd || (strcmp(cmd, "kill") && strcmp(cmd, "requeue") && strcmp(cmd, "discard") &&
                 strcmp(cmd, "clear"))) {
        rb_reply_err(c, "MUTATE: cmd must be kill, requeue, discard or clear");
        goto bad;
    }
    if (st != RB_JOB_SCHEDULED && st != RB_JOB_RETRIES && st != RB_JOB_DEAD) {
        rb_reply_err(c, "MUTATE: target must be scheduled, retries or dead");
        goto bad;
    }
    if (filter && !json_is_null(filter)) {
        if (!json_is_object(filter)) {
            rb_reply_err(c, "MUTATE: filter must be an object");
            goto bad;
        }
        json_t *re = json_object_get(filter, "regexp"), *jt = json_object_get(filter, "jobtype");
        jids = json_object_get(filter, "jids");
        if ((re && !json_is_string(re)) || (jt && !json_is_string(jt)) ||
            (jids && !json_is_array(jids))) {
            rb_reply_err(c, "MUTATE: filter has jids (array), regexp (string), jobtype (string)");
            goto bad;
        }
        pattern = re && *json_string_value(re) ? json_string_value(re) : NULL;
        jobtype = jt && *json_string_value(jt) ? json_string_value(jt) : NULL;
        if (jids && json_array_size(jids) == 0)
            jids = NULL;
    }
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    cmd_data *d = attach(r, o);
    if (jids) {
        d->names = rb_xcalloc(json_array_size(jids), sizeof *d->names);
        size_t i;
        json_t *v;
        json_array_foreach(jids, i, v) {
            if (json_is_string(v))
                d->names[d->n_names++] = rb_xstrdup(json_string_value(v));
        }
    }
    d->m = (rb_pg_mutation){.cmd = cmd, .target = st, .pattern = pattern, .jobtype = jobtype};
    if (jids) {
        d->m.jids = (const char *const *)d->names;
        d->m.n_jids = (size_t)d->n_names;
    }
    r->call = mutate_call;
    r->done = mutate_done;
    rb_pgreq_post(c->srv, r);
    return;
bad:
    json_decref(o);
}

/* --- QUEUE --- */

static void queue_call(rb_pg *pg, rb_pgreq *r)
{
    cmd_data *d = r->data;
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
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
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

static void pg_queue(rb_conn *c, char *arg)
{
    char *save = NULL, *verb = strtok_r(arg, " \t", &save);
    for (char *p = verb; p && *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    if (!verb || (strcmp(verb, "PAUSE") && strcmp(verb, "RESUME") && strcmp(verb, "REMOVE") &&
                  strcmp(verb, "LATENCY"))) {
        rb_reply_err(c, "QUEUE: subcommand must be PAUSE, RESUME, REMOVE or LATENCY");
        return;
    }
    char *names[256];
    int n = 0;
    for (char *q; (q = strtok_r(NULL, " \t", &save));) {
        if (n == 256) {
            rb_reply_err(c, "QUEUE: at most 256 queue names");
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
        rb_reply_err(c, "QUEUE %s: name at least one queue (or *)", verb);
        return;
    }
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
    cmd_data *d = attach(r, NULL);
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
    cmd_data *d = r->data;
    r->rc = rb_pg_job_get(pg, r->jid, &d->job, &r->err);
    d->have_job = r->rc == 0;
    if (r->rc == RB_ENOENT)
        r->rc = 0;
}

static void job_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
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
    bool timed = j->state == RB_PG_SCHEDULED || j->state == RB_PG_RETRIES;
    json_object_set_new(v, "next_at", timed ? json_string(rb_time_format(j->due_ms, ts)) : json_null());
    if (j->state == RB_PG_WORKING) {
        json_object_set_new(v, "reserved_until", json_string(rb_time_format(j->due_ms, ts)));
        json_object_set_new(v, "wid", j->wid ? json_string(j->wid) : json_null());
    }
    rb_reply_json(r->c, v);
    rb_pgreq_finish(srv, r);
}

static void pg_job(rb_conn *c, char *arg)
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
    attach(r, o);
    r->jid = rb_xstrdup(jid);
    r->call = job_call;
    r->done = job_done;
    rb_pgreq_post(c->srv, r);
}

static void jobs_call(rb_pg *pg, rb_pgreq *r)
{
    cmd_data *d = r->data;
    r->rc = rb_pg_jobs(pg, &d->f, &d->jobs, &d->n_jobs, &d->total, &r->err);
}

static void jobs_done(rb_srv *srv, rb_pgreq *r)
{
    if (failed(srv, r))
        return;
    cmd_data *d = r->data;
    json_t *arr = json_array();
    for (size_t i = 0; i < d->n_jobs; i++)
        json_array_append_new(arr, job_view(&d->jobs[i]));
    rb_reply_json(r->c, json_pack("{s:I, s:o}", "total", (json_int_t)d->total, "jobs", arr));
    rb_pgreq_finish(srv, r);
}

static void pg_jobs(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "JOBS", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *state = rb_srv_json_str(o, "state");
    int st = state ? rb_job_state_parse(state) : -1;
    json_t *off = json_object_get(o, "offset"), *lim = json_object_get(o, "limit");
    rb_pg_filter f = {.state = st,
                      .queue = rb_srv_json_str(o, "queue"),
                      .jobtype = rb_srv_json_str(o, "jobtype"),
                      .errtype = rb_srv_json_str(o, "errtype"),
                      .offset = off ? json_integer_value(off) : 0,
                      .limit = lim ? json_integer_value(lim) : 50};
    if (st < 0) {
        rb_reply_err(c, "JOBS: state must be scheduled, enqueued, working, retries or dead");
    } else if ((off && !json_is_integer(off)) || f.offset < 0 || (lim && !json_is_integer(lim)) ||
               f.limit < 0 || f.limit > 10000) {
        rb_reply_err(c, "JOBS: offset must be >= 0 and limit from 0 to 10000");
    } else {
        rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL, c);
        attach(r, o)->f = f;
        r->call = jobs_call;
        r->done = jobs_done;
        rb_pgreq_post(c->srv, r);
        return;
    }
    json_decref(o);
}

/* --- the table --- */

static const struct {
    void (*sqlite)(rb_conn *, char *);
    void (*pg)(rb_conn *, char *);
} table[] = {
    {rb_cmd_push, pg_push},     {rb_cmd_pushb, pg_pushb},   {rb_cmd_fetch, pg_fetch},
    {rb_cmd_ack, pg_ack},       {rb_cmd_fail, pg_fail},     {rb_cmd_snooze, pg_snooze},
    {rb_cmd_extend, pg_extend}, {rb_cmd_info, pg_info},     {rb_cmd_flush, pg_flush},
    {rb_cmd_mutate, pg_mutate}, {rb_cmd_queue, pg_queue},   {rb_cmd_job, pg_job},
    {rb_cmd_jobs, pg_jobs},
};

rb_cmd_fn rb_pgcmd_handler(rb_cmd_fn fn)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].sqlite == fn)
            return table[i].pg;
    return fn;
}
