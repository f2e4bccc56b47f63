/* Debounce (issue 30, docs/flow-control.md "Debounce") against the real
 * server: a key pushed 100 times in 2 s runs once, with the last push's
 * args, under the first push's jid; "max" caps the wait; a push after the
 * FETCH starts a new job; the later pushes' jids answer JOB and TRACK GET
 * as aliases; PUSHB with several pushes of one key; a push that repeats a
 * jid; every refusal of custom.debounce (nothing stored); the pending job
 * and its key across kill -9 (a push after the restart still merges); INFO
 * and /metrics. One source for both backends (test_pg_server_debounce.c
 * includes it with RBH_PG). */
#include <criterion/criterion.h>

#include "common_helpers.h"
#include "common/timeutil.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(debounce, .init = start, .fini = rbh_suite_stop, .timeout = 120);

#define SERVER_TEST(name) RBH_SERVER_TEST(debounce, name)

/* PUSH of jid (jobtype "D", queue q, args [n]) debounced on key for `debounce`'s
 * members (the inside of custom.debounce), other custom members after. */
static char *push(rbh_conn *c, const char *jid, const char *q, int n, const char *debounce,
                  const char *more)
{
    return rbh_cmd(c, "PUSH {\"jid\":\"%s\",\"jobtype\":\"D\",\"queue\":\"%s\",\"args\":[%d],"
                      "\"custom\":{\"debounce\":{%s}%s%s}}",
                   jid, q, n, debounce, more && *more ? "," : "", more ? more : "");
}

static void push_ok(rbh_conn *c, const char *jid, const char *q, int n, const char *debounce,
                    const char *more)
{
    char *r = push(c, jid, q, n, debounce, more);
    cr_assert(r && !strcmp(r, "+OK"), "PUSH %s: '%s'", jid, r ? r : "(closed)");
    free(r);
}

/* JOB {"jid": jid} parsed (NULL for no such job); caller frees. */
static json_t *job(rbh_conn *c, const char *jid)
{
    return rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jid));
}

static long long job_int(rbh_conn *c, const char *jid, const char *path)
{
    json_t *v = job(c, jid);
    json_t *x = rbh_get(v, path);
    long long n = json_is_integer(x) ? (long long)json_integer_value(x) : -1;
    json_decref(v);
    return n;
}

/* FETCH q until a job comes (each FETCH waits up to 2 s; at most 15 s):
 * its JSON. */
static json_t *fetch_wait(rbh_conn *c, const char *q)
{
    int64_t end = rbh_now_ms() + 15000;
    while (rbh_now_ms() < end) {
        json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", q));
        if (json_is_object(j))
            return j;
        json_decref(j);
    }
    cr_assert_fail("no job came from %s", q);
    return NULL;
}

static void expect_alias(rbh_conn *c, const char *alias, const char *into, const char *key)
{
    json_t *v = job(c, alias);
    cr_assert(json_is_object(v), "JOB %s: no answer", alias);
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "debounced");
    cr_assert_str_eq(json_string_value(json_object_get(v, "jid")), alias);
    cr_assert_str_eq(json_string_value(json_object_get(v, "debounced_into")), into);
    cr_assert_str_eq(json_string_value(json_object_get(v, "key")), key);
    cr_assert(json_is_string(json_object_get(v, "merged_at")));
    json_decref(v);
}

#define D(key) "\"key\":\"" key "\",\"for\":0.5,\"max\":10"

/* The case: 100 pushes of one key in 2 s run once, with the last
 * args, under the first jid; the other 99 jids are aliases (JOB, TRACK GET
 * answer for the surviving job). */
