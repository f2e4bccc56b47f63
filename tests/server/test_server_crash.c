/* The crash test: a pusher and two workers run against the server while it
 * is killed with SIGKILL at random moments, many times, and restarted on the
 * same database. Afterwards every job whose PUSH got +OK must be accounted
 * for (acknowledged, or still in the server until the final drain ACKs it),
 * and no job may be fetched again after its ACK got +OK. Some jobs fail
 * first (FAIL with a short retry) so retries cross the crashes too. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

#define MAX_JOBS 200000
#define ROUNDS 15

enum { PUSH_OK = 1, ACK_OK = 2, ACK_SENT = 4, FAILED_ONCE = 8 };

static rbh_server S;
static _Atomic unsigned char flags[MAX_JOBS];
static atomic_int next_id, violations, pushes_ok;
static atomic_bool stop_workers;

static void start(void)
{
    rbh_init(&S);
}

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(crash, .init = start, .fini = stop, .timeout = 180);

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
    Test(crash, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

static void *pusher(void *arg)
{
    (void)arg;
    rbh_conn *c = rbh_connect(&S, NULL);
    while (c) {
        int id = atomic_fetch_add(&next_id, 1);
        if (id >= MAX_JOBS)
            break;
        char *r = rbh_cmd(c, "PUSH {\"jid\":\"crash-%06d\",\"jobtype\":\"work\",\"args\":[%d],"
                             "\"queue\":\"crash\",\"reserve_for\":1,\"retry_policy\":{\"dialect\":"
                             "\"temporal\",\"initial_interval\":\"50ms\",\"maximum_attempts\":0}}",
                          id, id);
        if (!r)
            break; /* the server died: this push may or may not have happened */
        if (!strcmp(r, "+OK")) {
            atomic_fetch_or(&flags[id], PUSH_OK);
            atomic_fetch_add(&pushes_ok, 1);
        }
        free(r);
    }
    rbh_close(c);
    return NULL;
}

/* Fetches and ACKs (or first FAILs every 7th job) until the connection
 * dies, or, when draining, until stop_workers is set. */
static void *worker(void *arg)
{
    rbh_conn *c = rbh_connect(&S, arg);
    while (c && !atomic_load(&stop_workers)) {
        char *r = rbh_cmd(c, "FETCH crash");
        if (!r)
            break;
        json_t *j = rbh_json(r);
        const char *jid = json_string_value(json_object_get(j, "jid"));
        if (!jid) {
            json_decref(j);
            continue; /* nothing ready */
        }
        int id = atoi(jid + 6);
        json_decref(j);
        if (id < 0 || id >= MAX_JOBS)
            continue;
        if (atomic_load(&flags[id]) & ACK_OK)
            atomic_fetch_add(&violations, 1); /* ran again after its ACK */
        if (id % 7 == 0 && !(atomic_load(&flags[id]) & FAILED_ONCE)) {
            r = rbh_cmd(c, "FAIL {\"jid\":\"crash-%06d\",\"errtype\":\"Crash\",\"next_retry_delay\":0.05}", id);
            if (!r)
                break;
            if (!strcmp(r, "+OK"))
                atomic_fetch_or(&flags[id], FAILED_ONCE);
            free(r);
            continue;
        }
        atomic_fetch_or(&flags[id], ACK_SENT);
        r = rbh_cmd(c, "ACK {\"jid\":\"crash-%06d\"}", id);
        if (!r)
            break;
        if (!strcmp(r, "+OK"))
            atomic_fetch_or(&flags[id], ACK_OK);
        free(r);
    }
    rbh_close(c);
    return NULL;
}

SERVER_TEST(kill_9_under_load_loses_nothing_and_reruns_nothing_acked)
{
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "crash test seed %u\n", seed);
    srand(seed);
    for (int round = 0; round < ROUNDS; round++) {
        cr_assert_eq(rbh_launch(&S, NULL), 0, "round %d: no start (see %s)", round, S.log);
        pthread_t p, w1, w2;
        pthread_create(&p, NULL, pusher, NULL);
        pthread_create(&w1, NULL, worker, "cw1");
        pthread_create(&w2, NULL, worker, "cw2");
        /* the kill comes at a random moment after the round's first +OK
         * (a loaded machine may take longer than the random delay to
         * connect and commit one push) */
        int before = atomic_load(&pushes_ok);
        for (int64_t until = rbh_now_ms() + 30000;
             atomic_load(&pushes_ok) == before && rbh_now_ms() < until;)
            rbh_sleep_ms(5);
        cr_assert_gt(atomic_load(&pushes_ok), before, "round %d: no push got +OK in 30 s", round);
        rbh_sleep_ms(50 + rand() % 400);
        rbh_kill(&S, SIGKILL);
        pthread_join(p, NULL);
        pthread_join(w1, NULL);
        pthread_join(w2, NULL);
    }
    /* Final run: drain everything that is left. */
    cr_assert_eq(rbh_launch(&S, NULL), 0);
    pthread_t w1, w2;
    pthread_create(&w1, NULL, worker, "cw1");
    pthread_create(&w2, NULL, worker, "cw2");
    rbh_conn *c = rbh_connect(&S, NULL);
    int64_t deadline = rbh_now_ms() + 60000;
    long long left = -1;
    while (rbh_now_ms() < deadline) {
        left = rbh_info_int(c, "faktory.total_enqueued") + rbh_info_int(c, "faktory.tasks.Busy.size") +
               rbh_info_int(c, "faktory.tasks.Retries.size") + rbh_info_int(c, "faktory.tasks.Scheduled.size");
        if (left == 0)
            break;
        rbh_sleep_ms(50);
    }
    atomic_store(&stop_workers, true);
    pthread_join(w1, NULL);
    pthread_join(w2, NULL);
    cr_assert_eq(left, 0, "%lld jobs still waiting after the drain", left);
    cr_assert_eq(rbh_info_int(c, "faktory.tasks.Dead.size"), 0);
    rbh_close(c);

    int pushed = 0, lost = 0, acked = 0;
    int n = atomic_load(&next_id);
    for (int id = 0; id < n && id < MAX_JOBS; id++) {
        unsigned f = atomic_load(&flags[id]);
        if (!(f & PUSH_OK))
            continue;
        pushed++;
        acked += !!(f & ACK_OK);
        if (!(f & (ACK_OK | ACK_SENT))) {
            lost++;
            fprintf(stderr, "lost: crash-%06d\n", id);
        }
    }
    fprintf(stderr, "crash test: %d rounds, %d jobs pushed with +OK, %d acked with +OK, %d lost, %d re-run after ACK\n",
            ROUNDS, pushed, acked, lost, atomic_load(&violations));
    cr_assert(pushed > 0, "no job was pushed");
    cr_assert_eq(lost, 0);
    cr_assert_eq(atomic_load(&violations), 0);
}
