/* The job engine: the one interface the protocol handlers and the HTTP API
 * call to change or read jobs, whichever backend holds them (the in-memory
 * indexes with the SQLite log on a single node, backend/sqlite/backend.c; the
 * shared PostgreSQL database in distributed mode, backend/pg/backend.c).
 *
 * An operation is asynchronous. The caller makes an rb_eng_op (its kind,
 * its arguments, who waits, what runs when it is done), submits it, and
 * returns; the backend applies it and, once the change is durable (or has
 * failed), runs op->done on the loop thread, which replies and ends with
 * rb_eng_op_finish(). A backend may complete an op before rb_eng_submit
 * returns (a single node's reads and worker signals): the caller must not
 * touch op once submitted. The rules every backend shares (what a request means,
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
#include "common/list.h"
#include "common/table.h"
#include "config/config.h"
#include "engine/batch.h"
#include "engine/batch_view.h"
#include "engine/debounce.h"
#include "engine/failure.h"
#include "engine/group_cmd.h"
#include "engine/job_state.h"
#include "engine/jobdef.h"
#include "engine/mutation.h"
#include "engine/reads.h"
#include "engine/throttle.h"
#include "engine/track.h"
#include "engine/unique.h"
#include "engine/workers.h"
#include "engine/workflow.h"

/* The server (opaque here): what done functions get back. */
typedef struct rb_srv rb_srv;
/* A client connection (opaque here): who waits for an op. */
typedef struct rb_conn rb_conn;
typedef struct rb_eng_op rb_eng_op;
typedef struct rb_eng rb_eng;
struct event;
struct event_base;
struct rb_metrics;

/* How long a FETCH waits for a job before it is answered null (Faktory's
 * 2 s). */
#define RB_ENG_FETCH_WAIT_MS 2000

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
    /* the administration and inspection commands */
    RB_ENG_INFO,    /* read, u.info: INFO's figures */
    RB_ENG_QUEUE,   /* u.queue: QUEUE PAUSE, RESUME or REMOVE */
    RB_ENG_LATENCY, /* read, u.queue: QUEUE LATENCY */
    RB_ENG_JOB,     /* read, u.lookup: one job by jid */
    RB_ENG_JOBS,    /* read, u.jobs: a filtered page of one state's jobs */
    RB_ENG_WORKERS, /* u.workers: WORKERS's quiet or terminate */
    /* the HTTP API's own (docs/http.md) */
    RB_ENG_JOB_ACTION,  /* u.job_action: one job's retry/kill/discard, checked and read back */
    RB_ENG_BULK,        /* u.bulk: retry/kill/discard the jobs a filter or a jid list names */
    RB_ENG_WORKER_LIST, /* read, u.worker_list: the workers, as GET /api/workers lists them */
    RB_ENG_BATCH,       /* u.batch: BATCH NEW, OPEN, COMMIT or STATUS (engine/batch.h) */
    RB_ENG_WORKFLOW,    /* read, u.workflow: a job's workflow graph (engine/workflow.h) */
    RB_ENG_TRACK,       /* u.track: TRACK SET or GET (engine/track.h) */
    RB_ENG_BACKUP,      /* u.backup: BACKUP, a copy of a single node's database */
    RB_ENG_GROUP,       /* u.group: GROUP SET/PAUSE/RESUME/GET, GROUPS (engine/group_cmd.h) */
    /* a worker's own (engine/workers.h) */
    RB_ENG_HELLO, /* u.worker: a worker with a wid said HELLO */
    RB_ENG_BEAT,  /* u.worker: BEAT; the signal it is told in u.worker.signal */
    RB_ENG_KINDS
} rb_eng_kind;

/* Whether a failed operation changed anything: a caller that retries needs
 * to know. */
typedef enum rb_eng_applied {
    RB_ENG_NOT_APPLIED = 0, /* nothing changed (bad request, or refused) */
    RB_ENG_APPLIED = 1,     /* the change is durable */
    RB_ENG_UNKNOWN = 2,     /* the store failed mid-way: it may or may not be */
} rb_eng_applied;

