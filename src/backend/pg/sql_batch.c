/* Batches on the PostgreSQL engine (docs/workflows.md, "Batches"): BATCH
 * NEW, OPEN, COMMIT and STATUS, the push of members, and the events of
 * members and callback jobs, each inside the transaction that changes the
 * job. A batch's row is locked FOR UPDATE while its event is applied (by
 * engine/batch.c's rb_batch_apply, the same rules as the single node) and
 * its callbacks are inserted in that transaction: of two nodes, one fires a
 * callback, the other sees it fired. Rows are locked with their ancestors
 * in one statement in (depth DESC, bid) order, after any job rows. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/jobdef.h"

/* The deepest chain of parents followed (as backend/sqlite/batch.c). */
#define MAX_DEPTH 64

/* Batches loaded in the open transaction (locked, or read for OPEN and
 * STATUS), with their ancestors. */
typedef struct bset {
    rb_batch **b;
    int *depth;
    bool *dirty, *gone;
    size_t n;
} bset;

static void bset_release(bset *s)
{
    for (size_t i = 0; i < s->n; i++)
        rb_batch_free(s->b[i]);
    free(s->b);
    free(s->depth);
    free(s->dirty);
    free(s->gone);
    memset(s, 0, sizeof *s);
}

static int sql_fail_rc(const rb_err *err)
{
    return err && err->code ? err->code : RB_ESTORE;
}

/* Loads the batches of bids (an array literal) and their ancestors, locked
 * FOR UPDATE when lock, descendants first. */
static int bset_load(rb_pg *pg, const char *bids, bool lock, bset *s, rb_err *err)
{
    memset(s, 0, sizeof *s);
    const char *p[1] = {bids};
    PGresult *r = sql_query(pg,
                            lock ? "WITH RECURSIVE anc(bid) AS (SELECT unnest($1::text[])"
                                   " UNION SELECT p.parent_bid FROM rb_batches p JOIN anc"
                                   " ON p.bid = anc.bid WHERE p.parent_bid IS NOT NULL)"
                                   " SELECT b.body, b.depth FROM rb_batches b"
                                   " WHERE b.bid IN (SELECT bid FROM anc)"
                                   " ORDER BY b.depth DESC, b.bid FOR UPDATE OF b"
                                 : "WITH RECURSIVE anc(bid) AS (SELECT unnest($1::text[])"
                                   " UNION SELECT p.parent_bid FROM rb_batches p JOIN anc"
                                   " ON p.bid = anc.bid WHERE p.parent_bid IS NOT NULL)"
                                   " SELECT b.body, b.depth FROM rb_batches b"
                                   " WHERE b.bid IN (SELECT bid FROM anc)",
                            1, p, err);
    if (!r)
        return sql_fail_rc(err);
    size_t n = (size_t)PQntuples(r);
    s->b = rb_xcalloc(n + 1, sizeof *s->b);
    s->depth = rb_xcalloc(n + 1, sizeof *s->depth);
    s->dirty = rb_xcalloc(n + 1, sizeof *s->dirty);
    s->gone = rb_xcalloc(n + 1, sizeof *s->gone);
    for (size_t i = 0; i < n; i++) {
        rb_batch *b = rb_batch_load(PQgetvalue(r, (int)i, 0));
        if (!b)
            continue; /* unreadable: as if absent */
        s->depth[s->n] = (int)sql_int(r, (int)i, 1);
        s->b[s->n++] = b;
    }
    PQclear(r);
    return 0;
}

static rb_batch *bset_find(const bset *s, const char *bid, size_t *at)
{
    for (size_t i = 0; bid && i < s->n; i++)
        if (!s->gone[i] && !strcmp(s->b[i]->bid, bid)) {
            if (at)
                *at = i;
            return s->b[i];
        }
    return NULL;
}

static void mark(bset *s, const rb_batch *b)
{
    size_t at;
    if (bset_find(s, b->bid, &at))
        s->dirty[at] = true;
}

/* Whether an ancestor of b is still unfinished (b is then kept). */
static bool ancestor_unfinished(const bset *s, const rb_batch *b)
{
    for (int d = 0; b->parent_bid && d < MAX_DEPTH; d++) {
        b = bset_find(s, b->parent_bid, NULL);
        if (!b)
            return false;
        if (!b->finished_ms)
            return true;
    }
    return false;
}

