/* The C client library against the real server: every typed call, the
 * protocol extensions (FAIL fields, SNOOZE, EXTEND, JOB, JOBS), MUTATE, queue
 * pause, password authentication and the unreachable-server message. Each test
 * starts `rebound serve` on port 0 in its own temp dir and stops it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rebound/client.h"

/* ---- a server of our own ------------------------------------------------ */

static struct {
    pid_t pid;
    char dir[256];
    char url[128];
    int port;
} srv;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts rebound serve with config text (NULL: listen addresses only). */
static void server_start(const char *extra_config)
{
    const char *bin = getenv("REBOUND_BIN");
    if (!bin || !*bin)
        bin = "build/rebound";
    snprintf(srv.dir, sizeof srv.dir, "/tmp/rebound-client-XXXXXX");
    cr_assert_not_null(mkdtemp(srv.dir));
    char cfg[320], db[320], portfile[320], log[320];
    snprintf(cfg, sizeof cfg, "%s/rebound.toml", srv.dir);
    snprintf(db, sizeof db, "%s/rebound.db", srv.dir);
    snprintf(portfile, sizeof portfile, "%s/port", srv.dir);
    snprintf(log, sizeof log, "%s/server.log", srv.dir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fprintf(f, "[server]\nlisten = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\n%s\n",
            extra_config ? extra_config : "");
    fclose(f);
    srv.pid = fork();
    cr_assert(srv.pid >= 0);
    if (srv.pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--db", db, "--port-file", portfile,
              "--config", cfg, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) { /* up to ~20 s on a loaded machine */
        FILE *pf = fopen(portfile, "r");
        if (pf) {
            int ok = fscanf(pf, "%d", &srv.port) == 1 && srv.port > 0;
            fclose(pf);
            if (ok) {
                snprintf(srv.url, sizeof srv.url, "tcp://127.0.0.1:%d", srv.port);
                return;
            }
        }
        int st;
        cr_assert_eq(waitpid(srv.pid, &st, WNOHANG), 0, "rebound serve (%s) exited early, see %s",
                     bin, log);
        sleep_ms(20);
    }
    cr_assert_fail("rebound serve wrote no port file");
}

static void server_stop(void)
{
    if (srv.pid > 0) {
        kill(srv.pid, SIGTERM);
        waitpid(srv.pid, NULL, 0);
        srv.pid = 0;
    }
    if (srv.dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", srv.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", srv.dir);
    }
}

static void start_plain(void)
{
    server_start("[retry.jobtypes.flaky]\nftl = \"3 1m 1h\"\n");
}

TestSuite(client_server, .init = start_plain, .fini = server_stop, .timeout = 60);

static rb_client *connect_ok(const rb_client_opts *o)
{
    rb_err e = {0};
    rb_client *c = rb_client_connect(srv.url, o, &e);
    cr_assert_not_null(c, "connect %s: %s", srv.url, rb_err_msg(&e));
    return c;
}

static json_t *must_json(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    cr_assert_not_null(j, "bad JSON '%s'", text);
    return j;
}

/* Fetches from q; the job must be there. Returns the parsed job. */
static json_t *fetch_one(rb_client *c, const char *q)
{
    rb_reply r;
    rb_err e = {0};
    const char *qs[] = {q};
    cr_assert_eq(rb_client_fetch(c, qs, 1, &r, &e), 0, "fetch: %s", rb_err_msg(&e));
    cr_assert_eq(r.type, RB_REPLY_BULK, "no job in '%s'", q);
    return must_json(r.str);
}

static const char *state_of(rb_client *c, const char *jid, json_t **keep)
{
    rb_err e = {0};
    cr_assert_eq(rb_client_job(c, jid, keep, &e), 0, "job: %s", rb_err_msg(&e));
    cr_assert_not_null(*keep, "job %s not found", jid);
    return json_string_value(json_object_get(*keep, "state"));
}

static json_int_t info_size(rb_client *c, const char *path1, const char *path2)
{
    json_t *info = NULL;
    rb_err e = {0};
    cr_assert_eq(rb_client_info(c, &info, &e), 0, "info: %s", rb_err_msg(&e));
    json_t *v = json_object_get(json_object_get(info, "faktory"), path1);
    if (path2)
        v = json_object_get(json_object_get(v, path2), "size");
    json_int_t n = json_integer_value(v);
    json_decref(info);
    return n;
}

