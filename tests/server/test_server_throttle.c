/* Queue throttles against the real server (docs/enterprise.md,
 * "Throttles"; test_pg_server_throttle.c runs them in distributed mode):
 * [throttles.t] concurrency = 2 keeps at most two jobs of t working
 * whatever the number of workers fetching at once (in distributed mode
 * also with the workers spread over two nodes on one database), a FETCH
 * naming a full throttled queue moves on to its next queue, ACK, FAIL,
 * SNOOZE and lease expiry free a slot and wake a waiting FETCH (before its
 * 2 s wait ends), a timeout frees a slot while the job still runs, and a
 * restart or a kill -9 keeps the limit (the slots are the working jobs
 * themselves) while the leases that end after it give their slots back.
 * The brief's §6 scenarios 18 and 19
 * (docs/research/faktory-enterprise-features.md). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/timeutil.h"
#include "common_helpers.h"

#define CONFIG                                                                                     \
    "[throttles]\nt = { concurrency = 2 }\ntc = { concurrency = 1 }\n[throttles.tt]\n"             \
    "concurrency = 1\ntimeout = 1\n[throttles.tr]\nrate = 1\nperiod = \"1m\"\n"

static void start(void)
{
    (void)rbh_suite_start; /* this suite's server has a config */
    cr_assert_eq(rbh_start(&S, CONFIG, NULL), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
}

TestSuite(throttle, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define SERVER_TEST(name) RBH_SERVER_TEST(throttle, name)

static void push(const char *jid, const char *queue, const char *extra)
{
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"%s\",\"jobtype\":\"T\",\"queue\":\"%s\","
                         "\"args\":[]%s}",
                         jid, queue, extra));
}

/* Jobs of queue working now (JOBS's total). */
static long long working(const char *queue)
{
    json_t *v =
        rbh_json(rbh_cmd(C, "JOBS {\"state\":\"working\",\"queue\":\"%s\",\"limit\":0}", queue));
    long long n = json_integer_value(json_object_get(v, "total"));
    json_decref(v);
    return n;
}

/* FETCH queues on c: the jid fetched (caller frees), or NULL for none. */
static char *fetch(rbh_conn *c, const char *queues)
{
    return rbh_fetch_jid(c, queues);
}

/* Sends FETCH without reading the reply; returns once S has parked it. */
static void park(rbh_conn *c, const char *queues)
{
    char line[128];
    snprintf(line, sizeof line, "FETCH %s\r\n", queues);
    cr_assert(rbh_send_parked(&S, c, line), "the FETCH of %s is not waiting", queues);
}

/* The parked FETCH's reply on c: the job's jid (caller frees) or NULL,
 * and how long it took from now in *ms. */
static char *parked_reply(rbh_conn *c, int64_t *ms)
{
    int64_t t0 = rbh_now_ms();
    json_t *j = rbh_json(rbh_reply(c));
    *ms = rbh_now_ms() - t0;
    const char *jid = json_string_value(json_object_get(j, "jid"));
    char *out = jid ? strdup(jid) : NULL;
    json_decref(j);
    return out;
}

#define WORKERS 8
static atomic_int got;
static rbh_conn *workers[WORKERS];

static void *worker(void *arg)
{
    rbh_conn *c = arg;
    json_t *j = rbh_json(rbh_cmd(c, "FETCH t"));
    if (json_object_get(j, "jid"))
        atomic_fetch_add(&got, 1);
    json_decref(j);
    return NULL;
}

SERVER_TEST(never_more_than_concurrency_working)
{
    char jid[32];
    for (int i = 0; i < 10; i++) {
        snprintf(jid, sizeof jid, "thr-%05d", i);
        push(jid, "t", "");
    }
    push("oth-00001", "other", "");
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        char wid[16];
        snprintf(wid, sizeof wid, "w%d", i + 1);
        workers[i] = rbh_connect(&S, wid);
        cr_assert_not_null(workers[i]);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, workers[i]);
    /* two got a job, the six others wait */
    for (int64_t end = rbh_now_ms() + 10000;
         rbh_info_int(C, "rebound.fetches_waiting") < WORKERS - 2 && rbh_now_ms() < end;)
        rbh_sleep_ms(5);
    cr_assert_eq(working("t"), 2, "while the workers wait");
    cr_assert_eq(rbh_info_int(C, "rebound.throttles.t.in_use"), 2);
    cr_assert_eq(rbh_info_int(C, "rebound.throttles.t.concurrency"), 2);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    /* the six others waited their 2 s and got nothing */
    cr_assert_eq(atomic_load(&got), 2);
    cr_assert_eq(working("t"), 2);
    cr_assert_eq(rbh_info_int(C, "faktory.queues.t"), 8);
    /* the next FETCH moves on to its next queue */
    char *j = fetch(C, "t other");
    cr_assert_str_eq(j, "oth-00001");
    free(j);
    cr_assert_eq(working("t"), 2);
    for (int i = 0; i < WORKERS; i++)
        rbh_close(workers[i]);
}

