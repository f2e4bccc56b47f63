/* The PostgreSQL engine's unique jobs and expiring jobs (docs/enterprise.md):
 * the drop of expired jobs (at a claim that skipped them, and by the
 * maintenance sweep) and INFO's counts. The locks themselves are taken by
 * rb_push_unique and released by rb_jobs' triggers (sql_schema.c, version
 * 8), so every path that deletes a job or kills it releases its lock. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/depend.h"
#include "common/log.h"

static int fail_rc(const rb_err *err)
{
    return err && err->code ? err->code : RB_ESTORE;
}

/* Keeps row i's labels (queue, job type) for rb_pg_take_expired. */
static void keep_labels(rb_pg *pg, const PGresult *r, int i)
{
    pg->expired = rb_xrealloc(pg->expired, (pg->n_expired + 1) * sizeof *pg->expired);
    rb_pg_labels *l = &pg->expired[pg->n_expired++];
    snprintf(l->queue, sizeof l->queue, "%s", PQgetvalue(r, i, 1));
    snprintf(l->jobtype, sizeof l->jobtype, "%s", PQgetisnull(r, i, 2) ? "" : PQgetvalue(r, i, 2));
}

int sql_expire_jobs(rb_pg *pg, const char *jids, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_begin(pg, err)))
        return rc;
    char nowtxt[24], lim[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[3] = {nowtxt, lim, jids};
    /* rows locked in jid order (SKIP LOCKED: one another node holds is
     * that node's to drop, or not expired for it); scheduled, enqueued or
     * retrying only: a working job runs on, a dead one stays dead */
    PGresult *r = sql_query(pg,
        "WITH x AS MATERIALIZED (SELECT jid FROM rb_jobs WHERE expires_ms <= $1::bigint"
        "  AND state IN (1, 2, 4) AND ($3::text[] IS NULL OR jid = ANY($3::text[]))"
        "  ORDER BY expires_ms LIMIT $2::int),"
        " l AS MATERIALIZED (SELECT j.jid FROM rb_jobs j, x WHERE j.jid = x.jid"
        "  ORDER BY j.jid FOR UPDATE OF j SKIP LOCKED)"
        " DELETE FROM rb_jobs j USING l WHERE j.jid = l.jid AND j.expires_ms <= $1::bigint"
        "  AND j.state IN (1, 2, 4)"
        " RETURNING j.jid, j.queue, left(j.json::json ->> 'jobtype', 127), j.bid, j.bcb,"
        "  j.history IS NULL,"
        "  j.wf OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = j.jid)",
        3, params, err);
    if (!r) {
        rc = fail_rc(err);
        sql_rollback(pg);
        return rc;
    }
    int rows = PQntuples(r), n_wf = 0;
    rb_buf wf = RB_BUF_INIT;
    sql_arr_begin(&wf);
    for (int i = 0; i < rows; i++) {
        const char *jid = PQgetvalue(r, i, 0);
        if (!PQgetisnull(r, i, 3)) /* a batch member's final failure: a death */
            sql_batch_failed(pg, PQgetvalue(r, i, 3), !strcmp(PQgetvalue(r, i, 4), "t"),
                             !strcmp(PQgetvalue(r, i, 5), "t"), true);
        if (!strcmp(PQgetvalue(r, i, 6), "t")) {
            sql_arr_str(&wf, jid);
            n_wf++;
        }
    }
    sql_arr_end(&wf);
    char shard[16], cnt[16];
    snprintf(shard, sizeof shard, "%d", pg->shard);
    snprintf(cnt, sizeof cnt, "%d", rows);
    const char *cp[2] = {shard, cnt};
    PGresult *c = NULL;
    if (rows && !(c = sql_query(pg, "SELECT rb_count('expired', $1::int, $2::bigint)", 2, cp,
                                err)))
        rc = fail_rc(err);
    PQclear(c);
    /* a parent dropped unrun is a parent discarded: its children follow
     * their on_dep_failure */
    if (!rc && n_wf)
        rc = sql_dep_events(pg, wf.data, RB_DEP_PARENT_DISCARDED, now, err);
    if (!rc)
        rc = sql_batch_apply_noted(pg, now, err);
    if (!rc)
        rc = sql_commit(pg, err);
    rb_buf_release(&wf);
    if (rc) {
        sql_rollback(pg);
        PQclear(r);
        return rc;
    }
    for (int i = 0; i < rows; i++) {
        rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", PQgetvalue(r, i, 0)), "JID %s: Halt: job expired",
                  PQgetvalue(r, i, 0));
        keep_labels(pg, r, i);
    }
    PQclear(r);
    if (n)
        *n = rows;
    return 0;
}

int rb_pg_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    return sql_expire_jobs(pg, NULL, now, limit, n, err);
}

void rb_pg_take_expired(rb_pg *pg, rb_pg_labels **out, size_t *n)
{
    *out = pg->expired;
    *n = pg->n_expired;
    pg->expired = NULL;
    pg->n_expired = 0;
}

int rb_pg_unique_info(rb_pg *pg, int64_t *locks, int64_t *rejected, int64_t *expired,
                      rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_query(pg,
        "SELECT (SELECT count(*) FROM rb_unique),"
        " coalesce((SELECT sum(value) FROM rb_counters WHERE name = 'unique_rejected'), 0),"
        " coalesce((SELECT sum(value) FROM rb_counters WHERE name = 'expired'), 0)",
        0, NULL, err);
    if (!r)
        return fail_rc(err);
    *locks = sql_int(r, 0, 0);
    *rejected = sql_int(r, 0, 1);
    *expired = sql_int(r, 0, 2);
    PQclear(r);
    return 0;
}
