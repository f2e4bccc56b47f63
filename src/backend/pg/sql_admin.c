/* Administration on the PostgreSQL engine: MUTATE, QUEUE PAUSE/RESUME/
 * REMOVE/LATENCY, FLUSH. These are operator commands: they may scan a
 * state's rows, they are not on the hot path. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/depend.h"

int rb_pg_mutate(rb_pg *pg, const rb_mutation *m, int64_t now, size_t *changed, rb_err *err)
{
    if (changed)
        *changed = 0;
    int rc = rb_mutation_check(m, err);
    if (rc)
        return rc;
    rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    bool clear = !strcmp(m->cmd, "clear");
    char target[8];
    snprintf(target, sizeof target, "%d", m->target);
    rb_buf jids = RB_BUF_INIT, chosen = RB_BUF_INIT, moved = RB_BUF_INIT;
    const char *sel[2] = {target, NULL};
    if (!clear && m->jids) { /* an empty list selects nothing */
        sql_arr_begin(&jids);
        for (size_t i = 0; i < m->n_jids; i++)
            sql_arr_str(&jids, m->jids[i]);
        sql_arr_end(&jids);
        sel[1] = jids.data;
    }
    size_t n = 0;
    if ((rc = sql_exec(pg, "BEGIN", err)))
        goto out;
    PGresult *r = sql_run(pg, SQL_MUTATE_SELECT, 2, sel, err);
    if (!r) {
        rc = err ? err->code : RB_ESTORE;
        goto fail;
    }
    /* a dead job naming parents that hold it goes back under them instead
     * (docs/workflows.md): left out of the requeue, its children told */
    bool retry = !strcmp(m->cmd, "requeue") && m->target == RB_JOB_DEAD;
    sql_arr_begin(&chosen);
    sql_arr_begin(&moved);
    for (int i = 0; i < PQntuples(r); i++) {
        if (clear || rb_mutation_matches(m, PQgetvalue(r, i, 1))) {
            bool held = false;
            if (retry && (rc = sql_dep_retry(pg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), now,
                                             &held, err))) {
                PQclear(r);
                goto fail;
            }
            sql_arr_str(&chosen, PQgetvalue(r, i, 0));
            if (!held)
                sql_arr_str(&moved, PQgetvalue(r, i, 0));
            n++;
        }
    }
    sql_arr_end(&chosen);
    sql_arr_end(&moved);
    PQclear(r);
    char nowtxt[24], ret[24];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(ret, sizeof ret, "%lld", (long long)(sql_cfg(pg)->server.dead_retention_s * 1000));
    const char *apply[4] = {m->cmd, moved.data, nowtxt, ret};
    if (n > 0) {
        r = sql_run(pg, SQL_MUTATE_APPLY, 4, apply, err);
        if (!r) {
            rc = err ? err->code : RB_ESTORE;
            goto fail;
        }
        PQclear(r);
        /* the children of the changed jobs (docs/workflows.md) */
        int ev = -1;
        if (!strcmp(m->cmd, "discard") || clear)
            ev = RB_DEP_PARENT_DISCARDED;
        else if (!strcmp(m->cmd, "kill") && m->target != RB_JOB_DEAD)
            ev = RB_DEP_PARENT_DIED;
        else if (!strcmp(m->cmd, "requeue") && m->target == RB_JOB_DEAD)
            ev = RB_DEP_PARENT_REQUEUED;
        if (ev >= 0 && (rc = sql_dep_events(pg, chosen.data, ev, now, err)))
            goto fail;
    }
    if ((rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    if (changed)
        *changed = n;
    goto out;
fail:
    sql_rollback(pg);
out:
    rb_buf_release(&jids);
    rb_buf_release(&chosen);
    rb_buf_release(&moved);
    return rc;
}

/* The names as an array literal; "*" expands in SQL (see callers). */
static void names_array(rb_buf *b, const char *const *names, int n, bool *all)
{
    *all = false;
    sql_arr_begin(b);
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "*"))
            *all = true;
        else
            sql_arr_str(b, names[i]);
    }
    sql_arr_end(b);
}

