/* The PostgreSQL job engine: distributed mode (docs/distributed.md). Several
 * `rebound serve` processes share one PostgreSQL database; the database holds
 * every job and decides every claim, so the engine's operations map one to
 * one onto the server's commands (PUSH/PUSHB, FETCH, ACK, FAIL, SNOOZE,
 * EXTEND, MUTATE, QUEUE, INFO, JOB, JOBS, FLUSH; HELLO, BEAT and WORKERS
 * on the cluster's worker registry) plus the timer's work (promote due
 * jobs, reap expired leases, drop dead jobs past retention, forget stale
 * workers).
 *
 * Threading: an rb_pg is one libpq connection and is not thread-safe; use it
 * from one thread at a time (it may move between threads between calls). Every call blocks for its round trips, so the
 * intended integration (docs/distributed.md) runs one engine on a dedicated
 * database thread that batches the requests arriving together, and a second
 * engine opened with `listen` on the event loop, which only waits on
 * rb_pg_socket() and calls rb_pg_drain().
 *
 * Errors: every function returns 0 or a negative RB_E* code with err filled.
 * RB_ECONN means the database is unreachable, or the connection was lost
 * or gave no reply in time before anything could commit: nothing was
 * applied. RB_EDOUBT is the same loss while a COMMIT (or a statement
 * outside a transaction) was in flight: it may or may not have been
 * applied. Either way the engine reconnects on a later call, with a
 * backoff from 100 ms doubling to 5 s. RB_ESTORE is any other database
 * error (the transaction was rolled back).
 * RB_EVERSION: the schema is not the one this build speaks.
 *
 * Times are wall-clock milliseconds (rb_now_ms()) passed in by the caller, so
 * every node must keep its clock in sync (NTP): leases and retry times are
 * compared across nodes. */
#ifndef RB_BACKEND_PG_SQL_H
#define RB_BACKEND_PG_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "config/config.h"
#include "engine/batch.h"
#include "engine/batch_view.h"
#include "engine/debounce.h"
#include "engine/failure.h"
#include "engine/group_cmd.h"
#include "engine/job_state.h"
#include "engine/mutation.h"
#include "engine/reads.h"
#include "engine/track.h"
#include "engine/unique.h"
#include "engine/workflow.h"
#include "policy/policy.h"

/* True for a PostgreSQL storage url: postgres://, postgresql:// or a
 * conninfo string (with '='). */
bool rb_pg_is_url(const char *url);

/* The schema version this build creates and requires (rb_pg_migrate): the
 * number of the last migration in src/backend/pg/schema/ (the build checks
 * they agree). */
#define RB_PG_SCHEMA_VERSION 23

/* Job states, flags and per-job outcomes are the engine's
 * (engine/job_state.h), stored as the same numbers (sql_numbers.h lists
 * every number the SQL uses, each checked against its C constant). Done
 * and discarded jobs are deleted. */

typedef struct rb_pg rb_pg;

/* Whether rc says the connection failed (RB_ECONN, RB_EDOUBT): the
 * database is unreachable or the connection broke; reconnecting may help. */
static inline bool rb_pg_lost(int rc)
{
    return rc == RB_ECONN || rc == RB_EDOUBT;
}

typedef struct rb_pg_options {
    const char *url;       /* libpq URL or conninfo ("postgres://u@h/db") */
    const rb_config *cfg;  /* borrowed for the engine's life; NULL = defaults */
    bool listen;           /* LISTEN on the jobs channel (rb_pg_drain) */
    uint64_t seed;         /* random source for jitter and catch jids; 0 = OS */
    /* Bounded waits (a server's engines; 0: unbounded, the CLI's): each
     * round trip, the connect included, ends within io_timeout_ms (the
     * connection is then dropped: RB_ECONN, or RB_EDOUBT when what was in
     * flight may have committed), and the session runs with
     * statement_timeout and lock_timeout 80 % of it (the server's clean
     * error comes first: RB_ESTORE, the connection kept),
     * idle_in_transaction_session_timeout idle_tx_ms, and TCP keepalives
     * and tcp_user_timeout on both ends (docs/distributed.md, "Network
     * faults"; the URL's own options win). */
    int64_t io_timeout_ms;
    int64_t idle_tx_ms;
    /* The session plans no sequential scan where an index serves
     * (enable_seqscan off, and jit off: the penalty of a scan that stays
     * would pass jit_above_cost): for the work thread, whose statements touch a
     * few rows by key. Its prepared statements' generic plans, made once
     * and kept for the connection's life, were otherwise made while
     * rb_jobs was young (a new database's first minute, before autovacuum
     * looks) and scanned the whole table for each batch from then on
     * (bench/RESULTS.md, issue 30 session 14). */
    bool keyed;
} rb_pg_options;

/* Connects. On success *out is the engine (rb_pg_close() it); the schema is
 * not checked (rb_pg_check_schema). RB_ECONN with the server's message when
 * the database cannot be reached, RB_EINVAL for a malformed URL. */
int rb_pg_open(const rb_pg_options *o, rb_pg **out, rb_err *err);
void rb_pg_close(rb_pg *pg);

/* --- schema (sql_schema.c) --- */

/* The stored schema version: 0 when the database has no Rebound schema. */
int rb_pg_schema_version(rb_pg *pg, int *version, rb_err *err);
/* 0 when the schema is RB_PG_SCHEMA_VERSION; RB_EVERSION with a message
 * saying what to do otherwise (older: run `rebound migrate`; newer: this
 * rebound is too old for the database). */
