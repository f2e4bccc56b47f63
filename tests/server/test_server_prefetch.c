/* Prefetch ([storage] prefetch, src/backend/pg/prefetch.c), on a single
 * node and (test_pg_prefetch.c, RBH_PG) in distributed mode, from this one
 * source. In distributed mode a worker's ACK claims its next job in the
 * same transaction, for the queues of that worker's last FETCH, and its
 * next FETCH gets that job at once (a FAIL's does the same). The claim is
 * an ordinary one, committed before the ACK's reply: the job is reserved
 * for the worker (wid), its attempt counted. A job so held goes back to
 * its queue, its attempt not consumed, when the worker does not FETCH
 * within 0.5 s, when its next FETCH names other queues, and when the node
 * stops; after a kill -9 it stays reserved for the worker (not lost) until
 * its lease ends. With prefetch = false an ACK claims nothing (the
 * default), nor does a worker without a wid. The single node has no
 * prefetch (its FETCH needs no round trip to a database): the setting is
 * accepted and changes nothing there, so the same sequences leave the job
 * in its queue, and every worker still gets every job once. States come
 * from JOB; in distributed mode holders and attempts from rb_jobs too.
 * In distributed mode one database thread runs a node's batches with
 * prefetch too: a PUSH arriving while an ACK's batch is held up waits for
 * it, with no statement of its own. */
#include "harness.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

static rbh_server srv;

static void teardown(void)
{
    if (srv.dir[0])
        rbh_stop(&srv);
}

TestSuite(prefetch, .fini = teardown, .timeout = 60);

/* JOB's state of jid ("enqueued", "working", "retries"; NULL: no such job). */
static void assert_state(const char *jid, const char *want)
{
    rbh_conn *c = rbh_connect(&srv, NULL);
    cr_assert(c);
    char *st = rbh_job_state(c, jid);
    cr_assert(want ? st && !strcmp(st, want) : !st, "job %s is %s, expected %s", jid,
              st ? st : "gone", want ? want : "gone");
    free(st);
    rbh_close(c);
}

#ifdef RBH_PG
/* The value of a SQL expression over job jid's row ("" when no row). */
static char *job_col(const char *jid, const char *col)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT %s FROM rb_jobs WHERE jid = '%s'", col, jid);
    char *v = rbh_pg_value(srv.db, q);
    cr_assert_not_null(v, "%s", q);
    return v;
}

static void assert_col(const char *jid, const char *col, const char *want)
{
    char *v = job_col(jid, col);
    cr_assert_str_eq(v, want, "job %s: %s is '%s', expected '%s'", jid, col, v, want);
    free(v);
}
#endif

/* Working for wid, its attempts (distributed mode: the row's holder and
 * attempts checked too). */
static void assert_working(const char *jid, const char *wid, const char *attempts)
{
    assert_state(jid, "working");
#ifdef RBH_PG
    assert_col(jid, "wid", wid);
    assert_col(jid, "attempts", attempts);
#else
    (void)wid;
    (void)attempts;
#endif
}

static void assert_enqueued(const char *jid, const char *attempts)
{
    assert_state(jid, "enqueued");
#ifdef RBH_PG
    assert_col(jid, "coalesce(wid, '')", "");
    assert_col(jid, "attempts", attempts);
#else
    (void)attempts;
#endif
}

/* What wid's ACK left of jid: held for wid in distributed mode; in its
 * queue on a single node, which prefetches nothing. */
static void assert_held(const char *jid, const char *wid, const char *attempts)
{
#ifdef RBH_PG
    assert_working(jid, wid, attempts);
#else
    (void)wid;
    (void)attempts;
    assert_enqueued(jid, "0");
#endif
}

static void push(rbh_conn *c, const char *queue, const char *jid)
{
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"%s\"}",
                         jid, queue));
}

static void fetch_is(rbh_conn *c, const char *queues, const char *want)
{
    char *got = rbh_fetch_jid(c, queues);
    cr_assert(got && !strcmp(got, want), "FETCH %s: got %s, expected %s", queues,
              got ? got : "none", want);
    free(got);
}

/* INFO's rebound.prefetch.WHAT is n in distributed mode; a single node
 * has no such section. */
static void expect_prefetch(rbh_conn *c, const char *what, long long n)
{
    char path[64];
    snprintf(path, sizeof path, "rebound.prefetch.%s", what);
    long long got = rbh_info_int(c, path);
#ifdef RBH_PG
    cr_assert_eq(got, n, "%s is %lld, expected %lld", path, got, n);
#else
    (void)n;
    cr_assert_eq(got, -1, "a single node shows %s (%lld)", path, got);
#endif
}

