/* Rebound's C client: one blocking connection to a Rebound (or Faktory) server
 * speaking the Faktory work protocol v2 plus Rebound's extensions
 * (docs/protocol.md). Used by the CLI, the tests and the benchmarks.
 *
 * Ownership, in one place:
 * - An rb_client is created by rb_client_connect() or rb_client_attach() and
 *   freed by rb_client_close(); nothing else frees it.
 * - An rb_reply's text is BORROWED from the client: it stays valid until the
 *   next call on the same client (or its close). Copy it to keep it.
 * - Every json_t ** out-parameter hands you a NEW reference: json_decref() it.
 * - Strings and json_t values you pass in stay yours; the client copies what it
 *   needs before returning (rb_client_push_json() may add a "jid" to your job).
 *
 * Errors: calls return 0 or a negative RB_E* code (src/common/error.h) and fill
 * err (may be NULL) with a message for people. An error reply from the server
 * (`-ERR text`) is RB_EPROTO with the server's text as the message; the
 * connection stays usable. RB_ECONN and RB_ETIMEDOUT mean the connection is
 * broken: every later call fails with RB_ECONN, and the client must be closed.
 *
 * A client is not thread-safe: use one per thread. Calls are strictly
 * request/reply (no pipelining); after the first few calls a request allocates
 * nothing but what a json_t ** result needs. */
#ifndef REBOUND_CLIENT_H
#define REBOUND_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

typedef struct rb_client rb_client;

/* Connection options; zero-initialise and set what you need. opts may be NULL
 * wherever it is taken (all defaults). */
typedef struct rb_client_opts {
    const char *password;       /* overrides the URL's password; NULL: the URL's */
    const char *wid;            /* worker id: NULL or "" = a producer connection */
    const char *hostname;       /* sent in HELLO; NULL: gethostname() */
    const char *const *labels;  /* NULL-terminated worker labels, or NULL */
    int timeout_ms;             /* per read/write; 0 = 30000 (FETCH waits ~2 s) */
    int connect_timeout_ms;     /* 0 = 5000 */
    /* For tcp+tls:// URLs. The server's certificate is checked against
     * tls_ca_file (PEM), else OpenSSL's default trust store (which honours
     * $SSL_CERT_FILE), and must name the URL's host. tls_insecure skips
     * every check (tests against a throwaway certificate only). */
    const char *tls_ca_file;
    int tls_insecure;
} rb_client_opts;

/* The parts of a server URL `tcp[+tls]://[[user]:password@]host[:port]`. */
typedef struct rb_client_url {
    int tls;            /* 1 for tcp+tls:// */
    char host[256];     /* without brackets for IPv6 literals */
    char port[8];       /* decimal text; "7419" when the URL has none */
    char password[256]; /* "" when none */
} rb_client_url;

#define RB_CLIENT_DEFAULT_URL "tcp://127.0.0.1:7419"

/* The URL to use when none is given: $FAKTORY_URL; else the variable named by
 * $FAKTORY_PROVIDER; else $REBOUND_URL; else RB_CLIENT_DEFAULT_URL. The
 * returned string is the environment's or static: do not free it. */
const char *rb_client_default_url(void);

/* Parses url into *out. Accepts `tcp://`, `tcp+tls://` (out->tls = 1) and a
 * bare `host:port`; a missing port is 7419. Other schemes are RB_EINVAL, as
 * are an empty host, a bad port (not 1-65535) and over-long parts. */
int rb_client_url_parse(const char *url, rb_client_url *out, rb_err *err);

/* The HELLO password hash: lowercase hex of SHA-256 applied `iterations` times
 * to password+salt (the first round hashes password+salt, the rest the previous
 * raw digest). iterations < 1 counts as 1. out receives 64 hex digits and NUL. */
void rb_client_pwdhash(const char *password, const char *salt, long iterations, char out[65]);

/* Writes a fresh random job id, 24 lowercase hex digits and NUL, into out
 * (getrandom(2)). */
void rb_jid_new(char out[25]);

