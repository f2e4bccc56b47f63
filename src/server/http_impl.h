/* What the HTTP files share (http.c: listener, routing, auth, static files,
 * /metrics; http_guard.c: the refusals of foreign Host names, cross-origin
 * requests and bodies that are not JSON, and the security headers; http_api.c: read endpoints; http_enterprise.c: cron, throttles
 * and the other Enterprise views; http_actions.c: actions, answered
 * after their commit; http_json.c: replies, request parsing and job-engine
 * ops). Every endpoint has one handler for both modes, through the job
 * engine (engine/engine.h). Not for other modules. Loop thread only. */
#ifndef RB_SERVER_HTTP_IMPL_H
#define RB_SERVER_HTTP_IMPL_H

#include <stdbool.h>

#include <event2/http.h>
#include <jansson.h>

#include "engine/engine.h"
#include "server/http.h"
#include "server/srv.h"

/* Largest request body accepted (policy simulations, bulk actions). */
#define RB_HTTP_MAX_BODY (1024 * 1024)

struct rb_http {
    rb_srv *srv;
    struct evhttp *eh;
    struct event *tick; /* once a second: throughput sample */
    /* The names a request's Host may carry besides [server] http_hosts
     * and IP addresses (rb_http_host_allowed), set once listening: */
    char *listen_name; /* the listen address's host name, NULL: an IP or none; owned */
    bool local;        /* it listens on loopback or every interface: "localhost" too */
};

/* A request being handled: the path split into decoded segments after
 * "/api/" (e.g. {"job", "J1", "retry"}). */
typedef struct rb_http_req {
    rb_http *h;
    struct evhttp_request *req;
    char **seg;
    int nseg;
} rb_http_req;

typedef void (*rb_http_handler)(rb_http_req *r);

/* --- http_guard.c: refusals before any handler (docs/http.md, "Security") --- */
/* Adds the headers every reply carries: Content-Security-Policy (scripts,
 * styles and requests from this server only; frame-ancestors 'none'),
 * X-Frame-Options: DENY, Referrer-Policy: no-referrer,
 * X-Content-Type-Options: nosniff and Cross-Origin-Resource-Policy:
 * same-origin. */
void rb_http_security_headers(struct evkeyvalq *out);
/* Sets h->listen_name from addr ("HOST:PORT", "[V6]:PORT", ":PORT") and
 * h->local; local: the bound socket is a loopback or wildcard address. */
void rb_http_hosts_init(rb_http *h, const char *addr, bool local);
/* False after answering 421 when req's Host header names a host this
 * server does not answer to: not an IP address, not the listen address's
 * name, not localhost while listening on loopback or every interface, and
 * matching no [server] http_hosts entry (["*"]: every Host passes). A
 * request without Host (HTTP/1.0) passes. Against DNS rebinding: a page
 * whose name resolves to this server sends its own name as Host. */
bool rb_http_host_allowed(rb_http *h, struct evhttp_request *req);
/* False after answering 403 when req is a state-changing request (any
 * method but GET, HEAD and OPTIONS) a browser sent from another origin:
 * its Sec-Fetch-Site is neither same-origin nor none, or, without
 * Sec-Fetch-Site, its Origin is not http(s)://HOST of its own Host
 * header. A request with neither header (curl, scripts) passes. */
bool rb_http_same_origin(struct evhttp_request *req);
/* False after answering 415 when req has a body or a Content-Type and it
 * is not application/json (parameters such as charset allowed): no form
 * or text body reaches an action. A request with neither passes. */
bool rb_http_json_body(struct evhttp_request *req);

