/* The work commands' distributed-mode handlers (pg_cmds.c), chosen in
 * place of the single-node ones (cmd_jobs.c) when the server runs on
 * PostgreSQL (srv->pgm set). */
#ifndef RB_SERVER_PG_CMDS_H
#define RB_SERVER_PG_CMDS_H

#include "server/cmds.h"

typedef void (*rb_cmd_fn)(rb_conn *c, char *arg);

/* The PostgreSQL handler for a single-node handler of the command table
 * (PUSH, PUSHB, FETCH, ACK, FAIL, SNOOZE, EXTEND); fn itself for the
 * others: those that go through the job engine (INFO, FLUSH, MUTATE,
 * QUEUE, JOB, JOBS, WORKERS: engine/engine.h), and HELLO, BEAT and END,
 * which reach the database themselves when needed. */
rb_cmd_fn rb_pgcmd_handler(rb_cmd_fn fn);

#endif
