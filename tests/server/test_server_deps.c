/* Job dependencies against the real server (issue 15, docs/workflows.md):
 * a diamond in one PUSHB, refused pushes that change nothing, a dead
 * parent with each on_dep_failure mode, requeue and discard from the dead
 * set, recently succeeded parents, restart durability (graceful and
 * kill -9), the policy's clock starting at the release, and the workflow
 * graph (WORKFLOW: states, edges, blocking parents, unknown ones, the cap). */
#include <criterion/criterion.h>
#include <signal.h>

#include "common_helpers.h"

/* engine/workflow.h's RB_WORKFLOW_MAX_NODES, as the server caps a graph */
#define RB_WF_TEST_MAX 2000

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(deps, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define SERVER_TEST(name) RBH_SERVER_TEST(deps, name)

#define OK(...) cr_assert(rbh_expect(C, "+OK", __VA_ARGS__))

static json_t *job_info(const char *jid)
{
    return rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", jid));
}

static void expect_state(const char *jid, const char *want)
{
    char *st = rbh_job_state(C, jid);
    cr_assert(want ? st && !strcmp(st, want) : !st, "job %s is %s, wanted %s", jid,
              st ? st : "gone", want ? want : "gone");
    free(st);
}

static void expect_fetch(const char *queue, const char *want)
{
    json_t *j = rbh_json(rbh_cmd(C, "FETCH %s", queue));
    const char *jid = json_string_value(json_object_get(j, "jid"));
    cr_assert(jid && !strcmp(jid, want), "fetched %s, wanted %s", jid ? jid : "nothing", want);
    json_decref(j);
}

static long long queue_size(const char *q)
{
    char path[128];
    snprintf(path, sizeof path, "faktory.queues.%s", q);
    return rbh_info_int(C, path);
}

static void fetch_ack(const char *queue, const char *jid)
{
    expect_fetch(queue, jid);
    OK("ACK {\"jid\":\"%s\"}", jid);
}

SERVER_TEST(diamond_runs_in_order_and_retries_count_from_release)
{
    cr_assert(rbh_expect(C, "{}",
                         "PUSHB [{\"jid\":\"dia-A000\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"dq\"},"
       "{\"jid\":\"dia-B000\",\"jobtype\":\"b\",\"args\":[],\"queue\":\"dq\","
       "\"custom\":{\"depends_on\":[\"dia-A000\"]}},"
       "{\"jid\":\"dia-C000\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"dq\","
       "\"depends_on\":[\"dia-A000\"]},"
       "{\"jid\":\"dia-D000\",\"jobtype\":\"d\",\"args\":[],\"queue\":\"dq\","
       "\"custom\":{\"depends_on\":[\"dia-B000\",\"dia-C000\"]}}]"));
    cr_assert_eq(queue_size("dq"), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 3);
    json_t *d = job_info("dia-D000");
    cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "waiting");
    cr_assert_eq(json_array_size(json_object_get(d, "waits_for")), 2);
    cr_assert(json_is_null(json_object_get(d, "blocked_by")));
    json_decref(d);
    json_t *l = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"waiting\"}"));
    cr_assert_eq(json_array_size(json_object_get(l, "jobs")) + json_array_size(l), 3,
                 "JOBS waiting lists the three children");
    json_decref(l);

    fetch_ack("dq", "dia-A000");
    cr_assert_eq(queue_size("dq"), 2);
    expect_state("dia-B000", "enqueued");
    expect_state("dia-C000", "enqueued");
    expect_state("dia-D000", "waiting");
    expect_fetch("dq", "dia-B000");
    OK("FAIL {\"jid\":\"dia-B000\",\"errtype\":\"E\",\"message\":\"once\"}");
    expect_state("dia-B000", "retries");
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\",\"filter\":{\"jids\":[\"dia-B000\"]}}");
    fetch_ack("dq", "dia-C000");
    expect_state("dia-D000", "waiting");
    d = job_info("dia-D000");
    cr_assert_str_eq(json_string_value(rbh_get(d, "waits_for.0")), "dia-B000");
    json_decref(d);
    fetch_ack("dq", "dia-B000");
    expect_state("dia-D000", "enqueued");
    d = job_info("dia-D000");
    cr_assert_eq(json_integer_value(json_object_get(d, "attempts")), 0);
    json_decref(d);
    fetch_ack("dq", "dia-D000");
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 4);
}

/* INFO's counts and the named jobs after a refused push. */
static void nothing_changed(const char *const *jids)
{
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 0);
    for (int i = 0; jids[i]; i++)
        cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"%s\"}", jids[i]), "%s exists", jids[i]);
}

