/* Distributed mode with several `rebound serve` processes on one PostgreSQL
 * database (docs/distributed.md):
 * - three nodes, pushers and workers on every node, jobs failing at random
 *   through a three-attempt policy, one node killed with SIGKILL (and
 *   started again) and PostgreSQL restarted mid-run: every job pushed ends
 *   acknowledged exactly once or dead after exactly its three attempts,
 *   none is run after its ACK, the cluster's counters agree;
 * - a FETCH parked on one node gets a job pushed on another;
 * - a node refuses a database without the schema, or with a newer one;
 * - a node whose database goes away answers errors (HELLO still succeeds,
 *   and a BEAT from a worker connected to it is answered by the node; a
 *   BEAT for a wid it has no connection from is an error) and resumes
 *   after, recording the workers that said HELLO meanwhile at their next
 *   BEAT;
 * - a 1,000-job batch run by workers on three nodes, one node killed with
 *   SIGKILL in the middle: each callback exists exactly once;
 * - 16 clients spread over three nodes push the same unique job at once:
 *   exactly one is taken, every other answered NOTUNIQUE (issue 16).
 * $REBOUND_PG_NODES_JOBS sets the job count of the first test (default
 * 20000; 100000 is the full run of docs/distributed.md). */
#define RBH_PG 1
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>

#define NODES 3
#define WORKERS_PER_NODE 2
#define MAX_ATTEMPTS 3
#define FAIL_PERCENT 15

enum { ACK_OK = 1, FAIL_SENT = 2 };

static rbpg_cluster pgc;
static rbh_server node[NODES];
static atomic_int port[NODES];
static int n_jobs;
static _Atomic unsigned char *flags;
static atomic_int acked, violations, next_push;
static atomic_bool stop_workers;

static void setup(void)
{
    cr_assert(rbpg_start(&pgc), "no PostgreSQL cluster (see %s)", pgc.setup);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' migrate --url '%s' >/dev/null", rbh_bin(), pgc.url);
    cr_assert_eq(system(cmd), 0, "rebound migrate failed");
}

static void teardown(void)
{
    for (int i = 0; i < NODES; i++)
        if (node[i].dir[0])
            rbh_stop(&node[i]);
    rbpg_destroy(&pgc);
    free((void *)flags);
}

TestSuite(nodes, .init = setup, .fini = teardown, .timeout = 600);

/* Starts node i on the test's cluster (a fresh directory; the schema made
 * by rbh_init in the shared cluster is not used). */
static void start_node(int i)
{
    rbh_server s;
    rbh_init(&s);
    snprintf(s.db, sizeof s.db, "%s", pgc.url);
    node[i] = s;
    cr_assert_eq(rbh_launch(&node[i], NULL), 0, "node %d did not start (see %s)", i, node[i].log);
    atomic_store(&port[i], node[i].port);
}

/* A connection to the first node from `from` on that accepts (wid may be
 * NULL); NULL when none does. *at receives the node's index. */
static rbh_conn *connect_any(int from, const char *wid, int *at)
{
    for (int k = 0; k < NODES; k++) {
        int i = (from + k) % NODES;
        rbh_server s = {.port = atomic_load(&port[i])};
        rbh_conn *c = s.port > 0 ? rbh_connect(&s, wid) : NULL;
        if (c) {
            *at = i;
            return c;
        }
    }
    return NULL;
}

static bool storage_error(const char *r)
{
    return r && !strncmp(r, "-ERR storage error", 18);
}

