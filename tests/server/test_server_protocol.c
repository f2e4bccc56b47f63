/* Protocol tests against the real server: handshake and passwords, framing
 * and limits, error replies for every malformed command, INFO's paths, BEAT
 * and WORKERS, END, and the graceful shutdown. */
#include <criterion/criterion.h>


#include "harness.h"

static rbh_server S;

static void start(void)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0, "server did not start (see %s)", S.log);
}

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(protocol, .init = start, .fini = stop, .timeout = 90);

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
    Test(protocol, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

SERVER_TEST(greeting_and_hello)
{
    rbh_conn *c = rbh_connect_raw(&S);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->greeting, "+HI {\"v\":2}");
    cr_assert(rbh_expect(c, "+OK", "HELLO {\"v\":2,\"wid\":\"w-1\",\"labels\":[\"x\"]}"));
    cr_assert(rbh_expect(c, "-ERR HELLO: already identified", "HELLO {\"v\":2}"));
    rbh_close(c);
}

SERVER_TEST(command_before_hello_is_refused_and_closed)
{
    rbh_conn *c = rbh_connect_raw(&S);
    char *r = rbh_cmd(c, "PUSH {}");
    cr_assert_not_null(r);
    cr_assert(strstr(r, "-ERR expected HELLO") == r, "got %s", r);
    free(r);
    cr_assert_null(rbh_reply(c), "connection should be closed");
    rbh_close(c);
}

SERVER_TEST(hello_with_bad_json_or_version)
{
    rbh_conn *c = rbh_connect_raw(&S);
    char *r = rbh_cmd(c, "HELLO {nope");
    cr_assert(r && strstr(r, "-ERR HELLO: invalid JSON") == r, "got %s", r);
    free(r);
    rbh_close(c);
    c = rbh_connect_raw(&S);
    r = rbh_cmd(c, "HELLO {\"v\":3}");
    cr_assert(r && strstr(r, "unsupported protocol version"), "got %s", r);
    free(r);
    rbh_close(c);
}

SERVER_TEST(unknown_and_malformed_commands_get_errors)
{
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert(rbh_expect(c, "-ERR unknown command FROB", "FROB 1 2"));
    cr_assert(rbh_expect(c, "-ERR empty command", "%s", ""));
    cr_assert(rbh_expect(c, "-ERR PUSH requires an argument", "PUSH"));
    cr_assert(rbh_expect(c, "-ERR ACK requires an argument", "ACK"));
    cr_assert(rbh_expect(c, "-ERR FAIL requires an argument", "FAIL"));
    cr_assert(rbh_expect(c, "-ERR BEAT requires an argument", "BEAT"));
    cr_assert(rbh_expect(c, "-ERR MUTATE requires an argument", "MUTATE"));
    cr_assert(rbh_expect(c, "-ERR QUEUE requires an argument", "QUEUE"));
    cr_assert(rbh_expect(c, "-ERR INFO takes no argument", "INFO now"));
    cr_assert(rbh_expect(c, "-ERR FLUSH takes no argument", "FLUSH all"));
    cr_assert(rbh_expect(c, "-ERR must call fetch with at least one queue", "FETCH"));
    cr_assert(rbh_expect(c, "-ERR PUSH: argument must be a JSON object", "PUSH [1]"));
    cr_assert(rbh_expect(c, "-ERR PUSHB: argument must be a JSON array", "PUSHB {}"));
    cr_assert(rbh_expect(c, "-ERR ACK: jid must be a non-empty string", "ACK {}"));
    cr_assert(rbh_expect(c, "-ERR FAIL: jid must be a non-empty string", "FAIL {\"jid\":5}"));
    char *r = rbh_cmd(c, "ACK {\"jid\":");
    cr_assert(r && strstr(r, "-ERR ACK: invalid JSON at column") == r, "got %s", r);
    free(r);
    /* nothing changed, connection still fine */
    cr_assert_eq(rbh_info_int(c, "faktory.total_enqueued"), 0);
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), 0);
    rbh_close(c);
}

SERVER_TEST(bare_lf_and_pipelined_commands)
{
    rbh_conn *c = rbh_connect(&S, NULL);
    const char *two = "PUSH {\"jid\":\"pipe-0001\",\"jobtype\":\"a\",\"args\":[]}\n"
                      "PUSH {\"jid\":\"pipe-0002\",\"jobtype\":\"a\",\"args\":[]}\r\n";
    cr_assert_eq(rbh_send(c, two, strlen(two)), 0);
    char *r1 = rbh_reply(c), *r2 = rbh_reply(c);
    cr_assert_str_eq(r1, "+OK");
    cr_assert_str_eq(r2, "+OK");
    free(r1);
    free(r2);
    cr_assert_eq(rbh_info_int(c, "faktory.queues.default"), 2);
    rbh_close(c);
}

