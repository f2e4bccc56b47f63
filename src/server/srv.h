/* The server's internal state and the functions its files share: the loop
 * (server.c), connections (conn.c), replies (proto.c), the single-node
 * backend's state machine (backend/sqlite/core.c, backend/sqlite/fail.c) and the
 * command handlers (cmd_*.c). Everything here runs on the event loop's
 * thread. */
#ifndef RB_SERVER_SRV_H
#define RB_SERVER_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <jansson.h>

#include "backend/sqlite/deps.h"
#include "backend/sqlite/jobs.h"
#include "backend/sqlite/store.h"
#include "backend/sqlite/writer.h"
#include "common/list.h"
#include "common/table.h"
#include "config/config.h"
#include "engine/engine.h"
#include "policy/rng.h"

/* A worker process known by its HELLO wid. */
typedef struct rb_worker {
    void *hnext;
    char *wid;
    int64_t last_beat_ms;
    int signal; /* 0, RB_WORKER_QUIET or RB_WORKER_TERMINATE: said at its next BEAT */
    int conns;  /* open connections that said this wid */
} rb_worker;

enum { RB_WORKER_QUIET = 1, RB_WORKER_TERMINATE = 2 };

typedef struct rb_srv rb_srv;
typedef struct rb_mem_unique rb_mem_unique; /* backend/sqlite/unique.h */
typedef struct rb_mem_track rb_mem_track;   /* backend/sqlite/track.h */
typedef struct rb_mem_throttle rb_mem_throttle; /* backend/sqlite/throttle.h */

/* One client connection. Commands run one at a time: while `busy` (a reply
 * waits for a commit, or a FETCH waits for work) further lines stay
 * buffered. The struct outlives the socket while commits still refer to it
 * (refs > 0). */
typedef struct rb_conn {
    rb_link link;  /* in srv->conns, or srv->draining once closed */
    rb_link wlink; /* in srv->waiters while a FETCH waits */
    rb_srv *srv;
    struct bufferevent *bev;
    struct event *fetch_timeout;
    struct event *line_timeout; /* armed while half a command line waits (conn.c) */
    char **fetch_queues; /* the waiting FETCH's queue names; owned */
    int n_fetch_queues;
    rb_worker *worker; /* from HELLO's wid, or NULL */
    int refs;          /* pending commit completions */
    bool hello_done, busy, waiting, closed;
    /* Plain sockets write replies at once (rb_conn_flush) and arm EV_WRITE
     * only while the socket is full (write_armed); TLS ones go through
     * their bufferevent. */
    bool direct, write_armed;
    long iterations;   /* password hashing, 0 without a password */
    char salt[33];
} rb_conn;

struct rb_srv {
    struct event_base *base;
    rb_config cfg;
    rb_store *store;
    rb_writer *writer;
    struct event *writer_ev, *timer_ev, *sigterm_ev, *sigint_ev, *grace_ev;
    struct event *watchdog_ev; /* systemd keep-alives (sdnotify.h), or NULL */
    struct event *flush_ev; /* hands the open batch to the writer (server.c) */
    struct evconnlistener *listener;
    rb_jobs jobs;
    rb_deps deps;    /* job dependencies (backend/sqlite/deps.h) */
    rb_rng rng;
    rb_table workers;
    rb_list conns;   /* every open connection */
    rb_list waiters; /* connections in a waiting FETCH, oldest first */
    rb_list draining; /* closed connections still sending their last reply */
    int64_t started_ms;
    int64_t armed_ms;  /* deadline the timer is set for, INT64_MAX when unset */
    uint64_t command_count;
    int64_t total_processed, total_failures;
    int quiet_all;     /* shutting down: every BEAT is told this signal */
    bool stopping;
    struct rb_metrics *metrics; /* counters for /metrics (server/metrics.h) */
    struct rb_http *http;       /* the HTTP API and dashboard, or NULL (server/http.h) */
    struct rb_tls *tls;         /* TLS context when tls_cert is set, else NULL (server/tls.h) */
    struct rb_tls *http_tls;    /* HTTPS context (rb_http_prepare): tls itself, or its own one
                                 * from http_tls_cert (freed when != tls); NULL: plain HTTP */
    struct event *accept_ev;    /* re-enables the listener after EMFILE (server.c) */
    struct rb_pgmode *pgm;      /* distributed mode (backend/pg/mode.h), else NULL */
    const struct rb_backend *backend; /* the job engine's backend (engine/engine.h):
                                       * rb_backend_mem, or rb_backend_pg with pgm */
    /* Single node: Faktory Enterprise batches by bid (backend/sqlite/batch.h) */
    rb_table batches;
    /* The jids pushed into each batch, by bid, for its page (backend/sqlite/
     * batch.c): a superset of its stored members (checked when read),
     * built by one pass over the jobs at the first page read after start,
     * then kept up by each member's PUSH. */
    rb_table batch_members;
    bool batch_members_built;
    int64_t batch_callbacks;    /* callback jobs enqueued, all time (INFO) */
    struct event *batch_ev;     /* the expiry sweep, armed with the first batch */
    rb_mem_unique *unique;      /* single node: unique locks, expiring jobs (backend/sqlite/unique.h) */
    struct rb_cron *cron;       /* the [[cron]] entries' timer (server/cron.h) */
    json_t *cron_ticks;         /* single node: the stored "cron:NAME" meta rows (key ->
                                   tick), a cron push's condition (backend/sqlite/backend.c) */
    rb_mem_track *track;        /* single node: progress records (backend/sqlite/track.h) */
    rb_mem_throttle *throttle;  /* single node: throttles' fetch times (backend/sqlite/throttle.h) */
};