/* Connects to url (NULL: rb_client_default_url()), reads the greeting and
 * sends HELLO (v 2, hostname, pid, the wid and labels from opts, and pwdhash
 * when the server asks for a password). Returns the client, or NULL with err
 * set: RB_EINVAL for a bad URL, RB_ECONN naming the address when it cannot
 * connect, RB_EAUTH when the server asks for a password and none is given or
 * it is refused, RB_EPROTO for another error reply, RB_ETIMEDOUT. */
rb_client *rb_client_connect(const char *url, const rb_client_opts *opts, rb_err *err);

/* Like rb_client_connect() on an already connected stream socket fd (for tests:
 * one end of a socketpair). The client owns fd from now on, even on failure
 * (it is closed then). opts->password gives the password, if any. */
rb_client *rb_client_attach(int fd, const rb_client_opts *opts, rb_err *err);

/* Sends END (best effort), closes the connection and frees c. NULL is a no-op. */
void rb_client_close(rb_client *c);

/* "host:port" the client was connected to ("socket" for attached ones);
 * owned by c. */
const char *rb_client_addr(const rb_client *c);

/* The greeting's JSON object, borrowed from c (e.g. {"v":2}). */
const json_t *rb_client_greeting(const rb_client *c);

typedef enum rb_reply_type {
    RB_REPLY_STATUS, /* +TEXT: str is TEXT (e.g. "OK") */
    RB_REPLY_BULK,   /* $N: str holds N bytes (NUL-terminated for convenience) */
    RB_REPLY_NIL,    /* $-1: str is NULL, len 0 */
} rb_reply_type;

/* A non-error reply; str is borrowed from the client (see the top). */
typedef struct rb_reply {
    rb_reply_type type;
    const char *str;
    size_t len;
} rb_reply;

/* Sends one command line (without CRLF; it must not contain CR or LF) and
 * reads the reply into *reply (may be NULL). Returns 0, RB_EPROTO for an error
 * reply (message = the server's text without "-ERR "), RB_EINVAL for a line
 * with CR/LF (nothing sent), or RB_ECONN / RB_ETIMEDOUT. */
int rb_client_call(rb_client *c, const char *line, rb_reply *reply, rb_err *err);

