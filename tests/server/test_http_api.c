/* The HTTP API against the real server: every read endpoint (info, stats,
 * queues, job lists with filters and paging, one job with its history and
 * schedule, workers, policy simulation), every action (job retry/kill/
 * discard, bulk, queue pause/resume, workers quiet/terminate), their errors
 * as JSON with HTTP status codes, and that actions are durable when they
 * answer; the version in /api/info and /metrics; Faktory Enterprise's views
 * (cron, throttles, a job's unique lock and expiry, expired jobs). */
#include <criterion/criterion.h>

#include "common/timeutil.h"
#include "common/version.h"
#include "test_http_harness.h"

static rbh_server S;
static rbh_conn *C;
static int H; /* HTTP port */

static void start(void)
{
    cr_assert_eq(rbh_start_http(&S, NULL, &H), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

static void stop(void)
{
    rbh_close(C);
    rbh_stop(&S);
}

TestSuite(http_api, .init = start, .fini = stop, .timeout = 60);

/* Every test ends by stopping the server and asserting a clean exit
 * (Criterion ignores failures in .fini). */
static void finish(void)
{
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define HTTP_TEST(name) \
    static void body_##name(void); \
    Test(http_api, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

static rbh_resp *req(const char *method, const char *path, const char *body)
{
    rbh_resp *r = rbh_http(H, method, path, body, NULL);
    cr_assert_not_null(r, "%s %s: no HTTP reply", method, path);
    return r;
}

/* A request whose reply must have the given status; returns it. */
static rbh_resp *expect(int status, const char *method, const char *path, const char *body)
{
    rbh_resp *r = req(method, path, body);
    cr_assert_eq(r->status, status, "%s %s: status %d, want %d: %s", method, path, r->status,
                 status, r->body);
    return r;
}

/* An error reply: the status, JSON {"error": {"status", "message"}} with the
 * message containing want. */
static void expect_error(int status, const char *want, const char *method, const char *path,
                         const char *body)
{
    rbh_resp *r = expect(status, method, path, body);
    cr_assert_not_null(r->json, "error body is not JSON: %s", r->body);
    cr_assert_eq(json_integer_value(rbh_get(r->json, "error.status")), status);
    const char *msg = json_string_value(rbh_get(r->json, "error.message"));
    cr_assert(msg && strstr(msg, want), "message '%s' lacks '%s'", msg ? msg : "", want);
    char *ct = rbh_header(r, "Content-Type");
    cr_assert_str_eq(ct, "application/json");
    free(ct);
    rbh_resp_free(r);
}

static long long jint(rbh_resp *r, const char *path)
{
    json_t *v = rbh_get(r->json, path);
    cr_assert(json_is_integer(v), "%s is not an integer in %s", path, r->body);
    return (long long)json_integer_value(v);
}

static const char *jstr(rbh_resp *r, const char *path)
{
    json_t *v = rbh_get(r->json, path);
    cr_assert(json_is_string(v), "%s is not a string in %s", path, r->body);
    return json_string_value(v);
}

static void push(const char *jid, const char *jt, const char *queue)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[1],\"queue\":\"%s\"}",
                         jid, jt, queue));
}

/* Pushes, fetches and fails a job: dead after one failure (retry -1) or in
 * retries (a policy with a long first delay). */
static void make_failed(const char *jid, const char *jt, const char *errtype, bool dead)
{
    if (dead)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[],\"retry\":-1,\"queue\":\"fq\"}",
                             jid, jt));
    else
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[],\"queue\":\"fq\","
                                       "\"retry_policy\":{\"dialect\":\"temporal\",\"initial_interval\":\"1h\",\"maximum_attempts\":5}}",
                             jid, jt));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH fq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jid);
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"%s\",\"message\":\"boom %s\"}",
                         jid, errtype, jid));
}

/* --- reads --- */

HTTP_TEST(info_counts_jobs_by_state)
{
    rbh_resp *r = expect(200, "GET", "/api/info", NULL);
    cr_assert_str_eq(jstr(r, "server.name"), "Rebound");
    cr_assert_eq(jint(r, "jobs.enqueued"), 0);
    rbh_resp_free(r);
    push("jobid-a1", "Mail", "default");
    push("jobid-a2", "Mail", "default");
    make_failed("jobid-d1", "Pay", "Timeout", true);
    r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "jobs.enqueued"), 2);
    cr_assert_eq(jint(r, "jobs.dead"), 1);
    cr_assert_eq(jint(r, "since_start.pushed"), 3);
    cr_assert_eq(jint(r, "since_start.failed"), 1);
    cr_assert_eq(jint(r, "since_start.dead"), 1);
    cr_assert_eq(jint(r, "all_time.failures"), 1);
    cr_assert_eq(jint(r, "server.connections"), 1);
    rbh_resp_free(r);
    expect_error(405, "method not allowed", "POST", "/api/info", NULL);
    expect_error(404, "no such endpoint", "GET", "/api/nothing/here", NULL);
    expect_error(405, "method not allowed", "DELETE", "/api/info", NULL);
}

/* One product version: /api/info and /metrics' rebound_build_info give
 * RB_VERSION, and the Faktory release whose protocol Rebound speaks under a
 * name that says so. */
HTTP_TEST(info_and_metrics_name_the_version_and_the_protocols)
{
    rbh_resp *r = expect(200, "GET", "/api/info", NULL);
    cr_assert_str_eq(jstr(r, "server.version"), RB_VERSION);
    cr_assert_str_eq(jstr(r, "server.faktory_protocol_version"), RB_FAKTORY_VERSION);
    rbh_resp_free(r);
    r = expect(200, "GET", "/metrics", NULL);
    const char *want = "\nrebound_build_info{version=\"" RB_VERSION
                       "\",faktory_protocol_version=\"" RB_FAKTORY_VERSION "\"} 1\n";
    cr_assert(strstr(r->body, want), "/metrics lacks %s in:\n%s", want, r->body);
    cr_assert(strstr(r->body, "\n# TYPE rebound_build_info gauge\n"), "%s", r->body);
    rbh_resp_free(r);
}

/* GET /healthz answers a load balancer without a password: ok on a single
 * node (its file is always there); in distributed mode with the database
 * link, up, its last commit, as INFO's rebound.database and /metrics'
 * rebound_database_up show it (docs/distributed.md, "Network faults"; the
 * fault suite takes the link down). */
HTTP_TEST(healthz_says_whether_the_node_can_commit)
{
    rbh_resp *r = rbh_http(H, "GET", "/healthz", NULL, "Authorization: Basic eDp3cm9uZw==\r\n");
    cr_assert(r && r->status == 200, "GET /healthz: %d", r ? r->status : -1);
    cr_assert_str_eq(jstr(r, "status"), "ok");
#ifdef RBH_PG
    cr_assert_str_eq(jstr(r, "database.state"), "up");
    cr_assert_not_null(jstr(r, "database.last_commit"));
    cr_assert_null(rbh_get(r->json, "database.error"));
#else
    cr_assert_null(rbh_get(r->json, "database"));
#endif
    rbh_resp_free(r);
    json_t *v = rbh_json(rbh_cmd(C, "INFO"));
    rbh_resp *m = expect(200, "GET", "/metrics", NULL);
#ifdef RBH_PG
    cr_assert_str_eq(json_string_value(rbh_get(v, "rebound.database.state")), "up");
    cr_assert(strstr(m->body, "\nrebound_database_up 1\n"), "%s", m->body);
#else
    cr_assert_null(rbh_get(v, "rebound.database"));
    cr_assert_null(strstr(m->body, "rebound_database_up"));
#endif
    json_decref(v);
    rbh_resp_free(m);
}

/* One job waiting for jobid-p1 and two blocked by the dead jobid-p2. */
static void held_jobs(void)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-p1\",\"jobtype\":\"a\",\"args\":[]}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-c1\",\"jobtype\":\"a\",\"args\":[],"
                                   "\"custom\":{\"depends_on\":[\"jobid-p1\"]}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-p2\",\"jobtype\":\"a\",\"args\":[],"
                                   "\"at\":\"2999-01-01T00:00:00Z\"}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-c2\",\"jobtype\":\"a\",\"args\":[],"
                                   "\"custom\":{\"depends_on\":[\"jobid-p2\"]}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-c3\",\"jobtype\":\"a\",\"args\":[],"
                                   "\"custom\":{\"depends_on\":[\"jobid-p2\"]}}"));
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"kill\",\"target\":\"scheduled\","
                                   "\"filter\":{\"jids\":[\"jobid-p2\"]}}"));
}

