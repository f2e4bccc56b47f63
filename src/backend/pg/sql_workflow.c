/* A workflow's graph on the PostgreSQL engine (sql.h, rb_pg_workflow): the
 * engine's expansion (engine/workflow.h) probing rb_jobs, rb_edges and
 * rb_dep_done, all in one snapshot. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe_ctx {
    rb_pg *pg;
    char now[24];
} probe_ctx;

/* The index of key among a level's jids (order: the jids' indexes sorted
 * by jid), or -1. */
static const char *const *cmp_jids;
static int by_jid(const void *a, const void *b)
{
    return strcmp(cmp_jids[*(const size_t *)a], cmp_jids[*(const size_t *)b]);
}
static long find(const char *const *jids, const size_t *order, size_t n, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(jids[order[mid]], key);
        if (!c)
            return (long)order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Rows of (key jid, value) ordered by key, then value: each key's values
 * into field (children or parents) of its probe, as a new string array. */
static void gather(const PGresult *r, const char *const *jids, const size_t *order, size_t n,
                   rb_wf_probe *const *out, bool parents)
{
    int rows = PQntuples(r);
    for (int k = 0; k < rows;) {
        int end = k + 1;
        while (end < rows && !strcmp(PQgetvalue(r, end, 0), PQgetvalue(r, k, 0)))
            end++;
        long i = find(jids, order, n, PQgetvalue(r, k, 0));
        if (i >= 0) {
            char **v = rb_xcalloc((size_t)(end - k) + 1, sizeof *v);
            for (int m = k; m < end; m++)
                v[m - k] = sql_dup(r, m, 1);
            if (parents) {
                out[i]->parents = v;
                out[i]->n_parents = (size_t)(end - k);
            } else {
                out[i]->children = v;
                out[i]->n_children = (size_t)(end - k);
            }
        }
        k = end;
    }
}

/* One breadth-first level (engine/workflow.h's probe): the stored jobs
 * among jids, the waiting ones' parents, the succeeded records of the
 * others with their parents, and every known one's children — five
 * statements, whatever the level's size. */
static int probe(void *arg, const char *const *jids, size_t n, rb_wf_probe *const *out,
                 rb_err *err)
{
    probe_ctx *x = arg;
    size_t *order = rb_xmalloc((n ? n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++) {
        order[i] = i;
        memset(out[i], 0, sizeof *out[i]);
    }
    cmp_jids = jids; /* the loop thread's database thread only: one probe at a time */
    qsort(order, n, sizeof *order, by_jid);
    rb_buf all = RB_BUF_INIT, missing = RB_BUF_INIT;
    sql_arr_begin(&all);
    for (size_t i = 0; i < n; i++)
        sql_arr_str(&all, jids[i]);
    sql_arr_end(&all);
    int rc = 0;
    PGresult *r = NULL;
    const char *p1[2] = {all.data, x->now};
    if (!(r = sql_query(x->pg, SQL_JOB_SELECT " WHERE jid = ANY($1::text[])", 1, p1, err)))
        goto fail;
    rb_pg_job **stored = rb_xcalloc((size_t)PQntuples(r) + 1, sizeof *stored);
    size_t n_stored = 0;
    for (int k = 0; k < PQntuples(r); k++) {
        long i = find(jids, order, n, PQgetvalue(r, k, 0));
        if (i < 0 || out[i]->known)
            continue;
        out[i]->known = RB_WF_STORED;
        sql_read_job(r, k, &out[i]->view);
        out[i]->view.lock_until_ms = sql_int(r, k, 13);
        stored[n_stored++] = &out[i]->view;
    }
    PQclear(r);
    r = NULL;
    rc = sql_jobs_deps(x->pg, stored, n_stored, err);
    free(stored);
    if (rc)
        goto out;
    sql_arr_begin(&missing);
    for (size_t i = 0; i < n; i++)
        if (!out[i]->known)
            sql_arr_str(&missing, jids[i]);
    sql_arr_end(&missing);
    const char *p2[2] = {missing.data, x->now};
    if (!(r = sql_query(x->pg,
                        "SELECT jid FROM rb_dep_done WHERE jid = ANY($1::text[])"
                        " AND until_ms > $2::bigint",
                        2, p2, err)))
        goto fail;
    for (int k = 0; k < PQntuples(r); k++) {
        long i = find(jids, order, n, PQgetvalue(r, k, 0));
        if (i >= 0) /* its parents as its used-up edges keep them */
            out[i]->known = RB_WF_SUCCEEDED;
    }
    PQclear(r);
    if (!(r = sql_query(x->pg,
                        "SELECT child, parent FROM rb_edges_used WHERE child = ANY($1::text[])"
                        " ORDER BY child, parent",
                        1, p2, err)))
        goto fail;
    gather(r, jids, order, n, out, true);
    PQclear(r);
    /* the jobs that named them, live edges and used-up ones, still stored
     * or recorded as succeeded */
    if (!(r = sql_query(x->pg,
                        "SELECT c.parent, c.child FROM (SELECT parent, child FROM rb_edges"
                        "  WHERE parent = ANY($1::text[]) UNION SELECT parent, child"
                        "  FROM rb_edges_used WHERE parent = ANY($1::text[])) c"
                        " WHERE EXISTS (SELECT 1 FROM rb_jobs j WHERE j.jid = c.child)"
                        "  OR EXISTS (SELECT 1 FROM rb_dep_done d WHERE d.jid = c.child"
                        "   AND d.until_ms > $2::bigint)"
                        " ORDER BY c.parent, c.child",
                        2, p1, err)))
        goto fail;
    gather(r, jids, order, n, out, false);
    for (size_t i = 0; i < n; i++)
        if (!out[i]->known) { /* neither stored nor recorded: shown, not expanded */
            rb_wf_probe_release(out[i]);
            memset(out[i], 0, sizeof *out[i]);
        }
    goto out;
fail:
    rc = err && err->code ? err->code : RB_ESTORE;
out:
    PQclear(r);
    rb_buf_release(&all);
    rb_buf_release(&missing);
    free(order);
    return rc;
}

int rb_pg_workflow(rb_pg *pg, const char *jid, size_t max_nodes, int64_t now, rb_workflow *g,
                   rb_err *err)
{
    memset(g, 0, sizeof *g);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    probe_ctx x = {.pg = pg};
    snprintf(x.now, sizeof x.now, "%lld", (long long)now);
    if ((rc = sql_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
        return rc;
    rc = rb_workflow_build(jid, max_nodes, probe, &x, g, err);
    if (rc && rc != RB_ENOENT) {
        sql_rollback(pg);
        return rc;
    }
    int crc = sql_exec(pg, "COMMIT", err);
    if (crc) {
        rb_workflow_release(g);
        return crc;
    }
    return rc;
}
