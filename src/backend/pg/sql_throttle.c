/* Queue throttles in distributed mode (docs/enterprise.md, "Throttles";
 * the rules are engine/throttle.h's): no table of their own, so no schema
 * change. A slot is a working row of the queue, selected here and counted
 * with rb_throttle_holds (its fetch read back from the lease,
 * rb_throttle_fetched_from_lease). A claim of a throttled queue runs in a
 * transaction holding the queue's advisory lock (rb_pg_claim, sql_jobs.c),
 * so claimers on every node count the committed slots one at a time: at
 * most `concurrency` are ever held. A slot given back by ACK, FAIL or
 * SNOOZE, or by the sweep failing a job whose lease ended, is announced
 * with NOTIFY on the queue's name, which wakes the FETCHes parked on it on
 * every node. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/throttle.h"

int sql_throttle_lock(rb_pg *pg, const char *queue, rb_err *err)
{
    /* two keys: the deployment (schema) and the queue; a hash collision
     * only makes two queues' claims take turns */
    const char *params[1] = {queue};
    PGresult *r = sql_query(pg,
                            "SELECT pg_advisory_xact_lock(hashtext('rebound:throttle:' ||"
                            " current_schema()), hashtext($1))",
                            1, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    PQclear(r);
    return 0;
}

int sql_throttle_held(rb_pg *pg, const rb_throttle *t, int64_t now, int64_t *held,
                      int64_t *frees, rb_err *err)
{
    *held = 0;
    *frees = INT64_MAX;
    const char *params[1] = {t->queue};
    /* the queue's working jobs (rb_jobs_timed); one whose lease ended
     * holds its slot until the sweep fails it (so that never more than
     * the limit are working), and the engine's rule decides for the rest */
    PGresult *r = sql_query(pg,
                            "SELECT due_ms, reserve_s FROM rb_jobs WHERE state = 3 AND queue = $1",
                            1, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t fetched = rb_throttle_fetched_from_lease(sql_int(r, i, 0), sql_int(r, i, 1));
        if (!rb_throttle_holds(fetched, t->timeout_s, now))
            continue; /* its timeout passed: free, though the job may still run */
        (*held)++;
        int64_t end = rb_throttle_frees_at(fetched, t->timeout_s);
        if (end < *frees)
            *frees = end;
    }
    PQclear(r);
    return 0;
}

int rb_pg_throttle_info(rb_pg *pg, int64_t now, json_t **out, rb_err *err)
{
    *out = NULL;
    const rb_config *cfg = sql_cfg(pg);
    if (!cfg->n_throttles)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    json_t *o = json_object();
    for (size_t i = 0; i < cfg->n_throttles; i++) {
        int64_t held, frees;
        if ((rc = sql_throttle_held(pg, &cfg->throttles[i], now, &held, &frees, err))) {
            json_decref(o);
            return rc;
        }
        rb_throttle_info_set(o, &cfg->throttles[i], held);
    }
    *out = o;
    return 0;
}

int rb_pg_throttle_notify(rb_pg *pg, const char *const *queues, size_t n, rb_err *err)
{
    const rb_config *cfg = sql_cfg(pg);
    if (!cfg->n_throttles)
        return 0;
    rb_buf a = RB_BUF_INIT;
    sql_arr_begin(&a);
    size_t k = 0;
    if (!queues) { /* every throttled queue */
        for (size_t i = 0; i < cfg->n_throttles; i++, k++)
            sql_arr_str(&a, cfg->throttles[i].queue);
    } else {
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = !strcmp(queues[j], queues[i]);
            if (!seen && queues[i][0] && rb_config_throttle(cfg, queues[i])) {
                sql_arr_str(&a, queues[i]);
                k++;
            }
        }
    }
    sql_arr_end(&a);
    int rc = 0;
    if (k && !(rc = sql_ensure(pg, err))) {
        const char *params[1] = {a.data};
        PGresult *r = sql_query(pg,
                                "SELECT pg_notify(rb_channel(), q) FROM unnest($1::text[]) AS q",
                                1, params, err);
        if (r)
            PQclear(r);
        else
            rc = err ? err->code : RB_ESTORE;
    }
    rb_buf_release(&a);
    return rc;
}
