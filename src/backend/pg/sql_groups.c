/* Groups in turn and their limits in distributed mode (schema 16,
 * docs/distributed.md "Groups and limits"): the claim's arguments per
 * queue (the node's turn cursor, the [groups] and [throttles] limits as
 * the engine resolves them, engine/group.h and engine/gcra.h), the turn
 * table those cursors live in, and the maintenance of rb_groups. The SQL
 * (rb_claim_groups) walks the groups; this file hands it what the node
 * knows. */
#include "backend/pg/sql_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gcra.h"
#include "engine/group.h"
#include "engine/group_cmd.h"
#include "engine/throttle.h"

/* Per queue the group this node served last (its turn cursor) and whether
 * the queue is known to have groups (so that its claims go straight to
 * rb_claim_groups). Shared by a node's database threads (a mutex; the
 * table only grows: one entry per queue ever claimed with groups). */
struct rb_pg_turns {
    pthread_mutex_t mu;
    struct turn {
        char *queue;
        char *last; /* NULL: from the first group */
        int64_t func_until; /* claims run rb_claim_groups before this (wall ms) */
        int64_t full_until; /* claims start with SQL_CLAIMG before this (wall ms) */
    } *v;
    size_t n, cap;
};

rb_pg_turns *sql_turns_new(void)
{
    rb_pg_turns *t = rb_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void sql_turns_free(rb_pg_turns *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].queue);
        free(t->v[i].last);
    }
    free(t->v);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void rb_pg_share_turns(rb_pg *pg, rb_pg *from)
{
    if (pg->own_turns)
        sql_turns_free(pg->turns);
    pg->turns = from->turns;
    pg->own_turns = false;
}

/* The entry of queue (t->mu held), or NULL. */
static struct turn *turn_of(rb_pg_turns *t, const char *queue)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].queue, queue))
            return &t->v[i];
    return NULL;
}

bool sql_groups_known(rb_pg *pg, const char *queue)
{
    pthread_mutex_lock(&pg->turns->mu);
    bool known = turn_of(pg->turns, queue) != NULL;
    pthread_mutex_unlock(&pg->turns->mu);
    return known;
}

void sql_groups_served(rb_pg *pg, const char *queue, const char *grp)
{
    rb_pg_turns *t = pg->turns;
    pthread_mutex_lock(&t->mu);
    struct turn *e = turn_of(t, queue);
    if (!e) {
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 8;
            t->v = rb_xrealloc(t->v, t->cap * sizeof *t->v);
        }
        e = &t->v[t->n++];
        e->queue = rb_xstrdup(queue);
        e->last = NULL;
        e->func_until = 0;
        e->full_until = 0;
    }
    if (grp) {
        free(e->last);
        e->last = rb_xstrdup(grp);
    }
    pthread_mutex_unlock(&t->mu);
}

/* How long a queue's claims go straight to rb_claim_groups after
 * SQL_CLAIMG handed one over: because a group with limits was in its
 * round (the limits stay until a GROUP SET lifts them), or for another
 * reason (a hold due, fewer runnable groups than FETCHes: a queue of few
 * groups stays so, a due hold is lifted by the claim that meets it). And
 * how long they start with SQL_CLAIMG after SQL_CLAIML handed one over
 * (its round was not full: a queue drained or of few groups stays so for
 * a while, and SQL_CLAIMG serves it in one statement). */
#define FUNC_LIMITS_MS 1000
#define FUNC_OTHER_MS 100
#define FULL_MS 100

sql_stmt sql_groups_claim_stmt(rb_pg *pg, const char *queue, int64_t now)
{
    const rb_config *cfg = sql_cfg(pg);
    const rb_throttle *th = cfg->n_throttles ? rb_config_throttle(cfg, queue) : NULL;
    if (th && th->rate > 0)
        return SQL_CLAIM;
    pthread_mutex_lock(&pg->turns->mu);
    struct turn *e = turn_of(pg->turns, queue);
    bool known = e != NULL, func = e && e->func_until > now, full = e && e->full_until > now;
    pthread_mutex_unlock(&pg->turns->mu);
    if (!known)
        return SQL_CLAIM1;
    rb_flow_limits lim; /* a named group's, without its GROUP SET */
    rb_config_group_limits(cfg, queue, NULL, &lim, NULL);
    if (func || lim.concurrency > 0 || lim.rate > 0)
        return SQL_CLAIM;
    return full ? SQL_CLAIMG : SQL_CLAIML;
}