SERVER_TEST(refused_pushes_change_nothing)
{
    OK("PUSH {\"jid\":\"ref-root\",\"jobtype\":\"r\",\"args\":[]}");
    const char *none[] = {"ref-x001", "ref-x002", "ref-x003", NULL};
    cr_assert(rbh_expect(C, "-ERR depends_on: unknown job nope-0001",
                         "PUSH {\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"nope-0001\"]}}"));
    nothing_changed(none);
    cr_assert(rbh_expect(C, "-ERR depends_on: unknown job nope-0002",
                         "PUSHB [{\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[]},"
                         "{\"jid\":\"ref-x002\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-x001\",\"nope-0002\"]}}]"));
    nothing_changed(none);
    char *r = rbh_cmd(C, "PUSHB [{\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[]},"
                         "{\"jid\":\"ref-x002\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-x001\",\"ref-x003\"]}},"
                         "{\"jid\":\"ref-x003\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-x002\",\"ref-root\"]}}]");
    cr_assert(r && !strncmp(r, "-ERR depends_on: cycle through ref-x00", 38), "got %s", r);
    free(r);
    nothing_changed(none);
    cr_assert(rbh_expect(C, "-ERR depends_on: cycle through ref-x001",
                         "PUSH {\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-x001\"]}}"));
    const char *bad[] = {"\"ref-root\"", "[\"\"]", "[1]", "{}", NULL};
    for (int i = 0; bad[i]; i++)
        cr_assert(rbh_expect(C,
                             "-ERR job ref-x001: depends_on must be an array of non-empty strings",
                             "PUSH {\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[],"
                             "\"custom\":{\"depends_on\":%s}}", bad[i]), "%s", bad[i]);
    cr_assert(rbh_expect(C,
                         "-ERR job ref-x001: on_dep_failure must be \"block\", \"cancel\" or "
                         "\"ignore\"",
                         "PUSH {\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-root\"],\"on_dep_failure\":\"x\"}}"));
    /* a workflow batch with one bad job is refused whole */
    cr_assert(rbh_expect(C, "-ERR job ref-x003: depends_on must be an array of non-empty strings",
                         "PUSHB [{\"jid\":\"ref-x001\",\"jobtype\":\"x\",\"args\":[]},"
                         "{\"jid\":\"ref-x002\",\"jobtype\":\"x\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"ref-x001\"]}},"
                         "{\"jid\":\"ref-x003\",\"jobtype\":\"x\",\"args\":[],"
                         "\"depends_on\":[7]}]"));
    nothing_changed(none);
    /* too many parents */
    size_t cap = 1100 * 16 + 256;
    char *big = malloc(cap);
    size_t n = (size_t)snprintf(big, cap, "PUSH {\"jid\":\"ref-x001\",\"jobtype\":\"x\","
                                           "\"args\":[],\"depends_on\":[");
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s\"p-%05d\"", i ? "," : "", i);
    snprintf(big + n, cap - n, "]}");
    cr_assert(rbh_expect(C, "-ERR job ref-x001: depends_on must name at most 1000 parents", "%s",
                         big));
    free(big);
    nothing_changed(none);
}

SERVER_TEST(dead_parent_blocks_then_requeue_and_ack_release)
{
    OK("PUSH {\"jid\":\"blk-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"bq\"}");
    OK("PUSH {\"jid\":\"blk-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"bq\","
       "\"custom\":{\"depends_on\":[\"blk-par0\"]}}");
    expect_fetch("bq", "blk-par0");
    OK("FAIL {\"jid\":\"blk-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("blk-par0", "dead");
    expect_state("blk-kid0", "blocked");
    cr_assert_eq(rbh_info_int(C, "rebound.blocked"), 1);
    json_t *k = job_info("blk-kid0");
    cr_assert_str_eq(json_string_value(json_object_get(k, "blocked_by")), "blk-par0");
    json_decref(k);
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"blk-par0\"]}}");
    expect_state("blk-kid0", "waiting");
    fetch_ack("bq", "blk-par0");
    fetch_ack("bq", "blk-kid0");
    cr_assert_eq(rbh_info_int(C, "rebound.blocked"), 0);
}

SERVER_TEST(discarded_dead_parent_kills_the_child_with_reason_dependency)
{
    OK("PUSH {\"jid\":\"dis-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"xq\"}");
    OK("PUSH {\"jid\":\"dis-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"xq\","
       "\"custom\":{\"depends_on\":[\"dis-par0\"]}}");
    OK("PUSH {\"jid\":\"dis-gkid\",\"jobtype\":\"g\",\"args\":[],\"queue\":\"xq\","
       "\"custom\":{\"depends_on\":[\"dis-kid0\"]}}");
    expect_fetch("xq", "dis-par0");
    OK("FAIL {\"jid\":\"dis-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("dis-kid0", "blocked");
    OK("MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"jids\":[\"dis-par0\"]}}");
    expect_state("dis-par0", NULL);
    expect_state("dis-kid0", "dead");
    json_t *k = job_info("dis-kid0");
    cr_assert_str_eq(json_string_value(rbh_get(k, "job.failure.errtype")), "DependencyFailed");
    json_t *h = json_object_get(k, "history");
    cr_assert_str_eq(json_string_value(
                         json_object_get(json_array_get(h, json_array_size(h) - 1), "reason")),
                     "dependency");
    json_decref(k);
    /* its own child, blocking by default, is now blocked by it */
    expect_state("dis-gkid", "blocked");
}

SERVER_TEST(cancel_and_ignore_modes)
{
    OK("PUSH {\"jid\":\"mod-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"mq\"}");
    OK("PUSH {\"jid\":\"mod-can0\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"mq\","
       "\"custom\":{\"depends_on\":[\"mod-par0\"],\"on_dep_failure\":\"cancel\"}}");
    OK("PUSH {\"jid\":\"mod-ign0\",\"jobtype\":\"i\",\"args\":[],\"queue\":\"mq\","
       "\"custom\":{\"depends_on\":[\"mod-par0\"],\"on_dep_failure\":\"ignore\"}}");
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 2);
    expect_fetch("mq", "mod-par0");
    OK("FAIL {\"jid\":\"mod-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("mod-can0", "dead");
    expect_state("mod-ign0", "enqueued");
    fetch_ack("mq", "mod-ign0");
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 0);
}

