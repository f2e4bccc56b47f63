/* The API's actions: retry now, kill or discard a job or many, pause or
 * resume a queue, quiet or terminate workers. One handler each for both
 * modes: each checks its request, submits one job-engine op (the same
 * QUEUE and WORKERS ops as the protocol's, and the API's own job and bulk
 * actions) and answers from its results once the change is durable. */
#include "server/http_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"

/* The MUTATE cmd for an API action, or NULL when unknown. */
static const char *mutate_cmd(const char *action)
{
    if (!strcmp(action, "retry"))
        return "requeue";
    if (!strcmp(action, "kill"))
        return "kill";
    if (!strcmp(action, "discard"))
        return "discard";
    return NULL;
}

const char *rb_api_action_cmd(rb_http_req *r, const char *what, const char *action)
{
    const char *cmd = mutate_cmd(action);
    if (!cmd)
        rb_http_reply_error(r->req, 404, "no %s action '%s' (retry, kill or discard)", what,
                            action);
    return cmd;
}

bool rb_api_queue_action_args(rb_http_req *r, bool *pause)
{
    const char *name = r->seg[1], *action = r->seg[2];
    *pause = !strcmp(action, "pause");
    if (!*pause && strcmp(action, "resume")) {
        rb_http_reply_error(r->req, 404, "no queue action '%s' (pause or resume)", action);
        return false;
    }
    if (!*name || strlen(name) > 200) {
        rb_http_reply_error(r->req, 400, "queue name must be 1 to 200 bytes");
        return false;
    }
    return true;
}

/* --- POST /api/job/JID/ACTION --- */

static void job_action_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    rb_api_call *a = rb_api_call_of(op);
    const char *jid = op->u.job_action.jid;
    int prev = op->u.job_action.prev_state, st = op->u.job_action.state;
    if (!op->u.job_action.found) {
        rb_http_reply_error(a->req, 404, "no job '%s'", jid);
    } else if (!rb_job_state_mutable(prev)) {
        rb_http_reply_error(a->req, 409, "job '%s' is %s: only scheduled, retries and dead jobs "
                            "can be changed", jid, rb_job_state_name((rb_job_state)prev));
    } else {
        rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", jid), "HTTP: %s job %s", a->action, jid);
        rb_http_reply_json(a->req, 200,
                           json_pack("{s:s, s:s, s:s, s:o}", "jid", jid, "action", a->action,
                                     "previous_state", rb_job_state_name((rb_job_state)prev),
                                     "state", st ? json_string(rb_job_state_name(
                                                       (rb_job_state)st))
                                                 : json_null()));
    }
    rb_eng_op_finish(srv->eng, op);
}

/* Checks, changes and reads back the job in one op (RB_ENG_JOB_ACTION);
 * answered once the change is durable. */
void rb_api_job_action(rb_http_req *r)
{
    const char *cmd = rb_api_action_cmd(r, "job", r->seg[2]);
    if (!cmd)
        return;
    rb_eng_op *op = rb_api_op(r, RB_ENG_JOB_ACTION, job_action_done);
    rb_api_call *a = rb_api_call_of(op);
    snprintf(a->action, sizeof a->action, "%s", r->seg[2]);
    op->u.job_action.jid = a->strs[0] = rb_xstrdup(r->seg[1]);
    op->u.job_action.cmd = cmd;
    rb_eng_submit(r->h->srv->eng, op);
}

/* --- POST /api/jobs/ACTION --- */

static void bulk_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    rb_api_call *a = rb_api_call_of(op);
    const char *state = rb_job_state_name((rb_job_state)op->u.bulk.f.state);
    rb_log(RB_LOG_INFO, "HTTP: %s %zu %s jobs", a->action, op->u.bulk.changed, state);
    rb_http_reply_json(a->req, 200,
                       json_pack("{s:s, s:s, s:I}", "action", a->action, "state", state,
                                 "changed", (json_int_t)op->u.bulk.changed));
    rb_eng_op_finish(srv->eng, op);
}

static const char *opt_string(json_t *o, const char *key, bool *bad)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        *bad = true;
    const char *s = json_string_value(v);
    return s && *s ? s : NULL;
}