SERVER_TEST(info_has_faktory_paths)
{
    rbh_conn *c = rbh_connect(&S, "info-w");
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    cr_assert_not_null(v);
    const char *paths[] = {"now", "server_utc_time", "faktory.total_failures",
                           "faktory.total_processed", "faktory.total_enqueued",
                           "faktory.total_queues", "faktory.queues",
                           "faktory.tasks.Scheduled.size", "faktory.tasks.Retries.size",
                           "faktory.tasks.Dead.size", "faktory.tasks.Busy.size",
                           "faktory.tasks.Workers.size", "server.description",
                           "server.faktory_version", "server.uptime", "server.connections",
                           "server.command_count", "server.used_memory_mb"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        cr_assert_not_null(rbh_get(v, paths[i]), "INFO lacks %s", paths[i]);
    cr_assert_eq(json_integer_value(rbh_get(v, "faktory.tasks.Workers.size")), 1);
    cr_assert_eq(json_integer_value(rbh_get(v, "server.connections")), 1);
    json_decref(v);
    rbh_close(c);
}

SERVER_TEST(end_closes_the_connection)
{
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert_eq(rbh_send(c, "END\r\n", 5), 0);
    cr_assert_null(rbh_reply(c));
    rbh_close(c);
}

SERVER_TEST(beat_and_workers_signals)
{
    rbh_conn *w = rbh_connect(&S, "wid-beat"), *adm = rbh_connect(&S, NULL);
    cr_assert(rbh_expect(w, "+OK", "BEAT {\"wid\":\"wid-beat\",\"current_state\":\"\",\"rss_kb\":1}"));
    cr_assert(rbh_expect(w, "-ERR unknown worker nobody (say HELLO with this wid first)",
                         "BEAT {\"wid\":\"nobody\"}"));
    cr_assert(rbh_expect(w, "-ERR BEAT: wid must be a non-empty string", "BEAT {}"));
    cr_assert(rbh_expect(adm, "-ERR WORKERS: cmd must be quiet or terminate", "WORKERS {\"cmd\":\"x\"}"));
    cr_assert(rbh_expect(adm, "-ERR WORKERS: unknown worker zz", "WORKERS {\"cmd\":\"quiet\",\"wid\":\"zz\"}"));
    cr_assert(rbh_expect(adm, "+OK", "WORKERS {\"cmd\":\"quiet\",\"wid\":\"wid-beat\"}"));
    cr_assert(rbh_expect(w, "{\"state\":\"quiet\"}", "BEAT {\"wid\":\"wid-beat\"}"));
    cr_assert(rbh_expect(adm, "+OK", "WORKERS {\"cmd\":\"terminate\"}"));
    cr_assert(rbh_expect(w, "{\"state\":\"terminate\"}", "BEAT {\"wid\":\"wid-beat\"}"));
    rbh_close(w);
    rbh_close(adm);
}

SERVER_TEST(too_long_line_is_an_error_and_closes)
{
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[server]\nmax_job_bytes = 2048\n", NULL), 0);
    rbh_conn *c = rbh_connect(&S, NULL);
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *r = rbh_cmd(c, "PUSH %s", big);
    cr_assert(r && strstr(r, "-ERR command line longer than 2048 bytes"), "got %s", r);
    free(r);
    cr_assert_null(rbh_reply(c));
    rbh_close(c);
    c = rbh_connect(&S, NULL); /* the server is fine */
    cr_assert_eq(rbh_info_int(c, "faktory.total_enqueued"), 0);
    rbh_close(c);
}

SERVER_TEST(password_authentication)
{
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[server]\npassword = \"s3cret\"\n", NULL), 0);
    rbh_conn *c = rbh_connect_raw(&S);
    json_t *hi = json_loads(c->greeting + 4, 0, NULL);
    cr_assert_not_null(hi, "greeting %s", c->greeting);
    long iters = (long)json_integer_value(json_object_get(hi, "i"));
    const char *salt = json_string_value(json_object_get(hi, "s"));
    cr_assert(iters >= 1 && salt, "greeting %s", c->greeting);
    char h[65];
    rbh_pwdhash("s3cret", salt, iters, h);
    cr_assert(rbh_expect(c, "+OK", "HELLO {\"v\":2,\"pwdhash\":\"%s\"}", h));
    rbh_close(c);
    json_decref(hi);

    c = rbh_connect_raw(&S);
    cr_assert(rbh_expect(c, "-ERR Invalid password", "HELLO {\"v\":2,\"pwdhash\":\"%s\"}", h));
    cr_assert_null(rbh_reply(c));
    rbh_close(c);
    c = rbh_connect_raw(&S);
    cr_assert(rbh_expect(c, "-ERR Invalid password", "HELLO {\"v\":2}"));
    rbh_close(c);
}

/* Connects, hashes "s3cret" with the greeting's salt over iters rounds
 * (0: the greeting's "i") and sends HELLO with version (NULL: no "v").
 * Returns the reply (caller frees); a refused HELLO must close. */
