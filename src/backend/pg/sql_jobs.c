/* The PostgreSQL engine's work commands: PUSH/PUSHB, FETCH (claims), ACK,
 * SNOOZE and EXTEND, each one statement (one round trip) over arrays, so the
 * requests that arrive together share it. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/depend.h"
#include "engine/group.h"
#include "engine/jobdef.h"
#include "engine/unique.h"
#include "common/log.h"

void rb_pg_job_from_json(json_t *job, int64_t now, int default_reserve_s, rb_pg_new_job *out,
                         char **text)
{
    memset(out, 0, sizeof *out);
    rb_job_fields nj; /* the engine's defaults */
    rb_job_fields_read(job, now, default_reserve_s, &nj);
    if (nj.made_created) { /* kept in the text */
        char ts[RB_TIME_STRLEN];
        json_object_set_new(job, "created_at",
                            json_string(rb_time_format_us(rb_now_us_from(now), ts)));
    }
    out->jid = nj.jid;
    out->queue = nj.queue;
    out->priority = nj.priority;
    out->reserve_s = nj.reserve_s;
    out->at_ms = nj.at_ms;
    const char *grp = NULL; /* the row's grp, given so that schema 16's trigger need
                               not read it from the text */
    out->grouped = !rb_group_of_job(job, &grp, NULL) && grp;
    out->grp = out->grouped ? grp : NULL;
    if (rb_unique_or_expiring(job)) { /* engine/unique.h's rules; validated at PUSH */
        rb_unique_spec u;
        if (!rb_unique_parse(job, &u, NULL) && u.on) {
            rb_unique_key(job, out->ukey);
            out->until_ms = rb_unique_until_ms(&u, now, out->at_ms);
            out->until_start = u.until_start;
        }
        out->expires_ms = rb_expiry_of(job);
    }
    *text = json_dumps(job, JSON_COMPACT);
    out->json = *text;
}

/* An optional integer as an array element: NULL when 0. */
static void arr_opt_int(rb_buf *b, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    sql_arr_str(b, v ? t : NULL);
}

int rb_pg_push(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
               rb_err *err)
{
    return rb_pg_push_hand(pg, jobs, n, now, status, NULL, err);
}

void rb_pg_set_node(rb_pg *pg, const char *node)
{
    free(pg->node);
    pg->node = node ? rb_xstrdup(node) : NULL;
}

