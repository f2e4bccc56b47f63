/* Job lifecycle tests against the real server: PUSH/PUSHB validation,
 * FETCH order (queues, priorities, pauses), scheduled jobs, ACK, FAIL
 * through the policy (retry, dead, discard, catch, extension fields,
 * trimming, history), SNOOZE, EXTEND and reservation expiry. */
#include <criterion/criterion.h>

#include "common_helpers.h"

/* C connects as worker w1. */
static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(jobs, .init = start, .fini = rbh_suite_stop, .timeout = 90);

#define SERVER_TEST(name) RBH_SERVER_TEST(jobs, name)

#define PUSH_OK(...) cr_assert(rbh_expect(C, "+OK", "PUSH " __VA_ARGS__))

/* FETCHes from queues and returns the job's jid (caller frees), or NULL. */
static char *fetch_jid(rbh_conn *c, const char *queues)
{
    return rbh_fetch_jid(c, queues);
}

static void expect_fetch(rbh_conn *c, const char *queues, const char *want)
{
    char *jid = fetch_jid(c, queues);
    cr_assert(jid && !strcmp(jid, want), "fetched %s, wanted %s", jid ? jid : "nothing", want);
    free(jid);
}

static json_t *job_info(const char *jid)
{
    return rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", jid));
}

SERVER_TEST(push_fetch_ack_keeps_unknown_fields)
{
    PUSH_OK("{\"jid\":\"keep-0001\",\"jobtype\":\"email\",\"args\":[1,\"x\"],\"priority\":5,"
            "\"retry\":25,\"custom\":{\"a\":[1]},\"zzz\":{\"nested\":true}}");
    json_t *view = job_info("keep-0001");
    cr_assert_not_null(rbh_get(view, "job.created_at"));
    cr_assert_not_null(rbh_get(view, "job.enqueued_at"));
    json_decref(view);
    /* a created_at from the client is kept as sent; one for enqueued_at is replaced */
    PUSH_OK("{\"jid\":\"keep-0002\",\"jobtype\":\"e\",\"args\":[],\"queue\":\"k2\","
            "\"created_at\":\"2020-01-01T00:00:00Z\",\"enqueued_at\":\"1999\"}");
    json_t *k2 = rbh_json(rbh_cmd(C, "FETCH k2"));
    cr_assert_str_eq(json_string_value(json_object_get(k2, "created_at")), "2020-01-01T00:00:00Z");
    cr_assert_str_neq(json_string_value(json_object_get(k2, "enqueued_at")), "1999");
    json_decref(k2);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"keep-0002\"}"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH default"));
    cr_assert_not_null(j);
    cr_assert_str_eq(json_string_value(json_object_get(j, "jobtype")), "email");
    cr_assert(json_is_true(rbh_get(j, "zzz.nested")), "unknown field lost");
    cr_assert_eq(json_integer_value(rbh_get(j, "custom.a.0")), 1);
    cr_assert_not_null(json_object_get(j, "enqueued_at"));
    cr_assert_not_null(json_object_get(j, "created_at"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "queue")), "default");
    json_decref(j);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 1);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"keep-0001\"}"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 2);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 0);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"keep-0001\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"never-existed\"}"));
}

/* ACK's argument in the plain form {"jid":"X"} (read without the JSON
 * parser) and in every other form (parsed) names the same job; malformed
 * ones are refused and leave the job held. */
SERVER_TEST(ack_argument_forms_reach_the_same_job)
{
    const char *jids[] = {"form-0001", "form-0002", "form-0003", "form-0004", "form-\xc3\xa9\xc3\xa9\xc3\xa9", "form-0006"};
    for (int i = 0; i < 6; i++) {
        PUSH_OK("{\"jid\":\"%s\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"af\"}", jids[i]);
        expect_fetch(C, "af", jids[i]);
    }
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 6);
    char *r = rbh_cmd(C, "ACK {\"jid\":\"form-0006\"}}");
    cr_assert(r && !strncmp(r, "-ERR ACK: invalid JSON", 22), "got %s", r ? r : "(closed)");
    free(r);
    cr_assert(rbh_expect(C, "-ERR ACK: argument must be a JSON object", "ACK \"form-0006\""));
    cr_assert(rbh_expect(C, "-ERR ACK: jid must be a non-empty string", "ACK {\"jid\":\"\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form-0006x\"}")); /* unknown: nothing */
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 6);
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 0);

    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form-0001\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK { \"jid\" : \"form-0002\" }"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form\\u002d0003\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form-0004\",\"x\":1}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form-\xc3\xa9\xc3\xa9\xc3\xa9\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"form-0006\"}  "));
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 6);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 0);
    for (int i = 0; i < 6; i++)
        cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"%s\"}", jids[i]));
}

