/* The one fault-injection seam: the faults and test clocks a test asks a
 * process for, named in one environment variable read once, at the first
 * question:
 *
 *   REBOUND_FAULTS="sqlite.fault_file=/tmp/x/full,pg.batch_fault=1"
 *
 * Names (docs/hacking.md, "Fault injection"):
 *   sqlite.fault_file     while this file exists every SQLite commit fails
 *                         as a full disk would (backend/sqlite/sqlite.c)
 *   pg.batch_fault        N > 0: every Nth batch transaction of a database
 *                         thread fails before its COMMIT; -1: no batch
 *                         transaction (backend/pg/db_thread.c)
 *   pg.tick_ms            the maintenance thread's tick in ms
 *                         (backend/pg/maint_thread.c)
 *   pg.prefetch_hold_ms   how long a prefetched job waits for its worker's
 *                         FETCH (backend/pg/prefetch.c; 500 by default)
 *   pg.claim_pause_ms     the loop thread stops that long before the reply
 *                         of the first job a claim got, as a paused node
 *                         (backend/pg/fetch.c)
 *   pg.prefetch_pause_ms  the same before a prefetched job is held
 *                         (backend/pg/prefetch.c)
 *   pg.leader_lease_ms    the leader lease's length in ms (backend/pg/leader.c;
 *                         5000 by default)
 *   cron.clock_offset_ms  added to the cron clock (server/cron.c)
 *   cron.clock_rate       the cron clock runs this many times faster
 *   server.stop_pause_ms  the server waits that long once its loop is over
 *                         and the loop's signal events are gone, before
 *                         the final close (server/server.c)
 *
 * Entries are separated by commas (a value cannot hold one); an unknown
 * name or an entry without "=" is reported on stderr and ignored.
 * Nothing is injected when the variable is unset: production code asks
 * and gets NULL. Any thread may call these. */
#ifndef RB_COMMON_FAULT_H
#define RB_COMMON_FAULT_H

#define RB_FAULTS_ENV "REBOUND_FAULTS"

/* The value of fault name, or NULL when not asked for (static storage,
 * valid for the life of the process). name must be one of the list
 * (rb_assert). */
const char *rb_fault_get(const char *name);

/* rb_fault_get as an integer: dflt when not asked for or not a number. */
long long rb_fault_int(const char *name, long long dflt);

#endif