SERVER_TEST(hundred_pushes_run_once_with_the_last_args)
{
    int64_t t0 = rbh_now_ms();
    for (int i = 0; i < 100; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "deb-%05d", i);
        push_ok(C, jid, "dq", i, D("user-42"), "\"track\":1");
        int64_t due = t0 + 20 * (i + 1); /* spread over 2 s */
        while (rbh_now_ms() < due)
            rbh_sleep_ms(2);
    }
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
    cr_assert_eq(job_int(C, "deb-00000", "debounce.merged"), 99);
    json_t *v = job(C, "deb-00000");
    cr_assert_str_eq(json_string_value(rbh_get(v, "debounce.key")), "user-42");
    cr_assert_str_eq(json_string_value(rbh_get(v, "debounce.last_alias")), "deb-00099");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.args.0")), 99);
    json_decref(v);
    expect_alias(C, "deb-00050", "deb-00000", "user-42");
    /* TRACK GET of an alias: the surviving job's progress, under the alias */
    json_t *t = rbh_json(rbh_cmd(C, "TRACK GET deb-00050"));
    cr_assert_str_eq(json_string_value(json_object_get(t, "jid")), "deb-00050");
    cr_assert_str_neq(json_string_value(json_object_get(t, "state")), "unknown");
    json_decref(t);
    cr_assert(rbh_expect(C, "+OK", "TRACK SET {\"jid\":\"deb-00000\",\"percent\":40}"));
    t = rbh_json(rbh_cmd(C, "TRACK GET deb-00077"));
    cr_assert_eq(json_integer_value(json_object_get(t, "percent")), 40);
    json_decref(t);

    json_t *j = fetch_wait(C, "dq");
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "deb-00000");
    cr_assert_eq(json_integer_value(rbh_get(j, "args.0")), 99);
    json_decref(j);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.queues.dq"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.merged"), 99);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"deb-00000\"}"));
    expect_alias(C, "deb-00001", "deb-00000", "user-42"); /* kept after the end */
}

/* A push after the pending job was fetched starts a new job; a retry of
 * the fetched job is not pending. */
SERVER_TEST(push_after_fetch_starts_a_new_job)
{
    push_ok(C, "new-00001", "nq", 1, "\"key\":\"k\",\"for\":0.05", NULL);
    json_t *j = fetch_wait(C, "nq");
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "new-00001");
    json_decref(j);
    push_ok(C, "new-00002", "nq", 2, "\"key\":\"k\",\"for\":0.05", NULL);
    char *st = rbh_job_state(C, "new-00002");
    cr_assert(st && strcmp(st, "debounced"), "new-00002 merged into a fetched job");
    free(st);
    st = rbh_job_state(C, "new-00001");
    cr_assert_str_eq(st, "working");
    free(st);
    j = fetch_wait(C, "nq");
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "new-00002");
    cr_assert_eq(json_integer_value(rbh_get(j, "args.0")), 2);
    json_decref(j);
    /* keys are scoped to queue and job type */
    push_ok(C, "sc-000001", "sq1", 1, "\"key\":\"same\",\"for\":30", NULL);
    push_ok(C, "sc-000002", "sq2", 2, "\"key\":\"same\",\"for\":30", NULL);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 2);
}

/* "max" caps the wait: pushes every 0.2 s with for 1 s and max 2 s; the
 * job becomes ready about 2 s after the first push while pushes go on,
 * and a push into a ready (not yet fetched) job still merges. */
SERVER_TEST(max_caps_the_wait)
{
    int64_t t0 = rbh_now_ms();
    push_ok(C, "max-00000", "mq", 0, "\"key\":\"m\",\"for\":1,\"max\":2", NULL);
    int i = 1;
    bool ready = false;
    for (; i < 40 && !ready; i++) {
        while (rbh_now_ms() < t0 + 200 * i)
            rbh_sleep_ms(2);
        char jid[32];
        snprintf(jid, sizeof jid, "max-%05d", i);
        push_ok(C, jid, "mq", i, "\"key\":\"m\",\"for\":1,\"max\":2", NULL);
        json_t *v = job(C, "max-00000");
        const char *st = json_string_value(json_object_get(v, "state"));
        cr_assert(st, "max-00000 is gone");
        int64_t first = 0, runs = 0;
        rb_time_parse_rfc3339(json_string_value(rbh_get(v, "debounce.first_at")), &first);
        rb_time_parse_rfc3339(json_string_value(rbh_get(v, "debounce.runs_at")), &runs);
        ready = !strcmp(st, "enqueued"); /* runs_at: when it became ready */
        cr_assert(ready || runs - first <= 2000, "runs at %lld ms after the first push",
                  (long long)(runs - first));
        json_decref(v);
    }
    cr_assert(ready, "the job never became ready while pushes went on");
    cr_assert_geq(rbh_now_ms() - t0, 1900, "ready before its max");
    push_ok(C, "max-99999", "mq", 999, "\"key\":\"m\",\"for\":1,\"max\":2", NULL);
    json_t *j = fetch_wait(C, "mq");
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "max-00000");
    cr_assert_eq(json_integer_value(rbh_get(j, "args.0")), 999);
    json_decref(j);
}