/* The engine's rule (rb_batch_expired) over the batches locked in s. */
static bool expired(rb_pg *pg, const bset *s, const rb_batch *b, int64_t now)
{
    const rb_config *cfg = sql_cfg(pg);
    return rb_batch_expired(b, now, cfg->workflows.batch_uncommitted_ttl_s * 1000,
                            cfg->workflows.batch_retention_s * 1000,
                            b->committed && b->finished_ms && ancestor_unfinished(s, b));
}

static int exec_params(rb_pg *pg, const char *sql, int n, const char *const *p, rb_err *err)
{
    PGresult *r = sql_query(pg, sql, n, p, err);
    if (!r)
        return sql_fail_rc(err);
    PQclear(r);
    return 0;
}

/* Inserts b's callback k (rb_batch_apply moved it to "1"), marked as b's
 * callback, and counts it. A jid already taken gets a fresh one. */
static int enqueue_callback(rb_pg *pg, rb_batch *b, int k, int64_t now, rb_err *err)
{
    json_t *job = b->cb[k] ? json_loads(b->cb[k], 0, NULL) : NULL;
    if (!job)
        return rb_err_set(err, RB_ESTATE, "batch %s: unreadable callback", b->bid);
    const char *given = json_string_value(json_object_get(job, "jid"));
    char *jid = rb_xstrdup(given && *given ? given : "");
    int rc = 0;
    for (int tries = 0; tries < 4; tries++) {
        if (!*jid) {
            free(jid);
            jid = rb_jid_random(&pg->rng);
        }
        json_object_set_new(job, "jid", json_string(jid));
        rb_pg_new_job nj;
        char *text = NULL;
        rb_pg_job_from_json(job, now, (int)sql_cfg(pg)->server.reserve_for_s, &nj, &text);
        int st = 0;
        rc = rb_pg_push(pg, &nj, 1, now, &st, err);
        free(text);
        if (rc)
            break;
        if (st == 0)
            break;
        jid[0] = '\0'; /* taken: another */
        rc = RB_EEXIST;
    }
    json_decref(job);
    if (!rc) {
        char shard[16];
        snprintf(shard, sizeof shard, "%d", pg->shard);
        const char *p1[2] = {jid, b->bid};
        const char *p2[1] = {shard};
        if (!(rc = exec_params(pg, "UPDATE rb_jobs SET bid = $2, bcb = true WHERE jid = $1", 2,
                               p1, err)))
            rc = exec_params(pg, "SELECT rb_count('batch_callbacks', $1::int, 1)", 1, p2, err);
    } else if (rc == RB_EEXIST) {
        rc = rb_err_set(err, RB_ESTORE, "batch %s: no free jid for a callback", b->bid);
    }
    if (rc) {
        free(jid);
        return rc;
    }
    free(b->cb_jid[k]);
    b->cb_jid[k] = jid;
    return 0;
}

/* Applies ev to b, enqueues the callbacks it fires, marks b for saving, and
 * tells its parent (when loaded: the whole chain is). */
static int update(rb_pg *pg, bset *s, rb_batch *b, rb_batch_event ev, int64_t now, int depth,
                  rb_err *err)
{
    unsigned act = rb_batch_apply(b, ev, now);
    int rc = 0;
    for (int k = 0; k < RB_BATCH_CBS && !rc; k++)
        if (act & (1u << k))
            rc = enqueue_callback(pg, b, k, now, err);
    mark(s, b);
    if (rc || !b->parent_bid || depth >= MAX_DEPTH)
        return rc;
    rb_batch *p = bset_find(s, b->parent_bid, NULL);
    if (!p)
        return 0;
    if (act & RB_BATCH_TELL_COMPLETE)
        rc = update(pg, s, p, RB_BATCH_EV_CHILD_COMPLETE, now, depth + 1, err);
    if (!rc && (act & RB_BATCH_TELL_SUCCESS))
        rc = update(pg, s, p, RB_BATCH_EV_CHILD_SUCCESS, now, depth + 1, err);
    return rc;
}

