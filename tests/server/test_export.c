/* `rebound export` and `rebound import` (engine/export.h,
 * docs/operations.md "Moving from a single node to distributed mode"): a
 * job in every state on a single node, exported, imported into
 * PostgreSQL, a node started there and every job compared through JOB;
 * the import run twice, a conflicting line, bad input, and the way back
 * from PostgreSQL to a new SQLite file; workflows (a child waiting on a
 * pending parent, one waiting on a second parent after its first
 * succeeded, one blocked by its dead parent) and batches (an open one with a member, a committed one with
 * its callback pending) carried both ways and still working: the child
 * released when its parent is ACKed, the callback enqueued when the last
 * member is. The binary comes from
 * $REBOUND_BIN; PostgreSQL is a throwaway cluster (pg_harness.h). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <libpq-fe.h>

#include "common/timeutil.h"
#include "harness.h"
#include "pg_harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!rbpg_suite_init())
        fprintf(stderr, "test_export: cannot start the shared PostgreSQL cluster\n");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    rbpg_suite_free();
}

/* Runs the binary with args (NULL-terminated), stdout and stderr into
 * dir/out and dir/err; returns the exit status (-1 when it did not exit). */
static int run(const char *dir, const char *const *args)
{
    char out[400], errf[400];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errf, sizeof errf, "%s/err", dir);
    const char *argv[24];
    int n = 0;
    argv[n++] = rbh_bin();
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    /* the sanitized build's report (a leak, a bad access) fails the test */
    FILE *f = fopen(errf, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        cr_assert(!strstr(line, "Sanitizer") && !strstr(line, "runtime error:"),
                  "rebound %s: %s", args[0], line);
    if (f)
        fclose(f);
    return WEXITSTATUS(st);
}

/* The contents of dir/name (caller frees; "" when unreadable). */
static char *slurp(const char *dir, const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(m);
    fclose(f);
    return buf;
}

static bool contains(const char *dir, const char *name, const char *text)
{
    char *s = slurp(dir, name);
    bool ok = strstr(s, text) != NULL;
    if (!ok)
        fprintf(stderr, "expected '%s' in %s/%s:\n%s\n", text, dir, name, s);
    free(s);
    return ok;
}

/* A new schema in the shared cluster, migrated by the binary; its url in out. */
static void pg_schema(const char *dir, char *out, size_t n)
{
    char base[600], name[64], sql[128];
    rbpg_schema_name(name, sizeof name, "x");
    cr_assert(rbpg_shared_url(base, sizeof base) && rbpg_schema_url(out, n, name, ""),
              "no PostgreSQL cluster");
    PGconn *pc = PQconnectdb(base);
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", name);
    PGresult *r = PQstatus(pc) == CONNECTION_OK ? PQexec(pc, sql) : NULL;
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    PQfinish(pc);
    cr_assert(ok, "cannot create schema %s", name);
    const char *args[] = {"migrate", "--url", out, NULL};
    cr_assert_eq(run(dir, args), 0, "rebound migrate failed");
}

#define NJOBS 13
/* The jobs made on the single node, by jid. */
static const char *const jids[NJOBS] = {
    "exp-scheduled", "exp-enqueued", "exp-retry", "exp-dead",  "exp-working", "exp-unique",
    "exp-waiting",   "wf-parent1",    "wf-child1", "b-open-member", "b-done-m2",
    "wf-doomed",     "wf-blocked",
};
/* The batches (their bids, from BATCH NEW). */
static char *bid_open, *bid_done;

static void push(rbh_conn *c, const char *job)
{
    cr_assert(rbh_expect(c, "+OK", "PUSH %s", job));
}

/* FETCHes the one job of queue q and returns its jid's reply check. */
static void fetch(rbh_conn *c, const char *q, const char *jid)
{
    json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", q));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jid);
    json_decref(j);
}

