/* Faktory Enterprise's unique jobs and expiring jobs against the real
 * server (single node; docs/enterprise.md): NOTUNIQUE in PUSH and PUSHB,
 * the key (jobtype, canonical args, queue), unique_until success and start,
 * the lock's release at ACK, death, discard, expiry and when unique_for runs
 * out, a job's own retry never blocked, the lock across a restart and
 * kill -9, many pushers at once; expired jobs dropped at FETCH with the
 * next job returned, expires_in converted, the counts in INFO and /metrics;
 * bad input. The scenarios of faktory-rs tests/real/enterprise.rs and of
 * the brief's test list (docs/research/faktory-enterprise-features.md §6). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common_helpers.h"
#include "test_http_harness.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(unique, .init = start, .fini = rbh_suite_stop, .timeout = 120);

#define SERVER_TEST(name) RBH_SERVER_TEST(unique, name)

#define NOTUNIQUE "-NOTUNIQUE Job not unique"

/* PUSH of jid (jobtype "U", queue q, args) with custom's members (text
 * inside the braces, may be empty); returns the reply (caller frees). */
static char *push(rbh_conn *c, const char *jid, const char *q, const char *args,
                  const char *custom)
{
    return rbh_cmd(c, "PUSH {\"jid\":\"%s\",\"jobtype\":\"U\",\"queue\":\"%s\",\"args\":%s,"
                      "\"custom\":{%s}}",
                   jid, q, args, custom);
}

static void expect_push(rbh_conn *c, const char *want, const char *jid, const char *q,
                        const char *args, const char *custom)
{
    char *r = push(c, jid, q, args, custom);
    cr_assert(r && !strcmp(r, want), "PUSH %s: '%s', wanted '%s'", jid, r ? r : "(closed)",
              want);
    free(r);
}

static long queue_size(rbh_conn *c, const char *queue)
{
    char path[128];
    snprintf(path, sizeof path, "faktory.queues.%s", queue);
    long long n = rbh_info_int(c, path);
    return n < 0 ? 0 : (long)n;
}

/* FETCHes one job of queue (which must hold one) and returns its jid
 * (caller frees). */
static char *fetch(rbh_conn *c, const char *queue)
{
    cr_assert(queue_size(c, queue) > 0, "queue %s is empty", queue);
    json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", queue));
    const char *jid = json_string_value(json_object_get(j, "jid"));
    cr_assert(jid, "FETCH %s gave no job", queue);
    char *out = strdup(jid);
    json_decref(j);
    return out;
}

static void fetch_expect(rbh_conn *c, const char *queue, const char *jid)
{
    char *got = fetch(c, queue);
    cr_assert_str_eq(got, jid);
    free(got);
}

static void ack(rbh_conn *c, const char *jid)
{
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jid));
}

#define U60 "\"unique_for\":60"

SERVER_TEST(duplicate_push_is_notunique_and_never_stored)
{
    expect_push(C, "+OK", "uniq-0001", "uq", "[1,2]", U60);
    expect_push(C, NOTUNIQUE, "uniq-0002", "uq", "[1,2]", U60);
    /* other args, other queue: other jobs */
    expect_push(C, "+OK", "uniq-0003", "uq", "[1,3]", U60);
    expect_push(C, "+OK", "uniq-0004", "uq2", "[1,2]", U60);
    /* canonical args: key order and 1.0 vs 1 do not matter */
    expect_push(C, "+OK", "uniq-0005", "uq", "[{\"a\":1,\"b\":2}]", U60);
    expect_push(C, NOTUNIQUE, "uniq-0006", "uq", "[{\"b\":2.0,\"a\":1}]", U60);
    /* the holder's own jid again: NOTUNIQUE before "already exists" */
    expect_push(C, NOTUNIQUE, "uniq-0001", "uq", "[1,2]", U60);
    cr_assert_eq(queue_size(C, "uq"), 3);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"uniq-0002\"}"));
    cr_assert_eq(rbh_info_int(C, "rebound.unique.locks"), 4);
    cr_assert_eq(rbh_info_int(C, "rebound.unique.rejected"), 3);
}

