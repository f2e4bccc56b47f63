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
 * engine connects). Keep in step with pg_stmt_sql[] in sql_conn.c. */
typedef enum pg_stmt {
    PG_PUSH,
    PG_CLAIM,
    PG_ACK,
    PG_LOCK_JOBS,
    PG_LOCK_EXPIRED,
    PG_FAIL_APPLY,
    PG_SNOOZE,
    PG_EXTEND,
    PG_PROMOTE,
    PG_CLEANUP_DEAD,
    PG_NEXT_DUE,
    PG_MUTATE_SELECT,
    PG_MUTATE_APPLY,
    PG_INFO,
    PG_JOB,
    PG_COUNTERS,
    PG_WORKERS_SEEN,
    PG_WORKERS_SIGNAL,
    PG_WORKERS_LIST,
    PG_WORKERS_COUNT,
    PG_WORKERS_CLEANUP,
    PG_STMT_COUNT
} pg_stmt;

struct rb_pg {
    PGconn *conn;       /* NULL while disconnected */
    char *url;
    const rb_config *cfg;
    rb_config defaults; /* used when cfg is NULL */
    bool listen;
    char *channel;      /* "rebound:<schema>", the NOTIFY channel */
    int shard;          /* counter row this engine adds to (0..15) */
    rb_rng rng;
    unsigned generation;
    unsigned prepared;  /* bit per pg_stmt, for this connection */
    int64_t next_try_ms; /* monotonic time of the next reconnect attempt */
    int64_t backoff_ms;
    char last_error[256];
};

/* The config in force (never NULL). */
const rb_config *pg_cfg(const rb_pg *pg);

/* Connected, or reconnected now when the backoff allows; else RB_ECONN. */
int pg_ensure(rb_pg *pg, rb_err *err);

/* Runs prepared statement s with text parameters (NULL = SQL NULL). Returns
 * the result (PQclear it) when it is COMMAND_OK or TUPLES_OK, else NULL with
 * err set: RB_ECONN when the connection is gone (it is then closed and a
 * reconnect scheduled), RB_ESTORE otherwise. */
PGresult *pg_run(rb_pg *pg, pg_stmt s, int nparams, const char *const *params, rb_err *err);
/* Same for a statement that is not prepared (administration, DDL). */
PGresult *pg_query(rb_pg *pg, const char *sql, int nparams, const char *const *params,
                   rb_err *err);
/* pg_ensure, then pg_run of s with the text parameters (now, limit), the
 * shape of the timer's statements (sql_jobs.c). */
PGresult *pg_run_now_limit(rb_pg *pg, pg_stmt s, int64_t now, int limit, rb_err *err);
/* A plain SQL text without parameters (BEGIN, COMMIT, DDL); 0 or the error. */
int pg_exec(rb_pg *pg, const char *sql, rb_err *err);
/* Ends a transaction that failed: ROLLBACK when still connected. */
void pg_rollback(rb_pg *pg);

/* Marks a lost connection: closes it and schedules the reconnect. */
void pg_lost(rb_pg *pg);

/* PostgreSQL array literals: pg_arr_begin, pg_arr_str/pg_arr_int per
 * element, pg_arr_end. Strings are quoted and escaped; NULL is SQL NULL. */
void pg_arr_begin(rb_buf *b);
void pg_arr_str(rb_buf *b, const char *s);
void pg_arr_int(rb_buf *b, int64_t v);
void pg_arr_end(rb_buf *b);

/* The job's JSON with enqueued_at (ms, > 0) added as the first field. */
char *pg_json_with_enqueued(const char *json, int64_t enq_ms);

/* A copy of field c of row r, or NULL when SQL NULL. */
char *pg_dup(const PGresult *r, int row, int c);
int64_t pg_int(const PGresult *r, int row, int c);

/* Parses a PostgreSQL array text of integers ("{0,1,3}") into out (at most
 * max entries); returns the count. */
size_t pg_parse_int_array(const char *s, int64_t *out, size_t max);

/* The live workers at now (sql_registry.c), for INFO. */
int pg_workers_count(rb_pg *pg, int64_t now, int64_t *n, rb_err *err);

/* The fail core (sql_fail.c) shared by FAIL and the reaper: runs the failure
 * of each locked working row through its policy and writes the outcome. */
typedef struct pg_locked {
    char *jid, *queue, *wid, *json, *history;
    int state, priority, attempts, flags;
    int64_t first_ms;
} pg_locked;

/* The text of `failure`, the new history, and the catch job (sql_failure.c).
 * Fills the decision and writes new JSON/history texts (caller frees), and
 * the catch job to push (catch_json NULL when none). */
typedef struct pg_fail_out {
    rb_decision d;
    char jobtype[RB_PG_JOBTYPE_MAX + 1]; /* the job's, "" when not a string */
    char *json, *history;
    char *catch_jid, *catch_json;
} pg_fail_out;
int pg_failure_decide(rb_pg *pg, const pg_locked *row, const rb_pg_failure *f, int64_t now,
                      pg_fail_out *out, rb_err *err);
void pg_fail_out_release(pg_fail_out *o);

#endif