SERVER_TEST(recently_succeeded_parent_is_accepted)
{
    OK("PUSH {\"jid\":\"rec-par0\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"rq\"}");
    OK("PUSH {\"jid\":\"rec-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"rq\","
       "\"custom\":{\"depends_on\":[\"rec-par0\"]}}");
    OK("PUSH {\"jid\":\"rec-plain\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"pq\"}");
    fetch_ack("rq", "rec-par0");
    fetch_ack("rq", "rec-kid0");
    fetch_ack("pq", "rec-plain");
    /* both were in a workflow: recorded, so a later child starts at once */
    OK("PUSH {\"jid\":\"rec-late\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"rq\","
       "\"custom\":{\"depends_on\":[\"rec-par0\",\"rec-kid0\"]}}");
    expect_state("rec-late", "enqueued");
    /* a plain job is not recorded, and a jid never seen is unknown */
    cr_assert(rbh_expect(C, "-ERR depends_on: unknown job rec-plain",
                         "PUSH {\"jid\":\"rec-bad0\",\"jobtype\":\"k\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"rec-plain\"]}}"));
    cr_assert(rbh_expect(C, "-ERR depends_on: unknown job rec-never",
                         "PUSH {\"jid\":\"rec-bad0\",\"jobtype\":\"k\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"rec-never\"]}}"));
}

/* A parent in the dead set is named as dead, with what to do, not as an
 * unknown job (issue 25 item 11); retried, it is accepted. */
SERVER_TEST(dead_parent_is_refused_as_dead_with_what_to_do)
{
    OK("PUSH {\"jid\":\"my-flaky-job\",\"jobtype\":\"flaky\",\"args\":[],\"retry\":-1,"
       "\"queue\":\"fq\"}");
    expect_fetch("fq", "my-flaky-job");
    OK("FAIL {\"jid\":\"my-flaky-job\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("my-flaky-job", "dead");
    const char *want = "-ERR depends_on: job my-flaky-job is dead, and a dead job is not accepted "
                       "as a parent: retry it first (rebound retry my-flaky-job, or MUTATE "
                       "requeue), or push without it";
    cr_assert(rbh_expect(C, want, "PUSH {\"jid\":\"ddp-kid0\",\"jobtype\":\"k\",\"args\":[],"
                                  "\"custom\":{\"depends_on\":[\"my-flaky-job\"]}}"));
    /* in a workflow PUSHB too, refused whole */
    cr_assert(rbh_expect(C, want, "PUSHB [{\"jid\":\"ddp-kid1\",\"jobtype\":\"k\",\"args\":[]},"
                                  "{\"jid\":\"ddp-kid0\",\"jobtype\":\"k\",\"args\":[],"
                                  "\"custom\":{\"depends_on\":[\"ddp-kid1\",\"my-flaky-job\"]}}]"));
    expect_state("ddp-kid0", NULL);
    expect_state("ddp-kid1", NULL);
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"my-flaky-job\"]}}");
    OK("PUSH {\"jid\":\"ddp-kid0\",\"jobtype\":\"k\",\"args\":[],"
       "\"custom\":{\"depends_on\":[\"my-flaky-job\"]}}");
    expect_state("ddp-kid0", "waiting");
}

/* A debounced push's jid merged into another job (an alias,
 * docs/flow-control.md "Debounce") is refused as a parent with the job it
 * runs as, in PUSH and in a workflow PUSHB, changing nothing; the
 * surviving jid is accepted. */
SERVER_TEST(a_debounce_alias_is_refused_as_a_parent_naming_its_job)
{
    OK("PUSH {\"jid\":\"dal-kept\",\"jobtype\":\"d\",\"args\":[1],\"queue\":\"aq\","
       "\"custom\":{\"debounce\":{\"key\":\"k\",\"for\":60}}}");
    OK("PUSH {\"jid\":\"dal-alias\",\"jobtype\":\"d\",\"args\":[2],\"queue\":\"aq\","
       "\"custom\":{\"debounce\":{\"key\":\"k\",\"for\":60}}}");
    const char *want = "-ERR depends_on: job dal-alias was debounced into dal-kept; name dal-kept";
    cr_assert(rbh_expect(C, want, "PUSH {\"jid\":\"dal-kid0\",\"jobtype\":\"k\",\"args\":[],"
                                  "\"custom\":{\"depends_on\":[\"dal-alias\"]}}"));
    cr_assert(rbh_expect(C, want, "PUSHB [{\"jid\":\"dal-kid1\",\"jobtype\":\"k\",\"args\":[]},"
                                  "{\"jid\":\"dal-kid0\",\"jobtype\":\"k\",\"args\":[],"
                                  "\"custom\":{\"depends_on\":[\"dal-kid1\",\"dal-alias\"]}}]"));
    expect_state("dal-kid0", NULL);
    expect_state("dal-kid1", NULL);
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 0);
    OK("PUSH {\"jid\":\"dal-kid0\",\"jobtype\":\"k\",\"args\":[],"
       "\"custom\":{\"depends_on\":[\"dal-kept\"]}}");
    expect_state("dal-kid0", "waiting");
}

/* Stops the server with sig, starts it again on the same database and
 * reconnects C. */