SERVER_TEST(without_unique_for_no_lock_is_taken_or_checked)
{
    expect_push(C, "+OK", "plain-001", "pq", "[7]", "");
    expect_push(C, "+OK", "plain-002", "pq", "[7]", "");
    /* bypass (faktory-rs ent_unique_job_bypass_unique_lock) */
    expect_push(C, "+OK", "bypass-01", "pq", "[8]", U60);
    expect_push(C, "+OK", "bypass-02", "pq", "[8]", "");
    expect_push(C, NOTUNIQUE, "bypass-03", "pq", "[8]", U60);
    /* unique_for 0 is no lock (Go's SetUniqueFor(0)) */
    expect_push(C, "+OK", "zero-0001", "pq", "[9]", "\"unique_for\":0");
    expect_push(C, "+OK", "zero-0002", "pq", "[9]", "\"unique_for\":0");
    cr_assert_eq(queue_size(C, "pq"), 6);
}

SERVER_TEST(pushb_rejects_each_duplicate_in_its_map)
{
    char *r = rbh_cmd(C, "PUSHB [{\"jid\":\"pb-u-0001\",\"jobtype\":\"U\",\"queue\":\"bq\",\"args\":[1],"
                         "\"custom\":{" U60 "}},"
                         "{\"jid\":\"pb-u-0002\",\"jobtype\":\"U\",\"queue\":\"bq\",\"args\":[1],"
                         "\"custom\":{" U60 "}},"
                         "{\"jid\":\"pb-u-0003\",\"jobtype\":\"U\",\"queue\":\"bq\",\"args\":[2],"
                         "\"custom\":{" U60 "}}]");
    cr_assert_str_eq(r, "{\"pb-u-0002\":\"NOTUNIQUE Job not unique\"}");
    free(r);
    cr_assert_eq(queue_size(C, "bq"), 2);
    r = rbh_cmd(C, "PUSHB [{\"jid\":\"pb-u-0004\",\"jobtype\":\"U\",\"queue\":\"bq\",\"args\":[2],"
                   "\"custom\":{" U60 "}}]");
    cr_assert_str_eq(r, "{\"pb-u-0004\":\"NOTUNIQUE Job not unique\"}");
    free(r);
}

SERVER_TEST(until_success_holds_while_working_and_ack_releases)
{
    expect_push(C, "+OK", "succ-0001", "sq", "[1]", U60);
    fetch_expect(C, "sq", "succ-0001");
    expect_push(C, NOTUNIQUE, "succ-0002", "sq", "[1]", U60);
    ack(C, "succ-0001");
    expect_push(C, "+OK", "succ-0003", "sq", "[1]", U60);
    cr_assert_eq(rbh_info_int(C, "rebound.unique.locks"), 1);
}

SERVER_TEST(until_start_releases_at_fetch)
{
    expect_push(C, "+OK", "start-001", "tq", "[1]", U60 ",\"unique_until\":\"start\"");
    expect_push(C, NOTUNIQUE, "start-002", "tq", "[1]", U60 ",\"unique_until\":\"start\"");
    fetch_expect(C, "tq", "start-001");
    expect_push(C, "+OK", "start-003", "tq", "[1]", U60 ",\"unique_until\":\"start\"");
    ack(C, "start-001"); /* the first's ACK does not free the second's lock */
    expect_push(C, NOTUNIQUE, "start-004", "tq", "[1]", U60 ",\"unique_until\":\"start\"");
}

/* PUSHes jid until the reply is +OK (each refusal must be NOTUNIQUE), for
 * at most 15 s. *sent: the time (ms) just before the push that got +OK;
 * returns the time just after its reply. */
static int64_t push_when_unlocked(rbh_conn *c, const char *jid, const char *custom,
                                  int64_t *sent)
{
    for (int64_t end = rbh_now_ms() + 15000;; rbh_sleep_ms(20)) {
        *sent = rbh_now_ms();
        char *r = push(c, jid, "xq", "[1]", custom);
        cr_assert(r && (!strcmp(r, "+OK") || !strcmp(r, NOTUNIQUE)), "PUSH %s: '%s'", jid,
                  r ? r : "(closed)");
        bool ok = !strcmp(r, "+OK");
        free(r);
        if (ok)
            return rbh_now_ms();
        cr_assert(*sent < end, "PUSH %s still refused after 15 s", jid);
    }
}

