/* FAIL and the lease reaper for the PostgreSQL engine: lock the rows, decide
 * each failure in C through the policy engine, write every outcome (and the
 * catch jobs and the failure counter) in the same transaction. A row's lock
 * is held from the state check to the commit, so of two nodes handling one
 * execution (a FAIL on one, the reaper on another) exactly one applies a
 * decision; the other sees the new state. */
#include "backend/pg/sql_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/depend.h"

static void locked_free(locked_row *rows, int n)
{
    for (int i = 0; rows && i < n; i++) {
        free(rows[i].jid);
        free(rows[i].queue);
        free(rows[i].wid);
        free(rows[i].json);
        free(rows[i].history);
        free(rows[i].bid);
    }
    free(rows);
}

/* Reads SQL_LOCK_JOBS / SQL_LOCK_EXPIRED rows. */
static locked_row *read_locked(PGresult *r, int *n)
{
    *n = PQntuples(r);
    locked_row *rows = rb_xcalloc(*n ? (size_t)*n : 1, sizeof *rows);
    for (int i = 0; i < *n; i++) {
        rows[i].jid = sql_dup(r, i, 0);
        rows[i].queue = sql_dup(r, i, 1);
        rows[i].wid = sql_dup(r, i, 2);
        rows[i].json = sql_dup(r, i, 3);
        rows[i].history = sql_dup(r, i, 4);
        rows[i].state = (int)sql_int(r, i, 5);
        rows[i].priority = (int)sql_int(r, i, 6);
        rows[i].attempts = (int)sql_int(r, i, 7);
        rows[i].flags = (int)sql_int(r, i, 8);
        rows[i].first_ms = sql_int(r, i, 9);
        rows[i].bid = sql_dup(r, i, 10);
        rows[i].bcb = !strcmp(PQgetvalue(r, i, 11), "t");
    }
    return rows;
}

/* The writes of one transaction, gathered as array literals. */
typedef struct batch {
    rb_buf jid, state, due, flags, json, hist, del;
    rb_buf died; /* the jobs that went dead, for their children */
    rb_pg_new_job *catches;
    char **catch_texts;
    size_t n_update, n_catch;
    int failures;
} batch;

static void batch_init(batch *b)
{
    memset(b, 0, sizeof *b);
    rb_buf *all[] = {&b->jid,  &b->state, &b->due, &b->flags,
                     &b->json, &b->hist,  &b->del, &b->died};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        sql_arr_begin(all[i]);
}

static void batch_release(batch *b)
{
    rb_buf *all[] = {&b->jid,  &b->state, &b->due, &b->flags,
                     &b->json, &b->hist,  &b->del, &b->died};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        rb_buf_release(all[i]);
    for (size_t i = 0; i < b->n_catch; i++) {
        free((char *)b->catches[i].jid);
        free((char *)b->catches[i].queue);
        free(b->catch_texts[i]);
    }
    free(b->catches);
    free(b->catch_texts);
}

/* Decides row's failure and adds its writes to b; updates row to its new
 * state (a second FAIL of the same jid in the batch sees it). */
static int fail_row(rb_pg *pg, batch *b, locked_row *row, const rb_pg_failure *in, int64_t now,
                    int new_flags, rb_pg_fail_result *res, rb_err *err)
{
    fail_out o;
    int rc = fail_decide(pg, row, in, now, &o, err);
    if (rc)
        return rc;
    b->failures++;
    sql_batch_failed(pg, row->bid, row->bcb, !row->history, o.d.outcome != RB_OUTCOME_RETRY);
    if (res) {
        memset(res, 0, sizeof *res);
        res->status = RB_JOB_DONE;
        res->outcome = o.d.outcome;
        res->delay_ms = o.d.outcome == RB_OUTCOME_RETRY ? o.d.delay_ms : 0;
        snprintf(res->labels.queue, sizeof res->labels.queue, "%s", row->queue);
        snprintf(res->labels.jobtype, sizeof res->labels.jobtype, "%s", o.jobtype);
    }
    if (o.d.outcome == RB_OUTCOME_DISCARD) {
        sql_arr_str(&b->del, row->jid);
        row->state = 0; /* gone */
        fail_out_release(&o);
        return 0;
    }
    const rb_config *cfg = sql_cfg(pg);
    int st = o.d.outcome == RB_OUTCOME_RETRY ? RB_JOB_RETRIES : RB_JOB_DEAD;
    int64_t due = st == RB_JOB_RETRIES ? o.d.retry_at_ms : now + cfg->server.dead_retention_s * 1000;
    sql_arr_str(&b->jid, row->jid);
    if (st == RB_JOB_DEAD)
        sql_arr_str(&b->died, row->jid);
    sql_arr_int(&b->state, st);
    sql_arr_int(&b->due, due);
    sql_arr_int(&b->flags, new_flags);
    sql_arr_str(&b->json, o.json);
    sql_arr_str(&b->hist, o.history);
    b->n_update++;
    row->state = st;
    row->flags = new_flags;
    free(row->json);
    row->json = o.json;
    o.json = NULL;
    free(row->history);
    row->history = o.history;
    o.history = NULL;
    if (o.catch_json) {
        b->catches = rb_xrealloc(b->catches, (b->n_catch + 1) * sizeof *b->catches);
        b->catch_texts = rb_xrealloc(b->catch_texts, (b->n_catch + 1) * sizeof *b->catch_texts);
        b->catches[b->n_catch] = (rb_pg_new_job){
            .jid = o.catch_jid,
            .queue = rb_xstrdup(row->queue),
            .priority = row->priority,
            .at_ms = now,
            .reserve_s = (int)cfg->server.reserve_for_s,
            .json = o.catch_json,
        };
        b->catch_texts[b->n_catch++] = o.catch_json;
        o.catch_jid = o.catch_json = NULL;
    }
    fail_out_release(&o);
    return 0;
}