static void *pusher(void *arg)
{
    int from = (int)(intptr_t)arg, at = from;
    rbh_conn *c = NULL;
    char *batch = malloc(64 * 400);
    for (;;) {
        int first = atomic_fetch_add(&next_push, 50);
        if (first >= n_jobs)
            break;
        int last = first + 50 < n_jobs ? first + 50 : n_jobs;
        size_t len = 0;
        batch[len++] = '[';
        for (int id = first; id < last; id++)
            len += (size_t)sprintf(batch + len,
                                   "%s{\"jid\":\"n-%07d\",\"jobtype\":\"w\",\"args\":[%d],"
                                   "\"queue\":\"nodes\",\"reserve_for\":5,\"retry_policy\":"
                                   "{\"dialect\":\"temporal\",\"initial_interval\":\"20ms\","
                                   "\"backoff_coefficient\":1.0,\"maximum_attempts\":%d}}",
                                   id > first ? "," : "", id, id, MAX_ATTEMPTS);
        batch[len++] = ']';
        batch[len] = '\0';
        for (;;) { /* until the batch is in: a retry finds the jobs already there */
            if (!c && !(c = connect_any(at + 1, NULL, &at))) {
                rbh_sleep_ms(50);
                continue;
            }
            char *r = rbh_cmd(c, "PUSHB %s", batch);
            if (!r) {
                rbh_close(c);
                c = NULL;
                continue;
            }
            bool ok = r[0] == '{';
            json_t *errs = ok ? json_loads(r, 0, NULL) : NULL;
            const char *k;
            json_t *v;
            json_object_foreach(errs, k, v) {
                if (!strstr(json_string_value(v), "already exists"))
                    ok = false;
            }
            json_decref(errs);
            if (!ok && !storage_error(r))
                fprintf(stderr, "pusher: unexpected reply %.200s\n", r);
            free(r);
            if (ok)
                break;
            rbh_sleep_ms(20);
        }
    }
    free(batch);
    rbh_close(c);
    return NULL;
}

/* Fetches from any node and ACKs, or FAILs FAIL_PERCENT % of executions;
 * an ACK or FAIL whose answer was lost (node killed, database away) is
 * sent again, to any node, until it is answered for good. */
static void *worker(void *arg)
{
    int self = (int)(intptr_t)arg, at = self % NODES;
    char wid[32];
    snprintf(wid, sizeof wid, "nw%d", self);
    unsigned seed = (unsigned)self * 7919u + (unsigned)getpid();
    rbh_conn *c = NULL;
    char pending[128] = "";
    int pending_id = -1;
    bool pending_ack = false;
    while (!atomic_load(&stop_workers)) {
        if (!c && !(c = connect_any(at, wid, &at))) {
            rbh_sleep_ms(50);
            continue;
        }
        if (pending[0]) {
            char *r = rbh_cmd(c, "%s", pending);
            if (!r) {
                rbh_close(c);
                c = NULL;
                at++;
                continue;
            }
            if (storage_error(r)) {
                free(r);
                rbh_sleep_ms(20);
                continue;
            }
            if (pending_ack && !strcmp(r, "+OK")) {
                atomic_fetch_or(&flags[pending_id], ACK_OK);
                atomic_fetch_add(&acked, 1);
            } else if (strcmp(r, "+OK") && !strstr(r, "Job not found") &&
                       !strstr(r, "reserved by another worker")) {
                fprintf(stderr, "worker: unexpected reply to %s: %s\n", pending, r);
            }
            free(r);
            pending[0] = '\0';
            continue;
        }
        char *r = rbh_cmd(c, "FETCH nodes");
        if (!r) {
            rbh_close(c);
            c = NULL;
            at++;
            continue;
        }
        if (r[0] == '-') {
            if (!storage_error(r))
                fprintf(stderr, "worker: FETCH: %s\n", r);
            free(r);
            rbh_sleep_ms(20);
            continue;
        }
        int id = rbh_jid_number(r, 2);
        if (id < 0 || id >= n_jobs)
            continue;
        if (atomic_load(&flags[id]) & ACK_OK)
            atomic_fetch_add(&violations, 1); /* run again after its ACK */
        pending_id = id;
        pending_ack = (int)(rand_r(&seed) % 100) >= FAIL_PERCENT;
        if (pending_ack)
            snprintf(pending, sizeof pending, "ACK {\"jid\":\"n-%07d\"}", id);
        else
            snprintf(pending, sizeof pending,
                     "FAIL {\"jid\":\"n-%07d\",\"errtype\":\"Random\",\"message\":\"bad luck\"}",
                     id);
    }
    rbh_close(c);
    return NULL;
}

/* INFO's number at path through any node; -1 while none answers. */
static long long cluster_int(const char *path)
{
    int at;
    rbh_conn *c = connect_any(0, NULL, &at);
    if (!c)
        return -1;
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    json_t *x = rbh_get(v, path);
    long long n = x ? (long long)json_integer_value(x) : -1;
    json_decref(v);
    rbh_close(c);
    return n;
}