static void restart(int sig)
{
    rbh_close(C);
    rbh_kill(&S, sig);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

static void survives(int sig)
{
    OK("PUSH {\"jid\":\"dur-par0\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"uq\",\"retry\":-1}");
    OK("PUSH {\"jid\":\"dur-par1\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"uq\"}");
    OK("PUSH {\"jid\":\"dur-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"uq\","
       "\"custom\":{\"depends_on\":[\"dur-par1\"]}}");
    OK("PUSH {\"jid\":\"dur-kid1\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"uq\","
       "\"custom\":{\"depends_on\":[\"dur-par0\"]}}");
    expect_fetch("uq", "dur-par0");
    OK("FAIL {\"jid\":\"dur-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("dur-kid1", "blocked");
    restart(sig);
    expect_state("dur-kid0", "waiting");
    expect_state("dur-kid1", "blocked");
    cr_assert_eq(rbh_info_int(C, "rebound.waiting"), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.blocked"), 1);
    fetch_ack("uq", "dur-par1");
    expect_state("dur-kid0", "enqueued");
    restart(sig);
    /* the succeeded record survives too */
    OK("PUSH {\"jid\":\"dur-kid2\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"uq\","
       "\"custom\":{\"depends_on\":[\"dur-par1\"]}}");
    expect_state("dur-kid2", "enqueued");
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"dur-par0\"]}}");
    expect_state("dur-kid1", "waiting");
    fetch_ack("uq", "dur-kid0");
    fetch_ack("uq", "dur-kid2");
    fetch_ack("uq", "dur-par0");
    fetch_ack("uq", "dur-kid1");
}

SERVER_TEST(waiting_children_survive_a_graceful_restart)
{
    survives(SIGTERM);
}

SERVER_TEST(waiting_children_survive_kill_9)
{
    survives(SIGKILL);
}

SERVER_TEST(policy_deadline_counts_from_release)
{
    OK("PUSH {\"jid\":\"ddl-par0\",\"jobtype\":\"p\",\"args\":[],\"queue\":\"tq\"}");
    OK("PUSH {\"jid\":\"ddl-kid1\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"tq\","
       "\"custom\":{\"depends_on\":[\"ddl-par0\"]},"
       "\"retry_policy\":{\"initial_interval\":\"1s\",\"backoff_coefficient\":1.0,"
       "\"schedule_to_close_timeout\":\"3s\"}}");
    expect_fetch("tq", "ddl-par0");
    rbh_sleep_ms(3500); /* longer than the child's deadline, spent waiting */
    OK("ACK {\"jid\":\"ddl-par0\"}");
    expect_fetch("tq", "ddl-kid1");
    OK("FAIL {\"jid\":\"ddl-kid1\",\"errtype\":\"E\",\"message\":\"once\"}");
    expect_state("ddl-kid1", "retries");
}

SERVER_TEST(cancelled_child_dies_through_the_death_path_with_its_catch_job)
{
    OK("PUSH {\"jid\":\"cat-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"cq\"}");
    OK("PUSH {\"jid\":\"cat-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"cq\","
       "\"retry_policy\":\"//ftl:retry 10 5s 1m catch notify\","
       "\"custom\":{\"depends_on\":[\"cat-par0\"],\"on_dep_failure\":\"cancel\"}}");
    expect_fetch("cq", "cat-par0");
    OK("FAIL {\"jid\":\"cat-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("cat-kid0", "dead");
    /* nothing is blocked with cancel */
    json_t *l = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"blocked\"}"));
    cr_assert_eq(json_integer_value(json_object_get(l, "total")), 0);
    json_decref(l);
    json_t *j = rbh_json(rbh_cmd(C, "FETCH cq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jobtype")), "notify");
    cr_assert_str_eq(json_string_value(rbh_get(j, "custom.catch_of")), "cat-kid0");
    json_decref(j);
}

/* --- the workflow graph (WORKFLOW; GET /api/workflow/JID in test_http_api.c) --- */

static json_t *workflow(const char *jid)
{
    return rbh_json(rbh_cmd(C, "WORKFLOW {\"jid\":\"%s\"}", jid));
}

static json_t *wf_node(json_t *g, const char *jid)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(g, "nodes"), i, n)
        if (!strcmp(json_string_value(json_object_get(n, "jid")), jid))
            return n;
    cr_assert_fail("no node %s in the graph", jid);
    return NULL;
}

static void expect_node(json_t *g, const char *jid, const char *state, bool blocking)
{
    json_t *n = wf_node(g, jid);
    const char *st = json_string_value(json_object_get(n, "state"));
    cr_assert(st && !strcmp(st, state), "%s is %s, wanted %s", jid, st ? st : "?", state);
    cr_assert_eq(json_is_true(json_object_get(n, "blocking")), blocking, "%s blocking", jid);
}

static bool has_edge(json_t *g, const char *parent, const char *child)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(g, "edges"), i, e)
        if (!strcmp(json_string_value(json_object_get(e, "parent")), parent) &&
            !strcmp(json_string_value(json_object_get(e, "child")), child))
            return true;
    return false;
}

/* A job killed by its dependency never ran: every view counts 0 attempts,
 * and its one history entry (the death, not an execution) is numbered 0
 * with reason dependency (issue 25 item 13), in both modes. */
SERVER_TEST(a_job_killed_by_its_dependency_has_no_attempt)
{
    OK("PUSH {\"jid\":\"att-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"aq\"}");
    OK("PUSH {\"jid\":\"att-can0\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"aq\","
       "\"custom\":{\"depends_on\":[\"att-par0\"],\"on_dep_failure\":\"cancel\"}}");
    expect_fetch("aq", "att-par0");
    OK("FAIL {\"jid\":\"att-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("att-can0", "dead");
    json_t *k = job_info("att-can0");
    cr_assert_eq(json_integer_value(json_object_get(k, "attempts")), 0);
    json_t *h = json_object_get(k, "history");
    cr_assert_eq(json_array_size(h), 1);
    cr_assert_eq(json_integer_value(rbh_get(k, "history.0.attempt")), 0);
    cr_assert_str_eq(json_string_value(rbh_get(k, "history.0.reason")), "dependency");
    cr_assert_str_eq(json_string_value(rbh_get(k, "history.0.outcome")), "dead");
    cr_assert_eq(json_integer_value(rbh_get(k, "job.failure.retry_count")), 0);
    json_decref(k);
    json_t *l = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"dead\",\"queue\":\"aq\"}"));
    json_t *e = json_array_get(json_object_get(l, "jobs"), 0);
    cr_assert_str_eq(json_string_value(rbh_get(e, "job.jid")), "att-par0");
    cr_assert_eq(json_integer_value(json_object_get(e, "attempts")), 1, "the parent ran once");
    e = json_array_get(json_object_get(l, "jobs"), 1);
    cr_assert_str_eq(json_string_value(rbh_get(e, "job.jid")), "att-can0");
    cr_assert_eq(json_integer_value(json_object_get(e, "attempts")), 0);
    json_decref(l);
    json_t *g = rbh_json(rbh_cmd(C, "WORKFLOW {\"jid\":\"att-can0\"}"));
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "att-can0"), "attempts")), 0);
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "att-par0"), "attempts")), 1);
    json_decref(g);
}

