/* Distributed mode's worker registry, the server's side (docs/distributed.md,
 * "Workers"): HELLO and BEAT record the worker in the cluster's table
 * (sql.h, rb_pg_workers_seen; batched on the database threads),
 * BEAT answers the signal stored there (WORKERS and the HTTP API's worker
 * endpoints signal and list the cluster's live workers through the job
 * engine, backend.c), and every node refreshes the rows of the
 * workers connected to it. Each node still keeps
 * its own connections' workers in the engine's table (engine/workers.h:
 * connection counts, and whether a BEAT comes from a worker connected
 * here). Loop thread, except
 * rb_pgworkers_run_seen. */
#ifndef RB_BACKEND_PG_REGISTRY_H
#define RB_BACKEND_PG_REGISTRY_H

#include <event2/util.h>

#include "backend/pg/request.h"

/* How often a node refreshes the rows of the workers connected to it (well
 * inside the liveness window), and how often its maintenance thread
 * deletes stale rows. */
#define RB_PGWORKERS_REFRESH_MS (RB_PG_WORKER_TTL_MS / 4)
#define RB_PGWORKERS_CLEANUP_MS 5000

/* The engine's HELLO (rb_backend.hello) in distributed mode: records the
 * worker, with its HELLO ("pwdhash" left out) as its info, and completes
 * once the database has it. A database error is logged as other commands
 * log it and HELLO still succeeds: the worker's next BEAT on this node or
 * the node's refresh records it. */
void rb_pgworkers_hello(rb_eng *eng, rb_eng_op *op);
/* The engine's BEAT (rb_backend.beat) in distributed mode: records the
 * beat; the stored signal, RB_UNKNOWN_WORKER when no node knows the wid as
 * a live worker, or the storage error (none for a worker connected here:
 * it is told 0). */
void rb_pgworkers_beat(rb_eng *eng, rb_eng_op *op);

/* On a database thread: one rb_pg_workers_seen for the n RB_PGR_SEEN
 * requests v (or their error in each). */
void rb_pgworkers_run_seen(rb_pg *pg, rb_pgreq **v, size_t n);
/* This node's name ("host:pid"), in rb_workers and rb_parked. Any thread. */
const char *rb_pgworkers_node(void);
/* The refresh timer's callback (arg: the rb_eng): marks every worker
 * connected to this node as seen, in one request. */
void rb_pgworkers_refresh(evutil_socket_t fd, short what, void *arg);

#endif