/* A lock taken by a push made after `before` runs out at `before` +
 * unique_for at the earliest: a push accepted in its place got its reply
 * at or after that. */
SERVER_TEST(lock_runs_out_after_unique_for)
{
    int64_t t1 = rbh_now_ms(), t3, t5;
    expect_push(C, "+OK", "ttl-00001", "xq", "[1]", "\"unique_for\":2");
    expect_push(C, NOTUNIQUE, "ttl-00002", "xq", "[1]", "\"unique_for\":2");
    /* B takes the lock once A's ran out (not before) */
    int64_t got3 = push_when_unlocked(C, "ttl-00003", "\"unique_for\":3", &t3);
    cr_assert_geq(got3, t1 + 2000, "A's 2 s lock ran out after %lld ms",
                  (long long)(got3 - t1));
    /* A's ACK must not free B's lock: B's push is refused until B's own
     * 3 s ran out */
    fetch_expect(C, "xq", "ttl-00001");
    ack(C, "ttl-00001");
    int64_t got5 = push_when_unlocked(C, "ttl-00005", "\"unique_for\":3", &t5);
    cr_assert_geq(got5, t3 + 3000, "B's 3 s lock ran out after %lld ms (A's ACK freed it?)",
                  (long long)(got5 - t3));
}

SERVER_TEST(scheduled_lock_lasts_from_at)
{
    char at[64];
    time_t t = time(NULL) + 2;
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    char *r = rbh_cmd(C, "PUSH {\"jid\":\"sch-00001\",\"jobtype\":\"U\",\"queue\":\"hq\",\"args\":[1],"
                         "\"at\":\"%s\",\"custom\":{\"unique_for\":1}}", at);
    cr_assert_str_eq(r, "+OK");
    free(r);
    rbh_sleep_ms(1200); /* unique_for has passed since the push, not since at */
    expect_push(C, NOTUNIQUE, "sch-00002", "hq", "[1]", "\"unique_for\":1");
}

SERVER_TEST(death_and_discard_release_the_lock)
{
    /* death by a failure (no retries) */
    expect_push(C, "+OK", "die-00001", "dq", "[1]", U60);
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"die-00009\",\"jobtype\":\"Z\",\"args\":[],\"queue\":\"zz\"}"));
    char *r = rbh_cmd(C, "PUSH {\"jid\":\"die-00002\",\"jobtype\":\"U\",\"queue\":\"dq\",\"args\":[2],"
                         "\"retry\":0,\"custom\":{" U60 "}}");
    cr_assert_str_eq(r, "+OK");
    free(r);
    fetch_expect(C, "dq", "die-00001");
    fetch_expect(C, "dq", "die-00002");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"die-00002\",\"errtype\":\"E\",\"message\":\"m\"}"));
    char *st = rbh_job_state(C, "die-00002");
    cr_assert(!st || strcmp(st, "retries"), "a retry 0 job is in retries");
    free(st);
    expect_push(C, "+OK", "die-00003", "dq", "[2]", U60);
    /* MUTATE kill of a scheduled unique job */
    r = rbh_cmd(C, "PUSH {\"jid\":\"kill-0001\",\"jobtype\":\"U\",\"queue\":\"dq\",\"args\":[3],"
                   "\"at\":\"2099-01-01T00:00:00Z\",\"custom\":{" U60 "}}");
    cr_assert_str_eq(r, "+OK");
    free(r);
    expect_push(C, NOTUNIQUE, "kill-0002", "dq", "[3]", U60);
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"kill\",\"target\":\"scheduled\","
                                   "\"filter\":{\"jids\":[\"kill-0001\"]}}"));
    expect_push(C, "+OK", "kill-0003", "dq", "[3]", U60);
    /* MUTATE discard */
    r = rbh_cmd(C, "PUSH {\"jid\":\"disc-0001\",\"jobtype\":\"U\",\"queue\":\"dq\",\"args\":[4],"
                   "\"at\":\"2099-01-01T00:00:00Z\",\"custom\":{" U60 "}}");
    cr_assert_str_eq(r, "+OK");
    free(r);
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\","
                                   "\"filter\":{\"jids\":[\"disc-0001\"]}}"));
    expect_push(C, "+OK", "disc-0002", "dq", "[4]", U60);
    /* QUEUE REMOVE of an enqueued one */
    expect_push(C, "+OK", "rm-000001", "rq", "[5]", U60);
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE rq"));
    expect_push(C, "+OK", "rm-000002", "rq", "[5]", U60);
}

