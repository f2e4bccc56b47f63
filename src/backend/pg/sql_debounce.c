/* The PostgreSQL engine's debounced jobs (docs/flow-control.md
 * "Debounce"; schema version 14: rb_debounce, rb_debounced, rb_jobs.dkey
 * and the triggers that free a key when its job is claimed, dies or is
 * deleted): a debounced push in its own transaction, merged by the node
 * with engine/debounce.h's rules; JOB's and TRACK GET's views of a pending
 * job and of an alias; the aliases' retention; INFO's figures. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "engine/group.h"

/* A statement's result, or NULL after setting rc from err. */
#define RUN(res, sql, n, params)                                                               \
    do {                                                                                       \
        if (!((res) = sql_query(pg, (sql), (n), (params), err))) {                            \
            rc = err ? err->code : RB_ESTORE;                                                  \
            goto out;                                                                          \
        }                                                                                      \
    } while (0)

static void i64(char *out, size_t n, int64_t v)
{
    snprintf(out, n, "%lld", (long long)v);
}

/* One debounced job of a push, inside the open transaction: merged into
 * its key's pending job, or pushed as the key's new pending job (jobs[i]'s
 * at_ms set to its run time either way). Lock order as a claim's and an
 * ACK's: the pending job's row, then (through the triggers) the key's row,
 * so a push and a claim of the same job never wait on each other in a
 * cycle: whichever locks the job row first wins, and the other sees the
 * outcome (merged, or fetched: a new job). */