/* PUSHB with several pushes of one key: one job (the first jid) with the
 * last one's args, the others aliases; another key its own job. */
SERVER_TEST(pushb_merges_one_key)
{
    char *r = rbh_cmd(
        C, "PUSHB [{\"jid\":\"pb-000001\",\"jobtype\":\"D\",\"queue\":\"bq\",\"args\":[1],"
           "\"custom\":{\"debounce\":{\"key\":\"a\",\"for\":30}}},"
           "{\"jid\":\"pb-000002\",\"jobtype\":\"D\",\"queue\":\"bq\",\"args\":[2],"
           "\"custom\":{\"debounce\":{\"key\":\"a\",\"for\":30},\"note\":\"two\"}},"
           "{\"jid\":\"pb-000003\",\"jobtype\":\"D\",\"queue\":\"bq\",\"args\":[3],"
           "\"custom\":{\"debounce\":{\"key\":\"b\",\"for\":30}}},"
           "{\"jid\":\"pb-000004\",\"jobtype\":\"D\",\"queue\":\"bq\",\"args\":[4],"
           "\"custom\":{\"debounce\":{\"key\":\"a\",\"for\":30}}}]");
    cr_assert(r && !strcmp(r, "{}"), "PUSHB: '%s'", r ? r : "(closed)");
    free(r);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 2);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 2);
    json_t *v = job(C, "pb-000001");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.args.0")), 4);
    cr_assert_null(rbh_get(v, "job.custom.note"), "custom is the last push's, whole");
    cr_assert_eq(json_integer_value(rbh_get(v, "debounce.merged")), 2);
    json_decref(v);
    expect_alias(C, "pb-000002", "pb-000001", "a");
    expect_alias(C, "pb-000004", "pb-000001", "a");
    cr_assert_eq(job_int(C, "pb-000003", "job.args.0"), 3);
}

/* A push repeating the pending job's jid, or an alias, merges again (a
 * client's retry); a jid another job holds is refused as taken. */
SERVER_TEST(repeated_jids)
{
    push_ok(C, "rep-00001", "rq", 1, "\"key\":\"r\",\"for\":30", NULL);
    push_ok(C, "rep-00001", "rq", 2, "\"key\":\"r\",\"for\":30", NULL);
    push_ok(C, "rep-00002", "rq", 3, "\"key\":\"r\",\"for\":30", NULL);
    push_ok(C, "rep-00002", "rq", 4, "\"key\":\"r\",\"for\":30", NULL);
    json_t *v = job(C, "rep-00001");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.args.0")), 4);
    cr_assert_eq(json_integer_value(rbh_get(v, "debounce.merged")), 3);
    cr_assert_str_eq(json_string_value(rbh_get(v, "debounce.last_alias")), "rep-00002");
    json_decref(v);
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"plain-0001\",\"jobtype\":\"D\","
                                   "\"queue\":\"rq\",\"args\":[]}"));
    char *r = push(C, "plain-0001", "rq", 5, "\"key\":\"r\",\"for\":30", NULL);
    cr_assert(r && !strncmp(r, "-ERR", 4), "a taken jid merged: '%s'", r ? r : "(closed)");
    free(r);
    cr_assert_eq(job_int(C, "rep-00001", "job.args.0"), 4);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.merged"), 3);
}

