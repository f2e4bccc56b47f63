/* Shared by the PostgreSQL engine's files (sql_*.c), not by the server: the
 * connection struct, the prepared-statement table, and helpers to run
 * statements and to build PostgreSQL array literals. */
#ifndef RB_BACKEND_PG_SQL_IMPL_H
#define RB_BACKEND_PG_SQL_IMPL_H

#include <libpq-fe.h>

#include "backend/pg/sql.h"
#include "common/buf.h"
#include "policy/rng.h"

/* Every statement the engine runs more than once: prepared on first use on
 * each connection (they need the schema, which may not exist yet when the
 * engine connects). Keep in step with sql_stmt_text[] in sql_conn.c. */
typedef enum sql_stmt {
    SQL_PUSH,
    SQL_PUSH_UNIQUE,
    SQL_CLAIM,
    SQL_ACK,
    SQL_LOCK_JOBS,
    SQL_LOCK_EXPIRED,
    SQL_FAIL_APPLY,
    SQL_SNOOZE,
    SQL_EXTEND,
    SQL_PROMOTE,
    SQL_CLEANUP_DEAD,
    SQL_NEXT_DUE,
    SQL_MUTATE_SELECT,
    SQL_MUTATE_APPLY,
    SQL_INFO,
    SQL_JOB,
    SQL_COUNTERS,
    SQL_WORKERS_SEEN,
    SQL_WORKERS_SIGNAL,
    SQL_WORKERS_LIST,
    SQL_WORKERS_COUNT,
    SQL_WORKERS_CLEANUP,
    SQL_CLAIM1, /* the statements' numbers name them (rb_sN), tests arm on them: new ones last */
    SQL_CLAIMG,
    SQL_CLAIML,
    SQL_STMT_COUNT
} sql_stmt;

/* Statement s's SQL text (static storage; NULL for no statement), for
 * tests that plan it as the engine prepares it. */
const char *sql_stmt_sql(sql_stmt s);

/* A batch event noted inside a transaction (sql_batch.c). */
typedef struct sql_batch_ev {
    char *bid;
    int ev;    /* an rb_batch_event, or -1: callback jid was ACKed */
    char *jid; /* the callback's, else NULL */
} sql_batch_ev;

struct rb_pg {
    PGconn *conn;       /* NULL while disconnected */
    char *url;
    const rb_config *cfg;
    rb_config defaults; /* used when cfg is NULL */
    bool listen;
    char *channel;      /* "rebound:<schema>", the NOTIFY channel */
    char *node;         /* rb_pg_set_node's, or NULL */
    int shard;          /* counter row this engine adds to: its own (16 and up, from
                           rb_counter_shard, schema 10), else one of 0..15 */
    rb_rng rng;
    unsigned generation;
    unsigned prepared;  /* bit per sql_stmt, for this connection */
    int64_t next_try_ms; /* monotonic time of the next reconnect attempt */
    int64_t backoff_ms;
    char last_error[256];
    char last_sqlstate[6]; /* the last failed statement's SQLSTATE, "" for none */
    /* Bounded waits (rb_pg_options): every round trip ends by deadline_ms
     * (monotonic, rb_pg_set_deadline; 0: none set), else io_timeout_ms
     * after it began (0: unbounded); past it the connection is dropped.
     * committing: the statement in flight may commit (a COMMIT, or a
     * statement outside a transaction): losing it leaves the outcome
     * unknown (RB_EDOUBT) instead of undone (RB_ECONN). */
    int64_t io_timeout_ms, idle_tx_ms, deadline_ms;
    bool keyed; /* rb_pg_options.keyed */
    bool committing;
    sql_batch_ev *bev;  /* the open transaction's batch events (sql_batch_note) */
    size_t bev_n, bev_cap;
    rb_pg_labels *expired; /* jobs dropped expired, for rb_pg_take_expired */
    size_t n_expired;
    bool wrapped; /* inside rb_pg_tx_begin's transaction: sql_begin takes a savepoint */
    bool unit;    /* the savepoint rb_unit is open */
    size_t expired_mark; /* n_expired when the batch transaction began */
    /* The batch transaction's pipeline (rb_pg_tx_pipe_*): while pipe is
     * SQL_PIPE_SEND, sql_run sends its statement and fails (RB_ESTATE)
     * without a result; the results are read in one round trip and kept in
     * sent[] until, with pipe SQL_PIPE_TAKE, the same calls made again take
     * them in order instead of running their statements. */
    int pipe;
    struct sql_sent {
        sql_stmt s;
        bool prepare;  /* the PQsendPrepare of s, not its execution */
        PGresult *r;   /* read: the result (NULL: failed) */
    } *sent;
    size_t n_sent, cap_sent, next_sent;
    bool pipe_skip; /* SQL_PIPE_TAKE: run the next statements as usual */
    rb_pg_turns *turns; /* the turn cursors (sql_groups.c); never NULL */
    bool own_turns;     /* turns is this engine's (else shared: rb_pg_share_turns) */
};