#define ON "[storage]\nprefetch = true\n"

static void start(const char *config)
{
    cr_assert_eq(rbh_start(&srv, config, NULL), 0, "the server did not start (see %s)", srv.log);
}

/* How long ack_first's node holds a prefetched job (ms): longer than the
 * slowest machine takes to look at it, unless a test waits for the hold to
 * run out (the default 0.5 s expired before the checks at a load of 19). */
static const char *hold_ms = "20000";

/* Starts a node with prefetch on; a worker with wid (NULL: none) pushes
 * pfjob-aa and pfjob-bb to q, fetches and ACKs pfjob-aa. */
static rbh_conn *ack_first(const char *wid)
{
    rbh_fault_set("pg.prefetch_hold_ms", hold_ms);
    start(ON);
    rbh_conn *w = rbh_connect(&srv, wid);
    cr_assert(w);
    push(w, "q", "pfjob-aa");
    push(w, "q", "pfjob-bb");
    fetch_is(w, "q", "pfjob-aa");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-aa\"}"));
    return w;
}

/* ack_first, pfjob-bb then held for wid (distributed mode). */
static rbh_conn *held_after_ack(const char *wid)
{
    rbh_conn *w = ack_first(wid);
    assert_held("pfjob-bb", wid, "1");
    return w;
}

Test(prefetch, ack_claims_the_next_job_for_the_next_fetch)
{
    rbh_fault_set("pg.prefetch_hold_ms", "20000"); /* held until taken, however slow the machine */
    start(ON);
    rbh_conn *w = rbh_connect(&srv, "pw-1"), *adm = rbh_connect(&srv, NULL);
    cr_assert(w && adm);
    push(adm, "q", "pfjob-aa");
    push(adm, "q", "pfjob-bb");
    push(adm, "q", "pfjob-cc");
    fetch_is(w, "q", "pfjob-aa");
    assert_enqueued("pfjob-bb", "0");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-aa\"}"));
    /* committed with the ACK, before its reply: b is the worker's */
    assert_state("pfjob-aa", NULL);
    assert_held("pfjob-bb", "pw-1", "1");
    assert_enqueued("pfjob-cc", "0");
    expect_prefetch(adm, "held", 1);
    fetch_is(w, "q", "pfjob-bb");
    expect_prefetch(adm, "hits", 1);
    expect_prefetch(adm, "held", 0);
    assert_working("pfjob-bb", "pw-1", "1"); /* handed out as claimed: one attempt */
    /* and again: c with b's ACK; then the queue is empty, nothing held */
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-bb\"}"));
    assert_held("pfjob-cc", "pw-1", "1");
    fetch_is(w, "q", "pfjob-cc");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-cc\"}"));
    expect_prefetch(adm, "held", 0);
    expect_prefetch(adm, "hits", 2);
    cr_assert_eq(rbh_info_int(adm, "faktory.total_processed"), 3);
    rbh_close(w);
    rbh_close(adm);
    cr_assert_eq(rbh_stop(&srv), 0);
    srv.dir[0] = '\0';
}

/* A FAIL claims the next job too (after the failure is applied: the
 * failed job, retrying later, is not the one claimed). */
Test(prefetch, fail_claims_the_next_job_too)
{
    rbh_fault_set("pg.prefetch_hold_ms", "20000");
    start(ON);
    rbh_conn *w = rbh_connect(&srv, "pw-f");
    cr_assert(w);
    push(w, "q", "pfjob-aa");
    push(w, "q", "pfjob-bb");
    fetch_is(w, "q", "pfjob-aa");
    cr_assert(rbh_expect(w, "+OK", "FAIL {\"jid\":\"pfjob-aa\",\"errtype\":\"E\",\"message\":\"m\"}"));
    assert_state("pfjob-aa", "retries");
    assert_held("pfjob-bb", "pw-f", "1");
    fetch_is(w, "q", "pfjob-bb");
    expect_prefetch(w, "hits", 1);
    rbh_close(w);
}

Test(prefetch, a_job_not_fetched_goes_back_unconsumed)
{
    hold_ms = "3000";
    rbh_conn *w = held_after_ack("pw-2"), *other = rbh_connect(&srv, "pw-3");
    cr_assert(other);
    /* pw-2 never fetches again: once the hold is over b is back, attempt undone */
    cr_assert(rbh_wait_state(other, "pfjob-bb", "enqueued", 30000), "b was not put back");
    assert_enqueued("pfjob-bb", "0");
    expect_prefetch(other, "expired", 1);
    fetch_is(other, "q", "pfjob-bb");
    assert_working("pfjob-bb", "pw-3", "1");
    rbh_close(w);
    rbh_close(other);
}