/* Every refusal of design 2.1, word for word; nothing stored. */
SERVER_TEST(bad_input_changes_nothing)
{
    static const struct {
        const char *custom, *err;
    } bad[] = {
        {"\"debounce\":1", "custom.debounce must be an object {\"key\", \"for\", \"max\"}"},
        {"\"debounce\":\"k\"", "custom.debounce must be an object {\"key\", \"for\", \"max\"}"},
        {"\"debounce\":{\"for\":1}",
         "custom.debounce.key must be a non-empty string of at most 200 bytes"},
        {"\"debounce\":{\"key\":\"\",\"for\":1}",
         "custom.debounce.key must be a non-empty string of at most 200 bytes"},
        {"\"debounce\":{\"key\":7,\"for\":1}",
         "custom.debounce.key must be a non-empty string of at most 200 bytes"},
        {"\"debounce\":{\"key\":\"k\"}",
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got null"},
        {"\"debounce\":{\"key\":\"k\",\"for\":-1}",
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got -1"},
        {"\"debounce\":{\"key\":\"k\",\"for\":0}",
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got 0"},
        {"\"debounce\":{\"key\":\"k\",\"for\":604801}",
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got 604801"},
        {"\"debounce\":{\"key\":\"k\",\"for\":\"5s\"}",
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got \"5s\""},
        {"\"debounce\":{\"key\":\"k\",\"for\":5,\"max\":2}",
         "custom.debounce.max must be a number of seconds from for (5) to 2592000, got 2"},
        {"\"debounce\":{\"key\":\"k\",\"for\":5,\"max\":2592001}",
         "custom.debounce.max must be a number of seconds from for (5) to 2592000, got 2592001"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1},\"unique_for\":60",
         "custom.debounce cannot be combined with custom.unique_for"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1},\"bid\":\"b-1\"",
         "custom.debounce cannot be combined with custom.bid"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1},\"depends_on\":[\"p-0000001\"]",
         "custom.debounce cannot be combined with depends_on"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[256];
        snprintf(want, sizeof want, "-ERR job bad-000001: %s", bad[i].err);
        cr_assert(rbh_expect(C, want, "PUSH {\"jid\":\"bad-000001\",\"jobtype\":\"D\","
                                      "\"args\":[],\"custom\":{%s}}",
                             bad[i].custom));
    }
    cr_assert(rbh_expect(C, "-ERR job bad-000001: custom.debounce cannot be combined with at",
                         "PUSH {\"jid\":\"bad-000001\",\"jobtype\":\"D\",\"args\":[],"
                         "\"at\":\"2099-01-01T00:00:00Z\",\"custom\":{\"debounce\":{\"key\":\"k\","
                         "\"for\":1}}}"));
    /* PUSHB: the bad job's entry in the error map, the others pushed */
    json_t *errors = rbh_json(rbh_cmd(
        C, "PUSHB [{\"jid\":\"bad-000002\",\"jobtype\":\"D\",\"args\":[],"
           "\"custom\":{\"debounce\":{\"key\":\"k\",\"for\":-1}}},"
           "{\"jid\":\"good-00003\",\"jobtype\":\"D\",\"args\":[],"
           "\"custom\":{\"debounce\":{\"key\":\"k\",\"for\":60}}}]"));
    cr_assert_eq(json_object_size(errors), 1);
    cr_assert_str_eq(json_string_value(json_object_get(errors, "bad-000002")),
                     "job bad-000002: custom.debounce.for must be a number of seconds from "
                     "0.001 to 604800, got -1");
    json_decref(errors);
    json_t *v = job(C, "bad-000001");
    cr_assert(json_is_null(v) || !v, "a refused push left a job");
    json_decref(v);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.merged"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 1);
}

/* A FETCH already waiting on the queue does not get a debounced job
 * before its time (distributed mode hands plain pushes straight to a
 * parked FETCH: never a debounced one). */
SERVER_TEST(parked_fetch_waits_for_the_run_time)
{
    rbh_conn *w = rbh_connect(&S, "w2");
    cr_assert(rbh_send_parked(&S, w, "FETCH pq\r\n"));
    push_ok(C, "park-0001", "pq", 1, "\"key\":\"p\",\"for\":30", NULL);
    char *r = rbh_reply(w); /* null after its 2 s */
    cr_assert(r && !strcmp(r, "$-1"), "the parked FETCH got '%s'", r ? r : "(closed)");
    free(r);
    rbh_close(w);
    char *st = rbh_job_state(C, "park-0001");
    cr_assert_str_eq(st, "scheduled");
    free(st);
}

/* A merge moves the job to the last push's group (docs/flow-control.md
 * "Debounce"), in both backends: a job first pushed in group "first" and
 * merged with custom.group "second" (its max passed: ready at once) is
 * counted in "second" and runs while "first" is paused; one merged into a
 * paused group waits there. */
SERVER_TEST(merge_moves_the_job_to_the_last_push_group)
{
    push_ok(C, "grp-00001", "gq", 1, "\"key\":\"g\",\"for\":30", "\"group\":\"first\"");
    push_ok(C, "grp-00003", "gq", 3, "\"key\":\"h\",\"for\":30", "\"group\":\"first\"");
    rbh_sleep_ms(100); /* past the next pushes' max: they make the jobs ready */
    push_ok(C, "grp-00002", "gq", 2, "\"key\":\"g\",\"for\":0.05,\"max\":0.05",
            "\"group\":\"second\"");
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE gq first 600"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE gq third 600"));
    push_ok(C, "grp-00004", "gq", 4, "\"key\":\"h\",\"for\":0.05,\"max\":0.05",
            "\"group\":\"third\"");
    json_t *v = job(C, "grp-00001");
    cr_assert_str_eq(json_string_value(rbh_get(v, "state")), "enqueued");
    cr_assert_str_eq(json_string_value(rbh_get(v, "job.custom.group")), "second");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "GROUP GET gq second"));
    cr_assert_eq(json_integer_value(rbh_get(v, "ready")), 1, "not counted in its new group");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "GROUP GET gq first"));
    cr_assert_eq(json_integer_value(rbh_get(v, "ready")), 0, "still counted in its old group");
    json_decref(v);
    char *jid = rbh_fetch_jid(C, "gq");
    cr_assert_str_eq(jid ? jid : "(none)", "grp-00001", "the moved job was not handed out");
    free(jid);
    jid = rbh_fetch_jid(C, "gq"); /* grp-00004 waits in the paused "third" */
    cr_assert_null(jid, "a job merged into a paused group was handed out: %s", jid);
    v = job(C, "grp-00003");
    cr_assert_str_eq(json_string_value(rbh_get(v, "held.reason")), "paused");
    json_decref(v);
    cr_assert(rbh_expect(C, "+OK", "GROUP RESUME gq third"));
    jid = rbh_fetch_jid(C, "gq");
    cr_assert_str_eq(jid ? jid : "(none)", "grp-00003");
    free(jid);
}

