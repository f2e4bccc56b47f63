/* Distributed mode's work commands PUSH, PUSHB and FETCH on the PostgreSQL
 * engine (pg_cmds_impl.h); ACK, FAIL, SNOOZE and EXTEND go through the job
 * engine (cmd_jobs.c, backend_pg.c). */
#include "server/pg_cmds_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "server/metrics.h"

/* --- PUSH, PUSHB --- */

static void push_done(rb_srv *srv, rb_pgreq *r)
{
    if (rb_pgcmd_failed(srv, r))
        return;
    rb_pgcmd_data *d = r->data;
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
        } else {
            rb_metrics_event(srv->metrics, RB_M_PUSHED, j->queue, j->json);
            if (j->at_ms <= r->now)
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
    rb_pgcmd_data *d = rb_pgcmd_attach(r, arg);
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

void rb_pgcmd_push(rb_conn *c, char *arg)
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

void rb_pgcmd_pushb(rb_conn *c, char *arg)
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
        char key[RB_CMD_PUSHB_KEY];
        const char *jid = rb_cmd_pushb_key(job, i, key);
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

void rb_pgcmd_fetch(rb_conn *c, char *arg)
{
    int n;
    char **queues = rb_cmd_fetch_queues(c, arg, &n);
    if (!queues)
        return;
    rb_pgmode_fetch(c->srv, c, queues, n);
}