/* QUEUE's changes (RB_ENG_QUEUE). */
typedef enum rb_eng_queue_verb {
    RB_ENG_QUEUE_PAUSE,  /* creates a queue not known yet */
    RB_ENG_QUEUE_RESUME, /* a queue not known stays unknown */
    RB_ENG_QUEUE_REMOVE, /* deletes the enqueued jobs and resumes */
} rb_eng_queue_verb;

/* BATCH's subcommands (RB_ENG_BATCH). An unknown bid (or one expired)
 * fails the op with RB_ENOENT, "No such batch <bid>". */
typedef enum rb_eng_batch_verb {
    RB_ENG_BATCH_NEW,    /* a bid made for u.batch.def */
    RB_ENG_BATCH_OPEN,   /* the bid back; never uncommits */
    RB_ENG_BATCH_COMMIT, /* callbacks may fire from now on; again: no-op */
    RB_ENG_BATCH_STATUS, /* rb_batch_status_json's text */
    /* Rebound's reads (BATCHES, GET /api/batch/BID and /api/batches): */
    RB_ENG_BATCH_VIEW, /* u.batch.view; an unknown bid: found false, no error */
    RB_ENG_BATCH_LIST, /* u.batch.list and total, from all, offset, limit */
} rb_eng_batch_verb;

/* INFO's figures (RB_ENG_INFO): the single node's memory or the cluster's
 * tables. Also GET /api/info's, /api/queues's and /metrics's, which ask
 * for more (the two arguments). */
typedef struct rb_eng_info {
    /* arguments */
    bool latency;           /* fill latency_s */
    /* results */
    int64_t processed, failures; /* the all-time counters */
    int64_t enqueued, scheduled, retries, dead, working;
    int64_t waiting, blocked; /* job dependencies (docs/workflows.md); 0 in
                                 distributed mode, which refuses them */
    int64_t workers;        /* the node's (single node) or the cluster's live ones */
    rb_queue_size *queues;  /* every known queue (Faktory's: pushed to or
                               paused, until QUEUE REMOVE; with jobs enqueued
                               or paused in any case), any order (a single
                               node's hash order, PostgreSQL's by name); owned */
    size_t n_queues;
    double *latency_s;      /* with latency: n_queues entries, each queue's
                               oldest waiting job's age; owned */
    const char *store;      /* the storage's name (static): "sqlite", "null",
                               "postgresql" */
    json_t *rebound;        /* the backend's own keys for INFO's "rebound"
                               object (group_commit, storage), owned */
} rb_eng_info;