SERVER_TEST(workflow_graph_of_a_diamond_blocked_by_a_dead_parent)
{
    cr_assert(rbh_expect(C, "{}",
        "PUSHB [{\"jid\":\"wfg-A000\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"gq\"},"
        "{\"jid\":\"wfg-B000\",\"jobtype\":\"b\",\"args\":[],\"queue\":\"gq\",\"retry\":-1,"
        "\"custom\":{\"depends_on\":[\"wfg-A000\"]}},"
        "{\"jid\":\"wfg-C000\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"gq\","
        "\"custom\":{\"depends_on\":[\"wfg-A000\"]}},"
        "{\"jid\":\"wfg-D000\",\"jobtype\":\"d\",\"args\":[],\"queue\":\"gq\","
        "\"custom\":{\"depends_on\":[\"wfg-B000\",\"wfg-C000\"]}}]"));
    /* before anything ran: any member gives the whole diamond */
    json_t *g = workflow("wfg-C000");
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), 4);
    cr_assert_eq(json_array_size(json_object_get(g, "edges")), 4);
    cr_assert(json_is_false(json_object_get(g, "truncated")));
    expect_node(g, "wfg-A000", "enqueued", false);
    expect_node(g, "wfg-D000", "waiting", false);
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "wfg-D000"), "layer")), 2);
    json_decref(g);

    fetch_ack("gq", "wfg-A000");
    expect_fetch("gq", "wfg-B000");
    OK("FAIL {\"jid\":\"wfg-B000\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("wfg-D000", "blocked");
    g = workflow("wfg-D000");
    cr_assert_str_eq(json_string_value(json_object_get(g, "jid")), "wfg-D000");
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), 4);
    expect_node(g, "wfg-A000", "succeeded", false);
    expect_node(g, "wfg-B000", "dead", true);
    expect_node(g, "wfg-C000", "enqueued", false);
    expect_node(g, "wfg-D000", "blocked", false);
    json_t *d = wf_node(g, "wfg-D000");
    cr_assert_str_eq(json_string_value(json_object_get(d, "blocked_by")), "wfg-B000");
    cr_assert_str_eq(json_string_value(json_object_get(d, "jobtype")), "d");
    cr_assert_str_eq(json_string_value(json_object_get(d, "queue")), "gq");
    cr_assert_eq(json_array_size(json_object_get(d, "waits_for")), 2);
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "wfg-B000"), "attempts")), 1);
    cr_assert(json_is_null(json_object_get(wf_node(g, "wfg-A000"), "jobtype")));
    cr_assert_eq(json_array_size(json_object_get(g, "edges")), 4);
    cr_assert(has_edge(g, "wfg-A000", "wfg-B000") && has_edge(g, "wfg-A000", "wfg-C000") &&
              has_edge(g, "wfg-B000", "wfg-D000") && has_edge(g, "wfg-C000", "wfg-D000"));
    /* nodes in layer order, then jid */
    const char *order[] = {"wfg-A000", "wfg-B000", "wfg-C000", "wfg-D000"};
    for (size_t i = 0; i < 4; i++)
        cr_assert_str_eq(json_string_value(rbh_get(json_array_get(json_object_get(g, "nodes"), i),
                                                   "jid")), order[i]);
    json_decref(g);

    /* C succeeds: known by its record; its own parents with it */
    fetch_ack("gq", "wfg-C000");
    g = workflow("wfg-B000");
    expect_node(g, "wfg-C000", "succeeded", false);
    expect_node(g, "wfg-B000", "dead", true);
    cr_assert(has_edge(g, "wfg-C000", "wfg-D000") && has_edge(g, "wfg-B000", "wfg-D000"));
    cr_assert_eq(json_array_size(json_object_get(wf_node(g, "wfg-D000"), "waits_for")), 1);
    json_decref(g);
}

/* A sorted list of strings, for comparing graphs. */
typedef struct rb_test_sorted {
    char **v;
    size_t n;
} rb_test_sorted;

static void sorted_add(rb_test_sorted *s, const char *x)
{
    s->v = realloc(s->v, (s->n + 1) * sizeof *s->v);
    s->v[s->n++] = strdup(x);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The strings sorted, space separated (new); s is emptied. */
static char *sorted_text(rb_test_sorted *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, by_str);
    size_t len = 1;
    for (size_t i = 0; i < s->n; i++)
        len += strlen(s->v[i]) + 1;
    char *out = calloc(1, len);
    for (size_t i = 0; i < s->n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, s->v[i]);
        free(s->v[i]);
    }
    free(s->v);
    *s = (rb_test_sorted){0};
    return out;
}

