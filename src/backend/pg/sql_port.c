/* Distributed mode's side of export and import (engine/export.h): the
 * jobs read from one repeatable-read snapshot through a cursor, new rows
 * inserted in one transaction. The storage rules are PostgreSQL's: a
 * job's text is kept without enqueued_at (the enq_ms column), custom's
 * expiry in expires_ms, the counters in shards summed by readers. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/export.h"
#include "engine/unique.h"

typedef struct pg_port {
    rb_port base;
    rb_pg *pg;
    bool snap;                  /* counters and paused queues read with the jobs' snapshot */
    int64_t processed, failures;
    char **paused;
    size_t n_paused;
} pg_port;

/* The paused queues' names, by name (new array, caller frees). */
static int read_paused(rb_pg *pg, char ***names, size_t *n, rb_err *err)
{
    *names = NULL;
    *n = 0;
    PGresult *r = sql_query(pg, "SELECT name FROM rb_queues WHERE paused ORDER BY name COLLATE \"C\"",
                            0, NULL, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    int rows = PQntuples(r);
    *names = rows ? rb_xcalloc((size_t)rows, sizeof **names) : NULL;
    for (int i = 0; i < rows; i++)
        (*names)[i] = sql_dup(r, i, 0);
    *n = (size_t)rows;
    PQclear(r);
    return 0;
}

#define CURSOR_ROWS "1000"

static int pp_each_job(rb_port *base, rb_port_job_fn fn, void *arg, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    rb_pg *pg = p->pg;
    int rc = sql_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
    if (rc)
        return rc;
    if ((rc = rb_pg_counters(pg, &p->processed, &p->failures, err)) ||
        (rc = read_paused(pg, &p->paused, &p->n_paused, err)) ||
        (rc = sql_exec(pg,
                       "DECLARE rb_export NO SCROLL CURSOR FOR"
                       " SELECT jid, queue, json, history, wid, state, priority, attempts,"
                       " reserve_s, flags, due_ms, first_ms, enq_ms FROM rb_jobs"
                       " ORDER BY state, CASE WHEN state = 2 THEN queue END COLLATE \"C\","
                       " CASE WHEN state = 2 THEN priority END DESC,"
                       " CASE WHEN state = 2 THEN seq ELSE due_ms END, seq",
                       err))) {
        sql_rollback(pg);
        return rc;
    }
    p->snap = true;
    for (;;) {
        PGresult *r = sql_query(pg, "FETCH " CURSOR_ROWS " FROM rb_export", 0, NULL, err);
        if (!r) {
            rc = err && err->code ? err->code : RB_ESTORE;
            break;
        }
        int rows = PQntuples(r);
        for (int i = 0; rc == 0 && i < rows; i++) {
            rb_job_view v = {0};
            sql_read_job(r, i, &v);
            rc = fn(arg, &v);
            rb_job_view_release(&v);
        }
        PQclear(r);
        if (rc || rows == 0)
            break;
    }
    if (rc) {
        sql_rollback(pg);
        return rc;
    }
    return sql_exec(pg, "COMMIT", err);
}

static int pp_counters(rb_port *base, int64_t *processed, int64_t *failures, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    if (p->snap) {
        *processed = p->processed;
        *failures = p->failures;
        return 0;
    }
    return rb_pg_counters(p->pg, processed, failures, err);
}

static int pp_paused(rb_port *base, char ***names, size_t *n, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    if (!p->snap)
        return read_paused(p->pg, names, n, err);
    *names = p->n_paused ? rb_xcalloc(p->n_paused, sizeof **names) : NULL;
    for (size_t i = 0; i < p->n_paused; i++)
        (*names)[i] = rb_xstrdup(p->paused[i]);
    *n = p->n_paused;
    return 0;
}

static int pp_find(rb_port *base, const char *jid, rb_job_view *out, bool *found, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    rb_err e = {0};
    int rc = rb_pg_job_get(p->pg, jid, out, &e);
    *found = rc == 0;
    if (rc == RB_ENOENT)
        return 0;
    if (rc && err)
        *err = e;
    return rc;
}

/* Inserts one job: its text without enqueued_at (kept in enq_ms), its
 * expiry in expires_ms. */
static int insert_job(rb_pg *pg, const rb_job_view *v, rb_err *err)
{
    json_t *o = json_loads(v->json, 0, NULL);
    int64_t enq = 0, exp = json_is_object(o) ? rb_expiry_of(o) : 0;
    const char *ea = json_string_value(json_object_get(o, "enqueued_at"));
    if (ea)
        rb_time_parse_rfc3339(ea, &enq);
    json_object_del(o, "enqueued_at");
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char st[8], pr[8], due[24], eq[24], first[24], att[16], res[16], ex[24];
    snprintf(st, sizeof st, "%d", v->state);
    snprintf(pr, sizeof pr, "%d", v->priority);
    snprintf(due, sizeof due, "%lld", (long long)v->due_ms);
    snprintf(eq, sizeof eq, "%lld", (long long)enq);
    snprintf(first, sizeof first, "%lld", (long long)v->first_ms);
    snprintf(att, sizeof att, "%d", v->attempts);
    snprintf(res, sizeof res, "%d", v->reserve_s);
    snprintf(ex, sizeof ex, "%lld", (long long)exp);
    const char *params[13] = {v->jid, st,  pr,     due,        eq,     first,       att,
                              res,    v->wid, text ? text : v->json, v->history, exp ? ex : NULL,
                              v->queue};
    PGresult *r = sql_query(pg,
                            "INSERT INTO rb_jobs (jid, state, priority, due_ms, enq_ms, first_ms,"
                            " attempts, reserve_s, wid, json, history, expires_ms, queue)"
                            " VALUES ($1, $2::int, $3::int, $4::bigint, $5::bigint, $6::bigint,"
                            " $7::int, $8::int, $9, $10, $11, $12::bigint, $13)",
                            13, params, err);
    free(text);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    PQclear(r);
    const char *qp[1] = {v->queue};
    r = sql_query(pg, "INSERT INTO rb_queues (name) VALUES ($1) ON CONFLICT DO NOTHING", 1, qp,
                  err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

static int pp_write(rb_port *base, const rb_job_view *jobs, size_t n, const char *const *pause,
                    size_t n_pause, bool set_counters, int64_t processed, int64_t failures,
                    rb_err *err)
{
    pg_port *p = (pg_port *)base;
    rb_pg *pg = p->pg;
    int rc = sql_exec(pg, "BEGIN", err);
    if (rc)
        return rc;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = insert_job(pg, &jobs[i], err);
    for (size_t i = 0; rc == 0 && i < n_pause; i++) {
        const char *qp[1] = {pause[i]};
        PGresult *r = sql_query(pg,
                                "INSERT INTO rb_queues (name, paused) VALUES ($1, true)"
                                " ON CONFLICT (name) DO UPDATE SET paused = true",
                                1, qp, err);
        if (r)
            PQclear(r);
        else
            rc = err && err->code ? err->code : RB_ESTORE;
    }
    if (rc == 0 && set_counters) {
        char a[24], b[24];
        snprintf(a, sizeof a, "%lld", (long long)processed);
        snprintf(b, sizeof b, "%lld", (long long)failures);
        const char *params[2] = {a, b};
        PGresult *r = sql_query(pg,
                                "WITH gone AS (DELETE FROM rb_counters"
                                " WHERE name IN ('processed', 'failures'))"
                                " INSERT INTO rb_counters (name, shard, value)"
                                " VALUES ('processed', 0, $1::bigint), ('failures', 0, $2::bigint)",
                                2, params, err);
        if (r)
            PQclear(r);
        else
            rc = err && err->code ? err->code : RB_ESTORE;
    }
    if (rc == 0)
        rc = sql_exec(pg, "COMMIT", err);
    if (rc)
        sql_rollback(pg);
    return rc;
}

static void pp_close(rb_port *base)
{
    pg_port *p = (pg_port *)base;
    if (!p)
        return;
    rb_pg_close(p->pg);
    for (size_t i = 0; i < p->n_paused; i++)
        free(p->paused[i]);
    free(p->paused);
    free(p);
}

static const rb_port_ops pg_port_ops = {
    .name = "postgresql",
    .each_job = pp_each_job,
    .counters = pp_counters,
    .paused = pp_paused,
    .find = pp_find,
    .write = pp_write,
    .close = pp_close,
};

int rb_port_pg_open(const char *url, rb_port **out, rb_err *err)
{
    pg_port *p = rb_xcalloc(1, sizeof *p);
    p->base.ops = &pg_port_ops;
    rb_pg_options o = {.url = url};
    int rc = rb_pg_open(&o, &p->pg, err);
    if (rc == 0)
        rc = rb_pg_check_schema(p->pg, err);
    if (rc) {
        pp_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return 0;
}