SERVER_TEST(own_retry_is_never_blocked_by_its_lock)
{
    char *r = rbh_cmd(C, "PUSH {\"jid\":\"retry-001\",\"jobtype\":\"U\",\"queue\":\"yq\",\"args\":[1],"
                         "\"retry\":5,\"custom\":{" U60 "}}");
    cr_assert_str_eq(r, "+OK");
    free(r);
    fetch_expect(C, "yq", "retry-001");
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"retry-001\",\"errtype\":\"E\",\"message\":\"m\"}"));
    char *st = rbh_job_state(C, "retry-001");
    cr_assert_str_eq(st, "retries");
    free(st);
    expect_push(C, NOTUNIQUE, "retry-002", "yq", "[1]", U60); /* a retry keeps the lock */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\","
                                   "\"filter\":{\"jids\":[\"retry-001\"]}}"));
    fetch_expect(C, "yq", "retry-001");
    expect_push(C, NOTUNIQUE, "retry-003", "yq", "[1]", U60);
    ack(C, "retry-001");
    expect_push(C, "+OK", "retry-004", "yq", "[1]", U60);
}

SERVER_TEST(flush_forgets_every_lock)
{
    expect_push(C, "+OK", "flush-001", "fq", "[1]", U60);
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    expect_push(C, "+OK", "flush-002", "fq", "[1]", U60);
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

static void lock_survives(int sig)
{
    expect_push(C, "+OK", "dur-00001", "kq", "[1]", U60);
    expect_push(C, "+OK", "dur-00002", "kq", "[2]", U60 ",\"unique_until\":\"start\"");
    expect_push(C, "+OK", "dur-00003", "kq", "[3]", U60);
    fetch_expect(C, "kq", "dur-00001");
    fetch_expect(C, "kq", "dur-00002");
    ack(C, "dur-00001"); /* [1]'s lock released, [2]'s at its FETCH */
    restart(sig);
    expect_push(C, "+OK", "dur-00011", "kq", "[1]", U60);
    expect_push(C, "+OK", "dur-00012", "kq", "[2]", U60);
    expect_push(C, NOTUNIQUE, "dur-00013", "kq", "[3]", U60);
    cr_assert_eq(rbh_info_int(C, "rebound.unique.locks"), 3);
    restart(sig);
    expect_push(C, NOTUNIQUE, "dur-00021", "kq", "[1]", U60);
    expect_push(C, NOTUNIQUE, "dur-00023", "kq", "[3]", U60);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"dur-00002\"}")); /* reserved before the restart */
    fetch_expect(C, "kq", "dur-00003");
    ack(C, "dur-00003");
    expect_push(C, "+OK", "dur-00033", "kq", "[3]", U60);
}

SERVER_TEST(graceful_restart_keeps_locks)
{
    lock_survives(SIGTERM);
}

SERVER_TEST(kill_9_keeps_locks)
{
    lock_survives(SIGKILL);
}

/* Many clients push the same unique job at once: exactly one is taken. */
#define PUSHERS 16
static atomic_int accepted, refused;

static void *pusher(void *arg)
{
    long i = (long)arg;
    rbh_conn *c = rbh_connect(&S, NULL);
    if (!c)
        return NULL;
    char jid[32];
    snprintf(jid, sizeof jid, "race-%04ld", i);
    for (int k = 0; k < 20; k++) {
        char kjid[48];
        snprintf(kjid, sizeof kjid, "%s-%02d", jid, k);
        char *r = push(c, kjid, "cq", "[\"same\"]", U60);
        if (r && !strcmp(r, "+OK"))
            atomic_fetch_add(&accepted, 1);
        else if (r && !strcmp(r, NOTUNIQUE))
            atomic_fetch_add(&refused, 1);
        free(r);
    }
    rbh_close(c);
    return NULL;
}

