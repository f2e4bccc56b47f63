/* The PostgreSQL schema as SQL files (src/backend/pg/schema/): the
 * migrations embedded byte for byte, and the checked-in schema.sql the
 * same catalog as a database migrated from nothing, in one step or one
 * version at a time. Against the run's shared cluster, one schema per
 * database compared (tests/server/pg_harness.h). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "common/buf.h"
#include "pg_harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!rbpg_suite_init())
        fprintf(stderr, "test_pg_schema: cannot start the shared PostgreSQL cluster\n");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    rbpg_suite_free();
}

TestSuite(schema, .timeout = 60);

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* A new schema of the shared cluster: its URL into url, and a connection
 * whose search_path is it. */
static PGconn *new_schema(const char *prefix, char *url, size_t n)
{
    char base[1024], name[64], sql[128];
    cr_assert(rbpg_shared_url(base, sizeof base), "no shared PostgreSQL cluster");
    rbpg_schema_name(name, sizeof name, prefix);
    PGconn *c = PQconnectdb(base);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", name);
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
    rbpg_schema_url(url, n, name, "");
    c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

/* The file at path under the checkout ($REBOUND_TOP, else the current
 * directory), NUL-terminated (caller frees). */
static char *read_top(const char *path)
{
    const char *top = getenv("REBOUND_TOP") ? getenv("REBOUND_TOP") : ".";
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", top, path);
    FILE *f = fopen(full, "rb");
    cr_assert(f, "cannot open %s", full);
    rb_buf b = RB_BUF_INIT;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        rb_buf_add(&b, chunk, got);
    fclose(f);
    return rb_buf_detach(&b, NULL);
}

/* The current schema's catalog, one line per object or column, in one
 * order: what a database's schema is, whatever built it. Names are
 * unqualified (the schemas compared differ); a sequence's position and
 * every row but rb_meta's are not part of it. */
static const char catalog_sql[] =
    "WITH s AS (SELECT current_schema()::regnamespace AS ns,"
    "                  quote_ident(current_schema()) || '.' AS q)"
    " SELECT kind || ' ' || name || ': ' || replace(def, s.q, '') FROM s, ("
    /* columns, in their order among the table's live columns */
    "  SELECT 'column' AS kind, c.relname || '.' || a.attname AS name,"
    "    row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) || ' '"
    "    || format_type(a.atttypid, a.atttypmod)"
    "    || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END"
    "    || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') AS def"
    "  FROM s, pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
    "    LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum"
    "  WHERE c.relnamespace = s.ns AND c.relkind = 'r' AND a.attnum > 0"
    "    AND NOT a.attisdropped"
    "  UNION ALL SELECT 'constraint', t.relname || '.' || k.conname, pg_get_constraintdef(k.oid)"
    "  FROM s, pg_constraint k JOIN pg_class t ON t.oid = k.conrelid WHERE k.connamespace = s.ns"
    "  UNION ALL SELECT 'index', i.relname, pg_get_indexdef(i.oid)"
    "  FROM s, pg_class i WHERE i.relnamespace = s.ns AND i.relkind = 'i'"
    "  UNION ALL SELECT 'sequence', q.relname, format_type(p.seqtypid, NULL) || ' start '"
    "    || p.seqstart || ' min ' || p.seqmin || ' max ' || p.seqmax || ' by '"
    "    || p.seqincrement || ' cache ' || p.seqcache || CASE WHEN p.seqcycle THEN ' cycle'"
    "    ELSE '' END"
    "  FROM s, pg_sequence p JOIN pg_class q ON q.oid = p.seqrelid WHERE q.relnamespace = s.ns"
    "  UNION ALL SELECT 'function', f.proname || '(' || pg_get_function_identity_arguments(f.oid)"
    "    || ')', pg_get_functiondef(f.oid)"
    "  FROM s, pg_proc f WHERE f.pronamespace = s.ns"
    "  UNION ALL SELECT 'trigger', t.relname || '.' || g.tgname, pg_get_triggerdef(g.oid)"
    "  FROM s, pg_trigger g JOIN pg_class t ON t.oid = g.tgrelid"
    "  WHERE t.relnamespace = s.ns AND NOT g.tgisinternal"
    "  UNION ALL SELECT 'table', r.relname, r.relkind::text FROM s, pg_class r"
    "  WHERE r.relnamespace = s.ns AND r.relkind NOT IN ('r', 'i', 'S')"
    "  UNION ALL SELECT 'rb_meta', key, value FROM rb_meta"
    " ) x ORDER BY kind COLLATE \"C\", name COLLATE \"C\"";

/* The catalog of c's schema: a result of one text column. */
static PGresult *catalog(PGconn *c)
{
    PGresult *r = PQexec(c, catalog_sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    cr_assert_gt(PQntuples(r), 100, "an empty catalog");
    return r;
}

/* The first line of text (to show one definition in a message). */
static void first_line(const char *text, char *out, size_t n)
{
    size_t len = strcspn(text, "\n");
    snprintf(out, n, "%.*s%s", (int)(len < n - 4 ? len : n - 4), text,
             text[len] || len >= n - 4 ? "..." : "");
}

/* Checks that the schema of got has the catalog of the schema.sql load
 * want, naming the first differences and how to regenerate the file. */
static void assert_same_catalog(PGconn *got, PGconn *want, const char *how)
{
    PGresult *a = catalog(got), *b = catalog(want);
    rb_buf diff = RB_BUF_INIT;
    int i = 0, k = 0, na = PQntuples(a), nb = PQntuples(b), shown = 0;
    while ((i < na || k < nb) && shown < 4) {
        const char *x = i < na ? PQgetvalue(a, i, 0) : NULL;
        const char *y = k < nb ? PQgetvalue(b, k, 0) : NULL;
        /* the object's key: the text up to ": " */
        size_t kx = x ? strstr(x, ": ") - x : 0, ky = y ? strstr(y, ": ") - y : 0;
        int key = !x ? 1 : !y ? -1 : strncmp(x, y, kx < ky ? kx : ky);
        if (!key && kx != ky)
            key = kx < ky ? -1 : 1;
        char line[160];
        if (key < 0) {
            first_line(x, line, sizeof line);
            rb_buf_printf(&diff, "\n  only in the migrated database: %s", line);
            i++, shown++;
        } else if (key > 0) {
            first_line(y, line, sizeof line);
            rb_buf_printf(&diff, "\n  only in schema.sql: %s", line);
            k++, shown++;
        } else {
            if (strcmp(x, y)) {
                first_line(x, line, sizeof line);
                rb_buf_printf(&diff, "\n  differs from schema.sql: %s", line);
                shown++;
            }
            i++, k++;
        }
    }
    PQclear(a);
    PQclear(b);
    cr_assert(diff.len == 0,
              "src/backend/pg/schema/schema.sql is not the schema of a database migrated %s"
              " (a migration added without regenerating it?):%s\n"
              "regenerate it with `make pg-schema` (scripts/pg_schema.sh) and commit it",
              how, rb_buf_str(&diff));
    rb_buf_release(&diff);
}

/* A schema loaded from the checked-in schema.sql. */
static PGconn *loaded_schema(void)
{
    char url[1024];
    PGconn *c = new_schema("sl", url, sizeof url);
    char *text = read_top("src/backend/pg/schema/schema.sql");
    PGresult *r = PQexec(c, text);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "schema.sql does not load: %s",
                 PQresultErrorMessage(r));
    PQclear(r);
    free(text);
    return c;
}

static rb_pg *open_url(const char *url)
{
    rb_pg_options o = {.url = url, .seed = 1};
    rb_pg *pg = NULL;
    rb_err err = {0};
    cr_assert_eq(rb_pg_open(&o, &pg, &err), 0, "open: %s", rb_err_msg(&err));
    return pg;
}

/* As `rebound migrate` on a new database: from nothing to the current
 * version in one transaction. */
Test(schema, schema_sql_is_a_database_migrated_from_nothing)
{
    char url[1024];
    PGconn *c = new_schema("sm", url, sizeof url);
    rb_pg *pg = open_url(url);
    rb_err err = {0};
    int from = -1, to = -1;
    cr_assert_eq(rb_pg_migrate(pg, &from, &to, &err), 0, "%s", rb_err_msg(&err));
    cr_assert_eq(from, 0);
    cr_assert_eq(to, RB_PG_SCHEMA_VERSION);
    rb_pg_close(pg);
    PGconn *want = loaded_schema();
    assert_same_catalog(c, want, "from nothing");
    PQfinish(want);
    PQfinish(c);
}

/* One version at a time, each in its own transaction, as successive
 * releases' `rebound migrate` leave a database. */
Test(schema, schema_sql_is_a_database_migrated_one_version_at_a_time)
{
    char url[1024];
    PGconn *c = new_schema("ss", url, sizeof url);
    rb_pg *pg = open_url(url);
    rb_err err = {0};
    for (int v = 1; v <= RB_PG_SCHEMA_VERSION; v++) {
        int from = -1;
        cr_assert_eq(rb_pg_migrate_to(pg, v, &from, &err), 0, "to %d: %s", v, rb_err_msg(&err));
        cr_assert_eq(from, v - 1);
    }
    rb_pg_close(pg);
    PGconn *want = loaded_schema();
    assert_same_catalog(c, want, "one version at a time from version 1");
    PQfinish(want);
    PQfinish(c);
}

/* The comparison sees a change: a schema.sql load with one index more
 * and one function changed fails it, naming both. */
Test(schema, a_changed_catalog_is_told_apart)
{
    char url[1024];
    PGconn *c = new_schema("sd", url, sizeof url);
    rb_pg *pg = open_url(url);
    rb_err err = {0};
    cr_assert_eq(rb_pg_migrate(pg, NULL, NULL, &err), 0, "%s", rb_err_msg(&err));
    rb_pg_close(pg);
    PGconn *want = loaded_schema();
    PGresult *r = PQexec(want, "CREATE INDEX rb_extra ON rb_jobs (queue);"
                               " CREATE OR REPLACE FUNCTION rb_channel() RETURNS text"
                               " LANGUAGE sql STABLE AS $$ SELECT 'x' $$");
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    PGresult *a = catalog(c), *b = catalog(want);
    cr_assert_eq(PQntuples(a) + 1, PQntuples(b));
    bool index_seen = false, function_differs = false;
    for (int i = 0; i < PQntuples(b); i++) {
        const char *y = PQgetvalue(b, i, 0);
        index_seen = index_seen || !strncmp(y, "index rb_extra: ", 16);
        if (!strncmp(y, "function rb_channel(): ", 23))
            for (int k = 0; k < PQntuples(a); k++)
                if (!strncmp(PQgetvalue(a, k, 0), "function rb_channel(): ", 23))
                    function_differs = strcmp(PQgetvalue(a, k, 0), y) != 0;
    }
    cr_assert(index_seen);
    cr_assert(function_differs);
    PQclear(a);
    PQclear(b);
    PQfinish(want);
    PQfinish(c);
}

/* What the binary runs is each file as it is in the checkout (a build
 * made before a file changed would not be). */
Test(schema, migrations_are_the_files_byte_for_byte)
{
    for (int v = 1; v <= RB_PG_SCHEMA_VERSION; v++) {
        char path[64];
        snprintf(path, sizeof path, "src/backend/pg/schema/%04d.sql", v);
        char *text = read_top(path);
        cr_assert_not_null(rb_pg_migrations[v - 1]);
        cr_assert_str_eq(rb_pg_migrations[v - 1], text, "%s differs from the embedded text", path);
        free(text);
    }
    cr_assert_null(rb_pg_migrations[RB_PG_SCHEMA_VERSION]);
}
