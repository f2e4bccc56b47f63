/* Job dependencies on the PostgreSQL engine (docs/workflows.md): the push
 * of jobs naming parents, checked by the engine's rules (engine/depend.h)
 * against the parents' rows locked in the push's own transaction. The
 * ACK's release of children runs inside rb_ack_deps (sql_schema.c). */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/debounce.h"
#include "engine/depend.h"

/* What the push's transaction read of the parents outside the push. */
typedef struct known_set {
    char **live, **done, **dead;
    char **alias, **into; /* debounce aliases named, each with its job */
    size_t n_live, n_done, n_dead, n_alias;
} known_set;

static bool in_list(char *const *v, size_t n, const char *jid)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], jid))
            return true;
    return false;
}

static rb_dep_known lookup(void *arg, const char *jid, char **into)
{
    const known_set *k = arg;
    if (in_list(k->live, k->n_live, jid))
        return RB_DEP_LIVE;
    if (in_list(k->dead, k->n_dead, jid))
        return RB_DEP_DEAD;
    if (in_list(k->done, k->n_done, jid))
        return RB_DEP_SUCCEEDED;
    for (size_t i = 0; i < k->n_alias; i++)
        if (!strcmp(k->alias[i], jid)) {
            *into = rb_xstrdup(k->into[i]);
            return RB_DEP_DEBOUNCED;
        }
    return RB_DEP_UNKNOWN;
}

static char **column(PGresult *r, size_t *n)
{
    *n = (size_t)PQntuples(r);
    char **v = rb_xcalloc(*n ? *n : 1, sizeof *v);
    for (size_t i = 0; i < *n; i++)
        v[i] = sql_dup(r, (int)i, 0);
    return v;
}