SERVER_TEST(push_validation_errors)
{
    struct { const char *job, *err; } cases[] = {
        /* Faktory's texts where Faktory refuses the same (manager.go);
         * Rebound's rule after them where it is wider (issue 25) */
        {"{\"jid\":\"short\",\"jobtype\":\"a\",\"args\":[]}", "-ERR jobs must have a reasonable jid parameter"},
        {"{\"jobtype\":\"a\",\"args\":[]}", "-ERR jobs must have a reasonable jid parameter"},
        {"{\"jid\":12345678,\"jobtype\":\"a\",\"args\":[]}", "-ERR jobs must have a reasonable jid parameter (a string of at least 8 characters)"},
        {"{\"jid\":\"val-00001\",\"args\":[]}", "-ERR jobs must have a jobtype parameter"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"\",\"args\":[]}", "-ERR jobs must have a jobtype parameter"},
        {"{\"jid\":\"val-00001\",\"jobtype\":7,\"args\":[]}", "-ERR jobs must have a jobtype parameter (job val-00001: a non-empty string)"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\"}", "-ERR jobs must have an args parameter"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":{}}", "-ERR jobs must have an args parameter (job val-00001: args must be an array)"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"at\":\"tomorrow\"}", "-ERR invalid timestamp for 'at': \"tomorrow\" (job val-00001: not an RFC 3339 time)"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":86401}", "-ERR jobs cannot be reserved for more than one day"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":-1}", "-ERR job val-00001: reserve_for must be between 0 and 86400, not -1"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":\"1\"}", "-ERR job val-00001: reserve_for must be an integer"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"priority\":10}", "-ERR job val-00001: priority must be between 1 and 9, not 10"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"a b\"}", "-ERR job val-00001: queue must be a non-empty name without spaces"},
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"custom\":1}", "-ERR job val-00001: custom must be an object"},
        /* retry: -1 (dead on failure) is the least; -2 means nothing (semantics.md §5) */
        {"{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],\"retry\":-2}", "-ERR job val-00001: retry must be between -1 and 1000000, not -2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert(rbh_expect(C, cases[i].err, "PUSH %s", cases[i].job));
    /* a bad policy: the field named once, as the job carries it (issue 13) */
    cr_assert(rbh_expect(C, "-ERR job val-00001: retry_policy: ftl min: invalid duration 'bogus': "
                            "expected a number",
                         "PUSH {\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],"
                         "\"retry_policy\":\"ftl:bogus\"}"));
    cr_assert(rbh_expect(C, "-ERR job val-00001: retry_policy: maximum_attempts: cannot be "
                            "negative, got '-1'",
                         "PUSH {\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],"
                         "\"retry_policy\":{\"maximum_attempts\":-1}}"));
    cr_assert(rbh_expect(C, "-ERR job val-00001: retry_policy: must be an object, a SPEC string "
                            "or an integer, got 'true'",
                         "PUSH {\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],"
                         "\"retry_policy\":true}"));
    cr_assert(rbh_expect(C, "-ERR job val-00001: custom.retry_policy: nonsense: unknown key",
                         "PUSH {\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[],"
                         "\"custom\":{\"retry_policy\":{\"nonsense\":1}}}"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0, "a rejected push changed state");
    PUSH_OK("{\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[]}");
    cr_assert(rbh_expect(C, "-ERR job val-00001 already exists",
                         "PUSH {\"jid\":\"val-00001\",\"jobtype\":\"a\",\"args\":[]}"));
}

SERVER_TEST(pushb_reports_rejected_jobs)
{
    json_t *r = rbh_json(rbh_cmd(C, "PUSHB [{\"jid\":\"pb-000001\",\"jobtype\":\"a\",\"args\":[]},"
                                    "{\"jid\":\"bad\",\"jobtype\":\"a\",\"args\":[]},"
                                    "{\"jid\":\"pb-000002\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"q2\"},7]"));
    cr_assert(json_is_object(r));
    cr_assert_eq(json_object_size(r), 2);
    cr_assert_str_eq(json_string_value(json_object_get(r, "bad")),
                     "jobs must have a reasonable jid parameter");
    cr_assert_str_eq(json_string_value(json_object_get(r, "#3")), "job must be a JSON object");
    json_decref(r);
    r = rbh_json(rbh_cmd(C, "PUSHB [{\"jid\":\"pb-000003\",\"jobtype\":\"a\",\"args\":[],"
                            "\"retry_policy\":{\"maximum_attempts\":-1}},"
                            "{\"jid\":\"pb-000004\",\"jobtype\":\"a\",\"args\":[],\"retry\":-2}]"));
    cr_assert_str_eq(json_string_value(json_object_get(r, "pb-000003")),
                     "job pb-000003: retry_policy: maximum_attempts: cannot be negative, got '-1'");
    cr_assert_str_eq(json_string_value(json_object_get(r, "pb-000004")),
                     "job pb-000004: retry must be between -1 and 1000000, not -2");
    json_decref(r);
    cr_assert(rbh_expect(C, "{}", "PUSHB []"));
    expect_fetch(C, "q2 default", "pb-000002");
    expect_fetch(C, "q2 default", "pb-000001");
}

SERVER_TEST(fetch_checks_queues_in_order_and_skips_paused)
{
    PUSH_OK("{\"jid\":\"ord-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"low\"}");
    PUSH_OK("{\"jid\":\"ord-00002\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"high\"}");
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE high"));
    expect_fetch(C, "high low", "ord-00001");
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME high"));
    expect_fetch(C, "high low", "ord-00002");
}

SERVER_TEST(priority_higher_first_fifo_within)
{
    PUSH_OK("{\"jid\":\"pri-00001\",\"jobtype\":\"a\",\"args\":[],\"priority\":1}");
    PUSH_OK("{\"jid\":\"pri-00002\",\"jobtype\":\"a\",\"args\":[]}");
    PUSH_OK("{\"jid\":\"pri-00003\",\"jobtype\":\"a\",\"args\":[],\"priority\":9}");
    PUSH_OK("{\"jid\":\"pri-00004\",\"jobtype\":\"a\",\"args\":[],\"priority\":5}");
    PUSH_OK("{\"jid\":\"pri-00005\",\"jobtype\":\"a\",\"args\":[],\"priority\":9}");
    const char *order[] = {"pri-00003", "pri-00005", "pri-00002", "pri-00004", "pri-00001"};
    for (int i = 0; i < 5; i++)
        expect_fetch(C, "default", order[i]);
}

SERVER_TEST(empty_fetch_waits_then_null)
{
    int64_t t0 = rbh_now_ms();
    cr_assert(rbh_expect(C, "$-1", "FETCH nothing-here"));
    cr_assert(rbh_now_ms() - t0 >= 1500, "FETCH returned before waiting");
}

SERVER_TEST(waiting_fetch_gets_a_job_pushed_meanwhile)
{
    rbh_conn *w = rbh_connect(&S, "w2");
    cr_assert_eq(rbh_send(w, "FETCH later\r\n", 13), 0);
    /* The worker is parked; push from another connection. */
    PUSH_OK("{\"jid\":\"late-0001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"later\"}");
    json_t *j = rbh_json(rbh_reply(w));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "late-0001");
    json_decref(j);
    rbh_close(w);
}

SERVER_TEST(scheduled_job_becomes_fetchable_at_its_time)
{
    char at[64];
    time_t t = time(NULL) + 2; /* at least a second ahead: still scheduled when INFO is read */
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    PUSH_OK("{\"jid\":\"sch-00001\",\"jobtype\":\"a\",\"args\":[],\"at\":\"%s\"}", at);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 1);
    char *jid = NULL;
    for (int i = 0; i < 5 && !jid; i++) /* each FETCH waits up to 2 s */
        jid = fetch_jid(C, "default");
    cr_assert_str_eq(jid, "sch-00001");
    free(jid);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 0);
    /* a past `at` is enqueued at once */
    PUSH_OK("{\"jid\":\"sch-00002\",\"jobtype\":\"a\",\"args\":[],\"at\":\"2001-01-01T00:00:00Z\"}");
    expect_fetch(C, "default", "sch-00002");
}

