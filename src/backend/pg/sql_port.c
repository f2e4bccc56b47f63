/* Distributed mode's side of export and import (engine/export.h): the
 * jobs read from one repeatable-read snapshot through a cursor, new rows
 * inserted in one transaction. The storage rules are PostgreSQL's: a
 * job's text is kept without enqueued_at (the enq_ms column), custom's
 * expiry in expires_ms, the counters in shards summed by readers. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/batch.h"
#include "engine/depend.h"
#include "engine/export.h"
#include "engine/unique.h"

typedef struct pg_port {
    rb_port base;
    rb_pg *pg;
    bool snap;                  /* counters and paused queues read with the jobs' snapshot */
    int64_t processed, failures;
    char **paused;
    size_t n_paused;
    rb_port_graph g;            /* the graph, read with the jobs' snapshot */
} pg_port;

static int query_rc(rb_err *err)
{
    return err && err->code ? err->code : RB_ESTORE;
}

/* The held children's edges (rb_wait, rb_edges), the succeeded records
 * (rb_dep_done) and the batches (rb_batches, parents first) into g. */
static int read_graph(rb_pg *pg, rb_port_graph *g, rb_err *err)
{
    memset(g, 0, sizeof *g);
    PGresult *r = sql_query(pg,
                            "SELECT w.child, w.remaining, w.dead, w.mode, e.parent FROM rb_wait w"
                            " LEFT JOIN rb_edges e ON e.child = w.child"
                            " ORDER BY w.child COLLATE \"C\", e.parent COLLATE \"C\"",
                            0, NULL, err);
    if (!r)
        return query_rc(err);
    int rows = PQntuples(r);
    const char **ps = rb_xcalloc((size_t)rows + 1, sizeof *ps);
    for (int i = 0; i < rows;) {
        const char *child = PQgetvalue(r, i, 0);
        size_t n = 0;
        int k = i;
        for (; k < rows && !strcmp(PQgetvalue(r, k, 0), child); k++)
            if (!PQgetisnull(r, k, 4))
                ps[n++] = PQgetvalue(r, k, 4);
        rb_port_graph_add_dep(g, child, ps, n, (int)sql_int(r, i, 3), sql_int(r, i, 1),
                              sql_int(r, i, 2));
        i = k;
    }
    free(ps);
    PQclear(r);
    if (!(r = sql_query(pg, "SELECT jid, until_ms FROM rb_dep_done ORDER BY jid COLLATE \"C\"",
                        0, NULL, err)))
        return query_rc(err);
    for (int i = 0; i < PQntuples(r); i++)
        rb_port_graph_add_done(g, PQgetvalue(r, i, 0), sql_int(r, i, 1));
    PQclear(r);
    if (!(r = sql_query(pg, "SELECT body FROM rb_batches ORDER BY depth, bid COLLATE \"C\"", 0,
                        NULL, err)))
        return query_rc(err);
    for (int i = 0; i < PQntuples(r); i++)
        rb_port_graph_add_batch(g, PQgetvalue(r, i, 0)); /* an unreadable one: skipped */
    PQclear(r);
    /* debounce keys with their pending job, and the aliases of live jobs */
    if (!(r = sql_query(pg, "SELECT jid, key, k, first_ms, merged FROM rb_debounce"
                            " ORDER BY jid COLLATE \"C\"", 0, NULL, err)))
        return query_rc(err);
    for (int i = 0; i < PQntuples(r); i++)
        rb_port_graph_add_debounce(g, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                                   PQgetvalue(r, i, 2), sql_int(r, i, 3), sql_int(r, i, 4));
    PQclear(r);
    if (!(r = sql_query(pg, "SELECT a.jid, a.into_jid, a.k, a.merged_ms FROM rb_debounced a"
                            " WHERE a.ended_ms = 0 AND EXISTS (SELECT 1 FROM rb_jobs j"
                            " WHERE j.jid = a.into_jid) ORDER BY a.jid COLLATE \"C\"",
                        0, NULL, err)))
        return query_rc(err);
    for (int i = 0; i < PQntuples(r); i++)
        rb_port_graph_add_alias(g, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                                sql_int(r, i, 3));
    PQclear(r);
    return 0;
}

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
        (rc = read_graph(pg, &p->g, err)) ||
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