int rb_pg_parked(rb_pg *pg, int64_t until_ms, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char until[24];
    snprintf(until, sizeof until, "%lld", (long long)until_ms);
    const char *params[2] = {pg->node ? pg->node : "", until};
    PGresult *r = sql_query(pg, until_ms ? "INSERT INTO rb_parked (node, until_ms)"
                                           " VALUES ($1, $2::bigint) ON CONFLICT (node)"
                                           " DO UPDATE SET until_ms = excluded.until_ms"
                                         : "DELETE FROM rb_parked WHERE node = $1",
                            until_ms ? 2 : 1, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

int rb_pg_push_hand(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                    char **handed, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    /* only a push holding a unique or expiring job takes rb_push_unique */
    bool unique = false;
    for (size_t i = 0; i < n && !unique; i++)
        unique = jobs[i].ukey[0] || jobs[i].expires_ms;
    int na = unique ? 10 : 9; /* plain: a[6], a[7] the hand-off's wid and mark, a[8]
                                 the groups */
    rb_buf a[10];
    for (int k = 0; k < 10; k++)
        rb_buf_init(&a[k]);
    for (int k = 0; k < na; k++)
        sql_arr_begin(&a[k]);
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) {
        status[i] = 0;
        if (handed)
            handed[i] = NULL;
        for (size_t k = 0; k < i && !status[i]; k++) /* a jid twice in one batch */
            if (!status[k] && !strcmp(jobs[k].jid, jobs[i].jid))
                status[i] = RB_EEXIST;
        if (status[i])
            continue;
        sql_arr_str(&a[0], jobs[i].jid);
        sql_arr_str(&a[1], jobs[i].queue);
        sql_arr_int(&a[2], jobs[i].priority);
        sql_arr_int(&a[3], jobs[i].at_ms);
        sql_arr_int(&a[4], jobs[i].reserve_s);
        sql_arr_str(&a[5], jobs[i].json);
        if (unique) {
            sql_arr_str(&a[6], jobs[i].ukey[0] ? jobs[i].ukey : NULL);
            sql_arr_int(&a[7], jobs[i].until_ms);
            sql_arr_str(&a[8], jobs[i].until_start ? "t" : "f");
            arr_opt_int(&a[9], jobs[i].expires_ms);
        } else {
            sql_arr_str(&a[6], jobs[i].hand ? jobs[i].hand_wid : NULL);
            sql_arr_str(&a[7], jobs[i].hand ? "t" : "f");
            sql_arr_str(&a[8], jobs[i].grp ? jobs[i].grp : "");
        }
        sent++;
    }
    for (int k = 0; k < na; k++)
        sql_arr_end(&a[k]);
    char nowtxt[24], shard[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(shard, sizeof shard, "%d", pg->shard);
    const char *params[12] = {a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data,
                              nowtxt,    a[6].data, a[7].data, a[8].data, a[9].data, shard};
    if (!unique) { /* $8, $9: the hand-off; $10: this node; $11: the groups */
        params[9] = pg->node;
        params[10] = a[8].data;
    }
    PGresult *r = !sent    ? NULL
                  : unique ? sql_run(pg, SQL_PUSH_UNIQUE, 12, params, err)
                           : sql_run(pg, SQL_PUSH, 11, params, err);
    for (int k = 0; k < 10; k++)
        rb_buf_release(&a[k]);
    if (!sent)
        return 0;
    if (!r)
        return err ? err->code : RB_ESTORE;
    /* One row per inserted jid (rb_push_unique: and per job refused
     * NOTUNIQUE, o_st 1), normally in request order (so the search below
     * starts where the last one matched); every other one was taken. */
    int n_ok = PQntuples(r), pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (status[i])
            continue;
        bool found = false;
        for (int t = 0; t < n_ok && !found; t++) {
            int k = (pos + t) % n_ok;
            if ((found = !strcmp(PQgetvalue(r, k, 0), jobs[i].jid))) {
                pos = k + 1;
                if (!unique && handed && jobs[i].hand && sql_int(r, k, 1) == RB_JOB_WORKING)
                    handed[i] = sql_json_with_enqueued(jobs[i].json, now);
                if (unique && sql_int(r, k, 1) == 1) {
                    status[i] = RB_ENOTUNIQUE;
                    rb_log(RB_LOG_INFO, "JID %s: " RB_NOTUNIQUE_CODE " " RB_NOTUNIQUE_MSG
                           " (held by %s)", jobs[i].jid, PQgetvalue(r, k, 2));
                }
            }
        }
        if (!found)
            status[i] = RB_EEXIST;
    }
    PQclear(r);
    return 0;
}

/* The rows of a claim statement: claimed jobs into c[*got..] (their
 * slots as given), expired ones into the array literal expired, the
 * times to claim again (rb_claim_groups' -2 rows) into *wake_at, the
 * groups served into the node's turn cursors. The value of a -4 row
 * (SQL_CLAIM1: the queue has groups; SQL_CLAIMG: it is rb_claim_groups'
 * to claim, 1 for limits in the round; SQL_CLAIML: it is SQL_CLAIMG's, 2),
 * -1 without one. */
static int claim_rows(rb_pg *pg, PGresult *r, const int *slots, int n, rb_pg_claimed *c,
                      int *got, rb_buf *expired, int *n_expired, int64_t *wake_at)
{
    int handed = -1;
    bool groups = PQnfields(r) >= 6;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t slot = sql_int(r, i, 0);
        if (slot == -4) {
            handed = (int)sql_int(r, i, 3);
        } else if (slot == -2) {
            if (sql_int(r, i, 3) < *wake_at)
                *wake_at = sql_int(r, i, 3);
        } else if (slot < 0 || slot >= n) { /* an expired job, left for the caller */
            sql_arr_str(expired, PQgetvalue(r, i, 1));
            (*n_expired)++;
        } else {
            rb_pg_claimed *one = &c[(*got)++];
            one->slot = slots[slot];
            one->jid = sql_dup(r, i, 1);
            one->json = sql_json_with_enqueued(PQgetvalue(r, i, 2), sql_int(r, i, 3));
            if (groups)
                sql_groups_served(pg, PQgetvalue(r, i, 4), PQgetvalue(r, i, 5));
        }
    }
    return handed;
}