SERVER_TEST(concurrent_pushers_get_exactly_one_ok)
{
    pthread_t t[PUSHERS];
    for (long i = 0; i < PUSHERS; i++)
        pthread_create(&t[i], NULL, pusher, (void *)i);
    for (int i = 0; i < PUSHERS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&accepted), 1);
    cr_assert_eq(atomic_load(&refused), PUSHERS * 20 - 1);
    cr_assert_eq(queue_size(C, "cq"), 1);
}

SERVER_TEST(bad_unique_fields_are_refused_and_change_nothing)
{
#define UF "custom.unique_for must be a number of seconds from 0 to 31536000 (one year), not "
#define EI "custom.expires_in must be a number of seconds from 0 to 315360000 (ten years), not "
    expect_push(C, "-ERR job bad-u-001: " UF "\"600\"", "bad-u-001", "eq", "[]",
                "\"unique_for\":\"600\"");
    expect_push(C, "-ERR job bad-u-002: " UF "-1", "bad-u-002", "eq", "[]", "\"unique_for\":-1");
    expect_push(C, "-ERR job bad-u-003: " UF "true", "bad-u-003", "eq", "[]",
                "\"unique_for\":true");
    expect_push(C, "-ERR job bad-u-005: " UF "1000000000000.0", "bad-u-005", "eq", "[]",
                "\"unique_for\":1e12");
    expect_push(C, "-ERR job bad-u-004: custom.unique_until must be \"success\" or \"start\"",
                "bad-u-004", "eq", "[]", U60 ",\"unique_until\":\"end\"");
    expect_push(C, "-ERR job bad-e-001: custom.expires_at must be an RFC 3339 time", "bad-e-001",
                "eq", "[]", "\"expires_at\":\"tomorrow\"");
    expect_push(C, "-ERR job bad-e-002: custom.expires_at must be an RFC 3339 time", "bad-e-002",
                "eq", "[]", "\"expires_at\":12");
    expect_push(C, "-ERR job bad-e-003: " EI "\"60\"", "bad-e-003", "eq", "[]",
                "\"expires_in\":\"60\"");
    expect_push(C, "-ERR job bad-e-004: " EI "-5", "bad-e-004", "eq", "[]", "\"expires_in\":-5");
    cr_assert_eq(queue_size(C, "eq"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.unique.locks"), 0);
    /* in PUSHB: that element's error, the others pushed */
    char *r = rbh_cmd(C, "PUSHB [{\"jid\":\"bad-b-001\",\"jobtype\":\"U\",\"queue\":\"eq\",\"args\":[],"
                         "\"custom\":{\"unique_for\":\"x\"}},"
                         "{\"jid\":\"bad-b-002\",\"jobtype\":\"U\",\"queue\":\"eq\",\"args\":[],"
                         "\"custom\":{" U60 "}}]");
    cr_assert_str_eq(r, "{\"bad-b-001\":\"job bad-b-001: " UF "\\\"x\\\"\"}");
    free(r);
    cr_assert_eq(queue_size(C, "eq"), 1);
}

/* --- expiring jobs --- */

SERVER_TEST(expired_job_is_skipped_and_the_next_returned)
{
    expect_push(C, "+OK", "exp-00001", "eq", "[1]", "\"expires_at\":\"2001-01-01T00:00:00Z\"");
    expect_push(C, "+OK", "exp-00002", "eq", "[2]", "\"expires_at\":\"2000-12-31T23:00:00-02:00\"");
    expect_push(C, "+OK", "exp-00003", "eq", "[3]", "\"expires_at\":\"2099-01-01T00:00:00+02:00\"");
    expect_push(C, "+OK", "exp-00004", "eq", "[4]", "");
    fetch_expect(C, "eq", "exp-00003");
    fetch_expect(C, "eq", "exp-00004");
    /* waited for, not read once: in distributed mode the maintenance sweep
     * may be dropping them when the FETCH skips them, and its drop, count
     * and log line follow its commit */
    cr_assert(rbh_wait_state(C, "exp-00001", NULL, 4000), "exp-00001 is still there");
    cr_assert(rbh_wait_state(C, "exp-00002", NULL, 4000), "exp-00002 is still there");
    cr_assert_eq(rbh_wait_info_int(C, "rebound.expired", 2, 4000), 2);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Retries.size"), 0);
    bool logged = false;
    for (int64_t end = rbh_now_ms() + 4000; !logged && rbh_now_ms() < end; rbh_sleep_ms(10)) {
        FILE *f = fopen(S.log, "r");
        cr_assert_not_null(f);
        char line[1024];
        while (fgets(line, sizeof line, f))
            logged |= strstr(line, "JID exp-00001: Halt: job expired") != NULL;
        fclose(f);
    }
    cr_assert(logged, "no 'JID exp-00001: Halt: job expired' in %s", S.log);
}

SERVER_TEST(expires_in_becomes_expires_at_and_expires)
{
    int64_t before = (int64_t)time(NULL) * 1000; /* wall clock (rbh_now_ms is monotonic) */
    expect_push(C, "+OK", "expin-001", "iq", "[1]", "\"expires_in\":1");
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"expin-001\"}"));
    const char *at = json_string_value(rbh_get(v, "job.custom.expires_at"));
    if (!at)
        at = json_string_value(rbh_get(v, "custom.expires_at"));
    cr_assert(at, "no custom.expires_at in JOB");
    struct tm tm = {0};
    cr_assert(strptime(at, "%Y-%m-%dT%H:%M:%S", &tm));
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    cr_assert(ms >= before && ms <= before + 3000, "expires_at %s (%lld, pushed at %lld)",
              at, (long long)ms, (long long)before);
    json_decref(v);
    expect_push(C, "+OK", "expin-002", "iq", "[2]", "\"expires_in\":60");
    rbh_sleep_ms(1100);
    fetch_expect(C, "iq", "expin-002");
    cr_assert_eq(rbh_wait_info_int(C, "rebound.expired", 1, 4000), 1); /* (the sweep's, maybe) */
}

