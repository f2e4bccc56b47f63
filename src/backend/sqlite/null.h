/* A store that keeps nothing: every write succeeds and is forgotten, a load
 * finds no rows. For running the server in memory only (the protocol fuzz
 * target, fuzz/fuzz_protocol.c); never for a real server. */
#ifndef RB_BACKEND_MEM_NULL_H
#define RB_BACKEND_MEM_NULL_H

#include "backend/sqlite/store.h"

/* A new empty null store; close it with s->ops->close(s). Never fails. */
rb_store *rb_store_null_new(void);

/* Makes commit number k (counting from 0, k < 64) fail with RB_ESTORE when
 * bit k of mask is set: the server's commit-failure paths for a harness.
 * Call before the writer starts (the writer thread counts the commits). */
void rb_store_null_fail_commits(rb_store *s, uint64_t mask);

#endif
