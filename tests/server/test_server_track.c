/* Faktory Enterprise's progress tracking against the real server (single
 * node; docs/enterprise.md, "Tracking"): TRACK SET and GET through a job's
 * life (enqueued, working, failed, success, dead), the untracked and
 * unknown reply, SET on an enqueued job, reserve_until extending the
 * lease, the record across a restart and kill -9, bad input, and the
 * progress as the dashboard (GET /api/track/JID) and `rebound job` show
 * it. The scenarios of faktory-rs test_tracker_can_send_and_retrieve_job
 * _execution_progress, Ruby's tracking_test.rb and the brief's §6 (28-32).
 * The same source runs in distributed mode (test_pg_server_track.c): no
 * difference between the backends is expected, none is made here. */
#include <criterion/criterion.h>
#include <time.h>

#include "common/timeutil.h"
#include "common_helpers.h"
#include "test_http_harness.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(track, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define SERVER_TEST(name) RBH_SERVER_TEST(track, name)

/* PUSH of jid in queue tq with custom's members (text inside the braces)
 * and extra top-level members (text after a comma, or ""). */
static void push(const char *jid, const char *custom, const char *extra)
{
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"%s\",\"jobtype\":\"T\",\"queue\":\"tq\",\"args\":[]%s%s,"
                         "\"custom\":{%s}}",
                         jid, *extra ? "," : "", extra, custom));
}

/* TRACK GET jid, parsed. */
static json_t *get(rbh_conn *c, const char *jid)
{
    json_t *v = rbh_json(rbh_cmd(c, "TRACK GET %s", jid));
    cr_assert(json_is_object(v), "TRACK GET %s: not a JSON object", jid);
    return v;
}

static void expect_state(rbh_conn *c, const char *jid, const char *state)
{
    json_t *v = get(c, jid);
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), state, "job %s", jid);
    json_decref(v);
}