int rb_pg_check_schema(rb_pg *pg, rb_err *err);
/* Creates or upgrades the schema to RB_PG_SCHEMA_VERSION in one transaction
 * (under an advisory lock, so nodes migrating at once are safe). *from and
 * *to (may be NULL) receive the versions before and after. A database newer
 * than this build is refused with RB_EVERSION and left untouched. */
int rb_pg_migrate(rb_pg *pg, int *from, int *to, rb_err *err);
/* Same, stopping at version target (1..RB_PG_SCHEMA_VERSION); for tests. */
int rb_pg_migrate_to(rb_pg *pg, int target, int *from, rb_err *err);
/* The migrations' SQL, embedded at build time from
 * src/backend/pg/schema/NNNN.sql (scripts/embed_schema.sh):
 * rb_pg_migrations[v - 1] is version v's text, byte for byte its file's,
 * for v in 1..RB_PG_SCHEMA_VERSION; NULL after the last. Static storage. */
extern const char *const rb_pg_migrations[];

/* --- connection state and notifications (sql_conn.c) --- */

/* True while the connection is up (a lost one is reopened by the next call
 * once its backoff has passed). */
bool rb_pg_connected(const rb_pg *pg);
/* Reconnects now if disconnected and the backoff has passed. 0 when
 * connected afterwards, else RB_ECONN. */
int rb_pg_reconnect(rb_pg *pg, rb_err *err);
/* Ends the reconnect backoff: the next call tries at once (another
 * connection just got through: the database is back). */
void rb_pg_retry_now(rb_pg *pg);
/* The connection's socket to wait on for notifications, or -1 when
 * disconnected. It changes on reconnect: compare rb_pg_generation(). */
int rb_pg_socket(const rb_pg *pg);
/* Incremented on every successful (re)connect. */
unsigned rb_pg_generation(const rb_pg *pg);
/* Until rb_pg_set_deadline(pg, 0), every round trip (and reconnect) must
 * end by mono_ms (rb_mono_ms()): one still waiting then is abandoned and
 * the connection dropped, as a lost one (RB_ECONN, or RB_EDOUBT when what
 * was in flight may have committed). Without a deadline each round trip
 * has io_timeout_ms (rb_pg_options). */
void rb_pg_set_deadline(rb_pg *pg, int64_t mono_ms);
/* For a bounded engine (rb_pg_options.io_timeout_ms), the session's
 * statement_timeout and lock_timeout for what runs next: 80 % of ms, or
 * back to the bound's when ms is 0 (connecting first when it must). */
int rb_pg_statement_bound(rb_pg *pg, int64_t ms, rb_err *err);
/* A round trip that checks the connection ("SELECT 1"), reconnecting
 * first when it is down and the backoff allows: 0 when the database
 * answered, else RB_ECONN. */
int rb_pg_ping(rb_pg *pg, rb_err *err);
/* Reads what the socket has and returns, in *queues (NULL-free array of
 * *n distinct queue names, caller frees each and the array), the queues
 * that received jobs since the last drain. Never blocks: when the
 * connection is lost it returns RB_ECONN and leaves the reconnect to
 * rb_pg_reconnect() (which blocks for at most the connect timeout, 5 s
 * unless the URL sets connect_timeout). Only meaningful for an engine
 * opened with listen. Notifications are a hint: a waiting
 * FETCH must still poll (docs/distributed.md), since poolers in
 * transaction mode drop them. */
int rb_pg_drain(rb_pg *pg, char ***queues, size_t *n, rb_err *err);

/* --- pushing and claiming (sql_jobs.c) --- */

/* A job to push. Strings are borrowed for the call. */
typedef struct rb_pg_new_job {
    const char *jid;
    const char *queue;
    int priority;     /* 1..9 */
    int64_t at_ms;    /* run time; <= now: enqueued at once */
    int reserve_s;    /* lease length at claim */
    const char *json; /* compact job JSON, with created_at, without enqueued_at */
    /* unique jobs and expiring jobs (engine/unique.h): ukey "" for a job
     * that locks nothing; expires_ms 0 for none */
    char ukey[RB_UNIQUE_KEY_LEN];
    int64_t until_ms; /* when the lock runs out */
    bool until_start; /* unique_until "start" */
    int64_t expires_ms;
    /* hand-off (rb_pg_push_hand): when set, the job is inserted already
     * claimed for hand_wid (NULL: a worker without a wid), as a claim
     * would leave it, unless its queue is paused; only for a plain job
     * ready at once (no unique lock, no expiry) */
    bool hand;
    const char *hand_wid;
    bool grouped; /* names custom.group (never handed off: it waits its turn) */
    const char *grp; /* that group (the row's grp), NULL when none or unknown: the
                        row's is then read from json (schema 16's trigger) */
} rb_pg_new_job;

/* Fills *out from a validated job object (rb_job_validate's rules): queue
 * default "default", priority default 5, at, reserve_for (0 = default_s),
 * created_at made from now when absent, enqueued_at removed. *text receives
 * the compact JSON out->json points to (caller frees); the other strings
 * are borrowed from job. */
void rb_pg_job_from_json(json_t *job, int64_t now, int default_reserve_s, rb_pg_new_job *out,
                         char **text);

