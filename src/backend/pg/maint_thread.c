/* Distributed mode's maintenance thread (started by mode.c's
 * rb_pgmode_attach), on every node at once: promotes due jobs, reaps
 * expired reservations, drops dead jobs past retention (telling their
 * children), forgets expired succeeded records of workflow jobs, ended
 * progress records past their retention and stale workers, in batches of RB_PGMODE_BATCH on its own engine (pm->maint, the
 * thread's alone; the SKIP LOCKED batches make the nodes' concurrent runs
 * safe), handing what it saw to the loop's /metrics, then sleeps a
 * jittered tick or until the next due time. A wake-up for a due time
 * before the tick (a retry, a scheduled job) promotes and reads the next
 * due time, two statements; the reaper's transaction runs once a tick and
 * when the earliest lease read last has ended (a lease taken since ends
 * at least a reservation later: it waits for the tick at most, as it
 * would have without that wake-up). With storage.forward it also
 * keeps the leader lease (leader.c), and a node that follows a live leader
 * leaves the rest to the leader's thread. Maintenance thread only. */
#include "backend/pg/mode_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backend/pg/registry.h"
#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "common/log.h"

/* --- the maintenance thread --- */

/* Runs op in batches until one is not full. Returns 0 or the error. */
static int batches(rb_pgmode *pm, int (*op)(rb_pg *, int64_t, int, int *, rb_err *),
                   int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = op(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, &n, err);
        *total += n;
    } while (!rc && n == RB_PGMODE_BATCH && !mode_stopping(pm));
    return rc;
}

/* The maintenance thread's result buffers, one batch each. */
typedef struct maint_bufs {
    int64_t late[RB_PGMODE_BATCH];
    rb_pg_fail_result reaped[RB_PGMODE_BATCH];
} maint_bufs;

/* Promotes in batches until one is not full, handing each batch's
 * lateness to the loop. */
static int promote_all(rb_pgmode *pm, maint_bufs *mb, int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = rb_pg_promote(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, mb->late, &n, err);
        *total += n;
        mode_note_maintenance(pm, NULL, 0, mb->late, (size_t)n);
    } while (!rc && n == RB_PGMODE_BATCH && !mode_stopping(pm));
    return rc;
}

/* Reaps in batches until one is not full, handing each batch's failures
 * (queue, job type, outcome, delay) to the loop. */
static int reap_all(rb_pgmode *pm, maint_bufs *mb, int *total, rb_err *err)
{
    int n, rc;
    do {
        n = 0;
        rc = rb_pg_reap(pm->maint, rb_now_ms(), RB_PGMODE_BATCH, mb->reaped, &n, err);
        *total += n;
        if (!rc && n) { /* their throttle slots came back: every node's FETCHes told */
            const char *queues[RB_PGMODE_BATCH];
            for (int i = 0; i < n; i++)
                queues[i] = mb->reaped[i].labels.queue;
            rb_err nerr = {0};
            (void)rb_pg_throttle_notify(pm->maint, queues, (size_t)n, &nerr);
        }
        mode_note_maintenance(pm, mb->reaped, (size_t)n, NULL, 0);
    } while (!rc && n == RB_PGMODE_BATCH && !mode_stopping(pm));
    return rc;
}

/* The tick; test hook (common/fault.h): pg.tick_ms sets it (so that a
 * test can tell a promotion at its due time from one at the next tick). */
static int64_t tick_ms(void)
{
    int64_t ms = rb_fault_int("pg.tick_ms", 0);
    return ms > 0 ? ms : RB_PGMODE_TICK_MS;
}

