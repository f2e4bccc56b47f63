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

#include "server/log.h"

/* --- the listen thread --- */

bool mode_stopping(rb_pgmode *pm)
{
    pthread_mutex_lock(&pm->mu);
    bool s = pm->stop;
    pthread_mutex_unlock(&pm->mu);
    return s;
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
    bool down = false;
    while (!mode_stopping(pm)) {
        rb_err err = {0};
        if (!rb_pg_connected(pm->listen)) {
            if (rb_pg_reconnect(pm->listen, &err)) {
                if (!down)
                    rb_log(RB_LOG_WARN, "notifications lost: %s (polling until reconnected)",
                           rb_err_msg(&err));
                down = true;
                if (nap(pm, 100))
                    break;
                continue;
            }
            if (down)
                rb_log(RB_LOG_INFO, "notifications: listening again");
            down = false;
            mode_note_ready(pm, NULL, 0); /* what was missed meanwhile */
        }
        struct pollfd p[2] = {{rb_pg_socket(pm->listen), POLLIN, 0},
                              {pm->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        char **queues = NULL;
        size_t n = 0;
        if (rb_pg_drain(pm->listen, &queues, &n, &err)) {
            if (!down)
                rb_log(RB_LOG_WARN, "notifications lost: %s (polling until reconnected)",
                       rb_err_msg(&err));
            down = true;
            continue;
        }
        if (n)
            mode_note_ready(pm, queues, n); /* the names are taken over */
        free(queues);
    }
    return NULL;
}