static void fetch_expect(const char *jid)
{
    json_t *j = rbh_json(rbh_cmd(C, "FETCH tq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jid);
    json_decref(j);
}

static void set_ok(rbh_conn *c, const char *json)
{
    cr_assert(rbh_expect(c, "+OK", "TRACK SET %s", json), "TRACK SET %s", json);
}

/* The wall clock in ms (rbh_now_ms is monotonic). */
static int64_t wall_ms(void)
{
    return (int64_t)time(NULL) * 1000;
}

/* now + s seconds as RFC 3339 (UTC, seconds, Z) into out. */
static const char *rfc3339_in(int s, char out[40])
{
    time_t t = time(NULL) + s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

SERVER_TEST(set_and_get_through_the_jobs_life)
{
    push("trk-00001", "\"track\":1", "");
    /* a fresh enqueued job: state and time, no percent or desc */
    json_t *v = get(C, "trk-00001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "enqueued");
    cr_assert_null(json_object_get(v, "percent"));
    cr_assert_null(json_object_get(v, "desc"));
    int64_t ms;
    cr_assert_eq(rb_time_parse_rfc3339(json_string_value(json_object_get(v, "updated_at")), &ms),
                 0);
    json_decref(v);
    fetch_expect("trk-00001");
    /* from a wid-less connection, as faktory-rs's tracker does */
    rbh_conn *t = rbh_connect(&S, NULL);
    cr_assert_not_null(t);
    set_ok(t, "{\"jid\":\"trk-00001\",\"percent\":32,\"desc\":\"Still processing...\"}");
    set_ok(t, "{\"jid\":\"trk-00001\",\"percent\":33}");
    char *r = rbh_cmd(t, "TRACK GET trk-00001");
    /* Faktory's key order; desc kept from the first SET */
    cr_assert(r &&
                  !strncmp(r,
                           "{\"jid\":\"trk-00001\",\"percent\":33,\"desc\":\"Still processing...\","
                           "\"state\":\"working\",\"updated_at\":\"",
                           strlen("{\"jid\":\"trk-00001\",\"percent\":33,\"desc\":\"Still "
                                  "processing...\",\"state\":\"working\",\"updated_at\":\"")),
              "%s", r);
    free(r);
    /* FAIL: in retries, "failed" */
    cr_assert(
        rbh_expect(C, "+OK", "FAIL {\"jid\":\"trk-00001\",\"errtype\":\"E\",\"message\":\"x\"}"));
    expect_state(t, "trk-00001", "failed");
    cr_assert(rbh_expect(C, "+OK",
                         "MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\","
                         "\"filter\":{\"jids\":[\"trk-00001\"]}}"));
    expect_state(t, "trk-00001", "enqueued");
    fetch_expect("trk-00001");
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"trk-00001\"}"));
    /* success, percent and desc retained; SET after success still +OK */
    v = get(t, "trk-00001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "success");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 33);
    cr_assert_str_eq(json_string_value(json_object_get(v, "desc")), "Still processing...");
    json_decref(v);
    set_ok(t, "{\"jid\":\"trk-00001\",\"percent\":99,\"desc\":\"Final stage.\"}");
    set_ok(t, "{\"jid\":\"trk-00001\",\"percent\":100}");
    v = get(t, "trk-00001");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "success");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 100);
    cr_assert_str_eq(json_string_value(json_object_get(v, "desc")), "Final stage.");
    json_decref(v);
    rbh_close(t);
}

SERVER_TEST(dead_and_discarded_jobs_are_dead)
{
    push("trk-dead1", "\"track\":true", "\"retry\":-1");
    fetch_expect("trk-dead1");
    set_ok(C, "{\"jid\":\"trk-dead1\",\"percent\":10}");
    cr_assert(
        rbh_expect(C, "+OK", "FAIL {\"jid\":\"trk-dead1\",\"errtype\":\"E\",\"message\":\"x\"}"));
    cr_assert(rbh_wait_state(C, "trk-dead1", "dead", 2000));
    expect_state(C, "trk-dead1", "dead");
    /* deleted from the dead set: still "dead" (remembered) */
    cr_assert(rbh_expect(C, "+OK",
                         "MUTATE {\"cmd\":\"discard\",\"target\":\"dead\","
                         "\"filter\":{\"jids\":[\"trk-dead1\"]}}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"trk-dead1\"}"));
    expect_state(C, "trk-dead1", "dead");
    /* retry 0: discarded on failure, "dead" */
    push("trk-disc1", "\"track\":1", "\"retry\":0");
    fetch_expect("trk-disc1");
    set_ok(C, "{\"jid\":\"trk-disc1\",\"desc\":\"started\"}");
    cr_assert(
        rbh_expect(C, "+OK", "FAIL {\"jid\":\"trk-disc1\",\"errtype\":\"E\",\"message\":\"x\"}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"trk-disc1\"}"));
    expect_state(C, "trk-disc1", "dead");
    /* a tracked job that never reported progress keeps no record: once
     * ACKed it is gone and answers unknown (the cheap path, docs) */
    push("trk-quiet", "\"track\":1", "");
    fetch_expect("trk-quiet");
    expect_state(C, "trk-quiet", "working");
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"trk-quiet\"}"));
    expect_state(C, "trk-quiet", "unknown");
    /* a scheduled job reads "enqueued" */
    push("trk-sched", "\"track\":4", "\"at\":\"2099-01-01T00:00:00Z\"");
    expect_state(C, "trk-sched", "enqueued");
}

SERVER_TEST(untracked_and_unknown_jobs_answer_unknown_exactly)
{
    push("trk-untr1", "", "");
    push("trk-untr2", "\"track\":0", "");
    for (int i = 0; i < 3; i++) {
        const char *jid = i == 0 ? "trk-untr1" : i == 1 ? "trk-untr2" : "never-pushed";
        char want[128];
        snprintf(want, sizeof want, "{\"jid\":\"%s\",\"state\":\"unknown\",\"updated_at\":\"\"}",
                 jid);
        /* SET on it: +OK, nothing kept (a worker's progress call never fails its job) */
        char set[128];
        snprintf(set, sizeof set, "{\"jid\":\"%s\",\"percent\":50,\"desc\":\"x\"}", jid);
        set_ok(C, set);
        cr_assert(rbh_expect(C, want, "TRACK GET %s", jid));
    }
}