/* A job in every state, one ACKed and one failed for the counters. */
static void make_jobs(rbh_conn *c)
{
    push(c, "{\"jid\":\"exp-scheduled\",\"jobtype\":\"later\",\"args\":[1],\"queue\":\"qs\","
            "\"at\":\"2099-01-01T00:00:00Z\"}");
    push(c, "{\"jid\":\"exp-enqueued\",\"jobtype\":\"now\",\"args\":[\"a\",{\"b\":2}],"
            "\"queue\":\"qe\",\"priority\":7,\"custom\":{\"k\":\"v\"}}");
    push(c, "{\"jid\":\"exp-retry\",\"jobtype\":\"flaky\",\"args\":[],\"queue\":\"qr\","
            "\"retry_policy\":\"ftl:5 1h\"}");
    push(c, "{\"jid\":\"exp-dead\",\"jobtype\":\"doomed\",\"args\":[],\"queue\":\"qd\","
            "\"retry\":-1}");
    push(c, "{\"jid\":\"exp-working\",\"jobtype\":\"slow\",\"args\":[],\"queue\":\"qw\","
            "\"reserve_for\":3600}");
    push(c, "{\"jid\":\"exp-unique\",\"jobtype\":\"once\",\"args\":[],\"queue\":\"qu\","
            "\"custom\":{\"unique_for\":3600}}");
    push(c, "{\"jid\":\"exp-waiting\",\"jobtype\":\"child\",\"args\":[],\"queue\":\"qe\","
            "\"custom\":{\"depends_on\":[\"exp-scheduled\"]}}");
    push(c, "{\"jid\":\"exp-acked\",\"jobtype\":\"ok\",\"args\":[],\"queue\":\"qa\"}");
    fetch(c, "qa", "exp-acked");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"exp-acked\"}"));
    fetch(c, "qr", "exp-retry");
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"exp-retry\",\"errtype\":\"Boom\","
                                   "\"message\":\"first\"}"));
    fetch(c, "qd", "exp-dead");
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"exp-dead\",\"errtype\":\"Fatal\","
                                   "\"message\":\"gone\",\"backtrace\":[\"a.rb:1\"]}"));
    fetch(c, "qw", "exp-working");
    cr_assert(rbh_expect(c, "+OK", "QUEUE PAUSE qs"));
    /* a workflow: wf-child1 waits on wf-parent1 and wf-parent2; wf-parent2 succeeds */
    push(c, "{\"jid\":\"wf-parent1\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"wq1\"}");
    push(c, "{\"jid\":\"wf-parent2\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"wq2\"}");
    push(c, "{\"jid\":\"wf-child1\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"wqc\","
            "\"custom\":{\"depends_on\":[\"wf-parent1\",\"wf-parent2\"],\"on_dep_failure\":\"cancel\"}}");
    fetch(c, "wq2", "wf-parent2");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"wf-parent2\"}"));
    /* a child blocked by its dead parent */
    push(c, "{\"jid\":\"wf-doomed\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"wqd\","
            "\"retry\":-1}");
    push(c, "{\"jid\":\"wf-blocked\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"wqc\","
            "\"custom\":{\"depends_on\":[\"wf-doomed\"]}}");
    fetch(c, "wqd", "wf-doomed");
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"wf-doomed\",\"errtype\":\"Fatal\","
                                   "\"message\":\"gone\"}"));
    /* an open batch with a member; a committed one with one member left */
    bid_open = rbh_cmd(c, "BATCH NEW {\"description\":\"open\",\"success\":{\"jid\":"
                          "\"b-open-cb\",\"jobtype\":\"cb\",\"args\":[],\"queue\":\"bcb\"}}");
    cr_assert(bid_open && !strncmp(bid_open, "b-", 2), "BATCH NEW: %s", bid_open);
    cr_assert(rbh_expect(c, "+OK",
                         "PUSH {\"jid\":\"b-open-member\",\"jobtype\":\"m\",\"args\":[],"
                         "\"queue\":\"bq1\",\"custom\":{\"bid\":\"%s\"}}", bid_open));
    bid_done = rbh_cmd(c, "BATCH NEW {\"complete\":{\"jid\":\"b-done-cb\",\"jobtype\":\"cb\",\"args\":[],"
                          "\"queue\":\"bcb\"}}");
    cr_assert(bid_done && !strncmp(bid_done, "b-", 2), "BATCH NEW: %s", bid_done);
    cr_assert(rbh_expect(c, "+OK",
                         "PUSH {\"jid\":\"b-done-m1\",\"jobtype\":\"m\",\"args\":[],"
                         "\"queue\":\"bq2\",\"custom\":{\"bid\":\"%s\"}}", bid_done));
    cr_assert(rbh_expect(c, "+OK",
                         "PUSH {\"jid\":\"b-done-m2\",\"jobtype\":\"m\",\"args\":[],"
                         "\"queue\":\"bq3\",\"custom\":{\"bid\":\"%s\"}}", bid_done));
    cr_assert(rbh_expect(c, "+OK", "BATCH COMMIT %s", bid_done));
    fetch(c, "bq2", "b-done-m1");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"b-done-m1\"}"));
    static const char *const want[NJOBS] = {"scheduled", "enqueued", "retries", "dead",
                                            "working",   "enqueued", "waiting", "enqueued",
                                            "waiting",   "enqueued", "enqueued", "dead",
                                            "blocked"};
    for (int i = 0; i < NJOBS; i++) {
        char *st = rbh_job_state(c, jids[i]);
        cr_assert_str_eq(st, want[i], "%s", jids[i]);
        free(st);
    }
}

