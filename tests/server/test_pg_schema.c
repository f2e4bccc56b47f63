/* The PostgreSQL schema as SQL files (src/backend/pg/schema/): the
 * migrations embedded byte for byte; the checked-in schema.sql the same
 * catalog as a database migrated from nothing, in one step or one version
 * at a time; and every state, flag and status number the SQL uses one
 * that src/backend/pg/sql_numbers.c ties to its C constant. Against the
 * run's shared cluster, one schema per database compared
 * (tests/server/pg_harness.h). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <ctype.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "backend/pg/sql_numbers.h"
#include "engine/depend.h"
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

/* --- the SQL's numbers (src/backend/pg/sql_numbers.h) --- */

/* What a number stands for where the SQL writes it. */
typedef enum num_ctx {
    CTX_STATE,     /* `state`: rb_jobs.state or rb_track.state */
    CTX_JOB_STATE, /* the variable `st` of state loops */
    CTX_FLAGS,
    CTX_STATUS,    /* `status`, `st[i]`: what a function returns */
    CTX_MODE,
    CTX_KIND,
    CTX_NONE,
} num_ctx;

static const char *const ctx_names[] = {"state", "job state", "flags", "status", "mode", "kind"};

/* The sql_numbers.h columns a context accepts. */
static bool ctx_accepts(num_ctx ctx, const char *column)
{
    switch (ctx) {
    case CTX_STATE: return !strcmp(column, "rb_jobs.state") || !strcmp(column, "rb_track.state");
    case CTX_JOB_STATE: return !strcmp(column, "rb_jobs.state");
    case CTX_FLAGS: return !strcmp(column, "rb_jobs.flags");
    case CTX_STATUS: return !strcmp(column, "status");
    case CTX_MODE: return !strcmp(column, "rb_wait.mode");
    case CTX_KIND: return !strcmp(column, "kind");
    case CTX_NONE: break;
    }
    return false;
}

static bool documented(num_ctx ctx, int value)
{
    for (const rb_pg_sql_number *n = rb_pg_sql_numbers; n->column; n++)
        if (n->value == value && ctx_accepts(ctx, n->column))
            return true;
    return false;
}

/* One token of SQL: an identifier (lowercased), a number, or punctuation. */
typedef struct tok {
    char kind; /* 'i', 'n', 'p' */
    char s[48];
} tok;

/* Tokenizes SQL text: comments and quoted strings skipped, `$$` and `$N`
 * are punctuation. *n tokens; caller frees. */
static tok *tokenize(const char *sql, size_t *n)
{
    size_t cap = 256, len = 0;
    tok *t = malloc(cap * sizeof *t);
    for (const char *p = sql; *p;) {
        if (len + 1 >= cap)
            t = realloc(t, (cap *= 2) * sizeof *t);
        if (isspace((unsigned char)*p)) {
            p++;
        } else if (p[0] == '-' && p[1] == '-') {
            p += strcspn(p, "\n");
        } else if (*p == '\'') {
            for (p++; *p && !(p[0] == '\'' && p[1] != '\''); p += p[0] == '\'' ? 2 : 1)
                ;
            if (*p)
                p++;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            size_t k = 0;
            t[len].kind = 'i';
            for (; isalnum((unsigned char)*p) || *p == '_'; p++)
                if (k + 1 < sizeof t[len].s)
                    t[len].s[k++] = (char)tolower((unsigned char)*p);
            t[len++].s[k] = '\0';
        } else if (isdigit((unsigned char)*p)) {
            size_t k = 0;
            t[len].kind = 'n';
            for (; isdigit((unsigned char)*p); p++)
                if (k + 1 < sizeof t[len].s)
                    t[len].s[k++] = *p;
            t[len++].s[k] = '\0';
        } else {
            static const char *const ops[] = {"<>", "!=", ":=", "::", "<=", ">=", "$$"};
            t[len].kind = 'p';
            size_t k = 1;
            for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
                if (!strncmp(p, ops[o], 2))
                    k = 2;
            if (*p == '$' && isdigit((unsigned char)p[1])) /* a parameter */
                for (k = 1; isdigit((unsigned char)p[k]); k++)
                    ;
            snprintf(t[len].s, sizeof t[len].s, "%.*s", (int)k, p);
            len++;
            p += k;
        }
    }
    *n = len;
    return t;
}

