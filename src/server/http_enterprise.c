/* The API's views of Faktory Enterprise's features beside the jobs (docs/http.md):
 * GET /api/cron (the [[cron]] entries as `rebound cron` lists them, with
 * the last tick the store keeps), GET /api/throttles (each throttled
 * queue's limit and the slots the engine counts in use), and the keys
 * /api/info adds for them (expired jobs, unique locks, cron, throttles). */
#include "server/http_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "config/cron_json.h"
#include "server/cron.h"

/* --- GET /api/info's keys --- */

void rb_api_enterprise_info(rb_srv *srv, const rb_eng_info *f, json_t *info)
{
    json_t *expired = json_object_get(f->rebound, "expired");
    json_object_set_new(json_object_get(info, "all_time"), "expired",
                        json_is_integer(expired) ? json_incref(expired) : json_null());
    json_t *u = json_object_get(f->rebound, "unique");
    json_object_set_new(info, "unique",
                        json_is_object(u) ? json_pack("{s:O, s:O}", "locks",
                                                      json_object_get(u, "locks"), "rejected",
                                                      json_object_get(u, "rejected"))
                                          : json_null());
    json_object_set_new(info, "cron",
                        json_pack("{s:I, s:I}", "entries", (json_int_t)srv->cfg.n_cron, "fired",
                                  (json_int_t)rb_cron_fired(srv)));
    json_t *t = json_object_get(f->rebound, "throttles");
    json_int_t in_use = 0;
    const char *q;
    json_t *v;
    json_object_foreach(t, q, v) in_use += json_integer_value(json_object_get(v, "in_use"));
    json_object_set_new(info, "throttles",
                        json_pack("{s:I, s:I}", "queues", (json_int_t)srv->cfg.n_throttles,
                                  "in_use", in_use));
    json_t *g = json_object_get(f->rebound, "groups"); /* INFO's, without its per-queue part */
    json_t *groups = json_is_object(g) ? json_deep_copy(g) : json_null();
    json_object_del(groups, "by_queue");
    json_object_set_new(info, "groups", groups);
}

/* --- GET /api/cron --- */

void rb_api_cron(rb_http_req *r)
{
    rb_srv *srv = r->h->srv;
    long long count;
    if (!rb_http_query_int(r->req, "count", 1, RB_CRON_NEXT_MAX, 1, &count))
        return;
    int64_t now_ms = rb_cron_now_ms(srv);
    char *at = rb_http_query(r->req, "now");
    if (at && rb_time_parse_rfc3339(at, &now_ms)) {
        rb_http_reply_error(r->req, 400, "query parameter now='%s' must be an RFC 3339 time",
                            at);
        free(at);
        return;
    }
    free(at);
    int64_t now_s = now_ms / 1000 - (now_ms % 1000 < 0); /* floor */
    json_t *entries = json_array();
    for (size_t i = 0; i < srv->cfg.n_cron; i++) {
        const rb_cron_entry *e = &srv->cfg.cron[i];
        json_t *o = rb_cron_entry_json(e, now_s, (int)count);
        int64_t last = rb_cron_last_tick(srv, i);
        char jid[48];
        json_object_set_new(o, "last", rb_api_time_or_null(last * 1000));
        json_object_set_new(o, "last_jid",
                            last > 0 ? json_string(rb_cron_jid(e->name, last, jid)) : json_null());
        json_array_append_new(entries, o);
    }
    char buf[RB_TIME_STRLEN];
    rb_http_reply_json(r->req, 200,
                       json_pack("{s:s, s:I, s:o}", "now", rb_time_format(now_s * 1000, buf),
                                 "fired", (json_int_t)rb_cron_fired(srv), "entries", entries));
}

/* --- GET /api/throttles --- */

static int by_queue(const void *a, const void *b)
{
    return strcmp((*(const rb_throttle *const *)a)->queue, (*(const rb_throttle *const *)b)->queue);
}

/* Each configured throttle by queue name: its limit and timeout from the
 * configuration, the slots in use as the engine's INFO counts them (null
 * where the backend reports none), the queue's size and pause. */
static void throttles_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    const rb_eng_info *f = &op->u.info;
    size_t n = srv->cfg.n_throttles;
    const rb_throttle **v = rb_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = &srv->cfg.throttles[i];
    qsort(v, n, sizeof *v, by_queue);
    json_t *reported = json_object_get(f->rebound, "throttles");
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *in_use = json_object_get(json_object_get(reported, v[i]->queue), "in_use");
        int64_t size = 0;
        bool paused = false;
        for (size_t k = 0; k < f->n_queues; k++)
            if (!strcmp(f->queues[k].name, v[i]->queue)) {
                size = f->queues[k].size;
                paused = f->queues[k].paused;
            }
        json_t *t = json_pack("{s:s, s:I, s:I, s:o, s:I, s:b}", "queue", v[i]->queue,
                              "concurrency", (json_int_t)v[i]->concurrency, "timeout_s",
                              (json_int_t)v[i]->timeout_s, "in_use",
                              json_is_integer(in_use) ? json_incref(in_use) : json_null(), "size",
                              (json_int_t)size, "paused", paused);
        if (v[i]->rate) { /* a rate: starts per period_s, plus burst */
            json_object_set_new(t, "rate", json_integer(v[i]->rate));
            json_object_set_new(t, "period_s", json_real((double)v[i]->period_ms / 1000.0));
            json_object_set_new(t, "burst", json_integer(v[i]->burst));
        }
        json_array_append_new(arr, t);
    }
    free(v);
    rb_http_reply_json(rb_api_call_of(op)->req, 200, json_pack("{s:o}", "throttles", arr));
    rb_eng_op_finish(srv->eng, op);
}

void rb_api_throttles(rb_http_req *r)
{
    rb_eng_submit(r->h->srv->eng, rb_api_info_op(r->req, throttles_done, false));
}

/* --- GET /api/job/JID's unique lock and expiry --- */

void rb_api_job_unique(const rb_job_view *j, json_t *job, int64_t now, json_t *v)
{
    rb_unique_spec u;
    if (job && !rb_unique_parse(job, &u, NULL) && u.on)
        json_object_set_new(v, "unique",
                            json_pack("{s:f, s:s, s:b, s:o}", "unique_for", u.for_s,
                                      "unique_until", u.until_start ? "start" : "success",
                                      "locked", j->lock_until_ms > now, "lock_until",
                                      rb_api_time_or_null(j->lock_until_ms)));
    else
        json_object_set_new(v, "unique", json_null());
    json_object_set_new(v, "expiry", rb_api_time_or_null(job ? rb_expiry_of(job) : 0));
}