/* The graph's jobs and edges, sorted, as one text: "A B C | A>B A>C". */
static char *graph_sig(const char *jid)
{
    json_t *g = workflow(jid);
    cr_assert(json_is_object(g), "no graph for %s", jid);
    rb_test_sorted nodes = {0}, edges = {0};
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(g, "nodes"), i, x) {
        char s[160];
        snprintf(s, sizeof s, "%s:%s", json_string_value(json_object_get(x, "jid")),
                 json_string_value(json_object_get(x, "state")));
        sorted_add(&nodes, s);
    }
    json_array_foreach(json_object_get(g, "edges"), i, x) {
        char s[160];
        snprintf(s, sizeof s, "%s>%s", json_string_value(json_object_get(x, "parent")),
                 json_string_value(json_object_get(x, "child")));
        sorted_add(&edges, s);
    }
    json_decref(g);
    char *n = sorted_text(&nodes), *e = sorted_text(&edges), *out = NULL;
    cr_assert(asprintf(&out, "%s | %s", n, e) > 0);
    free(n);
    free(e);
    return out;
}

/* Every member's graph is want. */
static void same_graph(const char *const *members, const char *want)
{
    for (int i = 0; members[i]; i++) {
        char *got = graph_sig(members[i]);
        cr_assert_str_eq(got, want, "the graph of %s", members[i]);
        free(got);
    }
}

/* The connected component whichever member is named (issue 25 item 9):
 * children whose edge a dead parent used up (ignore, cancel) stay in it,
 * and after ACKs the succeeded members stay with their edges while their
 * records live, through a restart too. */
static void same_graph_from_every_member(int sig)
{
    OK("PUSH {\"jid\":\"dp-parent-01\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"sq\"}");
    OK("PUSH {\"jid\":\"dp-block-01\",\"jobtype\":\"b\",\"args\":[],\"queue\":\"sq\","
       "\"custom\":{\"depends_on\":[\"dp-parent-01\"]}}");
    OK("PUSH {\"jid\":\"dp-cancel-01\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"sq\","
       "\"custom\":{\"depends_on\":[\"dp-parent-01\"],\"on_dep_failure\":\"cancel\"}}");
    OK("PUSH {\"jid\":\"dp-ignore-01\",\"jobtype\":\"i\",\"args\":[],\"queue\":\"sq\","
       "\"custom\":{\"depends_on\":[\"dp-parent-01\"],\"on_dep_failure\":\"ignore\"}}");
    OK("PUSH {\"jid\":\"dp-grand-01\",\"jobtype\":\"g\",\"args\":[],\"queue\":\"sq\","
       "\"custom\":{\"depends_on\":[\"dp-ignore-01\"]}}");
    expect_fetch("sq", "dp-parent-01");
    OK("FAIL {\"jid\":\"dp-parent-01\",\"errtype\":\"E\",\"message\":\"boom\"}");
    const char *members[] = {"dp-parent-01", "dp-block-01", "dp-cancel-01", "dp-ignore-01",
                             "dp-grand-01", NULL};
    const char *edges = "dp-ignore-01>dp-grand-01 dp-parent-01>dp-block-01 "
                        "dp-parent-01>dp-cancel-01 dp-parent-01>dp-ignore-01";
    char want[1024];
    snprintf(want, sizeof want,
             "dp-block-01:blocked dp-cancel-01:dead dp-grand-01:waiting dp-ignore-01:enqueued "
             "dp-parent-01:dead | %s", edges);
    same_graph(members, want);
    restart(sig);
    same_graph(members, want);
    /* the released child and its own child run and succeed: both stay, as
     * succeeded, with their edges */
    fetch_ack("sq", "dp-ignore-01");
    fetch_ack("sq", "dp-grand-01");
    snprintf(want, sizeof want,
             "dp-block-01:blocked dp-cancel-01:dead dp-grand-01:succeeded "
             "dp-ignore-01:succeeded dp-parent-01:dead | %s", edges);
    const char *stored[] = {"dp-parent-01", "dp-block-01", "dp-cancel-01", NULL};
    same_graph(stored, want);
    restart(sig);
    same_graph(stored, want);
    cr_assert(rbh_expect(C, "$-1", "WORKFLOW {\"jid\":\"dp-grand-01\"}"), "a record is no member to name");
}

SERVER_TEST(workflow_graph_is_the_same_from_every_member)
{
    same_graph_from_every_member(SIGTERM);
}

SERVER_TEST(workflow_graph_is_the_same_from_every_member_after_kill_9)
{
    same_graph_from_every_member(SIGKILL);
}

/* After ACKs a middle job does not look like a root: the succeeded members
 * keep their parents while their records live (issue 25 item 10). */
SERVER_TEST(workflow_graph_keeps_succeeded_members_and_their_edges)
{
    cr_assert(rbh_expect(C, "{}",
        "PUSHB [{\"jid\":\"sdia-A000\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"dq\"},"
        "{\"jid\":\"sdia-B000\",\"jobtype\":\"b\",\"args\":[],\"queue\":\"dq\","
        "\"custom\":{\"depends_on\":[\"sdia-A000\"]}},"
        "{\"jid\":\"sdia-C000\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"dq\","
        "\"custom\":{\"depends_on\":[\"sdia-A000\"]}},"
        "{\"jid\":\"sdia-D000\",\"jobtype\":\"d\",\"args\":[],\"queue\":\"dq\","
        "\"custom\":{\"depends_on\":[\"sdia-B000\",\"sdia-C000\"]}}]"));
    fetch_ack("dq", "sdia-A000");
    fetch_ack("dq", "sdia-B000");
    fetch_ack("dq", "sdia-C000");
    /* a later job naming the succeeded D's parents joins the same graph */
    OK("PUSH {\"jid\":\"sdia-E000\",\"jobtype\":\"e\",\"args\":[],\"queue\":\"dq\","
       "\"custom\":{\"depends_on\":[\"sdia-C000\"]}}");
    const char *members[] = {"sdia-D000", "sdia-E000", NULL};
    same_graph(members, "sdia-A000:succeeded sdia-B000:succeeded sdia-C000:succeeded "
                        "sdia-D000:enqueued sdia-E000:enqueued | sdia-A000>sdia-B000 "
                        "sdia-A000>sdia-C000 sdia-B000>sdia-D000 sdia-C000>sdia-D000 "
                        "sdia-C000>sdia-E000");
    json_t *g = workflow("sdia-D000");
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "sdia-A000"), "layer")), 0);
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "sdia-B000"), "layer")), 1);
    cr_assert_eq(json_integer_value(json_object_get(wf_node(g, "sdia-D000"), "layer")), 2);
    json_decref(g);
}