SERVER_TEST(scheduled_job_that_expires_before_its_time_is_dropped_by_the_timer)
{
    char at[64];
    time_t t = time(NULL) + 2; /* at least 1 s away: after the expiry */
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    char *r = rbh_cmd(C, "PUSH {\"jid\":\"expsch-01\",\"jobtype\":\"U\",\"queue\":\"wq\",\"args\":[],"
                         "\"at\":\"%s\",\"custom\":{\"expires_in\":0.5}}", at);
    cr_assert_str_eq(r, "+OK");
    free(r);
    cr_assert(rbh_wait_state(C, "expsch-01", NULL, 4000), "the expired scheduled job stays");
    cr_assert_eq(queue_size(C, "wq"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.expired"), 1);
}

SERVER_TEST(expired_unique_job_releases_its_lock)
{
    expect_push(C, "+OK", "expu-0001", "uq", "[1]", U60 ",\"expires_in\":0.3");
    expect_push(C, NOTUNIQUE, "expu-0002", "uq", "[1]", U60);
    rbh_sleep_ms(400);
    expect_push(C, "+OK", "expu-0003", "uq", "[2]", "");
    fetch_expect(C, "uq", "expu-0003"); /* expu-0001 dropped on the way */
    expect_push(C, "+OK", "expu-0004", "uq", "[1]", U60);
}

SERVER_TEST(expiry_survives_a_restart_and_counts_in_metrics)
{
    expect_push(C, "+OK", "expr-0001", "mq", "[1]", "\"expires_in\":1");
    expect_push(C, "+OK", "expr-0002", "mq", "[2]", "");
    restart(SIGKILL);
    rbh_sleep_ms(1100);
    fetch_expect(C, "mq", "expr-0002");
    cr_assert_eq(rbh_wait_info_int(C, "rebound.expired", 1, 4000), 1); /* (the sweep's, maybe) */
    restart(SIGTERM);
    cr_assert_eq(rbh_info_int(C, "rebound.expired"), 1); /* the all-time count is stored */
}

/* /metrics counts expired jobs by queue and job type (its own server, with
 * HTTP). */
Test(unique_http, expired_jobs_in_metrics, .timeout = 60)
{
    rbh_server hs;
    int port;
    cr_assert_eq(rbh_start_http(&hs, NULL, &port), 0, "server did not start");
    rbh_conn *c = rbh_connect(&hs, "w1");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"expm-0001\",\"jobtype\":\"Old\",\"queue\":\"mq\","
                                   "\"args\":[],\"custom\":{\"expires_at\":\"2001-01-01T00:00:00Z\"}}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"expm-0002\",\"jobtype\":\"New\",\"queue\":\"mq\","
                                   "\"args\":[]}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"expm-0003\",\"jobtype\":\"U\",\"queue\":\"mq2\","
                                   "\"args\":[],\"custom\":{\"unique_for\":60}}"));
    cr_assert(rbh_expect(c, NOTUNIQUE, "PUSH {\"jid\":\"expm-0004\",\"jobtype\":\"U\",\"queue\":\"mq2\","
                                       "\"args\":[],\"custom\":{\"unique_for\":60}}"));
    json_t *j = rbh_json(rbh_cmd(c, "FETCH mq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "expm-0002");
    json_decref(j);
    rbh_resp *r = rbh_http(port, "GET", "/metrics", NULL, NULL);
    cr_assert(r && r->status == 200);
    cr_assert(strstr(r->body, "# TYPE rebound_jobs_expired_total counter"), "%s", r->body);
    cr_assert(strstr(r->body, "rebound_jobs_expired_total{queue=\"mq\",jobtype=\"Old\"} 1\n"),
              "no expired count in /metrics");
    cr_assert(strstr(r->body, "\nrebound_unique_locks 1\n"), "no unique locks in /metrics");
    cr_assert(strstr(r->body, "\nrebound_unique_rejected_total 1\n"), "no rejections in /metrics");
    rbh_resp_free(r);
    rbh_close(c);
    cr_assert_eq(rbh_stop(&hs), 0);
}

/* An expired batch member is a member that died: complete fires, success
 * never, the death callback does. */
RBH_SERVER_TEST(unique, expired_batch_member_counts_as_a_death)
{
    char *bid = rbh_cmd(C, "BATCH NEW {\"success\":{\"jid\":\"cb-succ-01\",\"jobtype\":\"S\",\"args\":[],"
                           "\"queue\":\"cbq\"},\"complete\":{\"jid\":\"cb-comp-01\",\"jobtype\":\"C\","
                           "\"args\":[],\"queue\":\"cbq\"},\"death\":{\"jid\":\"cb-dead-01\","
                           "\"jobtype\":\"D\",\"args\":[],\"queue\":\"cbq\"}}");
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW gave '%s'", bid ? bid : "(closed)");
    char *r = rbh_cmd(C, "PUSH {\"jid\":\"bexp-0001\",\"jobtype\":\"M\",\"queue\":\"bmq\",\"args\":[],"
                         "\"custom\":{\"bid\":\"%s\",\"expires_at\":\"2001-01-01T00:00:00Z\"}}", bid);
    cr_assert_str_eq(r, "+OK");
    free(r);
    r = rbh_cmd(C, "PUSH {\"jid\":\"bexp-0002\",\"jobtype\":\"M\",\"queue\":\"bmq\",\"args\":[],"
                   "\"custom\":{\"bid\":\"%s\"}}", bid);
    cr_assert_str_eq(r, "+OK");
    free(r);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    fetch_expect(C, "bmq", "bexp-0002"); /* bexp-0001 dropped on the way */
    ack(C, "bexp-0002");
    /* the callbacks waited for (distributed mode's maintenance sweep may
     * hold the expired member when the FETCH skips it) */
    cr_assert(rbh_wait_state(C, "cb-comp-01", "enqueued", 4000), "no complete callback");
    cr_assert(rbh_wait_state(C, "cb-dead-01", "enqueued", 4000), "no death callback");
    json_t *st = rbh_json(rbh_cmd(C, "BATCH STATUS %s", bid));
    cr_assert_str_eq(json_string_value(json_object_get(st, "complete_st")), "1");
    cr_assert_str_eq(json_string_value(json_object_get(st, "success_st")), "");
    json_decref(st);
    char *s1 = rbh_job_state(C, "cb-comp-01"), *s2 = rbh_job_state(C, "cb-dead-01"),
         *s3 = rbh_job_state(C, "cb-succ-01");
    cr_assert(s1 && s2 && !s3, "complete %s, death %s, success %s", s1, s2, s3);
    free(s1);
    free(s2);
    free(bid);
}

/* An expired parent is a parent deleted without succeeding: each child
 * follows its on_dep_failure. */
RBH_SERVER_TEST(unique, expired_parent_is_a_discarded_parent)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dexp-par1\",\"jobtype\":\"P\",\"queue\":\"dpq\",\"args\":[],"
                                   "\"custom\":{\"expires_in\":0.3}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dexp-chc1\",\"jobtype\":\"K\",\"queue\":\"dcq\",\"args\":[],"
                                   "\"custom\":{\"depends_on\":[\"dexp-par1\"],\"on_dep_failure\":\"cancel\"}}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dexp-chi1\",\"jobtype\":\"K\",\"queue\":\"dcq\",\"args\":[],"
                                   "\"custom\":{\"depends_on\":[\"dexp-par1\"],\"on_dep_failure\":\"ignore\"}}"));
    char *st = rbh_job_state(C, "dexp-chc1");
    cr_assert_str_eq(st, "waiting");
    free(st);
    rbh_sleep_ms(400);
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dexp-live\",\"jobtype\":\"P\",\"queue\":\"dpq\",\"args\":[]}"));
    fetch_expect(C, "dpq", "dexp-live");
    /* waited for, not read once: in distributed mode the maintenance
     * sweep may be dropping the parent when the FETCH skips it (its claim
     * leaves a row another transaction holds to that one), and the
     * children follow when the sweep commits */
    cr_assert(rbh_wait_state(C, "dexp-chc1", "dead", 4000), "the cancel child is not dead");
    cr_assert(rbh_wait_state(C, "dexp-chi1", "enqueued", 4000), "the ignore child is not enqueued");
}