Test(prefetch, a_fetch_of_other_queues_puts_it_back_at_once)
{
    /* held far longer than the test takes, so b comes back for the FETCH
     * of q2 alone (with the default 0.5 s the hold ran out before the
     * first check at a load of 10: attempts 0, not 1) */
    rbh_fault_set("pg.prefetch_hold_ms", "20000");
    start(ON);
    rbh_conn *w = rbh_connect(&srv, "pw-4"), *other = rbh_connect(&srv, "pw-5");
    cr_assert(w && other);
    push(w, "q1", "pfjob-aa");
    push(w, "q1", "pfjob-bb");
    push(w, "q2", "pfjob-cc");
    fetch_is(w, "q1", "pfjob-aa");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-aa\"}"));
    assert_held("pfjob-bb", "pw-4", "1");
    /* its next FETCH names q2: c, and b goes back without waiting 0.5 s */
    fetch_is(w, "q2", "pfjob-cc");
    fetch_is(other, "q1", "pfjob-bb");
    assert_working("pfjob-bb", "pw-5", "1");
    expect_prefetch(other, "hits", 0);
    rbh_close(w);
    rbh_close(other);
}

Test(prefetch, stopping_puts_held_jobs_back)
{
    rbh_conn *w = held_after_ack("pw-6");
    rbh_close(w);
    cr_assert_eq(rbh_kill(&srv, SIGTERM) & 0xffff, 0, "the node did not exit cleanly");
    cr_assert_eq(rbh_launch(&srv, NULL), 0);
    assert_enqueued("pfjob-bb", "0");
}

Test(prefetch, kill_9_leaves_the_job_reserved_not_lost)
{
    rbh_conn *w = held_after_ack("pw-7");
    rbh_close(w);
    rbh_kill(&srv, SIGKILL);
    cr_assert_eq(rbh_launch(&srv, NULL), 0);
    assert_state("pfjob-aa", NULL);
    rbh_conn *w2 = rbh_connect(&srv, "pw-8");
    cr_assert(w2);
#ifdef RBH_PG
    /* as a FETCH whose reply was lost: reserved for the worker until its
     * lease ends, then the reaper's (not lost, not run twice meanwhile) */
    assert_working("pfjob-bb", "pw-7", "1");
    cr_assert(rbh_expect(w2, "$-1", "FETCH q"), "b is held by pw-7's lease");
    /* the lease ends (moved into the past here): the reaper makes it a retry */
    char *v = rbh_pg_value(srv.db, "UPDATE rb_jobs SET due_ms = 0 WHERE jid = 'pfjob-bb'");
    free(v);
    int64_t deadline = rbh_now_ms() + 10000;
    char *st = NULL;
    while (rbh_now_ms() < deadline) {
        free(st);
        st = job_col("pfjob-bb", "state");
        if (strcmp(st, "3"))
            break;
        rbh_sleep_ms(50);
    }
    cr_assert_neq(strcmp(st, "3"), 0, "the reaper did not take b back");
    free(st);
#else
    /* nothing was held: b waits in its queue for the next worker */
    assert_enqueued("pfjob-bb", "0");
    fetch_is(w2, "q", "pfjob-bb");
#endif
    rbh_close(w2);
}

/* A node paused (SIGSTOP, a stalled VM) after the ACK's transaction
 * claimed the next job and before it held it, for longer than that job's
 * lease: the maintenance thread's reaper takes the job meanwhile (1 s
 * lease, retry 0: discarded). When the node runs again its hold counts
 * from the claim's posting, so the worker's FETCH does not get the job the
 * reaper took (it would run a job already failed and possibly run
 * elsewhere). A single node holds nothing: the FETCH gets the job. */
Test(prefetch, a_node_paused_past_the_lease_hands_out_no_held_job)
{
    /* the hold is its default 0.5 s, shorter than any lease: a hold as
     * long as the lease (the other tests' 20 s) could outlast it */
    rbh_fault_set("pg.prefetch_pause_ms", "2500");
    start(ON);
    rbh_conn *w = rbh_connect(&srv, "pw-p"), *adm = rbh_connect(&srv, NULL);
    cr_assert(w && adm);
    push(adm, "q", "pfjob-aa");
    cr_assert(rbh_expect(adm, "+OK", "PUSH {\"jid\":\"pfjob-bb\",\"jobtype\":\"t\",\"args\":[],"
                                     "\"queue\":\"q\",\"reserve_for\":1,\"retry\":0}"));
    fetch_is(w, "q", "pfjob-aa");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-aa\"}"));
