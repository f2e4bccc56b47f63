/* Shared by distributed mode's machinery (mode.c, request.c, db_thread.c,
 * listen_thread.c, maint_thread.c, fetch.c), not by the rest of the
 * backend: the mode's struct with the lock that guards what the threads
 * hand to the loop, the tuning constants, and the threads' entry points.
 * Who may touch what is marked at each field. */
#ifndef RB_BACKEND_PG_MODE_IMPL_H
#define RB_BACKEND_PG_MODE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/pg/mode.h"
#include "backend/pg/request.h"
#include "common/table.h"

/* Database threads per node (work engines), and how often a waiting FETCH
 * claims again without a notification. */
#ifndef RB_PGMODE_THREADS
#define RB_PGMODE_THREADS 2
#endif
#define RB_PGMODE_POLL_MS 1000
/* The maintenance tick (promote, reap, drop dead jobs), with +-20 % jitter,
 * and its batch size. */
/* Prefetch (prefetch.c): how long a job claimed with an ACK waits for its
 * worker's FETCH, how many one worker id may hold, and how many worker ids
 * a node remembers the queues of. */
#define RB_PGMODE_PREFETCH_HOLD_MS 500
#define RB_PGMODE_PREFETCH_PER_WID 8
#define RB_PGMODE_PREFETCH_WIDS 4096
#define RB_PGMODE_TICK_MS 250
/* How long this node's rb_parked row lasts (fetch.c: written again when
 * less than half is left and a FETCH parks; a node that died drops out
 * after it). */
#define RB_PGMODE_PARKED_MS 10000
#define RB_PGMODE_BATCH 1000
/* The database threads' collection window (db_thread.c): under load a
 * thread with requests queued waits for as many as the last batch
 * carried, for at most half the batches' average time in the database
 * and never more than this (us). */
#define RB_PGMODE_WINDOW_MAX_US 2000

/* The leader lease (leader.c): its length and how often a node takes or
 * renews it; the lease length is test hook pg.leader_lease_ms. */
#define RB_PGMODE_LEASE_MS 5000
#define RB_PGMODE_LEASE_EVERY_MS 1000

/* The leader lease as this node sees it (leader.c), guarded by rb_pgmode's
 * mu. */
typedef struct mode_leader {
    char *addr;         /* this node's client port to advertise; NULL: not
                           competing (the loop sets it once: rb_backend.leader_offer) */
    char *tls_id;       /* its certificate's identity, "" for plain TCP (with addr) */
    rb_pg_leader view;  /* the holder as the last lease statement read it
                           (the maintenance thread writes it) */
    int64_t view_until; /* wall ms on this node's clock: the view holds until then */
    bool held;          /* this node holds the lease (it deletes the row when it stops) */
    /* Maintenance thread only: */
    int64_t next_ms;    /* the next lease statement (wall ms) */
    bool failing;       /* the last one failed (logged once) */
} mode_leader;

/* A write transaction a database thread ran for a PUSH, ACK or FAIL batch:
 * its rows and how long it took, for rb_metrics_commit. */
typedef struct mode_commit {
    size_t n_ops;
    int64_t us;
} mode_commit;

/* What the threads saw for this node's /metrics, waiting for the loop
 * thread (the only one that may touch eng->metrics). */
typedef struct mode_observed {
    rb_pg_fail_result *reaped; /* expired reservations failed (status DONE) */
    size_t n_reaped;
    int64_t *late; /* lateness of promoted jobs, ms */
    size_t n_late;
    mode_commit *commits;
    size_t n_commits;
    /* claim statements run for FETCHes ([1]: for parked ones woken), and
     * how many of them found no job */
    size_t claims[2], claims_empty[2];
    rb_pg_labels *expired; /* jobs dropped expired (sql_unique.c) */
    size_t n_expired;
} mode_observed;

/* A job claimed with an ACK for its worker's next FETCH (prefetch.c). */
typedef struct mode_pre {
    char *wid;
    char **queues; /* the FETCH queue list it was claimed for */
    int nq;
    rb_pg_claimed job;
    int64_t at_ms; /* when its claim was posted (wall clock ms) */
} mode_pre;

/* A worker id's last FETCH queue list (prefetch.c). */
typedef struct mode_last {
    char *wid;
    char **queues;
    int nq;
    void *hnext; /* rb_pgmode.last's chain */
} mode_last;

/* The database link as this node sees it (link.c), guarded by rb_pgmode's
 * mu. Its members are the connections that commit: the database threads'
 * (0 .. n_threads - 1) and the maintenance thread's (n_threads). An outage
 * begins at the first member whose connection fails (rb_pg_lost) and ends
 * once every member has reached the database again, so a connection that
 * broke in the outage and is found broken later does not start another. */
typedef struct mode_link {
    bool down;
    int64_t since_ms;       /* wall ms: when the current state began (0: the start) */
    int64_t since_mono;     /* monotonic ms of the same, for the outage's duration */
    int64_t last_commit_ms; /* wall ms: a member's last round trip that succeeded */
    unsigned members;       /* bit per member */
    unsigned ok;            /* while down: the members that got through since */
    char error[256];        /* while down: the failure that began it */
} mode_link;

