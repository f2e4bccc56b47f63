/* A batch's page and the batches' listing on the PostgreSQL engine (sql.h,
 * rb_pg_batch_view and rb_pg_batch_list): rb_batches and the members'
 * rb_jobs rows (bid, indexed since schema version 7), each read in one
 * read-only snapshot; the JSON is engine/batch_view.c's. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int begin_read(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    return rc ? rc : sql_exec(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
}

static int query_fail(rb_pg *pg, rb_err *err)
{
    sql_rollback(pg);
    return err && err->code ? err->code : RB_ESTORE;
}

int rb_pg_batch_view(rb_pg *pg, const char *bid, int64_t now, bool *found, rb_batch_view *v,
                     rb_err *err)
{
    *found = false;
    int rc = begin_read(pg, err);
    if (rc)
        return rc;
    rb_batch *b = NULL;
    rc = rb_pg_batch_get(pg, bid, now, &b, err); /* STATUS's read: expiry checked */
    if (rc == RB_ENOENT) {
        if (err)
            memset(err, 0, sizeof *err);
        return sql_exec(pg, "COMMIT", err);
    }
    if (rc) {
        sql_rollback(pg);
        return rc;
    }
    v->b = b;
    char lim[24];
    snprintf(lim, sizeof lim, "%d", RB_BATCH_VIEW_MAX_MEMBERS + 1);
    const char *p[2] = {bid, lim};
    PGresult *r = sql_query(pg,
                            "SELECT jid, CASE WHEN json_typeof(json::json -> 'jobtype') = 'string'"
                            " THEN json::json ->> 'jobtype' END, queue, state, attempts"
                            " FROM rb_jobs WHERE bid = $1 AND NOT bcb AND state <> 0"
                            " ORDER BY jid COLLATE \"C\" LIMIT $2::int",
                            2, p, err);
    if (!r) {
        rb_batch_view_release(v);
        return query_fail(pg, err);
    }
    int n = PQntuples(r);
    for (int i = 0; i < n && i < RB_BATCH_VIEW_MAX_MEMBERS; i++)
        rb_batch_view_add_member(v, PQgetvalue(r, i, 0),
                                 PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1),
                                 PQgetvalue(r, i, 2), (int)sql_int(r, i, 3), (int)sql_int(r, i, 4));
    PQclear(r);
    r = sql_query(pg, "SELECT bid FROM rb_batches WHERE parent_bid = $1", 1, p, err);
    if (!r) {
        rb_batch_view_release(v);
        return query_fail(pg, err);
    }
    for (int i = 0; i < PQntuples(r); i++)
        rb_batch_view_add_child(v, PQgetvalue(r, i, 0));
    PQclear(r);
    rb_batch_view_finish(v, n > RB_BATCH_VIEW_MAX_MEMBERS);
    if ((rc = sql_exec(pg, "COMMIT", err))) {
        rb_batch_view_release(v);
        return rc;
    }
    *found = true;
    return 0;
}

int rb_pg_batch_list(rb_pg *pg, bool all, int64_t offset, int64_t limit, rb_batch ***list,
                     size_t *n, int64_t *total, rb_err *err)
{
    *list = NULL;
    *n = 0;
    *total = 0;
    int rc = begin_read(pg, err);
    if (rc)
        return rc;
    char off[24], lim[24];
    snprintf(off, sizeof off, "%lld", (long long)offset);
    snprintf(lim, sizeof lim, "%lld", (long long)limit);
    const char *p[3] = {all ? "t" : "f", lim, off};
    PGresult *r = sql_query(
        pg, "SELECT count(*) FROM rb_batches WHERE $1::boolean OR finished_ms = 0", 1, p, err);
    if (!r)
        return query_fail(pg, err);
    *total = sql_int(r, 0, 0);
    PQclear(r);
    /* rb_batch_list_cmp's order */
    r = sql_query(pg,
                  "SELECT body FROM rb_batches WHERE $1::boolean OR finished_ms = 0"
                  " ORDER BY finished_ms > 0,"
                  " CASE WHEN finished_ms > 0 THEN finished_ms ELSE created_ms END DESC,"
                  " bid COLLATE \"C\" LIMIT $2::bigint OFFSET $3::bigint",
                  3, p, err);
    if (!r)
        return query_fail(pg, err);
    int rows = PQntuples(r);
    *list = rb_xcalloc((size_t)rows + 1, sizeof **list);
    for (int i = 0; i < rows; i++) {
        rb_batch *b = rb_batch_load(PQgetvalue(r, i, 0));
        if (b)
            (*list)[(*n)++] = b;
    }
    PQclear(r);
    return sql_exec(pg, "COMMIT", err);
}