/* A PUSHB naming parents is refused whole when one of its unique jobs is
 * not unique: a child must not take a refused parent for a succeeded one. */
RBH_SERVER_TEST(unique, pushb_with_parents_and_a_duplicate_is_refused_whole)
{
    expect_push(C, "+OK", "wfu-00001", "wq", "[1]", U60);
    char *r = rbh_cmd(C, "PUSHB [{\"jid\":\"wfu-00002\",\"jobtype\":\"U\",\"queue\":\"wq\",\"args\":[1],"
                         "\"custom\":{" U60 "}},"
                         "{\"jid\":\"wfu-00003\",\"jobtype\":\"K\",\"queue\":\"wq\",\"args\":[],"
                         "\"custom\":{\"depends_on\":[\"wfu-00002\"]}}]");
    cr_assert_str_eq(r, "-ERR job wfu-00002: NOTUNIQUE Job not unique (a PUSHB naming parents is "
                        "refused whole)");
    free(r);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"wfu-00003\"}"));
    /* two identical unique jobs in one such PUSHB */
    r = rbh_cmd(C, "PUSHB [{\"jid\":\"wfu-00004\",\"jobtype\":\"U\",\"queue\":\"wq\",\"args\":[2],"
                   "\"custom\":{" U60 "}},"
                   "{\"jid\":\"wfu-00005\",\"jobtype\":\"U\",\"queue\":\"wq\",\"args\":[2],"
                   "\"custom\":{" U60 "}},"
                   "{\"jid\":\"wfu-00006\",\"jobtype\":\"K\",\"queue\":\"wq\",\"args\":[],"
                   "\"custom\":{\"depends_on\":[\"wfu-00005\"]}}]");
    cr_assert(r && strstr(r, "job wfu-00005: NOTUNIQUE"), "%s", r);
    free(r);
    cr_assert_eq(queue_size(C, "wq"), 1);
    /* without the duplicate: pushed, the child waits */
    r = rbh_cmd(C, "PUSHB [{\"jid\":\"wfu-00007\",\"jobtype\":\"U\",\"queue\":\"wq\",\"args\":[3],"
                   "\"custom\":{" U60 "}},"
                   "{\"jid\":\"wfu-00008\",\"jobtype\":\"K\",\"queue\":\"wq\",\"args\":[],"
                   "\"custom\":{\"depends_on\":[\"wfu-00007\"]}}]");
    cr_assert_str_eq(r, "{}");
    free(r);
    char *st = rbh_job_state(C, "wfu-00008");
    cr_assert_str_eq(st, "waiting");
    free(st);
}
