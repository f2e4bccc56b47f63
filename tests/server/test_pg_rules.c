/* The job rules PostgreSQL applies inside the database, against the
 * engine's rules in C: the holder check (rb_holder_status, schema version
 * 13) and the outcome of the functions that apply it (rb_held behind
 * SNOOZE and EXTEND, rb_ack_batch and the previous releases' rb_ack_deps
 * and rb_ack_labels behind ACK) over every stored shape of a job — each
 * state, flag set and holder, asked by its holder, another wid or none —
 * compared with rb_job_outcome (engine/job_state.h). A schema of the run's
 * shared cluster per test (tests/server/pg_harness.h). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "engine/job_state.h"
#include "pg_harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!rbpg_suite_init())
        fprintf(stderr, "test_pg_rules: cannot start the shared PostgreSQL cluster\n");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    rbpg_suite_free();
}

static rb_pg *eng; /* migrated, in the test's schema */
static PGconn *db; /* the same schema, for the SQL functions themselves */

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void setup(void)
{
    char base[1024], url[1024], name[64], sql[128];
    cr_assert(rbpg_shared_url(base, sizeof base), "no shared PostgreSQL cluster");
    rbpg_schema_name(name, sizeof name, "tr");
    PGconn *c = PQconnectdb(base);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", name);
    PQclear(PQexec(c, sql));
    PQfinish(c);
    rbpg_schema_url(url, sizeof url, name, "");
    rb_pg_options o = {.url = url, .seed = 5};
    rb_err err = {0};
    cr_assert_eq(rb_pg_open(&o, &eng, &err), 0, "open: %s", rb_err_msg(&err));
    cr_assert_eq(rb_pg_migrate(eng, NULL, NULL, &err), 0, "migrate: %s", rb_err_msg(&err));
    db = PQconnectdb(url);
    cr_assert_eq(PQstatus(db), CONNECTION_OK, "%s", PQerrorMessage(db));
    PQsetNoticeProcessor(db, quiet, NULL);
}

static void teardown(void)
{
    rb_pg_close(eng);
    PQfinish(db);
}

TestSuite(rules, .init = setup, .fini = teardown, .timeout = 120);

/* Runs sql (printf-style) on db; the first value (caller frees) or NULL. */
__attribute__((format(printf, 1, 2))) static char *q(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK, "%s: %s", sql,
              PQresultErrorMessage(r));
    char *out = st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)
                    ? strdup(PQgetvalue(r, 0, 0))
                    : NULL;
    PQclear(r);
    return out;
}

/* Runs sql (printf-style) on db; its first value as an int. */
__attribute__((format(printf, 1, 2))) static int q_int(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    char *v = q("%s", sql);
    cr_assert(v, "%s: no value", sql);
    int n = atoi(v);
    free(v);
    return n;
}

/* A SQL literal of s (NULL as NULL) in out. */
static const char *lit(const char *s, char *out, size_t n)
{
    snprintf(out, n, s ? "'%s'" : "NULL", s);
    return out;
}

/* --- the grid: every stored shape of a job and every asking wid --- */

#define NO_JOB (-1)
static const int grid_states[] = {NO_JOB,         RB_JOB_PENDING, RB_JOB_SCHEDULED,
                                  RB_JOB_ENQUEUED, RB_JOB_WORKING, RB_JOB_RETRIES,
                                  RB_JOB_DEAD,    RB_JOB_WAITING, RB_JOB_BLOCKED};
static const int grid_flags[] = {0, RB_JOB_EXPIRED, RB_JOB_REFETCHED,
                                 RB_JOB_EXPIRED | RB_JOB_REFETCHED};
static const char *const grid_holders[] = {NULL, "w1"};
static const char *const grid_wids[] = {NULL, "w1", "w2"};
#define N_OF(a) (sizeof(a) / sizeof *(a))

typedef struct shape {
    int state; /* NO_JOB: no row */
    int flags;
    const char *holder, *wid;
} shape;

/* Calls fn(s, arg) for every shape of the grid; how many. */
static int each_shape(void (*fn)(const shape *, void *), void *arg)
{
    int n = 0;
    for (size_t a = 0; a < N_OF(grid_states); a++)
        for (size_t b = 0; b < N_OF(grid_flags); b++)
            for (size_t c = 0; c < N_OF(grid_holders); c++)
                for (size_t d = 0; d < N_OF(grid_wids); d++) {
                    shape s = {grid_states[a], grid_flags[b], grid_holders[c], grid_wids[d]};
                    fn(&s, arg);
                    n++;
                }
    return n;
}

/* The engine's answer for verb on shape s. */
static int c_rule(rb_job_verb verb, const shape *s)
{
    return (int)rb_job_outcome(verb, s->state != NO_JOB,
                               (rb_job_state)(s->state == NO_JOB ? 0 : s->state), s->flags,
                               s->holder, s->wid);
}

