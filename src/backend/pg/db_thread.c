/* Distributed mode's database threads (RB_PGMODE_THREADS of them, started
 * by mode.c): each takes every request queued on pm->todo at once, runs
 * them as one batch on its own engine (pushes naming parents or batches
 * and single calls in their own transactions, then the plain pushes, acks,
 * fails and claims per queue list in one transaction, then worker
 * sightings) and hands the batch back on pm->done with its commit
 * timings. Everything here runs on a database thread; the requests are the
 * thread's from taking them until they are on pm->done. */
#include "backend/pg/mode_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/pg/registry.h"
#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"

/* --- database threads: one batch per turn --- */

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The write transactions of one batch whose timings are kept (the batch
 * transaction, or at most one each for pushes, acks and fails). */
typedef struct batch_commits {
    mode_commit c[3];
    size_t n;
} batch_commits;

/* The claim statements a thread ran for FETCHes ([1]: parked ones
 * woken), and how many found no job, for /metrics. */
typedef struct claim_counts {
    size_t n[2], empty[2];
} claim_counts;

/* A write transaction of n_ops rows that began at start_us committed. */
static void commit_seen(batch_commits *bc, size_t n_ops, int64_t start_us)
{
    if (bc->n < sizeof bc->c / sizeof *bc->c)
        bc->c[bc->n++] = (mode_commit){n_ops, mono_us() - start_us};
}

static void fail_all(rb_pgreq **v, size_t n, int rc, const rb_err *err)
{
    for (size_t i = 0; i < n; i++) {
        v[i]->rc = rc;
        v[i]->err = *err;
    }
}

/* The pushes that name parents or batches, each in its own checked
 * transaction (refused whole); the plain ones are moved to the front of v
 * and counted in the return value, for run_pushes. */
static size_t run_own_pushes(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    size_t plain = 0;
    /* and cron ticks: one transaction each, with their meta row */
    for (size_t i = 0; i < n; i++) {
        if (!v[i]->u.push.deps && !v[i]->u.push.bids && !v[i]->u.push.meta_key &&
            !v[i]->u.push.deb) {
            v[plain++] = v[i];
            continue;
        }
        rb_err derr = {0};
        int64_t t0 = mono_us();
        if (v[i]->u.push.meta_key && v[i]->u.push.bids)
            v[i]->rc = rb_err_set(&derr, RB_EINVAL,
                                  "a [[cron]] job cannot be a batch member in distributed mode");
        else if (v[i]->u.push.deb && (v[i]->u.push.bids || v[i]->u.push.deps))
            v[i]->rc = rb_err_set(&derr, RB_EINVAL,
                                  "a PUSHB of debounced jobs cannot also hold batch members or "
                                  "jobs naming parents in distributed mode: push them apart");
        else if (v[i]->u.push.meta_key) /* its debounce too, in the tick's transaction */
            v[i]->rc = rb_pg_push_tick(pg, v[i]->u.push.jobs, v[i]->u.push.deb, v[i]->u.push.n,
                                       v[i]->u.push.deps, v[i]->u.push.meta_key,
                                       v[i]->u.push.tick_s, rb_now_ms(), v[i]->u.push.status,
                                       &v[i]->u.push.stale, &derr);
        else if (v[i]->u.push.deb)
            v[i]->rc = rb_pg_push_debounce(pg, v[i]->u.push.jobs, v[i]->u.push.deb,
                                           v[i]->u.push.n, rb_now_ms(), v[i]->u.push.status,
                                           &derr);
        else if (v[i]->u.push.bids)
            v[i]->rc = rb_pg_push_batch(pg, v[i]->u.push.jobs,
                                        (const char *const *)v[i]->u.push.bids, v[i]->u.push.n,
                                        v[i]->u.push.deps, rb_now_ms(), v[i]->u.push.status,
                                        &derr);
        else
            v[i]->rc = rb_pg_push_deps(pg, v[i]->u.push.jobs, v[i]->u.push.n, rb_now_ms(),
                                       v[i]->u.push.status, &derr);
        if (v[i]->rc)
            v[i]->err = derr;
        else
            commit_seen(bc, v[i]->u.push.n, t0);
    }
    return plain;
}