/* One claim for the slots of wids, over queues qv (nq of them): for one
 * queue the statement sql_groups_claim_stmt chooses (the plain SQL_CLAIM1,
 * SQL_CLAIML or SQL_CLAIMG for groups in turn, or rb_claim_groups,
 * SQL_CLAIM), then the grouped one when SQL_CLAIM1 found groups, SQL_CLAIMG
 * when SQL_CLAIML handed the queue over and SQL_CLAIM when SQL_CLAIMG did
 * (their -4 rows); several queues: SQL_CLAIM. Rows as claim_rows. */
static int claim_once(rb_pg *pg, const char *const *qv, int nq, const char *const *wids,
                      const int *slots, int n, int64_t now, rb_pg_claimed *c, int *got,
                      rb_buf *expired, int *n_expired, int64_t *wake_at, rb_err *err)
{
    rb_buf w = RB_BUF_INIT;
    sql_arr_begin(&w);
    for (int i = 0; i < n; i++)
        sql_arr_str(&w, wids ? wids[slots[i]] : NULL);
    sql_arr_end(&w);
    char nowtxt[24];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    sql_stmt s = nq > 1 ? SQL_CLAIM : sql_groups_claim_stmt(pg, qv[0], now);
    if (pg->pipe == SQL_PIPE_TAKE && !pg->pipe_skip && pg->next_sent < pg->n_sent &&
        (pg->sent[pg->next_sent].s == SQL_CLAIM1 || pg->sent[pg->next_sent].s == SQL_CLAIMG ||
         pg->sent[pg->next_sent].s == SQL_CLAIML || pg->sent[pg->next_sent].s == SQL_CLAIM))
        s = pg->sent[pg->next_sent].s; /* the statement sent, whatever the turn table says since */
    int rc = 0;
    for (int pass = 0; pass < 4; pass++) {
        PGresult *r;
        if (s == SQL_CLAIM1) {
            const char *params[3] = {qv[0], w.data, nowtxt};
            r = sql_run(pg, SQL_CLAIM1, 3, params, err);
        } else {
            rb_buf q = RB_BUF_INIT, a[SQL_GROUP_ARGS];
            sql_arr_begin(&q);
            for (int k = 0; k < nq; k++)
                sql_arr_str(&q, qv[k]);
            sql_arr_end(&q);
            for (int k = 0; k < SQL_GROUP_ARGS; k++)
                rb_buf_init(&a[k]);
            sql_groups_args(pg, qv, nq, a);
            const char *params[10] = {q.data,    w.data,    nowtxt,    a[0].data, a[1].data,
                                      a[2].data, a[3].data, a[4].data, a[5].data, a[6].data};
            r = sql_run(pg, s, 10, params, err);
            rb_buf_release(&q);
            for (int k = 0; k < SQL_GROUP_ARGS; k++)
                rb_buf_release(&a[k]);
        }
        if (!r) {
            rc = err ? err->code : RB_ESTORE;
            break;
        }
        int handed = claim_rows(pg, r, slots, n, c, got, expired, n_expired, wake_at);
        PQclear(r);
        if (handed < 0 || s == SQL_CLAIM)
            break;
        if (s == SQL_CLAIM1) { /* the queue has groups (known from now on) */
            sql_groups_served(pg, qv[0], NULL);
            s = sql_groups_claim_stmt(pg, qv[0], now);
        } else { /* SQL_CLAIML: SQL_CLAIMG's; SQL_CLAIMG: rb_claim_groups' to claim */
            s = sql_groups_handed_over(pg, qv[0], s, handed == 1, now);
        }
        rb_pg_tx_pipe_skip(pg, true); /* the next statement outside a pipeline */
    }
    rb_buf_release(&w);
    return rc;
}