static const char *shape_text(const shape *s, char *out, size_t n)
{
    snprintf(out, n, "state %d flags %d holder %s wid %s", s->state, s->flags,
             s->holder ? s->holder : "(none)", s->wid ? s->wid : "(none)");
    return out;
}

/* rb_holder_status is the rule SNOOZE and EXTEND apply (a working job,
 * asked for by its holder or without a wid on either side): compared with
 * rb_job_outcome for both verbs, alone, on the values of each shape. */
static void holder_status_agrees(const shape *s, void *arg)
{
    char st[16], h[16], w[16], t[96];
    snprintf(st, sizeof st, s->state == NO_JOB ? "NULL" : "%d", s->state);
    int got = q_int("SELECT rb_holder_status(%s, %s, %s)", st, lit(s->holder, h, sizeof h),
                    lit(s->wid, w, sizeof w));
    for (rb_job_verb v = RB_VERB_SNOOZE; v <= RB_VERB_EXTEND; v++)
        cr_expect_eq(got, c_rule(v, s), "rb_holder_status of %s: %d, rb_job_outcome(%s): %d",
                     shape_text(s, t, sizeof t), got, v == RB_VERB_SNOOZE ? "SNOOZE" : "EXTEND",
                     c_rule(v, s));
    (*(int *)arg)++;
}

Test(rules, holder_status_is_the_engines_rule)
{
    int n = 0;
    cr_assert_eq(each_shape(holder_status_agrees, &n), 9 * 4 * 2 * 3);
    cr_assert_eq(n, 9 * 4 * 2 * 3);
}

/* The functions the nodes (and the previous releases' nodes) call, each
 * on one job row of a shape, in a transaction rolled back afterwards; the
 * status each returns for that job. */
typedef struct fn_case {
    const char *name;
    rb_job_verb verb;
    const char *sql; /* printf: jid literal, wid literal */
} fn_case;

static const fn_case fns[] = {
    {"rb_held", RB_VERB_SNOOZE, "SELECT status FROM rb_held(%s, %s)"},
    {"rb_snooze", RB_VERB_SNOOZE, "SELECT status FROM rb_snooze(%s, %s, 60, 1000)"},
    {"rb_extend", RB_VERB_EXTEND, "SELECT status FROM rb_extend(%s, %s, 60, 1000)"},
    {"rb_ack_batch", RB_VERB_ACK,
     "SELECT status FROM rb_ack_batch(ARRAY[%s], ARRAY[%s]::text[], 0, 1000, 3600000, false)"},
    {"rb_ack_deps", RB_VERB_ACK,
     "SELECT status FROM rb_ack_deps(ARRAY[%s], ARRAY[%s]::text[], 0, 1000, 3600000)"},
    {"rb_ack_labels", RB_VERB_ACK,
     "SELECT status FROM rb_ack_labels(ARRAY[%s], ARRAY[%s]::text[], 0)"},
    {"rb_ack", RB_VERB_ACK, "SELECT (rb_ack(ARRAY[%s], ARRAY[%s]::text[], 0))[1]"},
};

static void function_agrees(const shape *s, void *arg)
{
    const fn_case *f = arg;
    char h[16], w[16], t[96], sql[256];
    free(q("BEGIN"));
    if (s->state != NO_JOB)
        free(q("INSERT INTO rb_jobs (jid, state, queue, priority, due_ms, reserve_s, flags,"
               " wid, json) VALUES ('g1', %d, 'default', 5, 1000, 1800, %d, %s,"
               " '{\"jid\":\"g1\",\"jobtype\":\"t\",\"args\":[]}')",
               s->state, s->flags, lit(s->holder, h, sizeof h)));
    snprintf(sql, sizeof sql, f->sql, "'g1'", lit(s->wid, w, sizeof w));
    int got = q_int("%s", sql);
    free(q("ROLLBACK"));
    int want = c_rule(f->verb, s);
    cr_expect_eq(got, want, "%s on %s: %d, rb_job_outcome: %d", f->name,
                 shape_text(s, t, sizeof t), got, want);
}

Test(rules, every_holder_checking_function_is_the_engines_rule)
{
    for (size_t i = 0; i < N_OF(fns); i++)
        each_shape(function_agrees, (void *)&fns[i]);
    char *left = q("SELECT count(*) FROM rb_jobs");
    cr_assert_str_eq(left, "0");
    free(left);
}

/* The functions that check a holder all call rb_holder_status, and no
 * function of the schema writes the rule out again. */
Test(rules, one_holder_check_in_the_schema)
{
    char *v = q("SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc"
                " WHERE pronamespace = current_schema()::regnamespace"
                " AND prosrc LIKE '%%rb_holder_status(%%'");
    cr_assert_str_eq(v, "rb_ack_batch,rb_ack_deps,rb_held");
    free(v);
    v = q("SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc"
          " WHERE pronamespace = current_schema()::regnamespace"
          " AND proname <> 'rb_holder_status' AND prosrc ~ 'wid <>|<> p_wid|wid IS NOT NULL'");
    cr_assert_null(v, "the holder rule written out again in %s", v);
    free(v);
}