Test(client_server, push_fetch_ack_round_trip)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    json_t *job = json_pack("{s:s, s:[i,s], s:s}", "jobtype", "greet", "args", 7, "hi", "queue",
                            "rt");
    cr_assert_eq(rb_client_push_json(c, job, &e), 0, "push: %s", rb_err_msg(&e));
    const char *jid = json_string_value(json_object_get(job, "jid"));
    json_t *info = NULL;
    cr_assert_eq(rb_client_info(c, &info, &e), 0);
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(info, "faktory"), "queues"), "rt")),
                 1);
    json_decref(info);
    json_t *got = fetch_one(c, "rt");
    cr_assert_str_eq(json_string_value(json_object_get(got, "jid")), jid);
    cr_assert(json_equal(json_object_get(got, "args"), json_object_get(job, "args")));
    json_t *st = NULL;
    cr_assert_str_eq(state_of(c, jid, &st), "working");
    json_decref(st);
    cr_assert_eq(rb_client_ack(c, jid, &e), 0, "ack: %s", rb_err_msg(&e));
    json_t *gone = json_true();
    cr_assert_eq(rb_client_job(c, jid, &gone, &e), 0);
    cr_assert_null(gone, "an acked job is deleted");
    json_decref(got);
    json_decref(job);
    rb_client_close(c);
}

Test(client_server, push_text_and_rejections)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    cr_assert_eq(rb_client_push(c, "{\"jid\":\"textjob01\",\"jobtype\":\"t\",\"args\":[]}", &e), 0,
                 "%s", rb_err_msg(&e));
    cr_assert_eq(rb_client_push(c, "{\"jid\":\"nojobtype1\",\"args\":[]}", &e), RB_EPROTO);
    cr_assert(strstr(e.msg, "jobtype"), "reason names the field: %s", e.msg);
    cr_assert_eq(rb_client_push(c, "{\"jid\":\"badpolicy1\",\"jobtype\":\"t\",\"args\":[],"
                                   "\"retry_policy\":\"ftl:0 5s\"}",
                                &e),
                 RB_EPROTO);
    cr_assert(strstr(e.msg, "retry_policy"), "reason names the field: %s", e.msg);
    /* the connection is still fine after an error reply */
    json_t *rej = NULL;
    cr_assert_eq(rb_client_pushb(c,
                                 "[{\"jid\":\"bulkok0001\",\"jobtype\":\"t\",\"args\":[]},"
                                 "{\"jid\":\"bulkbad001\",\"args\":[]}]",
                                 &rej, &e),
                 0, "pushb: %s", rb_err_msg(&e));
    cr_assert_eq(json_object_size(rej), 1);
    cr_assert_not_null(json_object_get(rej, "bulkbad001"));
    json_decref(rej);
    json_t *st = NULL;
    cr_assert_str_eq(state_of(c, "bulkok0001", &st), "enqueued");
    json_decref(st);
    rb_client_close(c);
}

Test(client_server, fail_extensions_reach_the_history)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    json_t *job = json_pack("{s:s, s:[], s:s}", "jobtype", "flaky", "args", "queue", "fx");
    cr_assert_eq(rb_client_push_json(c, job, &e), 0);
    const char *jid = json_string_value(json_object_get(job, "jid"));
    json_decref(fetch_one(c, "fx"));
    const char *bt[] = {"worker.c:10", "main.c:3"};
    rb_fail f = {.jid = jid, .errtype = "Timeout", .message = "took too long", .backtrace = bt,
                 .nbacktrace = 2, .retryable = -1, .next_retry_delay = 90};
    cr_assert_eq(rb_client_fail(c, &f, &e), 0, "fail: %s", rb_err_msg(&e));
    json_t *res = NULL;
    cr_assert_str_eq(state_of(c, jid, &res), "retries");
    json_t *h = json_array_get(json_object_get(res, "history"), 0);
    cr_assert_not_null(h, "one history entry");
    cr_assert_str_eq(json_string_value(json_object_get(h, "errtype")), "Timeout");
    cr_assert_str_eq(json_string_value(json_object_get(h, "message")), "took too long");
    cr_assert_str_eq(json_string_value(json_object_get(h, "outcome")), "retry");
    cr_assert_str_eq(json_string_value(json_object_get(h, "source")), "override");
    cr_assert_eq(json_integer_value(json_object_get(h, "delay_ms")), 90000);
    cr_assert(!json_is_null(json_object_get(res, "next_at")));
    json_decref(res);

    /* retryable: false ends it at once, whatever the policy says */
    cr_assert_eq(rb_client_mutate(c,
                                  &(rb_mutate){.cmd = "requeue", .target = "retries",
                                               .jids = &jid, .njids = 1},
                                  &e),
                 0, "mutate: %s", rb_err_msg(&e));
    json_decref(fetch_one(c, "fx"));
    rb_fail f2 = {.jid = jid, .errtype = "Fatal", .message = "no", .retryable = 0};
    cr_assert_eq(rb_client_fail(c, &f2, &e), 0, "fail: %s", rb_err_msg(&e));
    cr_assert_str_eq(state_of(c, jid, &res), "dead");
    json_t *hist = json_object_get(res, "history");
    cr_assert_eq(json_array_size(hist), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(hist, 1), "outcome")),
                     "dead");
    json_decref(res);
    json_decref(job);
    rb_client_close(c);
}

