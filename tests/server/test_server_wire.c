/* Wire compatibility with stock Faktory clients (issue 25): what a client
 * or its own test suite checks byte for byte. HELLO from clients that send
 * no "v" or v 1 with a password, QUEUE's wildcard, INFO's known queues,
 * optional fields left out, timestamps' precision and Faktory's refusal
 * texts. Run against SQLite here and, included by test_pg_server_wire.c,
 * against PostgreSQL. */
#include <criterion/criterion.h>

#include <openssl/evp.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("wire");
}

TestSuite(wire, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define SERVER_TEST(name) RBH_SERVER_TEST(wire, name)

/* S restarted with config (TOML text); C connected again as wire. */
static void restart_with(const char *config)
{
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, config, NULL), 0, "server did not start (see %s)", S.log);
}

/* hex(SHA-256 iterated iters times over pw+salt): what a client sends. */
static void pwdhash(const char *pw, const char *salt, long iters, char out[65])
{
    unsigned char h[32];
    unsigned int n;
    char *buf;
    cr_assert(asprintf(&buf, "%s%s", pw, salt) > 0);
    EVP_Digest(buf, strlen(buf), h, &n, EVP_sha256(), NULL);
    free(buf);
    for (long i = 1; i < iters; i++)
        EVP_Digest(h, 32, h, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", h[i]);
}

/* Connects, hashes "s3cret" with the greeting's salt over iters rounds
 * (0: the greeting's "i") and sends HELLO with version (NULL: no "v").
 * Returns the reply (caller frees). */
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
    pwdhash("s3cret", salt, iters ? iters : i, h);
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

/* Item 1: Faktory hashes once for a client below version 2 or without
 * "v" (the Python client sends none), and the greeting's "i" rounds from
 * version 2 on (Faktory's server.go: `if cl.Version < 2 { iter = 1 }`). */
SERVER_TEST(hello_without_version_or_below_2_hashes_once)
{
    restart_with("[server]\npassword = \"s3cret\"\n");
    expect_hello(NULL, 1, "+OK");
    expect_hello("1", 1, "+OK");
    expect_hello("2", 0, "+OK");
    expect_hello(NULL, 0, "-ERR Invalid password");
    expect_hello("1", 0, "-ERR Invalid password");
    expect_hello("2", 1, "-ERR Invalid password");
    C = rbh_connect_raw(&S); /* for the suite's teardown */
}

/* Pushes a job jid of jobtype a into queue. */
static void push_to(const char *jid, const char *queue)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"%s\"}",
                         jid, queue));
}

/* Item 2: `*` means every known queue for PAUSE, RESUME and REMOVE, as in
 * Faktory (commands.go's queue: EachQueue); LATENCY refuses it with
 * Faktory's text (the Ruby client's test asserts it), wherever it stands. */
SERVER_TEST(queue_wildcard_as_faktory)
{
    push_to("wild-0001", "qa");
    push_to("wild-0002", "qb");
    push_to("wild-0003", "qb");
    cr_assert(rbh_expect(C, "-ERR QUEUE LATENCY does not support wildcards", "QUEUE LATENCY *"));
    cr_assert(rbh_expect(C, "-ERR QUEUE LATENCY does not support wildcards", "QUEUE LATENCY qa *"));
    cr_assert(rbh_expect(C, "-ERR QUEUE LATENCY: name at least one queue", "QUEUE LATENCY"));
    json_t *lat = rbh_json(rbh_cmd(C, "QUEUE LATENCY qa qb"));
    cr_assert(json_is_number(json_object_get(lat, "qa")) && json_is_number(json_object_get(lat, "qb")));
    cr_assert_null(json_object_get(lat, "*"));
    json_decref(lat);

    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE *"));
    json_t *v = rbh_json(rbh_cmd(C, "INFO"));
    json_t *paused = rbh_get(v, "rebound.paused_queues");
    cr_assert_eq(json_array_size(paused), 2, "paused: %s", json_dumps(paused, 0));
    cr_assert_str_eq(json_string_value(json_array_get(paused, 0)), "qa");
    cr_assert_str_eq(json_string_value(json_array_get(paused, 1)), "qb");
    json_decref(v);
    cr_assert(rbh_expect(C, "$-1", "FETCH qa qb"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME *"));
    v = rbh_json(rbh_cmd(C, "INFO"));
    cr_assert_eq(json_array_size(rbh_get(v, "rebound.paused_queues")), 0);
    json_decref(v);
    char *jid = rbh_fetch_jid(C, "qa");
    cr_assert_str_eq(jid, "wild-0001");
    free(jid);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"wild-0001\"}"));

    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE *"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"wild-0002\"}"));
    cr_assert(rbh_expect(C, "$-1", "FETCH qa qb"));
}