struct rb_pgmode {
    rb_eng *eng;
    json_t *cron_ticks; /* the "cron:NAME" rows read at open (rb_backend.cron_ticks) */
    rb_pg *work[RB_PGMODE_THREADS];
    pthread_t threads[RB_PGMODE_THREADS];
    int n_threads;

    /* Guarded by mu: the requests to run, the finished ones, and the
     * queues the listen or maintenance thread saw jobs arrive in. */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* requests queued, or stop */
    pthread_cond_t maint_cv; /* maintenance: stop */
    rb_pgreq *todo, **todo_tail;
    rb_pgreq *done, **done_tail;
    char **notified;
    size_t n_notified;
    bool notify_all;
    mode_observed seen; /* for /metrics */
    bool signalled; /* efd written since the loop last read it */
    int64_t maint_wake_at; /* when the maintenance thread wakes next (wall ms;
                              0 while it runs its tick) */
    int64_t maint_due_min; /* the earliest retry due the loop saw scheduled
                              since the thread planned its sleep (INT64_MAX: none) */
    mode_link link; /* link.c */
    bool slow_busy; /* a database thread runs a slow request (db_thread.c) */
    /* The collection window (db_thread.c): the most requests a recent
     * batch handed back carried (the clients that come back next; lowered
     * by one per shorter batch, to 0 after a pause; < 2: no wait) and the
     * batches' average time in the database (us). */
    size_t window_want;
    int64_t window_avg_us;
    bool stop;

    int efd;
    struct event *efd_ev, *poll_ev;
    struct event *held_ev; /* refreshes the registry rows of this node's workers */

    rb_pg *listen, *maint;
    pthread_t listen_th, maint_th;
    bool listen_started, maint_started;
    int stop_pipe[2]; /* wakes the listen thread's poll() */

    /* Loop thread only. */
    uint64_t notify_seq; /* wake-ups delivered so far */
    /* Wake rounds (fetch.c's rb_pgmode_wake): per queue list, the claims
     * of its parked FETCHes in flight and whether a wake came meanwhile. */
    struct mode_round *rounds;
    uint64_t wake_serial; /* rb_pgmode_wake calls so far */
    /* While a round is posted: its claims, handed to one database thread
     * together (request.c's rb_pgreq_post and mode_post_held). */
    bool holding;
    rb_pgreq *held, **held_tail;
    struct event *throttle_ev; /* wakes parked FETCHes when a full throttled
                                  queue's slot frees by itself (fetch.c) */
    int64_t throttle_at;       /* throttle_ev's time; 0 or INT64_MAX: not armed */
    mode_pre *pre;       /* prefetch.c: jobs held for their worker's FETCH */
    size_t n_pre;
    rb_table last;       /* prefetch.c: each worker id's last FETCH queues, by wid */
    struct event *pre_ev; /* puts back jobs held too long */
    uint64_t prefetch_hits, prefetch_expired; /* INFO's distributed.prefetch */
    uint64_t hand_seq;     /* fetch.c: the last hand-off token */
    int64_t parked_until;  /* fetch.c: this node's rb_parked row lasts until (wall ms) */
    mode_leader leader;    /* leader.c; guarded by mu */
    bool parked_posting;   /* fetch.c: its refresh is in flight */
};

/* The wake round of one queue list (fetch.c): the claims of parked
 * FETCHes waiting on exactly these queues that are in flight (posted
 * together, one statement), and whether a wake for any of the queues came
 * meanwhile (then the list's parked FETCHes claim again when the last
 * claim is back). Kept while claims are in flight. Loop thread. */
typedef struct mode_round {
    struct mode_round *next;
    char **queues; /* owned copies */
    int nq;
    int out;
    bool again;
    uint64_t serial; /* the wake (wake_serial) whose claims it took last: the
                        list's other FETCHes of that wake join them */
} mode_round;

/* A database thread's argument: its mode and its own engine. */
typedef struct mode_thread_arg {
    rb_pgmode *pm;
    rb_pg *pg;
} mode_thread_arg;

/* --- the hand-over between the loop and the threads (request.c) --- */

/* Wakes the loop (mu held). Any thread. */
void mode_signal_loop(rb_pgmode *pm);
/* Records that jobs arrived in queues (NULL: anywhere; the names are taken
 * over) for the loop; wakes it. Listen and maintenance threads (mu not held). */
void mode_note_ready(rb_pgmode *pm, char **queues, size_t n);
/* Appends n items of size sz from src to arr (holding *len items);
 * returns the array, reallocated when n > 0. */
void *mode_append(void *arr, size_t *len, const void *src, size_t n, size_t sz);
/* Hands the maintenance thread's reaps and promotions to the loop (mu
 * not held); wakes it. Maintenance thread. */