/* Waits until pred() or the deadline. */
static bool wait_until(bool (*pred)(void), int64_t timeout_ms)
{
    int64_t deadline = rbh_now_ms() + timeout_ms;
    while (!pred()) {
        if (rbh_now_ms() > deadline)
            return false;
        rbh_sleep_ms(50);
    }
    return true;
}

static bool a_third_acked(void)
{
    return atomic_load(&acked) >= n_jobs / 3;
}

static bool two_thirds_acked(void)
{
    return atomic_load(&acked) >= 2 * n_jobs / 3;
}

/* Every job acknowledged or dead, nothing else left. */
static bool all_settled(void)
{
    long long dead = cluster_int("faktory.tasks.Dead.size");
    long long left = cluster_int("faktory.total_enqueued");
    long long busy = cluster_int("faktory.tasks.Busy.size");
    long long retries = cluster_int("faktory.tasks.Retries.size");
    return dead >= 0 && left == 0 && busy == 0 && retries == 0 &&
           atomic_load(&acked) + dead >= n_jobs;
}

Test(nodes, three_nodes_random_failures_node_kill_and_database_restart)
{
    const char *e = getenv("REBOUND_PG_NODES_JOBS");
    n_jobs = e && atoi(e) > 0 ? atoi(e) : 20000;
    flags = calloc((size_t)n_jobs, sizeof *flags);
    for (int i = 0; i < NODES; i++)
        start_node(i);
    int64_t t0 = rbh_now_ms();
    pthread_t p[NODES], w[NODES * WORKERS_PER_NODE];
    for (int i = 0; i < NODES; i++)
        pthread_create(&p[i], NULL, pusher, (void *)(intptr_t)i);
    for (int i = 0; i < NODES * WORKERS_PER_NODE; i++)
        pthread_create(&w[i], NULL, worker, (void *)(intptr_t)i);

    cr_assert(wait_until(a_third_acked, 300000), "a third of the jobs not acknowledged in time");
    fprintf(stderr, "nodes: %d acked; killing node 2 with SIGKILL\n", atomic_load(&acked));
    atomic_store(&port[2], 0);
    rbh_kill(&node[2], SIGKILL);
    cr_assert_eq(rbh_launch(&node[2], NULL), 0, "node 2 did not start again");
    atomic_store(&port[2], node[2].port);

    cr_assert(wait_until(two_thirds_acked, 300000), "two thirds not acknowledged in time");
    fprintf(stderr, "nodes: %d acked; restarting PostgreSQL\n", atomic_load(&acked));
    cr_assert(rbpg_stop(&pgc), "cannot stop PostgreSQL");
    rbh_sleep_ms(300); /* nodes notice the loss and answer errors meanwhile */
    cr_assert(rbpg_restart(&pgc), "cannot start PostgreSQL again");

    cr_assert(wait_until(all_settled, 300000), "jobs still unsettled: %d acked", atomic_load(&acked));
    atomic_store(&stop_workers, true);
    for (int i = 0; i < NODES; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < NODES * WORKERS_PER_NODE; i++)
        pthread_join(w[i], NULL);
    int64_t took = rbh_now_ms() - t0;

    /* Every job: acknowledged (exactly once) or dead after its attempts. */
    int at;
    rbh_conn *c = connect_any(0, NULL, &at);
    cr_assert_not_null(c);
    int n_acked = 0, n_dead = 0, missing = 0, both = 0, bad_history = 0;
    unsigned char *dead = calloc((size_t)n_jobs, 1);
    for (int off = 0;; off += 10000) { /* the dead jobs, from JOBS */
        json_t *v = rbh_json(rbh_cmd(c, "JOBS {\"state\":\"dead\",\"offset\":%d,\"limit\":10000}", off));
        json_t *list = json_object_get(v, "jobs");
        cr_assert(json_is_array(list), "JOBS failed");
        size_t k;
        json_t *row;
        json_array_foreach(list, k, row) {
            const char *jid = json_string_value(rbh_get(row, "job.jid"));
            int id = jid ? atoi(jid + 2) : -1;
            if (id >= 0 && id < n_jobs)
                dead[id] = 1;
        }
        bool more = json_array_size(list) == 10000;
        json_decref(v);
        if (!more)
            break;
    }
    for (int id = 0; id < n_jobs; id++) {
        bool ok = atomic_load(&flags[id]) & ACK_OK;
        n_acked += ok;
        if (ok && !dead[id])
            continue; /* acknowledged: INFO shows nothing else is left */
        char jid[32];
        snprintf(jid, sizeof jid, "n-%07d", id);
        json_t *v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jid));
        const char *st = json_string_value(json_object_get(v, "state"));
        if (st && !strcmp(st, "dead")) {
            n_dead++;
            both += ok;
            json_t *h = json_object_get(v, "history");
            size_t nh = json_array_size(h);
            const char *last = json_string_value(json_object_get(json_array_get(h, nh - 1), "outcome"));
            if (nh != MAX_ATTEMPTS || !last || strcmp(last, "dead"))
                bad_history++;
            for (size_t k = 0; k < nh; k++) {
                const char *et = json_string_value(json_object_get(json_array_get(h, k), "errtype"));
                if (!et || (strcmp(et, "Random") && strcmp(et, "ReservationExpired")))
                    bad_history++;
            }
        } else {
            fprintf(stderr, "job %s %s\n", jid, st ? st : "lost");
            missing++;
        }
        json_decref(v);
    }
    free(dead);
    json_t *info = rbh_json(rbh_cmd(c, "INFO"));
    long long processed = json_integer_value(rbh_get(info, "faktory.total_processed"));
    json_decref(info);
    rbh_close(c);
    fprintf(stderr,
            "nodes: %d jobs on %d nodes in %lld ms: %d acked (processed counter %lld), %d dead, "
            "%d lost, %d both, %d re-run after ACK, %d bad histories\n",
            n_jobs, NODES, (long long)took, n_acked, processed, n_dead, missing, both,
            atomic_load(&violations), bad_history);
    cr_assert_eq(missing, 0);
    cr_assert_eq(both, 0);
    cr_assert_eq(n_acked + n_dead, n_jobs);
    cr_assert_eq(atomic_load(&violations), 0);
    cr_assert_eq(bad_history, 0);
    cr_assert_eq(processed, n_acked, "the processed counter disagrees with the ACKs");
    cr_assert(n_dead > 0 || n_jobs < 2000, "no job died: the failures did not run");
    for (int i = 0; i < NODES; i++) {
        cr_assert_eq(rbh_stop(&node[i]), 0, "node %d did not exit cleanly", i);
        node[i].dir[0] = '\0';
    }
}

