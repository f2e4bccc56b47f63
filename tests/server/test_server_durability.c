/* Durability tests: every state, counter and pause survives kill -9 and a
 * restart; jobs in flight come back when their reservations expire; acked
 * jobs never return; a failing disk gives error replies, never a false OK,
 * while reads keep working; SIGTERM repeated while the server stops never
 * cuts its final close. */
#include <criterion/criterion.h>

#include "harness.h"

static rbh_server S;

static void start(void)
{
    rbh_init(&S);
    static char fault[400];
    snprintf(fault, sizeof fault, "%s/fault", S.dir);
    S.env_fault = fault;
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not start (see %s)", S.log);
}

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(durability, .init = start, .fini = stop, .timeout = 40);

/* Criterion ignores assertion failures in .fini, so every test ends by
 * stopping the server and asserting that it exited cleanly (status 0, no
 * sanitizer report in its log). */
static void finish(void)
{
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define SERVER_TEST(name) \
    static void body_##name(void); \
    Test(durability, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

static void fetch_expect(rbh_conn *c, const char *queue, const char *jid)
{
    json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", queue));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jid);
    json_decref(j);
}

static void assert_state(rbh_conn *c, const char *jid, const char *want)
{
    char *st = rbh_job_state(c, jid);
    cr_assert(st && !strcmp(st, want), "job %s is %s, wanted %s", jid, st ? st : "gone", want);
    free(st);
}

#define QUICK "\"retry_policy\":{\"dialect\":\"temporal\",\"initial_interval\":\"100ms\",\"maximum_attempts\":0}"

SERVER_TEST(kill_9_and_restart_keeps_every_state)
{
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"enq-00001\",\"jobtype\":\"a\",\"args\":[1],\"priority\":7,\"extra\":\"kept\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"sch-00001\",\"jobtype\":\"a\",\"args\":[],\"at\":\"2999-01-01T00:00:00Z\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"ded-00001\",\"jobtype\":\"a\",\"args\":[],\"retry\":-1,\"queue\":\"d\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"ret-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"r\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"wrk-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"w\",\"reserve_for\":1," QUICK "}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"ack-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"k\"}"));
    fetch_expect(c, "d", "ded-00001");
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"ded-00001\",\"errtype\":\"E\"}"));
    fetch_expect(c, "r", "ret-00001");
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"ret-00001\",\"errtype\":\"E\",\"message\":\"m\"}"));
    fetch_expect(c, "k", "ack-00001");
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"ack-00001\"}"));
    cr_assert(rbh_expect(c, "+OK", "QUEUE PAUSE paused-q"));
    fetch_expect(c, "w", "wrk-00001"); /* in flight at the crash */
    json_t *before = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"enq-00001\"}"));
    char *created = strdup(json_string_value(rbh_get(before, "job.created_at")));
    char *enqueued = strdup(json_string_value(rbh_get(before, "job.enqueued_at")));
    json_decref(before);
    rbh_close(c);

    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0);
    c = rbh_connect(&S, "w1");
    assert_state(c, "enq-00001", "enqueued");
    assert_state(c, "sch-00001", "scheduled");
    assert_state(c, "ded-00001", "dead");
    assert_state(c, "ret-00001", "retries");
    cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"ack-00001\"}"));
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), 1);
    /* two FAILs before the crash; the job in flight (reserve_for 1) may
     * have been reaped since the restart, a third failure: read the
     * counter, then whether it was (not reaped by then: not before) */
    long long failures = rbh_info_int(c, "faktory.total_failures");
    char *wrk = rbh_job_state(c, "wrk-00001");
    cr_assert(failures == 2 || (failures == 3 && wrk && strcmp(wrk, "working")),
              "total_failures %lld after the restart (job in flight: %s)", failures, wrk);
    free(wrk);
    json_t *v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"ret-00001\"}"));
    cr_assert_str_eq(json_string_value(rbh_get(v, "history.0.message")), "m");
    cr_assert_str_eq(json_string_value(rbh_get(v, "job.failure.errtype")), "E");
    json_decref(v);
    v = rbh_json(rbh_cmd(c, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(v, "extra")), "kept");
    cr_assert_str_eq(json_string_value(json_object_get(v, "created_at")), created);
    cr_assert_str_eq(json_string_value(json_object_get(v, "enqueued_at")), enqueued);
    free(created);
    free(enqueued);
    cr_assert_eq(json_integer_value(json_object_get(v, "priority")), 7);
    json_decref(v);
    /* the paused queue is still paused */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pq-000001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"paused-q\"}"));
    cr_assert(rbh_expect(c, "$-1", "FETCH paused-q"));
    /* the job in flight comes back when its reservation expires */
    json_t *j = NULL;
    for (int i = 0; i < 5 && !json_is_object(j); i++) {
        json_decref(j);
        j = rbh_json(rbh_cmd(c, "FETCH w"));
    }
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "wrk-00001");
    cr_assert_str_eq(json_string_value(rbh_get(j, "failure.errtype")), "ReservationExpired");
    json_decref(j);
    v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"wrk-00001\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "attempts")), 2);
    json_decref(v);
    cr_assert_eq(rbh_info_int(c, "faktory.total_failures"), 3); /* its expiry counted once */
    rbh_close(c);
}