/* Restarts S on its database with SIGKILL. */
static void kill_restart(void)
{
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

/* kill -9 with a pending debounced job: the job, its key and its aliases
 * survive; a push after the restart still merges into it. */
SERVER_TEST(kill_9_keeps_the_pending_job_and_its_key)
{
    for (int i = 0; i < 20; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "crash-%04d", i);
        push_ok(C, jid, "kq", i, "\"key\":\"c\",\"for\":60", NULL);
    }
    kill_restart();
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
    for (int i = 20; i < 40; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "crash-%04d", i);
        push_ok(C, jid, "kq", i, "\"key\":\"c\",\"for\":0.2", NULL);
    }
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
    /* one job, scheduled or (its 0.2 s gone) enqueued: both counts from
     * one INFO, as the job may move between two */
    json_t *info = rbh_json(rbh_cmd(C, "INFO"));
    long long sched = json_integer_value(rbh_get(info, "faktory.tasks.Scheduled.size")),
              ready = json_integer_value(rbh_get(info, "faktory.queues.kq"));
    json_decref(info);
    cr_assert_eq(sched + ready, 1, "%lld scheduled, %lld enqueued", sched, ready);
    cr_assert_eq(job_int(C, "crash-0000", "debounce.merged"), 39);
    expect_alias(C, "crash-0005", "crash-0000", "c");
    expect_alias(C, "crash-0030", "crash-0000", "c");
    json_t *j = fetch_wait(C, "kq");
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "crash-0000");
    cr_assert_eq(json_integer_value(rbh_get(j, "args.0")), 39);
    json_decref(j);
    /* fetched, then killed: the key stays free, the aliases stay */
    kill_restart();
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 0);
    expect_alias(C, "crash-0031", "crash-0000", "c");
    push_ok(C, "crash-9999", "kq", 1, "\"key\":\"c\",\"for\":60", NULL);
    cr_assert_eq(job_int(C, "crash-9999", "debounce.merged"), 0);
}