/* A worker as the engine lists it (RB_ENG_WORKER_LIST). Strings owned. */
typedef struct rb_eng_worker {
    char *wid;
    char *node, *info;  /* distributed mode: the node that last saw it, its
                           HELLO's JSON text (NULL: none); NULL on a single node */
    int64_t first_ms;   /* distributed mode: first seen */
    int64_t beat_ms;    /* last BEAT, 0 for none */
    int signal;         /* 0, RB_WORKER_QUIET or RB_WORKER_TERMINATE */
} rb_eng_worker;

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
    rb_eng *eng;              /* set by rb_eng_submit */
    int64_t now;              /* wall-clock ms when submitted */
    /* Results, set by the backend before done. */
    int rc;                   /* 0 or an RB_E* code */
    rb_err err;               /* the message when rc != 0 */
    rb_eng_applied applied;
    /* Engine-private: the backend function is running (rb_eng_submit) and
     * the op finished meanwhile (a backend that decided at once); a FETCH
     * waiting for a job: its link in the waiters, its 2 s timer. */
    bool submitting, finished;
    rb_link wlink;
    struct event *wait_ev;
    union {
        /* PUSH, PUSHB. */
        struct {
            /* n job objects rb_job_validate accepted (the array owned, the
             * objects borrowed from op->json); a backend fills in their
             * defaults (queue, created_at) */
            json_t **jobs;
            size_t n;
            /* Result, owned, n entries: 0 (pushed), RB_EEXIST (the jid
             * is taken, by a job or an earlier one of jobs), RB_ENOENT (its
             * batch is unknown) or RB_ENOTUNIQUE (another job holds its
             * unique lock, engine/unique.h). */
            int *status;
            /* A cron tick's push (server/cron.h), or meta_key NULL: "push
             * this tick's job if tick > last". The push happens only when
             * the store's meta row meta_key holds no tick, or one older
             * than tick_s (decimal Unix seconds); the row is then set to
             * tick_s in the push's commit (also when the job itself is
             * refused: the tick counts as fired). Otherwise nothing is
             * written: stale is set (the tick was fired already, by another
             * node or before a restart), each status RB_EEXIST, not
             * applied. Two nodes racing for one tick: one pushes, the
             * other gets stale. meta_key owned by the caller's op->arg. */
            const char *meta_key;
            int64_t tick_s;
            bool stale; /* result */
        } push;
        /* FETCH. The backend's fetch makes the first try; when it finds
         * no job the engine parks the op (its connection stays busy) among
         * the waiters, and each rb_eng_wake gives it another try (the
         * backend's refetch) until a job is reserved, its 2 s are up, or
         * rb_eng_fetch_cancel; only then does done run, once. */
        struct {
            char **queues; /* owned, in the order they are tried */
            int n;
            /* the holder to record, or NULL; as u.job.wid; borrowed from
             * the connection, which outlives the op */
            const char *wid;
            /* Result: the reserved job's jid and its JSON as the client
             * gets it (owned), NULL when none was ready in time. */
            char *jid, *job;
            /* Engine-private, while parked: a backend's try is running
             * (trying), the 2 s ended meanwhile (expired), nobody waits
             * any more (cancelled: see rb_eng_fetch_wanted). */
            bool parked, trying, expired, cancelled;
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
        rb_eng_info info; /* result; released with the op */
        struct {
            rb_eng_queue_verb verb; /* RB_ENG_QUEUE */
            char **names;           /* queue names, "*" = every known queue; owned */
            int n;
            double *latency;        /* RB_ENG_LATENCY result, and RB_ENG_QUEUE's with
                                       read_back: n entries in seconds (0 for an
                                       empty or unknown queue); owned */
            bool read_back;         /* RB_ENG_QUEUE: fill sizes and latency after
                                       the change (the HTTP API's queue actions) */
            rb_queue_size *sizes;   /* read_back result: n entries, name NULL
                                       for a queue not known after the change
                                       (a resume of an unknown one); owned */
        } queue;
        struct {
            const char *jid;  /* borrowed (op->json) */
            bool found;       /* result: false for no such job */
            rb_job_view view; /* result when found; released with the op */
            /* result when not found: jid is a push merged into another
             * job (engine/debounce.h); released with the op */
            bool aliased;
            rb_debounce_alias alias;
        } lookup;
        struct {
            rb_job_filter f;    /* strings borrowed (op->json or op->arg) */
            rb_job_view *views; /* result: the page, in listing order; owned */
            size_t n;
            int64_t total;      /* result: every match */
        } jobs;
        struct {
            const char *wid; /* borrowed (op->json); NULL = every worker */
            int signal;      /* RB_WORKER_QUIET or RB_WORKER_TERMINATE */
            int64_t changed; /* result: workers signalled (0: wid unknown) */
        } workers;
        struct {
            const char *jid;   /* borrowed (op->arg) */
            const char *cmd;   /* MUTATE's: "requeue", "kill" or "discard" */
            bool found;        /* result: false for no such job (nothing changed) */
            int prev_state;    /* result when found: its state before; a state
                                  rb_job_state_mutable refuses is left as is */
            int state;         /* result when changed: its state after, 0 for
                                  gone (discarded) */
        } job_action;
        struct {
            const char *cmd;          /* MUTATE's: "requeue", "kill" or "discard" */
            rb_job_filter f;          /* state (mutable), queue, jobtype, errtype;
                                         no page; strings borrowed (op->json) */
            const char **jids;        /* only these jids, each once (strings
                                         borrowed from op->json), or NULL: every
                                         match; owned */
            size_t n_jids;
            size_t changed;           /* result: jobs changed */
        } bulk;
        struct {
            rb_eng_worker *v; /* result: single node in table order, the
                                 cluster's live ones by wid; owned */
            size_t n;
        } worker_list;
        struct {
            rb_eng_batch_verb verb;
            const char *bid;  /* OPEN, COMMIT, STATUS: borrowed (op->arg) */
            rb_batch_def def; /* NEW: checked, borrowed from op->json */
            char *out;        /* result: NEW and OPEN the bid, STATUS the
                                 JSON text; owned */
            /* VIEW: found, and view when found (max_members 0: the
             * default); released with the op. */
            bool found;
            rb_batch_view view;
            /* LIST: every batch (all) or the open ones, the page
             * [offset, offset + limit) in rb_batch_list_cmp's order, and
             * the matches' total. list owned, freed with the op. */
            bool all;
            int64_t offset, limit, total;
            rb_batch **list;
            size_t n;
        } batch;
        struct {
            const char *jid;  /* borrowed (op->json or op->arg) */
            size_t max_nodes; /* 0: RB_WORKFLOW_MAX_NODES */
            bool found;       /* result: false for no such job */
            rb_workflow g;    /* result when found; released with the op */
        } workflow;
        struct {
            bool get;          /* TRACK GET (jid) or TRACK SET (set) */
            const char *jid;   /* GET: borrowed (op->arg) */
            rb_track_set set;  /* SET: checked, borrowed from op->json */
            json_t *reply;     /* result of GET: rb_track_reply's; owned */
        } track;
        struct {
            const char *path; /* absolute, a file that does not exist yet;
                                 borrowed (op->json) */
            int64_t bytes;    /* result: the copy's size */
        } backup;
        /* GROUP SET, PAUSE, RESUME, GET and GROUPS (engine/group_cmd.h);
         * results as rb_backend.group says; released with the op. */
        struct {
            rb_group_req req;       /* checked by rb_group_cmd_parse & co. */
            rb_group_view view;     /* GET */
            rb_group_view *views;   /* LIST with a queue: the page, by name */
            size_t n;
            int64_t total;          /* LIST with a queue: the groups req.state selects */
            rb_group_sum *sums;     /* LIST: per queue, by name (with a queue: its own) */
            size_t n_sums;
        } group;
        /* HELLO, BEAT. A BEAT of a wid no live worker has fails with
         * RB_ENOENT and RB_UNKNOWN_WORKER's text. */
        struct {
            const char *wid;    /* non-empty; borrowed (op->json) */
            const json_t *info; /* HELLO: its JSON, "pwdhash" left out when
                                   stored; borrowed (op->json) */
            int signal;         /* BEAT's result: 0, RB_WORKER_QUIET or
                                   RB_WORKER_TERMINATE */
        } worker;
    } u;
};

