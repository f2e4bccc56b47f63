/* One request from distributed mode's loop thread to a database thread
 * and back (mode.h has the overview): how the backend (backend.c) and the
 * worker registry (registry.c) post their operations, what a database
 * thread fills in, and the completion on the loop thread. Also FETCH's
 * claims and the wake-ups of parked FETCHes (fetch.c). Loop thread, except
 * where a field or function says otherwise. */
#ifndef RB_BACKEND_PG_REQUEST_H
#define RB_BACKEND_PG_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/pg/sql.h"
#include "engine/engine.h"
#include "engine/engine.h"

typedef enum rb_pgreq_kind {
    RB_PGR_PUSH,  /* batched: one rb_pg_push for every push request taken */
    RB_PGR_ACK,   /* batched: one rb_pg_ack */
    RB_PGR_FAIL,  /* batched: one rb_pg_fail */
    RB_PGR_CLAIM, /* batched by queue list: one rb_pg_claim per list */
    RB_PGR_CALL,  /* anything else: r->call runs alone */
    RB_PGR_SEEN,  /* batched: one rb_pg_workers_seen for every HELLO/BEAT (registry.h) */
} rb_pgreq_kind;
#define RB_PGR_KINDS 6

/* One request from the loop to a database thread and back. The loop fills
 * the kind's fields, the thread fills rc/err and the results, then `done`
 * runs on the loop thread and must end with rb_pgreq_finish(). */
typedef struct rb_pgreq rb_pgreq;
struct rb_pgreq {
    rb_pgreq *next;
    rb_pgreq_kind kind;
    rb_eng_op *op; /* a worker's HELLO or BEAT it serves (registry.c), or NULL */
    void (*call)(rb_pg *pg, rb_pgreq *r);    /* RB_PGR_CALL: on a database thread */
    void (*done)(rb_eng *eng, rb_pgreq *r); /* on the loop thread */
    int rc;                                  /* 0 or the engine's RB_E* code */
    rb_err err;
    int64_t now; /* wall-clock ms when posted */
    int64_t deadline_ms; /* monotonic ms: answered by then ([storage] request_timeout
                            after it was posted, admin_timeout when slow and the
                            database reachable; db_thread.c) */
    bool slow; /* administration or inspection (RB_PGR_CALL): may read or change many
                  rows; run alone, one at a time (db_thread.c) */
    union {
        struct {
            rb_pg_new_job *jobs; /* json from texts, other strings borrowed from data */
            char **texts;        /* owned: the jobs' JSON texts (NULL: none) */
            int *status;
            size_t n;
            bool deps; /* a job names parents: its own transaction (rb_pg_push_deps) */
            char **bids; /* owned: each job's custom.bid or NULL; NULL when no job has one
                            (else its own transaction, rb_pg_push_batch) */
            /* a cron tick's push (engine.h's u.push.meta_key): its own
             * transaction (rb_pg_push_tick); key borrowed from data */
            const char *meta_key;
            int64_t tick_s;
            bool stale; /* result */
            /* owned: each job's custom.debounce, NULL when no job has one
             * (else its own transaction, rb_pg_push_debounce) */
            rb_pg_debounce *deb;
            /* hand-offs (fetch.c's mode_hand_off): NULL when none, else
             * owned, per job: its claim's token (0: none), the wid
             * jobs[i].hand_wid points to, and (db_thread.c) the job as its
             * FETCH gets it when the push inserted it claimed */
            uint64_t *hand_tok;
            char **hand_wids;
            char **handed;
        } push;
        struct {
            rb_pg_ref ref;
            int status;
            rb_pg_labels labels; /* when DONE */
        } ack;
        struct {
            rb_pg_failure f;
            rb_pg_fail_result res;
        } fail;
        struct {
            char **queues; /* owned, or a FETCH op's (r->data: borrowed) */
            int nq;
            uint64_t seq;    /* notification count when posted */
            rb_pg_claimed job;
            bool got;
            int64_t wake_at; /* none got: when a full throttled queue's slot times out
                                (INT64_MAX: never by itself) */
            struct mode_round *round; /* a parked FETCH's: its wake round (fetch.c) */
            /* a hand-off (fetch.c's mode_hand_off), posted with its push:
             * the job of that push with the same token is this claim's
             * when the push inserted it claimed (in the same transaction),
             * else the claim runs as any other. 0: not a hand-off. */
            uint64_t hand_tok;
        } claim;
        struct {
            int status, state;
            int64_t seconds;
        } ref;
        struct {
            rb_pg_seen_kind kind; /* the wid is r->wid, a HELLO's info r->data */
            int signal;           /* stored signal, -1: not a live worker */
        } seen;
    } u;
    char *jid, *wid; /* owned copies the refs point to (may be NULL) */
    void *data;      /* the handler's; freed by its done */
    void (*data_free)(void *data);
};