/* Every job's JOB reply, by jid (NULL where there is none). */
static void read_jobs(rbh_conn *c, json_t **out)
{
    for (int i = 0; i < NJOBS; i++)
        out[i] = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jids[i]));
}

/* INFO's paused queues as one string ("qs"). */
static bool paused_is(rbh_conn *c, const char *want)
{
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    json_t *p = rbh_get(v, "rebound.paused_queues");
    bool ok = json_array_size(p) == 1 && !strcmp(json_string_value(json_array_get(p, 0)), want);
    json_decref(v);
    return ok;
}

/* enqueued_at differs by design between the modes: a single node keeps
 * its microseconds, distributed mode milliseconds (docs/protocol.md). The
 * job v with its enqueued_at cut to the millisecond (a new reference). */
static json_t *enqueued_to_ms(json_t *v)
{
    json_t *c = json_deep_copy(v);
    json_t *job = json_object_get(c, "job");
    const char *ea = json_string_value(json_object_get(job, "enqueued_at"));
    int64_t ms;
    if (ea && !rb_time_parse_rfc3339(ea, &ms)) {
        char ts[RB_TIME_STRLEN];
        json_object_set_new(job, "enqueued_at", json_string(rb_time_format(ms, ts)));
    }
    return c;
}

/* Every job compares equal, field by field (state, attempts, next run
 * time, the job, its history, its lease, the parents it waits for). */
static void compare_jobs(json_t **before, json_t **after, const char *what)
{
    for (int i = 0; i < NJOBS; i++) {
        cr_assert(json_is_object(before[i]) && json_is_object(after[i]), "%s: %s missing", what,
                  jids[i]);
        const char *k;
        json_t *v;
        json_t *bi = enqueued_to_ms(before[i]), *ai = enqueued_to_ms(after[i]);
        json_object_foreach(bi, k, v) {
            json_t *w = json_object_get(ai, k);
            if (!json_equal(v, w)) {
                char *a = json_dumps(v, JSON_ENCODE_ANY), *b = json_dumps(w, JSON_ENCODE_ANY);
                cr_assert_fail("%s: %s's %s differs: before %s, after %s", what, jids[i], k, a,
                               b ? b : "(none)");
            }
        }
        cr_assert_eq(json_object_size(before[i]), json_object_size(after[i]),
                     "%s: %s has other fields", what, jids[i]);
        json_decref(bi);
        json_decref(ai);
    }
    json_t *w = json_object_get(before[4], "reserved_until");
    cr_assert(json_is_string(w), "the working job has its lease");
}