/* FLUSH forgets pending keys and aliases. */
SERVER_TEST(flush_forgets_keys_and_aliases)
{
    push_ok(C, "fl-000001", "fq", 1, "\"key\":\"f\",\"for\":60", NULL);
    push_ok(C, "fl-000002", "fq", 2, "\"key\":\"f\",\"for\":60", NULL);
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    json_t *v = job(C, "fl-000002");
    cr_assert(!v || json_is_null(v), "an alias outlived FLUSH");
    json_decref(v);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 0);
    push_ok(C, "fl-000003", "fq", 3, "\"key\":\"f\",\"for\":60", NULL);
    cr_assert_eq(job_int(C, "fl-000003", "debounce.merged"), 0);
}

#ifdef RBH_PG
#include <pthread.h>

typedef struct pusher {
    rbh_conn *c;
    int from, n;
    int failed;
} pusher;

static void *push_many(void *arg)
{
    pusher *p = arg;
    for (int i = p->from; i < p->from + p->n; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "two-%05d", i);
        char *r = push(p->c, jid, "tq", i, "\"key\":\"shared\",\"for\":60", NULL);
        p->failed += !r || strcmp(r, "+OK");
        free(r);
    }
    return NULL;
}

/* Two nodes on one database: pushes of one key through both merge into
 * one job, one after the other (the last one's args) and at once (two
 * pushers racing: still one job, every jid the job or an alias of it). */
SERVER_TEST(two_nodes_merge_one_key)
{
    static rbh_server S2; /* a second node on S's database */
    rbh_init(&S2);
    snprintf(S2.db, sizeof S2.db, "%s", S.db);
    cr_assert_eq(rbh_launch(&S2, NULL), 0, "the second node did not start (see %s)", S2.log);
    rbh_conn *c2 = rbh_connect(&S2, "w2");
    cr_assert_not_null(c2);
    for (int i = 0; i < 20; i++) { /* alternating nodes */
        char jid[32];
        snprintf(jid, sizeof jid, "alt-%05d", i);
        push_ok(i % 2 ? c2 : C, jid, "aq", i, "\"key\":\"both\",\"for\":60", NULL);
    }
    cr_assert_eq(job_int(c2, "alt-00000", "debounce.merged"), 19);
    cr_assert_eq(job_int(C, "alt-00000", "job.args.0"), 19);
    expect_alias(c2, "alt-00010", "alt-00000", "both");

    rbh_conn *c3 = rbh_connect(&S, "w3"), *c4 = rbh_connect(&S2, "w4");
    pusher p[2] = {{c3, 0, 50, 0}, {c4, 50, 50, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, push_many, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    rbh_close(c3);
    rbh_close(c4);
    long long pending = rbh_info_int(c2, "rebound.debounce.pending");
    long long scheduled = rbh_info_int(C, "faktory.tasks.Scheduled.size");
    json_t *first = NULL;
    const char *into = NULL;
    int jobs = 0, aliases = 0;
    for (int i = 0; i < 100; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "two-%05d", i);
        json_t *v = job(i % 2 ? c2 : C, jid);
        const char *st = json_string_value(json_object_get(v, "state"));
        if (st && !strcmp(st, "debounced")) {
            aliases++;
            json_decref(v);
        } else if (st) {
            jobs++;
            json_decref(first);
            first = v;
        } else {
            json_decref(v);
        }
    }
    into = first ? json_string_value(rbh_get(first, "job.jid")) : NULL;
    long long merged = into ? job_int(C, into, "debounce.merged") : -1;
    json_decref(first);
    rbh_close(c2);
    cr_assert_eq(rbh_stop(&S2), 0, "the second node did not exit cleanly");
    cr_assert_eq(p[0].failed + p[1].failed, 0, "pushes refused");
    cr_assert_eq(jobs, 1, "%d jobs for one key", jobs);
    cr_assert_eq(aliases, 99);
    cr_assert_eq(merged, 99);
    cr_assert_eq(pending, 2); /* "both" and "shared" */
    cr_assert_eq(scheduled, 2);
}
#endif
