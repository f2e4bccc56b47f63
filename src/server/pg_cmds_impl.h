/* What the distributed-mode command files share (pg_cmds.c: the data a
 * command keeps while its request is out, the table; pg_cmds_admin.c:
 * INFO, QUEUE, JOB, JOBS). Not for other modules. */
#ifndef RB_SERVER_PG_CMDS_IMPL_H
#define RB_SERVER_PG_CMDS_IMPL_H

#include "server/pg_cmds.h"
#include "server/pgmode.h"

/* What a command keeps alive while its request is out. */
typedef struct rb_pgcmd_data {
    json_t *arg;      /* the parsed argument (strings borrowed from it) */
    char **names;     /* QUEUE names (owned) */
    int n_names;
    char verb[16];
    rb_pg_filter f;
    rb_pg_info info;
    bool have_info;
    rb_pg_job job;
    bool have_job;
    rb_pg_job *jobs;
    size_t n_jobs;
    int64_t total;
    double *latency;
    size_t changed;
} rb_pgcmd_data;

/* Frees d (a request's data_free). */
void rb_pgcmd_data_free(void *d);
/* A zeroed rb_pgcmd_data holding arg (taken over, may be NULL), attached to
 * r as its data. */
rb_pgcmd_data *rb_pgcmd_attach(rb_pgreq *r, json_t *arg);
/* For a done handler: false when r succeeded (an outage ends); true after
 * replying the storage error and finishing r. */
bool rb_pgcmd_failed(rb_srv *srv, rb_pgreq *r);

/* The handlers (pg_cmds_admin.c). */
void rb_pgcmd_info(rb_conn *c, char *arg);
void rb_pgcmd_queue(rb_conn *c, char *arg);
void rb_pgcmd_job(rb_conn *c, char *arg);
void rb_pgcmd_jobs(rb_conn *c, char *arg);

#endif
