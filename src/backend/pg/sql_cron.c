/* Cron on the PostgreSQL engine (server/cron.h): a tick's push made only if
 * the entry's row "cron:<name>" in rb_meta holds an older tick, the row set
 * to the tick in the same transaction; and the rows read at start. No
 * schema of its own: rb_meta is migration 1's key/value table. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <string.h>

/* The row is claimed for the tick when it is new, or holds an older tick
 * (or no number at all). ON CONFLICT DO UPDATE locks the row and, under
 * READ COMMITTED, tests the WHERE against its latest committed version: of
 * two nodes racing for one tick, the second waits for the first's COMMIT,
 * then sees the tick stored and gets no row back. */
static const char claim_sql[] =
    "INSERT INTO rb_meta (key, value) VALUES ($1, $2) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value "
    "WHERE CASE WHEN rb_meta.value ~ '^-?[0-9]{1,18}$' "
    "THEN rb_meta.value::bigint < $2::bigint ELSE true END "
    "RETURNING 1";

int rb_pg_push_tick(rb_pg *pg, rb_pg_new_job *jobs, rb_pg_debounce *deb, size_t n, bool deps,
                    const char *key, int64_t tick_s, int64_t now, int *status, bool *stale,
                    rb_err *err)
{
    *stale = false;
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    char tick[24];
    snprintf(tick, sizeof tick, "%lld", (long long)tick_s);
    const char *params[2] = {key, tick};
    PGresult *r = sql_query(pg, claim_sql, 2, params, err);
    if (!r) {
        rc = err && err->code ? err->code : RB_ESTORE;
        goto fail;
    }
    *stale = PQntuples(r) == 0;
    PQclear(r);
    if (*stale) { /* fired already: nothing written */
        for (size_t i = 0; i < n; i++)
            status[i] = RB_EEXIST;
        sql_rollback(pg);
        return 0;
    }
    if ((rc = deb    ? sql_push_debounce_tx(pg, jobs, deb, n, now, status, err)
              : deps ? sql_push_deps_tx(pg, jobs, n, now, status, err)
                     : rb_pg_push(pg, jobs, n, now, status, err)) ||
        (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    return 0;
fail:
    sql_rollback(pg);
    for (size_t i = 0; deb && i < n; i++)
        deb[i].merged = false;
    return rc;
}

int rb_pg_meta_each(rb_pg *pg, const char *prefix,
                    void (*fn)(void *arg, const char *key, const char *value), void *arg,
                    rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const char *params[1] = {prefix};
    PGresult *r = sql_query(pg,
                            "SELECT key, value FROM rb_meta "
                            "WHERE left(key, length($1)) = $1 ORDER BY key",
                            1, params, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    for (int i = 0; i < PQntuples(r); i++)
        fn(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    PQclear(r);
    return 0;
}
