/* The PostgreSQL schema and its migrations. Each version is one SQL file,
 * src/backend/pg/schema/NNNN.sql, embedded at build time
 * (scripts/embed_schema.sh: rb_pg_migrations); they are applied in order
 * inside one transaction under an advisory lock, and the version is kept in
 * rb_meta. Invariant: never edit a released migration (a database migrated
 * by any release must equal one migrated by every other): add the next
 * file and bump RB_PG_SCHEMA_VERSION, then regenerate schema/schema.sql,
 * the current schema as a reader sees it (`make pg-schema`; test_pg_schema
 * fails until it matches). Every object lives in the connection's current
 * schema, so one database can hold several deployments (and the tests use
 * one schema per case). */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

/* The version inside the current transaction (or autocommit). */
static int read_version(rb_pg *pg, int *version, rb_err *err)
{
    PGresult *r = sql_query(pg, "SELECT to_regclass('rb_meta') IS NOT NULL", 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    bool exists = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    *version = 0;
    if (!exists)
        return 0;
    r = sql_query(pg, "SELECT value FROM rb_meta WHERE key = 'schema_version'", 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 1)
        *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int rb_pg_schema_version(rb_pg *pg, int *version, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    return rc ? rc : read_version(pg, version, err);
}

int rb_pg_check_schema(rb_pg *pg, rb_err *err)
{
    int v, rc = rb_pg_schema_version(pg, &v, err);
    if (rc)
        return rc;
    if (v == RB_PG_SCHEMA_VERSION)
        return 0;
    if (v == 0)
        return rb_err_set(err, RB_EVERSION,
                          "the database has no rebound schema: run 'rebound migrate' first");
    if (v < RB_PG_SCHEMA_VERSION)
        return rb_err_set(err, RB_EVERSION,
                          "the database schema is version %d, this rebound needs %d: run "
                          "'rebound migrate'", v, RB_PG_SCHEMA_VERSION);
    return rb_err_set(err, RB_EVERSION,
                      "the database schema is version %d, newer than this rebound supports "
                      "(%d): upgrade rebound on this node", v, RB_PG_SCHEMA_VERSION);
}

int rb_pg_migrate_to(rb_pg *pg, int target, int *from, rb_err *err)
{
    if (target < 1 || target > RB_PG_SCHEMA_VERSION)
        return rb_err_set(err, RB_EINVAL, "schema version must be from 1 to %d, not %d",
                          RB_PG_SCHEMA_VERSION, target);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    if ((rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    int v = 0;
    if ((rc = sql_exec(pg, "SELECT pg_advisory_xact_lock(hashtext('rebound:migrate:' ||"
                          " current_schema()))", err)) ||
        (rc = read_version(pg, &v, err)))
        goto fail;
    if (from)
        *from = v;
    if (v > RB_PG_SCHEMA_VERSION) {
        rc = rb_err_set(err, RB_EVERSION,
                        "the database schema is version %d, newer than this rebound supports "
                        "(%d): refusing to touch it", v, RB_PG_SCHEMA_VERSION);
        goto fail;
    }
    for (int next = v + 1; next <= target; next++) {
        if ((rc = sql_exec(pg, rb_pg_migrations[next - 1], err))) {
            rb_err_prefix(err, "migration to schema version %d", next);
            goto fail;
        }
    }
    if ((rc = sql_exec(pg, "COMMIT", err)))
        return rc;
    pg->prepared = 0; /* functions may have changed */
    sql_take_shard(pg); /* a counter row of its own, now that there are some */
    return 0;
fail:
    sql_rollback(pg);
    return rc;
}

int rb_pg_migrate(rb_pg *pg, int *from, int *to, rb_err *err)
{
    int rc = rb_pg_migrate_to(pg, RB_PG_SCHEMA_VERSION, from, err);
    if (!rc && to)
        *to = RB_PG_SCHEMA_VERSION;
    return rc;
}