static int64_t status_int(json_t *v, const char *key)
{
    return json_integer_value(json_object_get(v, key));
}

/* On a node after an import: the batches as they were (the open one with
 * its member pending, the committed one waiting for its last member),
 * then the child released by its last parent's ACK and the committed
 * batch's callback enqueued by its last member's. */
static void graph_works(rbh_conn *c, const char *what)
{
    json_t *v = rbh_json(rbh_cmd(c, "BATCH STATUS %s", bid_open));
    cr_assert(json_is_object(v), "%s: the open batch is missing", what);
    cr_assert(status_int(v, "total") == 1 && status_int(v, "pending") == 1,
              "%s: the open batch's counts", what);
    cr_assert_str_eq(json_string_value(json_object_get(v, "description")), "open");
    json_decref(v);
    v = rbh_json(rbh_cmd(c, "BATCH STATUS %s", bid_done));
    cr_assert(json_is_object(v), "%s: the committed batch is missing", what);
    cr_assert(status_int(v, "total") == 2 && status_int(v, "pending") == 1,
              "%s: the committed batch's counts", what);
    cr_assert_str_eq(json_string_value(json_object_get(v, "complete_st")), "", "%s", what);
    json_decref(v);
    cr_assert_null(rbh_job_state(c, "b-done-cb"), "%s: the callback ran early", what);
    fetch(c, "wq1", "wf-parent1");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"wf-parent1\"}"));
    char *st = rbh_job_state(c, "wf-child1");
    cr_assert_str_eq(st, "enqueued", "%s: the child is released by its last parent", what);
    free(st);
    st = rbh_job_state(c, "exp-waiting");
    cr_assert_str_eq(st, "waiting", "%s: the other child still waits", what);
    free(st);
    st = rbh_job_state(c, "wf-blocked");
    cr_assert_str_eq(st, "blocked", "%s: the blocked child stays blocked", what);
    free(st);
    fetch(c, "bq3", "b-done-m2");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"b-done-m2\"}"));
    st = rbh_job_state(c, "b-done-cb");
    cr_assert_str_eq(st ? st : "(none)", "enqueued", "%s: the batch's callback fires", what);
    free(st);
    v = rbh_json(rbh_cmd(c, "BATCH STATUS %s", bid_done));
    cr_assert_str_eq(json_string_value(json_object_get(v, "complete_st")), "1", "%s", what);
    json_decref(v);
}

static void free_jobs(json_t **v)
{
    for (int i = 0; i < NJOBS; i++)
        json_decref(v[i]);
}