/* JOB's "held" of job jid: {by, reason, detail, until} as strings ("" for
 * a null until); asserts it is an object. Caller frees the copies. */
static void held_of(const char *jid, char *by, char *reason, char *detail, char *until)
{
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", jid));
    json_t *h = json_object_get(v, "held");
    cr_assert(json_is_object(h), "JOB %s: held is not an object", jid);
    snprintf(by, 32, "%s", json_string_value(json_object_get(h, "by")));
    snprintf(reason, 32, "%s", json_string_value(json_object_get(h, "reason")));
    snprintf(detail, 200, "%s", json_string_value(json_object_get(h, "detail")));
    const char *u = json_string_value(json_object_get(h, "until"));
    snprintf(until, 40, "%s", u ? u : "");
    json_decref(v);
}

/* JOB says why an enqueued job of a throttled queue waits (issue 30, "a
 * job page says when and why a job is held back"): its queue's
 * concurrency (until the first slot's timeout, when it has one), its rate
 * (until the next start it allows) or its pause; nothing once a start is
 * allowed again. */
SERVER_TEST(job_says_a_throttle_holds_it)
{
    char by[32], reason[32], detail[200], until[40];
    push("hc-000001", "tc", "");
    push("hc-000002", "tc", "");
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"hc-000002\"}"));
    cr_assert(json_is_null(json_object_get(v, "held")), "held before the queue is full");
    json_decref(v);
    char *j = fetch(C, "tc");
    cr_assert_str_eq(j, "hc-000001");
    free(j);
    held_of("hc-000002", by, reason, detail, until);
    cr_assert_str_eq(by, "queue");
    cr_assert_str_eq(reason, "concurrency");
    cr_assert_str_eq(detail, "queue tc runs 1 of 1 ([throttles.tc] concurrency)");
    cr_assert_str_eq(until, "", "a slot without a timeout has no end");
    /* a slot with a timeout: held until it passes */
    push("ht-000001", "tt", "");
    push("ht-000002", "tt", "");
    j = fetch(C, "tt");
    cr_assert_str_eq(j, "ht-000001");
    free(j);
    int64_t lease = rbh_lease_end_ms(C, "ht-000001"), at = 0;
    held_of("ht-000002", by, reason, detail, until);
    cr_assert_str_eq(reason, "concurrency");
    cr_assert_eq(rb_time_parse_rfc3339(until, &at), 0, "until '%s'", until);
    /* the fetch's time (the lease's end less reserve_for 1800 s) + 1 s */
    cr_assert_eq(at, lease - 1800 * 1000 + 1000, "until %s", until);
    /* a rate of 1 a minute: the second job waits for the next start */
    push("hr-000001", "tr", "");
    push("hr-000002", "tr", "");
    int64_t t0 = rb_now_ms(); /* the wall clock, as the server's */
    j = fetch(C, "tr");
    cr_assert_str_eq(j, "hr-000001");
    free(j);
    held_of("hr-000002", by, reason, detail, until);
    cr_assert_str_eq(by, "queue");
    cr_assert_str_eq(reason, "rate");
    cr_assert(!strncmp(detail, "queue tr is over its rate ([throttles.tr]): next start at ", 58),
              "detail '%s'", detail);
    cr_assert_eq(rb_time_parse_rfc3339(until, &at), 0, "until '%s'", until);
    cr_assert(at >= t0 + 59000 && at <= rb_now_ms() + 60000, "until %s", until);
    cr_assert(strstr(detail, until), "detail '%s' names no '%s'", detail, until);
    /* a paused queue */
    push("hp-000001", "tp", "");
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE tp"));
    held_of("hp-000001", by, reason, detail, until);
    cr_assert_str_eq(by, "queue");
    cr_assert_str_eq(reason, "paused");
    cr_assert_str_eq(detail, "queue tp is paused (QUEUE RESUME tp)");
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME tp"));
    v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"hp-000001\"}"));
    cr_assert(json_is_null(json_object_get(v, "held")), "held after QUEUE RESUME");
    json_decref(v);
}

