/* The null store (backend/sqlite/null.h): accepts every write, remembers nothing. It
 * still checks the writer's calling order (writes only inside a
 * transaction), so a misuse shows up as an error rather than passing, and
 * can fail chosen commits (rb_store_null_fail_commits). */
#include "backend/sqlite/null.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/buf.h"

typedef struct null_store {
    rb_store base;
    bool in_tx;
    uint64_t commits, fail_mask; /* commits done; which ones fail */
} null_store;

static int null_load(rb_store *s, const rb_store_loader *l, rb_err *err)
{
    (void)s;
    (void)l;
    (void)err;
    return 0;
}

static int null_begin(rb_store *s, rb_err *err)
{
    null_store *n = (null_store *)s;
    if (n->in_tx)
        return rb_err_set(err, RB_ESTORE, "null store: begin inside a transaction");
    n->in_tx = true;
    return 0;
}

static int null_write(rb_store *s, rb_err *err)
{
    if (!((null_store *)s)->in_tx)
        return rb_err_set(err, RB_ESTORE, "null store: write outside a transaction");
    return 0;
}

static int null_put_job(rb_store *s, const rb_job_row *row, rb_err *err)
{
    (void)row;
    return null_write(s, err);
}

static int null_del_job(rb_store *s, int64_t id, const char *jid, rb_err *err)
{
    (void)id;
    (void)jid;
    return null_write(s, err);
}

static int null_set_counter(rb_store *s, const char *name, int64_t value, rb_err *err)
{
    (void)name;
    (void)value;
    return null_write(s, err);
}

static int null_set_meta(rb_store *s, const char *key, const char *value, rb_err *err)
{
    (void)key;
    (void)value;
    return null_write(s, err);
}

static int null_clear(rb_store *s, rb_err *err)
{
    return null_write(s, err);
}

static int null_commit(rb_store *s, rb_err *err)
{
    null_store *n = (null_store *)s;
    int rc = null_write(s, err);
    uint64_t k = n->commits++;
    if (!rc && k < 64 && (n->fail_mask >> k & 1))
        rc = rb_err_set(err, RB_ESTORE, "null store: commit %llu fails (injected)",
                        (unsigned long long)k);
    n->in_tx = false;
    return rc;
}

static void null_rollback(rb_store *s)
{
    ((null_store *)s)->in_tx = false;
}

static void null_close(rb_store *s)
{
    free(s);
}

static const rb_store_ops null_ops = {
    .name = "null",
    .load = null_load,
    .begin = null_begin,
    .put_job = null_put_job,
    .del_job = null_del_job,
    .set_counter = null_set_counter,
    .set_meta = null_set_meta,
    .clear = null_clear,
    .commit = null_commit,
    .rollback = null_rollback,
    .close = null_close,
    .maintain = NULL,
};

void rb_store_null_fail_commits(rb_store *s, uint64_t mask)
{
    ((null_store *)s)->fail_mask = mask;
}

rb_store *rb_store_null_new(void)
{
    null_store *n = rb_xcalloc(1, sizeof *n);
    n->base.ops = &null_ops;
    return &n->base;
}