enum { SQL_PIPE_OFF, SQL_PIPE_SEND, SQL_PIPE_TAKE };

/* Groups (sql_groups.c). A node's turn table: made with the engine,
 * freed with it when it owns it. */
rb_pg_turns *sql_turns_new(void);
void sql_turns_free(rb_pg_turns *t);
/* Whether queue's claims are known to need rb_claim_groups (a claim met
 * its groups). */
bool sql_groups_known(rb_pg *pg, const char *queue);
/* A claim of queue served group grp (NULL: met its groups, served none):
 * the queue's cursor moves to it, and the queue is known grouped. */
void sql_groups_served(rb_pg *pg, const char *queue, const char *grp);
/* The statement a claim of queue alone starts with at now (wall ms):
 * SQL_CLAIM1 while the queue is not known to have groups; SQL_CLAIM
 * (rb_claim_groups) for a [throttles] rate, for [groups] limits of the
 * queue's named groups, or for a while after SQL_CLAIMG handed the queue
 * over (sql_groups_handed_over); SQL_CLAIMG for a while after SQL_CLAIML
 * handed it over; else SQL_CLAIML. */
sql_stmt sql_groups_claim_stmt(rb_pg *pg, const char *queue, int64_t now);
/* Statement s (SQL_CLAIMG or SQL_CLAIML) answered -4 for queue at now
 * (limits: SQL_CLAIMG saw a group with limits in its round): the queue is
 * known grouped and its claims start with the next statement (SQL_CLAIM
 * after SQL_CLAIMG, SQL_CLAIMG after SQL_CLAIML) for a while; the
 * statement to run now. */
sql_stmt sql_groups_handed_over(rb_pg *pg, const char *queue, sql_stmt s, bool limits,
                                int64_t now);
/* rb_claim_groups' per-queue arrays for queues: cursors, [groups]
 * concurrency, rate, period and burst, [throttles] rate's T and tau
 * (engine/gcra.h); a[] initialised here, released by the caller. */
#define SQL_GROUP_ARGS 7
void sql_groups_args(rb_pg *pg, const char *const *queues, int nq, rb_buf a[SQL_GROUP_ARGS]);

/* The config in force (never NULL). */
const rb_config *sql_cfg(const rb_pg *pg);

/* Connected, or reconnected now when the backoff allows; else RB_ECONN. */
int sql_ensure(rb_pg *pg, rb_err *err);

/* Runs prepared statement s with text parameters (NULL = SQL NULL). Returns
 * the result (PQclear it) when it is COMMAND_OK or TUPLES_OK, else NULL with
 * err set: RB_ECONN when the connection is gone (it is then closed and a
 * reconnect scheduled), RB_ESTORE otherwise. */
PGresult *sql_run(rb_pg *pg, sql_stmt s, int nparams, const char *const *params, rb_err *err);
/* Same for a statement that is not prepared (administration, DDL). */
PGresult *sql_query(rb_pg *pg, const char *sql, int nparams, const char *const *params,
                    rb_err *err);
/* sql_ensure, then sql_run of s with the text parameters (now, limit), the
 * shape of the timer's statements (sql_jobs.c). */
PGresult *sql_run_now_limit(rb_pg *pg, sql_stmt s, int64_t now, int limit, rb_err *err);
/* A plain SQL text without parameters (BEGIN, COMMIT, DDL); 0 or the error.
 * A bare BEGIN or COMMIT inside rb_pg_tx_begin's transaction is refused
 * (RB_ESTORE): code that may run there uses sql_begin and sql_commit. */
int sql_exec(rb_pg *pg, const char *sql, rb_err *err);