/* /metrics counts the jobs that wait for others and those a dead parent
 * blocks (docs/workflows.md), in both modes. */
HTTP_TEST(metrics_count_waiting_and_blocked_jobs)
{
    held_jobs();
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "\nrebound_jobs{state=\"waiting\"} 1\n"), "%s", r->body);
    cr_assert(strstr(r->body, "\nrebound_jobs{state=\"blocked\"} 2\n"), "%s", r->body);
    cr_assert(strstr(r->body, "\nrebound_jobs{state=\"dead\"} 1\n"), "%s", r->body);
    rbh_resp_free(r);
}

/* /api/info counts the held jobs and /api/jobs lists them with what they
 * wait for and what blocks them (issue 25 item 7), in both modes. */
HTTP_TEST(info_and_jobs_show_waiting_and_blocked_jobs)
{
    held_jobs();
    rbh_resp *r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "jobs.waiting"), 1);
    cr_assert_eq(jint(r, "jobs.blocked"), 2);
    cr_assert_eq(jint(r, "jobs.dead"), 1);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/jobs?state=blocked", NULL);
    cr_assert_str_eq(jstr(r, "state"), "blocked");
    cr_assert_eq(jint(r, "total"), 2);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-c2");
    cr_assert_str_eq(jstr(r, "jobs.1.jid"), "jobid-c3");
    cr_assert_str_eq(jstr(r, "jobs.0.state"), "blocked");
    cr_assert_str_eq(jstr(r, "jobs.1.blocked_by"), "jobid-p2");
    cr_assert_str_eq(jstr(r, "jobs.1.waits_for.0"), "jobid-p2");
    cr_assert_eq(json_array_size(rbh_get(r->json, "jobs.1.waits_for")), 1);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/jobs?state=waiting", NULL);
    cr_assert_eq(jint(r, "total"), 1);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-c1");
    cr_assert_str_eq(jstr(r, "jobs.0.waits_for.0"), "jobid-p1");
    cr_assert(json_is_null(rbh_get(r->json, "jobs.0.blocked_by")));
    rbh_resp_free(r);
    expect_error(400, "must be scheduled, enqueued, working, retries, dead, waiting or blocked",
                 "GET", "/api/jobs?state=held", NULL);
}

/* /metrics counts open batches and the callbacks fired, in both modes. */
HTTP_TEST(metrics_count_open_batches_and_callbacks)
{
    char *bid = rbh_cmd(C, "BATCH NEW {\"success\":{\"jid\":\"jobid-cb1\",\"jobtype\":\"cb\","
                           "\"args\":[],\"queue\":\"cbq\"}}");
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW gave %s", bid ? bid : "(closed)");
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "\nrebound_batches_open 1\n"), "%s", r->body);
    cr_assert(strstr(r->body, "\nrebound_batch_callbacks_total 0\n"), "%s", r->body);
    rbh_resp_free(r);
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-m1\",\"jobtype\":\"m\",\"args\":[],"
                                   "\"queue\":\"mq\",\"custom\":{\"bid\":\"%s\"}}", bid));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH mq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-m1");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"jobid-m1\"}"));
    r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "\nrebound_batch_callbacks_total 1\n"), "%s", r->body);
    rbh_resp_free(r);
    j = rbh_json(rbh_cmd(C, "FETCH cbq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-cb1");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"jobid-cb1\"}"));
    r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "\nrebound_batches_open 0\n"), "%s", r->body);
    cr_assert(strstr(r->body, "\nrebound_batch_callbacks_total 1\n"), "%s", r->body);
    rbh_resp_free(r);
    free(bid);
}

HTTP_TEST(stats_has_per_second_samples)
{
    rbh_resp *r = expect(200, "GET", "/api/stats", NULL);
    cr_assert_eq(jint(r, "interval_s"), 1);
    cr_assert(json_is_array(rbh_get(r->json, "samples")));
    rbh_resp_free(r);
    push("jobid-s1", "Mail", "default");
    /* the history fills once a second: wait for a sample counting the push */
    int64_t deadline = rbh_now_ms() + 5000;
    long long pushed = 0;
    while (pushed == 0 && rbh_now_ms() < deadline) {
        r = expect(200, "GET", "/api/stats", NULL);
        size_t i;
        json_t *s;
        json_array_foreach(rbh_get(r->json, "samples"), i, s)
            pushed += json_integer_value(json_object_get(s, "pushed"));
        rbh_resp_free(r);
        if (!pushed)
            rbh_sleep_ms(100);
    }
    cr_assert_eq(pushed, 1);
}