/* A backend: one function per operation kind. Each applies op on srv's
 * backend and arranges for rb_eng_complete(srv, op) on the loop thread
 * once the change is durable or has failed (rc, err, applied set). One
 * that can tell at once that nothing changes (a job op whose job is
 * missing or held by another worker) may complete op before it returns. */
/* The store's link as the node sees it (rb_eng_health_of): what GET
 * /healthz answers a load balancer, and INFO's rebound.database and
 * /metrics' rebound_database_* show (docs/distributed.md, "Network
 * faults"). */
typedef struct rb_eng_health {
    bool known;             /* the backend has a link to report (false: a single
                               node's file, always up) */
    bool up;                /* requests can commit */
    int64_t since_ms;       /* wall ms: when the current state began */
    int64_t last_commit_ms; /* wall ms: the last round trip that succeeded, 0: none */
    char error[256];        /* while down: the failure that began it */
} rb_eng_health;

/* Distributed mode's leader (rb_backend.leader; docs/distributed.md
 * "Forwarding to a leader"): the node that holds the cluster's leader
 * lease, as this node last read it. */
typedef struct rb_eng_leader {
    bool known;     /* a holder whose lease has not ended (as far as this node knows) */
    bool self;      /* the holder is this node */
    char tls_id[80]; /* its client port's certificate ("sha256:" and the hex
                        digest of its DER); "" when the port is plain TCP */
    char addr[256]; /* its client port, "host:port" */
    char node[256]; /* its name ("host:pid") */
} rb_eng_leader;