/* --- a batch across nodes --- */

#define BATCH_JOBS 1000

static _Atomic unsigned char bflags[BATCH_JOBS];
static atomic_int b_acked, b_cb_success, b_cb_complete, b_rerun;

/* Fetches members and callbacks from any node and ACKs them; an ACK whose
 * answer was lost (its node killed) is sent again to another node. */
static void *batch_worker(void *arg)
{
    int self = (int)(intptr_t)arg, at = self % NODES;
    char wid[32];
    snprintf(wid, sizeof wid, "bw%d", self);
    rbh_conn *c = NULL;
    char pending[128] = "", pending_type[32] = "";
    int pending_id = -1;
    while (!atomic_load(&stop_workers)) {
        if (!c && !(c = connect_any(at, wid, &at))) {
            rbh_sleep_ms(50);
            continue;
        }
        if (pending[0]) {
            char *r = rbh_cmd(c, "%s", pending);
            if (!r) {
                rbh_close(c);
                c = NULL;
                at++;
                continue;
            }
            if (storage_error(r)) {
                free(r);
                rbh_sleep_ms(20);
                continue;
            }
            if (!strcmp(r, "+OK")) {
                if (pending_id >= 0) {
                    atomic_fetch_or(&bflags[pending_id], ACK_OK);
                    atomic_fetch_add(&b_acked, 1);
                } else if (!strcmp(pending_type, "CbSuccess")) {
                    atomic_fetch_add(&b_cb_success, 1);
                } else {
                    atomic_fetch_add(&b_cb_complete, 1);
                }
            } else if (!strstr(r, "Job not found")) {
                fprintf(stderr, "batch worker: unexpected reply to %s: %s\n", pending, r);
            }
            free(r);
            pending[0] = '\0';
            continue;
        }
        char *r = rbh_cmd(c, "FETCH bmem bcb");
        if (!r) {
            rbh_close(c);
            c = NULL;
            at++;
            continue;
        }
        if (r[0] == '-') {
            if (!storage_error(r))
                fprintf(stderr, "batch worker: FETCH: %s\n", r);
            free(r);
            rbh_sleep_ms(20);
            continue;
        }
        json_t *j = rbh_json(r);
        const char *jid = json_string_value(json_object_get(j, "jid"));
        const char *type = json_string_value(json_object_get(j, "jobtype"));
        if (!jid || !type) {
            json_decref(j);
            continue;
        }
        pending_id = -1;
        if (!strcmp(type, "Member")) {
            pending_id = atoi(jid + 3);
            if (pending_id < 0 || pending_id >= BATCH_JOBS) {
                json_decref(j);
                continue;
            }
            if (atomic_load(&bflags[pending_id]) & ACK_OK)
                atomic_fetch_add(&b_rerun, 1);
        }
        snprintf(pending_type, sizeof pending_type, "%s", type);
        snprintf(pending, sizeof pending, "ACK {\"jid\":\"%s\"}", jid);
        json_decref(j);
    }
    rbh_close(c);
    return NULL;
}

