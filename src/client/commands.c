/* The typed commands: each builds its request line in the client's reused
 * buffer, makes the call and checks or decodes the reply. */
#include "client/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Sends c->out; the reply must be a status (+OK). */
static int call_ok(rb_client *c, rb_err *err)
{
    rb_reply r;
    int rc = rb__client_call_out(c, &r, err);
    if (rc)
        return rc;
    if (r.type != RB_REPLY_STATUS)
        return rb_err_set(err, RB_EPROTO, "unexpected reply from %s (want +OK)", c->addr);
    return 0;
}

/* Sends c->out; the reply must be a bulk JSON value (or, when nil_ok, nil:
 * *out = NULL). */
static int call_json(rb_client *c, json_t **out, int nil_ok, rb_err *err)
{
    rb_reply r;
    *out = NULL;
    int rc = rb__client_call_out(c, &r, err);
    if (rc)
        return rc;
    if (r.type == RB_REPLY_NIL && nil_ok)
        return 0;
    if (r.type != RB_REPLY_BULK)
        return rb_err_set(err, RB_EPROTO, "unexpected reply from %s (want JSON)", c->addr);
    json_error_t jerr;
    *out = json_loadb(r.str, r.len, 0, &jerr);
    if (!*out)
        return rb_err_set(err, RB_EPROTO, "bad JSON from %s: %s", c->addr, jerr.text);
    return 0;
}

static void start(rb_client *c, const char *verb)
{
    rb_buf_reset(&c->out);
    rb_buf_adds(&c->out, verb);
}

/* Appends `VERB {"jid":J` (no closing brace). */
static void start_jid(rb_client *c, const char *verb, const char *jid)
{
    start(c, verb);
    rb_buf_adds(&c->out, " {\"jid\":");
    rb__json_add_str(&c->out, jid);
}