SERVER_TEST(set_on_an_enqueued_job_and_null_keeps)
{
    push("trk-enq01", "\"track\":1", "");
    /* Ruby sends desc null: nothing changed for desc */
    set_ok(C, "{\"jid\":\"trk-enq01\",\"percent\":1,\"desc\":null}");
    set_ok(C, "{\"jid\":\"trk-enq01\",\"percent\":2,\"desc\":\"Starting...\"}");
    set_ok(C, "{\"jid\":\"trk-enq01\",\"desc\":null}");
    json_t *v = get(C, "trk-enq01");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(v, "desc")), "Starting...");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "enqueued");
    json_decref(v);
    char ru[40], set[160];
    snprintf(set, sizeof set, "{\"jid\":\"trk-enq01\",\"reserve_until\":\"%s\"}",
             rfc3339_in(60, ru));
    set_ok(C, set);
    expect_state(C, "trk-enq01", "enqueued");
    /* percent as the brief says: truncated and clamped, always an integer */
    set_ok(C, "{\"jid\":\"trk-enq01\",\"percent\":33.7}");
    v = get(C, "trk-enq01");
    cr_assert(json_is_integer(json_object_get(v, "percent")));
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 33);
    json_decref(v);
    set_ok(C, "{\"jid\":\"trk-enq01\",\"percent\":150}");
    v = get(C, "trk-enq01");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 100);
    json_decref(v);
    set_ok(C, "{\"jid\":\"trk-enq01\",\"percent\":-1}");
    v = get(C, "trk-enq01");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 0);
    json_decref(v);
}

SERVER_TEST(reserve_until_extends_the_lease_only)
{
    push("trk-res01", "\"track\":1", "\"reserve_for\":1");
    fetch_expect("trk-res01");
    char ru[40], set[160];
    snprintf(set, sizeof set, "{\"jid\":\"trk-res01\",\"reserve_until\":\"%s\"}",
             rfc3339_in(120, ru));
    set_ok(C, set);
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"trk-res01\"}"));
    int64_t until = 0;
    cr_assert_eq(
        rb_time_parse_rfc3339(json_string_value(json_object_get(v, "reserved_until")), &until), 0);
    cr_assert(until > wall_ms() + 100 * 1000, "lease not extended");
    json_decref(v);
    /* an earlier time does not shorten it */
    snprintf(set, sizeof set, "{\"jid\":\"trk-res01\",\"reserve_until\":\"%s\"}",
             rfc3339_in(5, ru));
    set_ok(C, set);
    v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"trk-res01\"}"));
    int64_t until2 = 0;
    cr_assert_eq(
        rb_time_parse_rfc3339(json_string_value(json_object_get(v, "reserved_until")), &until2), 0);
    cr_assert_eq(until2, until);
    json_decref(v);
    /* past its reserve_for of 1 s, still working */
    rbh_sleep_ms(2500);
    expect_state(C, "trk-res01", "working");
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"trk-res01\"}"));
    /* more than 24 h ahead: capped */
    push("trk-res02", "\"track\":1", "\"reserve_for\":1");
    fetch_expect("trk-res02");
    snprintf(set, sizeof set, "{\"jid\":\"trk-res02\",\"reserve_until\":\"%s\"}",
             rfc3339_in(3 * 86400, ru));
    set_ok(C, set);
    v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"trk-res02\"}"));
    cr_assert_eq(
        rb_time_parse_rfc3339(json_string_value(json_object_get(v, "reserved_until")), &until), 0);
    cr_assert(until <= wall_ms() + 86400 * 1000LL + 1000, "until %lld now %lld", (long long)until,
              (long long)wall_ms());
    json_decref(v);
}

/* Restarts S on its database: SIGTERM (graceful) or SIGKILL. */
static void restart(int sig)
{
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, sig);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

static void survives(int sig)
{
    push("trk-dur01", "\"track\":1", "");
    push("trk-dur02", "\"track\":1", "");
    set_ok(C, "{\"jid\":\"trk-dur01\",\"percent\":40,\"desc\":\"half\"}");
    fetch_expect("trk-dur01");
    fetch_expect("trk-dur02");
    set_ok(C, "{\"jid\":\"trk-dur02\",\"percent\":70}");
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"trk-dur02\"}"));
    restart(sig);
    json_t *v = get(C, "trk-dur01");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "working");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 40);
    cr_assert_str_eq(json_string_value(json_object_get(v, "desc")), "half");
    json_decref(v);
    v = get(C, "trk-dur02");
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "success");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 70);
    json_decref(v);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"trk-dur01\"}"));
    restart(sig);
    expect_state(C, "trk-dur01", "success");
    /* FLUSH forgets every record */
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    cr_assert(rbh_expect(C, "{\"jid\":\"trk-dur02\",\"state\":\"unknown\",\"updated_at\":\"\"}",
                         "TRACK GET trk-dur02"));
}

SERVER_TEST(graceful_restart_keeps_records)
{
    survives(SIGTERM);
}

SERVER_TEST(kill_9_keeps_records)
{
    survives(SIGKILL);
}