HTTP_TEST(queues_list_sizes_and_pause_resume)
{
    push("jobid-q1", "A", "beta");
    push("jobid-q2", "A", "alpha");
    push("jobid-q3", "A", "alpha");
    rbh_resp *r = expect(200, "GET", "/api/queues", NULL);
    cr_assert_str_eq(jstr(r, "queues.0.name"), "alpha");
    cr_assert_eq(jint(r, "queues.0.size"), 2);
    cr_assert_str_eq(jstr(r, "queues.1.name"), "beta");
    cr_assert_eq(jint(r, "queues.1.size"), 1);
    cr_assert(json_is_false(rbh_get(r->json, "queues.0.paused")));
    cr_assert(json_is_real(rbh_get(r->json, "queues.0.latency_s")));
    rbh_resp_free(r);

    r = expect(200, "POST", "/api/queues/alpha/pause", NULL);
    cr_assert(json_is_true(rbh_get(r->json, "queue.paused")));
    cr_assert_str_eq(jstr(r, "queue.name"), "alpha");
    rbh_resp_free(r);
    /* the worker sees the pause: nothing comes from alpha */
    cr_assert(rbh_expect(C, "$-1", "FETCH alpha"));
    r = expect(200, "GET", "/api/queues", NULL);
    cr_assert(json_is_true(rbh_get(r->json, "queues.0.paused")));
    rbh_resp_free(r);

    /* the pause is durable: it survives kill -9 */
    rbh_close(C);
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_relaunch_http(&S, &H), 0);
    C = rbh_connect(&S, "w1");
    r = expect(200, "GET", "/api/queues", NULL);
    cr_assert(json_is_true(rbh_get(r->json, "queues.0.paused")));
    rbh_resp_free(r);

    r = expect(200, "POST", "/api/queues/alpha/resume", NULL);
    cr_assert(json_is_false(rbh_get(r->json, "queue.paused")));
    rbh_resp_free(r);
    json_t *j = rbh_json(rbh_cmd(C, "FETCH alpha"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-q2");
    json_decref(j);
}

HTTP_TEST(queue_action_errors)
{
    expect_error(404, "no queue action 'explode'", "POST", "/api/queues/default/explode", NULL);
    expect_error(404, "no queue 'ghost'", "POST", "/api/queues/ghost/resume", NULL);
    expect_error(405, "method not allowed", "GET", "/api/queues/default/pause", NULL);
    /* a name with URL escapes is decoded */
    rbh_resp *r = expect(200, "POST", "/api/queues/my%20queue/pause", NULL);
    cr_assert_str_eq(jstr(r, "queue.name"), "my queue");
    rbh_resp_free(r);
    expect_error(404, "no such endpoint", "POST", "/api/queues/a%00b/pause", NULL);
}

HTTP_TEST(jobs_by_state_with_filters_and_paging)
{
    for (int i = 0; i < 5; i++) {
        char jid[16];
        snprintf(jid, sizeof jid, "jobid-m%d", i);
        push(jid, i % 2 ? "Odd" : "Even", i < 3 ? "one" : "two");
    }
    rbh_resp *r = expect(200, "GET", "/api/jobs?state=enqueued", NULL);
    cr_assert_eq(jint(r, "total"), 5);
    cr_assert_eq(json_array_size(rbh_get(r->json, "jobs")), 5);
    cr_assert_str_eq(jstr(r, "jobs.0.state"), "enqueued");
    rbh_resp_free(r);

    r = expect(200, "GET", "/api/jobs?state=enqueued&queue=one&limit=2&offset=1", NULL);
    cr_assert_eq(jint(r, "total"), 3);
    cr_assert_eq(json_array_size(rbh_get(r->json, "jobs")), 2);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-m1");
    cr_assert_str_eq(jstr(r, "jobs.1.jid"), "jobid-m2");
    cr_assert_str_eq(jstr(r, "jobs.0.queue"), "one");
    rbh_resp_free(r);

    r = expect(200, "GET", "/api/jobs?state=enqueued&jobtype=Odd", NULL);
    cr_assert_eq(jint(r, "total"), 2);
    cr_assert_str_eq(jstr(r, "jobs.0.jobtype"), "Odd");
    rbh_resp_free(r);

    make_failed("jobid-d1", "Pay", "Timeout", true);
    make_failed("jobid-d2", "Pay", "Refused", true);
    make_failed("jobid-r1", "Pay", "Timeout", false);
    r = expect(200, "GET", "/api/jobs?state=dead&errtype=Refused", NULL);
    cr_assert_eq(jint(r, "total"), 1);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-d2");
    cr_assert_str_eq(jstr(r, "jobs.0.failure.errtype"), "Refused");
    cr_assert_str_eq(jstr(r, "jobs.0.failure.message"), "boom jobid-d2");
    cr_assert(json_is_string(rbh_get(r->json, "jobs.0.expires_at")));
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/jobs?state=retries", NULL);
    cr_assert_eq(jint(r, "total"), 1);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-r1");
    cr_assert(json_is_string(rbh_get(r->json, "jobs.0.next_at")));
    rbh_resp_free(r);

    expect_error(400, "state=''", "GET", "/api/jobs", NULL);
    expect_error(400, "state='pending'", "GET", "/api/jobs?state=pending", NULL);
    expect_error(400, "limit='5000'", "GET", "/api/jobs?state=dead&limit=5000", NULL);
    expect_error(400, "offset='-1'", "GET", "/api/jobs?state=dead&offset=-1", NULL);
    expect_error(400, "limit='x'", "GET", "/api/jobs?state=dead&limit=x", NULL);
}

/* GET /api/jobs lists in the protocol's JOBS order in both modes:
 * enqueued jobs by queue name, then priority, then FIFO; the other states
 * by deadline. Its jobtype filter compares the decoded job type, as the
 * database does. Once, a single node listed timed jobs in the order they
 * entered their state and compared the job type's raw JSON text. */
HTTP_TEST(jobs_listing_order_and_jobtype_are_the_same_in_both_modes)
{
    push("jobid-zq", "A", "zq");
    push("jobid-aq", "A", "aq");
    push("jobid-mq", "A", "mq");
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-quote\",\"jobtype\":\"say \\\"hi\\\"\",\"args\":[],\"queue\":\"mq\"}"));
    rbh_resp *r = expect(200, "GET", "/api/jobs?state=enqueued", NULL);
    cr_assert_eq(jint(r, "total"), 4);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-aq");
    cr_assert_str_eq(jstr(r, "jobs.1.jid"), "jobid-mq");
    cr_assert_str_eq(jstr(r, "jobs.2.jid"), "jobid-quote");
    cr_assert_str_eq(jstr(r, "jobs.3.jid"), "jobid-zq");
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/jobs?state=enqueued&jobtype=say%20%22hi%22", NULL);
    cr_assert_eq(jint(r, "total"), 1);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-quote");
    rbh_resp_free(r);

    /* scheduled: pushed latest-first, listed earliest-first */
    char at[64];
    time_t base = time(NULL) + 3600;
    for (int i = 0; i < 3; i++) {
        time_t t = base + (3 - i) * 60;
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-s%d\",\"jobtype\":\"S\",\"args\":[],\"at\":\"%s\"}",
                             i, at));
    }
    r = expect(200, "GET", "/api/jobs?state=scheduled&offset=1", NULL);
    cr_assert_eq(jint(r, "total"), 3);
    cr_assert_eq(json_array_size(rbh_get(r->json, "jobs")), 2);
    cr_assert_str_eq(jstr(r, "jobs.0.jid"), "jobid-s1");
    cr_assert_str_eq(jstr(r, "jobs.1.jid"), "jobid-s0");
    rbh_resp_free(r);
}

HTTP_TEST(job_shows_history_and_schedule)
{
    make_failed("jobid-r1", "Pay", "Timeout", false);
    rbh_resp *r = expect(200, "GET", "/api/job/jobid-r1", NULL);
    cr_assert_str_eq(jstr(r, "jid"), "jobid-r1");
    cr_assert_str_eq(jstr(r, "state"), "retries");
    cr_assert_eq(jint(r, "attempts"), 1);
    cr_assert_eq(json_array_size(rbh_get(r->json, "history")), 1);
    cr_assert_str_eq(jstr(r, "history.0.errtype"), "Timeout");
    cr_assert_str_eq(jstr(r, "history.0.message"), "boom jobid-r1");
    cr_assert_str_eq(jstr(r, "history.0.outcome"), "retry");
    cr_assert_eq(jint(r, "history.0.delay_ms"), 3600000);
    cr_assert_str_eq(jstr(r, "job.jobtype"), "Pay");
    /* the whole schedule of its policy: 5 executions, 4 retries then dead */
    cr_assert_str_eq(jstr(r, "schedule.layer"), "job");
    cr_assert_eq(json_array_size(rbh_get(r->json, "schedule.attempts")), 5);
    cr_assert_eq(jint(r, "schedule.attempts.0.delay_ms"), 3600000);
    cr_assert_eq(jint(r, "schedule.attempts.1.delay_ms"), 7200000);
    cr_assert(json_is_string(rbh_get(r->json, "schedule.attempts.0.at")));
    cr_assert_str_eq(jstr(r, "schedule.attempts.4.outcome"), "dead");
    cr_assert_str_eq(jstr(r, "schedule.final"), "dead");
    rbh_resp_free(r);

    /* a job without a policy of its own gets the built-in one */
    push("jobid-e1", "Mail", "default");
    r = expect(200, "GET", "/api/job/jobid-e1", NULL);
    cr_assert_str_eq(jstr(r, "state"), "enqueued");
    cr_assert_str_eq(jstr(r, "schedule.layer"), "builtin");
    cr_assert_eq(json_array_size(rbh_get(r->json, "schedule.attempts")), 26);
    cr_assert_eq(json_array_size(rbh_get(r->json, "history")), 0);
    rbh_resp_free(r);

    expect_error(404, "no job 'nope'", "GET", "/api/job/nope", NULL);
}

HTTP_TEST(workflow_graph_of_a_job)
{
    make_failed("wfjob-b1", "B", "E", true); /* dead: no push may name it */
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"wfjob-a1\",\"jobtype\":\"A\",\"args\":[]}"));
    cr_assert(rbh_expect(C, "{}",
                         "PUSHB [{\"jid\":\"wfjob-d1\",\"jobtype\":\"D\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"wfjob-a1\"]}}]"));
    cr_assert(rbh_expect(C, "-ERR depends_on: job wfjob-b1 is dead, and a dead job is not "
                            "accepted as a parent: retry it first (rebound retry wfjob-b1, or "
                            "MUTATE requeue), or push without it",
                         "PUSH {\"jid\":\"wfjob-x1\",\"jobtype\":\"X\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"wfjob-b1\"]}}"));
    rbh_resp *r = expect(200, "GET", "/api/workflow/wfjob-d1", NULL);
    char *ct = rbh_header(r, "Content-Type");
    cr_assert_str_eq(ct, "application/json");
    free(ct);
    cr_assert_str_eq(jstr(r, "jid"), "wfjob-d1");
    cr_assert(json_is_false(rbh_get(r->json, "truncated")));
    cr_assert_eq(jint(r, "max_nodes"), 2000);
    cr_assert_eq(json_array_size(rbh_get(r->json, "nodes")), 2);
    cr_assert_str_eq(jstr(r, "nodes.0.jid"), "wfjob-a1");
    cr_assert_str_eq(jstr(r, "nodes.0.state"), "enqueued");
    cr_assert_str_eq(jstr(r, "nodes.0.jobtype"), "A");
    cr_assert_eq(jint(r, "nodes.0.layer"), 0);
    cr_assert_str_eq(jstr(r, "nodes.1.jid"), "wfjob-d1");
    cr_assert_str_eq(jstr(r, "nodes.1.state"), "waiting");
    cr_assert_str_eq(jstr(r, "nodes.1.waits_for.0"), "wfjob-a1");
    cr_assert(json_is_null(rbh_get(r->json, "nodes.1.blocked_by")));
    cr_assert_eq(jint(r, "nodes.1.layer"), 1);
    cr_assert_eq(json_array_size(rbh_get(r->json, "edges")), 1);
    cr_assert_str_eq(jstr(r, "edges.0.parent"), "wfjob-a1");
    cr_assert_str_eq(jstr(r, "edges.0.child"), "wfjob-d1");
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/job/wfjob-d1", NULL); /* the job page's: what it waits for */
    cr_assert_str_eq(jstr(r, "waits_for.0"), "wfjob-a1");
    cr_assert(json_is_null(rbh_get(r->json, "blocked_by")));
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/workflow/wfjob-b1", NULL); /* a plain job: itself */
    cr_assert_eq(json_array_size(rbh_get(r->json, "nodes")), 1);
    cr_assert_str_eq(jstr(r, "nodes.0.state"), "dead");
    rbh_resp_free(r);
    expect_error(404, "no job 'nope'", "GET", "/api/workflow/nope", NULL);
}