/* A backend's answer to a parked FETCH's try (rb_backend.refetch). */
typedef enum rb_eng_try {
    RB_ENG_TRY_NONE,    /* no job for any waiter: rb_eng_wake stops there */
    RB_ENG_TRY_MISS,    /* none for this one (or one of its tries is
                           running already): it stays parked */
    RB_ENG_TRY_STARTED, /* a try runs: rb_eng_fetch_tried follows */
} rb_eng_try;

typedef struct rb_backend {
    const char *name; /* "sqlite", "postgresql" */
    /* The life cycle, run by the server (server.c), each once, in this
     * order; any may be the last (a failed start): open, before the loop
     * exists: the storage named by srv->cfg, what it holds recovered, the
     * backend's handle in srv->be; 0 or an error (RB_EVERSION for a schema
     * to migrate, ...). attach, once the loop (srv->base) exists: the
     * backend's events and threads. close, once the loop has stopped:
     * finishes what was submitted (its ops completed), stops its threads,
     * frees its events. release, after the loop is freed: the rest, and
     * the storage closed. */
    int (*open)(rb_eng *eng, rb_err *err);
    void (*attach)(rb_eng *eng);
    void (*close)(rb_eng *eng);
    void (*release)(rb_eng *eng);
    void (*push)(rb_eng *eng, rb_eng_op *op);
    void (*fetch)(rb_eng *eng, rb_eng_op *op);
    void (*ack)(rb_eng *eng, rb_eng_op *op);
    void (*fail)(rb_eng *eng, rb_eng_op *op);
    void (*snooze)(rb_eng *eng, rb_eng_op *op);
    void (*extend)(rb_eng *eng, rb_eng_op *op);
    void (*flush)(rb_eng *eng, rb_eng_op *op);
    void (*mutate)(rb_eng *eng, rb_eng_op *op);
    /* the administration and inspection commands; reads complete without
     * a commit (at once on a single node) */
    void (*info)(rb_eng *eng, rb_eng_op *op);
    void (*queue)(rb_eng *eng, rb_eng_op *op);
    void (*latency)(rb_eng *eng, rb_eng_op *op);
    void (*job)(rb_eng *eng, rb_eng_op *op);
    void (*jobs)(rb_eng *eng, rb_eng_op *op);
    void (*workers)(rb_eng *eng, rb_eng_op *op);
    /* the HTTP API's own */
    void (*job_action)(rb_eng *eng, rb_eng_op *op);
    void (*bulk)(rb_eng *eng, rb_eng_op *op);
    void (*worker_list)(rb_eng *eng, rb_eng_op *op);
    /* Faktory Enterprise batches; NULL where the backend has none (the op
     * then fails with RB_BATCH_UNSUPPORTED, rb_eng_batch_check). */
    void (*batch)(rb_eng *eng, rb_eng_op *op);
    /* Whether the backend keeps unique locks and drops expired jobs
     * (engine/unique.h); false: a PUSH naming them is refused
     * (rb_eng_unique_check). */
    bool unique_jobs;
    /* Another try for op, a FETCH parked waiting (rb_eng_wake), for a
     * ready job of op->u.fetch.queues: RB_ENG_TRY_NONE or RB_ENG_TRY_MISS
     * with op untouched, or RB_ENG_TRY_STARTED, after which the backend
     * calls rb_eng_fetch_tried(srv, op) exactly once (not before it
     * returns), with op->u.fetch.jid/job set when it reserved one, or
     * op->rc for a store failure. */
    rb_eng_try (*refetch)(rb_eng *eng, rb_eng_op *op);
    /* A job's workflow graph (read; rb_workflow_build with the backend's
     * probe): found false for a jid that is no stored job. */
    void (*workflow)(rb_eng *eng, rb_eng_op *op);
    /* Faktory Enterprise's progress tracking (TRACK SET and GET,
     * engine/track.h); NULL where the backend keeps none (the op then
     * fails with RB_TRACK_UNSUPPORTED, rb_eng_track_check). SET changes
     * nothing for an untracked or unknown jid and succeeds. */
    void (*track)(rb_eng *eng, rb_eng_op *op);
    /* Whether the backend applies [throttles] at FETCH (engine/throttle.h);
     * false: a server configured with throttles refuses to start
     * (rb_eng_throttle_check). */
    bool throttles;
    /* A consistent copy of the database into a new file (BACKUP,
     * docs/operations.md) while the server runs; NULL where the backend's
     * store is backed up by other means (the op then fails with
     * RB_BACKUP_UNSUPPORTED: PostgreSQL's pg_dump). */
    void (*backup)(rb_eng *eng, rb_eng_op *op);
    /* The store's link, at once (no round trip); NULL: always up. */
    void (*health)(rb_eng *eng, rb_eng_health *h);
    /* The leader lease (storage.forward); NULL where the backend has none
     * (SQLite: no leader, every connection served here). leader_offer,
     * once the client port is bound: this node competes for the lease,
     * advertising addr ("host:port", copied) and tls_id (its certificate's
     * rb_tls_id, "" for plain TCP; copied), from its own thread
     * about every second, and gives it up when it closes. leader: the
     * holder as last read, at once (no round trip); known is false when
     * this node has not read a holder whose lease is still running. Loop
     * thread. */
    void (*leader_offer)(rb_eng *eng, const char *addr, const char *tls_id);
    void (*leader)(rb_eng *eng, rb_eng_leader *out);
    /* A worker's HELLO and BEAT (engine/workers.h: the node's connected
     * workers are the engine's; where their beats and signals are kept is
     * the backend's). */
    void (*hello)(rb_eng *eng, rb_eng_op *op);
    void (*beat)(rb_eng *eng, rb_eng_op *op);
    /* The stored [[cron]] ticks as the backend opened them: a new object
     * {"cron:NAME": Unix seconds} (server/cron.c's catch-up reads it once,
     * at start). */
    json_t *(*cron_ticks)(rb_eng *eng);
    /* Whether FETCHes run claim statements the engine's metrics count
     * (rb_metrics.claims: distributed mode's), shown by /metrics. */
    bool counts_claims;
    /* Flow control (engine/group.h, engine/flow.h): whether the backend
     * takes a queue's groups in turn at FETCH (false: a PUSH naming
     * custom.group is refused), and whether it applies [groups] limits
     * and [throttles] rates (false: a server configured with them refuses
     * to start). */
    bool groups;
    bool flow_limits;
    /* Flow control's operator side (RB_ENG_GROUP, engine/group_cmd.h);
     * NULL where the backend keeps no groups (GROUP and GROUPS are then
     * refused before their argument is read, and the op fails, with
     * "GROUP: groups are not supported in distributed mode yet",
     * rb_eng_group_check). For op->u.group.req, whose checks are done:
     * - SET: the group's override becomes req.over (none set: removed);
     *   its effective limits change at once (the next FETCH honours them;
     *   a hold is re-decided: a raised limit releases, a lowered one
     *   holds); durable before op completes (with a store error: applied
     *   unknown, as for any change).
     * - PAUSE: the group is held (paused) until req.until_ms, with
     *   req.reason, durably: its jobs stay enqueued without using
     *   attempts, and it resumes by itself at until (the backend's timer
     *   or claim), then waiting FETCHes are woken (rb_eng_wake). A group
     *   with no job yet may be paused or set.
     * - RESUME: the pause ends now, durably; a group not paused completes
     *   at once, nothing written.
     * - GET: u.group.view (a group never seen: known false, counts 0).
     * - LIST: with req.queue, u.group.views: the groups req.state selects
     *   (rb_group_view_matches), by name, the page [offset, offset +
     *   limit), their count in total, and u.group.sums[0] the queue's
     *   counts over every group; without, u.group.sums: one per queue with
     *   groups, settings or a [groups] table, by name.
     * A queue the backend has never seen (no job, no setting) and that
     * cfg does not name (rb_group_queue_configured) fails the op with
     * rb_group_no_queue's RB_ENOENT. Overrides and pauses survive a
     * restart; FLUSH clears them. */
    void (*group)(rb_eng *eng, rb_eng_op *op);
    /* Whether the backend keeps debounced jobs (engine/debounce.h; false:
     * a PUSH naming custom.debounce is refused, rb_eng_flow_check). */
    bool debounce;
} rb_backend;

