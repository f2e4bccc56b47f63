/* `rebound export` and `rebound import`: the JSON-lines format that carries
 * every job and the counters from one backend to another (a single node's
 * SQLite file to PostgreSQL and back), and its rules, written once: what a
 * line holds and how it is checked, when a stored job is the same as a
 * line (skipped), when it conflicts (refused), and what is not carried.
 * A backend only reads its jobs out and writes new ones in, through an
 * rb_port (backend/sqlite/port.c, backend/pg/sql_port.c), offline: the
 * server is stopped (docs/operations.md).
 *
 * The format (version 1), one JSON object per line:
 *   {"format":"rebound-export","version":1,"source":"sqlite","exported_at":"..."}
 *   {"type":"job","jid":J,"state":S,"queue":Q,"priority":P,"due_ms":T,
 *    "first_ms":F,"attempts":A,"reserve_for":R,"wid":W|null,
 *    "history":[...]|null,"job":{...}}        one per job
 *   {"type":"dep","child":J,"mode":M,"parents":[P...],"remaining":N,"dead":D}
 *                                            one per waiting or blocked job
 *   {"type":"done","jid":J,"until_ms":T}     one per succeeded record
 *   {"type":"batch","bid":B,"batch":{...}}   one per batch (rb_batch_dump's form)
 *   {"type":"debounce","jid":J,"hash":H,"key":K,"first_ms":F,"merged":M}
 *                                            one per debounce key with a pending job
 *   {"type":"debounced","jid":A,"into":J,"key":K,"merged_ms":T}
 *                                            one per alias of a stored job
 *   {"type":"queue","name":Q,"paused":true}  one per paused queue
 *   {"type":"counters","processed":N,"failures":N}
 *   {"type":"end","jobs":N}                   the job lines' count
 * due_ms is the state's deadline (run at, lease end, retention end), or
 * the enqueue time of an enqueued job; "job" is the job as clients see it,
 * created_at and enqueued_at included. A dep line is a held child's
 * edges: the parents that still concern it (not succeeded; a dead one
 * with mode ignore no longer does), of them the remaining count (1 or
 * more) and the dead ones blocking it, and its on_dep_failure ("block",
 * "cancel", "ignore"). A done line is a workflow job's ACK, recorded until
 * until_ms for later pushes naming it. A batch's members and callback jobs
 * are job lines: their custom.bid / custom._bid name it. The dep, done and
 * batch lines came after version 1's first release: a file without them
 * reads as before (a held job without its dep line is then not carried).
 * A debounce line is a pending debounced job's key (engine/debounce.h: H
 * its hash, K as pushed, the first push's time, the pushes merged into
 * it): its job line is scheduled or enqueued. A debounced line is the jid
 * of a push merged into the stored job J (an alias JOB and TRACK GET
 * answer for); aliases of jobs already gone are not carried. Both came
 * with issue 30 and are written by an import only with their job (a job
 * already stored keeps its own). */
#ifndef RB_ENGINE_EXPORT_H
#define RB_ENGINE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/error.h"
#include "engine/reads.h"

#define RB_EXPORT_FORMAT "rebound-export"
#define RB_EXPORT_VERSION 1

/* One backend's side, opened offline on its database. */
typedef struct rb_port rb_port;

/* A held child's edges (a dep line). */
typedef struct rb_port_dep {
    char *child;
    char **parents; /* the parents that still concern it */
    size_t n;
    int mode;       /* rb_dep_mode */
    int64_t remaining, dead;
} rb_port_dep;

/* A succeeded record (a done line). */
typedef struct rb_port_done {
    char *jid;
    int64_t until_ms;
} rb_port_done;

/* A batch: its stored form (rb_batch_dump's text), its bid and parent's. */
typedef struct rb_port_batch {
    char *bid, *parent_bid, *body;
    bool committed;
    int64_t created_ms, finished_ms;
} rb_port_batch;

/* A debounce key's pending job (a debounce line). */
typedef struct rb_port_debounce {
    char *jid, *hash, *key;
    int64_t first_ms, merged;
} rb_port_debounce;

/* An alias of a stored job (a debounced line). */
typedef struct rb_port_alias {
    char *jid, *into, *key;
    int64_t merged_ms;
} rb_port_alias;

typedef struct rb_port_graph {
    rb_port_dep *deps;
    size_t n_deps;
    rb_port_done *done;
    size_t n_done;
    rb_port_batch *batches; /* a parent before its children */
    size_t n_batches;
    rb_port_debounce *debounce;
    size_t n_debounce;
    rb_port_alias *aliases;
    size_t n_aliases;
} rb_port_graph;

void rb_port_graph_release(rb_port_graph *g);
/* Appends to g (strings copied); body is checked by rb_batch_load: false
 * when it is not a batch (nothing appended). */
void rb_port_graph_add_dep(rb_port_graph *g, const char *child, const char *const *parents,
                           size_t n, int mode, int64_t remaining, int64_t dead);
void rb_port_graph_add_done(rb_port_graph *g, const char *jid, int64_t until_ms);
bool rb_port_graph_add_batch(rb_port_graph *g, const char *body);
void rb_port_graph_add_debounce(rb_port_graph *g, const char *jid, const char *hash,
                                const char *key, int64_t first_ms, int64_t merged);
void rb_port_graph_add_alias(rb_port_graph *g, const char *jid, const char *into,
                             const char *key, int64_t merged_ms);