/* A new batch (BATCH NEW over the wire); the bid, caller frees. */
static char *http_batch_new(const char *cb_jid)
{
    char *bid = rbh_cmd(C, "BATCH NEW {\"description\":\"http\",\"success\":{\"jid\":\"%s\","
                           "\"jobtype\":\"Done\",\"args\":[],\"queue\":\"hbcb\"}}", cb_jid);
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW gave '%s'", bid ? bid : "(closed)");
    return bid;
}

HTTP_TEST(batches_and_a_batch_page)
{
    char *bid = http_batch_new("hb-succ-1");
    char *other = http_batch_new("hb-succ-2");
    for (int i = 1; i <= 4; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"hb-job-%02d\",\"jobtype\":\"M\","
                                       "\"args\":[],\"queue\":\"hb\",\"custom\":{\"bid\":\"%s\"}}",
                             i, bid));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    for (int i = 1; i <= 2; i++) { /* half done */
        char *j = rbh_cmd(C, "FETCH hb");
        free(j);
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"hb-job-%02d\"}", i));
    }
    char path[128];
    snprintf(path, sizeof path, "/api/batch/%s", bid);
    rbh_resp *r = expect(200, "GET", path, NULL);
    char *ct = rbh_header(r, "Content-Type");
    cr_assert_str_eq(ct, "application/json");
    free(ct);
    cr_assert_str_eq(jstr(r, "bid"), bid);
    cr_assert_str_eq(jstr(r, "description"), "http");
    cr_assert_eq(jint(r, "total"), 4);
    cr_assert_eq(jint(r, "pending"), 2);
    cr_assert_eq(jint(r, "failed"), 0);
    cr_assert_eq(json_array_size(rbh_get(r->json, "members")), 2);
    cr_assert_str_eq(jstr(r, "members.0.jid"), "hb-job-03");
    cr_assert_str_eq(jstr(r, "members.0.state"), "enqueued");
    cr_assert_str_eq(jstr(r, "members.0.queue"), "hb");
    cr_assert_str_eq(jstr(r, "callbacks.0.kind"), "success");
    cr_assert_str_eq(jstr(r, "callbacks.0.st"), "");
    cr_assert(json_is_null(rbh_get(r->json, "callbacks.0.jid")));
    cr_assert(json_is_false(rbh_get(r->json, "truncated")));
    rbh_resp_free(r);
    expect_error(404, "no batch 'b-nosuchbatch00'", "GET", "/api/batch/b-nosuchbatch00", NULL);

    /* the listing: both open, paged */
    r = expect(200, "GET", "/api/batches", NULL);
    cr_assert_str_eq(jstr(r, "state"), "open");
    cr_assert_eq(jint(r, "total"), 2);
    cr_assert_eq(jint(r, "offset"), 0);
    cr_assert_eq(jint(r, "limit"), 50);
    cr_assert_eq(json_array_size(rbh_get(r->json, "batches")), 2);
    char *second = strdup(jstr(r, "batches.1.bid"));
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/batches?state=all&offset=1&limit=1", NULL);
    cr_assert_eq(jint(r, "total"), 2);
    cr_assert_eq(json_array_size(rbh_get(r->json, "batches")), 1);
    cr_assert_str_eq(jstr(r, "batches.0.bid"), second);
    cr_assert(json_is_null(rbh_get(r->json, "batches.0.finished_at")));
    rbh_resp_free(r);
    free(second);
    /* the rest done: the batch finishes, leaves the open list, stays in all */
    for (int i = 3; i <= 4; i++) {
        char *j = rbh_cmd(C, "FETCH hb");
        free(j);
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"hb-job-%02d\"}", i));
    }
    char *j = rbh_cmd(C, "FETCH hbcb");
    free(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"hb-succ-1\"}"));
    r = expect(200, "GET", "/api/batches?state=open", NULL);
    cr_assert_eq(jint(r, "total"), 1);
    cr_assert_str_eq(jstr(r, "batches.0.bid"), other);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/batches?state=all", NULL);
    cr_assert_eq(jint(r, "total"), 2);
    cr_assert_str_eq(jstr(r, "batches.1.bid"), bid); /* finished ones after the open */
    cr_assert_str_eq(jstr(r, "batches.1.success_st"), "2");
    cr_assert(json_is_string(rbh_get(r->json, "batches.1.finished_at")));
    rbh_resp_free(r);
    expect_error(400, "query parameter state='dead' must be open or all", "GET",
                 "/api/batches?state=dead", NULL);
    r = expect(400, "GET", "/api/batches?limit=1001", NULL);
    rbh_resp_free(r);
    r = expect(400, "GET", "/api/batches?offset=-1", NULL);
    rbh_resp_free(r);
    free(other);
    free(bid);
}

/* --- actions --- */

HTTP_TEST(job_actions_change_state_durably)
{
    make_failed("jobid-d1", "Pay", "Timeout", true);
    make_failed("jobid-r1", "Pay", "Timeout", false);
    make_failed("jobid-r2", "Pay", "Timeout", false);
    rbh_resp *r = expect(200, "POST", "/api/job/jobid-d1/retry", NULL);
    cr_assert_str_eq(jstr(r, "previous_state"), "dead");
    cr_assert_str_eq(jstr(r, "state"), "enqueued");
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/job/jobid-r1/kill", NULL);
    cr_assert_str_eq(jstr(r, "state"), "dead");
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/job/jobid-r2/discard", NULL);
    cr_assert(json_is_null(rbh_get(r->json, "state")));
    rbh_resp_free(r);

    /* answered after the commit: all three survive kill -9 */
    rbh_close(C);
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_relaunch_http(&S, &H), 0);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    char *st = rbh_job_state(C, "jobid-d1");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    st = rbh_job_state(C, "jobid-r1");
    cr_assert_str_eq(st, "dead");
    free(st);
    cr_assert_null(rbh_job_state(C, "jobid-r2"));
    /* the retried job runs again */
    json_t *j = rbh_json(rbh_cmd(C, "FETCH fq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-d1");
    json_decref(j);

    expect_error(409, "job 'jobid-d1' is working", "POST", "/api/job/jobid-d1/retry", NULL);
    expect_error(404, "no job 'ghost'", "POST", "/api/job/ghost/kill", NULL);
    expect_error(404, "no job action 'explode'", "POST", "/api/job/jobid-r1/explode", NULL);
    expect_error(405, "method not allowed", "GET", "/api/job/jobid-r1/kill", NULL);
}

/* The retry action of a job killed by its dependency while the parent is
 * still dead puts it back under its parent, blocked, as MUTATE does, and
 * says so; it is not enqueued (issue 25 item 8). */