void *mode_maint_thread(void *arg)
{
    rb_pgmode *pm = arg;
    unsigned seed = (unsigned)getpid() ^ (unsigned)rb_now_ms();
    bool down = false;
    maint_bufs *mb = rb_xmalloc(sizeof *mb);
    int64_t workers_due = 0; /* next removal of stale worker rows */
    int64_t housekeeping_due = 0; /* next run of everything but promote and reap */
    int64_t lease_due = 0; /* the earliest lease's end, as last read (0: unknown) */
    bool groups_started = false;
    for (;;) {
        rb_err err = {0};
        int promoted = 0, reaped = 0, dropped = 0, forgotten = 0, expired = 0, batches_gone = 0;
        int dropped_expired = 0, tracks_gone = 0, aliases_gone = 0, holds_ended = 0;
        int64_t due = INT64_MAX;
        mode_leader_tick(pm); /* storage.forward's lease, about once a second */
        /* a forwarding node that follows a live leader leaves the
         * cluster's maintenance to it (it runs every job's work anyway);
         * it resumes when the lease it read ends (leader.c) */
        bool follow = mode_leader_follows(pm);
        int rc = follow ? 0 : promote_all(pm, mb, &promoted, &err);
        /* the rest once a tick, not at every deadline a promotion wakes for */
        bool housekeeping = !follow && rb_now_ms() >= housekeeping_due;
        if (!rc && !follow && (housekeeping || rb_now_ms() >= lease_due))
            rc = reap_all(pm, mb, &reaped, &err);
        if (!rc && housekeeping)
            housekeeping_due = rb_now_ms() + tick_ms() * 4 / 5;
        if (!rc && housekeeping)
            rc = batches(pm, rb_pg_cleanup_dead, &dropped, &err);
        if (!rc && housekeeping) /* jobs whose custom.expires_at passed, before they run */
            rc = batches(pm, rb_pg_expire, &dropped_expired, &err);
        if (dropped_expired) {
            pthread_mutex_lock(&pm->mu);
            mode_note_expired_locked(pm, pm->maint);
            mode_signal_loop(pm);
            pthread_mutex_unlock(&pm->mu);
        }
        if (!rc && housekeeping) /* the succeeded records of workflow jobs past their TTL */
            rc = batches(pm, rb_pg_deps_expire, &expired, &err);
        if (!rc && housekeeping) /* batches never committed, or finished past their retention */
            rc = batches(pm, rb_pg_batches_expire, &batches_gone, &err);
        if (!rc && housekeeping) /* progress records past their retention after the job's end */
            rc = batches(pm, rb_pg_track_expire, &tracks_gone, &err);
        if (!rc && housekeeping) /* debounce aliases past their retention */
            rc = batches(pm, rb_pg_debounce_expire, &aliases_gone, &err);
        if (!rc && !groups_started && !(rc = rb_pg_groups_start(pm->maint, &err)))
            groups_started = true; /* concurrency holds re-counted with this node's [groups] */
        if (!rc && housekeeping) /* groups' holds that ended (queues notified), idle rows */
            rc = batches(pm, rb_pg_groups_maint, &holds_ended, &err);
        if (!rc && housekeeping && rb_now_ms() >= workers_due) {
            int folded = 0; /* the engines' counter rows, into one per counter */
            rc = batches(pm, rb_pg_workers_cleanup, &forgotten, &err);
            if (!rc)
                rc = batches(pm, rb_pg_counters_fold, &folded, &err);
            if (!rc)
                workers_due = rb_now_ms() + RB_PGWORKERS_CLEANUP_MS;
        }
        if (!rc && !follow)
            rc = rb_pg_next_due(pm->maint, &due, &lease_due, &err);
        if (rc || follow)
            lease_due = 0; /* not known: the next wake-up reaps */
        /* a lost connection is the link's to log, once per outage */
        if (rc && !down && !rb_pg_lost(rc))
            rb_log(RB_LOG_WARN, "maintenance: %s (retrying)", rb_err_msg(&err));
        down = rc != 0;
        if (!follow) /* (no round trip to report) */
            mode_link_report(pm, RB_PGMODE_THREADS, rc, &err);
        if (reaped)
            rb_log(RB_LOG_INFO, "%d expired reservations failed", reaped);
        if (forgotten)
            rb_log(RB_LOG_DEBUG, "%d stale workers forgotten", forgotten);
        if (expired)
            rb_log(RB_LOG_DEBUG, "%d succeeded workflow records expired", expired);
        if (tracks_gone)
            rb_log(RB_LOG_DEBUG, "%d ended progress records forgotten", tracks_gone);
        if (aliases_gone)
            rb_log(RB_LOG_DEBUG, "%d debounce aliases forgotten", aliases_gone);
        if (batches_gone)
            rb_log(RB_LOG_INFO, "%d expired batches forgotten", batches_gone);
        if (promoted || reaped || dropped || dropped_expired || holds_ended)
            /* a discard may release children; a hold's end lets its group run */
            mode_note_ready(pm, NULL, 0); /* notifications are a hint: wake locally too */
        int64_t wait = tick_ms() * 4 / 5 + rand_r(&seed) % (tick_ms() * 2 / 5 + 1);
        pthread_mutex_lock(&pm->mu);
        /* the earliest deadline: the database's as read above, or a retry
         * this node's loop saw scheduled since (mode_maint_due); a retry
         * scheduled while it sleeps moves the wake earlier */
        int64_t now = rb_now_ms();
        if (due != INT64_MAX && due - now < wait)
            wait = due - now < 5 ? 5 : due - now;
        pm->maint_wake_at = now + wait;
        for (;;) {
            if (pm->maint_due_min < pm->maint_wake_at)
                pm->maint_wake_at = pm->maint_due_min;
            pm->maint_due_min = INT64_MAX;
            int64_t left = pm->maint_wake_at - rb_now_ms();
            if (pm->stop || left <= 0)
                break;
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += left / 1000;
            until.tv_nsec += (long)(left % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&pm->maint_cv, &pm->mu, &until) == ETIMEDOUT)
                break;
        }
        pm->maint_wake_at = 0; /* awake: what falls due now waits in maint_due_min */
        bool stop = pm->stop;
        pthread_mutex_unlock(&pm->mu);
        if (stop)
            break;
    }
    free(mb);
    return NULL;
}

void mode_maint_due(rb_pgmode *pm, int64_t due_ms)
{
    pthread_mutex_lock(&pm->mu);
    if (due_ms < pm->maint_due_min) {
        pm->maint_due_min = due_ms; /* its next sleep ends by then */
        if (pm->maint_wake_at && due_ms < pm->maint_wake_at)
            pthread_cond_broadcast(&pm->maint_cv); /* asleep past it: re-plan */
    }
    pthread_mutex_unlock(&pm->mu);
}
