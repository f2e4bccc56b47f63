/* The database link of a distributed-mode node (mode_impl.h's mode_link):
 * what the database threads and the maintenance thread learn from their
 * round trips, turned into one state, up or down since a time, with the
 * last successful round trip; an outage is logged once when it begins and
 * once when it ends. The backend reads it for GET /healthz, INFO and
 * /metrics (backend.c). Any thread; everything under the mode's mu. */
#include "backend/pg/mode_impl.h"

#include <pthread.h>
#include <stdio.h>

#include "backend/pg/request.h"
#include "common/timeutil.h"
#include "common/log.h"

void mode_link_init(rb_pgmode *pm)
{
    pm->link.members = (1u << (RB_PGMODE_THREADS + 1)) - 1; /* threads + maintenance */
    pm->link.since_ms = rb_now_ms();
    pm->link.since_mono = rb_mono_ms();
    pm->link.last_commit_ms = pm->link.since_ms; /* the schema check succeeded */
}

bool mode_link_probe_due_locked(const rb_pgmode *pm, int member)
{
    return pm->link.down && !(pm->link.ok & (1u << member));
}

bool mode_link_other_back(rb_pgmode *pm, int member)
{
    pthread_mutex_lock(&pm->mu);
    bool back = pm->link.down && (pm->link.ok & ~(1u << member));
    pthread_mutex_unlock(&pm->mu);
    return back;
}

void mode_link_report(rb_pgmode *pm, int member, int rc, const rb_err *err)
{
    if (rc && !rb_pg_lost(rc))
        return;
    unsigned bit = 1u << member;
    int change = 0; /* 1: down, 2: up again */
    int64_t lasted = 0;
    char why[sizeof pm->link.error];
    pthread_mutex_lock(&pm->mu);
    mode_link *l = &pm->link;
    if (!rc) {
        l->last_commit_ms = rb_now_ms();
        if (l->down && ((l->ok |= bit) & l->members) == l->members) {
            l->down = false;
            lasted = rb_mono_ms() - l->since_mono;
            l->since_ms = rb_now_ms();
            l->since_mono = rb_mono_ms();
            change = 2;
        }
    } else if (!l->down) {
        l->down = true;
        l->ok = 0;
        l->since_ms = rb_now_ms();
        l->since_mono = rb_mono_ms();
        snprintf(l->error, sizeof l->error, "%s", rb_err_msg(err));
        snprintf(why, sizeof why, "%s", l->error);
        change = 1;
    } else {
        l->ok &= ~bit; /* got through, then lost it again */
    }
    pthread_mutex_unlock(&pm->mu);
    if (change == 1)
        rb_log(RB_LOG_ERROR, "database unreachable: %s (answering errors, reconnecting)", why);
    else if (change == 2)
        rb_log(RB_LOG_INFO, "database reachable again after %.1f s", (double)lasted / 1000.0);
}

void rb_pgmode_health(rb_eng *eng, rb_eng_health *h)
{
    rb_pgmode *pm = rb_pgm_of(eng);
    pthread_mutex_lock(&pm->mu);
    h->known = true;
    h->up = !pm->link.down;
    h->since_ms = pm->link.since_ms;
    h->last_commit_ms = pm->link.last_commit_ms;
    snprintf(h->error, sizeof h->error, "%s", h->up ? "" : pm->link.error);
    pthread_mutex_unlock(&pm->mu);
}
