/* Cron: the timer, one conditional PUSH per tick with the entry's last tick
 * written in the same commit, and the catch-up after downtime, on a single
 * node and in distributed mode alike (server/cron.h). */
#include "server/cron.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "engine/engine.h"
#include "common/log.h"
#include "common/json.h"
#include "server/srv.h"

/* One [[cron]] entry's state; index i is srv->cfg.cron[i]. */
typedef struct cron_state {
    int64_t last_s;   /* last fired tick as this node knows it (stored at start,
                         then its own pushes and stale answers), 0 = never */
    int64_t next_s;   /* the next tick to fire, 0 = none (e.g. "0 0 31 2 *") */
    int64_t retry_ms; /* after a store failure: not before this (cron clock) */
    bool in_flight;   /* a push is waiting for its commit */
} cron_state;

struct rb_cron {
    cron_state *e;    /* cfg.n_cron entries */
    size_t n;
    int64_t offset_ms; /* RB_CRON_TEST_CLOCK_FAULT, 0 outside tests */
    int64_t rate;      /* RB_CRON_TEST_RATE_FAULT, 1 outside tests */
    int64_t fired;     /* jobs pushed since start */
    struct event *timer;
    bool stopping;
};

typedef struct tick_arg {
    size_t index;
    int64_t tick_s;
    char *key; /* the meta row */
} tick_arg;

static void tick_arg_free(void *p)
{
    tick_arg *a = p;
    free(a->key);
    free(a);
}

static struct rb_cron *state(rb_srv *srv)
{
    if (!srv->cron && srv->cfg.n_cron) {
        srv->cron = rb_xcalloc(1, sizeof *srv->cron);
        srv->cron->n = srv->cfg.n_cron;
        srv->cron->e = rb_xcalloc(srv->cron->n, sizeof *srv->cron->e);
        srv->cron->rate = 1;
    }
    return srv->cron;
}

static int64_t cron_now_ms(const struct rb_cron *cr)
{
    return rb_now_ms() * cr->rate + cr->offset_ms;
}

char *rb_cron_jid(const char *name, int64_t tick_s, char *out)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(out, 48, "cron-%016" PRIx64 "-%" PRId64, h, tick_s);
    return out;
}

/* The stored tick of a "cron:NAME" row (the backend's cron_ticks): the
 * entry's last, for the catch-up. */
static void load_tick(rb_srv *srv, const char *key, int64_t tick_s)
{
    size_t plen = strlen(RB_CRON_META_KEY);
    if (strncmp(key, RB_CRON_META_KEY, plen))
        return;
    for (size_t i = 0; i < srv->cfg.n_cron; i++)
        if (!strcmp(srv->cfg.cron[i].name, key + plen)) {
            srv->cron->e[i].last_s = tick_s;
            return;
        }
}

static void arm(rb_srv *srv);
static void fire(rb_srv *srv, size_t i, int64_t tick_s, bool catch_up);

/* The next tick of entry i strictly after after_s (0 when none). */
static int64_t next_after(const rb_srv *srv, size_t i, int64_t after_s)
{
    const rb_cron_entry *e = &srv->cfg.cron[i];
    int64_t next = 0;
    if (rb_cron_next(&e->spec, e->timezone, after_s, &next))
        return 0;
    return next;
}

