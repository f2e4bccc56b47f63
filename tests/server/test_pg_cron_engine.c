/* Cron's conditional push on the PostgreSQL engine (rb_pg_push_tick,
 * src/backend/pg/sql_cron.c) against a real cluster: a tick is pushed only
 * when the entry's rb_meta row holds an older tick (or none, or no
 * number), in the same transaction as the row's update; an equal or older
 * tick writes nothing; and a node that races another for one tick waits
 * for the other's COMMIT and then finds it stale. The two-node server test
 * is test_pg_server_cron. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "pg_harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!rbpg_suite_init())
        fprintf(stderr, "test_pg_cron_engine: cannot start the shared PostgreSQL cluster\n");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    rbpg_suite_free();
}

static char url[1024];
static rb_pg *eng;

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static PGconn *conn_at(const char *u)
{
    PGconn *c = PQconnectdb(u);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

/* Runs sql on c; the first value of the result (caller frees) or NULL. */
static char *run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK, "%s: %s", sql,
              PQresultErrorMessage(r));
    char *out = st == PGRES_TUPLES_OK && PQntuples(r) > 0 ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    PQclear(r);
    return out;
}

static char *sql_at(const char *u, const char *sql)
{
    PGconn *c = conn_at(u);
    char *v = run(c, sql);
    PQfinish(c);
    return v;
}

static void setup(void)
{
    char base[1024], sql[128], schema[64];
    cr_assert(rbpg_shared_url(base, sizeof base), "no shared PostgreSQL cluster");
    rbpg_schema_name(schema, sizeof schema, "tc");
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", schema);
    free(sql_at(base, sql));
    rbpg_schema_url(url, sizeof url, schema, "");
    rb_pg_options o = {.url = url, .seed = 42};
    rb_err err = {0};
    cr_assert_eq(rb_pg_open(&o, &eng, &err), 0, "open: %s", rb_err_msg(&err));
    cr_assert_eq(rb_pg_migrate(eng, NULL, NULL, &err), 0, "migrate: %s", rb_err_msg(&err));
}

static void teardown(void)
{
    rb_pg_close(eng);
    eng = NULL;
}

TestSuite(pg_cron, .init = setup, .fini = teardown, .timeout = 60);

#define KEY "cron:minutely"

/* Pushes tick's job (jid "c-TICK") through pg; its status and whether it
 * was stale. */
static int push_tick(rb_pg *pg, long long tick, bool *stale)
{
    char jid[32];
    snprintf(jid, sizeof jid, "c-%lld", tick);
    json_t *job = json_pack("{s:s, s:s, s:[]}", "jid", jid, "jobtype", "Tick", "args");
    rb_pg_new_job nj;
    char *text = NULL;
    rb_pg_job_from_json(job, 1000, 1800, &nj, &text);
    int status = -1;
    rb_err err = {0};
    int rc = rb_pg_push_tick(pg, &nj, NULL, 1, false, KEY, tick, 1000, &status, stale, &err);
    cr_assert_eq(rc, 0, "push_tick: %s", rb_err_msg(&err));
    free(text);
    json_decref(job);
    return status;
}

static long long jobs_named(long long tick)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rb_jobs WHERE jid = 'c-%lld'", tick);
    char *v = sql_at(url, sql);
    long long n = atoll(v);
    free(v);
    return n;
}

static long long stored(void)
{
    char *v = sql_at(url, "SELECT value FROM rb_meta WHERE key = '" KEY "'");
    long long t = v ? atoll(v) : -1;
    free(v);
    return t;
}

Test(pg_cron, a_tick_is_pushed_only_when_newer_than_the_stored_one)
{
    bool stale = true;
    cr_assert_eq(push_tick(eng, 600, &stale), 0); /* no row yet */
    cr_assert(!stale);
    cr_assert_eq(stored(), 600);
    cr_assert_eq(jobs_named(600), 1);
    /* the same tick again, the job acknowledged meanwhile: nothing */
    free(sql_at(url, "DELETE FROM rb_jobs WHERE jid = 'c-600'"));
    cr_assert_eq(push_tick(eng, 600, &stale), RB_EEXIST);
    cr_assert(stale);
    cr_assert_eq(jobs_named(600), 0);
    /* an older tick: nothing, the row unchanged */
    cr_assert_eq(push_tick(eng, 540, &stale), RB_EEXIST);
    cr_assert(stale);
    cr_assert_eq(jobs_named(540), 0);
    cr_assert_eq(stored(), 600);
    /* the next: pushed */
    cr_assert_eq(push_tick(eng, 660, &stale), 0);
    cr_assert(!stale);
    cr_assert_eq(stored(), 660);
    cr_assert_eq(jobs_named(660), 1);
    /* a row that is no number is taken over */
    free(sql_at(url, "UPDATE rb_meta SET value = 'junk' WHERE key = '" KEY "'"));
    cr_assert_eq(push_tick(eng, 720, &stale), 0);
    cr_assert(!stale);
    cr_assert_eq(stored(), 720);
}

typedef struct racer {
    long long tick;
    bool stale;
    int status;
} racer;

static void *race(void *p)
{
    racer *r = p;
    rb_pg_options o = {.url = url, .seed = 7};
    rb_pg *pg = NULL;
    rb_err err = {0};
    if (rb_pg_open(&o, &pg, &err) == 0) {
        r->status = push_tick(pg, r->tick, &r->stale);
        rb_pg_close(pg);
    }
    return NULL;
}

Test(pg_cron, of_two_nodes_racing_for_a_tick_the_second_finds_it_stale)
{
    bool stale;
    cr_assert_eq(push_tick(eng, 600, &stale), 0);
    /* another node's transaction holds the row, storing tick 660 */
    PGconn *x = conn_at(url);
    free(run(x, "BEGIN"));
    free(run(x, "UPDATE rb_meta SET value = '660' WHERE key = '" KEY "'"));
    racer r = {.tick = 660, .stale = false, .status = -1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, race, &r), 0);
    /* whether the racer's upsert is waiting yet or not, it sees 660 once
     * the other commits */
    free(run(x, "COMMIT"));
    pthread_join(t, NULL);
    PQfinish(x);
    cr_assert(r.stale, "the second node pushed the tick too");
    cr_assert_eq(r.status, RB_EEXIST);
    cr_assert_eq(jobs_named(660), 0);
    cr_assert_eq(stored(), 660);
}