static bool is(const tok *t, size_t i, size_t n, const char *s)
{
    return i < n && !strcmp(t[i].s, s);
}

/* The context an identifier names, or CTX_NONE. */
static num_ctx ctx_of(const char *id)
{
    static const struct {
        const char *id;
        num_ctx ctx;
    } ids[] = {{"state", CTX_STATE},   {"p_state", CTX_STATE}, {"st", CTX_JOB_STATE},
               {"flags", CTX_FLAGS},   {"status", CTX_STATUS}, {"h", CTX_STATUS},
               {"mode", CTX_MODE},     {"k", CTX_KIND}};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        if (!strcmp(id, ids[i].id))
            return ids[i].ctx;
    return CTX_NONE;
}

/* Uses found, and those no table entry accepts. */
typedef struct scan {
    int uses;
    bool seen[CTX_NONE][16]; /* which values were seen per context (for the test) */
    rb_buf bad;
    int n_bad;
} scan;

static void use(scan *sc, num_ctx ctx, const char *num, const char *where)
{
    int v = atoi(num);
    sc->uses++;
    if (v >= 0 && v < 16)
        sc->seen[ctx][v] = true;
    if (!documented(ctx, v)) {
        rb_buf_printf(&sc->bad, "\n  %s: %d in a %s position", where, v, ctx_names[ctx]);
        sc->n_bad++;
    }
}

/* The numbers after THEN and ELSE of the CASE at t[i] (up to its END). */
static void case_values(scan *sc, const tok *t, size_t i, size_t n, num_ctx ctx,
                        const char *where)
{
    int depth = 0;
    for (; i < n; i++) {
        if (is(t, i, n, "case"))
            depth++;
        else if (is(t, i, n, "end") && --depth == 0)
            return;
        else if ((is(t, i, n, "then") || is(t, i, n, "else")) && i + 1 < n && t[i + 1].kind == 'n')
            use(sc, ctx, t[i + 1].s, where);
    }
}

/* An INSERT's column list at t[i] ("(" ...) naming `state`: the value the
 * SELECT or VALUES list gives it (a number, or a CASE's). */
static void insert_state(scan *sc, const tok *t, size_t i, size_t n, const char *where)
{
    int col = -1, k = 0;
    size_t j = i + 1;
    for (; j < n && !is(t, j, n, ")"); j++) {
        if (is(t, j, n, ","))
            k++;
        else if (t[j].kind == 'i' && !strcmp(t[j].s, "state"))
            col = k;
    }
    if (col < 0)
        return;
    for (; j < n && !is(t, j, n, "select") && !is(t, j, n, "values"); j++)
        if (is(t, j, n, ";"))
            return;
    if (is(t, j, n, "values"))
        j++; /* its "(" */
    j++;
    int depth = 0;
    for (k = 0; j < n && k < col; j++) { /* to the col-th item at depth 0 */
        if (is(t, j, n, "(") || is(t, j, n, "case"))
            depth++;
        else if (is(t, j, n, ")") || is(t, j, n, "end"))
            depth--;
        else if (is(t, j, n, ",") && depth == 0)
            k++;
    }
    if (j < n && t[j].kind == 'n')
        use(sc, CTX_JOB_STATE, t[j].s, where);
    else if (is(t, j, n, "case"))
        case_values(sc, t, j, n, CTX_JOB_STATE, where);
}

/* Every number sql puts in a state, flags, status, mode or kind position:
 * `X = N`, `X <> N`, `X := N`, `flags & N`, `X IN (N, ...)`, `X = CASE
 * ... THEN N ELSE N END`, a column's DEFAULT N, `st[i] := N`, `FOREACH st
 * IN ARRAY ARRAY[N, ...]`, and an INSERT's value for column state. */
