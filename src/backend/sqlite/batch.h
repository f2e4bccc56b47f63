/* The single-node backend's batches (engine/batch.h holds the rules): a
 * table by bid in memory, each batch stored as one key of the store's meta
 * table ("batch:<bid>", its rb_batch_dump text) written in the same commit
 * as the ACK, FAIL, PUSH or COMMIT that changed it, and read back at
 * start-up. For a batch's page, the jids pushed into each batch (a list
 * by bid, checked and pruned when read: no cost to plain jobs, nor to a
 * member's FETCH or ACK). Loop thread only. */
#ifndef RB_BACKEND_MEM_BATCH_H
#define RB_BACKEND_MEM_BATCH_H

#include <stdbool.h>

#include <jansson.h>

typedef struct rb_sq rb_sq;
typedef struct rb_eng rb_eng;
typedef struct rb_eng_op rb_eng_op;
struct rb_job;

/* The meta key prefix of a stored batch. */
#define RB_MEM_BATCH_KEY "batch:"

/* Sets up sq->batches (rb_srv_alloc); frees them and the sweep's timer. */
void rb_sq_batches_init(rb_sq *sq);
void rb_sq_batches_release(rb_sq *sq);
/* FLUSH: every batch forgotten (the store's clear drops their rows). */
void rb_sq_batches_flush(rb_sq *sq);

/* A stored meta key at start-up: a batch when key starts with
 * RB_MEM_BATCH_KEY (an unreadable one is logged and skipped). */
void rb_sq_batch_load(rb_sq *sq, const char *key, const char *value);

/* PUSH: 0 when job names no batch or a live one (*bid then set, or NULL);
 * RB_ENOENT when its custom.bid is unknown or expired (nothing changed). */
int rb_sq_batch_check_push(rb_sq *sq, const json_t *job, const char **bid);
/* A member of bid was pushed (after rb_sq_batch_check_push said it lives). */
void rb_sq_batch_pushed(rb_sq *sq, const char *bid, int64_t now);
/* A job is being ACKed (before it is deleted): a member counts, a callback
 * becomes "2"; callbacks that then fire are enqueued. */
void rb_sq_batch_acked(rb_sq *sq, const struct rb_job *j, int64_t now);
/* A job's attempt failed (j as before the failure): first_failure when it
 * had never failed, died when the failure killed (or discarded) it. */
void rb_sq_batch_failed(rb_sq *sq, const struct rb_job *j, bool first_failure, bool died,
                         int64_t now);

/* The backend's RB_ENG_BATCH (rb_backend_mem.batch). */
void rb_sq_batch(rb_eng *eng, rb_eng_op *op);

/* INFO's "batches" object under "rebound": open (not finished) and
 * callbacks (enqueued, all time). New reference. */
json_t *rb_sq_batch_info(rb_sq *sq);

#endif