/* The plain pushes: one multi-row statement. */
static void run_pushes(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i]->u.push.n;
    rb_pg_new_job *jobs = rb_xcalloc(total ? total : 1, sizeof *jobs);
    int *status = rb_xcalloc(total ? total : 1, sizeof *status);
    char **handed = rb_xcalloc(total ? total : 1, sizeof *handed);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < v[i]->u.push.n; j++) {
            if (v[i]->u.push.handed) { /* a run before (a send, a rolled-back try) */
                free(v[i]->u.push.handed[j]);
                v[i]->u.push.handed[j] = NULL;
            }
            jobs[k++] = v[i]->u.push.jobs[j];
        }
    }
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = total ? rb_pg_push_hand(pg, jobs, total, rb_now_ms(), status, handed, &err) : 0;
    if (!rc && total)
        commit_seen(bc, total, t0);
    if (rc) {
        fail_all(v, n, rc, &err);
    } else {
        k = 0;
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < v[i]->u.push.n; j++, k++) {
                v[i]->u.push.status[j] = status[k];
                if (v[i]->u.push.handed)
                    v[i]->u.push.handed[j] = handed[k];
                else
                    free(handed[k]); /* none asked: none made */
            }
        }
    }
    free(jobs);
    free(status);
    free(handed);
}

/* Throttle slots of the jobs with status done came back: NOTIFY for
 * their throttled queues (an error is left to the poll that covers lost
 * notifications). */
static void slots_freed(rb_pg *pg, const rb_pg_labels *labels, const int *status, size_t n,
                        int done)
{
    const char **queues = rb_xcalloc(n ? n : 1, sizeof *queues);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (status[i] == done)
            queues[k++] = labels[i].queue;
    rb_err err = {0};
    if (k)
        (void)rb_pg_throttle_notify(pg, queues, k, &err);
    free(queues);
}

static void run_acks(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    rb_pg_ref *refs = rb_xcalloc(n, sizeof *refs);
    int *status = rb_xcalloc(n, sizeof *status);
    rb_pg_labels *labels = rb_xcalloc(n, sizeof *labels);
    for (size_t i = 0; i < n; i++)
        refs[i] = v[i]->u.ack.ref;
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = rb_pg_ack(pg, refs, n, status, labels, &err);
    if (rc) {
        fail_all(v, n, rc, &err);
    } else {
        commit_seen(bc, n, t0);
        for (size_t i = 0; i < n; i++) {
            if (status[i] == RB_PG_ACK_STORE_ERROR) { /* a batch's job, alone */
                fail_all(&v[i], 1, err.code ? err.code : RB_ESTORE, &err);
                continue;
            }
            v[i]->u.ack.status = status[i];
            v[i]->u.ack.labels = labels[i];
        }
        slots_freed(pg, labels, status, n, RB_JOB_DONE);
    }
    free(refs);
    free(status);
    free(labels);
}

static void run_fails(rb_pg *pg, rb_pgreq **v, size_t n, batch_commits *bc)
{
    rb_pg_failure *f = rb_xcalloc(n, sizeof *f);
    rb_pg_fail_result *res = rb_xcalloc(n, sizeof *res);
    for (size_t i = 0; i < n; i++)
        f[i] = v[i]->u.fail.f;
    rb_err err = {0};
    int64_t t0 = mono_us();
    int rc = rb_pg_fail(pg, f, n, rb_now_ms(), res, &err);
    if (!rc)
        commit_seen(bc, n, t0);
    if (rc) {
        fail_all(v, n, rc, &err);
    } else {
        rb_pg_labels *labels = rb_xcalloc(n, sizeof *labels);
        int *status = rb_xcalloc(n, sizeof *status);
        for (size_t i = 0; i < n; i++) {
            v[i]->u.fail.res = res[i];
            labels[i] = res[i].labels;
            status[i] = res[i].status;
        }
        slots_freed(pg, labels, status, n, RB_JOB_DONE);
        free(labels);
        free(status);
    }
    free(f);
    free(res);
}

static bool same_queues(const rb_pgreq *a, const rb_pgreq *b)
{
    if (a->u.claim.nq != b->u.claim.nq)
        return false;
    for (int i = 0; i < a->u.claim.nq; i++)
        if (strcmp(a->u.claim.queues[i], b->u.claim.queues[i]))
            return false;
    return true;
}

/* The hand-off claims among v whose job the batch's pushes (p, np of
 * them) inserted claimed for them: got it, and marked taken; the others
 * claim as any claim. */
