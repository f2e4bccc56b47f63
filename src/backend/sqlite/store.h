/* The durable record behind the server: one interface (a struct of function
 * pointers) so that SQLite today and PostgreSQL later look the same to the
 * server. The server keeps every hot index in memory; the store only ever
 * receives whole-row writes in batches and is read back once, at start-up. */
#ifndef RB_BACKEND_MEM_STORE_H
#define RB_BACKEND_MEM_STORE_H

#include <stdint.h>

#include "common/error.h"

/* One job as stored. Every field is borrowed by the store for the duration
 * of the call that receives it. Invariant: jid is unique; json is the job in
 * Faktory's format (compact), history a JSON array text or NULL. */
typedef struct rb_job_row {
    int64_t id;         /* the row's key: > 0, unique among stored rows, kept for
                         * the job's life (the server assigns it, in increasing
                         * order, so new rows go to the end of the table) */
    const char *jid;
    int state;          /* the server's rb_job_state value */
    const char *queue;
    int priority;       /* 1..9 */
    uint64_t seq;       /* insertion order (FIFO tie-break) */
    int64_t due_ms;     /* state-dependent deadline: run at / lease end / expiry
                         * (an enqueued job's: its enqueue time) */
    int due_us;         /* an enqueued job's enqueue instant: microseconds past
                         * due_ms (0-999); 0 in the other states */
    int64_t first_ms;   /* first enqueue time (policy deadlines) */
    int attempts;       /* executions started */
    int reserve_s;      /* reservation length in seconds */
    const char *wid;    /* reservation holder, NULL unless working */
    const char *json;
    const char *history; /* NULL = no failures yet */
    const char *grp;    /* its custom.group, NULL = ungrouped (a row written before
                         * the column: NULL, read from the text at load) */
} rb_job_row;

typedef struct rb_store rb_store;

/* Callbacks for rb_store_ops.load; each returns 0 to go on or a negative
 * code to stop the load with that code. Rows come ordered by (due_ms, seq). */
typedef struct rb_store_loader {
    void *arg;
    int (*job)(void *arg, const rb_job_row *row);
    int (*counter)(void *arg, const char *name, int64_t value);
    int (*meta)(void *arg, const char *key, const char *value);
} rb_store_loader;

/* A backend. Every function returns 0 or a negative RB_E* code with err
 * filled. Writes (put/del/set/clear) are only valid between begin and
 * commit/rollback, and only from one thread at a time. */
typedef struct rb_store_ops {
    const char *name;
    int (*load)(rb_store *s, const rb_store_loader *l, rb_err *err);
    int (*begin)(rb_store *s, rb_err *err);
    int (*put_job)(rb_store *s, const rb_job_row *row, rb_err *err);
    /* Deletes the row put with this id (and jid, for backends keyed by it). */
    int (*del_job)(rb_store *s, int64_t id, const char *jid, rb_err *err);
    int (*set_counter)(rb_store *s, const char *name, int64_t value, rb_err *err);
    /* value NULL deletes the key. */
    int (*set_meta)(rb_store *s, const char *key, const char *value, rb_err *err);
    int (*clear)(rb_store *s, rb_err *err); /* every job, counter and key */
    int (*commit)(rb_store *s, rb_err *err);
    void (*rollback)(rb_store *s);
    void (*close)(rb_store *s);
    /* Optional (NULL: none): housekeeping the writer thread runs between
     * transactions, after a batch's replies have been released (SQLite:
     * the WAL checkpoint). An error is logged, nothing more. */
    int (*maintain)(rb_store *s, rb_err *err);
    /* Optional (NULL: cannot): a consistent copy of the database written to
     * a new file at path (refused when path exists), fsynced, complete only
     * when it returns 0. Runs on the writer thread in steps, calling
     * between(arg) after each one; between may commit batches on s (the
     * copy then holds them too: it is the database as of its last step).
     * On failure no file is left at path. */
    int (*backup)(rb_store *s, const char *path, void (*between)(void *arg), void *arg,
                  rb_err *err);
} rb_store_ops;

/* Every backend's handle starts with this. */
struct rb_store {
    const rb_store_ops *ops;
};

/* Opens (creating if needed) the SQLite database at path in WAL mode with
 * synchronous=FULL. On success *out is the handle (close with
 * s->ops->close(s)); on failure returns RB_ESTORE with err naming the path. */
int rb_store_sqlite_open(const char *path, rb_store **out, rb_err *err);

/* The SQLite database's application_id ("RBND"), set at every open, so
 * that a file is known for Rebound's (a database from before it was set
 * has 0). */
#define RB_SQLITE_APPLICATION_ID 0x52424E44

/* Checks that the file at path is a Rebound database a server can open:
 * SQLite's integrity_check passes, its application_id is Rebound's (or 0,
 * written before it was set), and it has the tables and columns the server
 * reads. Opened read-only; nothing is changed. Returns 0, or RB_EINVAL /
 * RB_ESTORE with err saying what is wrong ("'F' is not a SQLite database",
 * "'F' fails SQLite's integrity check: ..."). *jobs gets the number of
 * stored jobs when non-NULL. */
int rb_store_sqlite_check(const char *path, long long *jobs, rb_err *err);

/* Opens the backend a storage URL names: a plain path (or "sqlite:PATH") is
 * SQLite; anything else is RB_EINVAL naming the URL. */
int rb_store_open(const char *url, rb_store **out, rb_err *err);

/* fsyncs the file or directory at path (open flags: O_RDONLY, with
 * O_DIRECTORY for a directory); 0 or -1 (errno). Any thread. */
int rb_store_sync_path(const char *path, int flags);

#endif