SERVER_TEST(bad_input_is_refused_and_changes_nothing)
{
    push("trk-bad01", "\"track\":1", "");
    set_ok(C, "{\"jid\":\"trk-bad01\",\"percent\":5,\"desc\":\"five\"}");
    static const char *const cases[][2] = {
        {"TRACK", "-ERR TRACK requires an argument"},
        {"TRACK GET", "-ERR TRACK GET requires one jid"},
        {"TRACK GET a b", "-ERR TRACK GET requires one jid"},
        {"TRACK SET", "-ERR TRACK SET requires a JSON object"},
        {"TRACK SET {}", "-ERR TRACK SET: jid must be a non-empty string"},
        {"TRACK SET nope", NULL},
        {"TRACK SET [1]", "-ERR TRACK SET: argument must be a JSON object"},
        {"TRACK X", "-ERR unknown track command X (TRACK GET jid or TRACK SET {json})"},
        {"TRACK SET {\"jid\":\"trk-bad01\",\"percent\":\"50\"}",
         "-ERR TRACK SET: percent must be a number from 0 to 100"},
        {"TRACK SET {\"jid\":\"trk-bad01\",\"percent\":50,\"desc\":7}",
         "-ERR TRACK SET: desc must be a string of at most 1000 bytes"},
        {"TRACK SET {\"jid\":\"trk-bad01\",\"percent\":50,\"reserve_until\":\"soon\"}",
         "-ERR TRACK SET: reserve_until must be an RFC 3339 time"},
        {"TRACK SET {\"jid\":\"\",\"percent\":50}",
         "-ERR TRACK SET: jid must be a non-empty string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r = rbh_cmd(C, "%s", cases[i][0]);
        cr_assert(r && r[0] == '-', "%s: '%s'", cases[i][0], r ? r : "(closed)");
        if (cases[i][1])
            cr_assert_str_eq(r, cases[i][1], "%s", cases[i][0]);
        free(r);
    }
    /* a desc too long */
    char big[1200] = "TRACK SET {\"jid\":\"trk-bad01\",\"desc\":\"";
    size_t n = strlen(big);
    memset(big + n, 'x', 1001);
    strcpy(big + n + 1001, "\"}");
    cr_assert(
        rbh_expect(C, "-ERR TRACK SET: desc must be a string of at most 1000 bytes", "%s", big));
    /* nothing changed, connection alive */
    json_t *v = get(C, "trk-bad01");
    cr_assert_eq(json_integer_value(json_object_get(v, "percent")), 5);
    cr_assert_str_eq(json_string_value(json_object_get(v, "desc")), "five");
    json_decref(v);
}

SERVER_TEST(dashboard_and_cli_show_progress)
{
    /* S again, with its HTTP listener */
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGTERM);
    int hport = 0;
    cr_assert_eq(rbh_relaunch_http(&S, &hport), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    push("trk-show1", "\"track\":1", "");
    fetch_expect("trk-show1");
    set_ok(C, "{\"jid\":\"trk-show1\",\"percent\":42,\"desc\":\"pass 2 of 3\"}");
    /* the dashboard's job page reads TRACK GET's record */
    char *want = rbh_cmd(C, "TRACK GET trk-show1");
    cr_assert_not_null(want);
    rbh_resp *r = rbh_http(hport, "GET", "/api/track/trk-show1", NULL, NULL);
    cr_assert(r && r->status == 200, "GET /api/track: %d", r ? r->status : -1);
    cr_assert_str_eq(json_string_value(json_object_get(r->json, "state")), "working");
    cr_assert_eq(json_integer_value(json_object_get(r->json, "percent")), 42);
    json_t *w = json_loads(want, 0, NULL);
    cr_assert(json_equal(w, r->json), "HTTP %s, TRACK GET %s", r->body, want);
    json_decref(w);
    free(want);
    rbh_resp_free(r);
    /* `rebound job` prints the progress line, --json adds the record */
    char cmd[1200], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' job trk-show1 --url tcp://127.0.0.1:%d", rbh_bin(), S.port);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    cr_assert_eq(pclose(p), 0, "%s failed: %s", cmd, out);
    cr_assert(strstr(out, "progress") && strstr(out, "42% pass 2 of 3 (updated "), "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' job trk-show1 --json --url tcp://127.0.0.1:%d", rbh_bin(),
             S.port);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    cr_assert_eq(pclose(p), 0, "%s failed: %s", cmd, out);
    json_t *j = json_loads(out, 0, NULL);
    cr_assert_eq(json_integer_value(rbh_get(j, "progress.percent")), 42, "%s", out);
    json_decref(j);
}
