/* The numbers of the PostgreSQL schema's SQL and the C constants they stand
 * for (sql_numbers.h), each checked at build time. */
#include "backend/pg/sql_numbers.h"

#include <stddef.h>

#include "backend/pg/sql_impl.h"
#include "engine/depend.h"
#include "engine/group.h"
#include "engine/job_state.h"
#include "engine/track.h"

/* column, C constant, the SQL's literal: one line each */
#define SQL_NUMBERS(X)                           \
    X("rb_jobs.state", RB_JOB_PENDING, 0)        \
    X("rb_jobs.state", RB_JOB_SCHEDULED, 1)      \
    X("rb_jobs.state", RB_JOB_ENQUEUED, 2)       \
    X("rb_jobs.state", RB_JOB_WORKING, 3)        \
    X("rb_jobs.state", RB_JOB_RETRIES, 4)        \
    X("rb_jobs.state", RB_JOB_DEAD, 5)           \
    X("rb_jobs.state", RB_JOB_WAITING, 6)        \
    X("rb_jobs.state", RB_JOB_BLOCKED, 7)        \
    X("rb_jobs.flags", 0, 0) /* no flag */       \
    X("rb_jobs.flags", RB_JOB_EXPIRED, 1)        \
    X("rb_jobs.flags", RB_JOB_REFETCHED, 2)      \
    X("rb_jobs.flags", RB_JOB_GROUP_SLOT, 4)     \
    X("status", RB_JOB_DONE, 0)                  \
    X("status", RB_JOB_MISSING, 1)               \
    X("status", RB_JOB_OTHER_HOLDER, 2)          \
    X("status", RB_JOB_NOOP, 3)                  \
    X("status", RB_JOB_NOT_WORKING, 4)           \
    X("status", RB_PG_ACK_BATCH, 5)              \
    X("status", RB_PG_ACK_DEPS, 6)               \
    X("rb_track.state", RB_TRACK_UNKNOWN, 0)     \
    X("rb_track.state", RB_TRACK_SUCCESS, 3)     \
    X("rb_track.state", RB_TRACK_DEAD, 5)        \
    X("rb_wait.mode", RB_DEP_BLOCK, 0)           \
    X("rb_wait.mode", RB_DEP_CANCEL, 1)          \
    X("rb_wait.mode", RB_DEP_IGNORE, 2)          \
    X("kind", RB_PG_SEEN_BEAT, 0)                \
    X("kind", RB_PG_SEEN_BEAT_HELD, 1)           \
    X("kind", RB_PG_SEEN_HELLO, 2)               \
    X("kind", RB_PG_SEEN_HELD, 3)                \
    X("rb_groups.hold", RB_HOLD_NONE, 0)         \
    X("rb_groups.hold", RB_HOLD_CONCURRENCY, 1)  \
    X("rb_groups.hold", RB_HOLD_RATE, 2)         \
    X("rb_groups.hold", RB_HOLD_PAUSED, 3)

#define CHECK(column, c, v)                                                             \
    _Static_assert((c) == (v), #c " is " #v " in the SQL of src/backend/pg/schema/ ("  \
                   column "): renumbering it would change what stored rows and "       \
                   "released migrations' functions mean");
SQL_NUMBERS(CHECK)

#define ENTRY(column, c, v) {column, #c, v},
const rb_pg_sql_number rb_pg_sql_numbers[] = {SQL_NUMBERS(ENTRY){NULL, NULL, 0}};