Test(client_server, snooze_extend_and_unknown_jobs)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    json_t *job = json_pack("{s:s, s:[], s:s}", "jobtype", "slow", "args", "queue", "sz");
    cr_assert_eq(rb_client_push_json(c, job, &e), 0);
    const char *jid = json_string_value(json_object_get(job, "jid"));
    json_decref(fetch_one(c, "sz"));
    cr_assert_eq(rb_client_extend(c, jid, 120, &e), 0, "extend: %s", rb_err_msg(&e));
    cr_assert_eq(rb_client_snooze(c, jid, 3600, &e), 0, "snooze: %s", rb_err_msg(&e));
    json_t *res = NULL;
    cr_assert_str_eq(state_of(c, jid, &res), "scheduled");
    json_decref(res);
    cr_assert_eq(rb_client_snooze(c, "no-such-job-1", 5, &e), RB_EPROTO);
    cr_assert_eq(rb_client_extend(c, jid, 60, &e), RB_EPROTO, "not working any more");
    json_t *none = json_true();
    cr_assert_eq(rb_client_job(c, "no-such-job-1", &none, &e), 0);
    cr_assert_null(none);
    json_decref(job);
    rb_client_close(c);
}

Test(client_server, jobs_listing_and_mutate)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    char t[64];
    time_t later = time(NULL) + 3600;
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", gmtime(&later));
    for (int i = 0; i < 3; i++) {
        json_t *j = json_pack("{s:s, s:[i], s:s}", "jobtype", i ? "b" : "a", "args", i, "at", t);
        cr_assert_eq(rb_client_push_json(c, j, &e), 0, "%s", rb_err_msg(&e));
        json_decref(j);
    }
    json_t *res = NULL;
    rb_jobs_query q = {.state = "scheduled"};
    cr_assert_eq(rb_client_jobs(c, &q, &res, &e), 0, "jobs: %s", rb_err_msg(&e));
    cr_assert_eq(json_integer_value(json_object_get(res, "total")), 3);
    json_decref(res);
    q.jobtype = "b";
    q.limit = 1;
    cr_assert_eq(rb_client_jobs(c, &q, &res, &e), 0);
    cr_assert_eq(json_integer_value(json_object_get(res, "total")), 2);
    cr_assert_eq(json_array_size(json_object_get(res, "jobs")), 1);
    json_decref(res);
    cr_assert_eq(info_size(c, "tasks", "Scheduled"), 3);
    rb_mutate m = {.cmd = "kill", .target = "scheduled", .jobtype = "b"};
    cr_assert_eq(rb_client_mutate(c, &m, &e), 0, "mutate: %s", rb_err_msg(&e));
    cr_assert_eq(info_size(c, "tasks", "Dead"), 2);
    cr_assert_eq(info_size(c, "tasks", "Scheduled"), 1);
    m = (rb_mutate){.cmd = "discard", .target = "dead"};
    cr_assert_eq(rb_client_mutate(c, &m, &e), 0);
    cr_assert_eq(info_size(c, "tasks", "Dead"), 0);
    cr_assert_eq(rb_client_flush(c, &e), 0, "flush: %s", rb_err_msg(&e));
    cr_assert_eq(info_size(c, "tasks", "Scheduled"), 0);
    rb_client_close(c);
}