/* A node's retry advice as one text: "a b" (the jids, in order). */
static char *retry_of(json_t *g, const char *jid)
{
    size_t i;
    json_t *x;
    char *out = NULL;
    json_array_foreach(json_object_get(wf_node(g, jid), "retry"), i, x) { /* kept in order */
        char *prev = out;
        cr_assert(asprintf(&out, "%s%s%s", prev ? prev : "", prev ? " " : "",
                           json_string_value(x)) > 0);
        free(prev);
    }
    return out ? out : strdup("");
}

static void expect_retry(json_t *g, const char *jid, const char *want)
{
    char *got = retry_of(g, jid);
    cr_assert_str_eq(got, want, "%s's retry advice", jid);
    free(got);
}

/* A retried job killed by its dependency goes back under its parents'
 * states: blocked while the parent that killed it is dead, never enqueued
 * without it; the parent's retry then lets it wait, and it runs once the
 * parent succeeds (issue 25 item 8). The graph names what to retry. */
static void retry_of_a_cancelled_child(int sig)
{
    OK("PUSH {\"jid\":\"rc-parent\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"rq\"}");
    OK("PUSH {\"jid\":\"rc-cancel\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"rq\","
       "\"custom\":{\"depends_on\":[\"rc-parent\"],\"on_dep_failure\":\"cancel\"}}");
    OK("PUSH {\"jid\":\"rc-grand\",\"jobtype\":\"g\",\"args\":[],\"queue\":\"rq\","
       "\"custom\":{\"depends_on\":[\"rc-cancel\"]}}");
    expect_fetch("rq", "rc-parent");
    OK("FAIL {\"jid\":\"rc-parent\",\"errtype\":\"E\",\"message\":\"boom\"}");
    expect_state("rc-cancel", "dead");
    expect_state("rc-grand", "blocked");
    json_t *k = job_info("rc-cancel");
    cr_assert_str_eq(json_string_value(rbh_get(k, "history.0.parent")), "rc-parent");
    json_decref(k);
    json_t *g = workflow("rc-grand");
    cr_assert_str_eq(json_string_value(json_object_get(wf_node(g, "rc-cancel"), "killed_by")),
                     "rc-parent");
    cr_assert(json_is_null(json_object_get(wf_node(g, "rc-parent"), "killed_by")));
    expect_retry(g, "rc-parent", "rc-parent");
    expect_retry(g, "rc-cancel", "rc-parent rc-cancel");
    expect_retry(g, "rc-grand", "rc-parent rc-cancel");
    json_decref(g);

    /* the child alone: blocked by its dead parent, not enqueued */
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"rc-cancel\"]}}");
    expect_state("rc-cancel", "blocked");
    expect_state("rc-grand", "waiting");
    k = job_info("rc-cancel");
    cr_assert_str_eq(json_string_value(json_object_get(k, "blocked_by")), "rc-parent");
    json_decref(k);
    cr_assert(rbh_expect(C, "$-1", "FETCH rq"));
    g = workflow("rc-grand");
    expect_retry(g, "rc-cancel", "rc-parent");
    expect_retry(g, "rc-grand", "rc-parent");
    cr_assert(json_is_null(json_object_get(wf_node(g, "rc-cancel"), "killed_by")));
    json_decref(g);
    restart(sig);
    expect_state("rc-cancel", "blocked");
    expect_state("rc-grand", "waiting");
    /* the parent's retry lets it wait; the parent's success runs it, then its child */
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"rc-parent\"]}}");
    expect_state("rc-cancel", "waiting");
    fetch_ack("rq", "rc-parent");
    expect_state("rc-cancel", "enqueued");
    fetch_ack("rq", "rc-cancel");
    fetch_ack("rq", "rc-grand");
    cr_assert_eq(rbh_info_int(C, "rebound.waiting") + rbh_info_int(C, "rebound.blocked"), 0);
}

SERVER_TEST(retried_cancelled_child_waits_for_its_dead_parent)
{
    retry_of_a_cancelled_child(SIGTERM);
}

SERVER_TEST(retried_cancelled_child_waits_for_its_dead_parent_after_kill_9)
{
    retry_of_a_cancelled_child(SIGKILL);
}

/* Retrying every dead job at once, whatever the order: the parent runs,
 * the child waits for it; a job whose parents are all done is enqueued
 * as any retried job. */