static void free_column(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The parents' reads: live rows (not dead) locked FOR SHARE in jid order so
 * none finishes unseen before this commits, the dead ones (refused, named in
 * the reply), and the succeeded records. */
static int read_parents(rb_pg *pg, const char *arr, int64_t now, known_set *k, rb_err *err)
{
    const char *p1[1] = {arr};
    PGresult *r = sql_query(pg,
                            "SELECT jid FROM rb_jobs WHERE jid = ANY($1::text[]) AND state <> 5"
                            " ORDER BY jid FOR SHARE",
                            1, p1, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    k->live = column(r, &k->n_live);
    PQclear(r);
    r = sql_query(pg, "SELECT jid FROM rb_jobs WHERE jid = ANY($1::text[]) AND state = 5", 1, p1,
                  err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    k->dead = column(r, &k->n_dead);
    PQclear(r);
    char nowtxt[24];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    const char *p2[2] = {arr, nowtxt};
    r = sql_query(pg, "SELECT jid FROM rb_dep_done WHERE jid = ANY($1::text[])"
                      " AND until_ms > $2::bigint",
                  2, p2, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    k->done = column(r, &k->n_done);
    PQclear(r);
    char cut[24];
    snprintf(cut, sizeof cut, "%lld", (long long)(now - RB_DEBOUNCE_RETENTION_MS));
    const char *p3[2] = {arr, cut};
    r = sql_query(pg, "SELECT jid, into_jid FROM rb_debounced WHERE jid = ANY($1::text[])"
                      " AND (ended_ms = 0 OR ended_ms > $2::bigint)",
                  2, p3, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    k->alias = column(r, &k->n_alias);
    k->into = rb_xcalloc(k->n_alias ? k->n_alias : 1, sizeof *k->into);
    for (size_t i = 0; i < k->n_alias; i++)
        k->into[i] = sql_dup(r, (int)i, 1);
    PQclear(r);
    return 0;
}

static int run_sql(rb_pg *pg, const char *sql, int n, const char *const *params, rb_err *err);

/* Each inserted child's edges and count; its parents known only as
 * succeeded get a used-up edge, for the graph (rb_edges_used). */
static int attach(rb_pg *pg, json_t *const *objs, size_t n, const int *status, rb_err *err)
{
    rb_buf ps = RB_BUF_INIT, cs = RB_BUF_INIT; /* (parent, child) of every child */
    sql_arr_begin(&ps);
    sql_arr_begin(&cs);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rb_dep_spec spec;
        if (status[i] || !rb_dep_has(objs[i]) || rb_dep_parse(objs[i], &spec, NULL))
            continue;
        const char *child = json_string_value(json_object_get(objs[i], "jid"));
        rb_buf a = RB_BUF_INIT;
        sql_arr_begin(&a);
        for (size_t k = 0; k < spec.n; k++) {
            sql_arr_str(&a, spec.parents[k]);
            sql_arr_str(&ps, spec.parents[k]);
            sql_arr_str(&cs, child);
        }
        sql_arr_end(&a);
        char mode[8];
        snprintf(mode, sizeof mode, "%d", (int)spec.mode);
        const char *params[3] = {child, a.data, mode};
        PGresult *r = sql_query(pg, "SELECT rb_dep_attach($1, $2::text[], $3::int)", 3, params,
                                err);
        rb_buf_release(&a);
        rb_dep_spec_release(&spec);
        if (!r)
            rc = err && err->code ? err->code : RB_ESTORE;
        PQclear(r);
    }
    sql_arr_end(&ps);
    sql_arr_end(&cs);
    const char *pp[2] = {ps.data, cs.data};
    if (!rc)
        rc = run_sql(pg,
                     "INSERT INTO rb_edges_used (parent, child)"
                     " SELECT u.p, u.c FROM unnest($1::text[], $2::text[]) AS u(p, c)"
                     " WHERE NOT EXISTS (SELECT 1 FROM rb_jobs j WHERE j.jid = u.p)"
                     " ON CONFLICT DO NOTHING",
                     2, pp, err);
    rb_buf_release(&ps);
    rb_buf_release(&cs);
    return rc;
}

int rb_pg_push_deps(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                    rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_exec(pg, "BEGIN", err)))
        return rc;
    if ((rc = sql_push_deps_tx(pg, jobs, n, now, status, err)) ||
        (rc = sql_exec(pg, "COMMIT", err)))
        sql_rollback(pg);
    return rc;
}

int sql_push_deps_tx(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                     rb_err *err)
{
    int rc = 0;
    json_t **objs = rb_xcalloc(n ? n : 1, sizeof *objs);
    for (size_t i = 0; i < n; i++)
        objs[i] = json_loads(jobs[i].json, 0, NULL);
    /* the parents named outside the push */
    rb_buf arr = RB_BUF_INIT;
    sql_arr_begin(&arr);
    for (size_t i = 0; i < n; i++) {
        rb_dep_spec spec;
        if (!objs[i] || rb_dep_parse(objs[i], &spec, NULL))
            continue;
        for (size_t k = 0; k < spec.n; k++) {
            bool inside = false;
            for (size_t m = 0; m < n && !inside; m++)
                inside = !strcmp(jobs[m].jid, spec.parents[k]);
            if (!inside)
                sql_arr_str(&arr, spec.parents[k]);
        }
        rb_dep_spec_release(&spec);
    }
    sql_arr_end(&arr);
    known_set k = {0};
    if ((rc = read_parents(pg, arr.data, now, &k, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        if (!objs[i]) {
            rc = rb_err_set(err, RB_ESTORE, "job %s: unreadable JSON", jobs[i].jid);
            goto out;
        }
    if ((rc = rb_dep_check_push(objs, n, lookup, &k, err)))
        goto out; /* refused: the caller rolls back, nothing written */
    if ((rc = rb_pg_push(pg, jobs, n, now, status, err)))
        goto out;
    /* a child must not take a refused unique parent for a succeeded one:
     * refused whole, as on a single node (rb_mem_unique_check_push) */
    for (size_t i = 0; i < n && n > 1 && !rc; i++)
        if (status[i] == RB_ENOTUNIQUE)
            rc = rb_err_set(err, RB_ENOTUNIQUE,
                            "job %s: " RB_NOTUNIQUE_CODE " " RB_NOTUNIQUE_MSG
                            " (a PUSHB naming parents is refused whole)",
                            jobs[i].jid);
    if (!rc)
        rc = attach(pg, objs, n, status, err);
out:
    free_column(k.live, k.n_live);
    free_column(k.dead, k.n_dead);
    free_column(k.done, k.n_done);
    free_column(k.alias, k.n_alias);
    free_column(k.into, k.n_alias);
    rb_buf_release(&arr);
    for (size_t i = 0; i < n; i++)
        json_decref(objs[i]);
    free(objs);
    return rc;
}

/* --- a parent's death, requeue or discard --- */

typedef struct dep_work {
    char **jid;
    int *ev;
    size_t n, cap;
} dep_work;

static void work_add(dep_work *w, const char *jid, int ev)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 8;
        w->jid = rb_xrealloc(w->jid, w->cap * sizeof *w->jid);
        w->ev = rb_xrealloc(w->ev, w->cap * sizeof *w->ev);
    }
    w->jid[w->n] = rb_xstrdup(jid);
    w->ev[w->n++] = ev;
}

static int run_sql(rb_pg *pg, const char *sql, int n, const char *const *params, rb_err *err)
{
    PGresult *r = sql_query(pg, sql, n, params, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

/* Moves the edges `where` selects (a condition on rb_edges' parent and
 * child, over params) to rb_edges_used: used up, kept for the graph. */
#define MOVE_EDGES(where) \
    "WITH d AS (DELETE FROM rb_edges WHERE " where " RETURNING parent, child)" \
    " INSERT INTO rb_edges_used (parent, child) SELECT parent, child FROM d" \
    " ON CONFLICT DO NOTHING"

/* The child of row i (columns below) dies: its edges and counts go, its row
 * is written dead as a failure's death, its catch job pushed. */
static int kill_child(rb_pg *pg, PGresult *r, int i, const char *parent, int64_t now, rb_err *err)
{
    locked_row row = {.jid = PQgetvalue(r, i, 0), .json = PQgetvalue(r, i, 4),
                      .history = PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5),
                      .attempts = (int)sql_int(r, i, 6), .queue = PQgetvalue(r, i, 7),
                      .priority = (int)sql_int(r, i, 8), .state = (int)sql_int(r, i, 9)};
    fail_out o;
    int rc = fail_dependency(pg, &row, parent, now, &o, err);
    if (rc)
        return rc;
    /* a batch member's death (its batch told before the COMMIT) */
    sql_batch_failed(pg, PQgetisnull(r, i, 10) ? NULL : PQgetvalue(r, i, 10),
                     !strcmp(PQgetvalue(r, i, 11), "t"), !row.history, true);
    char due[24];
    snprintf(due, sizeof due, "%lld",
             (long long)(now + sql_cfg(pg)->server.dead_retention_s * 1000));
    const char *p1[1] = {row.jid};
    const char *p2[4] = {row.jid, due, o.json, o.history};
    if ((rc = run_sql(pg, MOVE_EDGES("child = $1"), 1, p1, err)) ||
        (rc = run_sql(pg, "DELETE FROM rb_wait WHERE child = $1", 1, p1, err)) ||
        (rc = run_sql(pg,
                      "UPDATE rb_jobs SET state = 5, due_ms = $2::bigint, json = $3,"
                      " history = $4, wid = NULL, flags = 0 WHERE jid = $1",
                      4, p2, err)))
        goto out;
    if (o.catch_json) {
        rb_pg_new_job cj = {.jid = o.catch_jid, .queue = row.queue, .priority = row.priority,
                            .at_ms = now, .reserve_s = (int)sql_cfg(pg)->server.reserve_for_s,
                            .json = o.catch_json};
        int st = 0;
        rc = rb_pg_push(pg, &cj, 1, now, &st, err);
    }
out:
    fail_out_release(&o);
    return rc;
}

/* One parent's event to its children, locked in jid order. */
static int tell_children(rb_pg *pg, dep_work *w, const char *parent, rb_dep_event ev, int64_t now,
                         rb_err *err)
{
    const char *p1[1] = {parent};
    PGresult *r = sql_query(pg,
                            "SELECT e.child, w.remaining, w.dead, w.mode, j.json, j.history,"
                            " j.attempts, j.queue, j.priority, j.state, j.bid, j.bcb"
                            " FROM rb_edges e JOIN rb_wait w ON w.child = e.child"
                            " JOIN rb_jobs j ON j.jid = e.child"
                            " WHERE e.parent = $1 AND j.state IN (6, 7)"
                            " ORDER BY e.child FOR UPDATE OF j, w",
                            1, p1, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    int rc = 0;
    char nowtxt[24];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    for (int i = 0; i < PQntuples(r) && !rc; i++) {
        const char *child = PQgetvalue(r, i, 0);
        rb_dep_counts c = {(uint32_t)sql_int(r, i, 1), (uint32_t)sql_int(r, i, 2)};
        bool consumed = false;
        rb_dep_next next = rb_dep_on_parent((rb_dep_mode)sql_int(r, i, 3), ev, &c, &consumed);
        const char *pe[2] = {parent, child};
        if (consumed && (rc = run_sql(pg, MOVE_EDGES("parent = $1 AND child = $2"), 2, pe, err)))
            break;
        char rem[16], dead[16], st[4];
        snprintf(rem, sizeof rem, "%u", c.remaining);
        snprintf(dead, sizeof dead, "%u", c.dead);
        snprintf(st, sizeof st, "%d", next == RB_DEP_NEXT_BLOCK ? RB_JOB_BLOCKED : RB_JOB_WAITING);
        const char *pw[4] = {child, rem, dead, st};
        const char *pr[2] = {child, nowtxt};
        switch (next) {
        case RB_DEP_NEXT_WAIT:
        case RB_DEP_NEXT_BLOCK:
            rc = run_sql(pg,
                         "WITH w AS (UPDATE rb_wait SET remaining = $2::int, dead = $3::int"
                         "  WHERE child = $1 RETURNING child)"
                         " UPDATE rb_jobs j SET state = $4::int FROM w WHERE j.jid = w.child",
                         4, pw, err);
            break;
        case RB_DEP_NEXT_RELEASE:
            rc = run_sql(pg, "SELECT rb_dep_release($1, $2::bigint)", 2, pr, err);
            break;
        case RB_DEP_NEXT_DIE:
            if (!(rc = kill_child(pg, r, i, parent, now, err)))
                work_add(w, child, RB_DEP_PARENT_DIED);
            break;
        }
    }
    PQclear(r);
    if (!rc && ev == RB_DEP_PARENT_DISCARDED) /* gone: its children show it as unknown */
        rc = run_sql(pg, MOVE_EDGES("parent = $1"), 1, p1, err);
    else if (!rc) /* its row is this transaction's already: a parent whose edges
                     were used up by its death is still recorded when ACKed */
        rc = run_sql(pg, "UPDATE rb_jobs SET wf = true WHERE jid = $1 AND NOT wf", 1, p1, err);
    return rc;
}

int sql_dep_events(rb_pg *pg, const char *jids, int ev, int64_t now, rb_err *err)
{
    const char *p1[1] = {jids};
    /* deleted without a record: no graph shows them as children any more */
    if (ev == RB_DEP_PARENT_DISCARDED) {
        int drc = run_sql(pg, "DELETE FROM rb_edges_used WHERE child = ANY($1::text[])", 1, p1,
                          err);
        if (drc)
            return drc;
    }
    PGresult *r = sql_query(pg,
                            "SELECT DISTINCT parent FROM rb_edges"
                            " WHERE parent = ANY($1::text[]) ORDER BY parent",
                            1, p1, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    dep_work w = {0};
    for (int i = 0; i < PQntuples(r); i++)
        work_add(&w, PQgetvalue(r, i, 0), ev);
    PQclear(r);
    int rc = 0;
    for (size_t i = 0; i < w.n && !rc; i++) /* w grows with the children that die */
        rc = tell_children(pg, &w, w.jid[i], (rb_dep_event)w.ev[i], now, err);
    for (size_t i = 0; i < w.n; i++)
        free(w.jid[i]);
    free(w.jid);
    free(w.ev);
    /* the batches of the members that died, after every job row */
    return rc ? rc : sql_batch_apply_noted(pg, now, err);
}

/* rb_dep_on_retry's view of a parent: its state as read (sorted by jid). */
typedef struct parent_states {
    PGresult *r;
} parent_states;

static int parent_state(void *arg, const char *jid)
{
    PGresult *r = ((parent_states *)arg)->r;
    for (int i = 0; i < PQntuples(r); i++)
        if (!strcmp(PQgetvalue(r, i, 0), jid))
            return (int)sql_int(r, i, 1);
    return -1;
}

int sql_dep_retry(rb_pg *pg, const char *jid, const char *json, int64_t now, bool *held,
                  rb_err *err)
{
    *held = false;
    if (!strstr(json, "\"depends_on\""))
        return 0;
    json_t *job = json_loads(json, 0, NULL);
    rb_dep_spec spec;
    if (!job || rb_dep_parse(job, &spec, NULL)) {
        json_decref(job);
        return 0;
    }
    rb_buf all = RB_BUF_INIT, held_by = RB_BUF_INIT;
    sql_arr_begin(&all);
    for (size_t i = 0; i < spec.n; i++)
        sql_arr_str(&all, spec.parents[i]);
    sql_arr_end(&all);
    const char *p1[1] = {all.data};
    int rc = 0;
    /* the parents' rows, locked as a push locks them (FOR SHARE, jid order) */
    parent_states ps = {sql_query(pg,
                                  "SELECT jid, state FROM rb_jobs WHERE jid = ANY($1::text[])"
                                  " ORDER BY jid FOR SHARE",
                                  1, p1, err)};
    if (!ps.r) {
        rc = err && err->code ? err->code : RB_ESTORE;
        goto out;
    }
    bool *holds = rb_xcalloc(spec.n + 1, sizeof *holds);
    rb_dep_counts c;
    rb_dep_next next = rb_dep_on_retry(&spec, parent_state, &ps, holds, &c);
    PQclear(ps.r);
    if (next != RB_DEP_NEXT_RELEASE) {
        sql_arr_begin(&held_by);
        for (size_t i = 0; i < spec.n; i++)
            if (holds[i])
                sql_arr_str(&held_by, spec.parents[i]);
        sql_arr_end(&held_by);
        char rem[16], dead[16], mode[8], st[4], nowtxt[24];
        snprintf(rem, sizeof rem, "%u", c.remaining);
        snprintf(dead, sizeof dead, "%u", c.dead);
        snprintf(mode, sizeof mode, "%d", (int)spec.mode);
        snprintf(st, sizeof st, "%d", next == RB_DEP_NEXT_BLOCK ? RB_JOB_BLOCKED : RB_JOB_WAITING);
        snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
        const char *pe[2] = {jid, held_by.data};
        const char *pw[4] = {jid, rem, dead, mode};
        const char *pj[3] = {jid, st, nowtxt};
        if (!(rc = run_sql(pg,
                           "INSERT INTO rb_edges (parent, child) SELECT p, $1"
                           " FROM unnest($2::text[]) AS p ON CONFLICT DO NOTHING",
                           2, pe, err)) &&
            !(rc = run_sql(pg,
                           "INSERT INTO rb_wait (child, remaining, dead, mode)"
                           " VALUES ($1, $2::int, $3::int, $4::int) ON CONFLICT (child) DO UPDATE"
                           " SET remaining = excluded.remaining, dead = excluded.dead,"
                           " mode = excluded.mode",
                           4, pw, err)))
            rc = run_sql(pg,
                         "UPDATE rb_jobs SET state = $2::int, flags = 0, wid = NULL,"
                         " due_ms = $3::bigint, enq_ms = 0, first_ms = 0, wf = true,"
                         " seq = nextval('rb_job_seq') WHERE jid = $1",
                         3, pj, err);
        *held = !rc;
    }
    free(holds);
out:
    rb_buf_release(&all);
    rb_buf_release(&held_by);
    rb_dep_spec_release(&spec);
    json_decref(job);
    return rc;
}

int rb_pg_deps_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char nowtxt[24], lim[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {nowtxt, lim};
    /* a record gone and its job not stored again: no graph shows it as a
     * child any more (rb_edges_used) */
    PGresult *r = sql_query(pg,
                  "WITH x AS (DELETE FROM rb_dep_done d USING (SELECT jid FROM rb_dep_done"
                  "   WHERE until_ms <= $1::bigint ORDER BY until_ms LIMIT $2::int"
                  "   FOR UPDATE SKIP LOCKED) s WHERE d.jid = s.jid RETURNING d.jid),"
                  " u AS (DELETE FROM rb_edges_used e USING x WHERE e.child = x.jid"
                  "   AND NOT EXISTS (SELECT 1 FROM rb_jobs j WHERE j.jid = x.jid))"
                  " SELECT count(*) FROM x",
                  2, params, err);
    if (!r)
        return err && err->code ? err->code : RB_ESTORE;
    if (n)
        *n = (int)sql_int(r, 0, 0);
    PQclear(r);
    return 0;
}