/* A file in dir with text; its path in out. */
static void write_file(const char *dir, const char *name, const char *text, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", dir, name);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(export, single_node_to_postgresql_and_back, .timeout = 240)
{
    /* a job in every state on a single node */
    rbh_server s;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&s, "exp-worker");
    cr_assert_not_null(c);
    make_jobs(c);
    json_t *before[NJOBS];
    read_jobs(c, before);
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), 3);
    cr_assert_eq(rbh_info_int(c, "faktory.total_failures"), 3);

    /* export refuses while the server runs (it holds the file) */
    char file[400];
    snprintf(file, sizeof file, "%s/jobs.jsonl", s.dir);
    const char *exp_args[] = {"export", "--db", s.db, "--output", file, NULL};
    cr_assert_eq(run(s.dir, exp_args), 1);
    cr_assert(contains(s.dir, "err", "stop it first"));
    rbh_close(c);
    cr_assert_eq(rbh_kill(&s, SIGTERM), 0);

    /* offline: every job, in all states, and the counters */
    cr_assert_eq(run(s.dir, exp_args), 0);
    cr_assert(contains(s.dir, "err", "exported 13 jobs (scheduled 1, enqueued 5, working 1,"
                                     " retries 1, dead 2, waiting 2, blocked 1), 3 dependency"
                                     " lines, 1 succeeded records, 2 batches, 1 paused queues"));
    cr_assert(contains(s.dir, "err", "processed 3, failures 3"));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"format\":\"rebound-export\",\"version\":1,"));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"type\":\"dep\",\"child\":\"wf-child1\","
                                            "\"mode\":\"cancel\",\"parents\":[\"wf-parent1\"],"
                                            "\"remaining\":1,\"dead\":0}"));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"type\":\"done\",\"jid\":\"wf-parent2\","));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"type\":\"dep\",\"child\":\"wf-blocked\","
                                            "\"mode\":\"block\",\"parents\":[\"wf-doomed\"],"
                                            "\"remaining\":1,\"dead\":1}"));
    cr_assert(contains(s.dir, "jobs.jsonl", "\"type\":\"end\",\"jobs\":13}"));

    /* into PostgreSQL */
    char url[1024];
    pg_schema(s.dir, url, sizeof url);
    const char *imp_args[] = {"import", "--db", url, file, NULL};
    cr_assert_eq(run(s.dir, imp_args), 0);
    cr_assert(contains(s.dir, "out", "imported 13 of 13 jobs into postgresql"));
    cr_assert(contains(s.dir, "out", "(scheduled 1, enqueued 5, working 1, retries 1, dead 2,"
                                     " waiting 2, blocked 1)"));
    cr_assert(contains(s.dir, "out", "skipped 0 jobs identical"));
    cr_assert(contains(s.dir, "out", "workflows and batches: 3 dependency lines, 1 succeeded"
                                     " records, 2 batches imported; 0 identical skipped"));
    cr_assert(contains(s.dir, "out", "counters (processed 3, failures 3): set"));
    cr_assert(contains(s.dir, "out", "paused queues: 1 paused, 0 already paused"));
    cr_assert(contains(s.dir, "out", "note: 1 imported jobs name custom.unique_for"));
    char *o = slurp(s.dir, "out");
    cr_assert(!strstr(o, "not carried:"), "a job left out:\n%s", o);
    free(o);

    /* again: nothing changes, every job, record and batch skipped as identical */
    cr_assert_eq(run(s.dir, imp_args), 0);
    cr_assert(contains(s.dir, "out", "imported 0 of 13 jobs"));
    cr_assert(contains(s.dir, "out", "skipped 13 jobs identical to the stored ones"));
    cr_assert(contains(s.dir, "out", "0 batches imported; 3 identical skipped"));
    cr_assert(contains(s.dir, "out", "counters (processed 3, failures 3): identical, unchanged"));
    cr_assert(contains(s.dir, "out", "paused queues: 0 paused, 1 already paused"));

    /* a PostgreSQL node: every job as it was */
    rbh_server p;
    rbh_init(&p);
    snprintf(p.db, sizeof p.db, "%s", url);
    cr_assert_eq(rbh_launch(&p, NULL), 0, "the PostgreSQL node did not start (%s)", p.log);
    rbh_conn *pc = rbh_connect(&p, "exp-worker");
    cr_assert_not_null(pc);
    json_t *after[NJOBS];
    read_jobs(pc, after);
    compare_jobs(before, after, "sqlite -> postgresql");
    free_jobs(after);
    cr_assert(paused_is(pc, "qs"), "the paused queue is carried");
    cr_assert_eq(rbh_info_int(pc, "faktory.total_processed"), 3);
    cr_assert_eq(rbh_info_int(pc, "faktory.total_failures"), 3);

    /* a conflicting line: refused, reported, nothing changed */
    char bad[600];
    write_file(p.dir, "conflict.jsonl",
               "{\"format\":\"rebound-export\",\"version\":1}\n"
               "{\"type\":\"job\",\"jid\":\"exp-retry\",\"state\":\"dead\",\"queue\":\"qr\","
               "\"priority\":5,\"due_ms\":1,\"first_ms\":1,\"attempts\":9,\"reserve_for\":1800,"
               "\"wid\":null,\"history\":null,\"job\":{\"jid\":\"exp-retry\",\"jobtype\":\"x\"}}\n"
               "{\"type\":\"job\",\"jid\":\"exp-new-one\",\"state\":\"scheduled\",\"queue\":\"qn\","
               "\"priority\":5,\"due_ms\":4070908800000,\"first_ms\":0,\"attempts\":0,"
               "\"reserve_for\":1800,\"wid\":null,\"history\":null,"
               "\"job\":{\"jid\":\"exp-new-one\",\"jobtype\":\"x\",\"args\":[]}}\n"
               "{\"type\":\"counters\",\"processed\":3,\"failures\":3}\n"
               "{\"type\":\"end\",\"jobs\":2}\n",
               bad, sizeof bad);
    const char *conflict_args[] = {"import", "--db", url, bad, NULL};
    cr_assert_eq(run(p.dir, conflict_args), 1);
    cr_assert(contains(p.dir, "err", "refused 1 conflicting jobs"));
    cr_assert(contains(p.dir, "err", "jid exp-retry: state: stored retries, file dead;"
                                     " attempts: stored 1, file 9;"));
    cr_assert(contains(p.dir, "err", "job differs"));
    cr_assert(contains(p.dir, "out", "imported 1 of 2 jobs"));
    read_jobs(pc, after);
    compare_jobs(before, after, "after the conflict");
    free_jobs(after);
    char *st = rbh_job_state(pc, "exp-new-one");
    cr_assert_str_eq(st, "scheduled", "the line without a conflict is imported");
    free(st);

    /* bad input: the line named, nothing changed */
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"format\":\"rebound-export\",\"version\":1}\n"
         "{\"type\":\"counters\",\"processed\":0,\"failures\":0}\n{not json\n",
         ":3: not JSON"},
        {"{\"format\":\"rebound-export\",\"version\":1}\n"
         "{\"type\":\"job\",\"jid\":\"exp-bad\",\"state\":\"scheduled\",\"queue\":\"q\","
         "\"priority\":\"high\",\"due_ms\":1,\"first_ms\":0,\"attempts\":0,\"reserve_for\":1,"
         "\"wid\":null,\"history\":null,\"job\":{\"jid\":\"exp-bad\"}}\n",
         ":2: field 'priority' must be an integer"},
        {"{\"format\":\"rebound-export\",\"version\":1}\n"
         "{\"type\":\"job\",\"jid\":\"exp-bad\",\"state\":\"sleeping\",\"queue\":\"q\","
         "\"priority\":5,\"due_ms\":1,\"first_ms\":0,\"attempts\":0,\"reserve_for\":1,"
         "\"wid\":null,\"history\":null,\"job\":{\"jid\":\"exp-bad\"}}\n",
         ":2: field 'state' is 'sleeping'"},
        {"{\"format\":\"rebound-export\",\"version\":99}\n", ":1: export format version 99 is not"
                                                            " supported"},
        {"{\"format\":\"rebound-export\",\"version\":1}\n"
         "{\"type\":\"job\",\"jid\":\"exp-bad\",\"state\":\"scheduled\",\"queue\":\"q\","
         "\"priority\":5,\"due_ms\":1,\"first_ms\":0,\"attempts\":0,\"reserve_for\":1,"
         "\"wid\":null,\"history\":null,\"job\":{\"jid\":\"exp-bad\"}}\n",
         "the file ends without its end line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(p.dir, "bad.jsonl", cases[i].text, bad, sizeof bad);
        const char *bad_args[] = {"import", "--db", url, bad, NULL};
        cr_assert_eq(run(p.dir, bad_args), 2, "case %zu", i);
        cr_assert(contains(p.dir, "err", cases[i].want), "case %zu", i);
        cr_assert(contains(p.dir, "err", "nothing imported"), "case %zu", i);
        char *gone = rbh_job_state(pc, "exp-bad");
        cr_assert_null(gone, "case %zu imported a job", i);
    }

    /* the way back: PostgreSQL -> a new SQLite file -> a single node */
    char back[400], backdb[400];
    snprintf(back, sizeof back, "%s/back.jsonl", s.dir);
    snprintf(backdb, sizeof backdb, "%s/back.db", p.dir);
    const char *exp2[] = {"export", "--db", url, "--output", back, NULL};
    cr_assert_eq(run(p.dir, exp2), 0);
    cr_assert(contains(p.dir, "err", "exported 14 jobs"));
    cr_assert(contains(p.dir, "err", "3 dependency lines, 1 succeeded records, 2 batches"));
    /* the workflow and the batches work in distributed mode */
    graph_works(pc, "postgresql");
    rbh_close(pc);
    cr_assert_eq(rbh_stop(&p), 0);
    rbh_server s2;
    rbh_init(&s2);
    const char *imp2[] = {"import", "--db", s2.db, back, NULL};
    cr_assert_eq(run(s2.dir, imp2), 0);
    cr_assert(contains(s2.dir, "out", "imported 14 of 14 jobs into sqlite"));
    cr_assert(contains(s2.dir, "out", "3 dependency lines, 1 succeeded records, 2 batches"
                                      " imported"));
    cr_assert_eq(run(s2.dir, imp2), 0);
    cr_assert(contains(s2.dir, "out", "skipped 14 jobs identical"));
    cr_assert(contains(s2.dir, "out", "0 batches imported; 3 identical skipped"));
    cr_assert_eq(rbh_launch(&s2, NULL), 0);
    c = rbh_connect(&s2, "exp-worker");
    cr_assert_not_null(c);
    read_jobs(c, after);
    compare_jobs(before, after, "postgresql -> sqlite");
    free_jobs(after);
    cr_assert(paused_is(c, "qs"), "the paused queue is carried back");
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), 3);
    cr_assert_eq(rbh_info_int(c, "faktory.total_failures"), 3);
    /* the imported working job is held until its lease ends, then retried
     * as after a crash: here its holder still ACKs it */
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"exp-working\"}"));
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), 4);
    graph_works(c, "back on sqlite");
    rbh_close(c);
    free_jobs(before);
    free(bid_open);
    free(bid_done);
    cr_assert_eq(rbh_stop(&s2), 0);
    cr_assert_eq(rbh_stop(&s), 0);
}