/* What the engine asks of the connections it serves (the server's): an
 * op's connection is held (busy: its next command waits; referenced: it
 * outlives its socket) from rb_eng_submit until the op is finished, then
 * released (with run_next its next buffered command runs now). */
typedef struct rb_eng_client {
    void (*hold)(rb_conn *c);
    void (*release)(rb_conn *c, bool run_next);
} rb_eng_client;

/* The engine's context: what the engine and its backend know of the
 * process they run in. Made and owned by the server (rb_eng_new), which
 * sets base and stopping as its loop starts and stops; the backends read
 * it and keep their own state in be. Loop thread, except where a backend
 * says otherwise. */
struct rb_eng {
    rb_srv *srv;                 /* done's first argument (opaque here) */
    const rb_eng_client *client; /* the connections' hooks */
    const rb_config *cfg;        /* the server's, read only */
    struct event_base *base;     /* the loop; NULL before it exists and after it ends */
    bool stopping;               /* shutting down: no new timers or claims */
    const struct rb_backend *backend; /* rb_backend_for_url's (the server's open sets it) */
    void *be;                    /* the backend's own state (its open sets it) */
    struct rb_metrics *metrics;  /* counters every backend bumps (engine/metrics.h); owned */
    rb_list waiters;             /* FETCH ops parked waiting for a job, oldest first */
    rb_table workers;            /* this node's connected workers (engine/workers.h) */
};