Test(client_server, paused_queue_is_skipped)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    cr_assert_eq(rb_client_push(c, "{\"jid\":\"pausedjob1\",\"jobtype\":\"t\",\"args\":[],"
                                   "\"queue\":\"pq\"}",
                                &e),
                 0);
    const char *qs[] = {"pq"};
    cr_assert_eq(rb_client_queue(c, "pause", qs, 1, &e), 0, "pause: %s", rb_err_msg(&e));
    rb_reply r;
    cr_assert_eq(rb_client_fetch(c, qs, 1, &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_NIL, "a paused queue gives nothing");
    json_t *lat = NULL;
    cr_assert_eq(rb_client_queue_latency(c, qs, 1, &lat, &e), 0, "latency: %s", rb_err_msg(&e));
    cr_assert(json_is_number(json_object_get(lat, "pq")));
    json_decref(lat);
    cr_assert_eq(rb_client_queue(c, "resume", qs, 1, &e), 0);
    json_t *job = fetch_one(c, "pq");
    cr_assert_str_eq(json_string_value(json_object_get(job, "jid")), "pausedjob1");
    json_decref(job);
    cr_assert_eq(rb_client_ack(c, "pausedjob1", &e), 0);
    rb_client_close(c);
}

Test(client_server, worker_beat_and_quiet)
{
    rb_client_opts o = {.wid = "client-test-wid"};
    rb_client *w = connect_ok(&o);
    rb_client *admin = connect_ok(NULL);
    rb_err e = {0};
    rb_beat_state st = RB_BEAT_TERMINATE;
    cr_assert_eq(rb_client_beat(w, NULL, 1000, &st, &e), 0, "beat: %s", rb_err_msg(&e));
    cr_assert_eq(st, RB_BEAT_OK);
    cr_assert_eq(info_size(admin, "tasks", "Workers"), 1);
    cr_assert_eq(rb_client_workers(admin, "quiet", "client-test-wid", &e), 0, "workers: %s",
                 rb_err_msg(&e));
    cr_assert_eq(rb_client_beat(w, "quiet", -1, &st, &e), 0, "beat: %s", rb_err_msg(&e));
    cr_assert_eq(st, RB_BEAT_QUIET);
    rb_client_close(admin);
    rb_client_close(w);
}

Test(client_server, raw_call_and_unknown_command)
{
    rb_client *c = connect_ok(NULL);
    rb_err e = {0};
    rb_reply r;
    cr_assert_eq(rb_client_call(c, "INFO", &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_BULK);
    json_t *j = must_json(r.str);
    cr_assert(json_is_object(json_object_get(j, "faktory")));
    json_decref(j);
    cr_assert_eq(rb_client_call(c, "BOGUS", &r, &e), RB_EPROTO);
    cr_assert(strstr(e.msg, "BOGUS"), "%s", e.msg);
    cr_assert_eq(rb_client_call(c, "INFO", &r, &e), 0, "still usable");
    rb_client_close(c);
}

/* An address where nothing listens: bind a port, then close it. */
Test(client_offline, unreachable_server_names_the_address)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    int port = ntohs(a.sin_port);
    close(fd);
    char url[64], want[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    rb_err e = {0};
    cr_assert_null(rb_client_connect(url, NULL, &e));
    cr_assert_eq(e.code, RB_ECONN);
    cr_assert(strstr(e.msg, want), "'%s' names %s", e.msg, want);
    cr_assert_null(rb_client_connect("tcp+tls://127.0.0.1:1", NULL, &e));
    cr_assert_eq(e.code, RB_ECONN); /* tls is tried only once connected */
    cr_assert(strstr(e.msg, "127.0.0.1:1"), "'%s' names the address", e.msg);
}

static void start_with_password(void)
{
    server_start("password = \"hunter2\"\n");
}

TestSuite(client_auth_server, .init = start_with_password, .fini = server_stop, .timeout = 60);

Test(client_auth_server, password_in_url_and_opts)
{
    char url[160];
    snprintf(url, sizeof url, "tcp://:hunter2@127.0.0.1:%d", srv.port);
    rb_err e = {0};
    rb_client *c = rb_client_connect(url, NULL, &e);
    cr_assert_not_null(c, "right password: %s", rb_err_msg(&e));
    cr_assert(json_is_string(json_object_get(rb_client_greeting(c), "s")), "salted greeting");
    rb_client_close(c);
    rb_client_opts o = {.password = "hunter2"};
    c = rb_client_connect(srv.url, &o, &e);
    cr_assert_not_null(c, "password in opts: %s", rb_err_msg(&e));
    cr_assert_eq(rb_client_flush(c, &e), 0);
    rb_client_close(c);
    o.password = "wrong";
    cr_assert_null(rb_client_connect(srv.url, &o, &e));
    cr_assert_eq(e.code, RB_EAUTH, "%s", e.msg);
    cr_assert_null(rb_client_connect(srv.url, NULL, &e));
    cr_assert_eq(e.code, RB_EAUTH, "%s", e.msg);
}