/* Writes the changed rows back. */
static int bset_save(rb_pg *pg, bset *s, rb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < s->n && !rc; i++) {
        if (!s->dirty[i] || s->gone[i])
            continue;
        const rb_batch *b = s->b[i];
        char *body = rb_batch_dump(b);
        char fin[24];
        snprintf(fin, sizeof fin, "%lld", (long long)b->finished_ms);
        const char *p[4] = {b->bid, body, b->committed ? "t" : "f", fin};
        rc = exec_params(pg,
                         "UPDATE rb_batches SET body = $2, committed = $3::boolean,"
                         " finished_ms = $4::bigint WHERE bid = $1",
                         4, p, err);
        free(body);
        s->dirty[i] = false;
    }
    return rc;
}

static void arr_one(rb_buf *a, const char *s)
{
    rb_buf_init(a);
    sql_arr_begin(a);
    sql_arr_str(a, s);
    sql_arr_end(a);
}

/* bset_load of the one batch bid (with its family). */
static int bset_load_one(rb_pg *pg, const char *bid, bool lock, bset *s, rb_err *err)
{
    rb_buf a;
    arr_one(&a, bid);
    int rc = bset_load(pg, a.data, lock, s, err);
    rb_buf_release(&a);
    return rc;
}

/* --- events noted inside a transaction, applied before its COMMIT --- */

/* A callback job's ACK, resolved to its callback once the batch is
 * loaded. */
#define EV_CALLBACK_ACKED (-1)

void sql_batch_note(rb_pg *pg, const char *bid, int ev, const char *jid)
{
    if (pg->bev_n == pg->bev_cap) {
        pg->bev_cap = pg->bev_cap ? 2 * pg->bev_cap : 8;
        pg->bev = rb_xrealloc(pg->bev, pg->bev_cap * sizeof *pg->bev);
    }
    pg->bev[pg->bev_n++] = (sql_batch_ev){rb_xstrdup(bid), ev, jid ? rb_xstrdup(jid) : NULL};
}

void sql_batch_forget(rb_pg *pg)
{
    for (size_t i = 0; i < pg->bev_n; i++) {
        free(pg->bev[i].bid);
        free(pg->bev[i].jid);
    }
    pg->bev_n = 0;
}

int sql_batch_apply_noted(rb_pg *pg, int64_t now, rb_err *err)
{
    if (!pg->bev_n)
        return 0;
    rb_buf a = RB_BUF_INIT;
    sql_arr_begin(&a);
    for (size_t i = 0; i < pg->bev_n; i++)
        sql_arr_str(&a, pg->bev[i].bid);
    sql_arr_end(&a);
    bset s;
    int rc = bset_load(pg, a.data, true, &s, err);
    rb_buf_release(&a);
    static const rb_batch_event acked[RB_BATCH_CBS] = {
        RB_BATCH_EV_CB_COMPLETE_ACKED, RB_BATCH_EV_CB_SUCCESS_ACKED, RB_BATCH_EV_CB_DEATH_ACKED};
    for (size_t i = 0; i < pg->bev_n && !rc; i++) {
        rb_batch *b = bset_find(&s, pg->bev[i].bid, NULL);
        if (!b) /* expired meanwhile */
            continue;
        int ev = pg->bev[i].ev;
        if (ev == EV_CALLBACK_ACKED) {
            int k = rb_batch_callback_of(b, pg->bev[i].jid);
            if (k < 0)
                continue;
            ev = (int)acked[k];
        }
        rc = update(pg, &s, b, (rb_batch_event)ev, now, 0, err);
    }
    if (!rc)
        rc = bset_save(pg, &s, err);
    bset_release(&s);
    sql_batch_forget(pg);
    return rc;
}

void sql_batch_failed(rb_pg *pg, const char *bid, bool callback, bool first_failure, bool died)
{
    if (!bid || callback) /* a failed callback stays "1" and retries by its policy */
        return;
    if (first_failure)
        sql_batch_note(pg, bid, RB_BATCH_EV_FIRST_FAIL, NULL);
    if (died)
        sql_batch_note(pg, bid, RB_BATCH_EV_DIED, NULL);
}

/* --- ACK of members and callbacks --- */

