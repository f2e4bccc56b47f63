/* The job commands in distributed mode (pgmode.h) not yet in the job
 * engine (engine/engine.h): the table that maps each single-node handler to
 * its PostgreSQL twin (pg_cmds_admin.c), and what those share. Each handler checks its argument
 * on the loop thread with the single-node rules and messages, posts one
 * request and replies from its completion; the engine's statuses map onto
 * the same replies as the single-node server's (docs/distributed.md). */
#include "server/pg_cmds_impl.h"

#include <stdlib.h>

#include "common/buf.h"
#include "server/pg_workers.h"

void rb_pgcmd_data_free(void *p)
{
    rb_pgcmd_data *d = p;
    if (!d)
        return;
    json_decref(d->arg);
    for (int i = 0; i < d->n_names; i++)
        free(d->names[i]);
    free(d->names);
    if (d->have_info)
        rb_pg_info_release(&d->info);
    if (d->have_job)
        rb_pg_job_release(&d->job);
    rb_pg_jobs_free(d->jobs, d->n_jobs);
    free(d->latency);
    free(d);
}

rb_pgcmd_data *rb_pgcmd_attach(rb_pgreq *r, json_t *arg)
{
    rb_pgcmd_data *d = rb_xcalloc(1, sizeof *d);
    d->arg = arg;
    r->data = d;
    r->data_free = rb_pgcmd_data_free;
    return d;
}

/* A request that failed in the database: the error reply and the end. */
bool rb_pgcmd_failed(rb_srv *srv, rb_pgreq *r)
{
    if (!r->rc) {
        rb_pgmode_storage_ok(srv);
        return false;
    }
    rb_pgmode_storage_error(srv, r);
    rb_pgreq_finish(srv, r);
    return true;
}

/* --- the table --- */

static const struct {
    void (*sqlite)(rb_conn *, char *);
    void (*pg)(rb_conn *, char *);
} table[] = {
    {rb_cmd_info, rb_pgcmd_info},
    {rb_cmd_queue, rb_pgcmd_queue},
    {rb_cmd_job, rb_pgcmd_job},
    {rb_cmd_jobs, rb_pgcmd_jobs},
    {rb_cmd_workers, rb_pgcmd_workers},
};

rb_cmd_fn rb_pgcmd_handler(rb_cmd_fn fn)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].sqlite == fn)
            return table[i].pg;
    return fn;
}
