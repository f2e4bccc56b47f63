/* The job engine: the one interface the protocol handlers and the HTTP API
 * call to change or read jobs, whichever backend holds them (the in-memory
 * indexes with the SQLite log on a single node, server/backend_mem.c; the
 * shared PostgreSQL database in distributed mode, server/backend_pg.c).
 *
 * An operation is asynchronous. The caller makes an rb_eng_op (its kind,
 * its arguments, who waits, what runs when it is done), submits it, and
 * returns; the backend applies it and, once the change is durable (or has
 * failed), runs op->done on the loop thread, which replies and ends with
 * rb_eng_op_finish(). The rules every backend shares (what a request means,
 * the checks and the reply texts) live in src/engine/, written once; a
 * backend only stores and selects.
 *
 * Threads: everything here runs on the event loop's thread. A backend may
 * do its work on other threads (PostgreSQL's database threads), but hands
 * the op back to the loop before done runs.
 *
 * Adding an operation: a kind below, its arguments and results in the
 * union, one function per backend in rb_backend, and the handler(s) that
 * submit it (docs/hacking.md walks through one). */
#ifndef RB_ENGINE_ENGINE_H
#define RB_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "engine/job_state.h"
#include "engine/mutation.h"

typedef struct rb_srv rb_srv;
typedef struct rb_conn rb_conn;
typedef struct rb_eng_op rb_eng_op;

/* FAIL's fields (docs/protocol.md, "FAIL fields"), as both backends run
 * them through the job's policy. Strings and backtrace borrowed. */
typedef struct rb_fail_input {
    const char *errtype, *message;
    json_t *backtrace;        /* array or NULL */
    bool non_retryable;
    const char *retry_after;  /* NULL = none */
    int64_t next_retry_delay_ms; /* <= 0 = none */
} rb_fail_input;

/* The longest numeric retry_after written as text ("9200000000000000000"). */
#define RB_ENG_RETRY_AFTER 32

typedef enum rb_eng_kind {
    RB_ENG_PUSH,   /* u.push: validated jobs, created at once or scheduled */
    RB_ENG_FETCH,  /* u.fetch: reserve the first ready job of some queues */
    /* u.job: one job named by a worker; the outcome in u.job.status */
    RB_ENG_ACK,    /* the job is done: deleted, counted processed */
    RB_ENG_FAIL,   /* the execution failed: through the job's policy (u.job.fail) */
    RB_ENG_SNOOZE, /* the working job runs again in u.job.seconds */
    RB_ENG_EXTEND, /* the working job's lease ends in u.job.seconds */
    RB_ENG_FLUSH,  /* delete every job and counter */
    RB_ENG_MUTATE, /* u.mutate: MUTATE's kill/requeue/discard/clear */
    RB_ENG_KINDS
} rb_eng_kind;

/* Whether a failed operation changed anything: a caller that retries needs
 * to know. */
typedef enum rb_eng_applied {
    RB_ENG_NOT_APPLIED = 0, /* nothing changed (bad request, or refused) */
    RB_ENG_APPLIED = 1,     /* the change is durable */
    RB_ENG_UNKNOWN = 2,     /* the store failed mid-way: it may or may not be */
} rb_eng_applied;