static int by_slot(const void *a, const void *b)
{
    return ((const rb_pg_claimed *)a)->slot - ((const rb_pg_claimed *)b)->slot;
}

/* Claims again at most this many times for slots expired jobs used up. */
#define CLAIM_ROUNDS 8

/* Frees the claims c[from..to) (a transaction that did not commit). */
static void drop_claims(rb_pg_claimed *c, int from, int to)
{
    for (int i = from; i < to; i++) {
        free(c[i].jid);
        free(c[i].json);
    }
}

/* Claims from queues qv (nq of them) for the slots of wids not filled
 * yet (filled[], n of them), into c[*got..]; under throttle t's lock and
 * for at most its free slots when t is not NULL (one queue, a unit:
 * sql_begin). The earliest time to claim again (a full queue's next free
 * slot, a group's or the queue's rate) into *wake_at. first: the claim's
 * first run of queues (its statement may be pipelined). */
static int claim_rounds(rb_pg *pg, const char *const *qv, int nq, const rb_throttle *t,
                        bool first, const char *const *wids, int n, bool *filled, int64_t now,
                        rb_pg_claimed *c, int *got, int64_t *wake_at, rb_err *err)
{
    int *slots = rb_xcalloc((size_t)n, sizeof *slots);
    int rc = 0;
    for (int round = 0; round < CLAIM_ROUNDS; round++) {
        int want = 0;
        for (int i = 0; i < n; i++)
            if (!filled[i])
                slots[want++] = i;
        if (!want)
            break;
        if (t) {
            int64_t held, frees;
            if ((rc = sql_begin(pg, err))) /* a savepoint inside a batch transaction */
                break;
            if ((rc = sql_throttle_lock(pg, t->queue, err)) ||
                (rc = sql_throttle_held(pg, t, now, &held, &frees, err))) {
                sql_rollback(pg);
                break;
            }
            if (held >= t->concurrency) { /* at its limit: as if empty */
                sql_rollback(pg); /* nothing written */
                if (frees < *wake_at)
                    *wake_at = frees;
                break;
            }
            if (want > t->concurrency - held)
                want = (int)(t->concurrency - held);
        }
        rb_buf expired = RB_BUF_INIT;
        sql_arr_begin(&expired);
        int n_expired = 0, before = *got;
        int64_t wake = INT64_MAX;
        /* in a pipeline only the first statement of a claim is sent: the
         * first run's first round when it is not throttled */
        rb_pg_tx_pipe_skip(pg, !(first && round == 0 && !t));
        rc = claim_once(pg, qv, nq, wids, slots, want, now, c, got, &expired, &n_expired, &wake,
                        err);
        rb_pg_tx_pipe_skip(pg, false);
        sql_arr_end(&expired);
        if (t && rc) {
            sql_rollback(pg);
        } else if (t && (rc = sql_commit(pg, err))) {
            /* not known to be claimed: their leases end them if they were */
            drop_claims(c, before, *got);
            *got = before;
            n_expired = 0;
        }
        if (!rc && wake < *wake_at)
            *wake_at = wake;
        /* the claims are committed; an error dropping the expired jobs is
         * logged and leaves them to the maintenance sweep */
        rb_err xerr = {0};
        if (!rc && n_expired &&
            (sql_expire_jobs(pg, expired.data, now, n_expired, NULL, &xerr) ||
             /* more than one round: many expired, dropped in bulk */
             (round > 0 && sql_expire_jobs(pg, NULL, now, 1000, NULL, &xerr)))) {
            rb_log(RB_LOG_WARN, "dropping expired jobs: %s", rb_err_msg(&xerr));
            n_expired = 0;
        }
        rb_buf_release(&expired);
        for (int i = before; i < *got; i++)
            filled[c[i].slot] = true;
        /* slots the expired jobs used up: claimed for again */
        if (rc || !n_expired)
            break;
    }
    free(slots);
    return rc;
}

