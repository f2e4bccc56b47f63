/* Distributed mode's listen thread (started by mode.c's rb_pgmode_attach):
 * turns PostgreSQL's NOTIFY on its own LISTEN connection (pm->listen, the
 * thread's alone) into ready queues handed to the loop, which wakes the
 * FETCHes parked on them (fetch.c); after a lost connection it reconnects
 * and wakes every parked FETCH once. Also mode_stopping, which the
 * maintenance thread shares. Listen thread, except mode_stopping (any). */
#include "backend/pg/mode_impl.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/timeutil.h"
#include "common/log.h"

/* --- the listen thread --- */

bool mode_stopping(rb_pgmode *pm)
{
    pthread_mutex_lock(&pm->mu);
    bool s = pm->stop;
    pthread_mutex_unlock(&pm->mu);
    return s;
}

/* How often an idle listen connection is checked with a round trip: a
 * connection cut off without a reset stays silent (keepalives take longer,
 * and a proxy's kernel answers them). */
#define LISTEN_PING_MS 5000

/* Logs the loss of the listen connection: a warning while the link is up
 * (notifications alone are lost, the poll covers them), else a detail of
 * the outage the link has logged. Returns whether it warned. */
static bool note_lost(rb_pgmode *pm, const rb_err *err)
{
    pthread_mutex_lock(&pm->mu);
    bool down = pm->link.down;
    pthread_mutex_unlock(&pm->mu);
    rb_log(down ? RB_LOG_DEBUG : RB_LOG_WARN, "notifications lost: %s (polling until reconnected)",
           rb_err_msg(err));
    return !down;
}

/* Waits up to ms for the stop pipe; true when stopping. */
static bool nap(rb_pgmode *pm, int ms)
{
    struct pollfd p = {pm->stop_pipe[0], POLLIN, 0};
    poll(&p, 1, ms);
    return mode_stopping(pm);
}

void *mode_listen_thread(void *arg)
{
    rb_pgmode *pm = arg;
    bool down = false, warned = false;
    int64_t quiet_since = rb_mono_ms();
    while (!mode_stopping(pm)) {
        rb_err err = {0};
        if (!rb_pg_connected(pm->listen)) {
            if (rb_pg_reconnect(pm->listen, &err)) {
                if (!down)
                    warned = note_lost(pm, &err);
                down = true;
                if (nap(pm, 100))
                    break;
                continue;
            }
            rb_log(warned ? RB_LOG_INFO : RB_LOG_DEBUG, "notifications: listening again");
            down = warned = false;
            quiet_since = rb_mono_ms();
            mode_note_ready(pm, NULL, 0); /* what was missed meanwhile */
        }
        struct pollfd p[2] = {{rb_pg_socket(pm->listen), POLLIN, 0},
                              {pm->stop_pipe[0], POLLIN, 0}};
        int ready = poll(p, 2, 1000);
        if (ready < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (ready <= 0 && rb_mono_ms() - quiet_since >= LISTEN_PING_MS) {
            /* silent for a while: still connected? (bounded by the
             * engine's io_timeout; a failure drops the connection) */
            quiet_since = rb_mono_ms();
            if (rb_pg_ping(pm->listen, &err)) {
                warned = note_lost(pm, &err);
                down = true;
                continue;
            }
        }
        if (ready > 0)
            quiet_since = rb_mono_ms();
        char **queues = NULL;
        size_t n = 0;
        if (rb_pg_drain(pm->listen, &queues, &n, &err)) {
            if (!down)
                warned = note_lost(pm, &err);
            down = true;
            continue;
        }
        if (n)
            mode_note_ready(pm, queues, n); /* the names are taken over */
        free(queues);
    }
    return NULL;
}