/* Inserts the jobs in one statement (PUSH and PUSHB). status[i] is 0 or
 * RB_EEXIST when jid i is taken (by a stored job or an earlier element of
 * the same batch), or RB_ENOTUNIQUE when job i's unique lock is held by
 * another job (its own jid again included) or by an earlier element.
 * Enqueued jobs notify their queues' listeners (the plain push: only when
 * a node other than this engine's has a FETCH parked, rb_parked). A push
 * holding a unique or expiring job runs rb_push_unique (the locks taken
 * in the statement), any other the plain statement SQL_PUSH. */
int rb_pg_push(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
               rb_err *err);
/* rb_pg_push, and when handed is not NULL, handed[i] receives for job i,
 * marked hand and inserted claimed for its hand_wid, the job as a FETCH
 * answers it (with enqueued_at; the caller frees it), else NULL (ready as
 * any push, or not inserted: status says). */
int rb_pg_push_hand(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                    char **handed, rb_err *err);
/* This engine's node, named in rb_parked (rb_pg_parked) and left out of
 * the nodes its pushes notify; copied. NULL: none (pushes notify every
 * node with a parked FETCH). */
void rb_pg_set_node(rb_pg *pg, const char *node);
/* Groups in turn (sql_groups.c): pg takes its turn cursors (the group
 * each queue's claim served last) from from's table, so that the
 * database threads of one node rotate together. Both must stay open
 * while either claims; call before either is used by another thread. */
typedef struct rb_pg_turns rb_pg_turns;
void rb_pg_share_turns(rb_pg *pg, rb_pg *from);
/* Maintenance of rb_groups: holds whose time has come released (their
 * queues notified; *released: how many queues) and up to limit idle
 * groups' rows deleted. */
int rb_pg_groups_maint(rb_pg *pg, int64_t now, int limit, int *released, rb_err *err);
/* At a node's start: every concurrency hold released, so that the next
 * claim re-counts it with this node's [groups]. */
int rb_pg_groups_start(rb_pg *pg, rb_err *err);
/* GROUP SET/PAUSE/RESUME/GET and GROUPS (engine/group_cmd.h), for r
 * (checked) at now: SET's override and PAUSE's pause upserted on the
 * group's rb_groups row (with the queue's '' row: its claims then take
 * turns), a changed limit's hold lifted and the queue notified so the
 * next claim decides afresh; RESUME ends a pause; one statement each,
 * durable when it returns 0. GET fills out->view, LIST out->views (the
 * page), out->total and out->sums as rb_backend.group says. A queue with
 * no rb_queues or rb_groups row that the configuration does not name:
 * rb_group_no_queue's RB_ENOENT. Results owned by the caller. */
typedef struct rb_pg_group_out {
    rb_group_view view;
    rb_group_view *views;
    size_t n;
    int64_t total;
    rb_group_sum *sums;
    size_t n_sums;
} rb_pg_group_out;
int rb_pg_group(rb_pg *pg, const rb_group_req *r, int64_t now, rb_pg_group_out *out,
                rb_err *err);
/* INFO's held-back starts of the queues of sums (n of them), holds[i] for
 * sums[i] (a new array, free it; allocated on error too): the cluster's,
 * counted in the database by the claims and GROUP PAUSEs that set them. */
int rb_pg_group_holds(rb_pg *pg, const rb_group_sum *sums, size_t n, rb_group_holds **holds,
                      rb_err *err);
/* JOB's hold of job (an enqueued job of a paused or throttled queue, or
 * of a held group: hold_by, hold, hold_until_ms, hold_detail, as reads.h
 * says) at now; nothing when it is not held or its rows cannot be read. */
void rb_pg_job_hold(rb_pg *pg, rb_job_view *job, int64_t now);
/* Lists this engine's node in rb_parked until until_ms (wall ms): a FETCH
 * waits there, the other nodes' pushes notify it. until_ms 0: removes it. */
int rb_pg_parked(rb_pg *pg, int64_t until_ms, rb_err *err);

/* The leader lease (rb_leader, sql_leader.c). The holder as a lease
 * statement read it: found false when nobody holds it. */
typedef struct rb_pg_leader {
    bool found;
    char tls_id[80]; /* the holder's certificate ("sha256:…"), "" for plain TCP */
    char node[256], addr[256];
    int64_t until_ms; /* the lease's end, the database's clock (ms) */
    int64_t now_ms;   /* the database's clock when the statement ran */
} rb_pg_leader;
/* One statement: takes the lease for node (addr, tls_id) for lease_ms when it
 * is free or has ended, renews it when node holds it, and reads the
 * holder into out. 0 or the store's error. */
int rb_pg_leader_lease(rb_pg *pg, const char *node, const char *addr, const char *tls_id,
                       int64_t lease_ms,
                       rb_pg_leader *out, rb_err *err);
/* Gives the lease up when node holds it (a graceful stop). */
int rb_pg_leader_drop(rb_pg *pg, const char *node, rb_err *err);

/* The same for a push where some job names parents (docs/workflows.md),
 * in one transaction: the parents outside the push read (`FOR SHARE`,
 * or a succeeded record), the push checked as a unit by the engine's
 * rb_dep_check_push (RB_EINVAL with its message, nothing changed), the
 * jobs inserted, then each child's edges and count (rb_dep_attach):
 * waiting while a parent remains. */
