/* FETCH in distributed mode (request.h, rb_pgmode_fetch and
 * rb_pgmode_refetch): the first claim for the job engine's op, the claims
 * again for a connection parked in a waiting FETCH when rb_pgmode_wake
 * says its queues got a job (a notification, a local push, the poll
 * timer; one claim statement in flight per queue list), the null reply after
 * 2 s, and the release of a job claimed for a connection that closed
 * meanwhile. Loop thread only (the claims run on the database threads). A
 * parked connection owns its queue list (c->fetch_queues) while no claim
 * is in flight; a claim request owns it while one is. */
#include "backend/pg/mode_impl.h"

#include "engine/engine.h"
#include "engine/jobdef.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "common/log.h"

/* --- FETCH --- */

static void on_throttle_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng *eng = arg;
    rb_pgm_of(eng)->throttle_at = INT64_MAX;
    rb_pgmode_wake(eng, NULL, 0); /* a throttled queue's slot freed: another try */
}

/* A claim found a throttled queue full whose next slot frees by itself
 * (its timeout) at `at`: the parked FETCHes try again then, on
 * every node that saw it full (nobody announces it). */
static void arm_throttle_wake(rb_eng *eng, int64_t at)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (at <= 0 || at == INT64_MAX || !eng->base || eng->stopping)
        return;
    if (pm->throttle_at && pm->throttle_at <= at)
        return; /* an earlier wake is armed; it claims and arms again */
    if (!pm->throttle_ev)
        pm->throttle_ev = evtimer_new(eng->base, on_throttle_wake, eng);
    int64_t delay = at - rb_now_ms();
    /* just past it: the claim's clock (read on the database thread, later)
     * is then at or after it; a group's rate hold wakes a claim per emission
     * interval, so each ms here is a start lost per interval */
    delay = delay > 0 ? delay + 1 : 1;
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
    evtimer_add(pm->throttle_ev, &tv);
    pm->throttle_at = at;
}

static void fetch_done(rb_eng *eng, rb_pgreq *r);

/* --- wake rounds (rb_pgmode_wake) --- */

static bool same_list(const mode_round *w, char *const *queues, int n)
{
    if (w->nq != n)
        return false;
    for (int i = 0; i < n; i++)
        if (strcmp(w->queues[i], queues[i]))
            return false;
    return true;
}

static bool touches(const mode_round *w, const char *const *queues, size_t n)
{
    if (!queues)
        return true;
    for (int i = 0; i < w->nq; i++)
        for (size_t k = 0; k < n; k++)
            if (!strcmp(w->queues[i], queues[k]))
                return true;
    return false;
}

/* The round of c's queue list, made when make is set (else NULL if none). */
static mode_round *round_of(rb_pgmode *pm, char *const *queues, int n, bool make)
{
    for (mode_round *w = pm->rounds; w; w = w->next)
        if (same_list(w, queues, n))
            return w;
    if (!make)
        return NULL;
    mode_round *w = rb_xcalloc(1, sizeof *w);
    w->queues = rb_xcalloc((size_t)n, sizeof *w->queues);
    for (int i = 0; i < n; i++)
        w->queues[i] = rb_xstrdup(queues[i]);
    w->nq = n;
    w->next = pm->rounds;
    pm->rounds = w;
    return w;
}

static void round_free(rb_pgmode *pm, mode_round *w)
{
    for (mode_round **p = &pm->rounds; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    for (int i = 0; i < w->nq; i++)
        free(w->queues[i]);
    free(w->queues);
    free(w);
}

void mode_rounds_free(rb_pgmode *pm)
{
    while (pm->rounds)
        round_free(pm, pm->rounds);
}

void rb_pgmode_wake(rb_eng *eng, const char *const *queues, size_t n)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    for (mode_round *w = pm->rounds; w; w = w->next)
        if (w->out > 0 && touches(w, queues, n))
            w->again = true; /* rb_pgmode_refetch leaves its FETCHes parked */
    pm->wake_serial++;
    pm->holding = true;
    rb_eng_wake(eng, queues, n);
    pm->holding = false;
    mode_post_held(pm);
}

/* A parked FETCH's claim of round w is back (its connection answered or
 * parked again): when it was the last, a wake that came meanwhile makes
 * the list's parked FETCHes claim once more. */