static void take_handed(rb_pgreq **v, size_t n, rb_pgreq **p, size_t np, bool *taken)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t tok = v[i]->u.claim.hand_tok;
        for (size_t a = 0; tok && a < np && !taken[i]; a++) {
            if (!p[a]->u.push.hand_tok || p[a]->rc)
                continue;
            for (size_t j = 0; j < p[a]->u.push.n; j++) {
                if (p[a]->u.push.hand_tok[j] != tok)
                    continue;
                if (p[a]->u.push.status[j] == 0 && p[a]->u.push.handed[j]) {
                    v[i]->u.claim.job.jid = rb_xstrdup(p[a]->u.push.jobs[j].jid);
                    v[i]->u.claim.job.json = rb_xstrdup(p[a]->u.push.handed[j]);
                    v[i]->u.claim.got = true;
                    v[i]->u.claim.wake_at = INT64_MAX;
                    taken[i] = true;
                }
                break;
            }
        }
    }
}

/* One rb_pg_claim per distinct queue list (a statement for parked
 * FETCHes when any of its group is one: no op), but for the hand-offs
 * the pushes p (np of them) satisfied (take_handed). */
static void run_claims(rb_pg *pg, rb_pgreq **v, size_t n, rb_pgreq **p, size_t np,
                       claim_counts *cc)
{
    bool *taken = rb_xcalloc(n, sizeof *taken);
    take_handed(v, n, p, np, taken);
    rb_pgreq **group = rb_xcalloc(n, sizeof *group);
    const char **wids = rb_xcalloc(n, sizeof *wids);
    for (size_t i = 0; i < n; i++) {
        if (taken[i])
            continue;
        int g = 0;
        for (size_t j = i; j < n; j++) {
            if (!taken[j] && same_queues(v[i], v[j])) {
                taken[j] = true;
                wids[g] = v[j]->wid;
                group[g++] = v[j];
            }
        }
        rb_pg_claimed *out = NULL;
        int nout = 0;
        int64_t wake_at = INT64_MAX;
        rb_err err = {0};
        int rc = rb_pg_claim(pg, (const char *const *)v[i]->u.claim.queues, v[i]->u.claim.nq,
                             wids, g, rb_now_ms(), &out, &nout, &wake_at, &err);
        if (rc) {
            fail_all(group, (size_t)g, rc, &err);
            continue;
        }
        bool wake = false;
        for (int k = 0; k < g; k++) {
            group[k]->u.claim.wake_at = wake_at;
            /* a parked FETCH's (in a wake round) or a prefetch's */
            wake = wake || group[k]->u.claim.round || !group[k]->data;
        }
        cc->n[wake]++;
        cc->empty[wake] += nout == 0;
        for (int k = 0; k < nout; k++) {
            rb_pgreq *r = group[out[k].slot];
            r->u.claim.job = out[k];
            r->u.claim.got = true;
        }
        free(out); /* the strings moved into the requests */
    }
    free(taken);
    free(group);
    free(wids);
}

/* Test hook (common/fault.h): pg.batch_fault=N fails every Nth batch
 * transaction before its COMMIT (a statement error inside it), so that the
 * fallback below runs; pg.batch_fault=-1 turns the batch transaction off
 * (a transaction per kind, as the fallback). */
static long batch_fault(void)
{
    return (long)rb_fault_int("pg.batch_fault", 0);
}

/* The requests of the batch transaction's kinds back to as posted, after
 * it was rolled back: outputs cleared, claimed jobs let go. */
static void reset_wrapped(rb_pgreq **by[], const size_t cnt[])
{
    static const int kinds[] = {RB_PGR_PUSH, RB_PGR_ACK, RB_PGR_FAIL, RB_PGR_CLAIM};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (size_t i = 0; i < cnt[kinds[k]]; i++) {
            rb_pgreq *r = by[kinds[k]][i];
            r->rc = 0;
            memset(&r->err, 0, sizeof r->err);
            if (r->kind == RB_PGR_CLAIM && r->u.claim.got) {
                free(r->u.claim.job.jid);
                free(r->u.claim.job.json);
                memset(&r->u.claim.job, 0, sizeof r->u.claim.job);
                r->u.claim.got = false;
            }
        }
    }
}

/* The plain pushes, ACKs, FAILs and claims of a batch, in that order (so
 * claims see the pushes); in one transaction when wrapped. */