sql_stmt sql_groups_handed_over(rb_pg *pg, const char *queue, sql_stmt s, bool limits,
                                int64_t now)
{
    sql_groups_served(pg, queue, NULL);
    pthread_mutex_lock(&pg->turns->mu);
    struct turn *e = turn_of(pg->turns, queue);
    if (s == SQL_CLAIML)
        e->full_until = now + FULL_MS;
    else
        e->func_until = now + (limits ? FUNC_LIMITS_MS : FUNC_OTHER_MS);
    pthread_mutex_unlock(&pg->turns->mu);
    return s == SQL_CLAIML ? SQL_CLAIMG : SQL_CLAIM;
}

void sql_groups_args(rb_pg *pg, const char *const *queues, int nq, rb_buf a[SQL_GROUP_ARGS])
{
    const rb_config *cfg = sql_cfg(pg);
    for (int k = 0; k < SQL_GROUP_ARGS; k++)
        sql_arr_begin(&a[k]);
    for (int i = 0; i < nq; i++) {
        pthread_mutex_lock(&pg->turns->mu);
        struct turn *e = turn_of(pg->turns, queues[i]);
        sql_arr_str(&a[0], e ? e->last : NULL);
        pthread_mutex_unlock(&pg->turns->mu);
        rb_flow_limits lim; /* a named group's without its GROUP SET (rb_group_limits adds it) */
        rb_config_group_limits(cfg, queues[i], NULL, &lim, NULL);
        sql_arr_int(&a[1], lim.concurrency);
        sql_arr_int(&a[2], lim.rate);
        sql_arr_int(&a[3], lim.period_ms);
        sql_arr_int(&a[4], lim.burst);
        const rb_throttle *th = cfg->n_throttles ? rb_config_throttle(cfg, queues[i]) : NULL;
        rb_gcra g;
        rb_gcra_init(&g, th ? th->rate : 0, th ? th->period_ms : 0, th ? th->burst : 0);
        sql_arr_int(&a[5], g.t_us);
        sql_arr_int(&a[6], g.tau_us);
    }
    for (int k = 0; k < SQL_GROUP_ARGS; k++)
        sql_arr_end(&a[k]);
}