static void round_back(rb_eng *eng, mode_round *w)
{
    if (--w->out > 0)
        return;
    if (w->again) {
        w->again = false;
        rb_pgmode_wake(eng, (const char *const *)w->queues, (size_t)w->nq);
    }
    if (w->out == 0 && !w->again)
        round_free(rb_pgm_of(eng), w);
}

/* A claim again for op, a FETCH parked waiting (its queue list
 * borrowed); not posted yet. */
static rb_pgreq *claim_for(rb_eng *eng, rb_eng_op *op)
{
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CLAIM);
    r->u.claim.queues = op->u.fetch.queues;
    r->u.claim.nq = op->u.fetch.n;
    r->u.claim.seq = rb_pgm_of(eng)->notify_seq;
    r->wid = op->u.fetch.wid ? rb_xstrdup(op->u.fetch.wid) : NULL;
    r->data = op;
    r->done = fetch_done;
    r->u.claim.round = round_of(rb_pgm_of(eng), op->u.fetch.queues, op->u.fetch.n, true);
    r->u.claim.round->out++;
    r->u.claim.round->serial = rb_pgm_of(eng)->wake_serial;
    return r;
}

rb_pgreq *rb_pgmode_hand_off(rb_eng *eng, rb_pgreq *r)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (r->u.push.deps || r->u.push.bids || r->u.push.meta_key || r->u.push.deb || !eng->base ||
        eng->stopping || !rb_eng_fetches_waiting(eng))
        return NULL;
    rb_pgreq *list = NULL, **tail = &list;
    for (size_t i = 0; i < r->u.push.n; i++) {
        rb_pg_new_job *j = &r->u.push.jobs[i];
        /* a grouped job waits its group's turn (and its limits): claimed */
        if (j->ukey[0] || j->expires_ms || j->grouped || j->at_ms > rb_now_ms() ||
            (eng->cfg->n_throttles && rb_config_throttle(eng->cfg, j->queue)))
            continue;
        rb_eng_op *op = rb_eng_waiter_take(eng, j->queue);
        if (!op)
            continue;
        if (!r->u.push.hand_tok) {
            r->u.push.hand_tok = rb_xcalloc(r->u.push.n, sizeof *r->u.push.hand_tok);
            r->u.push.hand_wids = rb_xcalloc(r->u.push.n, sizeof *r->u.push.hand_wids);
            r->u.push.handed = rb_xcalloc(r->u.push.n, sizeof *r->u.push.handed);
        }
        rb_pgreq *cl = claim_for(eng, op);
        cl->u.claim.hand_tok = r->u.push.hand_tok[i] = ++pm->hand_seq;
        r->u.push.hand_wids[i] = cl->wid ? rb_xstrdup(cl->wid) : NULL;
        j->hand = true;
        j->hand_wid = r->u.push.hand_wids[i];
        *tail = cl;
        tail = &cl->next;
    }
    return list;
}

/* --- this node in rb_parked: the other nodes' pushes notify it --- */

static void parked_call(rb_pg *pg, rb_pgreq *r)
{
    r->rc = rb_pg_parked(pg, r->now + RB_PGMODE_PARKED_MS, &r->err);
}

static void parked_done(rb_eng *eng, rb_pgreq *r)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    pm->parked_posting = false;
    if (!r->rc) {
        /* listed anew: a push that committed before it was seen notified
         * nobody, so the parked FETCHes claim once more */
        bool fresh = pm->parked_until <= r->now;
        pm->parked_until = r->now + RB_PGMODE_PARKED_MS;
        if (fresh && eng->base && !eng->stopping)
            rb_pgmode_wake(eng, NULL, 0);
    }
    mode_req_free(r);
}

/* A FETCH parks on this node: lists the node in rb_parked when its row
 * is gone or half used up. */
static void parked_note(rb_eng *eng)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (pm->parked_posting || !eng->base || eng->stopping ||
        pm->parked_until - rb_now_ms() > RB_PGMODE_PARKED_MS / 2)
        return;
    pm->parked_posting = true;
    rb_pgreq_post(eng, rb_pgreq_new_call(NULL, NULL, parked_call, parked_done));
}

void mode_parked_clear(rb_eng *eng, rb_pg *pg)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    rb_err err = {0};
    if (pm->parked_until > rb_now_ms() && pg)
        (void)rb_pg_parked(pg, 0, &err); /* else it lapses by itself */
    pm->parked_until = 0;
}