static bool a_third_of_batch_acked(void)
{
    return atomic_load(&b_acked) >= BATCH_JOBS / 3;
}

static bool batch_done(void)
{
    return atomic_load(&b_cb_success) >= 1 && atomic_load(&b_cb_complete) >= 1 &&
           cluster_int("faktory.total_enqueued") == 0 &&
           cluster_int("faktory.tasks.Busy.size") == 0;
}

/* Three nodes, one 1,000-job batch with success and complete callbacks,
 * workers on every node, one node killed with SIGKILL in the middle: each
 * callback is enqueued exactly once (the batch row's lock, issue 15). */
Test(nodes, batch_across_nodes_with_a_node_killed_fires_each_callback_once)
{
    for (int i = 0; i < NODES; i++)
        start_node(i);
    rbh_conn *c = rbh_connect(&node[0], NULL);
    cr_assert_not_null(c);
    char *bid = rbh_cmd(c, "BATCH NEW {\"description\":\"nodes\","
                           "\"success\":{\"jid\":\"cb-success\",\"jobtype\":\"CbSuccess\","
                           "\"args\":[],\"queue\":\"bcb\",\"reserve_for\":5},"
                           "\"complete\":{\"jid\":\"cb-complete\",\"jobtype\":\"CbComplete\","
                           "\"args\":[],\"queue\":\"bcb\",\"reserve_for\":5}}");
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW gave %s", bid ? bid : "(closed)");
    /* members pushed through every node; a job claimed by node 2 just as it
     * is killed reaches no worker and runs again when its 5 s lease ends */
    rbh_conn *pc[NODES];
    for (int i = 0; i < NODES; i++)
        cr_assert_not_null(pc[i] = rbh_connect(&node[i], NULL));
    for (int i = 0; i < BATCH_JOBS; i++)
        cr_assert(rbh_expect(pc[i % NODES], "+OK",
                             "PUSH {\"jid\":\"bm-%07d\",\"jobtype\":\"Member\",\"args\":[],"
                             "\"queue\":\"bmem\",\"reserve_for\":5,\"custom\":{\"bid\":\"%s\"}}",
                             i, bid));
    for (int i = 0; i < NODES; i++)
        rbh_close(pc[i]);
    cr_assert(rbh_expect(c, "+OK", "BATCH COMMIT %s", bid));
    rbh_close(c);

    atomic_store(&stop_workers, false);
    pthread_t w[NODES * WORKERS_PER_NODE];
    for (int i = 0; i < NODES * WORKERS_PER_NODE; i++)
        pthread_create(&w[i], NULL, batch_worker, (void *)(intptr_t)i);
    cr_assert(wait_until(a_third_of_batch_acked, 120000), "a third not acknowledged in time");
    fprintf(stderr, "nodes: batch: %d acked; killing node 2 with SIGKILL\n",
            atomic_load(&b_acked));
    atomic_store(&port[2], 0);
    rbh_kill(&node[2], SIGKILL);
    cr_assert_eq(rbh_launch(&node[2], NULL), 0, "node 2 did not start again");
    atomic_store(&port[2], node[2].port);
    cr_assert(wait_until(batch_done, 120000), "batch unfinished: %d acked, callbacks %d/%d",
              atomic_load(&b_acked), atomic_load(&b_cb_complete), atomic_load(&b_cb_success));
    rbh_sleep_ms(500); /* a second callback, were there one, would show now */
    atomic_store(&stop_workers, true);
    for (int i = 0; i < NODES * WORKERS_PER_NODE; i++)
        pthread_join(w[i], NULL);

    int at;
    c = connect_any(0, NULL, &at);
    cr_assert_not_null(c);
    json_t *st = rbh_json(rbh_cmd(c, "BATCH STATUS %s", bid));
    json_t *info = rbh_json(rbh_cmd(c, "INFO"));
    long long callbacks = json_integer_value(rbh_get(info, "rebound.batches.callbacks"));
    long long left = json_integer_value(rbh_get(info, "faktory.total_enqueued"));
    fprintf(stderr, "nodes: batch of %d: %d acked, %d re-run, callbacks enqueued %lld, "
                    "complete ACKed %d, success ACKed %d\n",
            BATCH_JOBS, atomic_load(&b_acked), atomic_load(&b_rerun), callbacks,
            atomic_load(&b_cb_complete), atomic_load(&b_cb_success));
    cr_assert_eq(atomic_load(&b_acked), BATCH_JOBS);
    cr_assert_eq(atomic_load(&b_rerun), 0);
    cr_assert_eq(callbacks, 2, "each callback enqueued once");
    cr_assert_eq(left, 0);
    cr_assert_eq(atomic_load(&b_cb_complete), 1);
    cr_assert_eq(atomic_load(&b_cb_success), 1);
    cr_assert_eq(json_integer_value(json_object_get(st, "total")), BATCH_JOBS);
    cr_assert_eq(json_integer_value(json_object_get(st, "pending")), 0);
    cr_assert_str_eq(json_string_value(json_object_get(st, "complete_st")), "2");
    cr_assert_str_eq(json_string_value(json_object_get(st, "success_st")), "2");
    json_decref(st);
    json_decref(info);
    rbh_close(c);
    free(bid);
    for (int i = 0; i < NODES; i++) {
        cr_assert_eq(rbh_stop(&node[i]), 0, "node %d did not exit cleanly", i);
        node[i].dir[0] = '\0';
    }
}