/* --- http_json.c --- */
/* Sends v (taken over) as the JSON reply with the given status. */
void rb_http_reply_json(struct evhttp_request *req, int status, json_t *v);
/* Sends {"error": {"status": S, "message": M}} with status S. */
void rb_http_reply_error(struct evhttp_request *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends a body of the given type as is. */
void rb_http_reply_raw(struct evhttp_request *req, int status, const char *type, const char *data,
                       size_t len);
/* The request body parsed as JSON (any value; an empty body is {}). On
 * failure replies 400 and returns NULL. */
json_t *rb_http_body_json(struct evhttp_request *req);
/* The request body as a NUL-terminated string (caller frees). */
char *rb_http_body_text(struct evhttp_request *req);
/* The decoded value of query parameter name (caller frees), or NULL. */
char *rb_http_query(struct evhttp_request *req, const char *name);
/* Query parameter name as an integer in [lo, hi], def when absent. Returns
 * false after replying 400 when it is not one. */
bool rb_http_query_int(struct evhttp_request *req, const char *name, long long lo, long long hi,
                       long long def, long long *out);

/* --- http_json.c: job-engine ops on behalf of a request --- */
/* What a request keeps while its op is out (the op's arg): the request to
 * answer and strings the op borrows. */
typedef struct rb_api_call {
    struct evhttp_request *req;
    char *strs[4];   /* owned */
    char action[16]; /* the path's action, for the reply */
} rb_api_call;
/* A new op of kind answering r (no protocol connection) with its
 * rb_api_call, freed with the op. */
rb_eng_op *rb_api_op(rb_http_req *r, rb_eng_kind kind, void (*done)(rb_srv *, rb_eng_op *));
/* rb_api_op for a request outside /api/ (/metrics). */
rb_eng_op *rb_api_op_for(struct evhttp_request *req, rb_eng_kind kind,
                         void (*done)(rb_srv *, rb_eng_op *));
/* op's rb_api_call. */
rb_api_call *rb_api_call_of(rb_eng_op *op);
/* For a done function: false when op succeeded; true after answering 500
 * "storage error: ..." (400 with the message for a refused request) and
 * finishing op. */
bool rb_api_failed(rb_srv *srv, rb_eng_op *op);

/* --- http_groups.c: /api/groups (GROUP and GROUPS) --- */
void rb_api_groups(rb_http_req *r);
void rb_api_group(rb_http_req *r);
void rb_api_group_action(rb_http_req *r);

/* --- http_api.c: read endpoints --- */
void rb_api_info(rb_http_req *r);
void rb_api_stats(rb_http_req *r);
void rb_api_queues(rb_http_req *r);
void rb_api_jobs(rb_http_req *r);
void rb_api_job(rb_http_req *r);
void rb_api_workflow(rb_http_req *r);
void rb_api_track(rb_http_req *r); /* http_track.c */
void rb_api_batches(rb_http_req *r);
void rb_api_batch(rb_http_req *r);
void rb_api_workers(rb_http_req *r);
void rb_api_simulate(rb_http_req *r);
/* A job as listed: jid, jobtype, queue, state, attempts, times, error. New
 * reference. */
json_t *rb_api_summary(const rb_job_view *j);
/* The whole schedule the effective policy of job (its JSON object) gives
 * from first_ms (0: now), as GET /api/job shows it. New reference. */
json_t *rb_api_schedule(rb_srv *srv, int64_t first_ms, json_t *job);

/* ms as API time text, or JSON null when ms <= 0 (never). New reference. */
json_t *rb_api_time_or_null(int64_t ms);
/* An INFO op answering req (GET /api/info, /api/queues, /metrics) with
 * its rb_api_call: every known queue on a single node, and with latency
 * each queue's latency_s. */
rb_eng_op *rb_api_info_op(struct evhttp_request *req, void (*done)(rb_srv *, rb_eng_op *),
                          bool latency);
/* A queue as listed: name, size, latency_s, paused. New reference. */
json_t *rb_api_queue_json(const char *name, int64_t size, double latency_s, bool paused);

/* --- http_enterprise.c: Faktory Enterprise's views beside the jobs --- */
void rb_api_cron(rb_http_req *r);
void rb_api_throttles(rb_http_req *r);
/* GET /api/info's keys from the engine's figures f: all_time.expired
 * (null where the backend counts none), unique {locks, rejected} (null
 * likewise), cron {entries, fired} and throttles {queues, in_use}; set
 * into info. */
void rb_api_enterprise_info(rb_srv *srv, const rb_eng_info *f, json_t *info);
/* GET /api/job's "unique" for job (its JSON object) and the lock the
 * view says it holds: null for a job that is not unique, else
 * {"unique_for", "unique_until", "locked", "lock_until"}; and "expiry" its
 * custom.expires_at (null: none). Set into v. */
void rb_api_job_unique(const rb_job_view *j, json_t *job, int64_t now, json_t *v);

/* --- http_actions.c: changes, answered after the commit --- */
void rb_api_job_action(rb_http_req *r);
void rb_api_bulk_action(rb_http_req *r);
void rb_api_queue_action(rb_http_req *r);
void rb_api_worker_action(rb_http_req *r);
/* Checks POST /api/workers/ACTION (ACTION r->seg[1]): the signal
 * (RB_WORKER_QUIET or RB_WORKER_TERMINATE) with *body the parsed body
 * (caller decrefs) and *wid its "wid" (borrowed from it; NULL: every
 * worker), or 0 after a 404 (another action) or 400 (a bad body) reply. */
int rb_api_worker_request(rb_http_req *r, json_t **body, const char **wid);
/* The MUTATE cmd for a job or bulk action (what: "job" or "bulk") named
 * action: retry, kill or discard; NULL after a 404 reply for any other. */
const char *rb_api_action_cmd(rb_http_req *r, const char *what, const char *action);
/* Checks POST /api/queues/NAME/ACTION (NAME r->seg[1], ACTION r->seg[2]):
 * true with *pause set for pause or resume, false after a 404 (another
 * action) or 400 (a name that is empty or past 200 bytes) reply. */
bool rb_api_queue_action_args(rb_http_req *r, bool *pause);

#endif