HTTP_TEST(retry_action_of_a_cancelled_child_blocks_it_under_its_dead_parent)
{
    make_failed("jobid-p9", "Parent", "E", true);
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\","
                                   "\"filter\":{\"jids\":[\"jobid-p9\"]}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-c9\",\"jobtype\":\"Child\",\"args\":[],"
                                   "\"queue\":\"cq\",\"custom\":{\"depends_on\":[\"jobid-p9\"],"
                                   "\"on_dep_failure\":\"cancel\"}}"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH fq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-p9");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"jobid-p9\",\"errtype\":\"E\",\"message\":\"again\"}"));
    char *st = rbh_job_state(C, "jobid-c9");
    cr_assert_str_eq(st, "dead");
    free(st);
    rbh_resp *r = expect(200, "POST", "/api/job/jobid-c9/retry", NULL);
    cr_assert_str_eq(jstr(r, "previous_state"), "dead");
    cr_assert_str_eq(jstr(r, "state"), "blocked");
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/job/jobid-c9", NULL);
    cr_assert_str_eq(jstr(r, "blocked_by"), "jobid-p9");
    rbh_resp_free(r);
    cr_assert(rbh_expect(C, "$-1", "FETCH cq"));
    r = expect(200, "GET", "/api/workflow/jobid-c9", NULL);
    cr_assert_str_eq(jstr(r, "nodes.1.jid"), "jobid-c9");
    cr_assert_str_eq(jstr(r, "nodes.1.retry.0"), "jobid-p9");
    rbh_resp_free(r);
}

#ifdef RBH_PG
/* Runs sql on the server's schema (S.db is its url); true when it worked. */
static bool schema_sql(const char *sql)
{
    PGconn *pc = PQconnectdb(S.db);
    PGresult *r = PQstatus(pc) == CONNECTION_OK ? PQexec(pc, sql) : NULL;
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    PQfinish(pc);
    return ok;
}

/* Distributed mode: triggers that refuse every write to the jobs and queues
 * make the engine's transactions fail; the actions answer 500 and change
 * nothing, and work again once the triggers are gone. */
HTTP_TEST(actions_fail_when_the_commit_fails)
{
    make_failed("jobid-d1", "Pay", "Timeout", true);
    cr_assert(schema_sql(
        "CREATE FUNCTION rbt_refuse() RETURNS trigger LANGUAGE plpgsql AS"
        " $$BEGIN RAISE EXCEPTION 'injected fault'; END$$;"
        "CREATE TRIGGER rbt_jobs BEFORE INSERT OR UPDATE OR DELETE ON rb_jobs"
        " FOR EACH ROW EXECUTE FUNCTION rbt_refuse();"
        "CREATE TRIGGER rbt_queues BEFORE INSERT OR UPDATE ON rb_queues"
        " FOR EACH ROW EXECUTE FUNCTION rbt_refuse();"));
    expect_error(500, "storage error", "POST", "/api/job/jobid-d1/retry", NULL);
    expect_error(500, "storage error", "POST", "/api/queues/default/pause", NULL);
    expect_error(500, "storage error", "POST", "/api/jobs/retry", "{\"state\":\"dead\",\"all\":true}");
    cr_assert(schema_sql("DROP TRIGGER rbt_jobs ON rb_jobs; DROP TRIGGER rbt_queues ON rb_queues"));
    char *st = rbh_job_state(C, "jobid-d1");
    cr_assert_str_eq(st, "dead");
    free(st);
    rbh_resp_free(expect(200, "POST", "/api/queues/default/pause", NULL));
    rbh_resp_free(expect(200, "POST", "/api/job/jobid-d1/retry", NULL));
}
#else
HTTP_TEST(actions_fail_when_the_commit_fails)
{
    make_failed("jobid-d1", "Pay", "Timeout", true);
    char fault[400];
    snprintf(fault, sizeof fault, "%s/fault", S.dir);
    /* the server reads its faults at start: restart with sqlite.fault_file set */
    rbh_close(C);
    rbh_kill(&S, SIGTERM);
    S.env_fault = fault;
    cr_assert_eq(rbh_relaunch_http(&S, &H), 0);
    C = rbh_connect(&S, "w1");
    FILE *f = fopen(fault, "w");
    cr_assert_not_null(f);
    fclose(f);
    expect_error(500, "storage error", "POST", "/api/job/jobid-d1/retry", NULL);
    expect_error(500, "storage error", "POST", "/api/queues/default/pause", NULL);
    unlink(fault);
    rbh_resp_free(expect(200, "POST", "/api/queues/default/pause", NULL));
}
#endif

HTTP_TEST(bulk_actions)
{
    make_failed("jobid-d1", "Pay", "Timeout", true);
    make_failed("jobid-d2", "Pay", "Refused", true);
    make_failed("jobid-d3", "Mail", "Timeout", true);
    make_failed("jobid-r1", "Pay", "Timeout", false);
    rbh_resp *r = expect(200, "POST", "/api/jobs/retry", "{\"state\":\"dead\",\"jids\":[\"jobid-d1\",\"jobid-r1\",\"zz\"]}");
    cr_assert_eq(jint(r, "changed"), 1); /* jobid-r1 is not dead, zz does not exist */
    rbh_resp_free(r);
    char *st = rbh_job_state(C, "jobid-d1");
    cr_assert_str_eq(st, "enqueued");
    free(st);

    r = expect(200, "POST", "/api/jobs/discard",
               "{\"state\":\"dead\",\"all\":true,\"jobtype\":\"Pay\",\"errtype\":\"Refused\"}");
    cr_assert_eq(jint(r, "changed"), 1);
    rbh_resp_free(r);
    cr_assert_null(rbh_job_state(C, "jobid-d2"));

    r = expect(200, "POST", "/api/jobs/kill", "{\"state\":\"retries\",\"all\":true}");
    cr_assert_eq(jint(r, "changed"), 1);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/jobs?state=dead", NULL);
    cr_assert_eq(jint(r, "total"), 2); /* jobid-d3 and jobid-r1 */
    rbh_resp_free(r);

    expect_error(400, "not JSON", "POST", "/api/jobs/kill", "{nope");
    expect_error(400, "name the jobs", "POST", "/api/jobs/kill", "{\"state\":\"dead\"}");
    expect_error(400, "state must be", "POST", "/api/jobs/kill", "{\"state\":\"working\",\"all\":true}");
    expect_error(400, "the body must be an object", "POST", "/api/jobs/kill", "[1]");
    expect_error(400, "the body must be an object", "POST", "/api/jobs/kill",
                 "{\"state\":\"dead\",\"jids\":\"jobid-d3\"}");
    expect_error(404, "no bulk action 'nuke'", "POST", "/api/jobs/nuke", "{}");
}

/* A bulk action selects as GET /api/jobs filters, in both modes: the
 * jobtype filter compares the decoded job type, and a jid named twice is
 * one job. Once, a single node compared the job type's raw JSON text and
 * counted a dead job killed twice. */
HTTP_TEST(bulk_actions_select_the_same_jobs_in_both_modes)
{
    make_failed("jobid-q1", "say \\\"hi\\\"", "Timeout", true);
    make_failed("jobid-q2", "Mail", "Timeout", true);
    rbh_resp *r = expect(200, "POST", "/api/jobs/kill",
                         "{\"state\":\"dead\",\"jids\":[\"jobid-q2\",\"jobid-q2\"]}");
    cr_assert_eq(jint(r, "changed"), 1);
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/jobs/retry",
               "{\"state\":\"dead\",\"all\":true,\"jobtype\":\"say \\\"hi\\\"\"}");
    cr_assert_eq(jint(r, "changed"), 1);
    rbh_resp_free(r);
    char *st = rbh_job_state(C, "jobid-q1");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    st = rbh_job_state(C, "jobid-q2");
    cr_assert_str_eq(st, "dead");
    free(st);
}

HTTP_TEST(workers_list_and_signals)
{
    rbh_resp *r = expect(200, "GET", "/api/workers", NULL);
    cr_assert_eq(json_array_size(rbh_get(r->json, "workers")), 1);
    cr_assert_str_eq(jstr(r, "workers.0.wid"), "w1");
    cr_assert_str_eq(jstr(r, "workers.0.signal"), "none");
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/workers/quiet", "{\"wid\":\"w1\"}");
    cr_assert_eq(jint(r, "workers"), 1);
    rbh_resp_free(r);
    cr_assert(rbh_expect(C, "{\"state\":\"quiet\"}", "BEAT {\"wid\":\"w1\"}"));
    r = expect(200, "POST", "/api/workers/terminate", NULL);
    cr_assert_eq(jint(r, "workers"), 1);
    rbh_resp_free(r);
    cr_assert(rbh_expect(C, "{\"state\":\"terminate\"}", "BEAT {\"wid\":\"w1\"}"));
    expect_error(404, "no worker 'ghost'", "POST", "/api/workers/quiet", "{\"wid\":\"ghost\"}");
    expect_error(404, "no worker action 'sleep'", "POST", "/api/workers/sleep", NULL);
    expect_error(400, "the body must be", "POST", "/api/workers/quiet", "{\"wid\":7}");
}

