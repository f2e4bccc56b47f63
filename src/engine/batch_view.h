/* What both backends read for a batch's pages (BATCHES, GET /api/batch/BID
 * and GET /api/batches, docs/workflows.md "Seeing it"): one batch with its
 * stored members, callbacks and children, and the listing's order and
 * entries; their JSON built here once. Pure: no I/O. */
#ifndef RB_ENGINE_BATCH_VIEW_H
#define RB_ENGINE_BATCH_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/batch.h"

/* The most members a batch's view lists; more: "truncated": true. */
#define RB_BATCH_VIEW_MAX_MEMBERS 1000
/* The default and largest page of the batches' listing. */
#define RB_BATCH_LIST_LIMIT 50
#define RB_BATCH_LIST_MAX 1000

/* One stored member job (custom.bid names the batch; never a callback).
 * Strings owned. */
typedef struct rb_batch_member {
    char *jid, *jobtype, *queue; /* jobtype NULL when the job has none */
    int state;                   /* an rb_job_state, never PENDING */
    int attempts;
} rb_batch_member;

/* One batch as its page shows it. Owned (rb_batch_view_release). */
typedef struct rb_batch_view {
    rb_batch *b;
    rb_batch_member *members; /* by jid, at most max_members */
    size_t n_members;
    size_t max_members; /* the cap it was read with */
    bool truncated;     /* more members are stored than listed */
    char **children;    /* the child batches' bids, sorted */
    size_t n_children;
} rb_batch_view;

/* Adds a member (strings copied; jobtype may be NULL). */
void rb_batch_view_add_member(rb_batch_view *v, const char *jid, const char *jobtype,
                              const char *queue, int state, int attempts);
/* Adds a child bid (copied). */
void rb_batch_view_add_child(rb_batch_view *v, const char *bid);
/* Sorts members by jid and children by bid, then keeps the first
 * max_members members (0: RB_BATCH_VIEW_MAX_MEMBERS), truncated set when
 * any were dropped or more_stored says the backend stopped reading early. */
void rb_batch_view_finish(rb_batch_view *v, bool more_stored);
void rb_batch_view_release(rb_batch_view *v);

/* The view's JSON (docs/http.md, GET /api/batch/BID): STATUS's fields
 * (rb_batch_status_json), and "committed", "finished_at" (null while
 * open), "executed", "dead", "children" (their bids), "callbacks":
 * [{"kind", "jid" (null until enqueued), "st"}] for each defined one,
 * "members": [{"jid", "jobtype", "queue", "state", "attempts"}],
 * "truncated", "max_members". The caller owns the result. */
json_t *rb_batch_view_json(const rb_batch_view *v);

/* The listing's order, both backends: open batches (not finished) first,
 * newest created first; then finished ones, latest finished first; ties by
 * bid. A qsort comparator over rb_batch pointers. PostgreSQL's query
 * (sql_batch.c) orders the same way. */
int rb_batch_list_cmp(const void *a, const void *b);
/* One listing entry: STATUS's fields plus "finished_at" and "committed".
 * New reference. */
json_t *rb_batch_list_entry_json(const rb_batch *b);
/* The listing's JSON (BATCHES, GET /api/batches): {"state": "open" or
 * "all", "total", "offset", "limit", "batches": [entries]}. New
 * reference. */
json_t *rb_batch_list_json(bool all, int64_t total, int64_t offset, int64_t limit,
                           rb_batch *const *list, size_t n);

#endif