static int push_one(rb_pg *pg, rb_pg_new_job *job, rb_pg_debounce *d, int64_t now, int *status,
                    rb_err *err)
{
    int rc = 0;
    PGresult *k = NULL, *j = NULL, *w = NULL;
    json_t *push = NULL;
    char nowtxt[24];
    i64(nowtxt, sizeof nowtxt, now);
    for (int attempt = 0; attempt < 4; attempt++) {
        PQclear(k);
        PQclear(j);
        k = j = NULL;
        const char *pk[1] = {d->hash};
        RUN(k, "SELECT jid, first_ms, merged FROM rb_debounce WHERE key = $1", 1, pk);
        if (PQntuples(k) == 0) { /* no pending job: this push is the key's new one */
            const char *pi[4] = {d->hash, job->jid, d->key, nowtxt};
            RUN(w, "INSERT INTO rb_debounce (key, jid, k, first_ms) VALUES ($1, $2, $3, $4::bigint)"
                   " ON CONFLICT (key) DO NOTHING",
                4, pi);
            bool took = atoi(PQcmdTuples(w)) == 1;
            PQclear(w);
            w = NULL;
            if (!took)
                continue; /* another push took it meanwhile: merge into its job */
            rb_debounce_spec s = {.on = true, .for_ms = d->for_ms, .max_ms = d->max_ms};
            job->at_ms = rb_debounce_run_at(&s, now, now);
            if ((rc = rb_pg_push(pg, job, 1, now, status, err)))
                goto out;
            const char *pd[2] = {job->jid, d->hash};
            if (*status) /* the jid is another job's: the key is not taken */
                RUN(w, "DELETE FROM rb_debounce WHERE key = $2 AND jid = $1", 2, pd);
            else
                RUN(w, "UPDATE rb_jobs SET dkey = $2 WHERE jid = $1", 2, pd);
            goto out;
        }
        const char *holder = PQgetvalue(k, 0, 0);
        const char *pj[2] = {holder, job->jid};
        RUN(j, "SELECT state, json, queue, (SELECT count(*) FROM rb_jobs o WHERE o.jid = $2"
               " AND o.jid <> $1) FROM rb_jobs WHERE jid = $1 FOR UPDATE",
            2, pj);
        const char *pk2[2] = {d->hash, holder};
        PQclear(w);
        RUN(w, "SELECT 1 FROM rb_debounce WHERE key = $1 AND jid = $2 FOR UPDATE", 2, pk2);
        bool still = PQntuples(w) == 1;
        PQclear(w);
        w = NULL;
        if (!still || PQntuples(j) == 0 || !rb_debounce_mergeable((int)sql_int(j, 0, 0)))
            continue; /* fetched or gone meanwhile (its key freed): look again */
        if (sql_int(j, 0, 3) > 0) { /* the push's jid is another job's */
            *status = RB_EEXIST;
            goto out;
        }
        push = json_loads(job->json, 0, NULL);
        char *merged = push ? rb_debounce_merge_text(PQgetvalue(j, 0, 1), push) : NULL;
        if (!merged) {
            rc = rb_err_set(err, RB_ESTORE, "job %s: its stored JSON cannot be read", holder);
            goto out;
        }
        rb_debounce_spec s = {.on = true, .for_ms = d->for_ms, .max_ms = d->max_ms};
        int64_t at = rb_debounce_run_at(&s, now, sql_int(k, 0, 1));
        char attxt[24], exptxt[24];
        i64(attxt, sizeof attxt, at);
        i64(exptxt, sizeof exptxt, job->expires_ms);
        const char *grp = NULL; /* the push was validated: a string or none */
        rb_group_of_job(push, &grp, NULL);
        const char *pu[6] = {holder, merged, attxt, nowtxt, job->expires_ms ? exptxt : NULL,
                             grp ? grp : ""};
        /* scheduled for its run time, or enqueued now (one already
         * enqueued keeps its place); in the last push's group. state is
         * always in the SET list, so rb_jobs_group_enqueued (AFTER UPDATE
         * OF state) fires for an enqueued job and makes its new group's
         * rb_groups row ready; the old group's row, if left ready with no
         * job, is marked idle by the next claim that finds it empty. */
        w = sql_query(pg,
                      "UPDATE rb_jobs SET json = $2, expires_ms = $5::bigint, grp = $6,"
                      " state = CASE WHEN $3::bigint > $4::bigint THEN 1 ELSE 2 END,"
                      " due_ms = CASE WHEN $3::bigint > $4::bigint THEN $3::bigint"
                      "  WHEN state = 2 THEN due_ms ELSE $4::bigint END,"
                      " enq_ms = CASE WHEN $3::bigint > $4::bigint THEN 0"
                      "  WHEN state = 2 THEN enq_ms ELSE $4::bigint END,"
                      " first_ms = CASE WHEN $3::bigint <= $4::bigint AND first_ms = 0"
                      "  THEN $4::bigint ELSE first_ms END,"
                      " seq = CASE WHEN $3::bigint <= $4::bigint AND state <> 2"
                      "  THEN nextval('rb_job_seq') ELSE seq END"
                      " WHERE jid = $1",
                      6, pu, err);
        free(merged);
        if (!w) {
            rc = err ? err->code : RB_ESTORE;
            goto out;
        }
        PQclear(w);
        w = NULL;
        if (at <= now) {
            const char *pq[1] = {PQgetvalue(j, 0, 2)};
            RUN(w, "SELECT pg_notify(rb_channel(), $1)", 1, pq);
            PQclear(w);
            w = NULL;
        }
        if (strcmp(holder, job->jid)) { /* the push's jid becomes an alias */
            char cap[24];
            i64(cap, sizeof cap, RB_DEBOUNCE_ALIASES);
            const char *pa[5] = {job->jid, holder, d->key, nowtxt, cap};
            RUN(w, "WITH a AS (INSERT INTO rb_debounced (jid, into_jid, k, merged_ms)"
                   " VALUES ($1, $2, $3, $4::bigint) ON CONFLICT (jid) DO UPDATE SET"
                   " into_jid = excluded.into_jid, k = excluded.k, merged_ms = excluded.merged_ms,"
                   " ended_ms = 0)"
                   " DELETE FROM rb_debounced o USING (SELECT jid FROM rb_debounced"
                   "  WHERE into_jid = $2 AND jid <> $1 ORDER BY merged_ms DESC, jid"
                   "  OFFSET $5::int - 1) x WHERE o.jid = x.jid",
                5, pa);
            PQclear(w);
            w = NULL;
        }
        char shard[16];
        snprintf(shard, sizeof shard, "%d", pg->shard);
        const char *pm[2] = {d->hash, shard};
        RUN(w, "WITH m AS (UPDATE rb_debounce SET merged = merged + 1 WHERE key = $1)"
               " SELECT rb_count('debounced', $2::int, 1)",
            2, pm);
        job->at_ms = at;
        d->merged = true;
        goto out;
    }
    rc = rb_err_set(err, RB_ESTORE, "debounce key '%s': too many concurrent changes", d->key);
out:
    json_decref(push);
    PQclear(w);
    PQclear(j);
    PQclear(k);
    return rc;
}

static int by_hash(const void *a, const void *b)
{
    const rb_pg_debounce *x = *(rb_pg_debounce *const *)a, *y = *(rb_pg_debounce *const *)b;
    return strcmp(x->hash, y->hash);
}