#ifdef RBH_PG
    char *jid = rbh_fetch_jid(w, "q");
    cr_assert_null(jid, "the FETCH got %s after its lease ran out", jid);
    /* the reaper's ReservationExpired, retry 0: discarded, not run */
    cr_assert_eq(rbh_info_int(adm, "faktory.total_failures"), 1, "the reaper did not take it");
    cr_assert_eq(rbh_info_int(adm, "faktory.total_processed"), 1);
    expect_prefetch(adm, "hits", 0);
    expect_prefetch(adm, "held", 0);
#else
    fetch_is(w, "q", "pfjob-bb");
#endif
    rbh_close(w);
    rbh_close(adm);
}

Test(prefetch, off_by_default_claims_nothing_ahead)
{
    start(NULL); /* the default */
    rbh_conn *w = rbh_connect(&srv, "pw-9");
    cr_assert(w);
    push(w, "q", "pfjob-aa");
    push(w, "q", "pfjob-bb");
    fetch_is(w, "q", "pfjob-aa");
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"pfjob-aa\"}"));
    assert_enqueued("pfjob-bb", "0");
    expect_prefetch(w, "held", 0);
#ifdef RBH_PG
    json_t *info = rbh_json(rbh_cmd(w, "INFO"));
    cr_assert(json_is_false(rbh_get(info, "rebound.prefetch.enabled")));
    json_decref(info);
#endif
    fetch_is(w, "q", "pfjob-bb");
    expect_prefetch(w, "hits", 0);
    rbh_close(w);
}

Test(prefetch, a_worker_without_wid_claims_nothing_ahead)
{
    rbh_conn *w = ack_first(NULL);
    assert_enqueued("pfjob-bb", "0");
    rbh_close(w);
}

/* --- under load (distributed mode: pushes on their own database thread), every job once --- */

#define LOAD_JOBS 400
#define LOAD_PRODUCERS 3
#define LOAD_WORKERS 6

static _Atomic int acked[LOAD_JOBS];
static _Atomic int n_acked;

static void *producer(void *arg)
{
    int k = (int)(intptr_t)arg;
    rbh_conn *c = rbh_connect(&srv, NULL);
    for (int i = k; c && i < LOAD_JOBS; i += LOAD_PRODUCERS) {
        char *r = rbh_cmd(c, "PUSH {\"jid\":\"load-%05d\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"lq\"}", i);
        bool ok = r && !strcmp(r, "+OK");
        free(r);
        if (!ok)
            break;
    }
    rbh_close(c);
    return NULL;
}

static void *worker(void *arg)
{
    char wid[32];
    snprintf(wid, sizeof wid, "load-w%d", (int)(intptr_t)arg);
    rbh_conn *c = rbh_connect(&srv, wid);
    int64_t idle_since = rbh_now_ms();
    while (c && n_acked < LOAD_JOBS && rbh_now_ms() - idle_since < 8000) {
        char *jid = rbh_fetch_jid(c, "lq");
        if (!jid)
            continue; /* the 2 s wait ended empty */
        idle_since = rbh_now_ms();
        int i = atoi(jid + 5);
        char *r = rbh_cmd(c, "ACK {\"jid\":\"%s\"}", jid);
        if (r && !strcmp(r, "+OK") && i >= 0 && i < LOAD_JOBS) {
            acked[i]++;
            n_acked++;
        }
        free(r);
        free(jid);
    }
    rbh_close(c);
    return NULL;
}