/* rb_client_call() on the printf-formatted line. */
int rb_client_callf(rb_client *c, rb_reply *reply, rb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* PUSH of a job given as JSON text (one object; sent as is, so it must be on
 * one line). 0 on +OK; RB_EPROTO with the server's reason when rejected. */
int rb_client_push(rb_client *c, const char *job_json, rb_err *err);

/* PUSH of a jansson object. When job has no "jid", a fresh one is added to it
 * (so you can read it back). RB_EINVAL when job is not an object. */
int rb_client_push_json(rb_client *c, json_t *job, rb_err *err);

/* PUSHB of a JSON array of jobs (text, one line). On 0, *rejected (if non-NULL)
 * gets the server's object {jid: reason} of rejected jobs ({} when all were
 * accepted). */
int rb_client_pushb(rb_client *c, const char *jobs_json, json_t **rejected, rb_err *err);

/* FETCH from the n queues in order. On 0, job->str is the job's JSON text, or
 * NULL (type RB_REPLY_NIL) when the server had none for ~2 s. */
int rb_client_fetch(rb_client *c, const char *const *queues, size_t n, rb_reply *job,
                    rb_err *err);

/* ACK of jid (any string; it is JSON-escaped). */
int rb_client_ack(rb_client *c, const char *jid, rb_err *err);

/* A failure report. Zero-initialise, then set jid and what you have; unset
 * extension fields are not sent. */
typedef struct rb_fail {
    const char *jid;
    const char *errtype;            /* NULL: "unknown" on the server */
    const char *message;            /* NULL: "unknown" on the server */
    const char *const *backtrace;   /* nbacktrace lines, or NULL */
    size_t nbacktrace;
    int retryable;                  /* -1 or 1: not sent; 0: "retryable": false */
    const char *retry_after;        /* "120" (sent as the number 120) or an HTTP-date; NULL: none */
    double next_retry_delay;        /* seconds; sent when > 0 */
} rb_fail;

/* FAIL with f's fields (see docs/protocol.md for the extensions). */
int rb_client_fail(rb_client *c, const rb_fail *f, rb_err *err);

typedef enum rb_beat_state {
    RB_BEAT_OK,        /* carry on */
    RB_BEAT_QUIET,     /* stop fetching */
    RB_BEAT_TERMINATE, /* stop fetching and exit */
} rb_beat_state;

/* BEAT for this connection's wid (RB_EINVAL when it has none), with
 * current_state (NULL: not sent) and rss_kb (< 0: not sent). *state (may be
 * NULL) receives what the server asks. */
int rb_client_beat(rb_client *c, const char *current_state, long rss_kb,
                   rb_beat_state *state, rb_err *err);

/* INFO: *info gets the server's JSON object (see the protocol doc). */
int rb_client_info(rb_client *c, json_t **info, rb_err *err);

/* FLUSH: deletes every job and counter on the server. */
int rb_client_flush(rb_client *c, rb_err *err);

/* MUTATE. cmd is "kill", "requeue", "discard" or "clear"; target "scheduled",
 * "retries" or "dead"; the filter parts are optional (NULL / 0) and combine. */
typedef struct rb_mutate {
    const char *cmd;
    const char *target;
    const char *const *jids;
    size_t njids;
    const char *regexp;
    const char *jobtype;
} rb_mutate;

int rb_client_mutate(rb_client *c, const rb_mutate *m, rb_err *err);

/* QUEUE PAUSE|RESUME|REMOVE names... verb is "PAUSE", "RESUME" or "REMOVE"
 * (any case); a name "*" means every queue. n must be >= 1. */
int rb_client_queue(rb_client *c, const char *verb, const char *const *names, size_t n,
                    rb_err *err);

/* QUEUE LATENCY names...: *latency gets {"queue": seconds, ...}. */
int rb_client_queue_latency(rb_client *c, const char *const *names, size_t n,
                            json_t **latency, rb_err *err);

/* SNOOZE: the working job jid runs again in seconds without using an attempt. */
int rb_client_snooze(rb_client *c, const char *jid, int64_t seconds, rb_err *err);

/* EXTEND: the working job jid's reservation ends reserve_for seconds from now. */
int rb_client_extend(rb_client *c, const char *jid, int64_t reserve_for, rb_err *err);

/* JOB: on 0, *job gets {"state", "job", "history", "next_at"}, or NULL when
 * the server knows no such job. */
int rb_client_job(rb_client *c, const char *jid, json_t **job, rb_err *err);

/* WORKFLOW (a Rebound extension): on 0, *graph gets the workflow graph of
 * the job jid ({"jid", "truncated", "max_nodes", "nodes", "edges"},
 * docs/protocol.md), or NULL when the server knows no such job. */
int rb_client_workflow(rb_client *c, const char *jid, json_t **graph, rb_err *err);

/* BATCHES (a Rebound extension, docs/protocol.md): on 0, *batch gets the
 * batch's page (its counts, callbacks, children and stored members), or
 * NULL when the server knows no such batch. */
int rb_client_batch_view(rb_client *c, const char *bid, json_t **batch, rb_err *err);
/* BATCHES listing: the open batches (all: every stored one), limit 0 the
 * server's default. *result: {"state", "total", "offset", "limit",
 * "batches"}. */
int rb_client_batches(rb_client *c, bool all, int64_t offset, int64_t limit, json_t **result,
                      rb_err *err);

/* JOBS query; state is required, the rest optional (NULL, or limit 0 = the
 * server's default, offset 0). */
typedef struct rb_jobs_query {
    const char *state;
    const char *queue;
    const char *jobtype;
    const char *errtype;
    int64_t offset;
    int64_t limit;
} rb_jobs_query;

/* JOBS: on 0, *result gets {"total": N, "jobs": [{"state", "job"}, ...]}. */
int rb_client_jobs(rb_client *c, const rb_jobs_query *q, json_t **result, rb_err *err);

/* WORKERS: cmd "quiet" or "terminate", to wid or (NULL) every worker. */
int rb_client_workers(rb_client *c, const char *cmd, const char *wid, rb_err *err);

#endif