/* A new engine for srv (done's argument) with cfg (borrowed, outlives it)
 * and the connections' hooks; no backend yet. */
rb_eng *rb_eng_new(rb_srv *srv, const rb_config *cfg, const rb_eng_client *client);
/* Frees eng and what it owns (not the backend: its release runs first). */
void rb_eng_free(rb_eng *eng);

/* BACKUP's refusal in distributed mode. */
#define RB_BACKUP_UNSUPPORTED                                                                  \
    "BACKUP: distributed mode keeps its jobs in PostgreSQL: back it up with pg_dump "          \
    "(docs/operations.md)"

/* The backend for a storage url: PostgreSQL's (backend/pg/) for a
 * postgres:// or postgresql:// url or a conninfo string (with '='),
 * SQLite's (backend/sqlite/) for anything else (a file, ":memory:",
 * NULL: the default file). The one place the backend is chosen. */
const rb_backend *rb_backend_for_url(const char *url);

/* A zeroed op of kind for c (NULL: no connection waits) with its done. */
rb_eng_op *rb_eng_op_new(rb_eng_kind kind, rb_conn *c, void (*done)(rb_srv *, rb_eng_op *));
/* Marks op->c busy and referenced, stamps op->now, and hands op to srv's
 * backend. With a connection, call it from that connection's command
 * handler: an op completed before the backend returns is finished here,
 * and the connection's next command then runs from the handler's caller
 * (no recursion through rb_conn_done). */
void rb_eng_submit(rb_eng *eng, rb_eng_op *op);
/* For backends: op is done (its results set); runs op->done. */
void rb_eng_complete(rb_eng *eng, rb_eng_op *op);
/* The end of a done function: the connection's next command may run, its
 * reference is dropped, op and what it owns are freed. */
void rb_eng_op_finish(rb_eng *eng, rb_eng_op *op);

/* Whether an op's rc is the store's failure (answered "storage error:
 * ..."), rather than a refused request. */
bool rb_eng_store_error(int rc);

/* The store's link now (rb_backend.health; up and not known without one). */
void rb_eng_health_of(rb_eng *eng, rb_eng_health *h);
/* Whether the backend keeps a leader lease (rb_backend.leader). */
bool rb_eng_leader_supported(const rb_eng *eng);
/* rb_backend.leader_offer; a no-op without one. Loop thread. */
void rb_eng_leader_offer(rb_eng *eng, const char *addr, const char *tls_id);
/* rb_backend.leader: the current holder, or known false (always without
 * a lease). Loop thread. */