static void run_units(rb_pg *pg, rb_pgreq **by[], const size_t cnt[], batch_commits *bc,
                      claim_counts *cc)
{
    if (cnt[RB_PGR_PUSH])
        run_pushes(pg, by[RB_PGR_PUSH], cnt[RB_PGR_PUSH], bc);
    if (cnt[RB_PGR_ACK])
        run_acks(pg, by[RB_PGR_ACK], cnt[RB_PGR_ACK], bc);
    if (cnt[RB_PGR_FAIL])
        run_fails(pg, by[RB_PGR_FAIL], cnt[RB_PGR_FAIL], bc);
    if (cnt[RB_PGR_CLAIM])
        run_claims(pg, by[RB_PGR_CLAIM], cnt[RB_PGR_CLAIM], by[RB_PGR_PUSH], cnt[RB_PGR_PUSH],
                   cc);
}

/* Whether the batch's units are claims of one queue list: one rb_pg_claim. */
static bool one_claim(rb_pgreq **by[], const size_t cnt[])
{
    if (cnt[RB_PGR_PUSH] || cnt[RB_PGR_ACK] || cnt[RB_PGR_FAIL])
        return false;
    for (size_t i = 1; i < cnt[RB_PGR_CLAIM]; i++)
        if (!same_queues(by[RB_PGR_CLAIM][0], by[RB_PGR_CLAIM][i]))
            return false;
    return true;
}

/* Whether a claim of the batch is a hand-off of one of its pushes' jobs:
 * which claims then run a statement depends on the pushes' results
 * (take_handed), so the claims are sent after those are read. */
static bool hands_off(rb_pgreq **by[], const size_t cnt[])
{
    for (size_t i = 0; cnt[RB_PGR_PUSH] && i < cnt[RB_PGR_CLAIM]; i++)
        if (by[RB_PGR_CLAIM][i]->u.claim.hand_tok)
            return true;
    return false;
}

/* run_units in one transaction: one COMMIT makes every request of the
 * batch durable before any reply. A batch without FAILs and hand-offs is
 * one round trip: BEGIN, the statements of the pushes, ACKs and claims and
 * the COMMIT as one pipeline (run_units once to send them,
 * rb_pg_tx_pipe_commit, run_units again to take their results); what a
 * call does next (workflow jobs' and batch members' ACKs, expired jobs'
 * drops, a claim's later rounds, a throttled queue's) runs after the
 * COMMIT, in transactions of its own, as a request that came a moment
 * later would. Otherwise two: the first carries BEGIN and the statements
 * of the pushes and ACKs (rb_pg_tx_pipe_read; then the FAILs, which need a
 * savepoint each, and the ACKs' follow-ups run inside the transaction, and
 * a hand-off claim learns whether its push inserted its job claimed for
 * it); the second carries the claims' statements with the COMMIT right
 * behind them (rb_pg_tx_commit_send and _read, run_claims twice the same
 * way). Either way a claim's statement is the last before the COMMIT, so
 * that the rows it locked and did not take (SKIP LOCKED re-checks rows
 * another node changed meanwhile, and keeps them locked to the end of the
 * transaction) are released with no round trip in between. When the
 * transaction fails before its COMMIT (a statement error outside a unit
 * aborted it), it is rolled back and the batch runs again a transaction
 * per kind, so that one bad request fails alone; when the COMMIT itself
 * fails the outcome is unknown and every request fails with that error. */