int sql_push_debounce_tx(rb_pg *pg, rb_pg_new_job *jobs, rb_pg_debounce *deb, size_t n,
                         int64_t now, int *status, rb_err *err)
{
    int rc = 0;
    /* the plain jobs of the push first, in one statement */
    rb_pg_new_job *plain = rb_xcalloc(n + 1, sizeof *plain);
    int *pst = rb_xcalloc(n + 1, sizeof *pst);
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        if (!deb[i].on)
            plain[np++] = jobs[i];
    if (np && !(rc = rb_pg_push(pg, plain, np, now, pst, err)))
        for (size_t i = 0, k = 0; i < n; i++)
            if (!deb[i].on)
                status[i] = pst[k++];
    /* the debounced ones in key order (two pushes never wait on each
     * other's keys in a cycle), each in push order within a key */
    rb_pg_debounce **order = rb_xcalloc(n + 1, sizeof *order);
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (deb[i].on) {
            deb[i].index = i;
            order[nd++] = &deb[i];
        }
    for (size_t a = 1; a < nd; a++) /* stable insertion sort: n is a PUSHB's */
        for (size_t b = a; b > 0 && by_hash(&order[b - 1], &order[b]) > 0; b--) {
            rb_pg_debounce *t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (size_t a = 0; a < nd && !rc; a++) {
        size_t i = order[a]->index;
        status[i] = 0; /* a jid taken (by a job, or an earlier one of the push): RB_EEXIST */
        rc = push_one(pg, &jobs[i], &deb[i], now, &status[i], err);
    }
    free(order);
    free(plain);
    free(pst);
    return rc;
}

int rb_pg_push_debounce(rb_pg *pg, rb_pg_new_job *jobs, rb_pg_debounce *deb, size_t n,
                        int64_t now, int *status, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_begin(pg, err)))
        return rc;
    if ((rc = sql_push_debounce_tx(pg, jobs, deb, n, now, status, err)) ||
        (rc = sql_commit(pg, err))) {
        sql_rollback(pg);
        for (size_t i = 0; i < n; i++)
            deb[i].merged = false;
    }
    return rc;
}

int rb_pg_debounce_view(rb_pg *pg, const char *jid, int64_t due_ms, rb_debounce_view **out,
                        rb_err *err)
{
    *out = NULL;
    const char *p[1] = {jid};
    PGresult *r = sql_query(pg,
                            "SELECT d.k, d.first_ms, d.merged, (SELECT a.jid FROM rb_debounced a"
                            " WHERE a.into_jid = d.jid ORDER BY a.merged_ms DESC, a.jid DESC"
                            " LIMIT 1) FROM rb_jobs j JOIN rb_debounce d ON d.key = j.dkey"
                            " AND d.jid = j.jid WHERE j.jid = $1",
                            1, p, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 1) {
        rb_debounce_view *v = rb_xcalloc(1, sizeof *v);
        v->key = sql_dup(r, 0, 0);
        v->first_ms = sql_int(r, 0, 1);
        v->merged = sql_int(r, 0, 2);
        v->runs_ms = due_ms;
        v->last_alias = sql_dup(r, 0, 3);
        *out = v;
    }
    PQclear(r);
    return 0;
}

int rb_pg_debounce_alias(rb_pg *pg, const char *jid, int64_t now, rb_debounce_alias *out,
                         bool *found, rb_err *err)
{
    *found = false;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char cut[24];
    i64(cut, sizeof cut, now - RB_DEBOUNCE_RETENTION_MS);
    const char *p[2] = {jid, cut};
    PGresult *r = sql_query(pg,
                            "SELECT into_jid, k, merged_ms FROM rb_debounced WHERE jid = $1"
                            " AND (ended_ms = 0 OR ended_ms > $2::bigint)",
                            2, p, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (PQntuples(r) == 1) {
        *out = (rb_debounce_alias){rb_xstrdup(jid), sql_dup(r, 0, 0), sql_dup(r, 0, 1),
                                   sql_int(r, 0, 2)};
        *found = true;
    }
    PQclear(r);
    return 0;
}

int rb_pg_debounce_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char cut[24], lim[16];
    i64(cut, sizeof cut, now - RB_DEBOUNCE_RETENTION_MS);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {cut, lim};
    PGresult *r = sql_query(pg,
                            "DELETE FROM rb_debounced d USING (SELECT jid FROM rb_debounced"
                            "  WHERE ended_ms > 0 AND ended_ms <= $1::bigint ORDER BY ended_ms"
                            "  LIMIT $2::int FOR UPDATE SKIP LOCKED) x WHERE d.jid = x.jid",
                            2, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    if (n)
        *n = atoi(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

int rb_pg_debounce_info(rb_pg *pg, int64_t *pending, int64_t *merged, rb_err *err)
{
    PGresult *r = sql_query(pg,
                            "SELECT (SELECT count(*) FROM rb_debounce),"
                            " coalesce((SELECT sum(value) FROM rb_counters"
                            " WHERE name = 'debounced'), 0)",
                            0, NULL, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *pending = sql_int(r, 0, 0);
    *merged = sql_int(r, 0, 1);
    PQclear(r);
    return 0;
}