void rb_pgmode_fetch(rb_eng *eng, rb_eng_op *op)
{
    mode_prefetch_seen(eng, op->u.fetch.wid, op->u.fetch.queues, op->u.fetch.n);
    if (mode_prefetch_take(eng, op->u.fetch.wid, op->u.fetch.queues, op->u.fetch.n,
                           &op->u.fetch.jid, &op->u.fetch.job)) {
        op->applied = RB_ENG_APPLIED; /* claimed and committed with its ACK */
        rb_eng_complete(eng, op);
        return;
    }
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CLAIM);
    r->u.claim.queues = op->u.fetch.queues; /* borrowed: op_claim_done hands them back */
    r->u.claim.nq = op->u.fetch.n;
    r->u.claim.seq = rb_pgm_of(eng)->notify_seq;
    r->wid = op->u.fetch.wid ? rb_xstrdup(op->u.fetch.wid) : NULL;
    r->data = op;
    r->done = fetch_done;
    rb_pgreq_post(eng, r);
}

static void release_call(rb_pg *pg, rb_pgreq *r)
{
    int status, state;
    rb_pg_ref ref = {r->jid, r->wid};
    r->rc = rb_pg_snooze(pg, &ref, 0, rb_now_ms(), &status, &state, &r->err);
}

static void release_done(rb_eng *eng, rb_pgreq *r)
{
    (void)eng;
    if (r->rc)
        rb_log_kv(RB_LOG_WARN, RB_LOG_KV("jid", r->jid),
                  "job %s stays reserved until its lease ends: %s", r->jid, rb_err_msg(&r->err));
    mode_req_free(r);
}

void mode_release_claimed(rb_eng *eng, const char *jid, const char *wid)
{
    if (!eng->base || eng->stopping)
        return; /* its lease ends it */
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CALL);
    r->jid = rb_xstrdup(jid);
    r->wid = wid ? rb_xstrdup(wid) : NULL;
    r->call = release_call;
    r->done = release_done;
    rb_pgreq_post(eng, r);
}

/* A job was claimed for a FETCH nobody waits for any more (closed, or
 * shutting down): put it back at once, without consuming the attempt. */
static void release_job(rb_eng *eng, rb_pgreq *claim)
{
    rb_log(RB_LOG_DEBUG, "job %s claimed for a closed connection: released", claim->u.claim.job.jid);
    mode_release_claimed(eng, claim->u.claim.job.jid, claim->wid);
}

/* Whether the job claim r got may have outlived its lease before its
 * reply: the node was paused (SIGSTOP, a stalled VM or disk) between the
 * claim's COMMIT and now. The lease began at or after r->now (the claim,
 * or the push that handed the job, read the clock after the request was
 * posted) and lasts the job's reserve_for, a second at the least; once it
 * may have ended, any node's reaper may have taken the job and another
 * worker run and acknowledged it, so the job is not handed out (its
 * release, by holder, puts it back if nobody took it). */
static bool claim_outlived(rb_eng *eng, const rb_pgreq *r)
{
    int64_t now = rb_now_ms(), late = now - r->now;
    if (late < 1000 || !r->u.claim.job.json)
        return false;
    json_t *job = json_loads(r->u.claim.job.json, 0, NULL);
    if (!job)
        return false;
    rb_job_fields f;
    rb_job_fields_read(job, now, (int)eng->cfg->server.reserve_for_s, &f);
    json_decref(job);
    if (late < (int64_t)f.reserve_s * 1000)
        return false;
    rb_log(RB_LOG_WARN,
           "job %s: claimed %lld ms ago, longer than its %d s lease (was this node paused?): "
           "not handed out, left to its lease",
           r->u.claim.job.jid, (long long)late, f.reserve_s);
    return true;
}

/* A claim's job to drop rather than hand out (fetch_wanted false: no
 * FETCH waits for it; or claim_outlived): released. Whether it was. */
static bool claim_dropped(rb_eng *eng, rb_pgreq *r, bool wanted)
{
    if (wanted && !claim_outlived(eng, r))
        return false;
    release_job(eng, r);
    return true;
}

/* The first claim of a FETCH (the job engine's op in r->data) is done:
 * its results to the op, which replies or parks the connection; a wake-up
 * that went by meanwhile claims again for it. */