/* A debounced push of jid on key (jobtype "D", queue "dq"), for seconds. */
static void push_debounced(rbh_conn *c, const char *jid, const char *key, int arg, double for_s)
{
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"D\",\"queue\":\"dq\","
                                   "\"args\":[%d],\"custom\":{\"debounce\":{\"key\":\"%s\","
                                   "\"for\":%g}}}",
                         jid, arg, key, for_s));
}

/* On a node after an import: the pending job still holds its key (a push
 * merges into it, the merges counted on), the aliases answer JOB. */
static void debounce_works(rbh_conn *c, const char *next, int merged, const char *what)
{
    cr_assert_eq(rbh_info_int(c, "rebound.debounce.pending"), 1, "%s: pending keys", what);
    json_t *v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"dx-00002\"}"));
    cr_assert_str_eq(json_string_value(json_object_get(v, "debounced_into")), "dx-00001",
                     "%s: an alias of the pending job", what);
    json_decref(v);
    v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"dy-00002\"}"));
    cr_assert_str_eq(json_string_value(json_object_get(v, "debounced_into")), "dy-00001",
                     "%s: an alias of the fetched job", what);
    json_decref(v);
    push_debounced(c, next, "dk", merged, 3600);
    v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"dx-00001\"}"));
    cr_assert_eq(json_integer_value(rbh_get(v, "debounce.merged")), merged, "%s: merged", what);
    cr_assert_eq(json_integer_value(rbh_get(v, "job.args.0")), merged, "%s: the last args", what);
    json_decref(v);
}

