/* Wire compatibility with stock Faktory clients (issue 25): what a client
 * or its own test suite checks byte for byte. QUEUE's wildcard, INFO's
 * known queues, optional fields left out, timestamps' precision and
 * Faktory's refusal texts (HELLO without "v" is in test_server_protocol.c,
 * beside the password test). Run against SQLite here and, included by test_pg_server_wire.c,
 * against PostgreSQL. */
#include <criterion/criterion.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("wire");
}

TestSuite(wire, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define SERVER_TEST(name) RBH_SERVER_TEST(wire, name)

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

/* The wall clock in microseconds, as the server reads it. */
static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* t (an RFC 3339 UTC time with a fraction and Z) in microseconds; asserts
 * that it has digits fractional digits. */
static int64_t stamp_us(const char *what, const char *t, int digits)
{
    cr_assert_not_null(t, "%s: no time", what);
    const char *dot = strchr(t, '.'), *z = strchr(t, 'Z');
    cr_assert(dot && z && z > dot && z[1] == '\0', "%s: '%s' is not ...SS.fffZ", what, t);
    cr_assert_eq(z - dot - 1, digits, "%s: '%s' has %d fractional digits, want %d", what, t,
                 (int)(z - dot - 1), digits);
    struct tm tm = {0};
    cr_assert(strptime(t, "%Y-%m-%dT%H:%M:%S", &tm), "%s: '%s'", what, t);
    int64_t frac = strtoll(dot + 1, NULL, 10);
    for (int i = digits; i < 6; i++)
        frac *= 10;
    return (int64_t)timegm(&tm) * 1000000 + frac;
}

/* between(what, t, lo, hi): lo <= t <= hi, to the microsecond */
static void between(const char *what, int64_t t, int64_t lo, int64_t hi)
{
    cr_assert(lo <= t && t <= hi, "%s: %lld not within [%lld, %lld]", what, (long long)t,
              (long long)lo, (long long)hi);
}

/* Item 5: a job's timestamps and a batch's keep microseconds, as Faktory's
 * RFC 3339 with fractions (the Rust client compares a batch's created_at
 * with a clock read just before: equal within a millisecond, it failed).
 * enqueued_at is microseconds on a single node and milliseconds in
 * distributed mode, where the enqueue time is the rb_jobs.enq_ms column
 * its SQL sets (docs/protocol.md). */
SERVER_TEST(timestamps_keep_microseconds)
{
#ifdef RBH_PG
    const int enq_digits = 3;
#else
    const int enq_digits = 6;
#endif
    int64_t t0 = wall_us();
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"stamp-0001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"ts\",\"retry\":3}"));
    int64_t t1 = wall_us();
    json_t *j = rbh_json(rbh_cmd(C, "FETCH ts"));
    int64_t t2 = wall_us();
    int64_t created = stamp_us("created_at", json_string_value(json_object_get(j, "created_at")), 6);
    between("created_at", created, t0, t1);
    int64_t enq = stamp_us("enqueued_at", json_string_value(json_object_get(j, "enqueued_at")),
                           enq_digits);
    between("enqueued_at", enq, enq_digits == 6 ? t0 : t0 / 1000 * 1000, t2);
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"stamp-0001\",\"errtype\":\"E\"}"));
    int64_t t3 = wall_us();
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"stamp-0001\"}"));
    between("failure.failed_at", stamp_us("failed_at", json_string_value(rbh_get(v, "job.failure.failed_at")), 6),
            t2, t3);
    between("history at", stamp_us("history at", json_string_value(rbh_get(v, "history.0.at")), 6),
            t2, t3);
    stamp_us("next_at", json_string_value(rbh_get(v, "job.failure.next_at")), 6);
    json_decref(v);

    int64_t b0 = wall_us();
    char *bid = rbh_cmd(C, "BATCH NEW {\"success\":{\"jid\":\"stamp-cb01\",\"jobtype\":\"cb\",\"args\":[]}}");
    int64_t b1 = wall_us();
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW: %s", bid ? bid : "(closed)");
    json_t *st = rbh_json(rbh_cmd(C, "BATCH STATUS %s", bid));
    int64_t bc = stamp_us("BATCH STATUS created_at", json_string_value(json_object_get(st, "created_at")), 6);
    cr_assert(bc > b0 && bc < b1, "created_at %lld not strictly within (%lld, %lld)",
              (long long)bc, (long long)b0, (long long)b1);
    json_decref(st);
    free(bid);

    /* a waiting job's timestamps are the same after kill -9 (a single
     * node keeps enqueued_at's microseconds in the row's due_us) */
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"stamp-0002\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"tsw\"}"));
    json_t *a = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"stamp-0002\"}"));
    const char *ea = json_string_value(rbh_get(a, "job.enqueued_at"));
    const char *ca = json_string_value(rbh_get(a, "job.created_at"));
    stamp_us("waiting enqueued_at", ea, enq_digits);
    stamp_us("waiting created_at", ca, 6);
    crash_and_restart();
    json_t *b = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"stamp-0002\"}"));
    cr_assert_str_eq(json_string_value(rbh_get(b, "job.enqueued_at")), ea);
    cr_assert_str_eq(json_string_value(rbh_get(b, "job.created_at")), ca);
    json_decref(a);
    json_decref(b);
}