SERVER_TEST(ack_fail_snooze_free_a_slot_and_wake_a_waiting_fetch)
{
    char jid[32];
    for (int i = 0; i < 6; i++) {
        snprintf(jid, sizeof jid, "thw-%05d", i);
        push(jid, "t", ",\"retry\":5");
    }
    rbh_conn *a = rbh_connect(&S, "wa"), *b = rbh_connect(&S, "wb"), *p = rbh_connect(&S, "wp");
    char *ja = fetch(a, "t"), *jb = fetch(b, "t");
    cr_assert(ja && jb);
    const char *frees[] = {"ACK {\"jid\":\"%s\"}",
                           "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"x\"}",
                           "SNOOZE {\"jid\":\"%s\",\"seconds\":60}"};
    /* a and b hold the two slots; p waits, is woken by each freed slot and
     * then holds one itself, which the SNOOZE round frees */
    rbh_conn *anon = rbh_connect(&S, NULL); /* no wid: not checked as the holder */
    char *held[3] = {ja, jb, NULL};
    for (int k = 0; k < 3; k++) {
        park(p, "t");
        cr_assert_eq(working("t"), 2);
        char line[160];
        snprintf(line, sizeof line, frees[k], held[k]);
        cr_assert(rbh_expect(anon, "+OK", "%s", line), "%s", line);
        int64_t ms;
        char *next = parked_reply(p, &ms);
        cr_assert_not_null(next, "%s: the waiting FETCH got nothing", line);
        cr_assert(ms < 1500, "%s: woken after %lld ms", line, (long long)ms);
        cr_assert_eq(working("t"), 2);
        free(held[k]);
        held[k] = NULL;
        if (k < 2) {
            free(held[2]);
            held[2] = next; /* p holds it; SNOOZE frees it in the last round */
        } else {
            free(next);
        }
    }
    free(held[2]);
    rbh_close(anon);
    rbh_close(a);
    rbh_close(b);
    rbh_close(p);
}

SERVER_TEST(lease_expiry_frees_a_slot)
{
    push("thl-00001", "t", ",\"reserve_for\":1");
    push("thl-00002", "t", ",\"reserve_for\":1");
    push("thl-00003", "t", "");
    char *x = fetch(C, "t"), *y = fetch(C, "t");
    cr_assert(x && y);
    rbh_conn *p = rbh_connect(&S, "wp");
    park(p, "t");
    int64_t ms;
    char *next = parked_reply(p, &ms);
    cr_assert_not_null(next, "no job after the leases expired");
    cr_assert(working("t") <= 2);
    free(x);
    free(y);
    free(next);
    rbh_close(p);
}

SERVER_TEST(timeout_frees_a_slot_while_the_job_runs)
{
    push("tht-00001", "tt", "");
    push("tht-00002", "tt", "");
    char *x = fetch(C, "tt");
    cr_assert_str_eq(x, "tht-00001");
    rbh_conn *p = rbh_connect(&S, "wp");
    park(p, "tt");
    int64_t ms;
    char *next = parked_reply(p, &ms);
    cr_assert_str_eq(next, "tht-00002");
    cr_assert(ms < 1500, "woken after %lld ms (timeout 1 s)", (long long)ms);
    /* the first still works: two working, as Faktory's timeout allows */
    cr_assert_eq(working("tt"), 2);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"tht-00001\"}"));
    free(x);
    free(next);
    rbh_close(p);
}