static void run_wrapped(rb_pg *pg, rb_pgreq **by[], size_t cnt[], batch_commits *bc,
                        claim_counts *cc)
{
    size_t n_ops = 0;
    for (int k = 0; k < RB_PGR_KINDS; k++)
        if (k == RB_PGR_PUSH || k == RB_PGR_ACK || k == RB_PGR_FAIL || k == RB_PGR_CLAIM)
            n_ops += cnt[k];
    long fault = batch_fault();
    /* one request, plain pushes only (one multi-row statement, atomic on
     * its own: the push thread's batches), or claims of one queue list
     * only (one statement, a wake round's): its own transactions as
     * before (the hook wraps it too) */
    bool one_push = cnt[RB_PGR_PUSH] && n_ops == cnt[RB_PGR_PUSH];
    if (n_ops == 0 || fault < 0 ||
        (fault == 0 && (n_ops < 2 || one_push || one_claim(by, cnt)))) {
        run_units(pg, by, cnt, bc, cc);
        return;
    }
    rb_err err = {0};
    int64_t t0 = mono_us();
    if (rb_pg_tx_pipe_send(pg, &err)) { /* not connected: each kind reports it */
        run_units(pg, by, cnt, bc, cc);
        return;
    }
    batch_commits inner = {.n = 0}; /* the units' own timings do not count */
    claim_counts sent_cc = {{0}, {0}};
    size_t fails = cnt[RB_PGR_FAIL], claims = cnt[RB_PGR_CLAIM];
    static _Atomic long turns;
    int rc;
    if (!fails && !hands_off(by, cnt)) { /* nothing needs a result first: one round trip */
        run_units(pg, by, cnt, &inner, &sent_cc); /* sent: each call fails at once */
        reset_wrapped(by, cnt);
        if (fault > 0 && ++turns % fault == 0)
            rb_pg_tx_poison(pg);
        rc = rb_pg_tx_pipe_commit(pg, &err);
        if (!rc) { /* their results; what they do next on their own */
            commit_seen(bc, n_ops, t0);
            run_units(pg, by, cnt, &inner, cc);
            rb_pg_tx_taken(pg);
            return;
        }
        goto failed;
    }
    cnt[RB_PGR_FAIL] = 0; /* a FAIL's first statement needs its savepoint */
    cnt[RB_PGR_CLAIM] = 0; /* the claims go with the COMMIT */
    run_units(pg, by, cnt, &inner, cc); /* sent: each call fails at once */
    cnt[RB_PGR_FAIL] = fails;
    reset_wrapped(by, cnt);
    if (rb_pg_tx_pipe_read(pg, &err)) { /* rolled back: nothing applied */
        cnt[RB_PGR_CLAIM] = claims;
        run_units(pg, by, cnt, bc, cc);
        return;
    }
    run_units(pg, by, cnt, &inner, cc);
    if (fault > 0 && ++turns % fault == 0)
        rb_pg_tx_poison(pg);
    cnt[RB_PGR_CLAIM] = claims;
    rc = rb_pg_tx_commit_send(pg, &err);
    if (!rc) {
        size_t only[RB_PGR_KINDS] = {0}; /* the others keep their results */
        only[RB_PGR_CLAIM] = claims;
        if (claims) /* sent: each fails at once */
            run_claims(pg, by[RB_PGR_CLAIM], claims, by[RB_PGR_PUSH], cnt[RB_PGR_PUSH],
                       &sent_cc);
        reset_wrapped(by, only);
        rc = rb_pg_tx_commit_read(pg, &err);
    }
    if (!rc) {
        commit_seen(bc, n_ops, t0);
        if (claims) /* their results, and what they do next on their own */
            run_claims(pg, by[RB_PGR_CLAIM], claims, by[RB_PGR_PUSH], cnt[RB_PGR_PUSH], cc);
        rb_pg_tx_taken(pg);
        return;
    }
failed:
    if (rc == RB_ESTORE) { /* aborted before COMMIT: nothing applied */
        reset_wrapped(by, cnt);
        run_units(pg, by, cnt, bc, cc);
        return;
    }
    reset_wrapped(by, cnt); /* the COMMIT failed: unknown, every request says so */
    for (int k = 0; k < RB_PGR_KINDS; k++)
        if (k == RB_PGR_PUSH || k == RB_PGR_ACK || k == RB_PGR_FAIL || k == RB_PGR_CLAIM)
            fail_all(by[k], cnt[k], rc, &err);
}

/* Runs a batch: pushes that name parents or batches and the single calls
 * first, each in its own transactions; then the plain pushes, ACKs, FAILs
 * and claims in one (run_wrapped); then worker sightings. bc receives the
 * timings of the write transactions that committed. */
static void run_batch(rb_pg *pg, rb_pgreq *list, batch_commits *bc, claim_counts *cc)
{
    size_t n = 0;
    for (rb_pgreq *r = list; r; r = r->next)
        n++;
    rb_pgreq **by[RB_PGR_KINDS];
    size_t cnt[RB_PGR_KINDS] = {0};
    for (int k = 0; k < RB_PGR_KINDS; k++)
        by[k] = rb_xcalloc(n, sizeof **by);
    for (rb_pgreq *r = list; r; r = r->next)
        by[r->kind][cnt[r->kind]++] = r;
    if (cnt[RB_PGR_PUSH])
        cnt[RB_PGR_PUSH] = run_own_pushes(pg, by[RB_PGR_PUSH], cnt[RB_PGR_PUSH], bc);
    for (size_t i = 0; i < cnt[RB_PGR_CALL]; i++)
        by[RB_PGR_CALL][i]->call(pg, by[RB_PGR_CALL][i]);
    run_wrapped(pg, by, cnt, bc, cc);
    if (cnt[RB_PGR_SEEN])
        rb_pgworkers_run_seen(pg, by[RB_PGR_SEEN], cnt[RB_PGR_SEEN]);
    for (int k = 0; k < RB_PGR_KINDS; k++)
        free(by[k]);
}

