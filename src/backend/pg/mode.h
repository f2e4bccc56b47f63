/* Distributed mode: `rebound serve` on a PostgreSQL database shared by
 * several nodes (docs/distributed.md). The event loop stays non-blocking:
 * the job engine's backend (backend.c) posts requests (request.h) to
 * database threads, each with its own engine (sql.h), which take
 * everything queued at once, run what can be batched as one call (pushes,
 * acks, fails, claims of the same queue list) and hand the finished
 * requests back through an eventfd. A listen thread turns NOTIFY into
 * wake-ups of waiting FETCHes, a maintenance thread promotes, reaps and
 * expires on every node at once (the engine's SKIP LOCKED batches make
 * that safe), and a poll timer covers lost notifications.
 *
 * The files: mode.c (this header: open, attach, free; the loop's eventfd
 * and poll callbacks), request.c (requests and the hand-over back to the
 * loop), db_thread.c, listen_thread.c, maint_thread.c (one thread kind
 * each), fetch.c (FETCH's claims and parked FETCHes); mode_impl.h is what
 * they share. This header is the server's (server.c): loop thread only. */
#ifndef RB_BACKEND_PG_MODE_H
#define RB_BACKEND_PG_MODE_H

#include <stdbool.h>

#include "common/error.h"
#include "engine/engine.h"

typedef struct rb_pgmode rb_pgmode;

/* The distributed backend's state: eng's backend handle (eng->be, set by
 * rb_pgmode_open). */
static inline rb_pgmode *rb_pgm_of(const rb_eng *eng)
{
    return (rb_pgmode *)eng->be;
}

/* Connects the engines (retrying with a backoff while the database cannot
 * be reached), checks the schema (RB_EVERSION with "run 'rebound migrate'"
 * or "upgrade rebound" otherwise) and starts the database threads; sets
 * eng->be. Before the event base exists. */
int rb_pgmode_open(rb_eng *eng, rb_err *err);
/* Registers the loop's events (completions, poll timer) and starts the
 * listen and maintenance threads. After the event base exists. */
void rb_pgmode_attach(rb_eng *eng);
/* Stops the threads after the requests already posted have run, completes
 * them (their connections are closed by then), frees everything. */
void rb_pgmode_free(rb_eng *eng);
/* The leader lease (leader.c; rb_backend.leader_offer and .leader). Loop
 * thread. */
void rb_pgmode_leader_offer(rb_eng *eng, const char *addr, const char *tls_id);
void rb_pgmode_leader(rb_eng *eng, rb_eng_leader *out);

#endif