/* --- server.c: the in-memory server, without a listener or signals ---
 * rb_server_run() is these plus configuration, listening and signals; a
 * harness (fuzz/fuzz_protocol.c) uses them alone to run commands on a
 * connection it made (rb_conn_accept on one end of a socketpair). */
/* A zeroed server with its tables, metrics and rng set up; cfg is zeroed:
 * fill it (rb_config_init or rb_config_load) before rb_srv_recover. */
rb_srv *rb_srv_alloc(void);
/* Takes over store (closed by rb_srv_free even on failure), loads its jobs,
 * counters and paused queues, and starts the writer thread. Returns 0 or
 * the load's / writer's error. */
int rb_srv_recover(rb_srv *srv, rb_store *store, rb_err *err);
/* Creates srv->base and hooks the writer (or distributed mode) to it. */
void rb_srv_loop_new(rb_srv *srv);
/* Closes every connection, finishes the commit in progress, and frees srv
 * and everything it owns; any step of the set-up may be missing. */
void rb_srv_free(rb_srv *srv);

/* --- proto.c: replies (no-ops on a closed connection) --- */
void rb_reply_ok(rb_conn *c);
void rb_reply_simple(rb_conn *c, const char *s);
void rb_reply_bulk(rb_conn *c, const char *data, size_t len);
void rb_reply_null(rb_conn *c);
/* "-ERR <message>"; CR/LF in the message become spaces. */
void rb_reply_err(rb_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error reply with its own code instead of ERR: "-CODE msg" (Faktory's
 * coded errors, e.g. "-NOTUNIQUE Job not unique"). */
void rb_reply_err_code(rb_conn *c, const char *code, const char *msg);
/* Replies a JSON value as a bulk string; takes over v. */
void rb_reply_json(rb_conn *c, json_t *v);

/* --- conn.c --- */
/* A connection that has not said HELLO within server.hello_timeout of
 * connecting is closed; a command line must be complete within
 * server.line_timeout of its first byte, or the connection is closed (a
 * client stalled mid-line). Both 10 s by default. */
/* Replies a client has not read, above which (checked before each command)
 * it is disconnected: the larger of this and 2 x server.max_job_bytes. */
#define RB_MAX_UNREAD_BYTES (4u << 20)
void rb_conn_accept(rb_srv *srv, evutil_socket_t fd);
/* The current command is complete: read and run the next buffered line. */
void rb_conn_done(rb_conn *c);
/* Drops a reference taken for a pending completion; frees a closed conn. */
void rb_conn_unref(rb_conn *c);
void rb_conn_close(rb_conn *c);
/* Sends what c's replies queued, now, without a trip through the loop;
 * what the socket does not take is sent when it becomes writable. No-op
 * for TLS connections (their bufferevent writes) and closed ones. */
void rb_conn_flush(rb_conn *c);
/* Parks c in a waiting FETCH (queues taken over) for up to 2 s. */
void rb_conn_wait_fetch(rb_conn *c, char **queues, int n);
void rb_conn_stop_waiting(rb_conn *c);

/* --- commands.c: the command table --- */
/* Runs one command line (NUL-terminated, without its line ending). */
void rb_command_run(rb_conn *c, char *line);

/* --- backend/sqlite/core.c: the state machine over jobs + store --- */
/* The job's row to the current batch. */
void rb_srv_persist(rb_srv *srv, const rb_job *j);
/* Deletes the job from memory and the store. */
void rb_srv_forget(rb_srv *srv, rb_job *j);
void rb_srv_persist_counters(rb_srv *srv);
/* Makes j ENQUEUED now (setting enqueued_at), or SCHEDULED when at_ms is in
 * the future. Does not persist. */
void rb_srv_enqueue(rb_srv *srv, rb_job *j, int64_t at_ms, int64_t now);
/* Makes q a known queue (INFO lists it until QUEUE REMOVE), writing its
 * "queue:NAME" meta row into the open batch the first time; known false:
 * forgets it and deletes the row. A no-op when nothing changes. */
void rb_srv_queue_known(rb_srv *srv, rb_queue *q, bool known);
/* The single node's rb_backend.refetch: reserves a ready job of c's queues
 * for c, waiting in a FETCH (replied after its commit); false when no job
 * is ready in any queue (waking the others is pointless). */
bool rb_srv_refetch(rb_srv *srv, rb_conn *c);
/* The single node's end of an op that changed something (backend.c, and
 * batch.c's BATCH): completes op once everything submitted so far is on
 * disk (or with the commit's error, applied unknown). */
void rb_mem_after_commit(rb_srv *srv, rb_eng_op *op);
/* Re-arms the timer for the earliest deadline. */
void rb_srv_arm(rb_srv *srv);
/* Reserves the first ready job of the given queues (in their order; paused
 * ones skipped) for the worker wid (NULL: none recorded) and persists it;
 * NULL when none is ready. */
rb_job *rb_srv_reserve(rb_srv *srv, const char *wid, char **queues, int n);
/* Puts the job jid, reserved by a FETCH whose commit failed, back in its
 * queue (the attempt not counted). */
void rb_srv_unreserve(rb_srv *srv, const char *jid);
/* Completes c's command after everything submitted so far is on disk:
 * replies +OK, or the error. */
void rb_srv_reply_after_commit(rb_srv *srv, rb_conn *c);
rb_worker *rb_srv_worker(rb_srv *srv, const char *wid, bool create);
/* Sets a top-level field of a job's JSON text (replacing it). */
void rb_job_set_field(rb_job *j, const char *key, json_t *value);
/* A fresh random jid (24 hex characters); caller frees. */
char *rb_srv_new_jid(rb_srv *srv);
/* Creates a PENDING job from a job object rb_job_validate accepted, filling
 * in its defaults (queue), and persists it; the job engine's single-node
 * backend makes it visible after the commit (backend/sqlite/backend.c). 0, or
 * RB_EEXIST when the jid is taken (nothing is created). */
int rb_srv_push(rb_srv *srv, json_t *job);

/* --- backend/sqlite/fail.c --- */
/* Runs a failure of working job j through its policy (rb_fail_input:
 * engine/engine.h): retry, dead, discard or catch; persists the result. j
 * may be freed (discard). */
int rb_srv_fail_job(rb_srv *srv, rb_job *j, const rb_fail_input *in, int64_t now, rb_err *err);
/* The death of waiting or blocked job j because its parent failed
 * (docs/workflows.md): dead with reason "dependency" as a failure's death
 * (history, failure hash, its policy's catch job), then its own children
 * told. */
void rb_srv_dep_kill(rb_srv *srv, rb_job *j, const char *parent, int64_t now);

/* --- validate.c --- */
/* Queue names: 1 to RB_QUEUE_NAME_MAX bytes, no spaces or control bytes. */
#define RB_QUEUE_NAME_MAX 200
int rb_queue_name_valid(const char *q);
/* Checks a pushed job (jid, jobtype, args, at, reserve_for, priority,
 * retry_policy) and fills in created_at. Returns 0 or RB_EINVAL with err. */
int rb_job_validate(rb_srv *srv, json_t *job, rb_err *err);

/* Reads an integer/string field, NULL/default when absent or mistyped. */
const char *rb_srv_json_str(const json_t *o, const char *key);

#endif