SERVER_TEST(a_restart_keeps_the_limit)
{
    for (int i = 0; i < 4; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "thr-%05d", i);
        push(jid, "t", "");
    }
    char *x = fetch(C, "t"), *y = fetch(C, "t");
    cr_assert(x && y);
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
    cr_assert_eq(working("t"), 2);
    /* both slots still held: nothing from t (after the 2 s wait) */
    cr_assert(rbh_expect(C, "$-1", "FETCH t"));
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", x));
    char *z = fetch(C, "t");
    cr_assert_not_null(z);
    cr_assert_eq(working("t"), 2);
    free(x);
    free(y);
    free(z);
}

/* Many workers fetch and ACK in loops while a sampler reads the working
 * count: never more than the concurrency, and every job is done. */
#define LOOPERS 8
#define LOOP_JOBS 40
static atomic_int done_jobs, max_seen;
static atomic_bool stop_sampling;

static void *looper(void *arg)
{
    rbh_conn *c = arg;
    int idle = 0;
    while (atomic_load(&done_jobs) < LOOP_JOBS && idle < 3) {
        char *jid = fetch(c, "t");
        if (!jid) {
            idle++;
            continue;
        }
        idle = 0;
        rbh_sleep_ms(10);
        char *r = rbh_cmd(c, "ACK {\"jid\":\"%s\"}", jid);
        if (r && !strcmp(r, "+OK"))
            atomic_fetch_add(&done_jobs, 1);
        free(r);
        free(jid);
    }
    return NULL;
}

static void *sampler(void *arg)
{
    rbh_conn *c = arg;
    while (!atomic_load(&stop_sampling)) {
        json_t *v = rbh_json(rbh_cmd(c, "JOBS {\"state\":\"working\",\"queue\":\"t\",\"limit\":0}"));
        int n = (int)json_integer_value(json_object_get(v, "total"));
        json_decref(v);
        if (n > atomic_load(&max_seen))
            atomic_store(&max_seen, n);
        rbh_sleep_ms(2);
    }
    return NULL;
}

SERVER_TEST(many_workers_in_loops_never_exceed_the_limit)
{
    for (int i = 0; i < LOOP_JOBS; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "thm-%05d", i);
        push(jid, "t", "");
    }
    rbh_conn *cs[LOOPERS];
    pthread_t th[LOOPERS], sth;
    rbh_conn *sc = rbh_connect(&S, NULL);
    pthread_create(&sth, NULL, sampler, sc);
    for (int i = 0; i < LOOPERS; i++) {
        char wid[16];
        snprintf(wid, sizeof wid, "wl%d", i);
        cs[i] = rbh_connect(&S, wid);
        cr_assert_not_null(cs[i]);
        pthread_create(&th[i], NULL, looper, cs[i]);
    }
    for (int i = 0; i < LOOPERS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop_sampling, true);
    pthread_join(sth, NULL);
    cr_assert_eq(atomic_load(&done_jobs), LOOP_JOBS);
    cr_assert_leq(atomic_load(&max_seen), 2, "%d working at once", atomic_load(&max_seen));
    cr_assert_eq(atomic_load(&max_seen), 2, "the limit was never reached (a weak test)");
    cr_assert_eq(rbh_info_int(C, "faktory.total_processed"), LOOP_JOBS);
    for (int i = 0; i < LOOPERS; i++)
        rbh_close(cs[i]);
    rbh_close(sc);
}

/* A kill -9 while the slots are held: after the restart the same slots
 * are held (the working rows), and a slot whose lease ends afterwards
 * comes back (tc's job, reserved for 3 s). */
SERVER_TEST(a_crash_keeps_the_limit_and_an_ended_lease_frees_its_slot)
{
    push("thk-00001", "t", "");
    push("thk-00002", "t", "");
    push("thk-00003", "t", "");
    push("thk-00004", "tc", ",\"reserve_for\":3");
    push("thk-00005", "tc", "");
    char *x = fetch(C, "t"), *y = fetch(C, "t"), *z = fetch(C, "tc");
    cr_assert(x && y && z);
    cr_assert_str_eq(z, "thk-00004");
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
    /* t's two slots are held (leases of 30 minutes): a FETCH moves on */
    cr_assert_eq(working("t"), 2);
    cr_assert_eq(rbh_info_int(C, "rebound.throttles.t.in_use"), 2);
    push("thk-00006", "other", "");
    char *o = fetch(C, "t other");
    cr_assert_str_eq(o, "thk-00006");
    cr_assert_eq(working("t"), 2);
    /* tc's slot comes back when thk-00004's lease ends: the next job */
    rbh_conn *p = rbh_connect(&S, "wp");
    char *next = NULL;
    for (int tries = 0; tries < 10 && !next; tries++)
        next = fetch(p, "tc"); /* parked until the slot frees, or at once when it has */
    cr_assert_str_eq(next, "thk-00005", "no job of tc after the lease ended");
    /* and it holds the one slot again */
    cr_assert(rbh_expect(C, "$-1", "FETCH tc"));
    cr_assert_eq(working("t"), 2);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", x));
    char *w = fetch(C, "t");
    cr_assert_str_eq(w, "thk-00003");
    free(x);
    free(y);
    free(z);
    free(o);
    free(next);
    free(w);
    rbh_close(p);
}