HTTP_TEST(policy_simulation_in_every_form)
{
    rbh_resp *r = expect(200, "POST", "/api/policy/simulate",
                         "{\"dialect\":\"temporal\",\"initial_interval\":\"2s\",\"maximum_attempts\":3}");
    cr_assert_eq(json_array_size(rbh_get(r->json, "attempts")), 3);
    cr_assert_eq(jint(r, "attempts.0.delay_ms"), 2000);
    cr_assert_eq(jint(r, "attempts.1.delay_ms"), 4000);
    cr_assert_str_eq(jstr(r, "final"), "dead");
    cr_assert_str_eq(jstr(r, "policy.dialect"), "temporal");
    cr_assert(strstr(jstr(r, "description"), "at most 3"));
    rbh_resp_free(r);
    /* an FTL directive as plain text */
    r = expect(200, "POST", "/api/policy/simulate", "//ftl:retry 2 5s 1m");
    cr_assert_str_eq(jstr(r, "policy.dialect"), "ftl");
    cr_assert_eq(jint(r, "attempts.0.delay_ms"), 5000);
    rbh_resp_free(r);
    /* wrapped, with options: an unbounded policy cut at 4 failures */
    r = expect(200, "POST", "/api/policy/simulate",
               "{\"policy\":{\"dialect\":\"temporal\",\"initial_interval\":\"1s\",\"maximum_attempts\":0},\"failures\":4}");
    cr_assert_eq(json_array_size(rbh_get(r->json, "attempts")), 4);
    cr_assert_str_eq(jstr(r, "final"), "unlimited");
    rbh_resp_free(r);
    /* a non-retryable error type ends it at once */
    r = expect(200, "POST", "/api/policy/simulate",
               "{\"policy\":{\"dialect\":\"temporal\",\"non_retryable_error_types\":[\"Fatal\"]},\"errtype\":\"Fatal\"}");
    cr_assert_eq(json_array_size(rbh_get(r->json, "attempts")), 1);
    cr_assert_str_eq(jstr(r, "attempts.0.outcome"), "dead");
    rbh_resp_free(r);
    /* Faktory's retry count */
    r = expect(200, "POST", "/api/policy/simulate", "{\"policy\":3}");
    cr_assert_eq(json_array_size(rbh_get(r->json, "attempts")), 4);
    rbh_resp_free(r);

    expect_error(422, "invalid policy", "POST", "/api/policy/simulate",
                 "{\"dialect\":\"temporal\",\"backoff_coefficient\":0.5}");
    expect_error(422, "invalid policy", "POST", "/api/policy/simulate", "ftl:banana");
    expect_error(400, "the body must be a policy", "POST", "/api/policy/simulate", "  ");
    expect_error(400, "failures must be", "POST", "/api/policy/simulate",
                 "{\"policy\":3,\"failures\":-2}");
    expect_error(405, "method not allowed", "GET", "/api/policy/simulate", NULL);
}

/* --- Faktory Enterprise's views: cron, throttles, unique locks, expiry --- */

/* Without [[cron]] or [throttles] both views answer empty lists, /api/info
 * counts none, and bad requests name what was wrong, in both modes. */
HTTP_TEST(cron_and_throttles_without_configuration_and_bad_requests)
{
    rbh_resp *r = expect(200, "GET", "/api/cron", NULL);
    cr_assert_eq(json_array_size(rbh_get(r->json, "entries")), 0, "%s", r->body);
    cr_assert_eq(jint(r, "fired"), 0);
    cr_assert(strlen(jstr(r, "now")) > 10, "%s", r->body);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/throttles", NULL);
    cr_assert(json_is_array(rbh_get(r->json, "throttles")), "%s", r->body);
    cr_assert_eq(json_array_size(rbh_get(r->json, "throttles")), 0, "%s", r->body);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "all_time.expired"), 0);
    cr_assert_eq(jint(r, "unique.locks"), 0);
    cr_assert_eq(jint(r, "cron.entries"), 0);
    cr_assert_eq(jint(r, "throttles.queues"), 0);
    cr_assert_eq(jint(r, "throttles.in_use"), 0);
    rbh_resp_free(r);
    expect_error(405, "method not allowed", "POST", "/api/cron", NULL);
    expect_error(405, "method not allowed", "DELETE", "/api/throttles", NULL);
    expect_error(404, "no such endpoint", "GET", "/api/cron/nightly", NULL);
    expect_error(404, "no such endpoint", "GET", "/api/throttles/images", NULL);
    expect_error(400, "count='0' must be an integer from 1 to 1000", "GET", "/api/cron?count=0", NULL);
    expect_error(400, "count='1001'", "GET", "/api/cron?count=1001", NULL);
    expect_error(400, "count='many'", "GET", "/api/cron?count=many", NULL);
    expect_error(400, "now='yesterday' must be an RFC 3339 time", "GET", "/api/cron?now=yesterday",
                 NULL);
}

/* GET /api/job: a unique job's unique_for, unique_until and whether it
 * holds its lock (taken at PUSH; unique_until "start" gives it up at
 * FETCH), a job's custom.expires_at; a job past it is dropped at FETCH and
 * counted in /api/info and /metrics, in both modes. */
HTTP_TEST(job_shows_its_unique_lock_and_expiry_and_expired_jobs_are_counted)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-u1\",\"jobtype\":\"Inv\",\"args\":[1],"
                                   "\"queue\":\"uq\",\"custom\":{\"unique_for\":3600,"
                                   "\"expires_in\":600}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-u2\",\"jobtype\":\"Inv\",\"args\":[2],"
                                   "\"queue\":\"us\",\"custom\":{\"unique_for\":60,"
                                   "\"unique_until\":\"start\"}}"));
    push("jobid-p1", "Plain", "default");
    rbh_resp *r = expect(200, "GET", "/api/job/jobid-u1", NULL);
    json_t *u = rbh_get(r->json, "unique");
    cr_assert(json_is_object(u), "%s", r->body);
    cr_assert_eq(json_number_value(json_object_get(u, "unique_for")), 3600.0);
    cr_assert_str_eq(jstr(r, "unique.unique_until"), "success");
    cr_assert(json_is_true(json_object_get(u, "locked")), "%s", r->body);
    const char *until = jstr(r, "unique.lock_until");
    const char *expiry = jstr(r, "expiry");
    cr_assert(strcmp(until, expiry) > 0, "the lock (1 h) outlasts the expiry (10 min): %s", r->body);
    cr_assert_str_eq(jstr(r, "job.custom.expires_at"), expiry);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/job/jobid-u2", NULL);
    cr_assert(json_is_true(rbh_get(r->json, "unique.locked")), "%s", r->body);
    cr_assert_str_eq(jstr(r, "unique.unique_until"), "start");
    cr_assert(json_is_null(rbh_get(r->json, "expiry")), "%s", r->body);
    rbh_resp_free(r);
    json_t *j = rbh_json(rbh_cmd(C, "FETCH us"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-u2");
    json_decref(j);
    r = expect(200, "GET", "/api/job/jobid-u2", NULL);
    cr_assert(json_is_false(rbh_get(r->json, "unique.locked")), "released at FETCH: %s", r->body);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/job/jobid-p1", NULL);
    cr_assert(json_is_null(rbh_get(r->json, "unique")), "%s", r->body);
    cr_assert(json_is_null(rbh_get(r->json, "expiry")), "%s", r->body);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "unique.locks"), 1);
    rbh_resp_free(r);
    /* expired at once: dropped by the FETCH, counted */
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-e1\",\"jobtype\":\"Flash\",\"args\":[],"
                                   "\"queue\":\"eq\",\"custom\":{\"expires_in\":0}}"));
    cr_assert(rbh_expect(C, "$-1", "FETCH eq"), "an expired job was fetched");
    long long expired = 0;
    for (int64_t end = rbh_now_ms() + 10000; rbh_now_ms() < end && expired < 1; rbh_sleep_ms(50)) {
        r = expect(200, "GET", "/api/info", NULL);
        expired = jint(r, "all_time.expired");
        rbh_resp_free(r);
    }
    cr_assert_eq(expired, 1);
    r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "\n# TYPE rebound_jobs_expired_stored_total counter\n"
                              "rebound_jobs_expired_stored_total 1\n"), "%s", r->body);
    rbh_resp_free(r);
    expect_error(404, "no job 'jobid-e1'", "GET", "/api/job/jobid-e1", NULL);
}

