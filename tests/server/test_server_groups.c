/* Groups in turn against the real server (docs/configuration.md "Groups",
 * issue 30): jobs naming custom.group are taken round robin per queue, so
 * one tenant's backlog does not starve the others. The done-when
 * case (1 group with 10,000 jobs, then 20 groups with 5 jobs, 4 workers:
 * every small job starts within the first 25 + 20 x 5 fetches), ungrouped
 * jobs as one group in the rotation, priority inside a group only, the
 * enqueued listing by group, and the rotation after a restart and after
 * kill -9 (the group is stored with the job). Both backends
 * (test_pg_server_groups.c includes it with RBH_PG). Where they differ by
 * design, the case says so: a single node takes groups in the order they
 * became ready, PostgreSQL in name order from each node's cursor (both
 * round robin; docs/configuration.md "Groups"). */
#include <criterion/criterion.h>

#include "common/buf.h"
#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("w0");
}

TestSuite(groups, .init = start, .fini = rbh_suite_stop, .timeout = 120);

#define SERVER_TEST(name) RBH_SERVER_TEST(groups, name)

/* Jids are PREFIX + a short name (a jid has at least 8 characters). */
#define PREFIX "job-----"

/* PUSH of job PREFIX jid into queue q, group g (NULL: none), priority prio. */
static void push(const char *q, const char *jid, const char *g, int prio)
{
    char custom[300] = "";
    if (g)
        snprintf(custom, sizeof custom, ",\"custom\":{\"group\":\"%s\"}", g);
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"" PREFIX "%s\",\"jobtype\":\"T\",\"queue\":\"%s\","
                         "\"args\":[],\"priority\":%d%s}",
                         jid, q, prio, custom));
}

/* The jids (without PREFIX) of n FETCHes of q on C, each ACKed,
 * comma-separated into out. */
static void fetch_order(const char *q, int n, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char *jid = rbh_fetch_jid(C, q);
        cr_assert_not_null(jid, "fetch %d of %s got nothing", i, q);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", i ? "," : "",
                 jid + (strncmp(jid, PREFIX, strlen(PREFIX)) ? 0 : strlen(PREFIX)));
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        free(jid);
    }
}

/* The done-when case: the backlog's 10,000 jobs pushed first (PUSHB
 * of 1,000), then 20 groups of 5, one PUSH each; 4 workers each hold one
 * job while the others fetch, then ACK. All 100 small jobs start within
 * the first 125 fetches (the rotation of 21 groups: 105). */
SERVER_TEST(backlog_does_not_starve_small_groups)
{
    enum { BIG = 10000, GROUPS = 20, EACH = 5, WORKERS = 4, BOUND = 25 + GROUPS * EACH };
    for (int b = 0; b < BIG / 1000; b++) {
        rb_buf line = RB_BUF_INIT;
        rb_buf_adds(&line, "PUSHB [");
        for (int i = 0; i < 1000; i++)
            rb_buf_printf(&line,
                          "%s{\"jid\":\"big-%05d\",\"jobtype\":\"T\",\"queue\":\"fair\","
                          "\"args\":[],\"custom\":{\"group\":\"backlog\"}}",
                          i ? "," : "", b * 1000 + i);
        rb_buf_addc(&line, ']');
        char *r = rbh_cmd(C, "%s", rb_buf_str(&line));
        cr_assert(r && !strcmp(r, "{}"), "PUSHB answered '%.200s'", r ? r : "(closed)");
        free(r);
        rb_buf_release(&line);
    }
    for (int g = 0; g < GROUPS; g++)
        for (int i = 0; i < EACH; i++) {
            char jid[32], name[32];
            snprintf(jid, sizeof jid, "small-%02d-%d", g, i);
            snprintf(name, sizeof name, "tenant-%02d", g);
            push("fair", jid, name, 5);
        }
    rbh_conn *w[WORKERS];
    char *held[WORKERS] = {0};
    for (int i = 0; i < WORKERS; i++) {
        char wid[16];
        snprintf(wid, sizeof wid, "fw%d", i);
        w[i] = rbh_connect(&S, wid);
        cr_assert_not_null(w[i]);
    }
    int small = 0, last_small = -1, fetches = 0;
    while (small < GROUPS * EACH && fetches < 400) {
        int k = fetches % WORKERS;
        if (held[k]) { /* the worker finishes its job before its next FETCH */
            cr_assert(rbh_expect(w[k], "+OK", "ACK {\"jid\":\"%s\"}", held[k]));
            free(held[k]);
        }
        held[k] = rbh_fetch_jid(w[k], "fair");
        cr_assert_not_null(held[k], "fetch %d got nothing", fetches);
        if (strstr(held[k], "small-")) {
            small++;
            last_small = fetches;
        }
        fetches++;
    }
    cr_assert_eq(small, GROUPS * EACH);
    cr_assert_lt(last_small, BOUND, "the last small job started at fetch %d (bound %d)",
                 last_small + 1, BOUND);
    printf("groups: all %d small jobs started by fetch %d of a 10,000-job backlog (bound %d)\n",
           GROUPS * EACH, last_small + 1, BOUND);
    for (int i = 0; i < WORKERS; i++) {
        free(held[i]);
        rbh_close(w[i]);
    }
}