Test(prefetch, many_workers_every_job_once)
{
    start(ON);
    pthread_t t[LOAD_PRODUCERS + LOAD_WORKERS];
    for (int i = 0; i < LOAD_WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < LOAD_PRODUCERS; i++)
        pthread_create(&t[LOAD_WORKERS + i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < LOAD_PRODUCERS + LOAD_WORKERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < LOAD_JOBS; i++)
        cr_assert_eq(acked[i], 1, "job %d ACKed %d times", i, acked[i]);
    rbh_conn *adm = rbh_connect(&srv, NULL);
    cr_assert_eq(rbh_info_int(adm, "faktory.total_processed"), LOAD_JOBS);
    cr_assert_leq(rbh_info_int(adm, "faktory.queues.lq"), 0, "jobs left in the queue");
#ifdef RBH_PG
    char *left = rbh_pg_value(srv.db, "SELECT count(*) FROM rb_jobs");
    cr_assert_str_eq(left, "0", "jobs left in the database");
    free(left);
    cr_assert_gt(rbh_info_int(adm, "rebound.prefetch.hits"), 0,
                 "no FETCH was answered from a prefetched job");
#endif
    rbh_close(adm);
}

#ifdef RBH_PG
/* The node's batch statements (push, ACK, claim: tagged so; not the
 * maintenance thread's calls) waiting for a lock the session with pid
 * holds. */
static long blocked_by(PGconn *pc, int pid)
{
    char q[200];
    snprintf(q, sizeof q, "SELECT count(*) FROM pg_stat_activity WHERE %d = ANY(pg_blocking_pids(pid))"
             " AND query LIKE '/* rb\\_%%'",
             pid);
    PGresult *r = PQexec(pc, q);
    cr_assert(r && PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(pc));
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* What they run (for a failure's message; leaked). */
static char *blocked_list(PGconn *pc, int pid)
{
    char q[220];
    snprintf(q, sizeof q, "SELECT string_agg(left(query, 60), ' | ') FROM pg_stat_activity"
                          " WHERE %d = ANY(pg_blocking_pids(pid))", pid);
    PGresult *r = PQexec(pc, q);
    char *v = strdup(r && PQntuples(r) ? PQgetvalue(r, 0, 0) : "?");
    PQclear(r);
    return v;
}

static void exec_ok(PGconn *pc, const char *sql)
{
    PGresult *r = PQexec(pc, sql);
    cr_assert(r && PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(pc));
    PQclear(r);
}

/* With prefetch too one database thread runs a node's batches (db_thread.c,
 * issue 29 session 13): a PUSH arriving while a worker's ACK (and the
 * claim of its next job) is held up in the database waits for that batch
 * and goes in the next one, with no statement of its own meanwhile (the
 * threads used to split pushes from the rest: two transactions where one
 * would do). Both are answered once the lock goes, and the worker's next
 * FETCH gets the job its ACK claimed. */
Test(prefetch, a_push_waits_for_the_batch_in_flight)
{
    rbh_fault_set("pg.prefetch_hold_ms", hold_ms);
    start(ON);
    rbh_conn *w = rbh_connect(&srv, "pw-1"), *p = rbh_connect(&srv, NULL);
    cr_assert(w && p);
    push(p, "q", "pfjob-aa");
    push(p, "q", "pfjob-bb");
    fetch_is(w, "q", "pfjob-aa");
    PGconn *lock = PQconnectdb(srv.db), *ctl = PQconnectdb(srv.db);
    cr_assert(PQstatus(lock) == CONNECTION_OK && PQstatus(ctl) == CONNECTION_OK, "%s",
              PQerrorMessage(lock));
    int lpid = PQbackendPID(lock);
    exec_ok(lock, "BEGIN");
    exec_ok(lock, "LOCK TABLE rb_jobs IN EXCLUSIVE MODE");
    const char ack[] = "ACK {\"jid\":\"pfjob-aa\"}\r\n";
    cr_assert_eq(rbh_send(w, ack, sizeof ack - 1), 0);
    int64_t until = rbh_now_ms() + 10000;
    while (blocked_by(ctl, lpid) < 1 && rbh_now_ms() < until)
        rbh_sleep_ms(10);
    cr_assert_eq(blocked_by(ctl, lpid), 1, "the ACK's batch did not wait for the lock: %s",
                 blocked_list(ctl, lpid));
    const char pj[] = "PUSH {\"jid\":\"pfjob-cc\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"q\"}\r\n";
    cr_assert_eq(rbh_send(p, pj, sizeof pj - 1), 0);
    rbh_sleep_ms(500); /* (lets the node take it: a statement it started would show below) */
    cr_assert_eq(blocked_by(ctl, lpid), 1, "a PUSH arriving meanwhile started a statement of its own: %s",
                 blocked_list(ctl, lpid));
    exec_ok(lock, "COMMIT");
    char *r1 = rbh_reply(w), *r2 = rbh_reply(p);
    cr_assert(r1 && !strcmp(r1, "+OK"), "ACK: %s", r1 ? r1 : "(none)");
    cr_assert(r2 && !strcmp(r2, "+OK"), "PUSH: %s", r2 ? r2 : "(none)");
    free(r1);
    free(r2);
    fetch_is(w, "q", "pfjob-bb");
    assert_working("pfjob-bb", "pw-1", "1");
    assert_enqueued("pfjob-cc", "0");
    PQfinish(lock);
    PQfinish(ctl);
    rbh_close(w);
    rbh_close(p);
}
#endif
