/* Groups in turn and their limits in distributed mode (schema 15,
 * docs/distributed.md "Groups and limits"): the claim's arguments per
 * queue (the node's turn cursor, the [groups] and [throttles] limits as
 * the engine resolves them, engine/group.h and engine/gcra.h), the turn
 * table those cursors live in, and the maintenance of rb_groups. The SQL
 * (rb_claim_groups) walks the groups; this file hands it what the node
 * knows. */
#include "backend/pg/sql_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gcra.h"
#include "engine/group.h"

/* Per queue the group this node served last (its turn cursor) and whether
 * the queue is known to have groups (so that its claims go straight to
 * rb_claim_groups). Shared by a node's database threads (a mutex; the
 * table only grows: one entry per queue ever claimed with groups). */
struct rb_pg_turns {
    pthread_mutex_t mu;
    struct turn {
        char *queue;
        char *last; /* NULL: from the first group */
    } *v;
    size_t n, cap;
};

rb_pg_turns *sql_turns_new(void)
{
    rb_pg_turns *t = rb_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void sql_turns_free(rb_pg_turns *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].queue);
        free(t->v[i].last);
    }
    free(t->v);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void rb_pg_share_turns(rb_pg *pg, rb_pg *from)
{
    if (pg->own_turns)
        sql_turns_free(pg->turns);
    pg->turns = from->turns;
    pg->own_turns = false;
}

/* The entry of queue (t->mu held), or NULL. */
static struct turn *turn_of(rb_pg_turns *t, const char *queue)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].queue, queue))
            return &t->v[i];
    return NULL;
}

bool sql_groups_known(rb_pg *pg, const char *queue)
{
    pthread_mutex_lock(&pg->turns->mu);
    bool known = turn_of(pg->turns, queue) != NULL;
    pthread_mutex_unlock(&pg->turns->mu);
    return known;
}

void sql_groups_served(rb_pg *pg, const char *queue, const char *grp)
{
    rb_pg_turns *t = pg->turns;
    pthread_mutex_lock(&t->mu);
    struct turn *e = turn_of(t, queue);
    if (!e) {
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 8;
            t->v = rb_xrealloc(t->v, t->cap * sizeof *t->v);
        }
        e = &t->v[t->n++];
        e->queue = rb_xstrdup(queue);
        e->last = NULL;
    }
    if (grp) {
        free(e->last);
        e->last = rb_xstrdup(grp);
    }
    pthread_mutex_unlock(&t->mu);
}

bool sql_groups_claim_needed(rb_pg *pg, const char *queue)
{
    const rb_config *cfg = sql_cfg(pg);
    const rb_throttle *th = cfg->n_throttles ? rb_config_throttle(cfg, queue) : NULL;
    return (th && th->rate > 0) || sql_groups_known(pg, queue);
}

void sql_groups_args(rb_pg *pg, const char *const *queues, int nq, rb_buf a[SQL_GROUP_ARGS])
{
    const rb_config *cfg = sql_cfg(pg);
    for (int k = 0; k < SQL_GROUP_ARGS; k++)
        sql_arr_begin(&a[k]);
    for (int i = 0; i < nq; i++) {
        pthread_mutex_lock(&pg->turns->mu);
        struct turn *e = turn_of(pg->turns, queues[i]);
        sql_arr_str(&a[0], e ? e->last : NULL);
        pthread_mutex_unlock(&pg->turns->mu);
        rb_flow_limits lim; /* a named group's, without its GROUP SET */
        rb_config_group_limits(cfg, queues[i], NULL, &lim, NULL);
        rb_gcra g;
        rb_gcra_init(&g, lim.rate, lim.period_ms, lim.burst);
        sql_arr_int(&a[1], lim.concurrency);
        sql_arr_int(&a[2], g.t_us);
        sql_arr_int(&a[3], g.tau_us);
        const rb_throttle *th = cfg->n_throttles ? rb_config_throttle(cfg, queues[i]) : NULL;
        rb_gcra_init(&g, th ? th->rate : 0, th ? th->period_ms : 0, th ? th->burst : 0);
        sql_arr_int(&a[4], g.t_us);
        sql_arr_int(&a[5], g.tau_us);
    }
    for (int k = 0; k < SQL_GROUP_ARGS; k++)
        sql_arr_end(&a[k]);
}

int rb_pg_groups_maint(rb_pg *pg, int64_t now, int limit, int *released, rb_err *err)
{
    *released = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char nowtxt[24], lim[16];
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {nowtxt, lim};
    PGresult *r = sql_query(pg, "SELECT rb_groups_maint($1::bigint, $2::int)", 2, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    *released = (int)sql_int(r, 0, 0);
    PQclear(r);
    return 0;
}

int rb_pg_groups_start(rb_pg *pg, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    /* this node's [groups] may differ from the one that set them: every
     * concurrency hold is re-checked by the next claim */
    return sql_exec(pg, "UPDATE rb_groups SET hold = 0, hold_until = 0 WHERE hold = 1", err);
}
