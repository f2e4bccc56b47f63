/* The SQLite backend (the single node, docs/design.md): the job engine's
 * backend for a storage url that is a file (or ":memory:"). The engine
 * picks it (rb_backend_for_url); nothing else outside src/backend/sqlite/
 * includes this but the tests and the fuzzing harness, which run it on a
 * store of their own. Loop thread only. */
#ifndef RB_BACKEND_SQLITE_BACKEND_H
#define RB_BACKEND_SQLITE_BACKEND_H

#include "backend/sqlite/store.h"
#include "common/error.h"
#include "engine/engine.h"

extern const rb_backend rb_backend_sqlite;

/* rb_backend_sqlite's open on store instead of the configuration's file
 * (the null store, a store that fails on purpose): sets eng's backend,
 * takes over store (closed by the backend's release even on failure),
 * loads its jobs, counters and meta rows and starts the writer thread.
 * eng->cfg must be filled before. 0 or the load's / writer's error. */
int rb_sq_open_store(rb_eng *eng, rb_store *store, rb_err *err);

#endif
