/* What the distributed-mode command files share (pg_cmds.c: the data a
 * command keeps while its request is out, the table; pg_cmds_work.c: PUSH,
 * PUSHB, FETCH, ACK, FAIL, SNOOZE, EXTEND). The administration commands
 * have one handler for both modes (cmd_admin.c, through the job engine).
 * Not for other modules. */
#ifndef RB_SERVER_PG_CMDS_IMPL_H
#define RB_SERVER_PG_CMDS_IMPL_H

#include "server/pg_cmds.h"
#include "server/pgmode.h"

/* What a command keeps alive while its request is out. */
typedef struct rb_pgcmd_data {
    json_t *arg;      /* the parsed argument (strings borrowed from it) */
    json_t *errors;   /* PUSHB: per-jid errors */
    char **texts;     /* PUSH: job texts */
    size_t n_texts;
    bool bulk;        /* PUSHB */
    char verb[16];    /* SNOOZE, EXTEND */
    char retry_after[RB_CMD_RETRY_AFTER]; /* FAIL: a numeric retry_after as text */
} rb_pgcmd_data;

/* Frees d (a request's data_free). */
void rb_pgcmd_data_free(void *d);
/* A zeroed rb_pgcmd_data holding arg (taken over, may be NULL), attached to
 * r as its data. */
rb_pgcmd_data *rb_pgcmd_attach(rb_pgreq *r, json_t *arg);
/* For a done handler: false when r succeeded (an outage ends); true after
 * replying the storage error and finishing r. */
bool rb_pgcmd_failed(rb_srv *srv, rb_pgreq *r);

/* The handlers (pg_cmds_work.c). */
void rb_pgcmd_push(rb_conn *c, char *arg);
void rb_pgcmd_pushb(rb_conn *c, char *arg);
void rb_pgcmd_fetch(rb_conn *c, char *arg);
void rb_pgcmd_ack(rb_conn *c, char *arg);
void rb_pgcmd_fail(rb_conn *c, char *arg);
void rb_pgcmd_snooze(rb_conn *c, char *arg);
void rb_pgcmd_extend(rb_conn *c, char *arg);

#endif