/* [[cron]] and [throttles] in both modes. */

/* Restarts S with config (a new directory and database). */
static void restart_with(const char *config)
{
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    cr_assert_eq(rbh_start_http(&S, config, &H), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

/* The test-only cron clock offset putting a minute boundary lead_ms ahead;
 * *tick_s is that boundary. */
static long long offset_before_minute(long long lead_ms, long long *tick_s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    long long boundary = (now / 60000 + 1) * 60000;
    *tick_s = boundary / 1000;
    return boundary - lead_ms - now;
}

/* The JSON `rebound cron FILE --json` prints with args (caller decrefs). */
static json_t *cli_cron(const char *args)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' cron '%s' --json %s", rbh_bin(), S.config, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    json_t *v = json_loadf(p, 0, NULL);
    cr_assert_eq(pclose(p), 0, "%s failed", cmd);
    cr_assert_not_null(v, "%s printed no JSON", cmd);
    return v;
}

/* GET /api/cron: the entries as `rebound cron --json` lists them (same
 * keys and values for the same now and count) with the last tick the
 * store keeps and its job's jid; the tick survives a restart; /metrics
 * gives each entry's last tick. */
HTTP_TEST(cron_lists_entries_as_the_cli_does_with_the_stored_last_tick)
{
    long long tick_s;
    char off[32];
    /* the server's clock reaches the minute 10 s after this: time to start
     * (a restart in distributed mode on a loaded machine takes seconds —
     * 4 s was too few at a load average of 12; a tick passed before the
     * server is up would be skipped) */
    snprintf(off, sizeof off, "%lld", offset_before_minute(10000, &tick_s));
    rbh_fault_set("cron.clock_offset_ms", off);
    restart_with("[[cron]]\nname = \"minutely\"\nschedule = \"* * * * *\"\n"
                 "[cron.job]\ntype = \"Tick\"\nqueue = \"cq\"\n\n"
                 "[[cron]]\nname = \"never\"\nschedule = \"0 0 31 2 *\"\ntimezone = \"Europe/Berlin\"\n"
                 "missed = \"run_once\"\n[cron.job]\ntype = \"Feb31\"\n");
    rbh_fault_set("cron.clock_offset_ms", NULL);
    rbh_resp *r = NULL;
    for (int64_t end = rbh_now_ms() + 25000; rbh_now_ms() < end; rbh_sleep_ms(50)) {
        rbh_resp_free(r);
        r = expect(200, "GET", "/api/cron?count=3", NULL);
        if (json_is_string(rbh_get(json_array_get(rbh_get(r->json, "entries"), 0), "last")))
            break;
    }
    json_t *e = json_array_get(rbh_get(r->json, "entries"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(e, "name")), "minutely");
    int64_t ms;
    cr_assert_eq(rb_time_parse_rfc3339(json_string_value(json_object_get(e, "last")), &ms), 0,
                 "no tick fired: %s", r->body);
    cr_assert_eq(ms, tick_s * 1000);
    const char *last_jid = json_string_value(json_object_get(e, "last_jid"));
    char want[64];
    snprintf(want, sizeof want, "-%lld", tick_s);
    cr_assert(last_jid && !strncmp(last_jid, "cron-", 5) && strstr(last_jid, want), "%s", r->body);
    json_t *next = json_object_get(e, "next");
    cr_assert_eq(json_array_size(next), 3, "%s", r->body);
    cr_assert_eq(rb_time_parse_rfc3339(json_string_value(json_array_get(next, 0)), &ms), 0);
    cr_assert_eq(ms, (tick_s + 60) * 1000, "the next run after the tick: %s", r->body);
    cr_assert_eq(jint(r, "fired"), 1);
    json_t *never = json_array_get(rbh_get(r->json, "entries"), 1);
    cr_assert_eq(json_array_size(json_object_get(never, "next")), 0, "%s", r->body);
    cr_assert(json_is_null(json_object_get(never, "last")), "%s", r->body);
    char path[200];
    snprintf(path, sizeof path, "/api/job/%s", last_jid);
    rbh_resp *job = expect(200, "GET", path, NULL);
    cr_assert_str_eq(jstr(job, "jobtype"), "Tick");
    rbh_resp_free(job);
    char jid[64];
    snprintf(jid, sizeof jid, "%s", last_jid);
    rbh_resp_free(r);
    /* the same entries as the CLI's for the same now and count */
    r = expect(200, "GET", "/api/cron?now=2030-01-01T00:00:00Z&count=2", NULL);
    json_t *cli = cli_cron("--now 2030-01-01T00:00:00Z --count 2");
    cr_assert_str_eq(jstr(r, "now"), json_string_value(json_object_get(cli, "now")));
    json_t *ours = rbh_get(r->json, "entries");
    cr_assert_eq(json_array_size(ours), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_deep_copy(json_array_get(ours, i));
        json_object_del(o, "last");
        json_object_del(o, "last_jid");
        cr_assert(json_equal(o, json_array_get(json_object_get(cli, "entries"), i)),
                  "entry %zu differs from the CLI's: %s", i, r->body);
        json_decref(o);
    }
    json_decref(cli);
    const char *n0 = json_string_value(json_array_get(rbh_get(json_array_get(ours, 0), "next"), 1));
    cr_assert_str_eq(n0, "2030-01-01T00:02:00.000Z");
    rbh_resp_free(r);
    r = expect(200, "GET", "/metrics", NULL);
    snprintf(want, sizeof want, "\nrebound_cron_last_tick_timestamp_seconds{entry=\"minutely\"} %lld\n",
             tick_s);
    cr_assert(strstr(r->body, want), "/metrics lacks %s in:\n%s", want, r->body);
    cr_assert(strstr(r->body, "\nrebound_cron_last_tick_timestamp_seconds{entry=\"never\"} 0\n"),
              "%s", r->body);
    rbh_resp_free(r);
    /* the last tick is the store's: kept across a restart (no clock offset
     * now: the next tick is a minute away) */
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGTERM);
    cr_assert_eq(rbh_relaunch_http(&S, &H), 0);
    C = rbh_connect(&S, "w1");
    r = expect(200, "GET", "/api/cron", NULL);
    e = json_array_get(rbh_get(r->json, "entries"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(e, "last_jid")), jid, "%s", r->body);
    rbh_resp_free(r);
}

/* A throttle with a rate shows it (concurrency 0: a rate alone). */
HTTP_TEST(throttles_show_their_rate)
{
    restart_with("[throttles.rq]\nrate = 100\nperiod = \"1m\"\nburst = 5\n");
    rbh_resp *r = expect(200, "GET", "/api/throttles", NULL);
    json_t *want = json_loads("{\"throttles\":["
                              "{\"queue\":\"rq\",\"concurrency\":0,\"timeout_s\":0,\"in_use\":0,"
                              "\"size\":0,\"paused\":false,\"rate\":100,\"period_s\":60.0,"
                              "\"burst\":5}]}", 0, NULL);
    cr_assert(json_equal(r->json, want), "got %s", r->body);
    json_decref(want);
    rbh_resp_free(r);
}

/* GET /api/throttles: each throttled queue by name with its limit and
 * timeout and the slots the engine counts in use; /api/info and /metrics
 * give the same. */