/* Item 6: PUSHB's per-job errors in Faktory's words where Faktory refuses
 * the same job (manager.go's Push), as the Rust client's
 * test_jobs_pushed_in_bulk compares them; the good jobs are pushed. PUSH
 * answers the same texts. */
SERVER_TEST(refusals_in_faktorys_words)
{
    json_t *r = rbh_json(rbh_cmd(C, "PUSHB [{\"jid\":\"short\",\"jobtype\":\"broken\",\"args\":[],\"queue\":\"q3\"},"
                                    "{\"jid\":\"3sZCbdp8e9WX__0\",\"jobtype\":\"\",\"args\":[],\"queue\":\"q3\"},"
                                    "{\"jid\":\"3sZCbdp8e9WX__1\",\"jobtype\":\"broken\",\"args\":[],\"queue\":\"q3\",\"reserve_for\":864001},"
                                    "{\"jid\":\"3sZCbdp8e9WX__2\",\"jobtype\":\"broken\",\"queue\":\"q3\"},"
                                    "{\"jid\":\"3sZCbdp8e9WX__3\",\"jobtype\":\"ok\",\"args\":[],\"queue\":\"q4\"},"
                                    "{\"jid\":\"3sZCbdp8e9WX__4\",\"jobtype\":\"ok\",\"args\":[],\"queue\":\"q4\"}]"));
    cr_assert(json_is_object(r));
    cr_assert_eq(json_object_size(r), 4);
    cr_assert_str_eq(json_string_value(json_object_get(r, "short")),
                     "jobs must have a reasonable jid parameter");
    cr_assert_str_eq(json_string_value(json_object_get(r, "3sZCbdp8e9WX__0")),
                     "jobs must have a jobtype parameter");
    cr_assert_str_eq(json_string_value(json_object_get(r, "3sZCbdp8e9WX__1")),
                     "jobs cannot be reserved for more than one day");
    cr_assert_str_eq(json_string_value(json_object_get(r, "3sZCbdp8e9WX__2")),
                     "jobs must have an args parameter");
    json_decref(r);
    cr_assert_eq(rbh_info_int(C, "faktory.queues.q4"), 2);
    cr_assert(rbh_expect(C, "-ERR jobs cannot be reserved for more than one day",
                         "PUSH {\"jid\":\"3sZCbdp8e9WX__5\",\"jobtype\":\"a\",\"args\":[],\"reserve_for\":86401}"));
    cr_assert(rbh_expect(C, "-ERR no such QUEUE subcommand: FREEZE (PAUSE, RESUME, REMOVE or LATENCY)",
                         "QUEUE freeze q4"));
    cr_assert(rbh_expect(C, "-ERR unknown worker nobody (say HELLO with this wid first)",
                         "BEAT {\"wid\":\"nobody\"}"));
}

/* Item 4: optional fields are left out, never empty, as Faktory's
 * omitempty does (client/job.go's Failure: next_at, message, errtype,
 * backtrace): a FAIL without a backtrace, requeued by MUTATE and fetched
 * again, has no failure.backtrace (the Rust client's mutation_requeue_jobs
 * asserts it); one with lines keeps them; a job that never failed has no
 * failure at all. */
