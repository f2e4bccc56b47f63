/* Job dependencies on the PostgreSQL engine (docs/workflows.md): the push
 * of jobs naming parents, checked by the engine's rules (engine/depend.h)
 * against the parents' rows locked in the push's own transaction. The
 * ACK's release of children runs inside rb_ack_deps (sql_schema.c). */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/depend.h"

/* What the push's transaction read of the parents outside the push. */
typedef struct known_set {
    char **live, **done;
    size_t n_live, n_done;
} known_set;

static bool in_list(char *const *v, size_t n, const char *jid)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], jid))
            return true;
    return false;
}

static rb_dep_known lookup(void *arg, const char *jid)
{
    const known_set *k = arg;
    if (in_list(k->live, k->n_live, jid))
        return RB_DEP_LIVE;
    return in_list(k->done, k->n_done, jid) ? RB_DEP_SUCCEEDED : RB_DEP_UNKNOWN;
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
 * none finishes unseen before this commits, and the succeeded records. */
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
    return 0;
}

/* Each inserted child's edges and count. */
static int attach(rb_pg *pg, json_t *const *objs, size_t n, const int *status, rb_err *err)
{
    for (size_t i = 0; i < n; i++) {
        rb_dep_spec spec;
        if (status[i] || !rb_dep_has(objs[i]) || rb_dep_parse(objs[i], &spec, NULL))
            continue;
        rb_buf a = RB_BUF_INIT;
        sql_arr_begin(&a);
        for (size_t k = 0; k < spec.n; k++)
            sql_arr_str(&a, spec.parents[k]);
        sql_arr_end(&a);
        char mode[8];
        snprintf(mode, sizeof mode, "%d", (int)spec.mode);
        const char *jid = json_string_value(json_object_get(objs[i], "jid"));
        const char *params[3] = {jid, a.data, mode};
        PGresult *r = sql_query(pg, "SELECT rb_dep_attach($1, $2::text[], $3::int)", 3, params,
                                err);
        rb_buf_release(&a);
        rb_dep_spec_release(&spec);
        if (!r)
            return err && err->code ? err->code : RB_ESTORE;
        PQclear(r);
    }
    return 0;
}

int rb_pg_push_deps(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                    rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
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
    if ((rc = sql_exec(pg, "BEGIN", err)))
        goto out;
    if ((rc = read_parents(pg, arr.data, now, &k, err)))
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (!objs[i]) {
            rc = rb_err_set(err, RB_ESTORE, "job %s: unreadable JSON", jobs[i].jid);
            goto fail;
        }
    if ((rc = rb_dep_check_push(objs, n, lookup, &k, err)))
        goto fail; /* refused: nothing written */
    if ((rc = rb_pg_push(pg, jobs, n, now, status, err)) ||
        (rc = attach(pg, objs, n, status, err)) || (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    goto out;
fail:
    sql_rollback(pg);
out:
    free_column(k.live, k.n_live);
    free_column(k.done, k.n_done);
    rb_buf_release(&arr);
    for (size_t i = 0; i < n; i++)
        json_decref(objs[i]);
    free(objs);
    return rc;
}