/* The [throttles] concurrency of queue (claimed under its lock), or NULL. */
static const rb_throttle *slots_throttle(const rb_config *cfg, const char *queue)
{
    const rb_throttle *t = cfg->n_throttles ? rb_config_throttle(cfg, queue) : NULL;
    return t && t->concurrency > 0 ? t : NULL;
}

int rb_pg_claim(rb_pg *pg, const char *const *queues, int nq, const char *const *wids, int n,
                int64_t now, rb_pg_claimed **out, int *nout, int64_t *wake_at, rb_err *err)
{
    *out = NULL;
    *nout = 0;
    int64_t wake = INT64_MAX;
    if (wake_at)
        *wake_at = INT64_MAX;
    if (n <= 0 || nq <= 0)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const rb_config *cfg = sql_cfg(pg);
    rb_pg_claimed *c = rb_xcalloc((size_t)n, sizeof *c);
    bool *filled = rb_xcalloc((size_t)n, sizeof *filled);
    int got = 0;
    /* in the FETCH's order: a queue with a [throttles] concurrency alone,
     * each run of other queues in one statement (all of them when none
     * has one) */
    for (int i = 0, next; i < nq && got < n && !rc; i = next) {
        const rb_throttle *t = slots_throttle(cfg, queues[i]);
        next = i + 1;
        while (!t && next < nq && !slots_throttle(cfg, queues[next]))
            next++;
        rc = claim_rounds(pg, queues + i, next - i, t, i == 0, wids, n, filled, now, c, &got,
                          &wake, err);
    }
    free(filled);
    if (rc && got == 0) {
        free(c);
        return rc;
    }
    /* a later error: the jobs claimed so far are the answer */
    qsort(c, (size_t)got, sizeof *c, by_slot);
    *out = c;
    *nout = got;
    if (wake_at && got < n)
        *wake_at = wake;
    return 0;
}

void rb_pg_claimed_free(rb_pg_claimed *c, int n)
{
    for (int i = 0; c && i < n; i++) {
        free(c[i].jid);
        free(c[i].json);
    }
    free(c);
}

/* Copies field c of row r (NULL: "") into out, cut to outlen - 1 bytes. */
static void copy_field(const PGresult *r, int row, int c, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", PQgetisnull(r, row, c) ? "" : PQgetvalue(r, row, c));
}

/* The rows of an ACK statement (status, queue, job type; one per ref, in
 * order: n of them) into status[] and labels[] (NULL: none wanted) at the
 * positions at[] (NULL: 0..n-1); a row missing is a job missing. */
static void ack_rows(const PGresult *r, size_t n, const size_t *at, int *status,
                     rb_pg_labels *labels)
{
    size_t got = (size_t)PQntuples(r);
    for (size_t k = 0; k < n; k++) {
        size_t i = at ? at[k] : k;
        status[i] = k < got ? (int)sql_int(r, (int)k, 0) : RB_JOB_MISSING;
        if (status[i] == RB_PG_ACK_BATCH || status[i] == RB_PG_ACK_DEPS || !labels)
            continue; /* a batch's job or a workflow's: after */
        memset(&labels[i], 0, sizeof labels[i]);
        if (k < got && status[i] == RB_JOB_DONE) {
            copy_field(r, (int)k, 1, labels[i].queue, sizeof labels[i].queue);
            copy_field(r, (int)k, 2, labels[i].jobtype, sizeof labels[i].jobtype);
        }
    }
}