static void scan_sql(scan *sc, const char *sql, const char *where)
{
    size_t n;
    tok *t = tokenize(sql, &n);
    for (size_t i = 0; i < n; i++) {
        if (is(t, i, n, "insert") && is(t, i + 1, n, "into") && is(t, i + 2, n, "rb_jobs")) {
            size_t j = is(t, i + 3, n, "as") ? i + 5 : i + 3;
            if (is(t, j, n, "("))
                insert_state(sc, t, j, n, where);
        }
        if (t[i].kind != 'i' || (i > 0 && t[i - 1].kind == 'p' && !strcmp(t[i - 1].s, "$")))
            continue;
        num_ctx ctx = ctx_of(t[i].s);
        if (ctx == CTX_NONE)
            continue;
        size_t j = i + 1;
        if (ctx == CTX_JOB_STATE && is(t, j, n, "[")) { /* st[i]: a status array */
            while (j < n && !is(t, j, n, "]"))
                j++;
            j++;
            ctx = CTX_STATUS;
        }
        if (ctx == CTX_JOB_STATE && is(t, j, n, "in") && is(t, j + 1, n, "array") &&
            is(t, j + 2, n, "array") && is(t, j + 3, n, "[")) {
            for (j += 4; j < n && !is(t, j, n, "]"); j++)
                if (t[j].kind == 'n')
                    use(sc, ctx, t[j].s, where);
            continue;
        }
        if (is(t, j, n, "not"))
            j++;
        if (is(t, j, n, "in") && is(t, j + 1, n, "(")) {
            for (j += 2; j < n && (t[j].kind == 'n' || is(t, j, n, ",")); j++)
                if (t[j].kind == 'n')
                    use(sc, ctx, t[j].s, where);
            continue;
        }
        bool cmp = is(t, j, n, "=") || is(t, j, n, "<>") || is(t, j, n, "!=") ||
                   is(t, j, n, ":=") || (ctx == CTX_FLAGS && is(t, j, n, "&"));
        if (cmp && j + 1 < n && t[j + 1].kind == 'n')
            use(sc, ctx, t[j + 1].s, where);
        else if (cmp && is(t, j + 1, n, "case"))
            case_values(sc, t, j + 1, n, ctx, where);
        else if (t[j].kind == 'i' && (is(t, j, n, "smallint") || is(t, j, n, "int") ||
                                      is(t, j, n, "integer")))
            for (int depth = 0; j < n && !(depth == 0 && (is(t, j, n, ",") || is(t, j, n, ")")));
                 j++) {
                depth += is(t, j, n, "(") - is(t, j, n, ")");
                if (is(t, j, n, "default") && j + 1 < n && t[j + 1].kind == 'n')
                    use(sc, ctx, t[j + 1].s, where);
            }
    }
    free(t);
}

/* The SQL of a C source: its string literals, adjacent ones joined as the
 * compiler joins them, others apart (caller frees). */
static char *c_literals(const char *src)
{
    rb_buf out = RB_BUF_INIT;
    bool adjacent = false;
    for (const char *p = src; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
        } else if (*p == '\'') { /* a character constant */
            p += p[1] == '\\' ? 4 : 3;
            adjacent = false;
        } else if (*p == '"') {
            if (!adjacent)
                rb_buf_adds(&out, "\n;\n");
            for (p++; *p && *p != '"'; p++) {
                if (*p != '\\') {
                    rb_buf_addc(&out, *p);
                    continue;
                }
                p++;
                rb_buf_addc(&out, *p == 'n' ? '\n' : *p == 't' ? '\t' : *p);
            }
            if (*p)
                p++;
            adjacent = true;
        } else {
            if (!isspace((unsigned char)*p))
                adjacent = false;
            p++;
        }
    }
    return rb_buf_detach(&out, NULL);
}

static void scan_init(scan *sc)
{
    memset(sc, 0, sizeof *sc);
    rb_buf_init(&sc->bad);
}

/* Every number the migrations and the backend's statements put in a state,
 * flags, status, mode or kind position is one sql_numbers.c lists for it,
 * whose C constant the build checked: none disagrees with job_state.h,
 * track.h or depend.h. */
