/* The job rules PostgreSQL applies inside the database, against the
 * engine's rules in C: the holder check (rb_holder_status, schema version
 * 13) and the outcome of the functions that apply it (rb_held behind
 * SNOOZE and EXTEND, rb_ack_batch and the previous releases' rb_ack_deps
 * and rb_ack_labels behind ACK, and the nodes' own ACK statement against
 * rb_ack_batch, batches naming a job more than once included) over every
 * stored shape of a job — each
 * state, flag set and holder, asked by its holder, another wid or none —
 * compared with rb_job_outcome (engine/job_state.h); and a parent's
 * success as rb_ack_batch applies it in SQL (rb_dep_succeeded) against the
 * engine's dependency rule (rb_dep_on_parent, engine/depend.h) over every
 * child's counts and mode, with a parent's death (decided in C through
 * rb_dep_on_parent) on the same grid; and the GCRA arithmetic of the group
 * claim (schema 16) against engine/gcra.c. A schema of the run's shared cluster
 * per test (tests/server/pg_harness.h). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "common/timeutil.h"
#include "engine/depend.h"
#include "engine/gcra.h"
#include "engine/group.h"
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

/* The node's own ACK statement (SQL_ACK, issue 29: rb_ack_batch's rules
 * without the function) through the backend, on one committed job row of
 * each shape, asked by a sequence of wids in one batch (the same jid
 * once, twice or three times): every element's status is rb_ack_batch's
 * for the same batch (run first, rolled back), and a single element's is
 * rb_job_outcome's. */
typedef struct batch_case {
    const char *wids[3];
    size_t n;
} batch_case;