void mode_note_maintenance(rb_pgmode *pm, const rb_pg_fail_result *reaped, size_t n_reaped,
                           const int64_t *late, size_t n_late);
/* Hands the jobs pg dropped expired (rb_pg_take_expired) to the loop's
 * /metrics; mu held. Database and maintenance threads. */
void mode_note_expired_locked(rb_pgmode *pm, rb_pg *pg);
/* A job of this node falls due (a retry, wall-clock ms): the maintenance
 * thread is woken to promote it then if it would sleep past it. Loop
 * thread (mu not held). */
void mode_maint_due(rb_pgmode *pm, int64_t due_ms);
/* Frees what o holds and zeroes it. */
void mode_observed_release(mode_observed *o);
/* Counts what the threads saw into this node's /metrics (loop thread). */
void mode_observed_count(rb_eng *eng, const mode_observed *o);
/* Posts the requests rb_pgreq_post held back (pm->holding) at once, so
 * that one database thread takes them in one batch. Loop thread. */
void mode_post_held(rb_pgmode *pm);
/* Removes this node from rb_parked (stopping; pg: an open engine). */
void mode_parked_clear(rb_eng *eng, rb_pg *pg);
/* Frees what wake rounds left pending (rb_pgmode_free). */
void mode_rounds_free(rb_pgmode *pm);
/* Frees r (its kind's fields, data, copies). */
void mode_req_free(rb_pgreq *r);

/* --- FETCH's helpers (fetch.c) and prefetch (prefetch.c); loop thread --- */

/* Puts back at once a job claimed for wid (NULL: none) that nobody will
 * get, without consuming its attempt (a request of its own). */
void mode_release_claimed(rb_eng *eng, const char *jid, const char *wid);
/* The test fault name (a constant: pg.claim_pause_ms or pg.prefetch_pause_ms)
 * stops the loop thread once, when got (fetch.c). */
void mode_fault_pause(const char *name, bool got);
/* Whether [storage] prefetch is on. */
bool mode_prefetch_on(const rb_eng *eng);
/* A FETCH of wid (NULL: none) named queues: remembered for its ACKs. */
void mode_prefetch_seen(rb_eng *eng, const char *wid, char *const *queues, int nq);
/* A FETCH of wid named queues: a job held for it with that list moves to
 * *jid and *json (true); held ones for other lists are put back. */
bool mode_prefetch_take(rb_eng *eng, const char *wid, char *const *queues, int nq,
                        char **jid, char **json);
/* Makes pm's prefetch state (before anything is posted). */
void mode_prefetch_init(rb_pgmode *pm);
/* The node stops (its threads joined): held jobs put back through pg
 * (NULL: only freed), everything freed. */
void mode_prefetch_release_all(rb_eng *eng, rb_pg *pg);

/* --- the database link (link.c) --- */

/* Member `member` (a database thread's index, or n_threads: the
 * maintenance thread) ran round trips: rc 0 (the database answered), a
 * lost connection (rb_pg_lost: err says why), or another error (nothing
 * learnt about the link). Logs an outage once when it begins and once
 * when it ends, with its length. Any thread, mu not held. */
void mode_link_report(rb_pgmode *pm, int member, int rc, const rb_err *err);
/* Whether member should check its connection (an outage lasts and it has
 * not reached the database since it began). mu held. */
bool mode_link_probe_due_locked(const rb_pgmode *pm, int member);
/* During an outage, whether a member other than member got through again:
 * the database is back, so member's connection need not wait out its
 * reconnect backoff (up to 5 s) to try. Takes mu. */
bool mode_link_other_back(rb_pgmode *pm, int member);
/* The link's members: every database thread and the maintenance thread.
 * Before the threads start. */
void mode_link_init(rb_pgmode *pm);

/* --- the leader lease (leader.c) --- */

/* Takes or renews the lease and reads its holder when due (about every
 * second, only once the loop offered this node's address). Maintenance
 * thread, mu not held. */
void mode_leader_tick(rb_pgmode *pm);
/* Whether this node forwards and follows a leader whose lease, as last
 * read, still runs: its maintenance is then the leader's. Takes mu. */
bool mode_leader_follows(rb_pgmode *pm);
/* Gives the lease up if this node holds it, and frees its state (the
 * threads joined; pg: an open engine, or NULL). */
void mode_leader_release(rb_pgmode *pm, rb_pg *pg);

/* --- the threads, started by mode.c, joined by rb_pgmode_free --- */

/* True once rb_pgmode_free asked the threads to stop. Any thread. */
bool mode_stopping(rb_pgmode *pm);
/* A database thread (db_thread.c); arg: a malloc'd mode_thread_arg it frees. */
void *mode_db_thread(void *arg);
/* The listen thread (listen_thread.c); arg: the rb_pgmode. */
void *mode_listen_thread(void *arg);
/* The maintenance thread (maint_thread.c); arg: the rb_pgmode. */
void *mode_maint_thread(void *arg);

#endif