/* 16 clients spread over three nodes push the same unique job at once, in
 * rounds (a new key each round): the lock's primary key lets exactly one
 * push of each round win, on whichever node (issue 16). */
#define U_CLIENTS 16
#define U_ROUNDS 10
static pthread_barrier_t u_barrier;
static atomic_int u_ok[U_ROUNDS], u_refused[U_ROUNDS], u_other;

static void *unique_pusher(void *arg)
{
    int self = (int)(intptr_t)arg;
    rbh_conn *c = rbh_connect(&node[self % NODES], NULL);
    for (int round = 0; round < U_ROUNDS; round++) {
        pthread_barrier_wait(&u_barrier);
        char *r = c ? rbh_cmd(c, "PUSH {\"jid\":\"nu-%02d-%02d\",\"jobtype\":\"Once\","
                                 "\"queue\":\"nuq\",\"args\":[%d],"
                                 "\"custom\":{\"unique_for\":60}}",
                              round, self, round)
                    : NULL;
        if (r && !strcmp(r, "+OK"))
            atomic_fetch_add(&u_ok[round], 1);
        else if (r && !strcmp(r, "-NOTUNIQUE Job not unique"))
            atomic_fetch_add(&u_refused[round], 1);
        else
            atomic_fetch_add(&u_other, 1);
        free(r);
    }
    rbh_close(c);
    return NULL;
}

