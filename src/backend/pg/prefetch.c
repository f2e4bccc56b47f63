/* Distributed mode's prefetch ([storage] prefetch, docs/configuration.md):
 * a worker's ACK (or FAIL) carries a claim of its next job in the same
 * transaction, for the queue list of that worker's last FETCH, so the FETCH that
 * follows the ACK's reply is answered at once instead of after a round
 * trip and a COMMIT of its own. The job so claimed is an ordinary claim,
 * committed before anyone sees it: reserved for the worker's wid, its
 * attempt counted, its lease running. It is held here until a FETCH of
 * that wid with the same queue list takes it, for at most
 * RB_PGMODE_PREFETCH_HOLD_MS; then, or when a FETCH of the wid names other
 * queues, it is put back at once without consuming the attempt (fetch.c's
 * release, as for a job claimed for a connection that closed). When the
 * node stops, held jobs are put back before its connections close; a node
 * killed meanwhile leaves them reserved until their lease ends, as a FETCH
 * whose reply was lost. Keyed by wid, not by connection: clients with a
 * connection pool ACK and FETCH on different connections.
 *
 * Everything here runs on the loop thread: pm->pre and pm->last are the
 * loop's. */
#include "backend/pg/mode_impl.h"

#include "engine/engine.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "common/log.h"

static bool same_list(char *const *a, int na, char *const *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i], b[i]))
            return false;
    return true;
}

static char **copy_list(char *const *q, int n)
{
    char **c = rb_xcalloc(n ? (size_t)n : 1, sizeof *c);
    for (int i = 0; i < n; i++)
        c[i] = rb_xstrdup(q[i]);
    return c;
}

static void free_list(char **q, int n)
{
    for (int i = 0; i < n; i++)
        free(q[i]);
    free(q);
}

static const char *last_key(const void *e)
{
    return ((const mode_last *)e)->wid;
}

void mode_prefetch_init(rb_pgmode *pm)
{
    rb_table_init(&pm->last, offsetof(mode_last, hnext), last_key);
}

/* How long a claimed job waits for its worker's FETCH: RB_PGMODE_PREFETCH_HOLD_MS,
 * or the test's (fault pg.prefetch_hold_ms: a loaded test machine). */
static int64_t hold_ms(void)
{
    return rb_fault_int("pg.prefetch_hold_ms", RB_PGMODE_PREFETCH_HOLD_MS);
}

/* Whether held job p waited its hold out at now (wall clock ms): it goes
 * back rather than to its worker. */
static bool held_out(const mode_pre *p, int64_t now)
{
    return now - p->at_ms >= hold_ms();
}

/* The entry of wid in pm->last, or NULL. */
static mode_last *last_of(rb_pgmode *pm, const char *wid)
{
    return rb_table_get(&pm->last, wid);
}

bool mode_prefetch_on(const rb_eng *eng)
{
    return eng->cfg->storage.prefetch;
}

void mode_prefetch_seen(rb_eng *eng, const char *wid, char *const *queues, int nq)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!wid || !mode_prefetch_on(eng))
        return;
    mode_last *l = last_of(pm, wid);
    if (l && same_list(l->queues, l->nq, queues, nq))
        return;
    if (!l) {
        if (pm->last.size == RB_PGMODE_PREFETCH_WIDS)
            return; /* that many workers: the rest fetch as before */
        l = rb_xcalloc(1, sizeof *l);
        l->wid = rb_xstrdup(wid);
        rb_table_put(&pm->last, l);
    } else {
        free_list(l->queues, l->nq);
    }
    l->queues = copy_list(queues, nq);
    l->nq = nq;
}

/* Frees held job i's fields (its job's too unless taken) and removes it
 * from pm->pre (the last one takes its place). */
static void forget_held(rb_pgmode *pm, size_t i, bool taken)
{
    mode_pre *p = &pm->pre[i];
    free(p->wid);
    free_list(p->queues, p->nq);
    if (!taken) {
        free(p->job.jid);
        free(p->job.json);
    }
    pm->pre[i] = pm->pre[--pm->n_pre];
}

/* Puts back the held job i (fetch.c's release) and removes it; false
 * while the node stops (no request is posted any more: it stays held,
 * for mode_prefetch_release_all). */
static bool drop_held(rb_eng *eng, size_t i)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!eng->base || eng->stopping)
        return false;
    mode_release_claimed(eng, pm->pre[i].job.jid, pm->pre[i].wid);
    forget_held(pm, i, false);
    return true;
}

bool mode_prefetch_take(rb_eng *eng, const char *wid, char *const *queues, int nq,
                        char **jid, char **json)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!wid)
        return false;
    bool got = false;
    for (size_t i = 0; i < pm->n_pre;) {
        mode_pre *p = &pm->pre[i];
        if (strcmp(p->wid, wid)) {
            i++;
            continue;
        }
        if (!same_list(p->queues, p->nq, queues, nq)) {
            if (!drop_held(eng, i)) /* claimed for queues it no longer asks for */
                i++;
            continue;
        }
        if (got) { /* another of its fetchers takes it */
            i++;
            continue;
        }
        if (held_out(p, rb_now_ms())) { /* (a paused node): back */
            if (!drop_held(eng, i))
                i++;
            continue;
        }
        *jid = p->job.jid;
        *json = p->job.json;
        forget_held(pm, i, true);
        pm->prefetch_hits++;
        got = true;
    }
    return got;
}