/* The turn after kill -9: a 1,000-job backlog group and 20 groups of 5,
 * 30 jobs fetched and ACKed, then the server killed and restarted on the
 * same file: the small jobs left all start within one rotation (21 groups x
 * 5 jobs: 105 fetches; a group loses at most one turn). */
SERVER_TEST(turns_resume_after_kill_9)
{
    enum { BIG = 1000, GROUPS = 20, EACH = 5 };
    rb_buf line = RB_BUF_INIT;
    rb_buf_adds(&line, "PUSHB [");
    for (int i = 0; i < BIG; i++)
        rb_buf_printf(&line,
                      "%s{\"jid\":\"big-%05d\",\"jobtype\":\"T\",\"queue\":\"kq\","
                      "\"args\":[],\"custom\":{\"group\":\"backlog\"}}",
                      i ? "," : "", i);
    rb_buf_addc(&line, ']');
    char *r = rbh_cmd(C, "%s", rb_buf_str(&line));
    cr_assert(r && !strcmp(r, "{}"), "PUSHB answered '%.200s'", r ? r : "(closed)");
    free(r);
    rb_buf_release(&line);
    for (int g = 0; g < GROUPS; g++)
        for (int i = 0; i < EACH; i++) {
            char jid[32], name[32];
            snprintf(jid, sizeof jid, "small-%02d-%d", g, i);
            snprintf(name, sizeof name, "tenant-%02d", g);
            push("kq", jid, name, 5);
        }
    char order[8192];
    fetch_order("kq", 30, order, sizeof order);
    int small = 0;
    for (const char *p = order; (p = strstr(p, "small-")); p++)
        small++;
    rbh_close(C);
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "restart failed (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
    int last_small = -1;
    for (int f = 0; f < 200 && small < GROUPS * EACH; f++) {
        char *jid = rbh_fetch_jid(C, "kq");
        cr_assert_not_null(jid);
        if (strstr(jid, "small-")) {
            small++;
            last_small = f;
        }
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        free(jid);
    }
    cr_assert_eq(small, GROUPS * EACH);
    cr_assert_lt(last_small, (GROUPS + 1) * EACH, "the last small job came at fetch %d after "
                                                  "the restart", last_small + 1);
}

/* Ungrouped jobs are one group of the rotation; groups take turns in the
 * order they became ready, and a group emptied and refilled waits at the
 * back. */
SERVER_TEST(ungrouped_jobs_are_one_group_in_turn)
{
    push("rr", "none-1", NULL, 5);
    push("rr", "none-2", NULL, 5);
    push("rr", "none-3", NULL, 5);
    push("rr", "a-1", "a", 5);
    push("rr", "a-2", "a", 5);
    push("rr", "b-1", "b", 5);
    char order[512];
    fetch_order("rr", 6, order, sizeof order);
    cr_assert_str_eq(order, "none-1,a-1,b-1,none-2,a-2,none-3");
    /* a queue whose jobs name no group is FIFO by priority, as before */
    push("plain", "p-1", NULL, 5);
    push("plain", "p-2", NULL, 9);
    push("plain", "p-3", NULL, 5);
    fetch_order("plain", 3, order, sizeof order);
    cr_assert_str_eq(order, "p-2,p-1,p-3");
}

/* More FETCHes waiting than groups have jobs: four FETCHes parked, then
 * one PUSHB of four jobs in each of two groups; the claim goes round the
 * two groups twice (one job per group per pass), so each FETCH gets a job
 * and each group gives two. Then a group emptied and found empty by a
 * claim (PostgreSQL: marked idle) is refilled by a push while a FETCH
 * waits: that FETCH gets the job (no lost wakeup). */