Test(nodes, same_unique_job_pushed_on_three_nodes_at_once_is_taken_once)
{
    for (int i = 0; i < NODES; i++)
        start_node(i);
    pthread_barrier_init(&u_barrier, NULL, U_CLIENTS);
    pthread_t t[U_CLIENTS];
    for (int i = 0; i < U_CLIENTS; i++)
        pthread_create(&t[i], NULL, unique_pusher, (void *)(intptr_t)i);
    for (int i = 0; i < U_CLIENTS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&u_barrier);
    cr_assert_eq(atomic_load(&u_other), 0, "a push neither +OK nor NOTUNIQUE");
    for (int round = 0; round < U_ROUNDS; round++) {
        cr_assert_eq(atomic_load(&u_ok[round]), 1, "round %d: %d pushes taken", round,
                     atomic_load(&u_ok[round]));
        cr_assert_eq(atomic_load(&u_refused[round]), U_CLIENTS - 1);
    }
    for (int i = 0; i < NODES; i++) { /* one answer, whichever node is asked */
        rbh_conn *c = rbh_connect(&node[i], NULL);
        cr_assert_not_null(c);
        json_t *info = rbh_json(rbh_cmd(c, "INFO"));
        cr_assert_eq(json_integer_value(rbh_get(info, "faktory.queues.nuq")), U_ROUNDS);
        cr_assert_eq(json_integer_value(rbh_get(info, "rebound.unique.locks")), U_ROUNDS);
        cr_assert_eq(json_integer_value(rbh_get(info, "rebound.unique.rejected")),
                     U_ROUNDS * (U_CLIENTS - 1));
        json_decref(info);
        rbh_close(c);
    }
    for (int i = 0; i < NODES; i++) {
        cr_assert_eq(rbh_stop(&node[i]), 0, "node %d did not exit cleanly", i);
        node[i].dir[0] = '\0';
    }
}

/* A FETCH parked on node 0 is answered with a job pushed on node 1. */
Test(nodes, parked_fetch_gets_a_job_pushed_on_another_node)
{
    for (int i = 0; i < 2; i++)
        start_node(i);
    rbh_conn *w = rbh_connect(&node[0], "parked");
    rbh_conn *p = rbh_connect(&node[1], NULL);
    cr_assert(w && p);
    for (int round = 0; round < 3; round++) {
        cr_assert(rbh_send_parked(&node[0], w, "FETCH elsewhere\r\n"));
        int64_t t = rbh_now_ms();
        cr_assert(rbh_expect(p, "+OK",
                             "PUSH {\"jid\":\"far-%05d\",\"jobtype\":\"x\",\"args\":[],"
                             "\"queue\":\"elsewhere\"}", round));
        json_t *j = rbh_json(rbh_reply(w));
        char want[16];
        snprintf(want, sizeof want, "far-%05d", round);
        cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), want);
        fprintf(stderr, "nodes: a FETCH parked on node 0 got the job pushed on node 1 after %lld ms\n",
                (long long)(rbh_now_ms() - t));
        json_decref(j);
        cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"%s\"}", want));
    }
    rbh_close(w);
    rbh_close(p);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rbh_stop(&node[i]), 0);
        node[i].dir[0] = '\0';
    }
}

/* Runs `rebound serve` on url; its exit status, its stderr in log. */
static int serve_once(const char *url, char *log, size_t n)
{
    char cmd[1600];
    snprintf(log, n, "%s/serve.log", pgc.dir);
    snprintf(cmd, sizeof cmd, "'%s' serve --listen 127.0.0.1:0 --http-listen off --db '%s' 2>'%s'",
             rbh_bin(), url, log);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool log_says(const char *log, const char *what)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "grep -q \"%s\" '%s'", what, log);
    return system(cmd) == 0;
}

Test(nodes, refuses_a_missing_or_newer_schema)
{
    char url[900], log[400];
    snprintf(url, sizeof url, "%s&options=-c%%20search_path%%3Dempty", pgc.url);
    cr_assert(rbpg_psql(&pgc, "rebound", "CREATE SCHEMA empty"));
    cr_assert_neq(serve_once(url, log, sizeof log), 0);
    cr_assert(log_says(log, "run 'rebound migrate'"), "no advice to migrate in the log");
    cr_assert(rbpg_psql(&pgc, "rebound", "UPDATE rb_meta SET value = '99'"));
    cr_assert_neq(serve_once(pgc.url, log, sizeof log), 0);
    cr_assert(log_says(log, "upgrade rebound"), "no advice to upgrade in the log");
}

/* PostgreSQL goes away under a node: commands are answered with errors, the
 * node stays up, and once the database is back it resumes with every job
 * acknowledged before the outage. */
