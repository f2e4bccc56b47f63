/* A new job's defaults and a new job's jid, one home for both backends:
 * what a pushed job (or one the engine makes: a batch's callback, a
 * policy's catch job) means when it leaves a field out. Pure: any thread
 * may call these. */
#ifndef RB_ENGINE_JOBDEF_H
#define RB_ENGINE_JOBDEF_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/rng.h"

/* The longest queue name, in bytes. */
#define RB_QUEUE_NAME_MAX 200

/* Jobs without a queue go to this one (Faktory's). */
#define RB_DEFAULT_QUEUE "default"
/* Jobs without a priority get this one (1 lowest .. 9 highest). */
#define RB_DEFAULT_PRIORITY 5

/* A new job's fields as a backend stores them. */
typedef struct rb_job_fields {
    const char *jid;   /* borrowed from the job */
    const char *queue; /* borrowed from the job (set to the default there) */
    int priority;      /* the job's when 1..9, else RB_DEFAULT_PRIORITY */
    int reserve_s;     /* the job's reserve_for when > 0, else the default */
    int64_t at_ms;     /* its `at` when given, else now */
    bool made_created; /* created_at was absent or empty: it is now_us, which
                          the backend records (in the text or beside it) */
} rb_job_fields;

/* Fills out from job (checked by rb_job_validate, or made by the engine)
 * and sets the defaults in job: a missing queue becomes RB_DEFAULT_QUEUE;
 * enqueued_at is dropped (the backend sets it when the job is enqueued); a
 * missing or empty created_at is dropped (made_created). */
void rb_job_fields_read(json_t *job, int64_t now_ms, int default_reserve_s, rb_job_fields *out);

/* A fresh random jid: 24 lowercase hex digits from rng. Caller frees. */
char *rb_jid_random(rb_rng *rng);

#endif
