/* Distributed mode's leader lease (storage.forward; docs/distributed.md
 * "Forwarding to a leader"): every node that forwards competes for the one
 * rb_leader row from its maintenance thread (mode_leader_tick, about once
 * a second: take it when free or ended, renew it when its own, read the
 * holder), the loop reads the holder from memory (rb_pgmode_leader), and
 * a node that stops gives the row up (mode_leader_release) so another
 * takes it at its next tick. The view is trusted only until the lease it
 * read would end by this node's clock, so a node cut off from the database
 * stops forwarding by itself. State in rb_pgmode.leader, guarded by mu. */
#include "backend/pg/mode_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/pg/registry.h"
#include "common/buf.h"
#include "common/fault.h"
#include "common/log.h"
#include "common/timeutil.h"

static int64_t lease_ms(void)
{
    long long ms = rb_fault_int("pg.leader_lease_ms", RB_PGMODE_LEASE_MS);
    return ms > 0 ? ms : RB_PGMODE_LEASE_MS;
}

void rb_pgmode_leader_offer(rb_eng *eng, const char *addr, const char *tls_id)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    pthread_mutex_lock(&pm->mu);
    free(pm->leader.addr);
    pm->leader.addr = rb_xstrdup(addr);
    free(pm->leader.tls_id);
    pm->leader.tls_id = rb_xstrdup(tls_id ? tls_id : "");
    pm->leader.next_ms = 0; /* at the maintenance thread's next turn */
    pthread_mutex_unlock(&pm->mu);
    mode_maint_due(pm, rb_now_ms());
}

void rb_pgmode_leader(rb_eng *eng, rb_eng_leader *out)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&pm->mu);
    const mode_leader *l = &pm->leader;
    if (l->view.found && rb_now_ms() < l->view_until) {
        out->known = true;
        out->self = !strcmp(l->view.node, rb_pgworkers_node());
        snprintf(out->tls_id, sizeof out->tls_id, "%s", l->view.tls_id);
        snprintf(out->addr, sizeof out->addr, "%s", l->view.addr);
        snprintf(out->node, sizeof out->node, "%s", l->view.node);
    }
    pthread_mutex_unlock(&pm->mu);
}

bool mode_leader_follows(rb_pgmode *pm)
{
    pthread_mutex_lock(&pm->mu);
    const mode_leader *l = &pm->leader;
    bool follows = l->addr && l->view.found && !l->held && rb_now_ms() < l->view_until;
    pthread_mutex_unlock(&pm->mu);
    return follows;
}

void mode_leader_tick(rb_pgmode *pm)
{
    pthread_mutex_lock(&pm->mu);
    mode_leader *l = &pm->leader;
    char *addr = l->addr && rb_now_ms() >= l->next_ms ? rb_xstrdup(l->addr) : NULL;
    char *tls_id = addr ? rb_xstrdup(l->tls_id) : NULL;
    pthread_mutex_unlock(&pm->mu);
    if (!addr)
        return;
    const char *me = rb_pgworkers_node();
    int64_t len = lease_ms();
    int64_t before = rb_now_ms();
    rb_pg_leader v;
    rb_err err = {0};
    int rc = rb_pg_leader_lease(pm->maint, me, addr, tls_id, len, &v, &err);
    free(addr);
    free(tls_id);
    pthread_mutex_lock(&pm->mu);
    l->next_ms = rb_now_ms() + RB_PGMODE_LEASE_EVERY_MS;
    if (rc) {
        /* the old view lapses at its own time: nothing to change */
        if (!l->failing && !rb_pg_lost(rc))
            rb_log(RB_LOG_WARN, "leader lease: %s (retrying)", rb_err_msg(&err));
        l->failing = true;
        pthread_mutex_unlock(&pm->mu);
        return;
    }
    l->failing = false;
    bool was_self = l->held;
    bool changed = v.found != l->view.found || strcmp(v.node, l->view.node) ||
                   strcmp(v.addr, l->view.addr) || strcmp(v.tls_id, l->view.tls_id) ||
                   rb_now_ms() >= l->view_until;
    l->view = v;
    /* counted from before the statement ran: never past the real end */
    l->view_until = v.found ? before + (v.until_ms - v.now_ms) : 0;
    l->held = v.found && !strcmp(v.node, me);
    pthread_mutex_unlock(&pm->mu);
    if (l->held && !was_self)
        rb_log(RB_LOG_INFO, "leader: this node leads the cluster (forwarding nodes send their "
                            "clients here)");
    else if (changed && v.found && !l->held)
        rb_log(RB_LOG_INFO, "leader: %s at %s%s leads the cluster", v.node, v.addr,
               v.tls_id[0] ? " (tls)" : "");
    else if (was_self && !l->held)
        rb_log(RB_LOG_WARN, "leader: this node no longer leads the cluster");
}

void mode_leader_release(rb_pgmode *pm, rb_pg *pg)
{
    mode_leader *l = &pm->leader;
    if (l->held && pg) {
        rb_err err = {0};
        if (rb_pg_leader_drop(pg, rb_pgworkers_node(), &err) == 0)
            rb_log(RB_LOG_INFO, "leader: lease given up");
    }
    l->held = false;
    free(l->addr);
    l->addr = NULL;
    free(l->tls_id);
    l->tls_id = NULL;
}
