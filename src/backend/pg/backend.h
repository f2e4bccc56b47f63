/* The PostgreSQL backend (distributed mode, docs/distributed.md): the job
 * engine's backend for a PostgreSQL storage url. The engine picks it
 * (rb_backend_for_url). Loop thread only. */
#ifndef RB_BACKEND_PG_BACKEND_H
#define RB_BACKEND_PG_BACKEND_H

#include "engine/engine.h"

extern const rb_backend rb_backend_pg;

#endif
