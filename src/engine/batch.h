/* Faktory Enterprise batches (docs/workflows.md, "Batches"), the rules
 * once for every backend: BATCH NEW's definition checked, a batch's
 * counters and callback states, the events that change them and the
 * actions they call for (callbacks to enqueue, the parent to tell),
 * STATUS's JSON, and the stored form. Pure: no I/O, no clocks (times are
 * arguments); any thread may call these. A backend stores batches, applies
 * an event and carries out its actions in the same durable change. */
#ifndef RB_ENGINE_BATCH_H
#define RB_ENGINE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* The reply to BATCH, and to PUSH of a job with custom.bid, where the
 * backend has no batches (both of Rebound's backends have them now: a
 * backend without a `batch` function, rb_eng_batch_check). */
#define RB_BATCH_UNSUPPORTED "batches are not supported in distributed mode yet"
/* The longest description BATCH NEW accepts, in bytes. */
#define RB_BATCH_DESC_MAX 1024

/* A batch's callbacks. Stored by number: never renumber. */
typedef enum rb_batch_cb {
    RB_BATCH_COMPLETE = 0,
    RB_BATCH_SUCCESS = 1,
    RB_BATCH_DEATH = 2, /* Rebound's extension */
    RB_BATCH_CBS
} rb_batch_cb;

/* A callback's state, as STATUS writes it: "" not yet, "1" enqueued, "2"
 * ACKed. */
enum { RB_BATCH_ST_NONE = 0, RB_BATCH_ST_ENQUEUED = 1, RB_BATCH_ST_DONE = 2 };

/* One batch. Invariants: 0 <= failed <= pending <= total, executed <=
 * total (members counted once each: executed at their first ACK or FAIL,
 * failed while their last attempt failed); st[k] only grows, and is
 * RB_BATCH_ST_NONE when cb[k] is NULL; told_* only ever become true (the
 * parent is told once). Strings owned. */
typedef struct rb_batch {
    void *hnext;        /* a backend's table chain */
    char *bid;
    char *parent_bid;   /* NULL: top level */
    char *description;  /* NULL: none given */
    int64_t created_ms;
    int64_t created_us;  /* the same instant in microseconds (BATCH STATUS's created_at) */
    int64_t finished_ms; /* when it last became finished (rb_batch_finished), 0: not */
    bool committed;
    int64_t total, pending, failed, executed, dead;
    int64_t children, children_complete, children_success;
    bool told_complete, told_success; /* the parent was told */
    char *cb[RB_BATCH_CBS];     /* the callback job's JSON text (custom._bid set), or NULL */
    char *cb_jid[RB_BATCH_CBS]; /* the jid it was enqueued with, once enqueued */
    int st[RB_BATCH_CBS];
} rb_batch;

/* What changes a batch (rb_batch_apply). */
typedef enum rb_batch_event {
    RB_BATCH_EV_ADDED,          /* a member was pushed */
    RB_BATCH_EV_FIRST_FAIL,     /* a member's attempt failed, none had before */
    RB_BATCH_EV_ACKED,          /* a member that never failed was ACKed */
    RB_BATCH_EV_ACKED_AFTER_FAIL, /* a member that had failed was ACKed */
    RB_BATCH_EV_DIED,           /* a member died (or was discarded by its policy) */
    RB_BATCH_EV_COMMIT,
    RB_BATCH_EV_CB_COMPLETE_ACKED, /* the complete callback job was ACKed */
    RB_BATCH_EV_CB_SUCCESS_ACKED,
    RB_BATCH_EV_CB_DEATH_ACKED,
    RB_BATCH_EV_CHILD_ADDED,    /* BATCH NEW named this batch as parent */
    RB_BATCH_EV_CHILD_COMPLETE, /* a child told RB_BATCH_TELL_COMPLETE */
    RB_BATCH_EV_CHILD_SUCCESS,  /* a child told RB_BATCH_TELL_SUCCESS */
    RB_BATCH_EV_NONE,           /* nothing changed: only re-evaluate */
} rb_batch_event;

/* What rb_batch_apply asks of the backend, a bit set. The ENQUEUE ones
 * have already moved st[k] to "1": enqueue cb[k] in the same durable
 * change. The TELL ones: apply RB_BATCH_EV_CHILD_COMPLETE/SUCCESS to the
 * parent (when it still exists) and carry out its actions in turn. */