static int by_jid(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The jobs the body names, changed in one op (RB_ENG_BULK). A jid named
 * twice is one job (counted once in both modes). */
void rb_api_bulk_action(rb_http_req *r)
{
    const char *action = r->seg[1], *cmd = rb_api_action_cmd(r, "bulk", action);
    if (!cmd)
        return;
    json_t *body = rb_http_body_json(r->req);
    if (!body)
        return;
    bool bad = !json_is_object(body);
    const char *state = bad ? NULL : opt_string(body, "state", &bad);
    rb_job_filter f = {.state = -1};
    f.queue = bad ? NULL : opt_string(body, "queue", &bad);
    f.jobtype = bad ? NULL : opt_string(body, "jobtype", &bad);
    f.errtype = bad ? NULL : opt_string(body, "errtype", &bad);
    json_t *jids = bad ? NULL : json_object_get(body, "jids");
    json_t *all = bad ? NULL : json_object_get(body, "all");
    f.state = state ? rb_job_state_parse(state) : -1;
    if (bad || (jids && !json_is_array(jids)) || (all && !json_is_boolean(all))) {
        rb_http_reply_error(r->req, 400, "the body must be an object: {\"state\", \"jids\": [...]} "
                            "or {\"state\", \"all\": true, \"queue\", \"jobtype\", \"errtype\"}");
    } else if (!rb_job_state_mutable(f.state)) {
        rb_http_reply_error(r->req, 400, "state must be scheduled, retries or dead");
    } else if (!jids && !json_is_true(all)) {
        rb_http_reply_error(r->req, 400, "name the jobs: \"jids\": [...] or \"all\": true");
    } else {
        rb_eng_op *op = rb_api_op(r, RB_ENG_BULK, bulk_done);
        snprintf(rb_api_call_of(op)->action, sizeof rb_api_call_of(op)->action, "%s", action);
        op->json = body; /* the filter's and the jids' strings */
        op->u.bulk.cmd = cmd;
        op->u.bulk.f = f;
        if (jids) { /* a non-string entry names no job */
            op->u.bulk.jids = rb_xcalloc(json_array_size(jids) + 1, sizeof *op->u.bulk.jids);
            size_t i;
            json_t *v;
            json_array_foreach(jids, i, v) {
                if (json_is_string(v))
                    op->u.bulk.jids[op->u.bulk.n_jids++] = json_string_value(v);
            }
            const char **ids = op->u.bulk.jids;
            size_t n = 0;
            qsort(ids, op->u.bulk.n_jids, sizeof *ids, by_jid);
            for (size_t k = 0; k < op->u.bulk.n_jids; k++)
                if (!n || strcmp(ids[n - 1], ids[k]))
                    ids[n++] = ids[k];
            op->u.bulk.n_jids = n;
        }
        rb_eng_submit(r->h->srv->eng, op);
        return;
    }
    json_decref(body);
}

/* --- POST /api/queues/NAME/ACTION --- */

static void queue_action_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    rb_api_call *a = rb_api_call_of(op);
    const rb_queue_size *q = &op->u.queue.sizes[0];
    const char *name = op->u.queue.names[0];
    if (!q->name) { /* a resume of a queue never pushed to nor paused */
        rb_http_reply_error(a->req, 404, "no queue '%s'", name);
    } else {
        rb_log(RB_LOG_INFO, "HTTP: %s queue %s", a->action, name);
        rb_http_reply_json(a->req, 200,
                           json_pack("{s:o}", "queue",
                                     rb_api_queue_json(name, q->size, op->u.queue.latency[0],
                                                       q->paused)));
    }
    rb_eng_op_finish(srv->eng, op);
}

/* As QUEUE PAUSE or RESUME of the one queue (RB_ENG_QUEUE), read back. */
void rb_api_queue_action(rb_http_req *r)
{
    bool pause;
    if (!rb_api_queue_action_args(r, &pause))
        return;
    rb_eng_op *op = rb_api_op(r, RB_ENG_QUEUE, queue_action_done);
    snprintf(rb_api_call_of(op)->action, sizeof rb_api_call_of(op)->action, "%s", r->seg[2]);
    op->u.queue.verb = pause ? RB_ENG_QUEUE_PAUSE : RB_ENG_QUEUE_RESUME;
    op->u.queue.read_back = true;
    op->u.queue.names = rb_xcalloc(1, sizeof *op->u.queue.names);
    op->u.queue.names[op->u.queue.n++] = rb_xstrdup(r->seg[1]);
    rb_eng_submit(r->h->srv->eng, op);
}

/* --- POST /api/workers/ACTION --- */

int rb_api_worker_request(rb_http_req *r, json_t **body, const char **wid)
{
    const char *action = r->seg[1];
    int sig = !strcmp(action, "quiet") ? RB_WORKER_QUIET
              : !strcmp(action, "terminate") ? RB_WORKER_TERMINATE : 0;
    if (!sig) {
        rb_http_reply_error(r->req, 404, "no worker action '%s' (quiet or terminate)", action);
        return 0;
    }
    if (!(*body = rb_http_body_json(r->req)))
        return 0;
    json_t *w = json_is_object(*body) ? json_object_get(*body, "wid") : NULL;
    if (!json_is_object(*body) || (w && !json_is_string(w))) {
        rb_http_reply_error(r->req, 400, "the body must be {} (every worker) or {\"wid\": \"...\"}");
        json_decref(*body);
        *body = NULL;
        return 0;
    }
    *wid = json_string_value(w);
    return sig;
}

static void worker_action_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    rb_api_call *a = rb_api_call_of(op);
    if (op->u.workers.wid && !op->u.workers.changed)
        rb_http_reply_error(a->req, 404, "no worker '%s'", op->u.workers.wid);
    else
        rb_http_reply_json(a->req, 200, json_pack("{s:s, s:I}", "action", a->action, "workers",
                                                  (json_int_t)op->u.workers.changed));
    rb_eng_op_finish(srv->eng, op);
}

/* As WORKERS (the same op): said at each worker's next BEAT. */
void rb_api_worker_action(rb_http_req *r)
{
    const char *wid;
    json_t *body;
    int sig = rb_api_worker_request(r, &body, &wid);
    if (!sig)
        return;
    rb_eng_op *op = rb_api_op(r, RB_ENG_WORKERS, worker_action_done);
    snprintf(rb_api_call_of(op)->action, sizeof rb_api_call_of(op)->action, "%s", r->seg[1]);
    op->json = body; /* the wid's */
    op->u.workers.wid = wid;
    op->u.workers.signal = sig;
    rb_eng_submit(r->h->srv->eng, op);
}