static void op_claim_done(rb_eng *eng, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->u.claim.queues = NULL; /* the op's */
    r->u.claim.nq = 0;
    if (r->rc) {
        rb_pgmode_storage_error(eng, r); /* logs; r has no connection to answer */
        op->rc = r->rc;
        op->err = r->err;
        op->applied = r->rc == RB_EDOUBT ? RB_ENG_UNKNOWN : RB_ENG_NOT_APPLIED;
        rb_pgmode_doubt_text(op, r->rc);
        mode_req_free(r);
        rb_eng_complete(eng, op);
        return;
    }
    op->applied = RB_ENG_APPLIED;
    bool got = r->u.claim.got, wanted = rb_eng_fetch_wanted(op), stale = false;
    if (got && claim_dropped(eng, r, wanted)) {
        stale = wanted; /* the FETCH waits on: it claims again */
        got = false;
    } else if (got) {
        op->u.fetch.jid = r->u.claim.job.jid;
        op->u.fetch.job = r->u.claim.job.json;
        r->u.claim.job.jid = r->u.claim.job.json = NULL;
    }
    if (!r->u.claim.got || stale) {
        arm_throttle_wake(eng, r->u.claim.wake_at);
        parked_note(eng); /* the op parks */
    }
    bool missed = stale || r->u.claim.seq != rb_pgm_of(eng)->notify_seq; /* a wake-up went by */
    mode_req_free(r);
    rb_eng_complete(eng, op);
    if (!got && missed)
        rb_pgmode_wake(eng, NULL, 0);
}

/* A parked FETCH's claim is done: the job to its op (which the engine
 * ends), or the op stays parked; a job nobody waits for any more goes
 * back. A wake that went by meanwhile was noted for the next round
 * (round_back). */
static void parked_claim_done(rb_eng *eng, rb_pgreq *r)
{
    rb_eng_op *op = r->data;
    r->u.claim.queues = NULL; /* the op's */
    r->u.claim.nq = 0;
    bool parks = false, stale = false, wanted = rb_eng_fetch_wanted(op);
    if (r->rc) /* logged; the op stays parked: the next wake claims again */
        rb_pgmode_storage_error(eng, r);
    else if (r->u.claim.got && claim_dropped(eng, r, wanted))
        parks = stale = wanted; /* the FETCH waits on: it claims again */
    else if (r->u.claim.got) {
        op->u.fetch.jid = r->u.claim.job.jid;
        op->u.fetch.job = r->u.claim.job.json;
        r->u.claim.job.jid = r->u.claim.job.json = NULL;
    } else {
        arm_throttle_wake(eng, r->u.claim.wake_at);
        parks = true;
    }
    mode_req_free(r);
    rb_eng_fetch_tried(eng, op);
    if (parks)
        parked_note(eng);
    if (stale)
        rb_pgmode_wake(eng, NULL, 0);
}

/* The fault named (pg.claim_pause_ms, pg.prefetch_pause_ms; common/fault.h):
 * the loop thread stops that long, once per fault and process, when the
 * claim got a job, as a paused node does between its COMMIT and its reply. */
void mode_fault_pause(const char *name, bool got)
{
    static bool paused[2]; /* the loop thread's: the faults spent */
    bool *spent = &paused[strcmp(name, "pg.claim_pause_ms") != 0];
    long long ms = got && !*spent ? rb_fault_int(name, 0) : 0;
    if (ms <= 0)
        return;
    *spent = true;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A claim is done: a FETCH's first (op_claim_done), or a parked FETCH's. */
static void fetch_done(rb_eng *eng, rb_pgreq *r)
{
    mode_fault_pause("pg.claim_pause_ms", r->u.claim.got);
    mode_round *w = r->u.claim.round;
    if (!w) {
        op_claim_done(eng, r);
        return;
    }
    parked_claim_done(eng, r);
    round_back(eng, w);
}

rb_eng_try rb_pgmode_refetch(rb_eng *eng, rb_eng_op *op)
{
    if (eng->stopping && !eng->base)
        return RB_ENG_TRY_NONE;
    rb_pgmode *pm = rb_pgm_of(eng);
    mode_round *w = round_of(pm, op->u.fetch.queues, op->u.fetch.n, false);
    /* its list's claims of an earlier wake are in flight: w->again claims
     * after them; those of this wake (every parked FETCH of the list) are
     * posted together */
    if (w && w->out > 0 && w->serial != pm->wake_serial)
        return RB_ENG_TRY_MISS;
    rb_pgreq_post(eng, claim_for(eng, op));
    return RB_ENG_TRY_STARTED;
}