SERVER_TEST(more_fetches_than_groups_and_a_refilled_group)
{
    rbh_conn *w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = rbh_connect(&S, NULL);
        cr_assert_not_null(w[i]);
        cr_assert(rbh_send_parked(&S, w[i], "FETCH mf\r\n"), "FETCH %d is not waiting", i);
    }
    rb_buf line = RB_BUF_INIT;
    rb_buf_adds(&line, "PUSHB [");
    for (int i = 0; i < 8; i++)
        rb_buf_printf(&line,
                      "%s{\"jid\":\"" PREFIX "%c-%d\",\"jobtype\":\"T\",\"queue\":\"mf\","
                      "\"args\":[],\"custom\":{\"group\":\"%c\"}}",
                      i ? "," : "", i < 4 ? 'a' : 'b', i % 4 + 1, i < 4 ? 'a' : 'b');
    rb_buf_addc(&line, ']');
    char *r = rbh_cmd(C, "%s", rb_buf_str(&line));
    cr_assert(r && !strcmp(r, "{}"), "PUSHB answered '%s'", r ? r : "(closed)");
    free(r);
    rb_buf_release(&line);
    int from[2] = {0, 0};
    for (int i = 0; i < 4; i++) {
        json_t *j = rbh_json(rbh_reply(w[i]));
        const char *jid = json_string_value(json_object_get(j, "jid"));
        cr_assert_not_null(jid, "waiting FETCH %d got no job", i);
        cr_assert(!strncmp(jid, PREFIX, strlen(PREFIX)));
        char g = jid[strlen(PREFIX)];
        cr_assert(g == 'a' || g == 'b', "FETCH %d got '%s'", i, jid);
        from[g - 'a']++;
        cr_assert(rbh_expect(w[i], "+OK", "ACK {\"jid\":\"%s\"}", jid));
        json_decref(j);
    }
    cr_assert_eq(from[0], 2, "group a gave %d of the 4 jobs", from[0]);
    cr_assert_eq(from[1], 2, "group b gave %d of the 4 jobs", from[1]);
    char order[512];
    fetch_order("mf", 4, order, sizeof order); /* the rest; a and b now empty */
    /* a FETCH finds both groups empty and waits; a push refills a */
    cr_assert(rbh_send_parked(&S, w[0], "FETCH mf\r\n"));
    push("mf", "a-5", "a", 5);
    json_t *j = rbh_json(rbh_reply(w[0]));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), PREFIX "a-5",
                     "the waiting FETCH did not get the refilled group's job");
    json_decref(j);
    for (int i = 0; i < 4; i++)
        rbh_close(w[i]);
}

/* Priority orders jobs inside a group only: a priority-9 job does not jump
 * ahead of another group's turn (docs/configuration.md "Groups"). */
SERVER_TEST(priority_orders_inside_a_group_only)
{
    push("pq", "b-low", "b", 5);
    push("pq", "a-low", "a", 5);
    push("pq", "a-high", "a", 9);
    push("pq", "b-high", "b", 9);
    char order[512];
    fetch_order("pq", 4, order, sizeof order);
#ifdef RBH_PG /* by name */
    cr_assert_str_eq(order, "a-high,b-high,a-low,b-low");
#else /* in the order the groups became ready */
    cr_assert_str_eq(order, "b-high,a-high,b-low,a-low");
#endif
}

/* JOBS lists a queue's enqueued jobs by group (the ungrouped ones first,
 * then by name), then priority, then FIFO. */
SERVER_TEST(enqueued_listing_is_by_group)
{
    push("lq", "z-1", "zeta", 5);
    push("lq", "n-1", NULL, 5);
    push("lq", "a-1", "alpha", 5);
    push("lq", "z-2", "zeta", 9);
    push("lq", "a-2", "alpha", 5);
    json_t *v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"queue\":\"lq\"}"));
    char got[512] = "";
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(v, "jobs"), i, e) {
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%s%s", i ? "," : "",
                 json_string_value(rbh_get(e, "job.jid")) + strlen(PREFIX));
    }
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 5);
    json_decref(v);
    cr_assert_str_eq(got, "n-1,a-1,a-2,z-2,z-1");
    /* the group filter, in one queue and in all of them, and for working jobs */
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"queue\":\"lq\",\"group\":\"zeta\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 2);
    cr_assert_str_eq(json_string_value(rbh_get(v, "jobs.0.job.jid")), PREFIX "z-2");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"group\":\"alpha\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 2);
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"group\":\"nobody\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 0);
    json_decref(v);