SERVER_TEST(fail_retries_with_failure_hash_and_history)
{
    PUSH_OK("{\"jid\":\"fail-0001\",\"jobtype\":\"a\",\"args\":[],\"backtrace\":2}");
    expect_fetch(C, "default", "fail-0001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"fail-0001\",\"errtype\":\"Boom\",\"message\":\"it broke\","
                                   "\"backtrace\":[\"l1\",\"l2\",\"l3\"]}"));
    json_t *v = job_info("fail-0001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "retries");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.failure.retry_count")), 0);
    cr_assert_eq(json_integer_value(rbh_get(v, "job.failure.remaining")), 25);
    cr_assert_str_eq(json_string_value(rbh_get(v, "job.failure.errtype")), "Boom");
    cr_assert_str_eq(json_string_value(rbh_get(v, "job.failure.message")), "it broke");
    cr_assert_eq(json_array_size(rbh_get(v, "job.failure.backtrace")), 2);
    cr_assert_not_null(json_string_value(rbh_get(v, "job.failure.failed_at")));
    cr_assert_not_null(json_string_value(rbh_get(v, "job.failure.next_at")));
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.outcome")), "retry");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.source")), "computed");
    long long delay = json_integer_value(rbh_get(v, "history.0.delay_ms"));
    cr_assert(delay >= 15000 && delay <= 44000, "sidekiq first delay %lld", delay);
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.attempt")), 1);
    json_decref(v);
    cr_assert_eq(rbh_info_int(C, "faktory.total_failures"), 1);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Retries.size"), 1);
    /* not working any more: a second FAIL is refused */
    cr_assert(rbh_expect(C, "-ERR Job not found fail-0001", "FAIL {\"jid\":\"fail-0001\"}"));
    cr_assert(rbh_expect(C, "-ERR Job not found nope-nope", "FAIL {\"jid\":\"nope-nope\"}"));
}

/* Faktory's rule: a FAIL's backtrace keeps the first `backtrace` lines of the
 * job (none when the job has no such field or 0), in the failure hash and in
 * the attempt's history entry alike. */
SERVER_TEST(fail_keeps_the_first_backtrace_lines_the_job_asks_for)
{
    const struct {
        const char *jid, *limit, *sent, *kept;
    } cases[] = {
        {"bt-000001", ",\"backtrace\":2", "[\"l1\",\"l2\",\"l3\"]", "[\"l1\",\"l2\"]"},
        {"bt-000002", ",\"backtrace\":5", "[\"a\",\"b\"]", "[\"a\",\"b\"]"},
        {"bt-000003", ",\"backtrace\":0", "[\"a\",\"b\"]", "[]"},
        {"bt-000004", "", "[\"a\",\"b\"]", "[]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        PUSH_OK("{\"jid\":\"%s\",\"jobtype\":\"a\",\"args\":[]%s}", cases[i].jid,
                cases[i].limit);
        expect_fetch(C, "default", cases[i].jid);
        cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"backtrace\":%s}",
                             cases[i].jid, cases[i].sent));
        json_t *v = job_info(cases[i].jid);
        json_t *want = json_loads(cases[i].kept, 0, NULL);
        json_t *fbt = rbh_get(v, "job.failure.backtrace");
        /* none kept: Faktory's failure leaves the key out (omitempty) */
        cr_assert(json_array_size(want) ? json_equal(fbt, want) : fbt == NULL,
                  "%s: failure.backtrace", cases[i].jid);
        cr_assert(json_equal(rbh_get(v, "history.0.backtrace"), want), "%s: history",
                  cases[i].jid);
        json_decref(want);
        json_decref(v);
    }
}

SERVER_TEST(fail_input_is_trimmed)
{
    PUSH_OK("{\"jid\":\"trim-0001\",\"jobtype\":\"a\",\"args\":[]}");
    expect_fetch(C, "default", "trim-0001");
    char et[300];
    memset(et, 'E', 250);
    et[250] = '\0';
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"trim-0001\",\"errtype\":\"%s\",\"message\":\"\","
                                   "\"backtrace\":[\"x\"]}", et));
    json_t *v = job_info("trim-0001");
    cr_assert_eq(strlen(json_string_value(rbh_get(v, "job.failure.errtype"))), 100);
    cr_assert_str_eq(json_string_value(rbh_get(v, "job.failure.message")), "unknown");
    cr_assert_eq(json_array_size(rbh_get(v, "job.failure.backtrace")), 0, "no backtrace setting: none kept");
    json_decref(v);
}

