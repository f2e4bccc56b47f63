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

static int probe(void *arg, const char *jid, rb_wf_probe *out, rb_err *err)
{
    probe_ctx *x = arg;
    memset(out, 0, sizeof *out);
    int rc = rb_pg_job_get(x->pg, jid, &out->view, err);
    if (rc == 0) {
        out->known = RB_WF_STORED;
        const char *p1[1] = {jid};
        PGresult *r = sql_query(x->pg,
                                "SELECT e.child FROM rb_edges e JOIN rb_jobs j ON j.jid = e.child"
                                " WHERE e.parent = $1 ORDER BY e.child",
                                1, p1, err);
        if (!r)
            return err && err->code ? err->code : RB_ESTORE;
        out->n_children = (size_t)PQntuples(r);
        out->children = rb_xcalloc(out->n_children + 1, sizeof *out->children);
        for (size_t i = 0; i < out->n_children; i++)
            out->children[i] = sql_dup(r, (int)i, 0);
        PQclear(r);
        return 0;
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
    if (PQntuples(r))
        out->known = RB_WF_SUCCEEDED;
    PQclear(r);
    return 0;
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