int sql_batch_ack(rb_pg *pg, const rb_pg_ref *ref, int64_t now, int *status,
                  rb_pg_labels *labels, rb_err *err)
{
    int rc = sql_begin(pg, err);
    if (rc)
        return rc;
    const char *p1[1] = {ref->jid};
    PGresult *r = sql_query(pg,
                            "SELECT bid, bcb, history IS NOT NULL FROM rb_jobs WHERE jid = $1"
                            " FOR UPDATE",
                            1, p1, err);
    if (!r) {
        rc = sql_fail_rc(err);
        goto fail;
    }
    char *bid = PQntuples(r) ? sql_dup(r, 0, 0) : NULL;
    bool cb = PQntuples(r) && !strcmp(PQgetvalue(r, 0, 1), "t");
    bool failed = PQntuples(r) && !strcmp(PQgetvalue(r, 0, 2), "t");
    PQclear(r);
    rb_buf j, w;
    arr_one(&j, ref->jid);
    arr_one(&w, ref->wid);
    char shard[16], nowtxt[24], ttl[24];
    snprintf(shard, sizeof shard, "%d", pg->shard);
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(ttl, sizeof ttl, "%lld", (long long)sql_cfg(pg)->workflows.succeeded_ttl_s * 1000);
    const char *p2[5] = {j.data, w.data, shard, nowtxt, ttl};
    r = sql_query(pg,
                  "SELECT status, queue, jobtype FROM rb_ack_batch($1::text[], $2::text[],"
                  " $3::int, $4::bigint, $5::bigint, true)",
                  5, p2, err);
    rb_buf_release(&j);
    rb_buf_release(&w);
    if (!r) {
        free(bid);
        rc = sql_fail_rc(err);
        goto fail;
    }
    *status = PQntuples(r) ? (int)sql_int(r, 0, 0) : RB_JOB_MISSING;
    if (labels) {
        memset(labels, 0, sizeof *labels);
        if (*status == RB_JOB_DONE) {
            snprintf(labels->queue, sizeof labels->queue, "%s",
                     PQgetisnull(r, 0, 1) ? "" : PQgetvalue(r, 0, 1));
            snprintf(labels->jobtype, sizeof labels->jobtype, "%s",
                     PQgetisnull(r, 0, 2) ? "" : PQgetvalue(r, 0, 2));
        }
    }
    PQclear(r);
    if (*status == RB_JOB_DONE && bid)
        sql_batch_note(pg, bid,
                       cb ? EV_CALLBACK_ACKED
                          : (failed ? RB_BATCH_EV_ACKED_AFTER_FAIL : RB_BATCH_EV_ACKED),
                       ref->jid);
    free(bid);
    if ((rc = sql_batch_apply_noted(pg, now, err)) || (rc = sql_commit(pg, err)))
        goto fail;
    return 0;
fail:
    sql_rollback(pg);
    return rc;
}

/* --- PUSH of members --- */

int rb_pg_push_batch(rb_pg *pg, const rb_pg_new_job *jobs, const char *const *bids, size_t n,
                     bool deps, int64_t now, int *status, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    rb_buf a = RB_BUF_INIT;
    sql_arr_begin(&a);
    for (size_t i = 0; i < n; i++)
        if (bids[i])
            sql_arr_str(&a, bids[i]);
    sql_arr_end(&a);
    rb_pg_new_job *go = rb_xcalloc(n + 1, sizeof *go);
    size_t *at = rb_xcalloc(n + 1, sizeof *at);
    int *st = rb_xcalloc(n + 1, sizeof *st);
    size_t m = 0;
    bset s = {0};
    if ((rc = sql_exec(pg, "BEGIN", err)))
        goto out;
    if ((rc = bset_load(pg, a.data, true, &s, err)))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        status[i] = 0;
        rb_batch *b = bids[i] ? bset_find(&s, bids[i], NULL) : NULL;
        if (bids[i] && (!b || expired(pg, &s, b, now))) {
            status[i] = RB_ENOENT; /* no such batch */
            continue;
        }
        at[m] = i;
        go[m++] = jobs[i];
    }
    if (m && (rc = deps ? sql_push_deps_tx(pg, go, m, now, st, err)
                        : rb_pg_push(pg, go, m, now, st, err)))
        goto fail;
    rb_buf mj = RB_BUF_INIT, mb = RB_BUF_INIT;
    sql_arr_begin(&mj);
    sql_arr_begin(&mb);
    for (size_t k = 0; k < m && !rc; k++) {
        size_t i = at[k];
        status[i] = st[k];
        if (st[k] || !bids[i])
            continue;
        sql_arr_str(&mj, jobs[i].jid);
        sql_arr_str(&mb, bids[i]);
        rc = update(pg, &s, bset_find(&s, bids[i], NULL), RB_BATCH_EV_ADDED, now, 0, err);
    }
    sql_arr_end(&mj);
    sql_arr_end(&mb);
    const char *p[2] = {mj.data, mb.data};
    if (!rc)
        rc = exec_params(pg,
                         "UPDATE rb_jobs j SET bid = u.bid FROM unnest($1::text[], $2::text[])"
                         " AS u(jid, bid) WHERE j.jid = u.jid",
                         2, p, err);
    rb_buf_release(&mj);
    rb_buf_release(&mb);
    if (rc || (rc = bset_save(pg, &s, err)) || (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    goto out;
fail:
    sql_rollback(pg);
out:
    bset_release(&s);
    rb_buf_release(&a);
    free(go);
    free(at);
    free(st);
    return rc;
}

/* --- BATCH NEW, OPEN, COMMIT, STATUS --- */

static int no_such(rb_err *err, const char *bid)
{
    return rb_err_set(err, RB_ENOENT, "No such batch %s", bid);
}

/* "b-" and 14 letters or digits. */
static void make_bid(rb_pg *pg, char out[17])
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    out[0] = 'b';
    out[1] = '-';
    for (int i = 2; i < 16; i++)
        out[i] = alnum[rb_rng_next(&pg->rng) % (sizeof alnum - 1)];
    out[16] = '\0';
}