SERVER_TEST(client_retry_bound_zero_discards_minus_one_kills)
{
    PUSH_OK("{\"jid\":\"rt0-00001\",\"jobtype\":\"a\",\"args\":[],\"retry\":0}");
    PUSH_OK("{\"jid\":\"rtm-00001\",\"jobtype\":\"a\",\"args\":[],\"retry\":-1}");
    expect_fetch(C, "default", "rt0-00001");
    expect_fetch(C, "default", "rtm-00001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"rt0-00001\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"rtm-00001\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"rt0-00001\"}"));
    char *st = rbh_job_state(C, "rtm-00001");
    cr_assert_str_eq(st, "dead");
    free(st);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 1);
}

SERVER_TEST(fail_extensions_retryable_false_and_overrides)
{
    PUSH_OK("{\"jid\":\"ext-00001\",\"jobtype\":\"a\",\"args\":[]}");
    PUSH_OK("{\"jid\":\"ext-00002\",\"jobtype\":\"a\",\"args\":[]}");
    PUSH_OK("{\"jid\":\"ext-00003\",\"jobtype\":\"a\",\"args\":[]}");
    expect_fetch(C, "default", "ext-00001");
    expect_fetch(C, "default", "ext-00002");
    expect_fetch(C, "default", "ext-00003");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"ext-00001\",\"errtype\":\"E\",\"retryable\":false}"));
    json_t *v = job_info("ext-00001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "dead");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.outcome")), "dead");
    json_decref(v);

    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"ext-00002\",\"errtype\":\"E\",\"retry_after\":\"7\"}"));
    v = job_info("ext-00002");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.source")), "server-requested");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 7000);
    json_decref(v);

    /* next_retry_delay: the job comes back after 0.2 s */
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"ext-00003\",\"errtype\":\"E\",\"next_retry_delay\":0.2}"));
    v = job_info("ext-00003");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.source")), "override");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 200);
    json_decref(v);
    expect_fetch(C, "default", "ext-00003");
    v = job_info("ext-00003");
    cr_assert_eq(json_integer_value(json_object_get(v, "attempts")), 2);
    json_decref(v);

    cr_assert(rbh_expect(C, "-ERR FAIL: retryable must be true or false",
                         "FAIL {\"jid\":\"ext-00003\",\"retryable\":\"no\"}"));
    cr_assert(rbh_expect(C, "-ERR FAIL: next_retry_delay must be a number of seconds",
                         "FAIL {\"jid\":\"ext-00003\",\"next_retry_delay\":\"5\"}"));
    cr_assert(rbh_expect(C, "-ERR FAIL: retry_after must be seconds or an HTTP-date",
                         "FAIL {\"jid\":\"ext-00003\",\"retry_after\":[1]}"));
}

SERVER_TEST(job_retry_policy_applies_and_exhausts_to_dead)
{
    /* FTL: 1 retry after 1 s min; use next_retry_delay to keep it fast */
    PUSH_OK("{\"jid\":\"pol-00001\",\"jobtype\":\"a\",\"args\":[],\"retry_policy\":\"ftl:1 1s 1s\"}");
    expect_fetch(C, "default", "pol-00001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"pol-00001\",\"errtype\":\"E\"}"));
    json_t *v = job_info("pol-00001");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 1000);
    cr_assert_eq(json_integer_value(rbh_get(v, "job.failure.remaining")), 1);
    json_decref(v);
    expect_fetch(C, "default", "pol-00001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"pol-00001\",\"errtype\":\"E\"}"));
    v = job_info("pol-00001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "dead");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.1.reason")), "exhausted");
    cr_assert_eq(json_array_size(json_object_get(v, "history")), 2);
    json_decref(v);
}

SERVER_TEST(catch_job_carries_the_original)
{
    PUSH_OK("{\"jid\":\"cat-00001\",\"jobtype\":\"charge\",\"args\":[42],\"queue\":\"billing\","
            "\"custom\":{\"retry_policy\":\"//ftl:retry 0 catch notify_failure\"}}");
    expect_fetch(C, "billing", "cat-00001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"cat-00001\",\"errtype\":\"Declined\",\"message\":\"card\"}"));
    char *st = rbh_job_state(C, "cat-00001");
    cr_assert_str_eq(st, "dead");
    free(st);
    json_t *cj = rbh_json(rbh_cmd(C, "FETCH billing"));
    cr_assert_not_null(cj);
    cr_assert_str_eq(json_string_value(json_object_get(cj, "jobtype")), "notify_failure");
    cr_assert_str_eq(json_string_value(rbh_get(cj, "args.0.jid")), "cat-00001");
    cr_assert_str_eq(json_string_value(rbh_get(cj, "args.0.jobtype")), "charge");
    cr_assert_eq(json_integer_value(rbh_get(cj, "args.0.args.0")), 42);
    cr_assert_str_eq(json_string_value(rbh_get(cj, "args.0.error.errtype")), "Declined");
    cr_assert_str_eq(json_string_value(rbh_get(cj, "args.0.error.message")), "card");
    cr_assert_str_eq(json_string_value(rbh_get(cj, "custom.catch_of")), "cat-00001");
    /* the catch job itself retries (indefinitely) */
    const char *cjid = json_string_value(json_object_get(cj, "jid"));
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\"}", cjid));
    st = rbh_job_state(C, cjid);
    cr_assert_str_eq(st, "retries");
    free(st);
    json_decref(cj);
}