HTTP_TEST(throttles_show_limits_and_slots_in_use)
{
    restart_with("[throttles.tq]\nconcurrency = 2\ntimeout = 60\n\n"
                 "[throttles.other]\nconcurrency = 1\n");
    for (int i = 0; i < 3; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-t%d\",\"jobtype\":\"T\",\"args\":[],"
                                       "\"queue\":\"tq\"}", i));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH tq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-t0");
    json_decref(j);
    rbh_resp *r = expect(200, "GET", "/api/throttles", NULL);
    json_t *want = json_loads("{\"throttles\":["
                              "{\"queue\":\"other\",\"concurrency\":1,\"timeout_s\":0,\"in_use\":0,"
                              "\"size\":0,\"paused\":false},"
                              "{\"queue\":\"tq\",\"concurrency\":2,\"timeout_s\":60,\"in_use\":1,"
                              "\"size\":2,\"paused\":false}]}", 0, NULL);
    cr_assert(json_equal(r->json, want), "got %s", r->body);
    json_decref(want);
    rbh_resp_free(r);
    j = rbh_json(rbh_cmd(C, "FETCH tq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-t1");
    json_decref(j);
    r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "throttles.queues"), 2);
    cr_assert_eq(jint(r, "throttles.in_use"), 2);
    rbh_resp_free(r);
    r = expect(200, "GET", "/metrics", NULL);
    const char *lines[] = {
        "\n# TYPE rebound_throttle_limit gauge\n",
        "\nrebound_throttle_limit{queue=\"tq\"} 2\n",
        "\nrebound_throttle_limit{queue=\"other\"} 1\n",
        "\nrebound_throttle_timeout_seconds{queue=\"tq\"} 60\n",
        "\n# TYPE rebound_throttle_slots_in_use gauge\n",
        "\nrebound_throttle_slots_in_use{queue=\"tq\"} 2\n",
        "\nrebound_throttle_slots_in_use{queue=\"other\"} 0\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        cr_assert(strstr(r->body, lines[i]), "/metrics lacks %s in:\n%s", lines[i], r->body);
    rbh_resp_free(r);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"jobid-t0\"}"));
    r = expect(200, "GET", "/api/throttles", NULL);
    cr_assert_eq(json_integer_value(rbh_get(json_array_get(rbh_get(r->json, "throttles"), 1),
                                            "in_use")), 1, "%s", r->body);
    rbh_resp_free(r);
}

/* /api/groups: the summary, a queue's groups, one group; set, pause and
 * resume answered after their commit and read back after a restart; 400
 * with GROUP's message for bad input, 404 for an unknown queue or action;
 * /api/job says why an enqueued job is held back; /metrics' group series
 * and a throttle's rate. */
HTTP_TEST(groups_read_act_and_say_why_a_job_is_held)
{
    restart_with("[groups.gq]\nconcurrency = 1\n[throttles.rq]\nrate = 100\nperiod = \"1m\"\n");
    for (int i = 0; i < 3; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-g%d\",\"jobtype\":\"T\",\"args\":[],"
                                       "\"queue\":\"gq\",\"custom\":{\"group\":\"acme\"}}", i));
#ifdef RBH_PG
    int64_t fetched = rbh_now_ms();
#endif
    json_t *j = rbh_json(rbh_cmd(C, "FETCH gq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-g0");
    json_decref(j);
    rbh_resp *r = expect(200, "GET", "/api/job/jobid-g1", NULL);
    cr_assert_str_eq(jstr(r, "group"), "acme");
    cr_assert_str_eq(jstr(r, "held.by"), "group");
    cr_assert_str_eq(jstr(r, "held.reason"), "concurrency");
    cr_assert_str_eq(jstr(r, "held.detail"), "group acme runs 1 of 1");
    rbh_resp_free(r);
#ifdef RBH_PG
    /* the stored concurrency hold is lifted at its 1 s re-check until a
     * claim sets it again: the page still says why, from the working jobs */
    int64_t lifted_by = rbh_now_ms() + 15000;
    char *hold = NULL;
    do {
        free(hold);
        rbh_sleep_ms(50);
        hold = rbh_pg_value(S.db, "SELECT hold FROM rb_groups WHERE queue = 'gq' AND grp = 'acme'");
    } while (hold && strcmp(hold, "0") && rbh_now_ms() < lifted_by);
    cr_assert_str_eq(hold, "0", "the concurrency hold was not lifted");
    free(hold);
    r = expect(200, "GET", "/api/job/jobid-g1", NULL);
    cr_assert_str_eq(jstr(r, "held.reason"), "concurrency", "%s", r->body);
    cr_assert_str_eq(jstr(r, "held.detail"), "group acme runs 1 of 1");
    rbh_resp_free(r);
#endif
    r = expect(200, "GET", "/api/groups", NULL);
    json_t *q0 = json_array_get(rbh_get(r->json, "queues"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(q0, "queue")), "gq", "%s", r->body);
#ifdef RBH_PG
    /* distributed mode's count is of holds a claim set: a concurrency hold
     * is re-checked (released, set again by the next claim) after 1 s
     * (docs/distributed.md, "Groups and limits"); a loaded machine may pass
     * that before this read */
    if (rbh_now_ms() - fetched >= 900)
        cr_assert_leq(json_integer_value(rbh_get(q0, "held.concurrency")), 1, "%s", r->body);
    else
#endif
        cr_assert_eq(json_integer_value(rbh_get(q0, "held.concurrency")), 1, "%s", r->body);
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/groups/gq/acme/set", "{\"concurrency\": 2}");
    cr_assert_str_eq(jstr(r, "action"), "set");
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/groups/gq/acme/pause",
               "{\"until\": 600, \"reason\": \"upstream 429\"}");
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/job/jobid-g1", NULL);
    cr_assert_str_eq(jstr(r, "held.reason"), "paused");
    cr_assert(strstr(jstr(r, "held.detail"), "upstream 429"), "%s", r->body);
    cr_assert(json_is_string(rbh_get(r->json, "held.until")));
    rbh_resp_free(r);
    r = expect(200, "GET", "/metrics", NULL);
    const char *lines[] = {
        "\n# TYPE rebound_group_holds_total counter\n",
        "\nrebound_group_holds_total{queue=\"gq\",reason=\"concurrency\"} 1\n",
        "\nrebound_group_holds_total{queue=\"gq\",reason=\"paused\"} 1\n",
        "\nrebound_groups_paused{queue=\"gq\"} 1\n",
        "\nrebound_groups_active{queue=\"gq\"} 0\n",
        "\nrebound_throttle_rate{queue=\"rq\"} 100\n",
        "\nrebound_throttle_period_seconds{queue=\"rq\"} 60.000\n",
        "\nrebound_throttle_burst{queue=\"rq\"} 0\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        cr_assert(strstr(r->body, lines[i]), "/metrics lacks %s", lines[i]);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/info", NULL);
    cr_assert_eq(jint(r, "groups.paused"), 1, "%s", r->body);
    rbh_resp_free(r);
    /* answered after the commit: read back after kill -9 */
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_relaunch_http(&S, &H), 0, "restart failed (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    r = expect(200, "GET", "/api/groups/gq/acme", NULL);
    cr_assert_eq(jint(r, "override.concurrency"), 2);
    cr_assert_str_eq(jstr(r, "held"), "paused");
    cr_assert_str_eq(jstr(r, "reason"), "upstream 429");
    rbh_resp_free(r);
    r = expect(200, "POST", "/api/groups/gq/acme/resume", NULL);
    rbh_resp_free(r);
    r = expect(200, "GET", "/api/groups/gq?state=active", NULL);
    cr_assert_eq(jint(r, "total"), 1, "%s", r->body);
    cr_assert_str_eq(json_string_value(rbh_get(json_array_get(rbh_get(r->json, "groups"), 0),
                                               "group")),
                     "acme");
    rbh_resp_free(r);
    expect_error(400, "GROUP SET: concurrency must be an integer from 0 to 1000000", "POST",
                 "/api/groups/gq/acme/set", "{\"concurrency\": -1}");
    expect_error(400, "GROUP PAUSE: until must be an RFC 3339 time or seconds from now", "POST",
                 "/api/groups/gq/acme/pause", "{\"until\": \"soon\"}");
    expect_error(400, "GROUPS: state must be all, active, held or paused, got 'x'", "GET",
                 "/api/groups/gq?state=x", NULL);
    expect_error(404, "GROUP SET: no queue 'emials'", "POST", "/api/groups/emials/acme/set",
                 "{}");
    expect_error(404, "GROUP GET: no queue 'emials'", "GET", "/api/groups/emials/acme", NULL);
    expect_error(404, "no such group action 'stop'", "POST", "/api/groups/gq/acme/stop", "{}");
    r = expect(200, "GET", "/api/groups/gq/acme", NULL);
    cr_assert_eq(jint(r, "override.concurrency"), 2, "a refused action changed the group");
    cr_assert(json_is_null(rbh_get(r->json, "paused_until")));
    rbh_resp_free(r);
}