/* A zeroed request of kind. */
rb_pgreq *rb_pgreq_new(rb_pgreq_kind kind);
/* An RB_PGR_CALL request running call, then done, with data (freed by
 * data_free with the request); not posted yet. */
rb_pgreq *rb_pgreq_new_call(void *data, void (*data_free)(void *),
                            void (*call)(rb_pg *, rb_pgreq *),
                            void (*done)(rb_eng *, rb_pgreq *));
/* Hands r to the database threads. */
void rb_pgreq_post(rb_eng *eng, rb_pgreq *r);
/* As rb_pgreq_post, with the chain then (linked by next; NULL: none)
 * right behind r, so that a database thread takes them in one batch. */
void rb_pgreq_post_with(rb_eng *eng, rb_pgreq *r, rb_pgreq *then);
/* The end of a done handler: r is freed. */
void rb_pgreq_finish(rb_eng *eng, rb_pgreq *r);
/* Logs a failed request's database error; a lost connection is logged by
 * the link once per outage (mode_link_report). */
void rb_pgmode_storage_error(rb_eng *eng, rb_pgreq *r);
/* Ends op->err's message (op failed with rc, a store error) with what a
 * client needs to know of a change it asked for: "outcome unknown"
 * (RB_EDOUBT: the commit was sent, its reply lost) when the database may
 * have committed it, else "not applied" (rolled back, or never sent);
 * nothing for a read. backend.c. */
void rb_pgmode_doubt_text(rb_eng_op *op, int rc);

/* Counts an applied failure (a FAIL, or an expiry the maintenance thread
 * reaped) in this node's /metrics: failed and its outcome (retried, dead
 * or discarded) under the job's queue and job type, and the retry delay.
 * Loop thread only. */
void rb_pgmode_count_failure(rb_eng *eng, const rb_pg_fail_result *res);

/* FETCH (the job engine's op, backend.c): claims for op at once and
 * completes op with the job or none; the engine then parks op, and
 * rb_pgmode_refetch claims again for it on a notification, a local push
 * or the poll (rb_eng_wake) until its 2 s end. A job claimed for a FETCH
 * nobody waits for any more is released at once. */
void rb_pgmode_fetch(rb_eng *eng, rb_eng_op *op);
/* The claim to post with an ACK of wid (prefetch.c), or NULL (prefetch
 * off, no FETCH seen from wid, enough held for it, stopping). */
rb_pgreq *rb_pgmode_prefetch_claim(rb_eng *eng, const char *wid);
/* A FAIL scheduled its job's retry at due_ms: promoted then, not at the
 * maintenance thread's next tick (mode_maint_due). */
void rb_pgmode_retry_due(rb_eng *eng, int64_t due_ms);
/* INFO's rebound.prefetch of this node: {"enabled", "held", "hits",
 * "expired"} (a new reference). */
json_t *rb_pgmode_prefetch_json(rb_eng *eng);
/* The database link (link.c's mode_link) as the engine reports it: up or
 * down since when, the last successful round trip, what began an outage.
 * rb_backend.health. */
void rb_pgmode_health(rb_eng *eng, rb_eng_health *h);
/* rb_backend.cron_ticks: the "cron:NAME" rows read at open (mode.c). */
json_t *rb_pgmode_cron_ticks(rb_eng *eng);
/* Jobs became ready in queues (NULL: anywhere, n 0): the FETCHes parked
 * on those queues claim again, one statement per queue list (their claims
 * posted to one database thread together). While the claims of a queue
 * list's parked FETCHes are in flight, a wake for its queues starts no
 * more claims for that list; it is noted, and when the last claim is back
 * the list's parked FETCHes claim once more (the wake may have come after
 * the claims' snapshot). So however many notifications arrive, a node
 * has at most one claim statement in flight per queue list for its parked
 * FETCHes, and no wake is lost. Every wake of a parked FETCH goes through
 * here. */
void rb_pgmode_wake(rb_eng *eng, const char *const *queues, size_t n);
/* Distributed mode's rb_backend.refetch: claims again for c, parked in a
 * FETCH, within what is left of its wait (false while the node stops). */
rb_eng_try rb_pgmode_refetch(rb_eng *eng, rb_eng_op *op);
/* The FETCHes parked on this node that can take jobs of push r at once
 * (plain, ready, unthrottled): each job so matched is marked for its
 * hand-off claim, returned as a chain to post right behind r (NULL:
 * none); the push inserts the job claimed for that FETCH's worker and the
 * claim answers it, in the push's transaction (db_thread.c). Loop thread. */
rb_pgreq *rb_pgmode_hand_off(rb_eng *eng, rb_pgreq *r);

#endif