SERVER_TEST(snooze_reschedules_without_consuming_an_attempt)
{
    PUSH_OK("{\"jid\":\"snz-00001\",\"jobtype\":\"a\",\"args\":[]}");
    expect_fetch(C, "default", "snz-00001");
    cr_assert(rbh_expect(C, "+OK", "SNOOZE {\"jid\":\"snz-00001\",\"seconds\":1}"));
    char *st = rbh_job_state(C, "snz-00001");
    cr_assert_str_eq(st, "scheduled");
    free(st);
    json_t *v = job_info("snz-00001");
    cr_assert_eq(json_integer_value(json_object_get(v, "attempts")), 0);
    json_decref(v);
    expect_fetch(C, "default", "snz-00001"); /* waits for it */
    v = job_info("snz-00001");
    cr_assert_eq(json_integer_value(json_object_get(v, "attempts")), 1);
    json_decref(v);
    cr_assert(rbh_expect(C, "-ERR SNOOZE: seconds must be an integer from 0 to 31536000",
                         "SNOOZE {\"jid\":\"snz-00001\",\"seconds\":-1}"));
    cr_assert(rbh_expect(C, "-ERR SNOOZE: job zzzzzzzz not found", "SNOOZE {\"jid\":\"zzzzzzzz\",\"seconds\":1}"));
    cr_assert(rbh_expect(C, "+OK", "SNOOZE {\"jid\":\"snz-00001\",\"seconds\":0}"));
    cr_assert(rbh_expect(C, "-ERR SNOOZE: job snz-00001 is not working (it is enqueued)",
                         "SNOOZE {\"jid\":\"snz-00001\",\"seconds\":1}"));
}

SERVER_TEST(extend_and_reservation_expiry)
{
    PUSH_OK("{\"jid\":\"res-00001\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":1,"
            "\"retry_policy\":{\"dialect\":\"temporal\",\"initial_interval\":\"100ms\",\"maximum_attempts\":0}}");
    expect_fetch(C, "default", "res-00001");
    cr_assert(rbh_expect(C, "+OK", "EXTEND {\"jid\":\"res-00001\",\"reserve_for\":60}"));
    json_t *v = job_info("res-00001");
    cr_assert_not_null(json_object_get(v, "reserved_until"));
    json_decref(v);
    cr_assert(rbh_expect(C, "-ERR EXTEND: reserve_for must be an integer from 1 to 86400",
                         "EXTEND {\"jid\":\"res-00001\",\"reserve_for\":0}"));
    cr_assert(rbh_expect(C, "+OK", "EXTEND {\"jid\":\"res-00001\",\"reserve_for\":1}"));
    /* the reservation expires: ReservationExpired through the policy */
    cr_assert(rbh_wait_state(C, "res-00001", "enqueued", 5000) ||
              rbh_wait_state(C, "res-00001", "retries", 100));
    v = job_info("res-00001");
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.errtype")), "ReservationExpired");
    json_decref(v);
    /* a late ACK from the original worker completes it (nobody re-fetched it) */
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"res-00001\"}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"res-00001\"}"));
    cr_assert(rbh_expect(C, "-ERR EXTEND: job res-00001 not found", "EXTEND {\"jid\":\"res-00001\",\"reserve_for\":5}"));
}

SERVER_TEST(late_ack_after_another_worker_took_the_job_is_refused)
{
    PUSH_OK("{\"jid\":\"own-00001\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":1,"
            "\"retry_policy\":{\"dialect\":\"temporal\",\"initial_interval\":\"100ms\",\"maximum_attempts\":0}}");
    expect_fetch(C, "default", "own-00001");
    rbh_conn *w2 = rbh_connect(&S, "w2");
    char *jid = NULL;
    for (int i = 0; i < 5 && !jid; i++)
        jid = fetch_jid(w2, "default"); /* after the expiry and the retry delay */
    cr_assert_str_eq(jid, "own-00001");
    free(jid);
    cr_assert(rbh_expect(C, "-ERR job own-00001 is reserved by another worker", "ACK {\"jid\":\"own-00001\"}"));
    cr_assert(rbh_expect(C, "-ERR job own-00001 is reserved by another worker",
                         "FAIL {\"jid\":\"own-00001\",\"errtype\":\"late\"}"));
    char *st = rbh_job_state(C, "own-00001");
    cr_assert_str_eq(st, "working");
    free(st);
    /* the holder may ACK on any of its connections */
    rbh_conn *w2b = rbh_connect(&S, "w2");
    cr_assert(rbh_expect(w2b, "+OK", "ACK {\"jid\":\"own-00001\"}"));
    rbh_close(w2b);
    rbh_close(w2);
}

/* A working job is held by the wid that fetched it: ACK, FAIL, SNOOZE and
 * EXTEND from a connection that said HELLO with another wid are refused
 * with one error and change nothing (the job view is the same, the
 * counters too); the holder then ACKs it. */