Test(schema, every_number_the_sql_uses_is_a_c_constant)
{
    scan sc;
    scan_init(&sc);
    for (int v = 1; v <= RB_PG_SCHEMA_VERSION; v++) {
        char where[32];
        snprintf(where, sizeof where, "schema/%04d.sql", v);
        scan_sql(&sc, rb_pg_migrations[v - 1], where);
    }
    int in_migrations = sc.uses;
    const char *top = getenv("REBOUND_TOP") ? getenv("REBOUND_TOP") : ".";
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/src/backend/pg/*.[ch]", top);
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no sources at %s", pattern);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *src = read_top(g.gl_pathv[i] + strlen(top) + 1);
        char *sql = c_literals(src);
        scan_sql(&sc, sql, strrchr(g.gl_pathv[i], '/') + 1);
        free(sql);
        free(src);
    }
    globfree(&g);
    cr_assert(sc.n_bad == 0,
              "%d number(s) in the SQL are not in src/backend/pg/sql_numbers.c for their"
              " position (a new state, flag or status? add it there, with its C constant):%s",
              sc.n_bad, rb_buf_str(&sc.bad));
    /* the scan sees what it must: a sample of the migrations' numbers */
    cr_assert_gt(in_migrations, 100, "%d", in_migrations);
    cr_assert_gt(sc.uses, in_migrations + 20, "%d", sc.uses);
    cr_assert(sc.seen[CTX_STATE][RB_JOB_WORKING] && sc.seen[CTX_STATE][RB_JOB_BLOCKED]);
    cr_assert(sc.seen[CTX_JOB_STATE][RB_JOB_SCHEDULED] && sc.seen[CTX_JOB_STATE][RB_JOB_RETRIES]);
    cr_assert(sc.seen[CTX_FLAGS][RB_JOB_EXPIRED] && sc.seen[CTX_FLAGS][RB_JOB_REFETCHED]);
    cr_assert(sc.seen[CTX_STATUS][RB_JOB_NOT_WORKING] && sc.seen[CTX_STATUS][5]);
    cr_assert(sc.seen[CTX_MODE][RB_DEP_BLOCK]);
    cr_assert(sc.seen[CTX_KIND][RB_PG_SEEN_HELD]);
    rb_buf_release(&sc.bad);
}

/* The scan catches numbers outside the table, in each kind of position. */
Test(schema, a_number_outside_the_table_is_caught)
{
    scan sc;
    scan_init(&sc);
    scan_sql(&sc,
             "UPDATE rb_jobs j SET state = 8, flags = CASE WHEN j.flags & 8 <> 0 THEN 2 ELSE 0"
             " END WHERE j.state IN (2, 9) AND j.state <> 3; st[i] := 7;"
             " INSERT INTO rb_jobs AS j (jid, state) SELECT x, 12 FROM y;"
             " CREATE TABLE t (mode smallint NOT NULL DEFAULT 3, k int);"
             " FOREACH st IN ARRAY ARRAY[4, 10] LOOP",
             "test");
    cr_assert_eq(sc.n_bad, 7, "%d:%s", sc.n_bad, rb_buf_str(&sc.bad));
    cr_assert_eq(sc.uses, 12, "%d", sc.uses);
    cr_assert(strstr(rb_buf_str(&sc.bad), "test: 8 in a state position"), "%s",
              rb_buf_str(&sc.bad));
    cr_assert(strstr(rb_buf_str(&sc.bad), "test: 10 in a job state position"), "%s",
              rb_buf_str(&sc.bad));
    rb_buf_release(&sc.bad);
}

/* The table has every job state there is (a new one must be added, with
 * the number the SQL will store). */
Test(schema, the_table_has_every_job_state)
{
    int st = 0;
    for (; strcmp(rb_job_state_name((rb_job_state)st), "unknown"); st++)
        cr_assert(documented(CTX_JOB_STATE, st), "state %d (%s) is not in sql_numbers.c", st,
                  rb_job_state_name((rb_job_state)st));
    cr_assert_eq(st, RB_JOB_BLOCKED + 1);
}
