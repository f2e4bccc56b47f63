/* The cluster's worker registry on the PostgreSQL engine (sql.h,
 * "The worker registry"): HELLO/BEAT sightings, quiet/terminate signals,
 * the listing and the removal of stale rows. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first time a row still counts as live at now, as statement text. */
static void live_since(int64_t now, char out[24])
{
    snprintf(out, 24, "%lld", (long long)(now - RB_PG_WORKER_TTL_MS));
}

/* Runs s, whose one parameter is the first live time at now. */
static PGresult *run_live(rb_pg *pg, sql_stmt s, int64_t now, rb_err *err)
{
    char live[24];
    live_since(now, live);
    const char *params[1] = {live};
    return sql_run(pg, s, 1, params, err);
}

int rb_pg_workers_seen(rb_pg *pg, const rb_pg_sighting *s, size_t n, const char *node,
                       int64_t now, int *signal, rb_err *err)
{
    if (!n)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    rb_buf wids = RB_BUF_INIT, kinds = RB_BUF_INIT, infos = RB_BUF_INIT;
    sql_arr_begin(&wids);
    sql_arr_begin(&kinds);
    sql_arr_begin(&infos);
    for (size_t i = 0; i < n; i++) {
        sql_arr_str(&wids, s[i].wid);
        sql_arr_int(&kinds, s[i].kind);
        sql_arr_str(&infos, s[i].kind == RB_PG_SEEN_HELLO ? s[i].info : NULL);
    }
    sql_arr_end(&wids);
    sql_arr_end(&kinds);
    sql_arr_end(&infos);
    char nowtxt[24], live[24];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    live_since(now, live);
    const char *params[6] = {wids.data, kinds.data, infos.data, node, nowtxt, live};
    PGresult *r = sql_run(pg, SQL_WORKERS_SEEN, 6, params, err);
    rb_buf_release(&wids);
    rb_buf_release(&kinds);
    rb_buf_release(&infos);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    int64_t *got = rb_xcalloc(n, sizeof *got);
    size_t m = sql_parse_int_array(PQgetvalue(r, 0, 0), got, n);
    PQclear(r);
    if (m != n) {
        free(got);
        return rb_err_set(err, RB_ESTORE, "database returned %zu worker signals for %zu", m, n);
    }
    for (size_t i = 0; signal && i < n; i++)
        signal[i] = (int)got[i];
    free(got);
    return 0;
}

int rb_pg_workers_signal(rb_pg *pg, const char *wid, int signal, int64_t now, int64_t *n,
                         rb_err *err)
{
    if (n)
        *n = 0;
    if (signal != 1 && signal != 2)
        return rb_err_set(err, RB_EINVAL, "signal must be 1 (quiet) or 2 (terminate)");
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char sig[4], live[24];
    snprintf(sig, sizeof sig, "%d", signal);
    live_since(now, live);
    const char *params[3] = {wid, sig, live};
    PGresult *r = sql_run(pg, SQL_WORKERS_SIGNAL, 3, params, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    if (n)
        *n = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

int rb_pg_workers_list(rb_pg *pg, int64_t now, rb_pg_worker **out, size_t *n, rb_err *err)
{
    *out = NULL;
    *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = run_live(pg, SQL_WORKERS_LIST, now, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    size_t rows = (size_t)PQntuples(r);
    rb_pg_worker *w = rows ? rb_xcalloc(rows, sizeof *w) : NULL;
    for (size_t i = 0; i < rows; i++) {
        w[i].wid = sql_dup(r, (int)i, 0);
        w[i].info = sql_dup(r, (int)i, 1);
        w[i].node = sql_dup(r, (int)i, 2);
        w[i].first_ms = sql_int(r, (int)i, 3);
        w[i].beat_ms = sql_int(r, (int)i, 4);
        w[i].seen_ms = sql_int(r, (int)i, 5);
        w[i].signal = (int)sql_int(r, (int)i, 6);
    }
    PQclear(r);
    *out = w;
    *n = rows;
    return 0;
}

void rb_pg_workers_free(rb_pg_worker *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(w[i].wid);
        free(w[i].info);
        free(w[i].node);
    }
    free(w);
}

int sql_workers_count(rb_pg *pg, int64_t now, int64_t *n, rb_err *err)
{
    PGresult *r = run_live(pg, SQL_WORKERS_COUNT, now, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    *n = sql_int(r, 0, 0);
    PQclear(r);
    return 0;
}

int rb_pg_counters_fold(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    (void)now;
    if (n)
        *n = 0;
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[1] = {lim};
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_query(pg,
                            "WITH d AS MATERIALIZED (SELECT name, shard FROM rb_counters"
                            " WHERE shard >= 16 ORDER BY name, shard LIMIT $1::int"
                            " FOR UPDATE SKIP LOCKED),"
                            " gone AS (DELETE FROM rb_counters c USING d"
                            " WHERE c.name = d.name AND c.shard = d.shard RETURNING c.name, c.value),"
                            " ins AS (INSERT INTO rb_counters (name, shard, value)"
                            " SELECT name, -1, sum(value) FROM gone GROUP BY name ORDER BY name"
                            " ON CONFLICT (name, shard) DO UPDATE"
                            " SET value = rb_counters.value + excluded.value)"
                            " SELECT count(*) FROM gone",
                            1, params, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    if (n)
        *n = (int)sql_int(r, 0, 0);
    PQclear(r);
    return 0;
}

int rb_pg_workers_cleanup(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    PGresult *r = sql_run_now_limit(pg, SQL_WORKERS_CLEANUP, now - RB_PG_WORKER_TTL_MS, limit, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    if (n)
        *n = atoi(PQcmdTuples(r));
    PQclear(r);
    return 0;
}