int rb_pg_push_deps(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                    rb_err *err);

/* A push where some jobs are batch members (bids[i]: job i's custom.bid,
 * or NULL), in one transaction: the batches locked FOR UPDATE with their
 * ancestors, a job of an unknown or expired batch refused (status[i]
 * RB_ENOENT, not pushed), the others pushed (as rb_pg_push_deps when deps),
 * each member added to its batch (rb_batch_apply's ADDED). */
int rb_pg_push_batch(rb_pg *pg, const rb_pg_new_job *jobs, const char *const *bids, size_t n,
                     bool deps, int64_t now, int *status, rb_err *err);

/* --- cron (sql_cron.c; server/cron.h) --- */

/* A cron tick's push, in one transaction: the meta row key set to tick_s
 * when it holds no tick or an older one, then the jobs pushed (as
 * rb_pg_push_debounce when deb is not NULL, as rb_pg_push_deps when deps,
 * else as rb_pg_push). When the row holds tick_s or a later tick, nothing
 * is written: *stale set, each status RB_EEXIST. Of nodes racing for one
 * tick exactly one pushes (the row's lock). */
struct rb_pg_debounce;
int rb_pg_push_tick(rb_pg *pg, rb_pg_new_job *jobs, struct rb_pg_debounce *deb, size_t n,
                    bool deps, const char *key, int64_t tick_s, int64_t now, int *status,
                    bool *stale, rb_err *err);

/* Calls fn for each rb_meta row whose key starts with prefix, in key
 * order (the cron entries' last ticks at start). */
int rb_pg_meta_each(rb_pg *pg, const char *prefix,
                    void (*fn)(void *arg, const char *key, const char *value), void *arg,
                    rb_err *err);

/* --- batches (sql_batch.c; docs/workflows.md "Batches") --- */

/* BATCH NEW: a new batch from def (its parent, when named, locked, told
 * of its child; RB_ENOENT "No such batch" when it is unknown or expired).
 * *bid receives the new bid (caller frees). One transaction. */
int rb_pg_batch_new(rb_pg *pg, const rb_batch_def *def, int64_t now, char **bid, rb_err *err);
/* BATCH COMMIT: the row locked, the event applied, callbacks enqueued in
 * the same transaction. RB_ENOENT when unknown or expired. */
int rb_pg_batch_commit(rb_pg *pg, const char *bid, int64_t now, rb_err *err);
/* OPEN and STATUS: the batch as stored (rb_batch_free it); RB_ENOENT when
 * unknown or expired. */
int rb_pg_batch_get(rb_pg *pg, const char *bid, int64_t now, rb_batch **out, rb_err *err);
/* Forgets up to limit expired batches (uncommitted for 30 minutes, or
 * finished for [workflows] batch_retention with no unfinished ancestor),
 * each in its own transaction, their parents told. *n = batches dropped. */
int rb_pg_batches_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);
/* INFO's rebound.batches: open (unfinished), stored, callbacks enqueued. */
/* A batch's page (sql_batch_view.c): *found false for an unknown or
 * expired bid; else v filled (engine/batch_view.h), members by jid up to
 * RB_BATCH_VIEW_MAX_MEMBERS. One read-only snapshot. */
int rb_pg_batch_view(rb_pg *pg, const char *bid, int64_t now, bool *found, rb_batch_view *v,
                     rb_err *err);
/* The listing's page in rb_batch_list_cmp's order: every stored batch
 * (all) or the unfinished ones; *list a new array of *n batches, *total
 * every match. */
int rb_pg_batch_list(rb_pg *pg, bool all, int64_t offset, int64_t limit, rb_batch ***list,
                     size_t *n, int64_t *total, rb_err *err);
int rb_pg_batch_info(rb_pg *pg, int64_t *open, int64_t *stored, int64_t *callbacks,
                     rb_err *err);

/* One claimed job (FETCH's reply). */
typedef struct rb_pg_claimed {
    int slot;   /* the index into wids this job was claimed for */
    char *jid;  /* owned */
    char *json; /* owned: the job as clients see it, enqueued_at included */
} rb_pg_claimed;

/* Claims up to n ready jobs for n waiting FETCHes that named the same
 * queues: queues in the given order (a later queue only when the earlier
 * ones are empty), paused queues skipped, higher priority first, FIFO
 * within a priority. Each job gets attempts + 1, a lease until now +
 * reserve_s, holder wids[slot] (NULL entries: no wid). One fenced
 * `FOR UPDATE SKIP LOCKED` statement per queue inside one function call:
 * concurrent claimers on any node never get the same job. A job whose
 * custom.expires_at passed is never claimed: the ones the claim picks are
 * dropped after it, in a transaction of their own (rb_pg_expire's work; an
 * error there is logged and leaves them to the maintenance sweep), and the
 * slots they took claimed for again (a few rounds at most). A
 * unique_until "start" job's lock is released as it is claimed. A queue
 * with a throttle (sql_throttle.c) is claimed alone, in a transaction
 * holding its lock, for at most the slots free at now; one at its limit
 * is skipped as if empty, and *wake_at (may be NULL) gets the earliest
 * time a slot of such a queue frees by its timeout (INT64_MAX: none).
 * *out (free with rb_pg_claimed_free) gets *nout <= n
 * jobs ordered by slot. */