void rb_eng_leader_of(rb_eng *eng, rb_eng_leader *out);
/* h as JSON (a new reference): {"state": "up"|"down", "since", "last_commit"
 * (ISO 8601 or null)}, with "error" while down when detail is set (INFO;
 * GET /healthz, which needs no password, leaves it out). */
json_t *rb_eng_health_json(const rb_eng_health *h, bool detail);

/* Jobs may have become ready in queues (NULL, 0: in any): every FETCH
 * parked on one of them gets another try (its backend's refetch), in the
 * order they started waiting. The one place a waiting FETCH is woken,
 * whichever backend holds the jobs. */
void rb_eng_wake(rb_eng *eng, const char *const *queues, size_t n);
/* For backends: the FETCH parked longest on queue with no try in flight,
 * its try started (as rb_eng_wake starts one: the backend ends it with
 * rb_eng_fetch_tried), or NULL. A backend hands it a job it is pushing. */
rb_eng_op *rb_eng_waiter_take(rb_eng *eng, const char *queue);

/* For backends: a parked FETCH's try (RB_ENG_TRY_STARTED) is over. With a
 * job, a store failure, its 2 s up or nobody waiting any more, op is done
 * (done runs); otherwise it stays parked. */
void rb_eng_fetch_tried(rb_eng *eng, rb_eng_op *op);

/* For backends: whether anybody still waits for FETCH op's job (false
 * once cancelled: a job reserved for it goes back). */
bool rb_eng_fetch_wanted(const rb_eng_op *op);

/* The connection waiting for FETCH op went away: op ends (done runs, its
 * reply to nobody) as soon as no try of its backend is running, and a job
 * reserved for it meanwhile goes back where the backend can tell
 * (rb_eng_fetch_wanted). Called by the connection's owner. */
void rb_eng_fetch_cancel(rb_eng *eng, rb_eng_op *op);

/* The number of FETCHes parked waiting (INFO's rebound.fetches_waiting). */
size_t rb_eng_fetches_waiting(const rb_eng *eng);

/* The one place batches are refused where a backend has none: 0 when
 * srv's backend keeps batches, else RB_EINVAL with err set to
 * RB_BATCH_UNSUPPORTED (for BATCH, and for PUSH of a job with custom.bid). */
int rb_eng_batch_check(const rb_eng *eng, rb_err *err);

/* The one place tracking is refused where a backend has none: 0 when
 * srv's backend keeps it, else RB_EINVAL with err set to
 * RB_TRACK_UNSUPPORTED. */
int rb_eng_track_check(const rb_eng *eng, rb_err *err);

/* The one place GROUP and GROUPS are refused where a backend keeps no
 * groups, before their argument is read: 0, or RB_EINVAL with err
 * "CMD: " RB_GROUP_CMD_UNSUPPORTED (cmd: "GROUP", "GROUPS", or an HTTP
 * action's verb name, rb_group_verb_name). */
int rb_eng_group_check(const rb_eng *eng, const char *cmd, rb_err *err);

/* The one place throttles are refused where a backend has none: 0 when
 * srv's configuration has no [throttles] or its backend applies them,
 * else RB_EINVAL with err set to RB_THROTTLE_UNSUPPORTED. At start-up,
 * once the backend is chosen. */
int rb_eng_throttle_check(const rb_eng *eng, rb_err *err);

/* The one place unique and expiring jobs are checked at PUSH, for every
 * backend: job's custom.unique_for/unique_until/expires_at/expires_in read
 * (engine/unique.h), expires_in turned into expires_at (now: the push's
 * time), and refused with RB_UNIQUE_UNSUPPORTED / RB_EXPIRING_UNSUPPORTED
 * where srv's backend keeps neither. 0, or RB_EINVAL with err "job J: ..."
 * and job unchanged. */
int rb_eng_unique_check(const rb_eng *eng, json_t *job, int64_t now, rb_err *err);

#endif