/* The ACKs SQL_ACK left to rb_ack_batch (status RB_PG_ACK_DEPS: workflow
 * jobs and parents, whose children it releases), in one call in the same
 * transaction, in order; their statuses replace those (a batch's job among
 * them comes back RB_PG_ACK_BATCH). */
static int ack_deps(rb_pg *pg, const rb_pg_ref *refs, size_t n, const char *nowtxt, int *status,
                    rb_pg_labels *labels, rb_err *err)
{
    size_t *at = rb_xcalloc(n, sizeof *at), k = 0;
    rb_buf j = RB_BUF_INIT, w = RB_BUF_INIT;
    sql_arr_begin(&j);
    sql_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        if (status[i] != RB_PG_ACK_DEPS)
            continue;
        at[k++] = i;
        sql_arr_str(&j, refs[i].jid);
        sql_arr_str(&w, refs[i].wid);
    }
    sql_arr_end(&j);
    sql_arr_end(&w);
    int rc = 0;
    if (k) {
        char shard[16], ttl[24];
        snprintf(shard, sizeof shard, "%d", pg->shard);
        snprintf(ttl, sizeof ttl, "%lld",
                 (long long)sql_cfg(pg)->workflows.succeeded_ttl_s * 1000);
        const char *params[5] = {j.data, w.data, shard, nowtxt, ttl};
        PGresult *r = sql_query(pg,
                                "SELECT status, queue, jobtype FROM rb_ack_batch($1::text[],"
                                " $2::text[], $3::int, $4::bigint, $5::bigint, false)",
                                5, params, err);
        if (r) {
            ack_rows(r, k, at, status, labels);
            PQclear(r);
        } else {
            rc = err && err->code ? err->code : RB_ESTORE;
        }
    }
    rb_buf_release(&j);
    rb_buf_release(&w);
    free(at);
    return rc;
}

int rb_pg_ack(rb_pg *pg, const rb_pg_ref *refs, size_t n, int *status, rb_pg_labels *labels,
              rb_err *err)
{
    if (n == 0)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    rb_buf j = RB_BUF_INIT, w = RB_BUF_INIT;
    sql_arr_begin(&j);
    sql_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        sql_arr_str(&j, refs[i].jid);
        sql_arr_str(&w, refs[i].wid);
    }
    sql_arr_end(&j);
    sql_arr_end(&w);
    char shard[16], nowtxt[24];
    snprintf(shard, sizeof shard, "%d", pg->shard);
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)rb_now_ms());
    /* one statement for the plain jobs; workflow jobs after it */
    const char *params[4] = {j.data, w.data, shard, nowtxt};
    PGresult *r = sql_run(pg, SQL_ACK, 4, params, err);
    rb_buf_release(&j);
    rb_buf_release(&w);
    if (!r)
        return err ? err->code : RB_ESTORE;
    ack_rows(r, n, NULL, status, labels);
    PQclear(r);
    if ((rc = ack_deps(pg, refs, n, nowtxt, status, labels, err)))
        return rc;
    /* batch members and callbacks: each in a transaction with its batch */
    int64_t now = rb_now_ms();
    for (size_t i = 0; i < n; i++) {
        if (status[i] != RB_PG_ACK_BATCH)
            continue;
        rb_pg_labels one;
        /* the plain ACKs above are committed: a database error (a deadlock
         * PostgreSQL broke, say) is tried again, then fails this ACK alone */
        for (int tries = 0; tries < 3; tries++)
            if ((rc = sql_batch_ack(pg, &refs[i], now, &status[i], &one, err)) != RB_ESTORE)
                break;
        if (rc) {
            status[i] = RB_PG_ACK_STORE_ERROR;
            continue;
        }
        if (labels)
            labels[i] = one;
    }
    return 0;
}