SERVER_TEST(another_worker_cannot_ack_fail_snooze_or_extend_a_held_job)
{
    PUSH_OK("{\"jid\":\"held-0001\",\"jobtype\":\"a\",\"args\":[]}");
    expect_fetch(C, "default", "held-0001");
    json_t *before = job_info("held-0001");
    cr_assert_str_eq(json_string_value(json_object_get(before, "wid")), "w1");
    rbh_conn *b = rbh_connect(&S, "wB");
    const char *refused = "-ERR job held-0001 is reserved by another worker";
    cr_assert(rbh_expect(b, refused, "ACK {\"jid\":\"held-0001\"}"));
    cr_assert(rbh_expect(b, refused, "ACK {\"jid\": \"held-0001\"}")); /* the parsed form */
    cr_assert(rbh_expect(b, refused, "FAIL {\"jid\":\"held-0001\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(b, refused, "SNOOZE {\"jid\":\"held-0001\",\"seconds\":0}"));
    cr_assert(rbh_expect(b, refused, "SNOOZE {\"jid\":\"held-0001\",\"seconds\":60}"));
    cr_assert(rbh_expect(b, refused, "EXTEND {\"jid\":\"held-0001\",\"reserve_for\":600}"));
    json_t *after = job_info("held-0001");
    cr_assert(json_equal(before, after), "the job changed: %s", json_dumps(after, 0));
    json_decref(before);
    json_decref(after);
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_failures"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 1);
    /* the holder, on another connection of its pool too */
    rbh_conn *a2 = rbh_connect(&S, "w1");
    cr_assert(rbh_expect(a2, "+OK", "EXTEND {\"jid\":\"held-0001\",\"reserve_for\":600}"));
    rbh_close(a2);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"held-0001\"}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"held-0001\"}"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 1);
    rbh_close(b);
}

/* A connection without a wid (a producer, a client's pool) is not checked:
 * it may ACK, FAIL, SNOOZE and EXTEND a job another worker holds, as
 * Faktory allows. */
SERVER_TEST(a_connection_without_a_wid_may_act_on_a_held_job)
{
    for (int i = 1; i <= 3; i++) {
        PUSH_OK("{\"jid\":\"anon-%04d\",\"jobtype\":\"a\",\"args\":[]}", i);
        char want[16];
        snprintf(want, sizeof want, "anon-%04d", i);
        expect_fetch(C, "default", want);
    }
    rbh_conn *p = rbh_connect(&S, NULL);
    cr_assert(rbh_expect(p, "+OK", "EXTEND {\"jid\":\"anon-0001\",\"reserve_for\":600}"));
    cr_assert(rbh_expect(p, "+OK", "ACK {\"jid\":\"anon-0001\"}"));
    cr_assert(rbh_expect(p, "$-1", "JOB {\"jid\":\"anon-0001\"}"));
    cr_assert(rbh_expect(p, "+OK", "FAIL {\"jid\":\"anon-0002\",\"errtype\":\"E\"}"));
    char *st = rbh_job_state(p, "anon-0002");
    cr_assert_str_eq(st, "retries");
    free(st);
    cr_assert(rbh_expect(p, "+OK", "SNOOZE {\"jid\":\"anon-0003\",\"seconds\":60}"));
    st = rbh_job_state(p, "anon-0003");
    cr_assert_str_eq(st, "scheduled");
    free(st);
    rbh_close(p);
}

SERVER_TEST(config_policies_by_jobtype_and_queue_with_the_client_bound)
{
    rbh_close(C);
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[retry.jobtypes.send_email]\nftl = \"10 5s 1m\"\n"
                               "[retry.queues.slow]\nftl = \"2 7s 1m\"\n", NULL), 0);
    C = rbh_connect(&S, "w1");
    PUSH_OK("{\"jid\":\"cfg-00001\",\"jobtype\":\"send_email\",\"args\":[],\"retry\":25}");
    PUSH_OK("{\"jid\":\"cfg-00002\",\"jobtype\":\"other\",\"args\":[],\"queue\":\"slow\"}");
    PUSH_OK("{\"jid\":\"cfg-00003\",\"jobtype\":\"send_email\",\"args\":[],\"retry\":0}");
    expect_fetch(C, "default slow", "cfg-00001");
    expect_fetch(C, "default slow", "cfg-00003");
    expect_fetch(C, "default slow", "cfg-00002");
    for (int i = 1; i <= 3; i++)
        cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"cfg-%05d\",\"errtype\":\"E\"}", i));
    json_t *v = job_info("cfg-00001");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 5000, "jobtype policy");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.failure.remaining")), 10);
    json_decref(v);
    v = job_info("cfg-00002");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 7000, "queue policy");
    json_decref(v);
    /* retry 0 from the client: discarded whatever the schedule says */
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"cfg-00003\"}"));
}

/* `rebound serve` resolves the environment as every other subcommand does
 * (--env, else $REBOUND_ENV): a job type's policy that only the overlay
 * rebound.staging.toml defines schedules its retries, the base file's
 * [retry] the others' (issue 13). */
SERVER_TEST(serve_reads_the_overlay_that_rebound_env_names)
{
    rbh_close(C);
    cr_assert_eq(rbh_stop(&S), 0);
    rbh_init(&S);
    char overlay[320];
    rbh_write_file(&S, "rebound.toml", "[retry]\nftl = \"5 3s 1m\"\n", S.config, sizeof S.config);
    rbh_write_file(&S, "rebound.staging.toml", "[retry.jobtypes.tk]\nftl = \"3 9s 1m\"\n", overlay,
                   sizeof overlay);
    setenv("REBOUND_ENV", "staging", 1); /* this test's own process; the server inherits it */
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    PUSH_OK("{\"jid\":\"env-00001\",\"jobtype\":\"tk\",\"args\":[]}");
    PUSH_OK("{\"jid\":\"env-00002\",\"jobtype\":\"other\",\"args\":[]}");
    expect_fetch(C, "default", "env-00001");
    expect_fetch(C, "default", "env-00002");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"env-00001\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"env-00002\",\"errtype\":\"E\"}"));
    json_t *v = job_info("env-00001");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 9000,
                 "tk follows [retry.jobtypes.tk] of the overlay");
    cr_assert_eq(json_integer_value(rbh_get(v, "job.failure.remaining")), 3);
    json_decref(v);
    v = job_info("env-00002");
    cr_assert_eq(json_integer_value(rbh_get(v, "history.0.delay_ms")), 3000,
                 "other job types follow [retry] of the base file");
    json_decref(v);
    /* --env wins over $REBOUND_ENV: with an overlay that does not exist the
     * server refuses to start, naming it */
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0);
    unsetenv("REBOUND_ENV"); /* distributed mode: rbh_init runs `rebound migrate` here */
    rbh_init(&S);
    setenv("REBOUND_ENV", "staging", 1);
    rbh_write_file(&S, "rebound.toml", "[retry]\nftl = \"5 3s 1m\"\n", S.config, sizeof S.config);
    const char *const missing[] = {"--env", "nope", NULL};
    cr_assert_eq(rbh_launch(&S, missing), -1, "started without rebound.nope.toml");
    FILE *f = fopen(S.log, "r");
    char line[1024] = "";
    cr_assert(f && fgets(line, sizeof line, f));
    fclose(f);
    cr_assert(strstr(line, "rebound.nope.toml"), "log: %s", line);
}