int rb_pg_queue_pause(rb_pg *pg, const char *const *names, int n, bool paused, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    bool all;
    rb_buf a = RB_BUF_INIT;
    names_array(&a, names, n, &all);
    const char *params[2] = {a.data, all ? "t" : "f"};
    /* Every known queue for "*": the registry (every queue ever pushed to
     * or paused). Rows are locked in name order (the lock order). A pause
     * records a queue not known yet; a resume leaves it unknown, as a
     * single node does. */
    PGresult *r = sql_query(pg,
                            paused ? "INSERT INTO rb_queues (name, paused)"
                                    " SELECT q, true FROM (SELECT unnest($1::text[]) AS q"
                                    "   UNION SELECT name FROM rb_queues WHERE $2::boolean) s"
                                    " ORDER BY q"
                                    " ON CONFLICT (name) DO UPDATE SET paused = true"
                                  : "UPDATE rb_queues u SET paused = false"
                                    " FROM (SELECT name FROM rb_queues"
                                    "   WHERE paused AND ($2::boolean OR name = ANY($1::text[]))"
                                    "   ORDER BY name FOR UPDATE) s"
                                    " WHERE u.name = s.name",
                           2, params, err);
    rb_buf_release(&a);
    if (!r)
        return err ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

int rb_pg_queue_remove(rb_pg *pg, const char *const *names, int n, int64_t *removed,
                       rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    bool all;
    rb_buf a = RB_BUF_INIT;
    names_array(&a, names, n, &all);
    const char *params[2] = {a.data, all ? "t" : "f"};
    /* removed jobs of a workflow tell their children (a discard) in the
     * same transaction */
    if ((rc = sql_exec(pg, "BEGIN", err))) {
        rb_buf_release(&a);
        return rc;
    }
    PGresult *r = sql_query(pg,
                            "WITH d AS (DELETE FROM rb_jobs WHERE state = 2"
                            "   AND ($2::boolean OR queue = ANY($1::text[])) RETURNING jid, wf),"
                            /* the queue forgotten too (INFO's known queues), its
                             * pause with it; rows in name order (the lock order) */
                            " u AS (DELETE FROM rb_queues WHERE name IN (SELECT name FROM rb_queues"
                            "   WHERE $2::boolean OR name = ANY($1::text[])"
                            "   ORDER BY name FOR UPDATE) RETURNING 1),"
                            /* its groups' rows (turns, holds, buckets) */
                            " g AS (DELETE FROM rb_groups WHERE $2::boolean"
                            "   OR queue = ANY($1::text[]))"
                            " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM u),"
                            " (SELECT coalesce(array_agg(d.jid), '{}') FROM d WHERE d.wf"
                            "   OR EXISTS (SELECT 1 FROM rb_edges e WHERE e.parent = d.jid))::text",
                            2, params, err);
    rb_buf_release(&a);
    if (!r) {
        rc = err && err->code ? err->code : RB_ESTORE;
        sql_rollback(pg);
        return rc;
    }
    if (removed)
        *removed = sql_int(r, 0, 0);
    char *wf = sql_dup(r, 0, 2);
    PQclear(r);
    if ((wf && strcmp(wf, "{}") &&
         (rc = sql_dep_events(pg, wf, RB_DEP_PARENT_DISCARDED, rb_now_ms(), err))) ||
        (rc = sql_exec(pg, "COMMIT", err)))
        sql_rollback(pg);
    free(wf);
    return rc;
}

int rb_pg_queue_latency(rb_pg *pg, const char *const *names, int n, int64_t now, double *out,
                        rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    rb_buf a = RB_BUF_INIT;
    sql_arr_begin(&a);
    for (int i = 0; i < n; i++)
        sql_arr_str(&a, names[i]);
    sql_arr_end(&a);
    const char *params[1] = {a.data};
    PGresult *r = sql_query(pg,
                            "SELECT (SELECT min(j.due_ms) FROM rb_jobs j"
                            "  WHERE j.state = 2 AND j.queue = u.q)"
                            " FROM unnest($1::text[]) WITH ORDINALITY AS u(q, ord) ORDER BY u.ord",
                            1, params, err);
    rb_buf_release(&a);
    if (!r)
        return err ? err->code : RB_ESTORE;
    for (int i = 0; i < n; i++) {
        bool none = i >= PQntuples(r) || PQgetisnull(r, i, 0);
        int64_t oldest = none ? now : sql_int(r, i, 0);
        out[i] = oldest < now ? (double)(now - oldest) / 1000.0 : 0.0;
    }
    PQclear(r);
    return 0;
}

int rb_pg_flush(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    /* TRUNCATE takes its tables' locks one by one: a transaction that holds
     * one of them and waits for another may deadlock with it (40P01).
     * PostgreSQL then aborts one of the two, changing nothing: try again. */
    for (int tries = 1;; tries++) {
        rc = sql_exec(pg,
                      "TRUNCATE rb_jobs, rb_counters, rb_queues, rb_edges, rb_edges_used, rb_wait,"
                      " rb_dep_done, rb_batches, rb_unique, rb_track,"
                      " rb_debounce, rb_debounced, rb_groups",
                      err);
        if (!rc || tries == 5 || strcmp(pg->last_sqlstate, "40P01") != 0)
            return rc;
        if (err)
            memset(err, 0, sizeof *err);
    }
}

int rb_pg_queue_known(rb_pg *pg, const char *name, bool *known, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    const char *params[1] = {name};
    PGresult *r = sql_query(pg, "SELECT 1 FROM rb_queues WHERE name = $1", 1, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *known = PQntuples(r) > 0;
    PQclear(r);
    return 0;
}