int rb_pg_claim(rb_pg *pg, const char *const *queues, int nq, const char *const *wids, int n,
                int64_t now, rb_pg_claimed **out, int *nout, int64_t *wake_at, rb_err *err);
void rb_pg_claimed_free(rb_pg_claimed *c, int n);

/* --- finishing work (sql_jobs.c, sql_fail.c) --- */

/* A job named by a worker: its jid and the caller's HELLO wid. A working
 * job belongs to the wid that claimed it: ACK, FAIL, SNOOZE and EXTEND
 * from another wid get OTHER_HOLDER and change nothing; a NULL wid (the
 * connection said none) is not checked. */
typedef struct rb_pg_ref {
    const char *jid;
    const char *wid;
} rb_pg_ref;

/* The longest queue name (the server's RB_QUEUE_NAME_MAX) and the longest
 * job type reported, in bytes; a longer job type is cut (possibly inside a
 * UTF-8 sequence, as the server's /metrics cuts it). */
#define RB_PG_QUEUE_MAX 200
#define RB_PG_JOBTYPE_MAX 127

/* What a finished job is counted under in /metrics: its queue and its
 * top-level "jobtype" as decoded text, "" when the job has none (or a
 * non-string one). */
typedef struct rb_pg_labels {
    char queue[RB_PG_QUEUE_MAX + 1];
    char jobtype[RB_PG_JOBTYPE_MAX + 1];
} rb_pg_labels;

/* The status rb_pg_ack gives an ACK of a batch member or callback whose own
 * transaction (with its batch) failed: that request alone gets the storage
 * error in err; the other ACKs of the call are committed. */
#define RB_PG_ACK_STORE_ERROR (-1)

/* ACK for n jobs in one transaction: status[i] is DONE (deleted, counted
 * processed), MISSING, OTHER_HOLDER, NOOP or RB_PG_ACK_STORE_ERROR. A late ACK of a job whose
 * lease expired and which nobody claimed since completes it. labels (may
 * be NULL; else n entries) receives, for each DONE job, the deleted job's
 * queue and job type; the entries of other statuses are zeroed. */
int rb_pg_ack(rb_pg *pg, const rb_pg_ref *refs, size_t n, int *status, rb_pg_labels *labels,
              rb_err *err);

/* FAIL's input (docs/protocol.md "FAIL fields"). Strings borrowed. */
typedef struct rb_pg_failure {
    rb_pg_ref ref;
    rb_fail_input in; /* FAIL's fields, borrowed */
} rb_pg_failure;

typedef struct rb_pg_fail_result {
    int status;          /* rb_job_status */
    rb_outcome outcome;  /* when DONE */
    int64_t delay_ms;    /* when retried */
    rb_pg_labels labels; /* when DONE: the failed job's */
} rb_pg_fail_result;

/* FAIL for n jobs in one transaction with the rows locked: each working job
 * held by the caller runs through its effective policy
 * (rb_config_effective_policy + rb_policy_decide): retry, dead, discard or
 * catch (a catch job pushed in the same transaction), with the attempt
 * history and Faktory's `failure` hash written into the row. A job that is
 * no longer working (its lease expired and was reaped) gets NOOP when it
 * carries the expired flag, NOT_WORKING otherwise: two nodes can never both
 * apply a decision for one execution. */
int rb_pg_fail(rb_pg *pg, const rb_pg_failure *f, size_t n, int64_t now,
               rb_pg_fail_result *res, rb_err *err);

/* SNOOZE: the working job runs again at now + seconds (enqueued at once
 * when 0) without consuming an attempt. *state (may be NULL) receives the
 * job's state when status is NOT_WORKING. */
int rb_pg_snooze(rb_pg *pg, const rb_pg_ref *ref, int64_t seconds, int64_t now, int *status,
                 int *state, rb_err *err);
/* EXTEND: the working job's lease ends at now + seconds. As SNOOZE. */
int rb_pg_extend(rb_pg *pg, const rb_pg_ref *ref, int64_t seconds, int64_t now, int *status,
                 int *state, rb_err *err);

/* --- the timer's work: any node, concurrently (sql_jobs.c, sql_fail.c) --- */

/* Enqueues up to limit scheduled and retrying jobs due by now, notifying
 * their queues. *n (may be NULL) = jobs promoted. late_ms (may be NULL;
 * else room for limit entries) receives, for each promoted job, now minus
 * the time it was due (the scheduler's lateness), in no particular order. */
int rb_pg_promote(rb_pg *pg, int64_t now, int limit, int64_t *late_ms, int *n, rb_err *err);
/* Fails up to limit working jobs whose lease ended by now with
 * `ReservationExpired` through their policies, marking them expired; rows
 * locked with SKIP LOCKED so two reaping nodes never take the same job.
 * *n (may be NULL) = jobs failed. res (may be NULL; else room for limit
 * entries) receives each failed job's result as rb_pg_fail gives it
 * (status DONE, outcome, delay, labels). */
int rb_pg_reap(rb_pg *pg, int64_t now, int limit, rb_pg_fail_result *res, int *n, rb_err *err);
/* Deletes up to limit dead jobs past their retention. */
int rb_pg_cleanup_dead(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);
/* Forgets up to limit succeeded records of workflow jobs past their
 * [workflows] succeeded_ttl (rows locked SKIP LOCKED: nodes run it at
 * once). *n (may be NULL) = records deleted. */
