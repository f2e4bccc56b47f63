/* The server's internal state and the functions its files share: the loop
 * (server.c), connections (conn.c), replies (proto.c) and the command
 * handlers (cmd_*.c). The jobs are the engine's backend's (srv->eng->backend,
 * srv->eng->be: engine/engine.h); nothing here knows which one. Everything
 * here runs on the event loop's thread. */
#ifndef RB_SERVER_SRV_H
#define RB_SERVER_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <jansson.h>

#include "common/list.h"
#include "common/table.h"
#include "config/config.h"
#include "engine/engine.h"
#include "policy/rng.h"

typedef struct rb_srv rb_srv;

/* One client connection. Commands run one at a time: while `busy` (a reply
 * waits for a commit, or a FETCH waits for work) further lines stay
 * buffered. The struct outlives the socket while commits still refer to it
 * (refs > 0). */
typedef struct rb_conn {
    rb_link link;  /* in srv->conns, or srv->draining once closed */
    rb_srv *srv;
    struct bufferevent *bev;
    struct event *line_timeout; /* armed while half a command line waits (conn.c) */
    rb_eng_op *fetch_op; /* its FETCH while the engine runs it (cmd_jobs.c) */
    rb_worker *worker; /* from HELLO's wid, or NULL */
    int refs;          /* pending commit completions */
    bool hello_done, busy, closed;
    /* Plain sockets write replies at once (rb_conn_flush) and arm EV_WRITE
     * only while the socket is full (write_armed); TLS ones go through
     * their bufferevent. */
    bool direct, write_armed;
    long iterations;   /* password hashing, 0 without a password */
    char salt[33];
} rb_conn;

struct rb_srv {
    rb_config cfg;
    rb_eng *eng; /* the job engine (engine/engine.h): the loop (eng->base),
                    the backend, the metrics, the waiting FETCHes, the workers */
    struct event *sigterm_ev, *sigint_ev, *grace_ev;
    struct event *watchdog_ev; /* systemd keep-alives (sdnotify.h), or NULL */
    struct evconnlistener *listener;
    rb_rng rng;       /* connections' salts, the HTTP API's simulations */
    rb_list conns;   /* every open connection */
    rb_list draining; /* closed connections still sending their last reply */
    int64_t started_ms;
    uint64_t command_count;
    int quiet_all;     /* shutting down: every BEAT is told this signal */
    struct rb_http *http;       /* the HTTP API and dashboard, or NULL (server/http.h) */
    struct rb_tls *tls;         /* TLS context when tls_cert is set, else NULL (server/tls.h) */
    struct rb_tls *http_tls;    /* HTTPS context (rb_http_prepare): tls itself, or its own one
                                 * from http_tls_cert (freed when != tls); NULL: plain HTTP */
    struct event *accept_ev;    /* re-enables the listener after EMFILE (server.c) */
    struct rb_cron *cron;       /* the [[cron]] entries' timer (server/cron.h) */
    struct rb_forward *fwd;     /* storage.forward's relays (server/forward.h), or NULL */
};

/* --- server.c: the in-memory server, without a listener or signals ---
 * rb_server_run() is these plus configuration, listening and signals; a
 * harness (fuzz/fuzz_protocol.c) uses them alone to run commands on a
 * connection it made (rb_conn_accept on one end of a socketpair). */
/* A zeroed server with its tables, metrics and rng set up, and no backend
 * yet; cfg is zeroed: fill it (rb_config_init or rb_config_load) before
 * opening the backend (srv->eng->backend->open, or a test's
 * rb_sq_open_store). */
rb_srv *rb_srv_alloc(void);
/* Creates srv->eng->base and attaches the backend to it. */
void rb_srv_loop_new(rb_srv *srv);
/* Closes every connection, finishes the commit in progress, and frees srv
 * and everything it owns; any step of the set-up may be missing. */
void rb_srv_free(rb_srv *srv);

/* --- proto.c: replies (no-ops on a closed connection) --- */
/* For a done function: false when op succeeded; true after replying the
 * error to op->c ("storage error: ..." for a store failure, the message
 * alone for a refused request) and finishing op. */
bool rb_reply_failed(rb_srv *srv, rb_eng_op *op);
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
/* A new client socket: refused over server.max_connections (this node's
 * connections and its relays, server/forward.h), relayed to the leader
 * when forwarding says so, else served here (rb_conn_serve). */
void rb_conn_accept(rb_srv *srv, evutil_socket_t fd);
/* Serves fd here: the greeting, then its commands (no limit check). */
void rb_conn_serve(rb_srv *srv, evutil_socket_t fd);
/* The current command is complete: read and run the next buffered line. */
void rb_conn_done(rb_conn *c);
/* Drops a reference taken for a pending completion; frees a closed conn. */
void rb_conn_unref(rb_conn *c);
void rb_conn_close(rb_conn *c);
/* Sends what c's replies queued, now, without a trip through the loop;
 * what the socket does not take is sent when it becomes writable. No-op
 * for TLS connections (their bufferevent writes) and closed ones. */
void rb_conn_flush(rb_conn *c);
/* The engine's hooks (engine.h rb_eng_client): c runs an op (busy, held)
 * and the op is over (released). */
extern const rb_eng_client rb_conn_client;

/* --- commands.c: the command table --- */
/* Runs one command line (NUL-terminated, without its line ending). */
void rb_command_run(rb_conn *c, char *line);

/* --- validate.c --- */
/* Queue names: 1 to RB_QUEUE_NAME_MAX bytes (engine/jobdef.h), no spaces
 * or control bytes. */
int rb_queue_name_valid(const char *q);
/* Checks a pushed job (jid, jobtype, args, at, reserve_for, priority,
 * retry_policy) and fills in created_at. Returns 0 or RB_EINVAL with err. */
int rb_job_validate(rb_srv *srv, json_t *job, rb_err *err);


#endif
