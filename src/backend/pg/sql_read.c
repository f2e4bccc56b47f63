/* Reads on the PostgreSQL engine: INFO's numbers, JOB, JOBS and the
 * counters. Cluster-wide: every node sees the same answers. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

int rb_pg_info_get(rb_pg *pg, rb_pg_info *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_run(pg, SQL_INFO, 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    json_t *o = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    PQclear(r);
    if (!o)
        return rb_err_set(err, RB_ESTORE, "database returned unreadable INFO");
    json_t *counts = json_object_get(o, "counts");
    int64_t *slot[] = {NULL,        &out->scheduled, &out->enqueued, &out->working,
                       &out->retries, &out->dead,    &out->waiting, &out->blocked};
    for (int st = RB_JOB_SCHEDULED; st <= RB_JOB_BLOCKED; st++) {
        char key[4];
        snprintf(key, sizeof key, "%d", st);
        *slot[st] = json_integer_value(json_object_get(counts, key));
    }
    out->processed = json_integer_value(json_object_get(o, "processed"));
    out->failures = json_integer_value(json_object_get(o, "failures"));
    json_t *qs = json_object_get(o, "queues");
    out->n_queues = json_array_size(qs);
    out->queues = rb_xcalloc(out->n_queues ? out->n_queues : 1, sizeof *out->queues);
    for (size_t i = 0; i < out->n_queues; i++) {
        json_t *q = json_array_get(qs, i);
        const char *name = json_string_value(json_array_get(q, 0));
        out->queues[i].name = rb_xstrdup(name ? name : "");
        out->queues[i].size = json_integer_value(json_array_get(q, 1));
        out->queues[i].paused = json_is_true(json_array_get(q, 2));
    }
    json_decref(o);
    rc = sql_workers_count(pg, rb_now_ms(), &out->workers, err);
    if (rc)
        rb_pg_info_release(out);
    return rc;
}

void rb_pg_info_release(rb_pg_info *info)
{
    for (size_t i = 0; i < info->n_queues; i++)
        free(info->queues[i].name);
    free(info->queues);
    memset(info, 0, sizeof *info);
}

/* Columns as SQL_JOB selects them: jid, queue, json, history, wid, state,
 * priority, attempts, reserve_s, flags, due_ms, first_ms, enq_ms. */
void sql_read_job(const PGresult *r, int i, rb_pg_job *j)
{
    j->jid = sql_dup(r, i, 0);
    j->queue = sql_dup(r, i, 1);
    j->json = sql_json_with_enqueued(PQgetvalue(r, i, 2), sql_int(r, i, 12));
    j->history = sql_dup(r, i, 3);
    j->wid = sql_dup(r, i, 4);
    j->state = (int)sql_int(r, i, 5);
    j->priority = (int)sql_int(r, i, 6);
    j->attempts = (int)sql_int(r, i, 7);
    j->reserve_s = (int)sql_int(r, i, 8);
    j->flags = (int)sql_int(r, i, 9);
    j->due_ms = sql_int(r, i, 10);
    j->first_ms = sql_int(r, i, 11);
}

int sql_jobs_deps(rb_pg *pg, rb_pg_job *const *jobs, size_t n, rb_err *err)
{
    rb_buf jids = RB_BUF_INIT;
    sql_arr_begin(&jids);
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
        if (jobs[i]->state == RB_JOB_WAITING || jobs[i]->state == RB_JOB_BLOCKED) {
            sql_arr_str(&jids, jobs[i]->jid);
            held++;
        }
    sql_arr_end(&jids);
    if (!held) {
        rb_buf_release(&jids);
        return 0;
    }
    const char *params[1] = {jids.data};
    PGresult *r = sql_query(pg,
                            "SELECT e.child, json_agg(e.parent ORDER BY e.parent)::text,"
                            " (SELECT min(e2.parent) FROM rb_edges e2 JOIN rb_jobs p"
                            "   ON p.jid = e2.parent AND p.state = 5"
                            "   JOIN rb_wait w ON w.child = e2.child AND w.dead > 0"
                            "   WHERE e2.child = e.child)"
                            " FROM rb_edges e JOIN rb_jobs p ON p.jid = e.parent"
                            " WHERE e.child = ANY($1::text[]) GROUP BY e.child",
                            1, params, err);
    rb_buf_release(&jids);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    for (size_t i = 0; i < n; i++) {
        rb_pg_job *j = jobs[i];
        if (j->state != RB_JOB_WAITING && j->state != RB_JOB_BLOCKED)
            continue;
        int row = -1;
        for (int k = 0; k < PQntuples(r) && row < 0; k++) /* a page or a level: small */
            if (!strcmp(PQgetvalue(r, k, 0), j->jid))
                row = k;
        j->waits_for = row >= 0 ? sql_dup(r, row, 1) : rb_xstrdup("[]");
        j->blocked_by = row >= 0 ? sql_dup(r, row, 2) : NULL;
    }
    PQclear(r);
    return 0;
}