int rb_pg_deps_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);
/* The earliest deadline of any scheduled, retrying, working or dead job
 * (INT64_MAX when none): when the timer should next run; lease_ms (may be
 * NULL) gets the earliest of the working jobs' alone (their leases: when
 * the reaper has something to do). One statement. */
int rb_pg_next_due(rb_pg *pg, int64_t *at_ms, int64_t *lease_ms, rb_err *err);

/* --- administration and reads (sql_admin.c, sql_read.c) --- */

/* MUTATE in one transaction. "clear" ignores the filters. *changed (may be
 * NULL) = jobs that matched. RB_EINVAL for an unknown cmd or target. */
int rb_pg_mutate(rb_pg *pg, const rb_mutation *m, int64_t now, size_t *changed, rb_err *err);

/* QUEUE PAUSE / RESUME for the named queues ("*" = every known queue). A
 * pause makes an unknown queue known (rb_pg_queue_known); a resume of an
 * unknown queue changes nothing. */
int rb_pg_queue_pause(rb_pg *pg, const char *const *names, int n, bool paused, rb_err *err);
/* Whether the queue is in the registry (ever pushed to or paused): the
 * HTTP API's "no queue" for a resume. */
int rb_pg_queue_known(rb_pg *pg, const char *name, bool *known, rb_err *err);
/* QUEUE REMOVE: deletes the queues' enqueued jobs and resumes them.
 * *removed (may be NULL) = jobs deleted. */
int rb_pg_queue_remove(rb_pg *pg, const char *const *names, int n, int64_t *removed,
                       rb_err *err);
/* QUEUE LATENCY: seconds since the oldest enqueued job of each queue was
 * enqueued (0 for an empty or unknown queue), into out[i]. */
int rb_pg_queue_latency(rb_pg *pg, const char *const *names, int n, int64_t now, double *out,
                        rb_err *err);

/* A queue's size: the engine's (engine/reads.h). */
typedef rb_queue_size rb_pg_queue_info;

/* INFO's numbers, cluster-wide. */
typedef struct rb_pg_info {
    int64_t processed, failures; /* counters */
    int64_t enqueued, scheduled, retries, dead, working;
    int64_t waiting, blocked; /* job dependencies (docs/workflows.md) */
    int64_t workers; /* live rows of the worker registry (below) */
    rb_pg_queue_info *queues; /* queues with jobs enqueued or paused, by name */
    size_t n_queues;
} rb_pg_info;

int rb_pg_info_get(rb_pg *pg, rb_pg_info *out, rb_err *err);
void rb_pg_info_release(rb_pg_info *info);

/* --- The worker registry (docs/distributed.md, "Workers") ---
 * One row per HELLO wid for the whole cluster. A worker is live while some
 * node saw it within RB_PG_WORKER_TTL_MS: its HELLO, a BEAT, or a refresh
 * by a node holding a connection from it (the server refreshes every
 * RB_PG_WORKER_TTL_MS / 4). Only live workers are listed, counted and
 * signalled; stale rows are deleted by rb_pg_workers_cleanup. Signals are
 * 0, 1 (quiet) and 2 (terminate), the server's RB_WORKER_* numbers. */
#define RB_PG_WORKER_TTL_MS 60000

/* What a node saw of a worker (rb_pg_workers_seen). */
typedef enum rb_pg_seen_kind {
    RB_PG_SEEN_BEAT = 0,      /* a BEAT to a node without a connection that said this
                                 wid in HELLO: counts only when the row is live */
    RB_PG_SEEN_BEAT_HELD = 1, /* a BEAT to a node with such a connection */
    RB_PG_SEEN_HELLO = 2,     /* a HELLO (info: its JSON text) */
    RB_PG_SEEN_HELD = 3,      /* a node still holds a connection from it (beat time kept) */
} rb_pg_seen_kind;

typedef struct rb_pg_sighting {
    const char *wid;
    rb_pg_seen_kind kind;
    const char *info; /* HELLO: the worker's description (JSON text), else NULL */
} rb_pg_sighting;

/* Records n sightings by node (any text naming it) at now, in one
 * transaction: every kind but RB_PG_SEEN_BEAT creates a missing row (a
 * stale row found again starts afresh, without a signal), and every kind
 * refreshes seen_ms. signal[i] (may be NULL) receives the worker's stored
 * signal, or -1 for an RB_PG_SEEN_BEAT of a wid without a live row (the
 * caller's "unknown worker"). */
int rb_pg_workers_seen(rb_pg *pg, const rb_pg_sighting *s, size_t n, const char *node,
                       int64_t now, int *signal, rb_err *err);

/* Sets signal (1 or 2) on the live worker wid, or on every live worker
 * when wid is NULL; *n (may be NULL) receives how many (0: wid is not a
 * live worker). */
int rb_pg_workers_signal(rb_pg *pg, const char *wid, int signal, int64_t now, int64_t *n,
                         rb_err *err);

/* One live worker. Strings owned (rb_pg_workers_free). */
typedef struct rb_pg_worker {
    char *wid, *info, *node; /* info: its HELLO's JSON text, or NULL */
    int64_t first_ms, beat_ms, seen_ms;
    int signal;
} rb_pg_worker;

/* The live workers at now, by wid; *out is NULL when there are none. */
int rb_pg_workers_list(rb_pg *pg, int64_t now, rb_pg_worker **out, size_t *n, rb_err *err);
void rb_pg_workers_free(rb_pg_worker *w, size_t n);