/* One database thread, the first, runs every batch, and the other only
 * the slow requests: the requests that come while a batch runs wait for
 * it and go in the next one, so a commit carries what two threads'
 * commits carried, at about a third less database CPU per job and no less
 * throughput (bench/RESULTS.md, issue 29, session 12: two threads taking
 * batches in turn split the clients' requests between two transactions
 * however long the second waited for the first). With prefetch too
 * (session 13): the threads used to split the work there, pushes on the
 * first and the rest (ACKs carrying the next claims) on the second, so
 * that a PUSH never waited behind a batch of ACKs; that cost two commits
 * where one would do, more database CPU per job than no prefetch at all. */

/* Whether database thread self takes r into a batch: everything but the
 * slow requests (administration and inspection, which run alone:
 * take_slow), and only the first thread. mu held. */
static bool batch_takes(int self, const rb_pgreq *r)
{
    return !r->slow && self == 0;
}

/* Takes the requests of pm->todo that batch_takes (every one when all), in
 * order; the rest stay queued. mu held. */
static rb_pgreq *take_batch(rb_pgmode *pm, int self, bool all)
{
    rb_pgreq *mine = NULL, **mt = &mine, **pp = &pm->todo;
    while (*pp) {
        rb_pgreq *r = *pp;
        if (all || batch_takes(self, r)) {
            *pp = r->next;
            r->next = NULL;
            *mt = r;
            mt = &r->next;
        } else {
            pp = &r->next;
        }
    }
    pm->todo_tail = pp;
    return mine;
}

/* How many requests queued thread self would take into a batch. mu held. */
static size_t batch_count(const rb_pgmode *pm, int self)
{
    size_t n = 0;
    for (const rb_pgreq *r = pm->todo; r; r = r->next)
        n += batch_takes(self, r);
    return n;
}

static bool has_batch(const rb_pgmode *pm, int self)
{
    for (const rb_pgreq *r = pm->todo; r; r = r->next)
        if (batch_takes(self, r))
            return true;
    return false;
}

/* The collection window (as the single node's writer's, docs/design.md
 * "Group commit"): under load (the recent batches handed back carried two
 * requests or more, whose clients send their next ones as soon as they
 * are answered) a thread that finds fewer requests queued than the most a
 * recent batch carried (window_want, hand_back) waits for them, until
 * *until_us (monotonic us, set at the first wait: half the batches'
 * average time in the database, at most RB_PGMODE_WINDOW_MAX_US). One
 * batch then carries what two or three did: fewer statements and
 * transactions per job. True when it should wait (now); mu held. */
static bool window_open(const rb_pgmode *pm, int self, int64_t *until_us)
{
    if (pm->stop || pm->window_want < 2 || batch_count(pm, self) >= pm->window_want)
        return false;
    int64_t now = mono_us();
    if (!*until_us) {
        int64_t w = pm->window_avg_us / 2;
        *until_us = now + (w < RB_PGMODE_WINDOW_MAX_US ? w : RB_PGMODE_WINDOW_MAX_US);
    }
    return now < *until_us;
}

/* Waits on pm->cv (mu held) until a request is posted or until_us. */
static void wait_until(rb_pgmode *pm, int64_t until_us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t left = until_us - mono_us();
    if (left <= 0)
        return;
    ts.tv_sec += left / 1000000;
    ts.tv_nsec += (left % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&pm->cv, &pm->mu, &ts);
}

/* The first slow request queued, taken alone, when thread self may run
 * one: no other thread runs one, and not the first thread (the batches')
 * unless it is the only one; else
 * NULL. Marks pm->slow_busy. mu held. */
static rb_pgreq *take_slow(rb_pgmode *pm, int self)
{
    if (pm->slow_busy || (self == 0 && RB_PGMODE_THREADS > 1))
        return NULL;
    for (rb_pgreq **pp = &pm->todo; *pp; pp = &(*pp)->next) {
        rb_pgreq *r = *pp;
        if (!r->slow)
            continue;
        *pp = r->next;
        if (!*pp)
            pm->todo_tail = pp;
        r->next = NULL;
        pm->slow_busy = true;
        return r;
    }
    return NULL;
}