static int has_newline(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

int rb_client_push(rb_client *c, const char *job_json, rb_err *err)
{
    if (has_newline(job_json))
        return rb_err_set(err, RB_EINVAL, "job JSON must be on one line");
    start(c, "PUSH ");
    rb_buf_adds(&c->out, job_json);
    return call_ok(c, err);
}

int rb_client_push_json(rb_client *c, json_t *job, rb_err *err)
{
    if (!json_is_object(job))
        return rb_err_set(err, RB_EINVAL, "job must be a JSON object");
    if (!json_object_get(job, "jid")) {
        char jid[25];
        rb_jid_new(jid);
        json_object_set_new(job, "jid", json_string(jid));
    }
    char *text = json_dumps(job, JSON_COMPACT);
    if (!text)
        return rb_err_set(err, RB_EINVAL, "job cannot be encoded as JSON");
    start(c, "PUSH ");
    rb_buf_adds(&c->out, text);
    free(text);
    return call_ok(c, err);
}

int rb_client_pushb(rb_client *c, const char *jobs_json, json_t **rejected, rb_err *err)
{
    if (rejected)
        *rejected = NULL;
    if (has_newline(jobs_json))
        return rb_err_set(err, RB_EINVAL, "jobs JSON must be on one line");
    start(c, "PUSHB ");
    rb_buf_adds(&c->out, jobs_json);
    json_t *res;
    int rc = call_json(c, &res, 0, err);
    if (rc)
        return rc;
    if (!json_is_object(res)) {
        json_decref(res);
        return rb_err_set(err, RB_EPROTO, "unexpected PUSHB reply from %s", c->addr);
    }
    if (rejected)
        *rejected = res;
    else
        json_decref(res);
    return 0;
}

int rb_client_fetch(rb_client *c, const char *const *queues, size_t n, rb_reply *job,
                    rb_err *err)
{
    rb_reply dummy;
    if (!job)
        job = &dummy;
    memset(job, 0, sizeof *job);
    if (n == 0)
        return rb_err_set(err, RB_EINVAL, "fetch needs at least one queue");
    start(c, "FETCH");
    for (size_t i = 0; i < n; i++) {
        if (!*queues[i] || strpbrk(queues[i], " \t\r\n"))
            return rb_err_set(err, RB_EINVAL, "bad queue name '%s'", queues[i]);
        rb_buf_addc(&c->out, ' ');
        rb_buf_adds(&c->out, queues[i]);
    }
    int rc = rb__client_call_out(c, job, err);
    if (rc)
        return rc;
    if (job->type == RB_REPLY_STATUS) {
        memset(job, 0, sizeof *job);
        return rb_err_set(err, RB_EPROTO, "unexpected FETCH reply from %s", c->addr);
    }
    return 0;
}

int rb_client_ack(rb_client *c, const char *jid, rb_err *err)
{
    start_jid(c, "ACK", jid);
    rb_buf_addc(&c->out, '}');
    return call_ok(c, err);
}

/* True when s is a plain non-negative integer (retry_after as seconds). */
static int all_digits(const char *s)
{
    if (!*s || strlen(s) > 15)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

int rb_client_fail(rb_client *c, const rb_fail *f, rb_err *err)
{
    if (!f || !f->jid)
        return rb_err_set(err, RB_EINVAL, "fail needs a jid");
    start_jid(c, "FAIL", f->jid);
    if (f->errtype) {
        rb_buf_adds(&c->out, ",\"errtype\":");
        rb__json_add_str(&c->out, f->errtype);
    }
    if (f->message) {
        rb_buf_adds(&c->out, ",\"message\":");
        rb__json_add_str(&c->out, f->message);
    }
    if (f->backtrace) {
        rb_buf_adds(&c->out, ",\"backtrace\":[");
        for (size_t i = 0; i < f->nbacktrace; i++) {
            if (i)
                rb_buf_addc(&c->out, ',');
            rb__json_add_str(&c->out, f->backtrace[i]);
        }
        rb_buf_addc(&c->out, ']');
    }
    if (f->retryable == 0)
        rb_buf_adds(&c->out, ",\"retryable\":false");
    if (f->retry_after) {
        rb_buf_adds(&c->out, ",\"retry_after\":");
        if (all_digits(f->retry_after))
            rb_buf_adds(&c->out, f->retry_after);
        else
            rb__json_add_str(&c->out, f->retry_after);
    }
    if (f->next_retry_delay > 0)
        rb_buf_printf(&c->out, ",\"next_retry_delay\":%.17g", f->next_retry_delay);
    rb_buf_addc(&c->out, '}');
    return call_ok(c, err);
}

int rb_client_beat(rb_client *c, const char *current_state, long rss_kb,
                   rb_beat_state *state, rb_err *err)
{
    if (state)
        *state = RB_BEAT_OK;
    if (!c->wid)
        return rb_err_set(err, RB_EINVAL, "beat needs a connection with a wid");
    start(c, "BEAT {\"wid\":");
    rb__json_add_str(&c->out, c->wid);
    if (current_state) {
        rb_buf_adds(&c->out, ",\"current_state\":");
        rb__json_add_str(&c->out, current_state);
    }
    if (rss_kb >= 0)
        rb_buf_printf(&c->out, ",\"rss_kb\":%ld", rss_kb);
    rb_buf_addc(&c->out, '}');
    rb_reply r;
    int rc = rb__client_call_out(c, &r, err);
    if (rc)
        return rc;
    if (r.type == RB_REPLY_STATUS)
        return 0;
    if (r.type != RB_REPLY_BULK)
        return rb_err_set(err, RB_EPROTO, "unexpected BEAT reply from %s", c->addr);
    json_t *obj = json_loadb(r.str, r.len, 0, NULL);
    const char *s = json_string_value(json_object_get(obj, "state"));
    rb_beat_state st = RB_BEAT_OK;
    if (s && !strcmp(s, "quiet"))
        st = RB_BEAT_QUIET;
    else if (s && !strcmp(s, "terminate"))
        st = RB_BEAT_TERMINATE;
    else
        rc = rb_err_set(err, RB_EPROTO, "unexpected BEAT reply from %s", c->addr);
    json_decref(obj);
    if (state)
        *state = st;
    return rc;
}

int rb_client_info(rb_client *c, json_t **info, rb_err *err)
{
    start(c, "INFO");
    return call_json(c, info, 0, err);
}

int rb_client_flush(rb_client *c, rb_err *err)
{
    start(c, "FLUSH");
    return call_ok(c, err);
}

int rb_client_mutate(rb_client *c, const rb_mutate *m, rb_err *err)
{
    if (!m || !m->cmd || !m->target)
        return rb_err_set(err, RB_EINVAL, "mutate needs a cmd and a target");
    start(c, "MUTATE {\"cmd\":");
    rb__json_add_str(&c->out, m->cmd);
    rb_buf_adds(&c->out, ",\"target\":");
    rb__json_add_str(&c->out, m->target);
    if (m->jids || m->regexp || m->jobtype) {
        const char *sep = "";
        rb_buf_adds(&c->out, ",\"filter\":{");
        if (m->jids) {
            rb_buf_adds(&c->out, "\"jids\":[");
            for (size_t i = 0; i < m->njids; i++) {
                if (i)
                    rb_buf_addc(&c->out, ',');
                rb__json_add_str(&c->out, m->jids[i]);
            }
            rb_buf_addc(&c->out, ']');
            sep = ",";
        }
        if (m->regexp) {
            rb_buf_adds(&c->out, sep);
            rb_buf_adds(&c->out, "\"regexp\":");
            rb__json_add_str(&c->out, m->regexp);
            sep = ",";
        }
        if (m->jobtype) {
            rb_buf_adds(&c->out, sep);
            rb_buf_adds(&c->out, "\"jobtype\":");
            rb__json_add_str(&c->out, m->jobtype);
        }
        rb_buf_addc(&c->out, '}');
    }
    rb_buf_addc(&c->out, '}');
    return call_ok(c, err);
}

/* `QUEUE VERB n1 n2 ...` into c->out. */
static int queue_line(rb_client *c, const char *verb, const char *const *names, size_t n,
                      rb_err *err)
{
    if (n == 0)
        return rb_err_set(err, RB_EINVAL, "queue %s needs at least one queue name", verb);
    start(c, "QUEUE ");
    for (const char *v = verb; *v; v++)
        rb_buf_addc(&c->out, (char)(*v >= 'a' && *v <= 'z' ? *v - 32 : *v));
    for (size_t i = 0; i < n; i++) {
        if (!*names[i] || strpbrk(names[i], " \t\r\n"))
            return rb_err_set(err, RB_EINVAL, "bad queue name '%s'", names[i]);
        rb_buf_addc(&c->out, ' ');
        rb_buf_adds(&c->out, names[i]);
    }
    return 0;
}

int rb_client_queue(rb_client *c, const char *verb, const char *const *names, size_t n,
                    rb_err *err)
{
    if (strcasecmp(verb, "pause") && strcasecmp(verb, "resume") && strcasecmp(verb, "remove"))
        return rb_err_set(err, RB_EINVAL, "unknown queue command '%s'", verb);
    int rc = queue_line(c, verb, names, n, err);
    return rc ? rc : call_ok(c, err);
}

int rb_client_queue_latency(rb_client *c, const char *const *names, size_t n,
                            json_t **latency, rb_err *err)
{
    *latency = NULL;
    int rc = queue_line(c, "LATENCY", names, n, err);
    return rc ? rc : call_json(c, latency, 0, err);
}

int rb_client_snooze(rb_client *c, const char *jid, int64_t seconds, rb_err *err)
{
    start_jid(c, "SNOOZE", jid);
    rb_buf_printf(&c->out, ",\"seconds\":%lld}", (long long)seconds);
    return call_ok(c, err);
}

int rb_client_extend(rb_client *c, const char *jid, int64_t reserve_for, rb_err *err)
{
    start_jid(c, "EXTEND", jid);
    rb_buf_printf(&c->out, ",\"reserve_for\":%lld}", (long long)reserve_for);
    return call_ok(c, err);
}

int rb_client_job(rb_client *c, const char *jid, json_t **job, rb_err *err)
{
    start_jid(c, "JOB", jid);
    rb_buf_addc(&c->out, '}');
    return call_json(c, job, 1, err);
}

int rb_client_workflow(rb_client *c, const char *jid, json_t **graph, rb_err *err)
{
    start_jid(c, "WORKFLOW", jid);
    rb_buf_addc(&c->out, '}');
    return call_json(c, graph, 1, err);
}

int rb_client_batch_view(rb_client *c, const char *bid, json_t **batch, rb_err *err)
{
    start(c, "BATCHES {\"bid\":");
    rb__json_add_str(&c->out, bid);
    rb_buf_addc(&c->out, '}');
    return call_json(c, batch, 1, err);
}

int rb_client_batches(rb_client *c, bool all, int64_t offset, int64_t limit, json_t **result,
                      rb_err *err)
{
    start(c, "BATCHES ");
    rb_buf_printf(&c->out, "{\"state\":\"%s\",\"offset\":%lld", all ? "all" : "open",
                  (long long)offset);
    if (limit)
        rb_buf_printf(&c->out, ",\"limit\":%lld", (long long)limit);
    rb_buf_addc(&c->out, '}');
    return call_json(c, result, 0, err);
}

int rb_client_jobs(rb_client *c, const rb_jobs_query *q, json_t **result, rb_err *err)
{
    *result = NULL;
    if (!q || !q->state)
        return rb_err_set(err, RB_EINVAL, "jobs needs a state");
    start(c, "JOBS {\"state\":");
    rb__json_add_str(&c->out, q->state);
    if (q->queue) {
        rb_buf_adds(&c->out, ",\"queue\":");
        rb__json_add_str(&c->out, q->queue);
    }
    if (q->jobtype) {
        rb_buf_adds(&c->out, ",\"jobtype\":");
        rb__json_add_str(&c->out, q->jobtype);
    }
    if (q->errtype) {
        rb_buf_adds(&c->out, ",\"errtype\":");
        rb__json_add_str(&c->out, q->errtype);
    }
    if (q->offset > 0)
        rb_buf_printf(&c->out, ",\"offset\":%lld", (long long)q->offset);
    if (q->limit > 0)
        rb_buf_printf(&c->out, ",\"limit\":%lld", (long long)q->limit);
    rb_buf_addc(&c->out, '}');
    int rc = call_json(c, result, 0, err);
    if (!rc && !json_is_object(*result)) {
        json_decref(*result);
        *result = NULL;
        return rb_err_set(err, RB_EPROTO, "unexpected JOBS reply from %s", c->addr);
    }
    return rc;
}

int rb_client_workers(rb_client *c, const char *cmd, const char *wid, rb_err *err)
{
    if (!cmd)
        return rb_err_set(err, RB_EINVAL, "workers needs a cmd");
    start(c, "WORKERS {\"cmd\":");
    rb__json_add_str(&c->out, cmd);
    if (wid) {
        rb_buf_adds(&c->out, ",\"wid\":");
        rb__json_add_str(&c->out, wid);
    }
    rb_buf_addc(&c->out, '}');
    return call_ok(c, err);
}