/* Deletes up to limit stale rows (not seen for RB_PG_WORKER_TTL_MS at
 * now), skipping rows others hold; *n (may be NULL) receives how many. */
int rb_pg_workers_cleanup(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);

/* Folds up to limit engines' counter rows (schema 10: one per engine)
 * into one row per counter, in one statement: their sum moved, rows a
 * transaction in flight holds skipped (SKIP LOCKED), so no engine waits
 * and the sums readers see never change. *n (may be NULL): rows folded.
 * now is unused (the maintenance sweep's shape). */
int rb_pg_counters_fold(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);

/* One stored job, for JOB and JOBS: the engine's job view
 * (engine/reads.h); its json has enqueued_at when the job was ever
 * enqueued. Strings owned (rb_pg_job_release). */
typedef rb_job_view rb_pg_job;

/* JOB: RB_ENOENT when there is no such job. */
int rb_pg_job_get(rb_pg *pg, const char *jid, rb_pg_job *out, rb_err *err);
static inline void rb_pg_job_release(rb_pg_job *j)
{
    rb_job_view_release(j);
}

/* A listing's filter and page: the engine's (engine/reads.h). */
typedef rb_job_filter rb_pg_filter;

/* JOBS: the matching jobs from offset, at most limit, in the engine's
 * listing order (engine/reads.h: enqueued by queue name, priority, FIFO;
 * the others by deadline). *total = all matches. Free *out with
 * rb_pg_jobs_free. */
int rb_pg_jobs(rb_pg *pg, const rb_pg_filter *f, rb_pg_job **out, size_t *n, int64_t *total,
               rb_err *err);
static inline void rb_pg_jobs_free(rb_pg_job *jobs, size_t n)
{
    rb_job_views_free(jobs, n);
}

/* FLUSH: every job, counter and queue setting deleted. */
int rb_pg_flush(rb_pg *pg, rb_err *err);
/* total_processed and total_failures, cluster-wide. */
int rb_pg_counters(rb_pg *pg, int64_t *processed, int64_t *failures, rb_err *err);

/* --- workflows (sql_workflow.c) --- */

/* The workflow graph of jid (engine/workflow.h: rb_workflow_build over
 * rb_jobs, rb_edges and rb_dep_done) in one read-only repeatable-read
 * transaction. RB_ENOENT when jid is no stored job. */
int rb_pg_workflow(rb_pg *pg, const char *jid, size_t max_nodes, int64_t now, rb_workflow *g,
                   rb_err *err);

/* --- unique jobs and expiring jobs (sql_unique.c; docs/enterprise.md) --- */

/* Drops up to limit jobs whose custom.expires_at passed (scheduled,
 * enqueued or waiting for a retry; never a working or dead one), in one
 * transaction: deleted (their unique locks released), counted ("expired"),
 * a batch member's death noted, a parent's children told of a discard.
 * Each is logged ("JID x: Halt: job expired") and its labels kept for
 * rb_pg_take_expired. *n = jobs dropped. */
int rb_pg_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);
/* The database thread's batch transaction: rb_pg_tx_pipe_send (below)
 * opens one transaction that the plain pushes, ACKs, FAILs and claims of a
 * batch then share (each of them a unit: a savepoint where it needs its
 * own, see sql_begin), so that one COMMIT makes the whole batch durable.
 * It ends in one more round trip, a pipeline too: rb_pg_tx_commit_send,
 * then the claims' calls (each sends its statement and fails at once),
 * then rb_pg_tx_commit_read sends the COMMIT right behind them and reads
 * everything, so a claim's row locks (SKIP LOCKED can leave rows it
 * re-checked and did not take locked) end with the claim: no round trip
 * between. The same calls then take their results, and run what else
 * they need in transactions of their own; rb_pg_tx_taken ends that.
 * rb_pg_tx_commit_send refuses (RB_ESTORE, rolled back) a transaction a
 * statement outside a unit aborted, and rb_pg_tx_commit_read one a
 * claim's statement aborted: the caller runs the batch again without it.
 * A COMMIT whose reply is lost is RB_EDOUBT: the outcome is unknown.
 * rb_pg_tx_rollback undoes it, with the expired jobs' labels it kept. */
int rb_pg_tx_commit_send(rb_pg *pg, rb_err *err);
int rb_pg_tx_commit_read(rb_pg *pg, rb_err *err);
void rb_pg_tx_taken(rb_pg *pg);
void rb_pg_tx_rollback(rb_pg *pg);
/* The batch transaction in two round trips instead of one per statement:
 * rb_pg_tx_pipe_send opens it as a pipeline (BEGIN sent, not yet read);
 * the calls made next (rb_pg_push, rb_pg_ack, rb_pg_claim) send their
 * statement and fail at once, and rb_pg_tx_pipe_read sends the Sync and
 * reads every result in one round trip. The same calls, made again with
 * the same arguments in the same order, then take those results instead of
 * running their statements; any other statement runs as usual, inside the
 * transaction, which rb_pg_tx_commit ends. rb_pg_tx_pipe_read fails (and
 * rolls back: nothing applied) when a statement failed; RB_ECONN when the
 * connection was lost. rb_pg_tx_pipe_skip(pg, true) runs the statements
 * of a call that was not sent (a claim's later rounds) as usual. */