/* Writes b inside the open transaction. */
static int batch_write(rb_pg *pg, batch *b, int64_t now, rb_err *err)
{
    if (b->n_catch) {
        int *st = rb_xcalloc(b->n_catch, sizeof *st);
        int rc = rb_pg_push(pg, b->catches, b->n_catch, now, st, err);
        free(st);
        if (rc)
            return rc;
    }
    if (b->failures == 0)
        return 0;
    rb_buf *all[] = {&b->jid,  &b->state, &b->due, &b->flags,
                     &b->json, &b->hist,  &b->del, &b->died};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        sql_arr_end(all[i]);
    char failures[16], shard[16];
    snprintf(failures, sizeof failures, "%d", b->failures);
    snprintf(shard, sizeof shard, "%d", pg->shard);
    const char *params[9] = {b->jid.data,  b->state.data, b->due.data,
                             b->flags.data, b->json.data, b->hist.data,
                             b->del.data,  failures,      shard};
    PGresult *r = sql_run(pg, SQL_FAIL_APPLY, 9, params, err);
    if (!r)
        return err ? err->code : RB_ESTORE;
    PQclear(r);
    /* the children of the jobs that died or were discarded, told at once */
    int rc = 0;
    if (strcmp(b->died.data, "{}"))
        rc = sql_dep_events(pg, b->died.data, RB_DEP_PARENT_DIED, now, err);
    if (!rc && strcmp(b->del.data, "{}"))
        rc = sql_dep_events(pg, b->del.data, RB_DEP_PARENT_DISCARDED, now, err);
    /* the batches of the members that failed, after every job row */
    return rc ? rc : sql_batch_apply_noted(pg, now, err);
}

/* Holder check as docs/protocol.md: a working job belongs to the wid that
 * claimed it; a request from another wid is refused, one without a wid is
 * not checked. FAIL decides in C on the locked rows (rb_job_outcome); the
 * SQL functions of ACK, SNOOZE and EXTEND call rb_holder_status (schema
 * version 13), which test_pg_rules compares with it. */
int rb_pg_fail(rb_pg *pg, const rb_pg_failure *f, size_t n, int64_t now,
               rb_pg_fail_result *res, rb_err *err)
{
    if (n == 0)
        return 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    rb_buf jids = RB_BUF_INIT;
    sql_arr_begin(&jids);
    for (size_t i = 0; i < n; i++)
        sql_arr_str(&jids, f[i].ref.jid);
    sql_arr_end(&jids);
    locked_row *rows = NULL;
    int nrows = 0;
    batch b;
    batch_init(&b);
    if ((rc = sql_begin(pg, err)))
        goto out;
    const char *params[1] = {jids.data};
    PGresult *r = sql_run(pg, SQL_LOCK_JOBS, 1, params, err);
    if (!r) {
        rc = err ? err->code : RB_ESTORE;
        goto fail;
    }
    rows = read_locked(r, &nrows);
    PQclear(r);
    for (size_t i = 0; i < n; i++) {
        locked_row *row = NULL;
        for (int k = 0; k < nrows && !row; k++)
            if (rows[k].state && !strcmp(rows[k].jid, f[i].ref.jid))
                row = &rows[k];
        /* the engine's rule (engine/job_state.h), as the SQL functions apply it */
        res[i] = (rb_pg_fail_result){
            .status = row ? rb_job_outcome(RB_VERB_FAIL, true, (rb_job_state)row->state,
                                           row->flags, row->wid, f[i].ref.wid)
                          : RB_JOB_MISSING};
        if (res[i].status == RB_JOB_DONE &&
            (rc = fail_row(pg, &b, row, &f[i], now, 0, &res[i], err)))
            goto fail;
    }
    if ((rc = batch_write(pg, &b, now, err)) || (rc = sql_commit(pg, err)))
        goto fail;
    goto out;
fail:
    sql_rollback(pg);
out:
    batch_release(&b);
    locked_free(rows, nrows);
    rb_buf_release(&jids);
    return rc;
}

int rb_pg_reap(rb_pg *pg, int64_t now, int limit, rb_pg_fail_result *res, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    locked_row *rows = NULL;
    int nrows = 0;
    batch b;
    batch_init(&b);
    if ((rc = sql_exec(pg, "BEGIN", err)))
        goto out;
    PGresult *r = sql_run_now_limit(pg, SQL_LOCK_EXPIRED, now, limit, err);
    if (!r) {
        rc = err ? err->code : RB_ESTORE;
        goto fail;
    }
    rows = read_locked(r, &nrows);
    PQclear(r);
    const rb_pg_failure expired = {
        .in = {.errtype = "ReservationExpired",
               .message = "the job's reservation expired before ACK or FAIL"},
    };
    for (int i = 0; i < nrows; i++)
        if ((rc = fail_row(pg, &b, &rows[i], &expired, now, RB_JOB_EXPIRED,
                           res ? &res[i] : NULL, err)))
            goto fail;
    if ((rc = batch_write(pg, &b, now, err)) || (rc = sql_exec(pg, "COMMIT", err)))
        goto fail;
    if (n)
        *n = nrows;
    goto out;
fail:
    sql_rollback(pg);
out:
    batch_release(&b);
    locked_free(rows, nrows);
    return rc;
}