#ifdef RBH_PG /* by name: the ungrouped jobs (""), alpha, then zeta's highest priority */
    static const char *const want[] = {PREFIX "n-1", PREFIX "a-1", PREFIX "z-2"};
    for (int k = 0; k < 3; k++) {
        char *jid = rbh_fetch_jid(C, "lq");
        cr_assert_str_eq(jid, want[k]);
        free(jid);
    }
#else
    char *jid = rbh_fetch_jid(C, "lq"); /* zeta was ready first: its highest priority */
    cr_assert_str_eq(jid, PREFIX "z-2");
    free(jid);
    jid = rbh_fetch_jid(C, "lq"); /* then the ungrouped jobs' turn */
    cr_assert_str_eq(jid, PREFIX "n-1");
    free(jid);
#endif
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"working\",\"group\":\"zeta\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 1);
    json_decref(v);
}

/* The group is stored with the job: after a clean restart and after kill
 * -9, the jobs still take turns by group (the turn order restarts from the
 * groups' oldest ready jobs). */
SERVER_TEST(groups_survive_restart_and_kill)
{
    for (int i = 1; i <= 3; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "x-%d", i);
        push("dq", jid, "x", 5);
    }
    push("dq", "y-1", "y", 5);
    push("dq", "y-2", "y", 5);
    push("dq", "y-3", "y", 5);
    for (int round = 0; round < 2; round++) {
        rbh_close(C);
        if (round == 0)
            cr_assert_eq(rbh_kill(&S, SIGTERM), 0);
        else
            rbh_kill(&S, SIGKILL);
        cr_assert_eq(rbh_launch(&S, NULL), 0, "restart %d failed (see %s)", round, S.log);
        C = rbh_connect(&S, "w0");
        cr_assert_not_null(C);
        char order[256], want[256];
        fetch_order("dq", 2, order, sizeof order);
        snprintf(want, sizeof want, "x-%d,y-%d", round + 1, round + 1);
        cr_assert_str_eq(order, want, "after %s", round ? "kill -9" : "a restart");
    }
    char order[256];
    fetch_order("dq", 2, order, sizeof order);
    cr_assert_str_eq(order, "x-3,y-3");
}

#ifndef RBH_PG /* rebound export/import of a SQLite file (PostgreSQL: rb_jobs.grp is set
                 from the job's text by a trigger, test_pg_engine) */
/* Runs `rebound ARGS...` in dir, its output into dir/out and dir/err; its
 * exit status. */
static int run_cli(const char *dir, const char *const *args)
{
    const char *argv[16] = {rbh_bin()};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Jobs brought in by `rebound import` (rows written without the group
 * column) take their turns by custom.group once a server loads them: the
 * group is read from the job's text. */
SERVER_TEST(imported_jobs_keep_their_groups)
{
    for (int i = 1; i <= 2; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "x-%d", i);
        push("iq", jid, "x", 5);
    }
    push("iq", "y-1", "y", 5);
    push("iq", "y-2", "y", 5);
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_kill(&S, SIGTERM), 0);
    char file[600];
    snprintf(file, sizeof file, "%s/jobs.jsonl", S.dir);
    const char *exp[] = {"export", "--db", S.db, "--output", file, NULL};
    cr_assert_eq(run_cli(S.dir, exp), 0, "export failed (see %s/err)", S.dir);
    rbh_server s2;
    rbh_init(&s2);
    const char *imp[] = {"import", "--db", s2.db, file, NULL};
    cr_assert_eq(run_cli(s2.dir, imp), 0, "import failed (see %s/err)", s2.dir);
    cr_assert_eq(rbh_launch(&s2, NULL), 0, "the imported copy did not start (see %s)", s2.log);
    rbh_conn *c2 = rbh_connect(&s2, "w0");
    cr_assert_not_null(c2);
    rbh_conn *keep = C;
    C = c2;
    char order[256];
    fetch_order("iq", 4, order, sizeof order);
    C = keep;
    cr_assert_str_eq(order, "x-1,y-1,x-2,y-2");
    rbh_close(c2);
    cr_assert_eq(rbh_stop(&s2), 0);
    cr_assert_eq(rbh_launch(&S, NULL), 0); /* for the suite's clean stop */
}
#endif