/* Held too long: put back; the timer again for the oldest left. */
static void arm_expiry(rb_eng *eng);

static void on_expiry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_eng *eng = arg;
    rb_pgmode *pm = rb_pgm_of(eng);
    int64_t now = rb_now_ms();
    for (size_t i = 0; i < pm->n_pre;) {
        if (held_out(&pm->pre[i], now) && drop_held(eng, i))
            pm->prefetch_expired++;
        else
            i++;
    }
    arm_expiry(eng);
}

static void arm_expiry(rb_eng *eng)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!pm->n_pre || !eng->base || eng->stopping)
        return;
    if (!pm->pre_ev)
        pm->pre_ev = evtimer_new(eng->base, on_expiry, eng);
    if (evtimer_pending(pm->pre_ev, NULL))
        return;
    int64_t oldest = pm->pre[0].at_ms;
    for (size_t i = 1; i < pm->n_pre; i++)
        if (pm->pre[i].at_ms < oldest)
            oldest = pm->pre[i].at_ms;
    int64_t left = oldest + hold_ms() - rb_now_ms();
    if (left < 1)
        left = 1;
    struct timeval tv = {left / 1000, (left % 1000) * 1000};
    evtimer_add(pm->pre_ev, &tv);
}

/* The claim posted with an ACK is done: its job held for the wid. */
static void claim_done(rb_eng *eng, rb_pgreq *r)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    mode_fault_pause("pg.prefetch_pause_ms", !r->rc && r->u.claim.got);
    if (!r->rc && r->u.claim.got) {
        pm->pre = rb_xrealloc(pm->pre, (pm->n_pre + 1) * sizeof *pm->pre);
        mode_pre *p = &pm->pre[pm->n_pre++];
        p->wid = r->wid;
        r->wid = NULL;
        p->queues = r->u.claim.queues;
        p->nq = r->u.claim.nq;
        r->u.claim.queues = NULL;
        r->u.claim.nq = 0;
        p->job = r->u.claim.job;
        memset(&r->u.claim.job, 0, sizeof r->u.claim.job);
        p->at_ms = r->now; /* its lease began at or after this: a node paused
                              meanwhile holds it no longer than from here */
        arm_expiry(eng);
    }
    mode_req_free(r);
}

rb_pgreq *rb_pgmode_prefetch_claim(rb_eng *eng, const char *wid)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    if (!wid || !mode_prefetch_on(eng) || eng->stopping)
        return NULL;
    mode_last *l = last_of(pm, wid);
    if (!l)
        return NULL; /* no FETCH seen from it yet */
    size_t held = 0;
    for (size_t i = 0; i < pm->n_pre; i++)
        held += !strcmp(pm->pre[i].wid, wid);
    if (held >= RB_PGMODE_PREFETCH_PER_WID)
        return NULL;
    rb_pgreq *r = rb_pgreq_new(RB_PGR_CLAIM);
    r->u.claim.queues = copy_list(l->queues, l->nq);
    r->u.claim.nq = l->nq;
    r->u.claim.seq = pm->notify_seq;
    r->wid = rb_xstrdup(wid);
    r->done = claim_done;
    return r;
}

static void free_last(void *e, void *arg)
{
    (void)arg;
    mode_last *l = e;
    free(l->wid);
    free_list(l->queues, l->nq);
    free(l);
}

void mode_prefetch_release_all(rb_eng *eng, rb_pg *pg)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    while (pm->n_pre) {
        mode_pre *p = &pm->pre[pm->n_pre - 1];
        if (pg) {
            int status, state;
            rb_err err = {0};
            rb_pg_ref ref = {p->job.jid, p->wid};
            if (rb_pg_snooze(pg, &ref, 0, rb_now_ms(), &status, &state, &err))
                rb_log_kv(RB_LOG_WARN, RB_LOG_KV("jid", p->job.jid),
                          "job %s stays reserved until its lease ends: %s", p->job.jid,
                          rb_err_msg(&err));
        }
        forget_held(pm, pm->n_pre - 1, false);
    }
    free(pm->pre);
    pm->pre = NULL;
    pm->n_pre = 0;
    rb_table_each(&pm->last, free_last, NULL);
    rb_table_release(&pm->last);
    if (pm->pre_ev) {
        event_free(pm->pre_ev);
        pm->pre_ev = NULL;
    }
}

json_t *rb_pgmode_prefetch_json(rb_eng *eng)
{
    const rb_pgmode *pm = rb_pgm_of(eng);
    return json_pack("{s:b, s:I, s:I, s:I}", "enabled", mode_prefetch_on(eng), "held",
                     (json_int_t)pm->n_pre, "hits", (json_int_t)pm->prefetch_hits, "expired",
                     (json_int_t)pm->prefetch_expired);
}