struct rb_eng_op {
    rb_eng_kind kind;
    /* The protocol connection that waits for this op, or NULL. From
     * rb_eng_submit to rb_eng_op_finish it is busy (runs no other command)
     * and referenced (outlives its socket). */
    rb_conn *c;
    /* Runs on the loop thread when the op is done; must end with
     * rb_eng_op_finish(). */
    void (*done)(rb_srv *srv, rb_eng_op *op);
    json_t *json;             /* the parsed request the op's strings borrow
                                 from, or NULL; released with the op */
    void *arg;                /* the caller's, for done */
    void (*arg_free)(void *); /* frees arg with the op, or NULL */
    rb_srv *srv;              /* set by rb_eng_submit */
    int64_t now;              /* wall-clock ms when submitted */
    /* Results, set by the backend before done. */
    int rc;                   /* 0 or an RB_E* code */
    rb_err err;               /* the message when rc != 0 */
    rb_eng_applied applied;
    /* Engine-private: the backend function is running (rb_eng_submit), the
     * op finished meanwhile (a backend that decided at once), and it ended
     * with op->c waiting (rb_eng_op_park). */
    bool submitting, finished, parked;
    union {
        /* PUSH, PUSHB. */
        struct {
            /* n job objects rb_job_validate accepted (the array owned, the
             * objects borrowed from op->json); a backend fills in their
             * defaults (queue, created_at) */
            json_t **jobs;
            size_t n;
            /* Result, owned, n entries: 0 (pushed) or RB_EEXIST (the jid
             * is taken, by a job or an earlier one of jobs). */
            int *status;
        } push;
        /* FETCH (the first try; a connection that then waits is woken by
         * its backend: rb_srv_kick, rb_pgmode_kick). */
        struct {
            char **queues; /* owned, in the order they are tried */
            int n;
            const char *wid; /* the holder to record, or NULL; as u.job.wid */
            /* Result: the reserved job's jid and its JSON as the client
             * gets it (owned), NULL when none is ready. */
            char *jid, *job;
        } fetch;
        /* ACK, FAIL, SNOOZE, EXTEND. */
        struct {
            char *jid;       /* owned */
            /* The HELLO wid of the connection, or NULL: a working job held
             * by another wid is refused (OTHER_HOLDER), none is not checked.
             * Borrowed: read only until the backend function returns. */
            const char *wid;
            int64_t seconds;    /* SNOOZE: seconds (0: at once); EXTEND: reserve_for */
            rb_fail_input fail; /* FAIL: strings borrowed from op->json or below */
            char retry_after[RB_ENG_RETRY_AFTER]; /* FAIL: a numeric retry_after as text */
            /* Results (no store error): the outcome, and for NOT_WORKING the
             * job's state. */
            rb_job_status status;
            rb_job_state state;
        } job;
        struct {
            rb_mutation m;  /* released with the op */
            size_t changed; /* result: jobs that matched */
        } mutate;
    } u;
};

/* A backend: one function per operation kind. Each applies op on srv's
 * backend and arranges for rb_eng_complete(srv, op) on the loop thread
 * once the change is durable or has failed (rc, err, applied set). One
 * that can tell at once that nothing changes (a job op whose job is
 * missing or held by another worker) may complete op before it returns. */
typedef struct rb_backend {
    const char *name; /* "sqlite", "postgresql" */
    void (*push)(rb_srv *srv, rb_eng_op *op);
    void (*fetch)(rb_srv *srv, rb_eng_op *op);
    void (*ack)(rb_srv *srv, rb_eng_op *op);
    void (*fail)(rb_srv *srv, rb_eng_op *op);
    void (*snooze)(rb_srv *srv, rb_eng_op *op);
    void (*extend)(rb_srv *srv, rb_eng_op *op);
    void (*flush)(rb_srv *srv, rb_eng_op *op);
    void (*mutate)(rb_srv *srv, rb_eng_op *op);
} rb_backend;

/* The two backends (server/backend_mem.c, server/backend_pg.c). */
extern const rb_backend rb_backend_mem;
extern const rb_backend rb_backend_pg;

/* A zeroed op of kind for c (NULL: no connection waits) with its done. */
rb_eng_op *rb_eng_op_new(rb_eng_kind kind, rb_conn *c, void (*done)(rb_srv *, rb_eng_op *));
/* Marks op->c busy and referenced, stamps op->now, and hands op to srv's
 * backend. With a connection, call it from that connection's command
 * handler: an op completed before the backend returns is finished here,
 * and the connection's next command then runs from the handler's caller
 * (no recursion through rb_conn_done). */
void rb_eng_submit(rb_srv *srv, rb_eng_op *op);
/* For backends: op is done (its results set); runs op->done. */
void rb_eng_complete(rb_srv *srv, rb_eng_op *op);
/* The end of a done function: the connection's next command may run, its
 * reference is dropped, op and what it owns are freed. */
void rb_eng_op_finish(rb_srv *srv, rb_eng_op *op);

/* The end of a done function that left op->c waiting for a job
 * (rb_conn_wait_fetch): as rb_eng_op_finish, but the connection stays busy
 * and runs no further command until its wait ends. */
void rb_eng_op_park(rb_srv *srv, rb_eng_op *op);

/* For a done function: false when op succeeded; true after replying the
 * error to op->c ("storage error: ..." for a store failure, the message
 * alone for a refused request) and finishing op. */
bool rb_eng_failed(rb_srv *srv, rb_eng_op *op);

#endif