/* While an outage lasts, an idle database thread checks its connection
 * this often (mode_link: the outage ends once every member got through). */
#define DB_PROBE_MS 250

/* Waits on pm->cv (mu held) for a request, while this thread should probe
 * the link until *probe_at (monotonic us; set DB_PROBE_MS ahead at the
 * first such wait, kept across wake-ups: a thread that takes no batches,
 * the slow requests', is woken by every request posted
 * and must still probe); true when it should probe now. */
static bool wait_or_probe(rb_pgmode *pm, int self, int64_t *probe_at)
{
    if (!mode_link_probe_due_locked(pm, self)) {
        *probe_at = 0;
        pthread_cond_wait(&pm->cv, &pm->mu);
        return false;
    }
    if (!*probe_at)
        *probe_at = mono_us() + DB_PROBE_MS * 1000;
    wait_until(pm, *probe_at);
    return mono_us() >= *probe_at;
}

/* The next batch for database thread self (batch_takes), or a slow request
 * alone (*slow set: take_slow), or, once stopping, everything left; NULL
 * once stopping with nothing left, or with *probe set when it should check
 * the link first (nothing taken). */
static rb_pgreq *next_batch(rb_pgmode *pm, int self, bool *probe, bool *slow)
{
    rb_pgreq *list = NULL;
    int64_t window_until = 0, probe_at = 0, idle_since = 0;
    *probe = *slow = false;
    pthread_mutex_lock(&pm->mu);
    for (;;) {
        if (has_batch(pm, self)) {
            /* after a pause longer than any window the clients went
             * quiet: the next request goes without waiting for others */
            if (idle_since && mono_us() - idle_since > RB_PGMODE_WINDOW_MAX_US)
                pm->window_want = 0;
            idle_since = 0;
            if (window_open(pm, self, &window_until)) {
                wait_until(pm, window_until);
                continue;
            }
            list = take_batch(pm, self, false);
            break;
        }
        if ((list = take_slow(pm, self))) {
            *slow = true;
            break;
        }
        if (pm->stop) {
            list = take_batch(pm, self, true);
            break;
        }
        if (*probe)
            break;
        if (!idle_since)
            idle_since = mono_us();
        *probe = wait_or_probe(pm, self, &probe_at);
    }
    if (list)
        *probe = false;
    pthread_mutex_unlock(&pm->mu);
    return list;
}

/* Takes the requests of *list whose deadline has passed (they waited for
 * a thread stuck on an unreachable database) and fails them without a
 * round trip: nothing was tried, nothing applied. Returns them, in order;
 * *earliest receives the earliest deadline of those left. */