/* Workers hammer t at once, each counting itself in flight from the
 * moment it holds a job until just before its ACK: the count never goes
 * past the limit (every job in flight holds a slot), and reaches it. In
 * distributed mode half the workers are on a second node on the same
 * database. */
#define HAMMERS 12
#define HAMMER_JOBS 60
static atomic_int in_flight, max_in_flight, hammered;

static void *hammer(void *arg)
{
    rbh_conn *c = arg;
    int idle = 0;
    while (atomic_load(&hammered) < HAMMER_JOBS && idle < 3) {
        char *jid = fetch(c, "t");
        if (!jid) {
            idle++;
            continue;
        }
        idle = 0;
        int n = atomic_fetch_add(&in_flight, 1) + 1;
        for (int m = atomic_load(&max_in_flight); n > m;)
            if (atomic_compare_exchange_weak(&max_in_flight, &m, n))
                break;
        rbh_sleep_ms(5);
        atomic_fetch_sub(&in_flight, 1);
        char *r = rbh_cmd(c, "ACK {\"jid\":\"%s\"}", jid);
        if (r && !strcmp(r, "+OK"))
            atomic_fetch_add(&hammered, 1);
        free(r);
        free(jid);
    }
    return NULL;
}

SERVER_TEST(workers_fetching_at_once_never_hold_more_than_the_limit)
{
    for (int i = 0; i < HAMMER_JOBS; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "thh-%05d", i);
        push(jid, "t", "");
    }
    rbh_server *at[2] = {&S, &S};
#ifdef RBH_PG
    static rbh_server S2; /* a second node on S's database */
    rbh_launch_second(&S2, &S, CONFIG);
    at[1] = &S2;
#endif
    rbh_conn *cs[HAMMERS];
    pthread_t th[HAMMERS];
    for (int i = 0; i < HAMMERS; i++) {
        char wid[16];
        snprintf(wid, sizeof wid, "wh%d", i);
        cs[i] = rbh_connect(at[i % 2], wid);
        cr_assert_not_null(cs[i]);
    }
    for (int i = 0; i < HAMMERS; i++)
        pthread_create(&th[i], NULL, hammer, cs[i]);
    for (int i = 0; i < HAMMERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < HAMMERS; i++)
        rbh_close(cs[i]);
    long long in_use_2 = 0, processed_2 = HAMMER_JOBS;
#ifdef RBH_PG
    /* the second node read, then stopped before any assertion can end the
     * test (it is not the suite's to stop) */
    rbh_conn *c2 = rbh_connect(&S2, NULL);
    cr_assert_not_null(c2);
    in_use_2 = rbh_info_int(c2, "rebound.throttles.t.in_use");
    processed_2 = rbh_info_int(c2, "faktory.total_processed");
    rbh_close(c2);
    cr_assert_eq(rbh_stop(&S2), 0, "the second node did not exit cleanly");
#endif
    cr_assert_eq(atomic_load(&hammered), HAMMER_JOBS);
    cr_assert_leq(atomic_load(&max_in_flight), 2, "%d jobs of t in flight at once",
                  atomic_load(&max_in_flight));
    cr_assert_eq(atomic_load(&max_in_flight), 2, "the limit was never reached (a weak test)");
    cr_assert_eq(working("t"), 0);
    cr_assert_eq(in_use_2, 0);
    cr_assert_eq(processed_2, HAMMER_JOBS, "the cluster's count, read on the second node");
}