/* Appends copies of every line of from to to. */
void rb_port_graph_append(rb_port_graph *to, const rb_port_graph *from);

/* Called with each stored job; 0 to go on, else the code that stops. */
typedef int (*rb_port_job_fn)(void *arg, const rb_job_view *v);

typedef struct rb_port_ops {
    const char *name; /* "sqlite", "postgresql" */
    /* Every stored job (never PENDING) and the counters, from one
     * consistent read; enqueued jobs of a queue and priority in FIFO order. */
    int (*each_job)(rb_port *p, rb_port_job_fn fn, void *arg, rb_err *err);
    int (*counters)(rb_port *p, int64_t *processed, int64_t *failures, rb_err *err);
    /* The paused queues' names: *names a new array of *n strings (the
     * caller frees each and the array; NULL when none). */
    int (*paused)(rb_port *p, char ***names, size_t *n, rb_err *err);
    /* The stored job jid: *found false when there is none (out untouched),
     * else out filled (rb_job_view_release it). */
    int (*find)(rb_port *p, const char *jid, rb_job_view *out, bool *found, rb_err *err);
    /* One transaction: n new jobs (no stored job has their jids; kept in
     * this order, so FIFO order is the lines' order), the queues of pause
     * paused (n_pause names), when set_counters the two counters, and g's
     * new succeeded records, batches and edges (g's deps: their children
     * are among jobs). SQLite derives a held job's edges from its
     * depends_on and its parents' rows at start-up (backend/sqlite/deps.c):
     * it stores the records and batches only. */
    int (*write)(rb_port *p, const rb_job_view *jobs, size_t n, const char *const *pause,
                 size_t n_pause, bool set_counters, int64_t processed, int64_t failures,
                 const struct rb_port_graph *g, rb_err *err);
    /* The dependency graph and the batches, from each_job's read when
     * it ran (export), else read now; g filled (rb_port_graph_release). */
    int (*graph)(rb_port *p, struct rb_port_graph *g, rb_err *err);
    void (*close)(rb_port *p);
} rb_port_ops;

struct rb_port {
    const rb_port_ops *ops;
};

/* The two backends' ports. A SQLite file must exist unless create (the
 * import's target may be new); the server must not be running on it (it
 * holds the file exclusively: "database is locked"). PostgreSQL's schema
 * must be current (`rebound migrate`). 0 with *out set, or an RB_E* code
 * with err naming the database. */
int rb_port_sqlite_open(const char *path, bool create, rb_port **out, rb_err *err);
int rb_port_pg_open(const char *url, rb_port **out, rb_err *err);

/* What an export wrote. */
typedef struct rb_export_stats {
    size_t jobs;
    size_t by_state[8]; /* index: rb_job_state */
    size_t paused;      /* paused queues */
    size_t deps, done, batches; /* dep, done and batch lines */
    size_t debounce, aliases;   /* debounce and debounced lines */
    int64_t processed, failures;
} rb_export_stats;

/* Writes p's jobs and counters to out in the format above. 0, or the
 * read's error / RB_EIO for a write error. */
int rb_export_run(rb_port *p, FILE *out, rb_export_stats *st, rb_err *err);

/* What an import did. Every text is for people, one line per item. */
typedef struct rb_import_report {
    size_t jobs;                /* job lines read */
    size_t imported;            /* written */
    size_t by_state[8];         /* written, by rb_job_state */
    size_t same;                /* identical to the stored job: skipped */
    size_t conflicts;           /* same jid, other content: refused */
    size_t not_carried;         /* held jobs of a partial graph: left out */
    size_t deps, done, batches; /* dep, done, batch lines written */
    size_t debounce, aliases;   /* debounce, debounced lines written (with their jobs) */
    size_t graph_same;          /* done, batch lines identical to the stored: skipped (a dep
                                 * line is compared with its job) */
    size_t unique_dropped;      /* imported jobs whose unique lock is not carried */
    size_t paused_set;          /* queues paused by the import */
    size_t paused_same;         /* queues of the file already paused */
    int counters;               /* 0 same, 1 set, -1 conflict */
    int64_t processed, failures; /* the file's */
    rb_buf conflict_text;       /* "jid J: field: stored X, file Y; ..." lines */
    rb_buf skipped_text;        /* "jid J: reason" lines of the jobs not carried */
} rb_import_report;

void rb_import_report_release(rb_import_report *r);

/* Reads in (name: the file's name for messages) whole and checks every
 * line first: a malformed one fails with RB_EINVAL, err "NAME:LINE: what",
 * and nothing is written. Then each job is compared with the stored one of
 * its jid: identical skipped, different refused (a conflict, reported),
 * a held job whose parent is neither in the file nor stored left out
 * (reported, with every child that waits on it), the others
 * written with the paused queues not paused yet and the counters in one
 * transaction (the counters only when
 * the database's are 0 or the same; else a conflict), with the graph's
 * new lines (a dep, done or batch line identical to the
 * stored one skipped, a different one refused as a conflict). Returns 0 (see the
 * report for conflicts) or the store's error (nothing written). */
int rb_import_run(rb_port *p, FILE *in, const char *name, rb_import_report *rep, rb_err *err);

/* The job line of v (exported for tests and for the ports' checks). */
json_t *rb_export_job_json(const rb_job_view *v);

#endif