static rb_pgreq *take_late(rb_pgreq **list, int64_t *earliest)
{
    int64_t now = rb_mono_ms();
    rb_pgreq *late = NULL, **lt = &late, **pp = list;
    *earliest = 0;
    while (*pp) {
        rb_pgreq *r = *pp;
        /* a hand-off claim stays with its push (claiming as any claim
         * when the push was late) */
        if (r->deadline_ms > now || (r->kind == RB_PGR_CLAIM && r->u.claim.hand_tok)) {
            if (r->deadline_ms > now && (!*earliest || r->deadline_ms < *earliest))
                *earliest = r->deadline_ms;
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->next = NULL;
        r->rc = rb_err_set(&r->err, RB_ETIMEDOUT,
                           "no database thread free for %lld ms (the database is slow or "
                           "unreachable)", (long long)(rb_now_ms() - r->now));
        *lt = r;
        lt = &r->next;
    }
    return late;
}

/* A slow request (administration, inspection) alone, with PostgreSQL's
 * statement_timeout and lock_timeout set for its own deadline (they are
 * the work commands' otherwise). */
static void run_slow(rb_pg *pg, rb_pgreq *r, int64_t deadline_ms)
{
    rb_err err = {0};
    int64_t left = deadline_ms - rb_mono_ms();
    bool set = !rb_pg_statement_bound(pg, left > 0 ? left : 1, &err);
    r->call(pg, r);
    if (set && rb_pg_connected(pg)) /* a new connection has the work commands' */
        (void)rb_pg_statement_bound(pg, 0, &err);
}

/* The link as a batch showed it: a lost connection (the first request
 * that says so), else success when the connection is up. */
static void report_batch(rb_pgmode *pm, int self, rb_pg *pg, const rb_pgreq *list)
{
    for (const rb_pgreq *r = list; r; r = r->next) {
        if (rb_pg_lost(r->rc)) {
            mode_link_report(pm, self, r->rc, &r->err);
            return;
        }
    }
    if (rb_pg_connected(pg))
        mode_link_report(pm, self, 0, NULL);
}

/* Hands a finished list back to the loop, with what the thread saw. */
static void hand_back(rb_pgmode *pm, rb_pg *pg, rb_pgreq *list, const batch_commits *bc,
                      const claim_counts *cc, int64_t took_us)
{
    rb_pgreq **last = &list;
    size_t n = 0;
    while (*last) {
        last = &(*last)->next;
        n++;
    }
    pthread_mutex_lock(&pm->mu);
    if (took_us >= 0) { /* a batch (not the late ones, not a slow request) */
        /* the most requests a recent batch carried: a short batch (a
         * client's request a moment late) lowers it by one, not to its own
         * size, so that the next batches still wait for the others */
        pm->window_want = n >= pm->window_want ? n : pm->window_want - 1;
        pm->window_avg_us = pm->window_avg_us ? (pm->window_avg_us * 7 + took_us) / 8 : took_us;
    }
    *pm->done_tail = list;
    pm->done_tail = last;
    pm->seen.commits = mode_append(pm->seen.commits, &pm->seen.n_commits, bc->c, bc->n,
                                   sizeof *bc->c);
    for (int w = 0; w < 2; w++) {
        pm->seen.claims[w] += cc->n[w];
        pm->seen.claims_empty[w] += cc->empty[w];
    }
    mode_note_expired_locked(pm, pg); /* dropped by its claims */
    mode_signal_loop(pm);
    pthread_mutex_unlock(&pm->mu);
}

void *mode_db_thread(void *arg)
{
    mode_thread_arg ta = *(mode_thread_arg *)arg;
    free(arg);
    rb_pgmode *pm = ta.pm;
    int self = 0;
    while (self < RB_PGMODE_THREADS - 1 && pm->work[self] != ta.pg)
        self++;
    int64_t bound_ms = pm->eng->cfg->storage.request_timeout_s * 1000;
    for (;;) {
        bool probe, slow;
        rb_pgreq *list = next_batch(pm, self, &probe, &slow);
        if (!rb_pg_connected(ta.pg) && mode_link_other_back(pm, self))
            rb_pg_retry_now(ta.pg); /* a request right after an outage does not fail */
        if (probe) { /* an outage: is this connection through again? */
            rb_err err = {0};
            rb_pg_set_deadline(ta.pg, rb_mono_ms() + bound_ms);
            int rc = rb_pg_ping(ta.pg, &err);
            rb_pg_set_deadline(ta.pg, 0);
            mode_link_report(pm, self, rc, &err);
            continue;
        }
        if (!list)
            break; /* mode_stopping, and nothing left */
        batch_commits bc = {.n = 0};
        claim_counts cc = {{0}, {0}};
        int64_t earliest;
        rb_pgreq *late = take_late(&list, &earliest);
        if (late)
            hand_back(pm, ta.pg, late, &bc, &cc, -1);
        if (!list) { /* every request late: no batch runs */
            pthread_mutex_lock(&pm->mu);
            if (slow)
                pm->slow_busy = false;
            pthread_cond_broadcast(&pm->cv);
            pthread_mutex_unlock(&pm->mu);
        }
        if (!list)
            continue;
        /* every round trip of the batch ends by its first request's
         * deadline: past it the connection is dropped and the requests
         * answered (db_thread.c's callers see RB_ECONN or RB_EDOUBT) */
        rb_pg_set_deadline(ta.pg, earliest);
        int64_t t0 = mono_us();
        if (slow)
            run_slow(ta.pg, list, earliest);
        else
            run_batch(ta.pg, list, &bc, &cc);
        rb_pg_set_deadline(ta.pg, 0);
        report_batch(pm, self, ta.pg, list);
        hand_back(pm, ta.pg, list, &bc, &cc, slow ? -1 : mono_us() - t0);
        if (slow) { /* another may run now */
            pthread_mutex_lock(&pm->mu);
            pm->slow_busy = false;
            pthread_cond_broadcast(&pm->cv);
            pthread_mutex_unlock(&pm->mu);
        }
    }
    return NULL;
}
