/* The single-node backend's progress tracking (engine/track.h holds the
 * rules; docs/enterprise.md, "Tracking"). A tracked job's state is never
 * copied: TRACK GET derives it from the job's row while the job lives.
 * What TRACK SET gave (percent, desc, time) is a record by jid, stored as
 * the meta key "track:<jid>" written in the SET's commit; when a job with
 * a record ends (ACKed: success; deleted otherwise: dead) its record takes
 * that final state in the commit that ends it, and is kept
 * RB_TRACK_RETENTION_MS more, then dropped. A tracked job that never
 * reported progress keeps no record: once gone it answers "unknown".
 * Loop thread only. */
#ifndef RB_BACKEND_MEM_TRACK_H
#define RB_BACKEND_MEM_TRACK_H

#include <stdint.h>

#include "engine/track.h"

typedef struct rb_sq rb_sq;
typedef struct rb_eng rb_eng;
typedef struct rb_eng_op rb_eng_op;
struct rb_job;

/* The meta key prefix of a stored record. */
#define RB_MEM_TRACK_KEY "track:"

/* Sets up sq->track (rb_srv_alloc); frees it (rb_srv_free). */
void rb_sq_track_init(rb_sq *sq);
void rb_sq_track_release(rb_sq *sq);
/* FLUSH: every record forgotten (the store's clear drops their rows). */
void rb_sq_track_flush(rb_sq *sq);

/* Start-up: a stored meta key (a record when it starts with
 * RB_MEM_TRACK_KEY); once every job is loaded, records of live jobs that
 * are gone and ended records past their retention dropped. */
void rb_sq_track_load(rb_sq *sq, const char *key, const char *value);
void rb_sq_track_rebuild(rb_sq *sq);

/* j leaves the server: ACKed (RB_TRACK_SUCCESS, called before
 * rb_sq_forget) or deleted otherwise (RB_TRACK_DEAD, from rb_sq_forget,
 * which keeps an ACK's success). When j has a record (a TRACK SET) it is
 * kept with that state for RB_TRACK_RETENTION_MS, written in the same
 * commit; nothing else is done, so an ACK of any other job costs one
 * lookup. */
void rb_sq_track_ended(rb_sq *sq, const struct rb_job *j, rb_track_state s, int64_t now);

/* RB_ENG_TRACK (rb_backend_mem.track). */
void rb_sq_track_op(rb_eng *eng, rb_eng_op *op);

#endif