int rb_pg_batch_new(rb_pg *pg, const rb_batch_def *def, int64_t now, char **bid_out,
                    rb_err *err)
{
    *bid_out = NULL;
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    bset s = {0};
    rb_batch *p = NULL;
    int depth = 0;
    if (def->parent_bid) {
        rc = bset_load_one(pg, def->parent_bid, true, &s, err);
        if (rc)
            goto fail;
        size_t at = 0;
        p = bset_find(&s, def->parent_bid, &at);
        if (!p || expired(pg, &s, p, now)) {
            rc = no_such(err, def->parent_bid);
            goto fail;
        }
        depth = s.depth[at] + 1;
    }
    char bid[17];
    for (int tries = 0;; tries++) {
        make_bid(pg, bid);
        rb_batch *b = rb_batch_new(bid, def, rb_now_us_from(now));
        char *body = rb_batch_dump(b);
        char created[24], dep[16];
        snprintf(created, sizeof created, "%lld", (long long)now);
        snprintf(dep, sizeof dep, "%d", depth);
        const char *params[5] = {bid, def->parent_bid, dep, created, body};
        PGresult *r = sql_query(pg,
                                "INSERT INTO rb_batches (bid, parent_bid, depth, created_ms, body)"
                                " VALUES ($1, $2, $3::int, $4::bigint, $5)"
                                " ON CONFLICT (bid) DO NOTHING",
                                5, params, err);
        free(body);
        rb_batch_free(b);
        if (!r) {
            rc = sql_fail_rc(err);
            goto fail;
        }
        bool made = atoi(PQcmdTuples(r)) == 1;
        PQclear(r);
        if (made)
            break;
        if (tries > 8) {
            rc = rb_err_set(err, RB_ESTORE, "no free batch id");
            goto fail;
        }
    }
    if (p && ((rc = update(pg, &s, p, RB_BATCH_EV_CHILD_ADDED, now, 0, err)) ||
              (rc = bset_save(pg, &s, err))))
        goto fail;
    if ((rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    bset_release(&s);
    *bid_out = rb_xstrdup(bid);
    return 0;
fail:
    sql_rollback(pg);
    bset_release(&s);
    return rc;
}

int rb_pg_batch_commit(rb_pg *pg, const char *bid, int64_t now, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    bset s = {0};
    rc = bset_load_one(pg, bid, true, &s, err);
    if (rc)
        goto fail;
    rb_batch *b = bset_find(&s, bid, NULL);
    if (!b || expired(pg, &s, b, now)) {
        rc = no_such(err, bid);
        goto fail;
    }
    if ((rc = update(pg, &s, b, RB_BATCH_EV_COMMIT, now, 0, err)) ||
        (rc = bset_save(pg, &s, err)) || (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    bset_release(&s);
    return 0;
fail:
    sql_rollback(pg);
    bset_release(&s);
    return rc;
}

int rb_pg_batch_get(rb_pg *pg, const char *bid, int64_t now, rb_batch **out, rb_err *err)
{
    *out = NULL;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    bset s = {0};
    rc = bset_load_one(pg, bid, false, &s, err);
    if (rc)
        return rc;
    size_t at = 0;
    rb_batch *b = bset_find(&s, bid, &at);
    if (!b || expired(pg, &s, b, now)) {
        bset_release(&s);
        return no_such(err, bid);
    }
    s.b[at] = NULL; /* taken over */
    *out = b;
    bset_release(&s);
    return 0;
}

/* --- expiry, INFO --- */

/* One expired batch forgotten in its own transaction: its row deleted, its
 * parent no longer waits for it (backend/sqlite/batch.c's drop). *dropped
 * false when it was not (or no longer) expired. */
static int drop_one(rb_pg *pg, const char *bid, int64_t now, bool *dropped, rb_err *err)
{
    *dropped = false;
    int rc = sql_exec(pg, "BEGIN", err);
    if (rc)
        return rc;
    bset s = {0};
    rc = bset_load_one(pg, bid, true, &s, err);
    if (rc)
        goto fail;
    size_t at = 0;
    rb_batch *b = bset_find(&s, bid, &at);
    if (b && expired(pg, &s, b, now)) {
        const char *p1[1] = {bid};
        if ((rc = exec_params(pg, "DELETE FROM rb_batches WHERE bid = $1", 1, p1, err)))
            goto fail;
        s.gone[at] = true;
        *dropped = true;
        rb_batch *p = bset_find(&s, b->parent_bid, NULL);
        if (p) {
            rb_batch_child_gone(p, b);
            if ((rc = update(pg, &s, p, RB_BATCH_EV_NONE, now, 0, err)))
                goto fail;
        }
    }
    if ((rc = bset_save(pg, &s, err)) || (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    bset_release(&s);
    return 0;
fail:
    sql_rollback(pg);
    bset_release(&s);
    *dropped = false;
    return rc;
}

int rb_pg_batches_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char uncommitted[24], finished[24], lim[16];
    snprintf(uncommitted, sizeof uncommitted, "%lld",
             (long long)(now - sql_cfg(pg)->workflows.batch_uncommitted_ttl_s * 1000));
    snprintf(finished, sizeof finished, "%lld",
             (long long)(now - sql_cfg(pg)->workflows.batch_retention_s * 1000));
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[3] = {uncommitted, finished, lim};
    PGresult *r = sql_query(pg,
                            "SELECT b.bid FROM rb_batches b WHERE"
                            " ((NOT b.committed AND b.created_ms <= $1::bigint)"
                            "  OR (b.finished_ms > 0 AND b.finished_ms <= $2::bigint"
                            "      AND NOT EXISTS (SELECT 1 FROM rb_batches q"
                            "        WHERE q.bid = b.parent_bid AND q.finished_ms = 0)))"
                            " ORDER BY b.depth DESC, b.bid LIMIT $3::int",
                            3, p, err);
    if (!r)
        return sql_fail_rc(err);
    int rows = PQntuples(r), dropped = 0;
    for (int i = 0; i < rows && !rc; i++) {
        bool d = false;
        rc = drop_one(pg, PQgetvalue(r, i, 0), now, &d, err);
        dropped += d;
    }
    PQclear(r);
    if (n)
        *n = dropped;
    return rc;
}

int rb_pg_batch_info(rb_pg *pg, int64_t *open, int64_t *stored, int64_t *callbacks, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_query(pg,
                            "SELECT (SELECT count(*) FILTER (WHERE finished_ms = 0) FROM rb_batches),"
                            " (SELECT count(*) FROM rb_batches),"
                            " (SELECT coalesce(sum(value), 0) FROM rb_counters"
                            "  WHERE name = 'batch_callbacks')",
                            0, NULL, err);
    if (!r)
        return sql_fail_rc(err);
    *open = sql_int(r, 0, 0);
    *stored = sql_int(r, 0, 1);
    *callbacks = sql_int(r, 0, 2);
    PQclear(r);
    return 0;
}