SERVER_TEST(optional_fields_are_omitted_not_empty)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"omit-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"om\",\"retry\":5}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"omit-00002\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"om\",\"retry\":5,\"backtrace\":2}"));
    for (int i = 1; i <= 2; i++) {
        char *jid = rbh_fetch_jid(C, "om");
        cr_assert_not_null(jid);
        if (!strcmp(jid, "omit-00001"))
            cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"omit-00001\",\"errtype\":\"E\",\"message\":\"m\"}"));
        else
            cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"omit-00002\",\"errtype\":\"E\",\"message\":\"m\","
                                           "\"backtrace\":[\"a.rb:1\",\"b.rb:2\",\"c.rb:3\"]}"));
        free(jid);
    }
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\",\"filter\":{\"jids\":[\"omit-00001\",\"omit-00002\"]}}"));
    for (int i = 1; i <= 2; i++) {
        json_t *j = rbh_json(rbh_cmd(C, "FETCH om"));
        cr_assert(json_is_object(j));
        const char *jid = json_string_value(json_object_get(j, "jid"));
        json_t *f = json_object_get(j, "failure");
        cr_assert(json_is_object(f), "%s: no failure after a requeue", jid);
        cr_assert_str_eq(json_string_value(json_object_get(f, "errtype")), "E");
        cr_assert_str_eq(json_string_value(json_object_get(f, "message")), "m");
        cr_assert(json_is_string(json_object_get(f, "failed_at")));
        cr_assert(json_is_integer(json_object_get(f, "retry_count")));
        cr_assert(json_is_integer(json_object_get(f, "remaining")));
        json_t *bt = json_object_get(f, "backtrace");
        if (!strcmp(jid, "omit-00001")) {
            char *text = json_dumps(f, JSON_COMPACT);
            cr_assert_null(bt, "a failure without backtrace has one: %s", text);
            free(text);
        } else {
            cr_assert_eq(json_array_size(bt), 2);
            cr_assert_str_eq(json_string_value(json_array_get(bt, 1)), "b.rb:2");
        }
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        json_decref(j);
    }
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"omit-00003\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"om\"}"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH om"));
    cr_assert_null(json_object_get(j, "failure"));
    cr_assert_null(json_object_get(j, "at"));
    cr_assert_null(json_object_get(j, "custom"));
    json_decref(j);
}

/* INFO's size of queue q: -1 when INFO does not list it. */
static long long queue_size(const char *q)
{
    char path[160];
    snprintf(path, sizeof path, "faktory.queues.%s", q);
    return rbh_info_int(C, path);
}

/* kill -9, restart on the same database, C connected again. */
static void crash_and_restart(void)
{
    rbh_close(C);
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "wire");
    cr_assert_not_null(C);
}

/* Item 3: INFO lists every queue it has seen, size 0 once empty, until
 * QUEUE REMOVE, as Faktory's known queues (a Redis set, kept across
 * restarts; the Rust client's server_state test reads an emptied queue);
 * the list survives kill -9 in both backends, and so does a removal. */
SERVER_TEST(info_keeps_known_queues_until_removed)
{
    push_to("known-0001", "seen");
    char *jid = rbh_fetch_jid(C, "seen");
    cr_assert_str_eq(jid, "known-0001");
    free(jid);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"known-0001\"}"));
    cr_assert_eq(queue_size("seen"), 0, "an emptied queue left INFO");
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE held"));   /* a pause makes a queue known */
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME held"));
    cr_assert_eq(queue_size("held"), 0);
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME ghost")); /* a resume does not */
    cr_assert_eq(queue_size("ghost"), -1);
    push_to("known-0002", "gone");
    cr_assert_eq(rbh_info_int(C, "faktory.total_queues"), 3);

    crash_and_restart();
    cr_assert_eq(queue_size("seen"), 0, "a known queue was forgotten by a restart");
    cr_assert_eq(queue_size("held"), 0);
    cr_assert_eq(queue_size("gone"), 1);
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE gone seen"));
    cr_assert_eq(queue_size("gone"), -1);
    cr_assert_eq(queue_size("seen"), -1);
    cr_assert_eq(queue_size("held"), 0);

    crash_and_restart();
    cr_assert_eq(queue_size("gone"), -1, "a removed queue came back after a restart");
    cr_assert_eq(queue_size("seen"), -1);
    cr_assert_eq(queue_size("held"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_queues"), 1);
    push_to("known-0003", "seen"); /* pushed again: known again */
    cr_assert_eq(queue_size("seen"), 1);
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE *"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_queues"), 0);
    push_to("known-0004", "again");
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    cr_assert_eq(queue_size("again"), -1, "FLUSH kept a queue");
}
