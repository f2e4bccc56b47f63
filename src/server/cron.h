/* Cron (issue 16 item 3, docs/enterprise.md "Cron"): one timer fires each
 * [[cron]] entry's ticks (engine/cron.h computes them); each tick is one
 * PUSH through the engine whose jid is derived from the entry's name and
 * the tick's time, made only if the store's meta row "cron:<name>" holds
 * an older tick, and whose commit sets that row to "<tick seconds>"
 * (engine.h, u.push.meta_key). So a restart (even after kill -9) never
 * fires a tick twice, and of several nodes on one PostgreSQL database
 * exactly one pushes each tick (the others find it fired). Loop thread
 * only. */
#ifndef RB_SERVER_CRON_H
#define RB_SERVER_CRON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct rb_srv rb_srv;
#include "engine/cron.h" /* RB_CRON_META_KEY */


/* The test-only clock (common/fault.h, docs/enterprise.md): the offset in
 * milliseconds added to the wall clock cron reads, and how many times
 * faster than the wall clock it runs (wall ms * rate + offset; 2..3600,
 * e.g. 60: a minute's tick each second). Read at rb_cron_start. */
#define RB_CRON_TEST_CLOCK_FAULT "cron.clock_offset_ms"
#define RB_CRON_TEST_RATE_FAULT "cron.clock_rate"


/* Once the loop exists: for each entry, the catch-up job of missed =
 * "run_once" after downtime, then the timer armed for the next ticks. A
 * no-op without entries. */
void rb_cron_start(rb_srv *srv);

/* Frees srv->cron (NULL: no-op). */
void rb_cron_free(rb_srv *srv);

/* INFO's "cron" {"entries", "fired"} under "rebound"; set into rebound. */
void rb_cron_info(const rb_srv *srv, json_t *rebound);
/* Ticks fired (jobs pushed) since the server started. */
int64_t rb_cron_fired(const rb_srv *srv);

/* Entry i's (srv->cfg.cron[i]) last fired tick in Unix seconds as the
 * store keeps it (written in its push's commit), 0 for never. */
int64_t rb_cron_last_tick(const rb_srv *srv, size_t i);
/* The cron clock in ms: the wall clock plus the test-only offset
 * (RB_CRON_TEST_CLOCK_FAULT) once rb_cron_start has read it. */
int64_t rb_cron_now_ms(const rb_srv *srv);

/* The jid of entry name's tick at tick_s: "cron-<16 hex digits of the
 * name's FNV-1a hash>-<tick_s>" (written into out, at least 48 bytes). */
char *rb_cron_jid(const char *name, int64_t tick_s, char *out);

#endif