/* A malformed FAIL, SNOOZE or EXTEND is answered with the field's error
 * whatever the job's state (unknown, not working, held by another worker,
 * working), as a malformed PUSH or ACK is, and changes nothing; a
 * well-formed one then gets the state's reply. The same replies on a
 * single node and on PostgreSQL. */
SERVER_TEST(malformed_fail_snooze_extend_report_the_argument_first)
{
    static const char *const bad[][2] = {
        {"FAIL: retryable must be true or false", "FAIL {\"jid\":\"%s\",\"retryable\":\"x\"}"},
        {"FAIL: next_retry_delay must be a number of seconds",
         "FAIL {\"jid\":\"%s\",\"next_retry_delay\":\"soon\"}"},
        {"FAIL: retry_after must be seconds or an HTTP-date",
         "FAIL {\"jid\":\"%s\",\"retry_after\":[1]}"},
        {"SNOOZE: seconds must be an integer from 0 to 31536000",
         "SNOOZE {\"jid\":\"%s\",\"seconds\":-1}"},
        {"SNOOZE: seconds must be an integer from 0 to 31536000",
         "SNOOZE {\"jid\":\"%s\",\"seconds\":\"x\"}"},
        {"EXTEND: reserve_for must be an integer from 1 to 86400", "EXTEND {\"jid\":\"%s\"}"},
        {"EXTEND: reserve_for must be an integer from 1 to 86400",
         "EXTEND {\"jid\":\"%s\",\"reserve_for\":0}"},
    };
    char cmd[200], want[100];
    /* every malformed command on: no such job, an enqueued job, a job
     * another worker holds, a job this worker holds */
    PUSH_OK("{\"jid\":\"mal-0001\",\"jobtype\":\"a\",\"args\":[]}");
    PUSH_OK("{\"jid\":\"mal-0002\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"other\"}");
    PUSH_OK("{\"jid\":\"mal-0003\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"mine\"}");
    rbh_conn *b = rbh_connect(&S, "wB");
    expect_fetch(b, "other", "mal-0002");
    expect_fetch(C, "mine", "mal-0003");
    const char *jids[] = {"mal-none", "mal-0001", "mal-0002", "mal-0003"};
    for (size_t k = 0; k < sizeof jids / sizeof *jids; k++) {
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            snprintf(cmd, sizeof cmd, bad[i][1], jids[k]);
            snprintf(want, sizeof want, "-ERR %s", bad[i][0]);
            cr_assert(rbh_expect(C, want, "%s", cmd));
        }
    }
    char *st = rbh_job_state(C, "mal-0001");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    for (int k = 2; k <= 3; k++) {
        st = rbh_job_state(C, jids[k]);
        cr_assert_str_eq(st, "working");
        free(st);
    }
    cr_assert_eq(rbh_info_int(C, "faktory.total_failures"), 0);
    /* well-formed: the job's state decides */
    cr_assert(rbh_expect(C, "-ERR Job not found mal-none", "FAIL {\"jid\":\"mal-none\"}"));
    cr_assert(rbh_expect(C, "-ERR SNOOZE: job mal-none not found",
                         "SNOOZE {\"jid\":\"mal-none\",\"seconds\":1}"));
    cr_assert(rbh_expect(C, "-ERR Job not found mal-0001", "FAIL {\"jid\":\"mal-0001\"}"));
    cr_assert(rbh_expect(C, "-ERR SNOOZE: job mal-0001 is not working (it is enqueued)",
                         "SNOOZE {\"jid\":\"mal-0001\",\"seconds\":1}"));
    cr_assert(rbh_expect(C, "-ERR EXTEND: job mal-0001 is not working (it is enqueued)",
                         "EXTEND {\"jid\":\"mal-0001\",\"reserve_for\":1}"));
    cr_assert(rbh_expect(C, "-ERR job mal-0002 is reserved by another worker",
                         "SNOOZE {\"jid\":\"mal-0002\",\"seconds\":1}"));
    cr_assert(rbh_expect(b, "+OK", "ACK {\"jid\":\"mal-0002\"}"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"mal-0003\"}"));
    rbh_close(b);
}

/* ACK, FAIL, SNOOZE and EXTEND pipelined on one connection are answered in
 * order, each for its own command: those answered at once (no such job,
 * another worker's job) and those answered after their change is durable
 * alike. */