/* One unit of work that must apply whole: its own transaction (BEGIN ...
 * COMMIT), or, inside the database thread's batch transaction
 * (rb_pg_tx_begin), the savepoint rb_unit (SAVEPOINT ... RELEASE), so that
 * a unit that fails is undone alone and the batch goes on. sql_commit
 * refuses a transaction PostgreSQL has already aborted (whose COMMIT would
 * answer ROLLBACK) and rolls it back. Units do not nest. */
int sql_begin(rb_pg *pg, rb_err *err);
int sql_commit(rb_pg *pg, rb_err *err);
/* Ends a unit or transaction that failed: ROLLBACK (TO SAVEPOINT) when still
 * connected. Inside the batch transaction with no unit open it does nothing:
 * the transaction stays aborted and rb_pg_tx_commit refuses it. */
void sql_rollback(rb_pg *pg);

/* Marks a lost connection: closes it and schedules the reconnect. */
void sql_lost(rb_pg *pg);
/* Takes a counter row of the engine's own (rb_counter_shard) when it has
 * none yet and the schema has them (version 10); else keeps its shard.
 * Errors are ignored: the next connect tries again. */
void sql_take_shard(rb_pg *pg);

/* PostgreSQL array literals: sql_arr_begin, sql_arr_str/sql_arr_int per
 * element, sql_arr_end. Strings are quoted and escaped; NULL is SQL NULL. */
void sql_arr_begin(rb_buf *b);
void sql_arr_str(rb_buf *b, const char *s);
void sql_arr_int(rb_buf *b, int64_t v);
void sql_arr_end(rb_buf *b);

/* The job's JSON with enqueued_at (ms, > 0) added as the first field. */
char *sql_json_with_enqueued(const char *json, int64_t enq_ms);

/* Row i of a result whose columns are jid, queue, json, history, wid,
 * state, priority, attempts, reserve_s, flags, due_ms, first_ms, enq_ms
 * (SQL_JOB's) into j, strings owned (sql_read.c). */
void sql_read_job(const PGresult *r, int i, rb_pg_job *j);

/* For the waiting and blocked jobs among jobs[0..n): their parents not
 * done (edges still stored) and the dead parent blocking them, as JOB
 * shows them (waits_for, blocked_by), in one statement (sql_read.c).
 * Other jobs are left alone. 0 or the store's error (the jobs then may
 * hold some of it: release them). */
int sql_jobs_deps(rb_pg *pg, rb_pg_job *const *jobs, size_t n, rb_err *err);

/* SQL_JOB's select list, as sql_read_job reads it, with the unique lock a
 * job holds (until_ms, NULL for none) as column 13; a WHERE follows. */
#define SQL_JOB_SELECT                                                                         \
    "SELECT jid, queue, json, history, wid, state, priority, attempts, reserve_s,"            \
    " flags, due_ms, first_ms, enq_ms, (SELECT l.until_ms FROM rb_unique l"                  \
    " WHERE l.key = rb_jobs.ukey AND l.jid = rb_jobs.jid) FROM rb_jobs"

/* A copy of field c of row r, or NULL when SQL NULL. */
char *sql_dup(const PGresult *r, int row, int c);
int64_t sql_int(const PGresult *r, int row, int c);

/* Parses a PostgreSQL array text of integers ("{0,1,3}") into out (at most
 * max entries); returns the count. */
size_t sql_parse_int_array(const char *s, int64_t *out, size_t max);

/* rb_ack_batch's and SQL_ACK's status for a batch member or callback they
 * left to the caller (sql_batch_ack). */
#define RB_PG_ACK_BATCH 5
/* SQL_ACK's status for a workflow job or a parent it left to rb_ack_batch
 * (which releases its children). */
#define RB_PG_ACK_DEPS 6

/* The live workers at now (sql_registry.c), for INFO. */
int sql_workers_count(rb_pg *pg, int64_t now, int64_t *n, rb_err *err);

/* Queue throttles (sql_throttle.c): the lock of queue's throttle for the
 * open transaction (pg_advisory_xact_lock), and the slots of t held at now
 * with the earliest end of one in *frees (INT64_MAX: none). */
int sql_throttle_lock(rb_pg *pg, const char *queue, rb_err *err);
int sql_throttle_held(rb_pg *pg, const rb_throttle *t, int64_t now, int64_t *held,
                      int64_t *frees, rb_err *err);