#ifndef RBH_PG
/* The SQLite file's writes fail on demand (REBOUND_FAULT). Distributed
 * mode's counterpart, the database going away under a node, is
 * test_pg_nodes.c's lost_database_answers_errors_then_resumes. */
SERVER_TEST(storage_failure_is_an_error_not_an_ok)
{
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pre-00001\",\"jobtype\":\"a\",\"args\":[]}"));
    FILE *f = fopen(S.env_fault, "w");
    cr_assert_not_null(f);
    fclose(f);
    char *r = rbh_cmd(c, "PUSH {\"jid\":\"flt-00001\",\"jobtype\":\"a\",\"args\":[]}");
    cr_assert(r && strstr(r, "-ERR storage error") == r, "got %s", r);
    free(r);
    cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"flt-00001\"}"));
    r = rbh_cmd(c, "FETCH default");
    cr_assert(r && strstr(r, "-ERR storage error") == r, "got %s", r);
    free(r);
    /* reads still work, and the failed FETCH left the job ready */
    cr_assert_eq(rbh_info_int(c, "faktory.queues.default"), 1);
    assert_state(c, "pre-00001", "enqueued");
    unlink(S.env_fault);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"flt-00001\",\"jobtype\":\"a\",\"args\":[]}"));
    fetch_expect(c, "default", "pre-00001");
    rbh_close(c);
}
#endif

/* A service manager may repeat SIGTERM while the server closes. During
 * the loop a second one means "now" (the loop ends at once); after the
 * loop the signals are ignored, so that the final close is never cut half
 * way: the server still exits 0 and logs that it stopped. The fault
 * server.stop_pause_ms holds the server after its loop for a second while
 * the test keeps sending SIGTERM (a default action there would kill it). */
Test(durability, sigterm_repeated_while_stopping_is_ignored_after_the_loop)
{
    rbh_fault_set("server.stop_pause_ms", "1000");
    rbh_server s;
    const char *const no_http[] = {"--http-listen", "off", NULL};
    int started = rbh_start(&s, NULL, no_http);
    rbh_fault_set("server.stop_pause_ms", NULL);
    cr_assert(started == 0);
    /* a client connected: the first SIGTERM gives it a second's grace, so
     * the next one lands in the loop ("now") and the rest after it */
    rbh_conn *c = rbh_connect(&s, "w1");
    cr_assert(c);
    int st = -1, sent = 0;
    pid_t pid = s.pid;
    for (int64_t end = rbh_now_ms() + 30000; rbh_now_ms() < end; rbh_sleep_ms(20)) {
        kill(pid, SIGTERM);
        sent++;
        if (waitpid(pid, &st, WNOHANG) == pid)
            break;
    }
    s.pid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "the server did not exit 0 after %d SIGTERMs (%s %d)", sent,
              WIFSIGNALED(st) ? "killed by signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : st);
    cr_assert_geq(sent, 3, "fewer SIGTERMs than the pause should have seen: %d", sent);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "grep -q 'second signal: exiting now' '%s' && grep -q 'rebound stopped' '%s'",
             s.log, s.log);
    cr_assert(system(cmd) == 0, "the log does not show the second signal and the stop");
    rbh_close(c);
    cr_assert(rbh_stop(&s) == 0);
}