int rb_pg_tx_pipe_send(rb_pg *pg, rb_err *err);
int rb_pg_tx_pipe_read(rb_pg *pg, rb_err *err);
/* The whole batch transaction in one round trip: after rb_pg_tx_pipe_send
 * and the calls that sent their statements, the COMMIT and the Sync, every
 * result read; the calls made again take their results, committed, and run
 * what else they need in transactions of their own (rb_pg_tx_taken ends
 * that). Fails as rb_pg_tx_commit_read does. */
int rb_pg_tx_pipe_commit(rb_pg *pg, rb_err *err);
void rb_pg_tx_pipe_skip(rb_pg *pg, bool skip);
/* Tests only: a statement error that aborts the batch transaction. */
void rb_pg_tx_poison(rb_pg *pg);

/* The labels of the jobs this engine dropped expired since the last call
 * (*out: a new array of *n, caller frees; NULL when none). */
void rb_pg_take_expired(rb_pg *pg, rb_pg_labels **out, size_t *n);
/* INFO's rebound.unique and rebound.expired, the cluster's: locks stored,
 * pushes refused NOTUNIQUE, jobs dropped expired (all time). */
int rb_pg_unique_info(rb_pg *pg, int64_t *locks, int64_t *rejected, int64_t *expired,
                      rb_err *err);

/* --- progress tracking (sql_track.c; docs/enterprise.md "Tracking") --- */

/* TRACK GET of jid at now: *reply (caller owns) is engine/track.h's
 * rb_track_get over the job's row and its record, read in one statement. */
int rb_pg_track_get(rb_pg *pg, const char *jid, int64_t now, json_t **reply, rb_err *err);
/* TRACK SET in one transaction: the job row locked, then its record; when
 * rb_track_set_stores, the record written (the job marked as having one)
 * and a working job's lease extended to rb_track_lease_end. Nothing
 * changed otherwise. 0 only after COMMIT. */
int rb_pg_track_set(rb_pg *pg, const rb_track_set *in, int64_t now, rb_err *err);
/* Drops up to limit ended records past RB_TRACK_RETENTION_MS (rows locked
 * SKIP LOCKED: nodes run it at once). *n (may be NULL) = records dropped. */
int rb_pg_track_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);

/* --- debounced jobs (sql_debounce.c; engine/debounce.h) --- */

/* A push's custom.debounce for one job: on false for a plain job. */
typedef struct rb_pg_debounce {
    bool on;
    char hash[RB_DEBOUNCE_HASH_LEN]; /* rb_debounce_hash */
    const char *key;                 /* as pushed; borrowed */
    int64_t for_ms, max_ms;
    size_t index;                    /* private to rb_pg_push_debounce */
    bool merged;                     /* result: merged into its key's pending job */
} rb_pg_debounce;

/* A push where some jobs are debounced (deb[i].on), in one transaction:
 * the plain ones inserted as rb_pg_push does, then each debounced one, in
 * key order, merged into its key's pending job (scheduled or enqueued, not
 * fetched: engine/debounce.h's rb_debounce_merge and run time; its jid
 * recorded as an alias; deb[i].merged) or, when the key has none, pushed
 * as its new pending job, scheduled at now + for. jobs[i].at_ms is set to
 * the job's run time either way. status[i] as rb_pg_push's (RB_EEXIST: the
 * jid is another job's). Two nodes pushing one key serialize on the
 * pending job's row; a claim of that row and a merge never both happen.
 * 0 only after COMMIT (deb[].merged all false otherwise). */
int rb_pg_push_debounce(rb_pg *pg, rb_pg_new_job *jobs, rb_pg_debounce *deb, size_t n,
                        int64_t now, int *status, rb_err *err);
/* JOB: *out a new view (the caller frees it) of jid's debounce while it is
 * its key's pending job, its run time due_ms; else NULL. */
int rb_pg_debounce_view(rb_pg *pg, const char *jid, int64_t due_ms, rb_debounce_view **out,
                        rb_err *err);
/* Whether jid is an alias still kept at now (its job alive or ended less
 * than RB_DEBOUNCE_RETENTION_MS ago): *found, and *out filled (strings
 * owned by the caller). */
int rb_pg_debounce_alias(rb_pg *pg, const char *jid, int64_t now, rb_debounce_alias *out,
                         bool *found, rb_err *err);
/* Drops up to limit aliases past their retention (SKIP LOCKED); *n (may
 * be NULL) = dropped. */
int rb_pg_debounce_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err);
/* INFO's rebound.debounce: keys with a pending job, merges all time. */
int rb_pg_debounce_info(rb_pg *pg, int64_t *pending, int64_t *merged, rb_err *err);

/* --- queue throttles (sql_throttle.c) --- */

/* INFO's rebound.throttles, the cluster's slots held at now
 * (rb_throttle_info_set per configured throttle); *out NULL when none is
 * configured. */
int rb_pg_throttle_info(rb_pg *pg, int64_t now, json_t **out, rb_err *err);
/* Slots of these queues were given back (ACK, FAIL, SNOOZE): NOTIFY for
 * each throttled one among them, waking the FETCHes parked on it on every
 * node. queues NULL: every throttled queue (a SNOOZE, whose queue the
 * statement does not report). Nothing when no throttle is configured. */
int rb_pg_throttle_notify(rb_pg *pg, const char *const *queues, size_t n, rb_err *err);

#endif
