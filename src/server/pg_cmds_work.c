/* Distributed mode's FETCH on the PostgreSQL engine (pg_cmds_impl.h); the
 * other work commands go through the job engine (cmd_jobs.c,
 * backend_pg.c). */
#include "server/pg_cmds_impl.h"

/* --- FETCH --- */

void rb_pgcmd_fetch(rb_conn *c, char *arg)
{
    int n;
    char **queues = rb_cmd_fetch_queues(c, arg, &n);
    if (!queues)
        return;
    rb_pgmode_fetch(c->srv, c, queues, n);
}
