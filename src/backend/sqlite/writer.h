/* Group commit: the event loop appends store operations to the current batch;
 * one writer thread commits a whole batch in one transaction while the loop
 * fills the next, then reports back through a file descriptor. Completions
 * run on the loop's thread, in submission order, after their batch is on
 * disk (or failed). */
#ifndef RB_BACKEND_MEM_WRITER_H
#define RB_BACKEND_MEM_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "backend/sqlite/store.h"

typedef struct rb_writer rb_writer;

/* Called on the loop thread once every operation submitted before it has
 * been committed (status 0) or the batch failed (status < 0, err says why;
 * err is borrowed for the call). */
typedef void (*rb_writer_done_fn)(void *arg, int status, const rb_err *err);

/* Starts the writer thread on store s (borrowed; it must outlive the writer
 * and not be used by anyone else meanwhile). Returns NULL with err set when
 * the thread or its wake-up descriptor cannot be created. */
rb_writer *rb_writer_start(rb_store *s, rb_err *err);

/* Drains: seals and commits whatever was submitted, stops the thread, runs the pending
 * completions, and frees w. NULL is a no-op. */
void rb_writer_free(rb_writer *w);

/* The descriptor that becomes readable when batches have finished; the loop
 * then calls rb_writer_reap(). */
int rb_writer_fd(const rb_writer *w);
/* Runs the completions of every finished batch. Returns how many ran. */
int rb_writer_reap(rb_writer *w);

/* Operations for the open batch, which the thread does not see until it is
 * sealed: the operations of one request always commit together, in one
 * transaction, with the completion that answers it. Everything is copied. */
void rb_writer_put(rb_writer *w, const rb_job_row *row);
void rb_writer_del(rb_writer *w, int64_t id, const char *jid);
void rb_writer_counter(rb_writer *w, const char *name, int64_t value);
void rb_writer_meta(rb_writer *w, const char *key, const char *value);
void rb_writer_clear(rb_writer *w);
/* Queues fn(arg, ...) to run when the operations submitted so far are done.
 * Without a rb_writer_defer() hook this also seals the open batch; with one,
 * the batch is sealed when the loop calls rb_writer_seal(). */
void rb_writer_then(rb_writer *w, rb_writer_done_fn fn, void *arg);
/* Hands the open batch to the writer thread (which merges it into whatever
 * is already waiting for the next commit). No-op when it is empty. Call it
 * only between requests: everything in the open batch goes to disk together. */
void rb_writer_seal(rb_writer *w);
/* Group wake-ups: fn(arg) runs on the loop thread when the open batch gets
 * its first operation or completion; the loop must then call rb_writer_seal()
 * soon (the server does it at the end of the current loop iteration, so one
 * hand-over and one wake-up of the thread carry every request read in that
 * iteration). NULL fn: rb_writer_then() seals at once (the default). */
void rb_writer_defer(rb_writer *w, void (*fn)(void *arg), void *arg);

/* Copies the database into a new file at path while the writer goes on
 * (the store's backup, store.h), between its batches: fn(arg, status, err)
 * runs on the loop thread, like a batch's completion, once the copy is
 * complete and durable (status 0) or has failed. Returns 0, or RB_EINVAL
 * (the store cannot back up) / RB_ESTATE (a backup is already running)
 * with err set and fn never called. */
int rb_writer_backup(rb_writer *w, const char *path, rb_writer_done_fn fn, void *arg, rb_err *err);

/* Called on the loop thread (from rb_writer_reap) once per finished batch
 * that wrote rows: how many operations it had and how long its COMMIT (with
 * the fsync) took, in microseconds. For metrics. */
typedef void (*rb_writer_stats_fn)(void *arg, size_t n_ops, int64_t commit_us);
/* Sets the stats callback (NULL: none). */
void rb_writer_observe(rb_writer *w, rb_writer_stats_fn fn, void *arg);

/* Batches committed and failed so far (for INFO and tests). */
uint64_t rb_writer_commits(const rb_writer *w);

/* Group-commit figures since the start, as seen by the loop thread (updated
 * by rb_writer_reap; read them on the loop thread). */
typedef struct rb_writer_stats {
    uint64_t commits;   /* transactions that wrote rows and committed (one fsync each) */
    uint64_t failed;    /* transactions that failed */
    uint64_t requests;  /* completions those commits answered */
    uint64_t rows;      /* row writes they carried */
    uint64_t commit_us; /* time spent in COMMIT (the WAL write and its fsync), in total */
    uint64_t commit_us_max;
} rb_writer_stats;
void rb_writer_get_stats(const rb_writer *w, rb_writer_stats *out);

#endif