static void pushed(rb_srv *srv, rb_eng_op *op)
{
    struct rb_cron *cr = srv->cron;
    tick_arg *a = op->arg;
    const rb_cron_entry *e = &srv->cfg.cron[a->index];
    cron_state *st = &cr->e[a->index];
    const char *jid = rb_json_str(op->u.push.jobs[0], "jid");
    st->in_flight = false;
    if (op->rc) {
        /* the store failed: the tick fires again in 5 s (its jid refuses a
         * second copy should the first have been written after all) */
        rb_log(RB_LOG_ERROR, "cron %s: cannot push %s: %s (again in 5 s)", e->name, jid,
               rb_err_msg(&op->err));
        st->retry_ms = cron_now_ms(cr) + 5000;
    } else {
        int s = op->u.push.status[0];
        if (op->u.push.stale) { /* another node fired it, or this one before a restart */
            rb_log(RB_LOG_DEBUG, "cron %s: %s fired already", e->name, jid);
        } else if (s == 0) {
            cr->fired++;
            rb_log(RB_LOG_INFO, "cron %s: enqueued %s/%s", e->name,
                   json_string_value(json_object_get(e->job, "jobtype")), jid);
        } else if (s == RB_EEXIST) {
            rb_log(RB_LOG_INFO, "cron %s: %s already pushed", e->name, jid);
        } else {
            rb_log(RB_LOG_WARN, "cron %s: unable to push periodic job %s: %s", e->name, jid,
                   s == RB_ENOTUNIQUE ? "job not unique" : rb_strerror(s));
        }
        if (a->tick_s > st->last_s)
            st->last_s = a->tick_s;
        if (st->next_s && st->next_s <= a->tick_s) {
            int64_t now_s = cron_now_ms(cr) / 1000;
            st->next_s = next_after(srv, a->index, a->tick_s > now_s ? a->tick_s : now_s);
        }
    }
    rb_eng_op_finish(srv->eng, op);
    arm(srv);
}

/* Pushes entry i's job for tick_s (catch_up: the run_once job at start). */
static void fire(rb_srv *srv, size_t i, int64_t tick_s, bool catch_up)
{
    struct rb_cron *cr = srv->cron;
    const rb_cron_entry *e = &srv->cfg.cron[i];
    char jid[48];
    json_t *job = json_deep_copy(e->job);
    json_object_set_new(job, "jid", json_string(rb_cron_jid(e->name, tick_s, jid)));
    rb_err err = {0};
    if (rb_job_validate(srv, job, &err)) { /* e.g. a retry_policy [retry] no longer allows */
        rb_log(RB_LOG_ERROR, "cron %s: unable to push periodic job %s: %s", e->name, jid,
               rb_err_msg(&err));
        json_decref(job);
        int64_t now_s = cron_now_ms(cr) / 1000;
        cr->e[i].last_s = tick_s;
        cr->e[i].next_s = next_after(srv, i, tick_s > now_s ? tick_s : now_s);
        return;
    }
    if (catch_up)
        rb_log(RB_LOG_INFO, "cron %s: missed ticks while down, one catch-up job (missed = "
               "\"run_once\")", e->name);
    rb_eng_op *op = rb_eng_op_new(RB_ENG_PUSH, NULL, pushed);
    tick_arg *a = rb_xcalloc(1, sizeof *a);
    a->index = i;
    a->tick_s = tick_s;
    rb_buf k = RB_BUF_INIT;
    rb_buf_printf(&k, "%s%s", RB_CRON_META_KEY, e->name);
    a->key = rb_buf_detach(&k, NULL);
    op->arg = a;
    op->arg_free = tick_arg_free;
    op->json = job;
    op->u.push.jobs = rb_xcalloc(1, sizeof *op->u.push.jobs);
    op->u.push.jobs[0] = job;
    op->u.push.n = 1;
    op->u.push.status = rb_xcalloc(1, sizeof *op->u.push.status);
    op->u.push.meta_key = a->key; /* pushed only if tick_s > the stored tick */
    op->u.push.tick_s = tick_s;
    cr->e[i].in_flight = true;
    rb_eng_submit(srv->eng, op);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    struct rb_cron *cr = srv->cron;
    int64_t now = cron_now_ms(cr);
    for (size_t i = 0; i < cr->n; i++) {
        cron_state *st = &cr->e[i];
        if (st->in_flight || !st->next_s || st->next_s * 1000 > now || st->retry_ms > now)
            continue;
        st->retry_ms = 0;
        fire(srv, i, st->next_s, false);
    }
    arm(srv);
}

