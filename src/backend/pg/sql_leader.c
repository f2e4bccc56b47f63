/* The leader lease's statements (rb_leader, schema/0020.sql): take or
 * renew and read in one statement, and give it up. Run by the maintenance
 * thread's engine (leader.c), once a second on each node that forwards. */
#include "backend/pg/sql_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The upsert takes the row when it is absent or its lease has ended and
 * renews it when it is node's own (the WHERE of DO UPDATE); the last
 * SELECT reads the holder the upsert left alone. Under a race both nodes'
 * upserts are serialized by the row: the loser's WHERE sees the winner's
 * fresh lease, and its read (the statement's snapshot) may not see the
 * row at all: found false for a second. The clock is the database's, so
 * the nodes' clocks need not agree. tls (schema 20) stays written for
 * readers of the table; tls_id (22) says which certificate. */
static const char lease_sql[] =
    "WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms),"
    " up AS (INSERT INTO rb_leader AS l (id, node, addr, tls, tls_id, until_ms)"
    " SELECT 1, $1, $2, $3 <> '', $3, c.ms + $4::bigint FROM c"
    " ON CONFLICT (id) DO UPDATE SET node = excluded.node, addr = excluded.addr,"
    " tls = excluded.tls, tls_id = excluded.tls_id, until_ms = excluded.until_ms"
    " WHERE l.node = excluded.node OR l.until_ms < (SELECT ms FROM c)"
    " RETURNING node, addr, tls_id, until_ms)"
    " SELECT node, addr, tls_id, until_ms, (SELECT ms FROM c) FROM up"
    " UNION ALL SELECT node, addr, tls_id, until_ms, (SELECT ms FROM c) FROM rb_leader"
    " WHERE id = 1 AND NOT EXISTS (SELECT 1 FROM up)";

static void copy_field(char *dst, size_t n, const PGresult *r, int c)
{
    snprintf(dst, n, "%s", PQgetisnull(r, 0, c) ? "" : PQgetvalue(r, 0, c));
}

int rb_pg_leader_lease(rb_pg *pg, const char *node, const char *addr, const char *tls_id,
                       int64_t lease_ms, rb_pg_leader *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char ms[32];
    snprintf(ms, sizeof ms, "%" PRId64, lease_ms);
    const char *p[4] = {node, addr, tls_id, ms};
    PGresult *r = sql_query(pg, lease_sql, 4, p, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 1) {
        out->found = true;
        copy_field(out->node, sizeof out->node, r, 0);
        copy_field(out->addr, sizeof out->addr, r, 1);
        copy_field(out->tls_id, sizeof out->tls_id, r, 2);
        out->until_ms = sql_int(r, 0, 3);
        out->now_ms = sql_int(r, 0, 4);
    }
    PQclear(r);
    return 0;
}

int rb_pg_leader_drop(rb_pg *pg, const char *node, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const char *p[1] = {node};
    PGresult *r = sql_query(pg, "DELETE FROM rb_leader WHERE id = 1 AND node = $1", 1, p, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}