static void engine_ack_agrees(const shape *s, void *arg)
{
    const batch_case *b = arg;
    char h[16], w[3][16], t[96];
    if (s->state != NO_JOB && s->wid) /* the asking wid comes from the batch */
        return;
    char row[512] = "";
    if (s->state != NO_JOB)
        snprintf(row, sizeof row,
                 "INSERT INTO rb_jobs (jid, state, queue, priority, due_ms, reserve_s, flags,"
                 " wid, json) VALUES ('g1', %d, 'default', 5, 1000, 1800, %d, %s,"
                 " '{\"jid\":\"g1\",\"jobtype\":\"t\",\"args\":[]}')",
                 s->state, s->flags, lit(s->holder, h, sizeof h));
    char jids[64] = "", wids[64] = "";
    for (size_t i = 0; i < b->n; i++) {
        snprintf(jids + strlen(jids), sizeof jids - strlen(jids), "%s'g1'", i ? "," : "");
        snprintf(wids + strlen(wids), sizeof wids - strlen(wids), "%s%s", i ? "," : "",
                 lit(b->wids[i], w[i], sizeof w[i]));
    }
    free(q("BEGIN"));
    if (*row)
        free(q("%s", row));
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT status FROM rb_ack_batch(ARRAY[%s], ARRAY[%s]::text[], 0, 1000, 3600000,"
             " false)", jids, wids);
    PGresult *r = PQexec(db, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
    cr_assert_eq((size_t)PQntuples(r), b->n);
    int want[3];
    for (size_t i = 0; i < b->n; i++)
        want[i] = atoi(PQgetvalue(r, (int)i, 0));
    PQclear(r);
    free(q("ROLLBACK"));
    if (*row)
        free(q("%s", row));
    rb_pg_ref refs[3];
    int got[3];
    for (size_t i = 0; i < b->n; i++)
        refs[i] = (rb_pg_ref){"g1", b->wids[i]};
    rb_err err = {0};
    cr_assert_eq(rb_pg_ack(eng, refs, b->n, got, NULL, &err), 0, "%s", rb_err_msg(&err));
    free(q("DELETE FROM rb_jobs"));
    for (size_t i = 0; i < b->n; i++) {
        shape one = *s;
        one.wid = b->wids[i];
        cr_expect_eq(got[i], want[i], "ACK %zu of %zu on %s: %d, rb_ack_batch: %d", i + 1, b->n,
                     shape_text(&one, t, sizeof t), got[i], want[i]);
        if (b->n == 1)
            cr_expect_eq(got[i], c_rule(RB_VERB_ACK, &one), "ACK on %s: %d, rb_job_outcome: %d",
                         shape_text(&one, t, sizeof t), got[i], c_rule(RB_VERB_ACK, &one));
    }
}

Test(rules, the_nodes_ack_statement_is_rb_ack_batchs_rule)
{
    static const char *const ws[] = {NULL, "w1", "w2"};
    for (size_t a = 0; a < 3; a++) {
        batch_case one = {{ws[a]}, 1};
        each_shape(engine_ack_agrees, &one);
        for (size_t b = 0; b < 3; b++) {
            batch_case two = {{ws[a], ws[b]}, 2};
            each_shape(engine_ack_agrees, &two);
        }
    }
    static const batch_case three[] = {{{"w2", "w1", "w1"}, 3}, {{"w2", NULL, "w2"}, 3},
                                       {{"w1", "w2", "w1"}, 3}};
    for (size_t i = 0; i < N_OF(three); i++)
        each_shape(engine_ack_agrees, (void *)&three[i]);
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
    cr_assert_str_eq(v, "rb_ack_batch,rb_held");
    free(v);
    v = q("SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc"
          " WHERE pronamespace = current_schema()::regnamespace"
          " AND proname <> 'rb_holder_status' AND prosrc ~ 'wid <>|<> p_wid|wid IS NOT NULL'");
    cr_assert_null(v, "the holder rule written out again in %s", v);
    free(v);
}

/* --- a parent's event and its child: the SQL (ACK) and C (death) paths
 * against rb_dep_on_parent --- */

typedef struct dep_case {
    rb_dep_mode mode;
    rb_dep_event ev;
    unsigned remaining, dead; /* the child's counts before the event */
} dep_case;

/* Child "c<n>" waits (blocked when dead > 0) on remaining parents: "p<n>",
 * whose event this is, and others that are only edges (rb_dep_succeeded
 * and the C path read the counts, not the other parents' rows). p<n> is
 * working, held by w1 (retry -1: a FAIL kills it; retry 0 for a discard:
 * a FAIL deletes it), or, when every
 * remaining parent is dead and it succeeds, dead with its expired flag
 * (its lease ran out on the last attempt; a late ACK completes it). */
static void dep_setup(const dep_case *d, int n, int64_t now)
{
    bool parent_dead = d->dead == d->remaining;
    free(q("INSERT INTO rb_jobs (jid, state, queue, priority, due_ms, reserve_s, flags, wid,"
           " json, wf) VALUES ('p%d', %d, 'default', 5, %lld, 1800, %d, 'w1',"
           " '{\"jid\":\"p%d\",\"jobtype\":\"t\",\"args\":[],\"retry\":%d}', true)",
           n, parent_dead ? RB_JOB_DEAD : RB_JOB_WORKING, (long long)(now + 600000),
           parent_dead ? RB_JOB_EXPIRED : 0, n, d->ev == RB_DEP_PARENT_DISCARDED ? 0 : -1));
    free(q("INSERT INTO rb_jobs (jid, state, queue, priority, due_ms, reserve_s, json, wf)"
           " VALUES ('c%d', %d, 'default', 5, %lld, 1800,"
           " '{\"jid\":\"c%d\",\"jobtype\":\"t\",\"args\":[]}', true)",
           n, d->dead ? RB_JOB_BLOCKED : RB_JOB_WAITING, (long long)(now - 1000), n));
    free(q("INSERT INTO rb_wait (child, remaining, dead, mode) VALUES ('c%d', %u, %u, %d)", n,
           d->remaining, d->dead, (int)d->mode));
    free(q("INSERT INTO rb_edges (parent, child) SELECT CASE WHEN k = 1 THEN 'p%d'"
           " ELSE 'o%d-' || k END, 'c%d' FROM generate_series(1, %u) k",
           n, n, n, d->remaining));
}

/* The parent's event through the backend: ACK (rb_ack_batch, the SQL
 * rule) or FAIL that kills or discards it (told in C: sql_dep_events). */
static void dep_event(const dep_case *d, int n, int64_t now)
{
    char jid[16];
    snprintf(jid, sizeof jid, "p%d", n);
    rb_pg_ref ref = {jid, "w1"};
    rb_err err = {0};
    if (d->ev == RB_DEP_PARENT_SUCCEEDED) {
        int st = -1;
        cr_assert_eq(rb_pg_ack(eng, &ref, 1, &st, NULL, &err), 0, "%s", rb_err_msg(&err));
        cr_assert_eq(st, RB_JOB_DONE, "ACK of %s: %d", jid, st);
    } else {
        rb_pg_failure f = {.ref = ref, .in = {.errtype = "E", .message = "boom"}};
        rb_pg_fail_result res;
        cr_assert_eq(rb_pg_fail(eng, &f, 1, now, &res, &err), 0, "%s", rb_err_msg(&err));
        cr_assert_eq(res.status, RB_JOB_DONE, "FAIL of %s: %d", jid, res.status);
        char *v = q("SELECT state FROM rb_jobs WHERE jid = '%s'", jid);
        if (d->ev == RB_DEP_PARENT_DIED)
            cr_assert(v && !strcmp(v, "5"), "%s did not die: state %s", jid, v);
        else
            cr_assert_null(v, "%s was not discarded: state %s", jid, v);
        free(v);
    }
}

/* What the child is after the event: its state (-1: gone), its counts
 * (when it still waits) and whether the parent's edge is still there. */
typedef struct dep_after {
    int state;
    bool waits;
    unsigned remaining, dead;
    bool edge;
} dep_after;

static dep_after dep_read(int n)
{
    dep_after a = {.state = -1};
    char *v = q("SELECT state FROM rb_jobs WHERE jid = 'c%d'", n);
    if (v)
        a.state = atoi(v);
    free(v);
    v = q("SELECT remaining || ',' || dead FROM rb_wait WHERE child = 'c%d'", n);
    a.waits = v != NULL;
    if (v)
        cr_assert_eq(sscanf(v, "%u,%u", &a.remaining, &a.dead), 2);
    free(v);
    v = q("SELECT count(*) FROM rb_edges WHERE parent = 'p%d' AND child = 'c%d'", n, n);
    a.edge = !strcmp(v, "1");
    free(v);
    return a;
}

/* The engine's answer: rb_dep_on_parent on the counts, as a child's row. */
static dep_after dep_want(const dep_case *d)
{
    rb_dep_counts c = {d->remaining, d->dead};
    bool consumed = false;
    rb_dep_next next = rb_dep_on_parent(d->mode, d->ev, &c, &consumed);
    dep_after a = {.edge = !consumed};
    switch (next) {
    case RB_DEP_NEXT_WAIT:
    case RB_DEP_NEXT_BLOCK:
        a.state = next == RB_DEP_NEXT_BLOCK ? RB_JOB_BLOCKED : RB_JOB_WAITING;
        a.waits = true;
        a.remaining = c.remaining;
        a.dead = c.dead;
        break;
    case RB_DEP_NEXT_RELEASE: a.state = RB_JOB_ENQUEUED; break; /* its `at` is past */
    case RB_DEP_NEXT_DIE:
        a.state = RB_JOB_DEAD;
        a.edge = false; /* a dead child's edges are all used up */
        break;
    }
    return a;
}

/* Every mode, every count a child can have (1 to 3 parents left, 0 to
 * all of them dead), a parent's success and (when it is not dead yet) its
 * death or discard: the child's row after the backend applied it is
 * rb_dep_on_parent's answer. */
Test(rules, a_parents_event_is_the_engines_dependency_rule)
{
    int64_t now = rb_now_ms();
    int n = 0, checked = 0;
    for (rb_dep_mode mode = RB_DEP_BLOCK; mode <= RB_DEP_IGNORE; mode++)
        for (unsigned r = 1; r <= 3; r++)
            for (unsigned dd = 0; dd <= r; dd++)
                for (int e = 0; e < 3; e++) {
                    static const rb_dep_event evs[] = {RB_DEP_PARENT_SUCCEEDED,
                                                       RB_DEP_PARENT_DIED,
                                                       RB_DEP_PARENT_DISCARDED};
                    static const char *const ev_names[] = {"succeeded", "died", "discarded"};
                    dep_case d = {mode, evs[e], r, dd};
                    if (d.ev != RB_DEP_PARENT_SUCCEEDED && dd == r)
                        continue; /* a dead parent fails no more */
                    n++;
                    dep_setup(&d, n, now);
                    dep_event(&d, n, now);
                    dep_after got = dep_read(n), want = dep_want(&d);
                    cr_expect(got.state == want.state && got.waits == want.waits &&
                                  got.remaining == want.remaining && got.dead == want.dead &&
                                  got.edge == want.edge,
                              "%s, %s, %u left, %u dead: the backend left the child in state"
                              " %d (waits %d: %u left, %u dead; edge %d), rb_dep_on_parent"
                              " says %d (waits %d: %u left, %u dead; edge %d)",
                              rb_dep_mode_name(mode), ev_names[e], r, dd, got.state,
                              got.waits, got.remaining, got.dead, got.edge, want.state,
                              want.waits, want.remaining, want.dead, want.edge);
                    checked++;
                }
    cr_assert_eq(checked, 3 * (9 + 6 + 6));
}

/* GCRA (engine/gcra.h) as the claim applies it in SQL (rb_gcra_conforms,
 * rb_gcra_start, rb_gcra_available, schema 16), against the C rules over
 * buckets of every shape (no rate, rates with and without burst, across
 * the period bounds) and states around now (full, just used, behind, far
 * ahead), 2,000 random cases in one statement's worth of round trips. */
Test(rules, gcra_in_sql_is_the_engines_rule)
{
    static const int64_t rates[][3] = {
        {0, 0, 0},   {1, 1000, 0},    {50, 1000, 0},     {2, 1000, 4},
        {100, 60000, 10}, {1000000, 1000, 0}, {7, 86400000, 3}, {3, 7LL * 86400 * 1000, 1000000},
    };
    unsigned seed = 30;
    int64_t now = rb_now_ms() * 1000;
    for (int k = 0; k < 2000; k++) {
        const int64_t *r = rates[k % (int)(sizeof rates / sizeof *rates)];
        rb_gcra g;
        rb_gcra_init(&g, r[0], r[1], r[2]);
        int64_t span = g.t_us * 4 + g.tau_us + 1000;
        int64_t tat = k % 5 == 0 ? 0 : now - span + (int64_t)(rand_r(&seed) % (unsigned)(3 * span));
        char *c = q("SELECT rb_gcra_conforms(%lld, %lld, %lld, %lld)::text || ' ' ||"
                    " rb_gcra_start(%lld, %lld, %lld) || ' ' ||"
                    " rb_gcra_available(%lld, %lld, %lld, %lld)",
                    (long long)tat, (long long)now, (long long)g.t_us, (long long)g.tau_us,
                    (long long)tat, (long long)now, (long long)g.t_us, (long long)tat,
                    (long long)now, (long long)g.t_us, (long long)g.tau_us);
        char want[96];
        snprintf(want, sizeof want, "%s %lld %lld", rb_gcra_conforms(&g, tat, now) ? "true" : "false",
                 (long long)rb_gcra_start(&g, tat, now), (long long)rb_gcra_available(&g, tat, now));
        cr_assert_str_eq(c, want, "rate %lld/%lld ms burst %lld, tat %lld, now %lld",
                         (long long)r[0], (long long)r[1], (long long)r[2], (long long)tat,
                         (long long)now);
        free(c);
    }
}

/* A group's limits as the claim resolves them (rb_group_limits, schema
 * 15: its GROUP SET field by field before the queue's [groups], then the
 * bucket's interval and tolerance) against engine/group.h's
 * rb_flow_limits_resolve and rb_gcra_init: every subset of override
 * fields over queue limits with and without a rate. */
Test(rules, group_limits_in_sql_are_the_engines_rule)
{
    static const rb_flow_limits queues[] = {
        {0, 0, 0, 0}, {5, 0, 0, 0}, {2, 100, 60000, 10}, {0, 50, 1000, 0},
    };
    const rb_flow_limits over_v = {3, 7, 2000, 4};
    for (size_t qi = 0; qi < sizeof queues / sizeof *queues; qi++) {
        for (unsigned set = 0; set < 16; set++) {
            rb_flow_override qo = {.set = 15, .v = queues[qi]}, o = {.set = set, .v = over_v};
            rb_flow_limits lim;
            rb_flow_limits_resolve(set ? &o : NULL, &qo, NULL, &lim, NULL);
            rb_gcra g;
            rb_gcra_init(&g, lim.rate, lim.period_ms, lim.burst);
            char ov[4][24];
            const int64_t vals[4] = {o.v.concurrency, o.v.rate, o.v.period_ms, o.v.burst};
            for (int k = 0; k < 4; k++)
                snprintf(ov[k], sizeof ov[k], set & (1u << k) ? "%lld" : "NULL",
                         (long long)vals[k]);
            char *c = q("SELECT conc || ' ' || t || ' ' || tau FROM rb_group_limits(%s, %s, %s, %s,"
                        " %lld, %lld, %lld, %lld)",
                        ov[0], ov[1], ov[2], ov[3], (long long)qo.v.concurrency,
                        (long long)qo.v.rate, (long long)qo.v.period_ms, (long long)qo.v.burst);
            char want[96];
            snprintf(want, sizeof want, "%lld %lld %lld", (long long)lim.concurrency,
                     (long long)g.t_us, (long long)g.tau_us);
            cr_assert_str_eq(c, want, "queue limits %zu, override fields %u: %s, want %s", qi, set, c, want);
            free(c);
        }
    }
}