SERVER_TEST(retrying_the_dead_set_requeues_parents_and_holds_their_children)
{
    OK("PUSH {\"jid\":\"ra-parent\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"aq\"}");
    OK("PUSH {\"jid\":\"ra-0cancel\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"aq\","
       "\"custom\":{\"depends_on\":[\"ra-parent\"],\"on_dep_failure\":\"cancel\"}}");
    OK("PUSH {\"jid\":\"ra-zcancel\",\"jobtype\":\"c\",\"args\":[],\"queue\":\"aq\","
       "\"custom\":{\"depends_on\":[\"ra-parent\"],\"on_dep_failure\":\"cancel\"}}");
    OK("PUSH {\"jid\":\"ra-done0\",\"jobtype\":\"d\",\"args\":[],\"queue\":\"bq\"}");
    OK("PUSH {\"jid\":\"ra-solo0\",\"jobtype\":\"s\",\"args\":[],\"retry\":-1,\"queue\":\"bq\","
       "\"custom\":{\"depends_on\":[\"ra-done0\"]}}");
    expect_fetch("aq", "ra-parent");
    OK("FAIL {\"jid\":\"ra-parent\",\"errtype\":\"E\",\"message\":\"boom\"}");
    fetch_ack("bq", "ra-done0");
    expect_fetch("bq", "ra-solo0");
    OK("FAIL {\"jid\":\"ra-solo0\",\"errtype\":\"E\",\"message\":\"its own\"}");
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 4);
    OK("MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\"}");
    expect_state("ra-parent", "enqueued");
    expect_state("ra-0cancel", "waiting");
    expect_state("ra-zcancel", "waiting");
    expect_state("ra-solo0", "enqueued"); /* its parent succeeded: nothing holds it */
    fetch_ack("aq", "ra-parent");
    expect_state("ra-0cancel", "enqueued");
    expect_state("ra-zcancel", "enqueued");
}

SERVER_TEST(workflow_of_an_unknown_or_plain_job)
{
    cr_assert(rbh_expect(C, "$-1", "WORKFLOW {\"jid\":\"nope-0001\"}"));
    cr_assert(rbh_expect(C, "-ERR WORKFLOW: jid must be a non-empty string", "WORKFLOW {}"));
    OK("PUSH {\"jid\":\"wfp-solo\",\"jobtype\":\"s\",\"args\":[]}");
    json_t *g = workflow("wfp-solo");
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), 1);
    cr_assert_eq(json_array_size(json_object_get(g, "edges")), 0);
    expect_node(g, "wfp-solo", "enqueued", false);
    json_decref(g);
}

SERVER_TEST(workflow_graph_is_capped)
{
    OK("PUSH {\"jid\":\"cap-root\",\"jobtype\":\"r\",\"args\":[],\"queue\":\"kq\"}");
    int n = RB_WF_TEST_MAX + 1; /* children: the component is one more than the cap */
    for (int base = 0; base < n; base += 500) {
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);
        fputs("PUSHB [", f);
        for (int i = base; i < n && i < base + 500; i++)
            fprintf(f, "%s{\"jid\":\"cap-%05d\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"kq\","
                       "\"custom\":{\"depends_on\":[\"cap-root\"]}}", i > base ? "," : "", i);
        fputs("]", f);
        fclose(f);
        cr_assert(rbh_expect(C, "{}", "%s", line));
        free(line);
    }
    json_t *g = workflow("cap-root");
    cr_assert(json_is_true(json_object_get(g, "truncated")));
    cr_assert_eq(json_integer_value(json_object_get(g, "max_nodes")), RB_WF_TEST_MAX);
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), RB_WF_TEST_MAX);
    cr_assert_eq(json_array_size(json_object_get(g, "edges")), RB_WF_TEST_MAX - 1);
    json_decref(g);
    g = workflow("cap-00007"); /* from a child: its parent first, then siblings */
    cr_assert(json_is_true(json_object_get(g, "truncated")));
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), RB_WF_TEST_MAX);
    json_decref(g);
}

SERVER_TEST(workflow_shows_a_discarded_parent_as_unknown)
{
    OK("PUSH {\"jid\":\"wfu-par0\",\"jobtype\":\"p\",\"args\":[],\"retry\":-1,\"queue\":\"uq\"}");
    OK("PUSH {\"jid\":\"wfu-kid0\",\"jobtype\":\"k\",\"args\":[],\"queue\":\"uq\","
       "\"custom\":{\"depends_on\":[\"wfu-par0\"]}}");
    OK("PUSH {\"jid\":\"wfu-gkid\",\"jobtype\":\"g\",\"args\":[],\"queue\":\"uq\","
       "\"custom\":{\"depends_on\":[\"wfu-kid0\"]}}");
    expect_fetch("uq", "wfu-par0");
    OK("FAIL {\"jid\":\"wfu-par0\",\"errtype\":\"E\",\"message\":\"boom\"}");
    json_t *g = workflow("wfu-gkid"); /* the chain: par blocks kid, kid waits */
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), 3);
    expect_node(g, "wfu-par0", "dead", true);
    expect_node(g, "wfu-kid0", "blocked", false);
    expect_node(g, "wfu-gkid", "waiting", false);
    json_decref(g);
    OK("MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"jids\":[\"wfu-par0\"]}}");
    expect_state("wfu-kid0", "dead");
    g = workflow("wfu-gkid"); /* the parent gone: unknown; the kid dead, blocking */
    cr_assert_eq(json_array_size(json_object_get(g, "nodes")), 3);
    expect_node(g, "wfu-par0", "unknown", false);
    expect_node(g, "wfu-kid0", "dead", true);
    expect_node(g, "wfu-gkid", "blocked", false);
    cr_assert(json_is_null(json_object_get(wf_node(g, "wfu-par0"), "attempts")));
    cr_assert_str_eq(json_string_value(json_object_get(wf_node(g, "wfu-gkid"), "blocked_by")),
                     "wfu-kid0");
    cr_assert(has_edge(g, "wfu-par0", "wfu-kid0") && has_edge(g, "wfu-kid0", "wfu-gkid"));
    json_decref(g);
    cr_assert(rbh_expect(C, "$-1", "WORKFLOW {\"jid\":\"wfu-par0\"}"));
}