/* The timer set for the earliest tick (or retry) of an entry not in flight. */
static void arm(rb_srv *srv)
{
    struct rb_cron *cr = srv->cron;
    if (!cr || !cr->timer || cr->stopping)
        return;
    int64_t at = INT64_MAX;
    for (size_t i = 0; i < cr->n; i++) {
        const cron_state *st = &cr->e[i];
        if (st->in_flight || !st->next_s)
            continue;
        int64_t t = st->next_s * 1000;
        if (st->retry_ms > t)
            t = st->retry_ms;
        if (t < at)
            at = t;
    }
    evtimer_del(cr->timer);
    if (at == INT64_MAX)
        return;
    int64_t d = (at - cron_now_ms(cr) + cr->rate - 1) / cr->rate; /* real ms */
    if (d < 0)
        d = 0;
    if (d > 3600 * 1000) /* re-read the clock at least hourly (it may be stepped) */
        d = 3600 * 1000;
    struct timeval tv = {(time_t)(d / 1000), (suseconds_t)(d % 1000) * 1000};
    evtimer_add(cr->timer, &tv);
}

void rb_cron_start(rb_srv *srv)
{
    struct rb_cron *cr = state(srv);
    if (!cr || !srv->eng->base)
        return;
    json_t *ticks = srv->eng->backend->cron_ticks(srv->eng);
    const char *key;
    json_t *v;
    json_object_foreach(ticks, key, v)
        load_tick(srv, key, json_integer_value(v));
    json_decref(ticks);
    if (rb_fault_get(RB_CRON_TEST_CLOCK_FAULT)) {
        cr->offset_ms = rb_fault_int(RB_CRON_TEST_CLOCK_FAULT, 0);
        rb_log(RB_LOG_WARN, "cron: test clock offset %" PRId64 " ms (%s %s)", cr->offset_ms,
               RB_FAULTS_ENV, RB_CRON_TEST_CLOCK_FAULT);
    }
    int64_t rate = rb_fault_int(RB_CRON_TEST_RATE_FAULT, 1);
    if (rate > 1) {
        cr->rate = rate > 3600 ? 3600 : rate;
        rb_log(RB_LOG_WARN, "cron: test clock rate %" PRId64 " (%s %s)", cr->rate,
               RB_FAULTS_ENV, RB_CRON_TEST_RATE_FAULT);
    }
    cr->timer = evtimer_new(srv->eng->base, on_timer, srv);
    int64_t now_s = cron_now_ms(cr) / 1000;
    for (size_t i = 0; i < cr->n; i++) {
        cron_state *st = &cr->e[i];
        const rb_cron_entry *e = &srv->cfg.cron[i];
        st->next_s = next_after(srv, i, now_s);
        bool missed;
        int64_t catch_up =
            rb_cron_catch_up(&e->spec, e->timezone, e->run_once, st->last_s, now_s, &missed);
        if (catch_up) /* run_once: the latest missed tick's job, once */
            fire(srv, i, catch_up, true);
        else if (missed)
            rb_log(RB_LOG_INFO, "cron %s: ticks missed while down are skipped (missed = \"skip\")",
                   e->name);
    }
    char buf[RB_TIME_STRLEN];
    for (size_t i = 0; i < cr->n; i++)
        rb_log(RB_LOG_INFO, "cron %s: \"%s\" in %s, next at %s", srv->cfg.cron[i].name,
               srv->cfg.cron[i].schedule, srv->cfg.cron[i].timezone,
               cr->e[i].next_s ? rb_time_format(cr->e[i].next_s * 1000, buf) : "never");
    arm(srv);
}

void rb_cron_free(rb_srv *srv)
{
    struct rb_cron *cr = srv->cron;
    if (!cr)
        return;
    if (cr->timer)
        event_free(cr->timer);
    free(cr->e);
    free(cr);
    srv->cron = NULL;
}

void rb_cron_info(const rb_srv *srv, json_t *rebound)
{
    json_object_set_new(rebound, "cron",
                        json_pack("{s:I, s:I}", "entries", (json_int_t)srv->cfg.n_cron, "fired",
                                  (json_int_t)(srv->cron ? srv->cron->fired : 0)));
}

int64_t rb_cron_fired(const rb_srv *srv)
{
    return srv->cron ? srv->cron->fired : 0;
}

int64_t rb_cron_last_tick(const rb_srv *srv, size_t i)
{
    return srv->cron && i < srv->cron->n ? srv->cron->e[i].last_s : 0;
}

int64_t rb_cron_now_ms(const rb_srv *srv)
{
    return srv->cron ? cron_now_ms(srv->cron) : rb_now_ms();
}