Test(nodes, lost_database_answers_errors_then_resumes)
{
    start_node(0);
    rbh_conn *c = rbh_connect(&node[0], "lw");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"before-01\",\"jobtype\":\"x\",\"args\":[]}"));
    cr_assert(rbpg_stop(&pgc));
    char *r = rbh_cmd(c, "PUSH {\"jid\":\"during-01\",\"jobtype\":\"x\",\"args\":[]}");
    cr_assert(r && !strncmp(r, "-ERR storage error", 18), "PUSH without a database: %s", r);
    free(r);
    r = rbh_cmd(c, "FETCH default");
    cr_assert(r && !strncmp(r, "-ERR storage error", 18), "FETCH without a database: %s", r);
    free(r);
    r = rbh_cmd(c, "MUTATE {\"cmd\":\"kill\",\"target\":\"retries\"}");
    cr_assert(r && !strncmp(r, "-ERR storage error", 18), "MUTATE without a database: %s", r);
    free(r);
    r = rbh_cmd(c, "FLUSH");
    cr_assert(r && !strncmp(r, "-ERR storage error", 18), "FLUSH without a database: %s", r);
    free(r);
    /* the administration commands and reads go through the same engine */
    const char *admin[] = {"INFO", "JOB {\"jid\":\"before-01\"}", "JOBS {\"state\":\"enqueued\"}",
                           "QUEUE LATENCY default", "QUEUE PAUSE default",
                           "WORKERS {\"cmd\":\"quiet\"}"};
    for (size_t i = 0; i < sizeof admin / sizeof *admin; i++) {
        r = rbh_cmd(c, "%s", admin[i]);
        cr_assert(r && !strncmp(r, "-ERR storage error", 18), "%s without a database: %s",
                  admin[i], r);
        free(r);
    }
    static const char *const job_cmds[] = {
        "ACK {\"jid\":\"before-01\"}",
        "FAIL {\"jid\":\"before-01\",\"errtype\":\"E\"}",
        "SNOOZE {\"jid\":\"before-01\",\"seconds\":0}",
        "EXTEND {\"jid\":\"before-01\",\"reserve_for\":60}",
    };
    for (size_t i = 0; i < sizeof job_cmds / sizeof *job_cmds; i++) {
        r = rbh_cmd(c, "%s", job_cmds[i]);
        cr_assert(r && !strncmp(r, "-ERR storage error", 18), "%s without a database: %s",
                  job_cmds[i], r);
        free(r);
    }
    /* A connected worker's BEAT is answered by the node; a wid it has no
     * connection from needs the registry: an error like the others. A
     * worker's HELLO still succeeds (recorded by its BEATs once back). */
    cr_assert(rbh_expect(c, "+OK", "BEAT {\"wid\":\"lw\"}"), "a connected worker's BEAT");
    rbh_conn *late = rbh_connect(&node[0], "lw-late");
    cr_assert_not_null(late, "HELLO without a database failed");
    rbh_conn *anon = rbh_connect(&node[0], NULL);
    cr_assert_not_null(anon);
    r = rbh_cmd(anon, "BEAT {\"wid\":\"lw-ghost\"}");
    cr_assert(r && !strncmp(r, "-ERR storage error", 18), "BEAT for a stranger: %s", r);
    free(r);
    rbh_close(anon);
    cr_assert(rbpg_restart(&pgc));
    int64_t deadline = rbh_now_ms() + 30000; /* the reconnect backoff is at most 5 s */
    bool back = false;
    while (!back && rbh_now_ms() < deadline) {
        r = rbh_cmd(c, "PUSH {\"jid\":\"after-001\",\"jobtype\":\"x\",\"args\":[]}");
        cr_assert_not_null(r, "the node closed the connection");
        back = !strcmp(r, "+OK");
        cr_assert(back || !strncmp(r, "-ERR storage error", 18), "%s", r);
        free(r);
        if (!back)
            rbh_sleep_ms(100);
    }
    cr_assert(back, "the node did not resume");
    json_t *j = rbh_json(rbh_cmd(c, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "before-01");
    json_decref(j);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"before-01\"}"));
    cr_assert(rbh_expect(late, "+OK", "BEAT {\"wid\":\"lw-late\"}"));
    rbh_conn *other = rbh_connect(&node[0], NULL);
    cr_assert(rbh_expect(other, "+OK", "BEAT {\"wid\":\"lw-late\"}"), "not recorded");
    rbh_close(other);
    rbh_close(late);
    rbh_close(c);
    cr_assert_eq(rbh_stop(&node[0]), 0);
    node[0].dir[0] = '\0';
}