SERVER_TEST(pipelined_job_commands_are_answered_in_order)
{
    enum { N = 40, MISSING = 300 };
    PUSH_OK("{\"jid\":\"pipe-held\",\"jobtype\":\"a\",\"args\":[]}");
    expect_fetch(C, "default", "pipe-held");
    rbh_conn *b = rbh_connect(&S, "wB");
    for (int i = 0; i < N; i++) {
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"pipe-%04d\",\"jobtype\":\"a\",\"args\":[]}", i));
        char jid[16];
        snprintf(jid, sizeof jid, "pipe-%04d", i);
        expect_fetch(b, "default", jid);
    }
    size_t cap = (size_t)(N * 6 + MISSING) * 96, len = 0;
    char *all = malloc(cap);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(all + len, cap - len,
                                "ACK {\"jid\":\"nope-%d\"}\r\n"
                                "SNOOZE {\"jid\":\"nope-%d\",\"seconds\":1}\r\n"
                                "ACK {\"jid\":\"pipe-held\"}\r\n"
                                "EXTEND {\"jid\":\"pipe-%04d\",\"reserve_for\":60}\r\n"
                                "FAIL {\"jid\":\"nope-%d\"}\r\n"
                                "ACK {\"jid\":\"pipe-%04d\"}\r\n",
                                i, i, i, i, i);
    for (int i = 0; i < MISSING; i++)
        len += (size_t)snprintf(all + len, cap - len, "ACK {\"jid\":\"gone-%d\"}\r\n", i);
    cr_assert_eq(rbh_send(b, all, len), 0);
    free(all);
    for (int i = 0; i < N; i++) {
        char want[6][96];
        snprintf(want[0], sizeof want[0], "+OK");
        snprintf(want[1], sizeof want[1], "-ERR SNOOZE: job nope-%d not found", i);
        snprintf(want[2], sizeof want[2], "-ERR job pipe-held is reserved by another worker");
        snprintf(want[3], sizeof want[3], "+OK");
        snprintf(want[4], sizeof want[4], "-ERR Job not found nope-%d", i);
        snprintf(want[5], sizeof want[5], "+OK");
        for (int k = 0; k < 6; k++) {
            char *r = rbh_reply(b);
            cr_assert(r && !strcmp(r, want[k]), "group %d reply %d: %s, wanted %s", i, k,
                      r ? r : "(closed)", want[k]);
            free(r);
        }
    }
    for (int i = 0; i < MISSING; i++) {
        char *r = rbh_reply(b);
        cr_assert(r && !strcmp(r, "+OK"), "missing ACK %d: %s", i, r ? r : "(closed)");
        free(r);
    }
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), N);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Busy.size"), 1);
    rbh_close(b);
}

/* PUSHB's error object lists its keys in the order of the array, whatever
 * made an element fail (its validation, or a jid already taken); a taken
 * jid's message is cut as any error message (511 bytes), in PUSH as in
 * PUSHB. */
SERVER_TEST(pushb_errors_in_array_order_and_long_jids)
{
    PUSH_OK("{\"jid\":\"pbo-00001\",\"jobtype\":\"a\",\"args\":[]}");
    cr_assert(rbh_expect(C, "{\"pbo-00001\":\"job pbo-00001 already exists\",\"bad\":\"jobs must have "
                            "a reasonable jid parameter\",\"pbo-00002\":\"job pbo-00002 already "
                            "exists\"}",
                         "PUSHB [{\"jid\":\"pbo-00001\",\"jobtype\":\"a\",\"args\":[]},"
                         "{\"jid\":\"bad\",\"jobtype\":\"a\",\"args\":[]},"
                         "{\"jid\":\"pbo-00002\",\"jobtype\":\"a\",\"args\":[]},"
                         "{\"jid\":\"pbo-00002\",\"jobtype\":\"a\",\"args\":[]}]"));
    char jid[701], msg[1200], want[1300];
    memset(jid, 'j', sizeof jid - 1);
    jid[sizeof jid - 1] = '\0';
    PUSH_OK("{\"jid\":\"%s\",\"jobtype\":\"a\",\"args\":[]}", jid);
    snprintf(msg, 512, "job %s already exists", jid); /* rb_err's 512 bytes */
    snprintf(want, sizeof want, "-ERR %s", msg);
    cr_assert(rbh_expect(C, want, "PUSH {\"jid\":\"%s\",\"jobtype\":\"a\",\"args\":[]}", jid));
    snprintf(want, sizeof want, "{\"%s\":\"%s\"}", jid, msg);
    cr_assert(rbh_expect(C, want, "PUSHB [{\"jid\":\"%s\",\"jobtype\":\"a\",\"args\":[]}]", jid));
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 3);
}

/* A FETCH that waits holds back the commands pipelined after it: they run
 * once it is answered, by a job pushed meanwhile or by null after 2 s. */
SERVER_TEST(commands_pipelined_after_a_waiting_fetch_run_when_it_ends)
{
    rbh_conn *w = rbh_connect(&S, "wP");
    const char *two = "FETCH pq-wait\r\nACK {\"jid\":\"pqw-00001\"}\r\n";
    cr_assert(rbh_send_parked(&S, w, two)); /* parked: the ACK waits behind it */
    PUSH_OK("{\"jid\":\"pqw-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"pq-wait\"}");
    json_t *j = rbh_json(rbh_reply(w));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "pqw-00001");
    json_decref(j);
    char *r = rbh_reply(w);
    cr_assert(r && !strcmp(r, "+OK"), "ACK after the FETCH: %s", r ? r : "(closed)");
    free(r);
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), 1);
    const char *empty = "FETCH pq-empty\r\nACK {\"jid\":\"pqw-00002\"}\r\n";
    cr_assert_eq(rbh_send(w, empty, strlen(empty)), 0);
    r = rbh_reply(w);
    cr_assert(r && !strcmp(r, "$-1"), "FETCH of nothing: %s", r ? r : "(closed)");
    free(r);
    r = rbh_reply(w);
    cr_assert(r && !strcmp(r, "+OK"), "ACK after the null: %s", r ? r : "(closed)");
    free(r);
    rbh_close(w);
}
