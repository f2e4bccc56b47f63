/* The workers this node's connections said HELLO for, by wid: the
 * engine's, read by both backends (a single node keeps their beats and
 * signals here; distributed mode keeps those in the cluster's table and
 * refreshes these wids' rows) and by the server (a connection holds its
 * worker). Loop thread only. */
#ifndef RB_ENGINE_WORKERS_H
#define RB_ENGINE_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rb_eng rb_eng;

/* A worker process known by its HELLO wid. */
typedef struct rb_worker {
    void *hnext;
    char *wid;
    int64_t last_beat_ms;
    int signal; /* 0, RB_WORKER_QUIET or RB_WORKER_TERMINATE: said at its next BEAT */
    int conns;  /* open connections that said this wid */
} rb_worker;

enum { RB_WORKER_QUIET = 1, RB_WORKER_TERMINATE = 2 };

/* BEAT's refusal of a wid no HELLO announced (on this node, or in
 * distributed mode on any live node). */
#define RB_UNKNOWN_WORKER "unknown worker %s (say HELLO with this wid first)"

/* The worker for wid, made (first beat now) when create; else NULL when
 * none. */
rb_worker *rb_eng_worker_get(rb_eng *eng, const char *wid, bool create);
/* A connection that said HELLO for wid: its worker, with one more
 * connection. */
rb_worker *rb_eng_worker_attach(rb_eng *eng, const char *wid);
/* That connection closed: w goes with its last connection. */
void rb_eng_worker_detach(rb_eng *eng, rb_worker *w);
/* How many workers are known. */
size_t rb_eng_workers_count(const rb_eng *eng);
/* Calls fn for each worker, in table order. */
void rb_eng_workers_each(rb_eng *eng, void (*fn)(rb_worker *w, void *arg), void *arg);

/* The table's life, with the server's (rb_srv_alloc, rb_srv_free). */
void rb_eng_workers_init(rb_eng *eng);
void rb_eng_workers_release(rb_eng *eng);

#endif