/* Debounced jobs (docs/flow-control.md) both ways: the pending job's key
 * (a debounce line) and the aliases of stored jobs (debounced lines),
 * pending or fetched, still working after each import. */
Test(export, debounce_state_both_ways, .timeout = 240)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&s, "exp-worker");
    cr_assert_not_null(c);
    push_debounced(c, "dx-00001", "dk", 0, 3600);
    push_debounced(c, "dx-00002", "dk", 1, 3600);
    push_debounced(c, "dx-00003", "dk", 2, 3600);
    push_debounced(c, "dy-00001", "dk2", 0, 0.01);
    push_debounced(c, "dy-00002", "dk2", 1, 0.01);
    cr_assert(rbh_wait_state(c, "dy-00001", "enqueued", 10000));
    fetch(c, "dq", "dy-00001"); /* a working job with an alias, its key free */
    rbh_close(c);
    cr_assert_eq(rbh_kill(&s, SIGTERM), 0);

    char file[400];
    snprintf(file, sizeof file, "%s/jobs.jsonl", s.dir);
    const char *exp_args[] = {"export", "--db", s.db, "--output", file, NULL};
    cr_assert_eq(run(s.dir, exp_args), 0);
    cr_assert(contains(s.dir, "err", "with 1 pending debounce keys and 3 aliases"));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"type\":\"debounce\",\"jid\":\"dx-00001\",\"hash\":"));
    cr_assert(contains(s.dir, "jobs.jsonl", "\"key\":\"dk\",\"first_ms\":"));
    cr_assert(contains(s.dir, "jobs.jsonl", "{\"type\":\"debounced\",\"jid\":\"dy-00002\","
                                            "\"into\":\"dy-00001\",\"key\":\"dk2\",\"merged_ms\":"));

    char url[1024];
    pg_schema(s.dir, url, sizeof url);
    const char *imp_args[] = {"import", "--db", url, file, NULL};
    cr_assert_eq(run(s.dir, imp_args), 0);
    cr_assert(contains(s.dir, "out", "debounced jobs: 1 pending keys, 3 aliases imported"));
    rbh_server p;
    rbh_init(&p);
    snprintf(p.db, sizeof p.db, "%s", url);
    cr_assert_eq(rbh_launch(&p, NULL), 0, "the PostgreSQL node did not start (%s)", p.log);
    rbh_conn *pc = rbh_connect(&p, "exp-worker");
    cr_assert_not_null(pc);
    debounce_works(pc, "dx-00004", 3, "sqlite -> postgresql");
    rbh_close(pc);
    cr_assert_eq(rbh_stop(&p), 0);

    char back[400];
    snprintf(back, sizeof back, "%s/back.jsonl", s.dir);
    const char *exp2[] = {"export", "--db", url, "--output", back, NULL};
    cr_assert_eq(run(s.dir, exp2), 0);
    cr_assert(contains(s.dir, "err", "with 1 pending debounce keys and 4 aliases"));
    rbh_server s2;
    rbh_init(&s2);
    const char *imp2[] = {"import", "--db", s2.db, back, NULL};
    cr_assert_eq(run(s2.dir, imp2), 0);
    cr_assert(contains(s2.dir, "out", "debounced jobs: 1 pending keys, 4 aliases imported"));
    cr_assert_eq(rbh_launch(&s2, NULL), 0);
    c = rbh_connect(&s2, "exp-worker");
    cr_assert_not_null(c);
    debounce_works(c, "dx-00005", 4, "postgresql -> sqlite");
    rbh_close(c);
    cr_assert_eq(rbh_stop(&s2), 0);
    cr_assert_eq(rbh_stop(&s), 0);
}
