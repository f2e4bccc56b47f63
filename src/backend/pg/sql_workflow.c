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

/* The first column of sql (params: jid, and now when np is 2) as new
 * strings into *v, *n. */
static int strings(probe_ctx *x, const char *sql, int np, const char *jid, char ***v, size_t *n,
                   rb_err *err)
{
    const char *p[2] = {jid, x->now};
    PGresult *r = sql_query(x->pg, sql, np, p, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    *n = (size_t)PQntuples(r);
    *v = rb_xcalloc(*n + 1, sizeof **v);
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = sql_dup(r, (int)i, 0);
    PQclear(r);
    return 0;
}

/* The jobs that named $1, live edges and used-up ones, still stored or
 * recorded as succeeded. */
#define CHILDREN_SQL \
    "SELECT c.child FROM (SELECT child FROM rb_edges WHERE parent = $1" \
    "  UNION SELECT child FROM rb_edges_used WHERE parent = $1) c" \
    " WHERE EXISTS (SELECT 1 FROM rb_jobs j WHERE j.jid = c.child)" \
    "  OR EXISTS (SELECT 1 FROM rb_dep_done d WHERE d.jid = c.child" \
    "   AND d.until_ms > $2::bigint)" \
    " ORDER BY c.child"

static int probe(void *arg, const char *jid, rb_wf_probe *out, rb_err *err)
{
    probe_ctx *x = arg;
    memset(out, 0, sizeof *out);
    int rc = rb_pg_job_get(x->pg, jid, &out->view, err);
    if (rc == 0) {
        out->known = RB_WF_STORED;
        return strings(x, CHILDREN_SQL, 2, jid, &out->children, &out->n_children, err);
    }
    if (rc != RB_ENOENT)
        return rc;
    if (err)
        memset(err, 0, sizeof *err);
    const char *p2[2] = {jid, x->now};
    PGresult *r = sql_query(x->pg,
                            "SELECT 1 FROM rb_dep_done WHERE jid = $1 AND until_ms > $2::bigint",
                            2, p2, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    bool done = PQntuples(r) > 0;
    PQclear(r);
    if (!done)
        return 0;
    out->known = RB_WF_SUCCEEDED; /* its parents as its used-up edges keep them */
    if ((rc = strings(x, "SELECT parent FROM rb_edges_used WHERE child = $1 ORDER BY parent", 1,
                      jid, &out->parents, &out->n_parents, err)))
        return rc;
    return strings(x, CHILDREN_SQL, 2, jid, &out->children, &out->n_children, err);
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
