/* The API's actions: retry now, kill or discard a job or many, pause or
 * resume a queue, quiet or terminate workers. They change state through the
 * same functions as the protocol's MUTATE, QUEUE and WORKERS, and answer
 * once the change is on disk, as the protocol does. */
#include "server/http_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "server/log.h"
#include "server/metrics.h"

typedef struct http_pending {
    rb_srv *srv;
    struct evhttp_request *req;
    json_t *reply; /* sent with 200 after a good commit */
} http_pending;

static void on_commit(void *arg, int status, const rb_err *err)
{
    http_pending *p = arg;
    rb_srv *srv = p->srv;
    if (status) {
        json_decref(p->reply);
        rb_http_reply_error(p->req, 500, "storage error: %s", rb_err_msg(err));
    } else {
        rb_http_reply_json(p->req, 200, p->reply);
    }
    free(p);
    rb_srv_kick(srv);
    rb_srv_arm(srv);
}

/* Answers req with reply (taken over) after everything submitted so far is
 * committed. */
static void reply_after_commit(rb_srv *srv, struct evhttp_request *req, json_t *reply)
{
    http_pending *p = rb_xcalloc(1, sizeof *p);
    p->srv = srv;
    p->req = req;
    p->reply = reply;
    rb_writer_then(srv->writer, on_commit, p);
    rb_srv_kick(srv);
}

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

static bool mutable_state(int st)
{
    return st == RB_JOB_SCHEDULED || st == RB_JOB_RETRIES || st == RB_JOB_DEAD;
}

/* --- POST /api/job/JID/ACTION --- */

void rb_api_job_action(rb_http_req *r)
{
    rb_srv *srv = r->h->srv;
    const char *jid = r->seg[1], *action = r->seg[2];
    const char *cmd = rb_api_action_cmd(r, "job", action);
    if (!cmd)
        return;
    rb_job *j = rb_jobs_find(&srv->jobs, jid);
    if (!j || j->state == RB_JOB_PENDING) {
        rb_http_reply_error(r->req, 404, "no job '%s'", jid);
        return;
    }
    if (!mutable_state(j->state)) {
        rb_http_reply_error(r->req, 409, "job '%s' is %s: only scheduled, retries and dead jobs "
                            "can be changed", jid, rb_job_state_name(j->state));
        return;
    }
    json_t *reply = json_pack("{s:s, s:s, s:s}", "jid", jid, "action", action, "previous_state",
                              rb_job_state_name(j->state));
    rb_srv_mutate_job(srv, j, cmd, rb_now_ms());
    j = rb_jobs_find(&srv->jobs, jid);
    json_object_set_new(reply, "state", j ? json_string(rb_job_state_name(j->state)) : json_null());
    rb_log(RB_LOG_INFO, "HTTP: %s job %s", action, jid);
    reply_after_commit(srv, r->req, reply);
}

/* --- POST /api/jobs/ACTION --- */

typedef struct bulk {
    rb_srv *srv;
    const char *cmd, *queue, *jobtype, *errtype;
    int state;
    int64_t now;
    size_t changed;
} bulk;

static bool bulk_matches(const bulk *b, const rb_job *j)
{
    if (j->state != b->state)
        return false;
    if (b->queue && strcmp(b->queue, j->queue->name))
        return false;
    if (b->jobtype) {
        char jt[256];
        rb_metrics_jobtype(j->json, jt, sizeof jt);
        if (strcmp(jt, b->jobtype))
            return false;
    }
    if (b->errtype) {
        json_t *o = json_loads(j->json, 0, NULL);
        const char *et = rb_srv_json_str(json_object_get(o, "failure"), "errtype");
        bool ok = et && !strcmp(et, b->errtype);
        json_decref(o);
        if (!ok)
            return false;
    }
    return true;
}

static void bulk_one(bulk *b, rb_job *j)
{
    if (!bulk_matches(b, j))
        return;
    rb_srv_mutate_job(b->srv, j, b->cmd, b->now);
    b->changed++;
}

static const char *opt_string(json_t *o, const char *key, bool *bad)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        *bad = true;
    const char *s = json_string_value(v);
    return s && *s ? s : NULL;
}

void rb_api_bulk_action(rb_http_req *r)
{
    rb_srv *srv = r->h->srv;
    const char *action = r->seg[1];
    bulk b = {.srv = srv, .cmd = rb_api_action_cmd(r, "bulk", action), .now = rb_now_ms()};
    if (!b.cmd)
        return;
    json_t *body = rb_http_body_json(r->req);
    if (!body)
        return;
    bool bad = !json_is_object(body);
    const char *state = bad ? NULL : opt_string(body, "state", &bad);
    b.queue = bad ? NULL : opt_string(body, "queue", &bad);
    b.jobtype = bad ? NULL : opt_string(body, "jobtype", &bad);
    b.errtype = bad ? NULL : opt_string(body, "errtype", &bad);
    json_t *jids = bad ? NULL : json_object_get(body, "jids");
    json_t *all = bad ? NULL : json_object_get(body, "all");
    b.state = state ? rb_job_state_parse(state) : -1;
    if (bad || (jids && !json_is_array(jids)) || (all && !json_is_boolean(all))) {
        rb_http_reply_error(r->req, 400, "the body must be an object: {\"state\", \"jids\": [...]} "
                            "or {\"state\", \"all\": true, \"queue\", \"jobtype\", \"errtype\"}");
    } else if (!mutable_state(b.state)) {
        rb_http_reply_error(r->req, 400, "state must be scheduled, retries or dead");
    } else if (!jids && !json_is_true(all)) {
        rb_http_reply_error(r->req, 400, "name the jobs: \"jids\": [...] or \"all\": true");
    } else {
        if (jids) {
            size_t i;
            json_t *v;
            json_array_foreach(jids, i, v) {
                rb_job *j = json_is_string(v) ? rb_jobs_find(&srv->jobs, json_string_value(v)) : NULL;
                if (j)
                    bulk_one(&b, j);
            }
        } else {
            rb_list *l = rb_jobs_state_list(&srv->jobs, b.state);
            size_t n = l->size; /* a job moved to the end of the list is not seen twice */
            for (rb_link *e = l->head, *next; e && n > 0; e = next, n--) {
                next = e->next;
                bulk_one(&b, rb_job_of_link(e));
            }
        }
        rb_log(RB_LOG_INFO, "HTTP: %s %zu %s jobs", action, b.changed, state);
        reply_after_commit(srv, r->req,
                           json_pack("{s:s, s:s, s:I}", "action", action, "state", state,
                                     "changed", (json_int_t)b.changed));
    }
    json_decref(body);
}

/* --- POST /api/queues/NAME/ACTION --- */

void rb_api_queue_action(rb_http_req *r)
{
    rb_srv *srv = r->h->srv;
    const char *name = r->seg[1], *action = r->seg[2];
    bool pause;
    if (!rb_api_queue_action_args(r, &pause))
        return;
    rb_queue *q = rb_jobs_queue(&srv->jobs, name, pause); /* as QUEUE PAUSE: created */
    if (!q) {
        rb_http_reply_error(r->req, 404, "no queue '%s'", name);
        return;
    }
    rb_srv_queue_pause(srv, q, pause);
    rb_log(RB_LOG_INFO, "HTTP: %s queue %s", action, name);
    reply_after_commit(srv, r->req, json_pack("{s:o}", "queue", rb_api_queue_json(q, rb_now_ms())));
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
    rb_eng_op_finish(srv, op);
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
    rb_eng_submit(r->h->srv, op);
}