int rb_pg_groups_maint(rb_pg *pg, int64_t now, int limit, int *released, rb_err *err)
{
    *released = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char nowtxt[24], lim[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {nowtxt, lim};
    PGresult *r = sql_query(pg, "SELECT rb_groups_maint($1::bigint, $2::int)", 2, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *released = (int)sql_int(r, 0, 0);
    PQclear(r);
    return 0;
}

int rb_pg_groups_start(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    /* this node's [groups] may differ from the one that set them: every
     * concurrency hold is re-checked by the next claim (hold_until -1: a
     * re-check, not counted again when the group is still at its limit) */
    return sql_exec(pg, "UPDATE rb_groups SET hold = 0, hold_until = -1 WHERE hold = 1", err);
}

/* --- GROUP SET/PAUSE/RESUME/GET and GROUPS (engine/group_cmd.h) --- */

/* The ready jobs a view counts at most (then ready_capped). */
#define GROUP_READY_CAP 10000

/* A view of the rb_groups rows of queue (one group's when group is not
 * NULL), named groups only, by name; columns as view_fill reads them. */
static PGresult *group_rows(rb_pg *pg, const char *queue, const char *group, rb_err *err)
{
    const char *params[2] = {queue, group};
    return sql_query(
        pg,
        "SELECT g.grp, g.hold, g.hold_until, g.tat_us, g.o_conc, g.o_rate, g.o_period_ms,"
        " g.o_burst, g.paused_until, g.reason,"
        " (SELECT count(*) FROM (SELECT 1 FROM rb_jobs r WHERE r.queue = g.queue"
        "   AND r.grp = g.grp AND r.state = 2 LIMIT 10001) x)," /* GROUP_READY_CAP + 1 */
        " (SELECT count(*) FROM rb_jobs r WHERE r.queue = g.queue AND r.grp = g.grp"
        "   AND r.state = 3)"
        " FROM rb_groups g WHERE g.queue = $1 AND g.grp <> '' AND ($2::text IS NULL OR g.grp = $2)"
        " ORDER BY g.grp COLLATE \"C\"",
        2, params, err);
}

/* Row i of group_rows into v (queue's group), at now. */
static void view_fill(const rb_config *cfg, const char *queue, const PGresult *r, int i,
                      int64_t now, rb_group_view *v)
{
    *v = (rb_group_view){.queue = rb_xstrdup(queue), .group = sql_dup(r, i, 0), .known = true};
    static const rb_flow_field cols[] = {RB_FLOW_CONCURRENCY, RB_FLOW_RATE, RB_FLOW_PERIOD,
                                         RB_FLOW_BURST};
    for (int k = 0; k < 4; k++) {
        if (PQgetisnull(r, i, 4 + k))
            continue;
        int64_t x = sql_int(r, i, 4 + k);
        v->over.set |= 1u << cols[k];
        if (cols[k] == RB_FLOW_CONCURRENCY)
            v->over.v.concurrency = x;
        else if (cols[k] == RB_FLOW_RATE)
            v->over.v.rate = x;
        else if (cols[k] == RB_FLOW_PERIOD)
            v->over.v.period_ms = x;
        else
            v->over.v.burst = x;
    }
    v->has_override = v->over.set != 0;
    v->hold = (rb_group_hold)sql_int(r, i, 1);
    v->paused_until_ms = sql_int(r, i, 8);
    if (v->paused_until_ms && v->paused_until_ms <= now) { /* ended: the next claim clears it */
        v->paused_until_ms = 0;
        if (v->hold == RB_HOLD_PAUSED)
            v->hold = RB_HOLD_NONE;
    }
    if (v->hold == RB_HOLD_RATE && sql_int(r, i, 2) <= now) /* ended as well */
        v->hold = RB_HOLD_NONE;
    if (v->hold == RB_HOLD_PAUSED)
        v->hold_until_ms = v->paused_until_ms;
    else if (v->hold == RB_HOLD_RATE)
        v->hold_until_ms = sql_int(r, i, 2);
    v->reason = PQgetisnull(r, i, 9) || !v->paused_until_ms ? NULL : sql_dup(r, i, 9);
    v->ready = sql_int(r, i, 10);
    if (v->ready > GROUP_READY_CAP) {
        v->ready = GROUP_READY_CAP;
        v->ready_capped = true;
    }
    v->working = sql_int(r, i, 11);
    rb_flow_limits lim;
    rb_config_group_limits(cfg, queue, v->has_override ? &v->over : NULL, &lim, NULL);
    rb_gcra g;
    rb_gcra_init(&g, lim.rate, lim.period_ms, lim.burst);
    int64_t next_us = g.t_us ? rb_gcra_next_us(&g, sql_int(r, i, 3)) : 0;
    if (next_us > now * 1000)
        v->next_start_ms = (next_us + 999) / 1000;
}

/* Every named group of queue known to the database, by name, into
 * *v (*n of them). */
static int queue_views(rb_pg *pg, const char *queue, int64_t now, rb_group_view **v, size_t *n,
                       rb_err *err)
{
    PGresult *r = group_rows(pg, queue, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *n = (size_t)PQntuples(r);
    *v = rb_xcalloc(*n + 1, sizeof **v);
    for (size_t i = 0; i < *n; i++)
        view_fill(sql_cfg(pg), queue, r, (int)i, now, &(*v)[i]);
    PQclear(r);
    return 0;
}

static void views_free(rb_group_view *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rb_group_view_release(&v[i]);
    free(v);
}

/* queue's counts over its views. */
static void sum_views(const char *queue, const rb_group_view *v, size_t n, rb_group_sum *s)
{
    *s = (rb_group_sum){.queue = rb_xstrdup(queue)};
    for (size_t i = 0; i < n; i++)
        rb_group_sum_add(s, &v[i]);
}

/* SET, PAUSE, RESUME: one statement each (answered after its commit); the
 * queue's '' row with the group's, so that its claims take turns. */
static int group_change(rb_pg *pg, const rb_group_req *r, rb_err *err)
{
    char a[6][24];
    const rb_flow_limits *o = &r->over.v;
    const int64_t vals[4] = {o->concurrency, o->rate, o->period_ms, o->burst};
    static const rb_flow_field cols[] = {RB_FLOW_CONCURRENCY, RB_FLOW_RATE, RB_FLOW_PERIOD,
                                         RB_FLOW_BURST};
    const char *params[7] = {r->queue, r->group};
    for (int k = 0; k < 4; k++) {
        snprintf(a[k], sizeof a[k], "%lld", (long long)vals[k]);
        params[2 + k] = r->over.set & (1u << cols[k]) ? a[k] : NULL;
    }
    const char *sql;
    int np = 2;
    switch (r->verb) {
    case RB_GROUP_SET:
        np = 6;
        sql = r->over.set
                  ? "WITH q AS (INSERT INTO rb_groups (queue, grp) VALUES ($1, '')"
                    "   ON CONFLICT DO NOTHING),"
                    " k AS (INSERT INTO rb_queues (name) VALUES ($1) ON CONFLICT DO NOTHING),"
                    " u AS (INSERT INTO rb_groups AS g (queue, grp, o_conc, o_rate, o_period_ms,"
                    "   o_burst) VALUES ($1, $2, $3::int, $4::int, $5::bigint, $6::int)"
                    "   ON CONFLICT (queue, grp) DO UPDATE SET o_conc = excluded.o_conc,"
                    "   o_rate = excluded.o_rate, o_period_ms = excluded.o_period_ms,"
                    "   o_burst = excluded.o_burst,"
                    "   hold = CASE WHEN g.hold IN (1, 2) THEN 0 ELSE g.hold END,"
                    "   hold_until = CASE WHEN g.hold = 3 THEN g.hold_until ELSE 0 END"
                    "   RETURNING 1)"
                    " SELECT pg_notify(rb_channel(), $1) FROM u"
                  /* {}: the override removed, no row made for it */
                  : "WITH u AS (UPDATE rb_groups g SET o_conc = NULL, o_rate = NULL,"
                    "   o_period_ms = NULL, o_burst = NULL,"
                    "   hold = CASE WHEN g.hold IN (1, 2) THEN 0 ELSE g.hold END,"
                    "   hold_until = CASE WHEN g.hold = 3 THEN g.hold_until ELSE 0 END"
                    "   WHERE g.queue = $1 AND g.grp = $2 AND $3::int IS NULL AND $4::int IS NULL"
                    "   AND $5::bigint IS NULL AND $6::int IS NULL RETURNING 1)"
                    " SELECT pg_notify(rb_channel(), $1) FROM u";
        break;
    case RB_GROUP_PAUSE:
        snprintf(a[4], sizeof a[4], "%lld", (long long)r->until_ms);
        params[2] = a[4];
        params[3] = r->reason;
        np = 4;
        sql = "WITH q AS (INSERT INTO rb_groups (queue, grp) VALUES ($1, '')"
              "   ON CONFLICT DO NOTHING),"
              " k AS (INSERT INTO rb_queues (name) VALUES ($1) ON CONFLICT DO NOTHING)"
              " INSERT INTO rb_groups AS g (queue, grp, hold, hold_until, paused_until, reason,"
              " holds_p) VALUES ($1, $2, 3, $3::bigint, $3::bigint, $4, 1)"
              " ON CONFLICT (queue, grp) DO UPDATE SET hold = 3, hold_until = $3::bigint,"
              " paused_until = $3::bigint, reason = $4,"
              /* a held-back start when it was not paused (schema 18) */
              " holds_p = g.holds_p + CASE WHEN g.hold = 3 THEN 0 ELSE 1 END";
        break;
    default: /* RESUME: a group not paused is left alone */
        sql = "WITH u AS (UPDATE rb_groups g SET hold = 0, hold_until = 0, paused_until = 0,"
              " reason = NULL WHERE g.queue = $1 AND g.grp = $2 AND g.hold = 3 RETURNING 1)"
              " SELECT pg_notify(rb_channel(), $1) FROM u";
        break;
    }
    PGresult *res = sql_query(pg, sql, np, params, err);
    if (!res)
        return err ? err->code : RB_ESTORE;
    PQclear(res);
    return 0;
}

int rb_pg_group(rb_pg *pg, const rb_group_req *r, int64_t now, rb_pg_group_out *out,
                rb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const rb_config *cfg = sql_cfg(pg);
    if (r->queue && !rb_group_queue_configured(cfg, r->queue)) {
        const char *params[1] = {r->queue};
        PGresult *k = sql_query(pg,
                                "SELECT EXISTS (SELECT 1 FROM rb_queues WHERE name = $1)"
                                " OR EXISTS (SELECT 1 FROM rb_groups WHERE queue = $1)",
                                1, params, err);
        if (!k)
            return err ? err->code : RB_ESTORE;
        bool known = !strcmp(PQgetvalue(k, 0, 0), "t");
        PQclear(k);
        if (!known)
            return rb_group_no_queue(r, err);
    }
    switch (r->verb) {
    case RB_GROUP_SET:
    case RB_GROUP_PAUSE:
    case RB_GROUP_RESUME:
        return group_change(pg, r, err);
    case RB_GROUP_GET: {
        PGresult *res = group_rows(pg, r->queue, r->group, err);
        if (!res)
            return err ? err->code : RB_ESTORE;
        if (PQntuples(res))
            view_fill(cfg, r->queue, res, 0, now, &out->view);
        else /* never seen: its would-be view */
            out->view = (rb_group_view){.queue = rb_xstrdup(r->queue),
                                        .group = rb_xstrdup(r->group)};
        PQclear(res);
        return 0;
    }
    case RB_GROUP_LIST:
        break;
    }
    if (r->queue) { /* one queue: its page, and its counts over every group */
        rb_group_view *v;
        size_t n;
        if ((rc = queue_views(pg, r->queue, now, &v, &n, err)))
            return rc;
        out->sums = rb_xcalloc(1, sizeof *out->sums);
        out->n_sums = 1;
        sum_views(r->queue, v, n, &out->sums[0]);
        out->views = rb_xcalloc((size_t)r->limit + 1, sizeof *out->views);
        for (size_t i = 0; i < n; i++) {
            if (!rb_group_view_matches(&v[i], r->state))
                continue;
            int64_t k = out->total++;
            if (k >= r->offset && (int64_t)out->n < r->limit) {
                out->views[out->n++] = v[i];
                memset(&v[i], 0, sizeof v[i]); /* moved */
            }
        }
        views_free(v, n);
        return 0;
    }
    /* every queue with named groups or a [groups] table, by name */
    rb_buf conf = RB_BUF_INIT;
    sql_arr_begin(&conf);
    for (size_t i = 0; i < cfg->n_groups; i++)
        if (strcmp(cfg->groups[i].queue, "*"))
            sql_arr_str(&conf, cfg->groups[i].queue);
    sql_arr_end(&conf);
    const char *params[1] = {conf.data};
    PGresult *qs = sql_query(pg,
                             "SELECT q FROM (SELECT queue AS q FROM rb_groups WHERE grp <> ''"
                             " UNION SELECT unnest($1::text[])) x ORDER BY q COLLATE \"C\"",
                             1, params, err);
    rb_buf_release(&conf);
    if (!qs)
        return err ? err->code : RB_ESTORE;
    out->sums = rb_xcalloc((size_t)PQntuples(qs) + 1, sizeof *out->sums);
    for (int i = 0; i < PQntuples(qs) && !rc; i++) {
        rb_group_view *v;
        size_t n;
        if (!(rc = queue_views(pg, PQgetvalue(qs, i, 0), now, &v, &n, err))) {
            sum_views(PQgetvalue(qs, i, 0), v, n, &out->sums[out->n_sums++]);
            views_free(v, n);
        }
    }
    PQclear(qs);
    return rc;
}

/* JOB's hold of enqueued job by its queue (paused, or at a [throttles]
 * limit: engine/throttle.h's rule on the queue's row and working jobs);
 * false when the queue lets it start (or cannot be read). */
static bool queue_hold(rb_pg *pg, rb_job_view *job, int64_t now)
{
    const rb_config *cfg = sql_cfg(pg);
    const rb_throttle *t = cfg->n_throttles ? rb_config_throttle(cfg, job->queue) : NULL;
    rb_err err = {0};
    const char *p[1] = {job->queue};
    PGresult *r = sql_query(pg, "SELECT paused, tat_us FROM rb_queues WHERE name = $1", 1, p,
                            &err);
    if (!r)
        return false;
    bool paused = PQntuples(r) && !strcmp(PQgetvalue(r, 0, 0), "t");
    int64_t tat = PQntuples(r) ? sql_int(r, 0, 1) : 0;
    PQclear(r);
    if (!paused && !t)
        return false;
    int64_t held = 0, frees = INT64_MAX;
    if (!paused && t && t->concurrency && sql_throttle_held(pg, t, now, &held, &frees, &err))
        return false;
    return rb_throttle_job_hold(job->queue, paused, t, held, frees, tat, now, job);
}

void rb_pg_job_hold(rb_pg *pg, rb_job_view *job, int64_t now)
{
    if (job->state != RB_JOB_ENQUEUED || queue_hold(pg, job, now))
        return;
    const char *group = NULL;
    json_t *o = json_loads(job->json, 0, NULL);
    if (!o || rb_group_of_job(o, &group, NULL) || !group) {
        json_decref(o);
        return;
    }
    rb_err err = {0};
    PGresult *r = group_rows(pg, job->queue, group, &err);
    if (r && PQntuples(r)) {
        rb_group_view v;
        view_fill(sql_cfg(pg), job->queue, r, 0, now, &v);
        rb_flow_limits lim;
        rb_config_group_limits(sql_cfg(pg), job->queue, v.has_override ? &v.over : NULL, &lim,
                               NULL);
        /* a concurrency hold is stored by the claim that met it and lifted
         * at its 1 s re-check until the next claim sets it again: the
         * group's working jobs say whether it holds now */
        if (v.hold == RB_HOLD_NONE && lim.concurrency > 0 && v.working >= lim.concurrency)
            v.hold = RB_HOLD_CONCURRENCY;
        if (v.hold != RB_HOLD_NONE) {
            job->hold_by = "group";
            job->hold = rb_group_hold_name(v.hold);
            job->hold_until_ms = v.hold_until_ms;
            job->hold_detail = rb_group_hold_detail(group, v.hold, v.working, lim.concurrency,
                                                    v.hold_until_ms, v.reason);
        }
        rb_group_view_release(&v);
    }
    PQclear(r);
    json_decref(o);
}

int rb_pg_group_holds(rb_pg *pg, const rb_group_sum *sums, size_t n, rb_group_holds **holds,
                      rb_err *err)
{
    *holds = rb_xcalloc(n + 1, sizeof **holds);
    rb_buf q = RB_BUF_INIT;
    sql_arr_begin(&q);
    for (size_t i = 0; i < n; i++)
        sql_arr_str(&q, sums[i].queue);
    sql_arr_end(&q);
    const char *params[1] = {q.data};
    /* the claims' and GROUP PAUSE's counts on the groups' rows (a deleted
     * group's in its queue's '' row), the rate passes on the queue's
     * (schema 18) */
    PGresult *r = sql_query(
        pg,
        "SELECT (SELECT coalesce(sum(g.holds_c), 0) FROM rb_groups g WHERE g.queue = x.q),"
        " (SELECT coalesce(sum(g.holds_r), 0) FROM rb_groups g WHERE g.queue = x.q),"
        " (SELECT coalesce(sum(g.holds_p), 0) FROM rb_groups g WHERE g.queue = x.q),"
        " coalesce((SELECT k.rate_passes FROM rb_queues k WHERE k.name = x.q), 0)"
        " FROM unnest($1::text[]) WITH ORDINALITY AS x(q, o) ORDER BY x.o",
        1, params, err);
    rb_buf_release(&q);
    if (!r)
        return err ? err->code : RB_ESTORE;
    for (int i = 0; i < PQntuples(r) && (size_t)i < n; i++)
        (*holds)[i] = (rb_group_holds){sql_int(r, i, 0), sql_int(r, i, 1), sql_int(r, i, 2),
                                       sql_int(r, i, 3)};
    PQclear(r);
    return 0;
}