static int pp_graph(rb_port *base, rb_port_graph *g, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    if (!p->snap)
        return read_graph(p->pg, g, err);
    memset(g, 0, sizeof *g);
    rb_port_graph_append(g, &p->g);
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
 * expiry in expires_ms, wf when it names parents, bid for a batch member
 * (custom.bid) or a callback job (custom._bid, bcb). */
static int insert_job(rb_pg *pg, const rb_job_view *v, rb_err *err)
{
    json_t *o = json_loads(v->json, 0, NULL);
    int64_t enq = 0, exp = json_is_object(o) ? rb_expiry_of(o) : 0;
    const char *bid = NULL;
    bool cb = false;
    if (json_is_object(o) && rb_batch_member_bid(o, &bid, NULL) == 0 && !bid) {
        bid = json_string_value(json_object_get(json_object_get(o, "custom"), "_bid"));
        cb = bid && *bid;
        if (!cb)
            bid = NULL;
    }
    char *bidc = bid ? rb_xstrdup(bid) : NULL;
    bool wf = json_is_object(o) && rb_dep_has(o);
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
    const char *params[16] = {v->jid, st,  pr,     due,        eq,     first,       att,
                              res,    v->wid, text ? text : v->json, v->history, exp ? ex : NULL,
                              v->queue, wf ? "t" : "f", bidc, cb ? "t" : "f"};
    PGresult *r = sql_query(pg,
                            "INSERT INTO rb_jobs (jid, state, priority, due_ms, enq_ms, first_ms,"
                            " attempts, reserve_s, wid, json, history, expires_ms, queue, wf,"
                            " bid, bcb)"
                            " VALUES ($1, $2::int, $3::int, $4::bigint, $5::bigint, $6::bigint,"
                            " $7::int, $8::int, $9, $10, $11, $12::bigint, $13, $14::boolean,"
                            " $15, $16::boolean)",
                            16, params, err);
    free(text);
    free(bidc);
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

static int exec_n(rb_pg *pg, const char *sql, int n, const char *const *params, rb_err *err)
{
    PGresult *r = sql_query(pg, sql, n, params, err);
    if (!r)
        return query_rc(err);
    PQclear(r);
    return 0;
}

/* g's held children's edges and counts, succeeded records and batches
 * (a parent before its children: its depth is the parent's plus one). */
static int insert_graph(rb_pg *pg, const rb_port_graph *g, rb_err *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < g->n_deps; i++) {
        const rb_port_dep *d = &g->deps[i];
        rb_buf a = RB_BUF_INIT;
        sql_arr_begin(&a);
        for (size_t k = 0; k < d->n; k++)
            sql_arr_str(&a, d->parents[k]);
        sql_arr_end(&a);
        char rem[24], dead[24], mode[8];
        snprintf(rem, sizeof rem, "%lld", (long long)d->remaining);
        snprintf(dead, sizeof dead, "%lld", (long long)d->dead);
        snprintf(mode, sizeof mode, "%d", d->mode);
        const char *p1[2] = {a.data, d->child};
        const char *p2[4] = {d->child, rem, dead, mode};
        if (!(rc = exec_n(pg,
                          "INSERT INTO rb_edges (parent, child) SELECT u.p, $2"
                          " FROM unnest($1::text[]) AS u(p) ON CONFLICT DO NOTHING",
                          2, p1, err)))
            rc = exec_n(pg,
                        "INSERT INTO rb_wait (child, remaining, dead, mode)"
                        " VALUES ($1, $2::int, $3::int, $4::smallint)",
                        4, p2, err);
        rb_buf_release(&a);
    }
    for (size_t i = 0; rc == 0 && i < g->n_done; i++) {
        char until[24];
        snprintf(until, sizeof until, "%lld", (long long)g->done[i].until_ms);
        const char *pd[2] = {g->done[i].jid, until};
        rc = exec_n(pg, "INSERT INTO rb_dep_done (jid, until_ms) VALUES ($1, $2::bigint)", 2, pd,
                    err);
    }
    for (size_t i = 0; rc == 0 && i < g->n_batches; i++) {
        const rb_port_batch *b = &g->batches[i];
        char created[24], fin[24];
        snprintf(created, sizeof created, "%lld", (long long)b->created_ms);
        snprintf(fin, sizeof fin, "%lld", (long long)b->finished_ms);
        const char *pb[6] = {b->bid, b->parent_bid, b->committed ? "t" : "f", created, fin,
                             b->body};
        rc = exec_n(pg,
                    "INSERT INTO rb_batches (bid, parent_bid, depth, committed, created_ms,"
                    " finished_ms, body) VALUES ($1, $2, coalesce((SELECT p.depth + 1 FROM"
                    " rb_batches p WHERE p.bid = $2), 0), $3::boolean, $4::bigint, $5::bigint,"
                    " $6)",
                    6, pb, err);
    }
    /* debounced jobs: a key to its pending job (named by its dkey), an
     * alias to its job (a fetched one's dkey '' holds no key: its
     * deletion still ends the aliases, rb_debounce_release) */
    for (size_t i = 0; rc == 0 && i < g->n_debounce; i++) {
        const rb_port_debounce *d = &g->debounce[i];
        char first[24], merged[24];
        snprintf(first, sizeof first, "%lld", (long long)d->first_ms);
        snprintf(merged, sizeof merged, "%lld", (long long)d->merged);
        const char *pd[5] = {d->hash, d->jid, d->key, first, merged};
        if (!(rc = exec_n(pg,
                          "INSERT INTO rb_debounce (key, jid, k, first_ms, merged)"
                          " VALUES ($1, $2, $3, $4::bigint, $5::bigint)",
                          5, pd, err)))
            rc = exec_n(pg, "UPDATE rb_jobs SET dkey = $1 WHERE jid = $2", 2, pd, err);
    }
    for (size_t i = 0; rc == 0 && i < g->n_aliases; i++) {
        const rb_port_alias *a = &g->aliases[i];
        char ms[24];
        snprintf(ms, sizeof ms, "%lld", (long long)a->merged_ms);
        const char *pa[4] = {a->jid, a->into, a->key, ms};
        if (!(rc = exec_n(pg,
                          "INSERT INTO rb_debounced (jid, into_jid, k, merged_ms)"
                          " VALUES ($1, $2, $3, $4::bigint)",
                          4, pa, err)))
            rc = exec_n(pg, "UPDATE rb_jobs SET dkey = '' WHERE jid = $1 AND dkey IS NULL", 1,
                        pa + 1, err);
    }
    return rc;
}

static int pp_write(rb_port *base, const rb_job_view *jobs, size_t n, const char *const *pause,
                    size_t n_pause, bool set_counters, int64_t processed, int64_t failures,
                    const rb_port_graph *g, rb_err *err)
{
    pg_port *p = (pg_port *)base;
    rb_pg *pg = p->pg;
    int rc = sql_exec(pg, "BEGIN", err);
    if (rc)
        return rc;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = insert_job(pg, &jobs[i], err);
    if (rc == 0)
        rc = insert_graph(pg, g, err);
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
    rb_port_graph_release(&p->g);
    free(p);
}

static const rb_port_ops pg_port_ops = {
    .name = "postgresql",
    .each_job = pp_each_job,
    .counters = pp_counters,
    .paused = pp_paused,
    .find = pp_find,
    .write = pp_write,
    .graph = pp_graph,
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