/* The fail core (sql_fail.c) shared by FAIL and the reaper: runs the failure
 * of each locked working row through its policy and writes the outcome. */
typedef struct locked_row {
    char *jid, *queue, *wid, *json, *history;
    char *bid;  /* its batch (a member's or a callback's), or NULL */
    bool bcb;   /* a batch's callback job */
    int state, priority, attempts, flags;
    int64_t first_ms;
} locked_row;

/* The text of `failure`, the new history, and the catch job (sql_failure.c).
 * Fills the decision and writes new JSON/history texts (caller frees), and
 * the catch job to push (catch_json NULL when none). */
typedef struct fail_out {
    rb_decision d;
    char jobtype[RB_PG_JOBTYPE_MAX + 1]; /* the job's, "" when not a string */
    char *json, *history;
    char *catch_jid, *catch_json;
} fail_out;
int fail_decide(rb_pg *pg, const locked_row *row, const rb_pg_failure *f, int64_t now,
                fail_out *out, rb_err *err);
void fail_out_release(fail_out *o);
/* A waiting or blocked child dying of parent's failure, as a failure's
 * death: reason dependency, errtype DependencyFailed, its policy's catch
 * job when it names one (rb_srv_dep_kill's rules on a single node). */
int fail_dependency(rb_pg *pg, const locked_row *row, const char *parent, int64_t now,
                    fail_out *out, rb_err *err);

/* Job dependencies (sql_deps.c): event ev (an rb_dep_event) of each job of
 * jids (an array literal) that has children, told to them inside the open
 * transaction through engine/depend.h's rb_dep_on_parent: edges used up,
 * counts and states written, children released or killed (and their own
 * children told of their deaths, in turn). */
int sql_dep_events(rb_pg *pg, const char *jids, int ev, int64_t now, rb_err *err);
/* MUTATE requeue of the dead job jid (its row locked, json its text),
 * inside the open transaction: when it names parents that hold it now
 * (rb_dep_on_retry), it goes back to waiting or blocked under them (edges,
 * rb_wait, state) and *held is set; else *held is false and the caller
 * requeues it. Its own children are told by the caller (the requeue). */
int sql_dep_retry(rb_pg *pg, const char *jid, const char *json, int64_t now, bool *held,
                  rb_err *err);
/* rb_pg_push_debounce's work inside the caller's open transaction (a
 * cron tick's, rb_pg_push_tick); deb[].merged is the caller's to clear
 * when the transaction does not commit. */
int sql_push_debounce_tx(rb_pg *pg, rb_pg_new_job *jobs, rb_pg_debounce *deb, size_t n,
                         int64_t now, int *status, rb_err *err);
/* rb_pg_push_deps's work inside the caller's open transaction. */
int sql_push_deps_tx(rb_pg *pg, const rb_pg_new_job *jobs, size_t n, int64_t now, int *status,
                     rb_err *err);

/* Drops the jobs of jids (an array literal; NULL: any) whose expiry
 * passed by now, at most limit (rb_pg_expire's work, sql_unique.c): the
 * claim's expired jobs and the maintenance sweep's. */
int sql_expire_jobs(rb_pg *pg, const char *jids, int64_t now, int limit, int *n, rb_err *err);

/* Batches (sql_batch.c). Events of members and callback jobs are noted
 * while a transaction changes job rows (sql_batch_note), and applied just
 * before its COMMIT by sql_batch_apply_noted: the batch rows (and their
 * ancestors) locked in one statement after every job row, the events
 * applied in the order noted, callbacks inserted, rows written. A rollback
 * forgets them (sql_rollback calls sql_batch_forget). */
void sql_batch_note(rb_pg *pg, const char *bid, int ev, const char *jid);
void sql_batch_forget(rb_pg *pg);
int sql_batch_apply_noted(rb_pg *pg, int64_t now, rb_err *err);
/* A failed execution (or death) of a job of batch bid (NULL: none); a
 * callback's failure changes nothing. */
void sql_batch_failed(rb_pg *pg, const char *bid, bool callback, bool first_failure, bool died);
/* The ACK of one batch member or callback job (rb_ack_batch's status 5)
 * in a transaction of its own with its batch's event. */
int sql_batch_ack(rb_pg *pg, const rb_pg_ref *ref, int64_t now, int *status,
                  rb_pg_labels *labels, rb_err *err);

#endif