/* SNOOZE and EXTEND share their shape. */
static int held_update(rb_pg *pg, sql_stmt s, const rb_pg_ref *ref, int64_t seconds, int64_t now,
                       int *status, int *state, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char sec[24], nowtxt[24];
    snprintf(sec, sizeof sec, "%lld", (long long)seconds);
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    const char *params[4] = {ref->jid, ref->wid, sec, nowtxt};
    PGresult *r = sql_run(pg, s, 4, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *status = (int)sql_int(r, 0, 0);
    if (state)
        *state = (int)sql_int(r, 0, 1);
    PQclear(r);
    return 0;
}

int rb_pg_snooze(rb_pg *pg, const rb_pg_ref *ref, int64_t seconds, int64_t now, int *status,
                 int *state, rb_err *err)
{
    return held_update(pg, SQL_SNOOZE, ref, seconds, now, status, state, err);
}

int rb_pg_extend(rb_pg *pg, const rb_pg_ref *ref, int64_t seconds, int64_t now, int *status,
                 int *state, rb_err *err)
{
    return held_update(pg, SQL_EXTEND, ref, seconds, now, status, state, err);
}

/* --- the timer's work --- */

PGresult *sql_run_now_limit(rb_pg *pg, sql_stmt s, int64_t now, int limit, rb_err *err)
{
    if (sql_ensure(pg, err))
        return NULL;
    char nowtxt[24], lim[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {nowtxt, lim};
    return sql_run(pg, s, 2, params, err);
}

int rb_pg_promote(rb_pg *pg, int64_t now, int limit, int64_t *late_ms, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    PGresult *r = sql_run_now_limit(pg, SQL_PROMOTE, now, limit, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    size_t max = limit > 0 ? (size_t)limit : 0;
    int64_t *late = late_ms ? late_ms : rb_xcalloc(max ? max : 1, sizeof *late);
    size_t got = sql_parse_int_array(PQgetvalue(r, 0, 0), late, max);
    PQclear(r);
    if (late != late_ms)
        free(late);
    if (n)
        *n = (int)got;
    return 0;
}

int rb_pg_cleanup_dead(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    /* one transaction: the deleted workflow jobs' children are told (a
     * discard: they die, or count it as done when they ignore it) */
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    PGresult *r = sql_run_now_limit(pg, SQL_CLEANUP_DEAD, now, limit, err);
    if (!r) {
        rc = err && err->code ? err->code : RB_ESTORE;
        sql_rollback(pg);
        return rc;
    }
    rb_buf wf = RB_BUF_INIT;
    sql_arr_begin(&wf);
    int rows = PQntuples(r), n_wf = 0;
    for (int i = 0; i < rows; i++)
        if (!strcmp(PQgetvalue(r, i, 1), "t")) {
            sql_arr_str(&wf, PQgetvalue(r, i, 0));
            n_wf++;
        }
    sql_arr_end(&wf);
    PQclear(r);
    if ((n_wf && (rc = sql_dep_events(pg, wf.data, RB_DEP_PARENT_DISCARDED, now, err))) ||
        (rc = sql_exec(pg, "COMMIT", err)))
        sql_rollback(pg);
    else if (n)
        *n = rows;
    rb_buf_release(&wf);
    return rc;
}

int rb_pg_next_due(rb_pg *pg, int64_t *at_ms, int64_t *lease_ms, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    PGresult *r = sql_run(pg, SQL_NEXT_DUE, 0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *at_ms = PQgetisnull(r, 0, 0) ? INT64_MAX : sql_int(r, 0, 0);
    if (lease_ms)
        *lease_ms = PQgetisnull(r, 0, 1) ? INT64_MAX : sql_int(r, 0, 1);
    PQclear(r);
    return 0;
}