enum {
    RB_BATCH_ENQUEUE_COMPLETE = 1 << RB_BATCH_COMPLETE,
    RB_BATCH_ENQUEUE_SUCCESS = 1 << RB_BATCH_SUCCESS,
    RB_BATCH_ENQUEUE_DEATH = 1 << RB_BATCH_DEATH,
    RB_BATCH_TELL_COMPLETE = 1 << 3,
    RB_BATCH_TELL_SUCCESS = 1 << 4,
};

/* BATCH NEW's definition, borrowed from the parsed argument. */
typedef struct rb_batch_def {
    const char *description; /* NULL: none */
    const char *parent_bid;  /* NULL: top level */
    json_t *cb[RB_BATCH_CBS]; /* callback job objects, or NULL */
} rb_batch_def;

/* Checks BATCH NEW's argument o (a JSON object): description a string of
 * at most RB_BATCH_DESC_MAX bytes or null, parent_bid a non-empty string
 * or null, bid absent, null or "" (the Go client sends "bid":""), success,
 * complete and death job objects or null, at least one of success and
 * complete. The callback jobs themselves are checked by the caller as
 * PUSH's are. Fills def (borrowing from o), or returns RB_EINVAL with err
 * set to the reply text ("BATCH NEW: ..."). */
int rb_batch_parse_new(json_t *o, rb_batch_def *def, rb_err *err);

/* A new uncommitted batch from def, created at now_us (microseconds);
 * parent's bid copied.
 * The callback jobs are copied with custom._bid = bid (and custom._pbid
 * for a child), custom.bid removed, queue defaulted to "default". Free
 * with rb_batch_free. */
rb_batch *rb_batch_new(const char *bid, const rb_batch_def *def, int64_t now_us);
void rb_batch_free(rb_batch *b);

/* Applies ev to b and re-evaluates its callbacks (rules: docs/workflows.md,
 * "Batches"): nothing fires before COMMIT; complete when every member has
 * executed once and every child is complete; success after complete, with
 * every member ACKed and every child successful; death once, when a
 * member has died. now stamps finished_ms. Returns the actions (bit set). */
unsigned rb_batch_apply(rb_batch *b, rb_batch_event ev, int64_t now);

/* Whether complete (success) counts as reached for the parent: its
 * callback ACKed, or, without a callback, its condition holds. */
bool rb_batch_complete_done(const rb_batch *b);
bool rb_batch_success_done(const rb_batch *b);
/* Whether b has nothing left to do: complete and success reached, or
 * complete reached and a member died (success cannot come unless that
 * member is requeued). */
bool rb_batch_finished(const rb_batch *b);
/* Whether b is gone at now: never committed for uncommitted_ttl_ms
 * ([workflows] batch_uncommitted_ttl, 30 minutes by default as Faktory's),
 * or finished for retention_ms ([workflows] batch_retention) while no
 * ancestor is unfinished (the backend says, ancestor_unfinished). */
/* A child batch is gone (expired): parent stops waiting for it and
 * forgets what it told (then apply RB_BATCH_EV_NONE to parent). */
void rb_batch_child_gone(rb_batch *parent, const rb_batch *child);
bool rb_batch_expired(const rb_batch *b, int64_t now, int64_t uncommitted_ttl_ms,
                      int64_t retention_ms, bool ancestor_unfinished);

/* Which of b's callbacks jid is (the job's custom._bid named b), or -1. */
int rb_batch_callback_of(const rb_batch *b, const char *jid);

/* STATUS's JSON: bid, parent_bid (null at top level), description (null
 * when none), created_at (RFC 3339), total, pending, failed, complete_st,
 * success_st (always strings "", "1" or "2"). New reference. */
json_t *rb_batch_status_json(const rb_batch *b);

/* The stored form (a JSON text; caller frees), and back: NULL when text
 * is not a batch this version wrote. */
char *rb_batch_dump(const rb_batch *b);
rb_batch *rb_batch_load(const char *text);

/* custom.bid of a job object: NULL when absent, null or ""; RB_EINVAL
 * with err set when present with another type (*bid NULL). */
int rb_batch_member_bid(const json_t *job, const char **bid, rb_err *err);

#endif