int rb_pg_job_get(rb_pg *pg, const char *jid, rb_pg_job *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const char *params[1] = {jid};
    PGresult *r = sql_run(pg, SQL_JOB, 1, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return rb_err_set(err, RB_ENOENT, "job %s not found", jid);
    }
    sql_read_job(r, 0, out);
    out->lock_until_ms = sql_int(r, 0, 13); /* the unique lock it holds, NULL: none */
    PQclear(r);
    if ((rc = sql_jobs_deps(pg, &out, 1, err)))
        rb_job_view_release(out);
    return rc;
}

int rb_pg_jobs(rb_pg *pg, const rb_pg_filter *f, rb_pg_job **out, size_t *n, int64_t *total,
               rb_err *err)
{
    *out = NULL;
    *n = 0;
    *total = 0;
    if (f->state < RB_JOB_SCHEDULED || f->state > RB_JOB_BLOCKED)
        return rb_err_set(err, RB_EINVAL, "state must be scheduled, enqueued, working, retries,"
                                          " dead, waiting or blocked");
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char st[8], off[24], lim[24];
    snprintf(st, sizeof st, "%d", f->state);
    snprintf(off, sizeof off, "%lld", (long long)(f->offset > 0 ? f->offset : 0));
    snprintf(lim, sizeof lim, "%lld", (long long)(f->limit > 0 ? f->limit : 0));
    const char *params[7] = {st, f->queue, f->jobtype, f->errtype, off, lim, f->group};
    PGresult *r = sql_query(
        pg,
        "SELECT jid, queue, json, history, wid, state, priority, attempts, reserve_s, flags,"
        " due_ms, first_ms, enq_ms, count(*) OVER () FROM rb_jobs"
        " WHERE state = $1::int AND ($2::text IS NULL OR queue = $2)"
        " AND ($3::text IS NULL OR json::jsonb ->> 'jobtype' = $3)"
        " AND ($4::text IS NULL OR json::jsonb #>> '{failure,errtype}' = $4)"
        " AND ($7::text IS NULL OR grp = $7)"
        " ORDER BY CASE WHEN state = 2 THEN queue END COLLATE \"C\","
        "   CASE WHEN state = 2 THEN grp END COLLATE \"C\","
        "   CASE WHEN state = 2 THEN priority END DESC,"
        "   CASE WHEN state = 2 THEN seq ELSE due_ms END, seq"
        " OFFSET $5::bigint LIMIT $6::bigint",
        7, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    int rows = PQntuples(r);
    rb_pg_job *jobs = rb_xcalloc(rows ? (size_t)rows : 1, sizeof *jobs);
    for (int i = 0; i < rows; i++)
        sql_read_job(r, i, &jobs[i]);
    /* a held job's parents, as JOB shows them */
    rb_pg_job **page = rb_xcalloc(rows ? (size_t)rows : 1, sizeof *page);
    for (int i = 0; i < rows; i++)
        page[i] = &jobs[i];
    rc = sql_jobs_deps(pg, page, (size_t)rows, err);
    free(page);
    if (rc) {
        PQclear(r);
        rb_pg_jobs_free(jobs, (size_t)rows);
        return rc;
    }
    if (rows > 0) {
        *total = sql_int(r, 0, 13);
    } else { /* none on this page (past the end, or limit 0): count alone */
        PQclear(r);
        const char *cp[5] = {st, f->queue, f->jobtype, f->errtype, f->group};
        r = sql_query(pg,
                      "SELECT count(*) FROM rb_jobs WHERE state = $1::int"
                      " AND ($2::text IS NULL OR queue = $2)"
                      " AND ($3::text IS NULL OR json::jsonb ->> 'jobtype' = $3)"
                      " AND ($4::text IS NULL OR json::jsonb #>> '{failure,errtype}' = $4)"
                      " AND ($5::text IS NULL OR grp = $5)",
                      5, cp, err);
        if (!r) {
            free(jobs);
            return err ? err->code : RB_ESTORE;
        }
        *total = sql_int(r, 0, 0);
    }
    PQclear(r);
    *out = jobs;
    *n = (size_t)rows;
    return 0;
}

int rb_pg_counters(rb_pg *pg, int64_t *processed, int64_t *failures, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_run(pg, SQL_COUNTERS, 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *processed = sql_int(r, 0, 0);
    *failures = sql_int(r, 0, 1);
    PQclear(r);
    return 0;
}