static char *hello_with(const char *version, long iters)
{
    rbh_conn *c = rbh_connect_raw(&S);
    cr_assert_not_null(c);
    json_t *hi = json_loads(c->greeting + 4, 0, NULL);
    cr_assert_not_null(hi, "greeting %s", c->greeting);
    long i = (long)json_integer_value(json_object_get(hi, "i"));
    const char *salt = json_string_value(json_object_get(hi, "s"));
    cr_assert(i > 1 && salt, "greeting %s", c->greeting);
    char h[65];
    rbh_pwdhash("s3cret", salt, iters ? iters : i, h);
    json_decref(hi);
    char *r = version ? rbh_cmd(c, "HELLO {\"v\":%s,\"hostname\":\"h\",\"pwdhash\":\"%s\"}", version, h)
                      : rbh_cmd(c, "HELLO {\"hostname\":\"h\",\"pwdhash\":\"%s\"}", h);
    cr_assert_not_null(r, "connection closed without a reply");
    if (!strcmp(r, "+OK")) { /* identified: the connection works */
        char *info = rbh_cmd(c, "INFO");
        cr_assert(info && info[0] == '{', "INFO after HELLO: %s", info ? info : "(closed)");
        free(info);
    } else {
        cr_assert_null(rbh_reply(c), "a refused HELLO closes the connection");
    }
    rbh_close(c);
    return r;
}

static void expect_hello(const char *version, long iters, const char *want)
{
    char *r = hello_with(version, iters);
    cr_assert_str_eq(r, want, "HELLO v %s, %ld rounds: %s", version ? version : "(none)", iters, r);
    free(r);
}

/* Faktory hashes once for a client below version 2 or without "v" (the
 * Python client sends none), and the greeting's "i" rounds from version 2
 * on (Faktory's server.go: `if cl.Version < 2 { iter = 1 }`; issue 25). */
SERVER_TEST(hello_without_version_or_below_2_hashes_once)
{
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[server]\npassword = \"s3cret\"\n", NULL), 0);
    expect_hello(NULL, 1, "+OK");
    expect_hello("1", 1, "+OK");
    expect_hello("2", 0, "+OK");
    expect_hello(NULL, 0, "-ERR Invalid password");
    expect_hello("1", 0, "-ERR Invalid password");
    expect_hello("2", 1, "-ERR Invalid password");
}

SERVER_TEST(sigterm_quiets_workers_then_exits_cleanly)
{
    rbh_conn *w = rbh_connect(&S, "wid-term");
    cr_assert(rbh_expect(w, "+OK", "PUSH {\"jid\":\"term-0001\",\"jobtype\":\"a\",\"args\":[]}"));
    kill(S.pid, SIGTERM);
    /* During the grace period a BEAT is told to quiet. */
    bool quiet = false;
    for (int i = 0; i < 200 && !quiet; i++) {
        char *r = rbh_cmd(w, "BEAT {\"wid\":\"wid-term\"}");
        cr_assert_not_null(r, "connection closed before the worker was told to quiet");
        quiet = !strcmp(r, "{\"state\":\"quiet\"}");
        cr_assert(quiet || !strcmp(r, "+OK"), "got %s", r);
        free(r);
    }
    cr_assert(quiet);
    rbh_close(w); /* the last connection gone, the server exits */
    int st;
    cr_assert_eq(waitpid(S.pid, &st, 0), S.pid);
    S.pid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    /* the pushed job is still there after a restart */
    cr_assert_eq(rbh_launch(&S, NULL), 0);
    rbh_conn *c = rbh_connect(&S, NULL);
    char *state = rbh_job_state(c, "term-0001");
    cr_assert_str_eq(state, "enqueued");
    free(state);
    rbh_close(c);
}

SERVER_TEST(too_many_connections_is_refused)
{
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[server]\nmax_connections = 2\n", NULL), 0);
    rbh_conn *a = rbh_connect(&S, NULL), *b = rbh_connect(&S, NULL);
    cr_assert(a && b);
    rbh_conn *c = rbh_connect_raw(&S);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->greeting, "-ERR too many connections: 2");
    cr_assert_null(rbh_reply(c));
    rbh_close(c);
    rbh_close(b);
    /* a slot is free again once the server has seen b go */
    bool ok = false;
    for (int i = 0; i < 200 && !ok; i++) {
        c = rbh_connect_raw(&S);
        ok = c && !strcmp(c->greeting, "+HI {\"v\":2}");
        rbh_close(c);
        if (!ok)
            rbh_sleep_ms(10);
    }
    cr_assert(ok, "no connection accepted after one closed");
    rbh_close(a);
}

SERVER_TEST(bad_command_line_options_exit_2)
{
    const char *const bad_level[] = {"--log-level", "loud", NULL};
    rbh_server t;
    rbh_init(&t);
    cr_assert_eq(rbh_launch(&t, bad_level), -1, "started with --log-level loud");
    snprintf(t.log, sizeof t.log, "%s", "");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s serve --listen nonsense --db %s/x.db 2>/dev/null", rbh_bin(), t.dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
    cr_assert_eq(rbh_stop(&t), 0);
}
