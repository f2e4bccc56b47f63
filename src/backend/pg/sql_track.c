/* The PostgreSQL engine's progress tracking (docs/enterprise.md "Tracking"):
 * TRACK GET and SET on rb_track and the job's row, and the sweep of ended
 * records. The rules are engine/track.h's; the records' ends are written
 * by the ACK statement (SQL_ACK; rb_ack_batch for nodes of earlier releases
 * and workflow jobs) and a trigger on rb_jobs (sql_schema.c, version 9). */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

static int fail_rc(const rb_err *err)
{
    return err && err->code ? err->code : RB_ESTORE;
}

/* The columns both statements read, from c0 on: the job's state, json,
 * due_ms, reserve_s, first_ms, created_at (NULL when no job); then from
 * c0 + 6 the record's percent, descr, updated_ms, ended_ms, state (NULL
 * when none). */
#define JOB_COLS "j.state, j.json, j.due_ms, j.reserve_s, j.first_ms, j.json::json ->> 'created_at'"
#define REC_COLS "t.percent, t.descr, t.updated_ms, t.ended_ms, t.state"

/* When the job of row i entered its state, as far as its row tells:
 * claimed (lease end less its length), enqueued, else created. */
static int64_t state_ms(const PGresult *r, int i)
{
    int st = (int)sql_int(r, i, 0);
    int64_t due = sql_int(r, i, 2);
    if (st == RB_JOB_WORKING)
        return due - sql_int(r, i, 3) * 1000;
    if (st == RB_JOB_ENQUEUED)
        return due;
    int64_t ms = 0;
    if (!PQgetisnull(r, i, 5) && !rb_time_parse_rfc3339(PQgetvalue(r, i, 5), &ms) && ms > 0)
        return ms;
    return sql_int(r, i, 4);
}

/* Row 0's job (columns from 0) and record (from rec_col) as the engine
 * sees them; strings borrowed from r. */
static rb_track_seen seen_of(const PGresult *r, bool has_job, int rec_col)
{
    rb_track_seen v = {0};
    if (has_job && !PQgetisnull(r, 0, 0)) {
        v.live = true;
        v.job_state = (int)sql_int(r, 0, 0);
        v.tracked = rb_track_enabled_text(PQgetvalue(r, 0, 1));
        v.state_ms = state_ms(r, 0);
    }
    if (rec_col >= 0 && !PQgetisnull(r, 0, rec_col)) {
        v.has_rec = true;
        v.percent = (int)sql_int(r, 0, rec_col);
        v.desc = PQgetisnull(r, 0, rec_col + 1) ? NULL : PQgetvalue(r, 0, rec_col + 1);
        v.updated_ms = sql_int(r, 0, rec_col + 2);
        v.ended_ms = sql_int(r, 0, rec_col + 3);
        v.ended = (rb_track_state)sql_int(r, 0, rec_col + 4);
    }
    return v;
}

int rb_pg_track_get(rb_pg *pg, const char *jid, int64_t now, json_t **reply, rb_err *err)
{
    *reply = NULL;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char cut[24];
    snprintf(cut, sizeof cut, "%lld", (long long)(now - RB_DEBOUNCE_RETENTION_MS));
    const char *params[2] = {jid, cut};
    PGresult *r = sql_query(pg,
                            "SELECT " JOB_COLS ", " REC_COLS " FROM (SELECT CASE WHEN"
                            " EXISTS (SELECT 1 FROM rb_jobs WHERE jid = $1) OR EXISTS (SELECT 1"
                            " FROM rb_track WHERE jid = $1) THEN $1 ELSE coalesce((SELECT"
                            " a.into_jid FROM rb_debounced a WHERE a.jid = $1 AND (a.ended_ms = 0"
                            " OR a.ended_ms > $2::bigint)), $1) END AS jid) k" /* an alias: its job's */
                            " LEFT JOIN rb_jobs j ON j.jid = k.jid"
                            " LEFT JOIN rb_track t ON t.jid = k.jid",
                            2, params, err);
    if (!r)
        return fail_rc(err);
    rb_track_seen v = seen_of(r, true, 6);
    *reply = rb_track_get(jid, &v, now);
    PQclear(r);
    return 0;
}

int rb_pg_track_set(rb_pg *pg, const rb_track_set *in, int64_t now, rb_err *err)
{
    int rc = sql_ensure(pg, err);
    if (rc || (rc = sql_begin(pg, err)))
        return rc;
    const char *p1[1] = {in->jid};
    PGresult *job = NULL, *rec = NULL, *w = NULL;
    /* lock order as ACK's: the job row, then its record */
    job = sql_query(pg, "SELECT " JOB_COLS ", j.trk FROM rb_jobs j WHERE j.jid = $1 FOR UPDATE",
                    1, p1, err);
    if (!job || !(rec = sql_query(pg, "SELECT " REC_COLS " FROM rb_track t WHERE t.jid = $1"
                                      " FOR UPDATE", 1, p1, err))) {
        rc = fail_rc(err);
        goto out;
    }
    bool has_job = PQntuples(job) > 0, has_rec = PQntuples(rec) > 0;
    rb_track_seen v = has_job ? seen_of(job, true, -1) : (rb_track_seen){0};
    if (has_rec) {
        rb_track_seen rv = seen_of(rec, false, 0);
        rv.live = v.live;
        rv.job_state = v.job_state;
        rv.tracked = v.tracked;
        rv.state_ms = v.state_ms;
        v = rv;
    }
    if (!rb_track_set_stores(&v, now)) {
        rc = sql_commit(pg, err); /* untracked or unknown: nothing kept */
        goto out;
    }
    char pct[16], nowtxt[24];
    snprintf(pct, sizeof pct, "%d", in->percent);
    snprintf(nowtxt, sizeof nowtxt, "%lld", (long long)now);
    const char *pw[5] = {in->jid, in->has_percent ? pct : NULL, in->desc, nowtxt,
                         v.live ? "t" : "f"};
    /* a live job's SET makes an ended record (its jid pushed again) live */
    w = sql_query(pg,
                  "INSERT INTO rb_track AS t (jid, percent, descr, updated_ms)"
                  " VALUES ($1, coalesce($2::int, -1), $3, $4::bigint)"
                  " ON CONFLICT (jid) DO UPDATE SET percent = coalesce($2::int, t.percent),"
                  "  descr = coalesce($3, t.descr), updated_ms = $4::bigint,"
                  "  ended_ms = CASE WHEN $5::boolean THEN 0 ELSE t.ended_ms END,"
                  "  state = CASE WHEN $5::boolean THEN 0 ELSE t.state END",
                  5, pw, err);
    if (!w) {
        rc = fail_rc(err);
        goto out;
    }
    PQclear(w);
    w = NULL;
    if (v.live) {
        int64_t due = sql_int(job, 0, 2), end = due;
        if (in->reserve_until && v.job_state == RB_JOB_WORKING)
            end = rb_track_lease_end(now, due, in->reserve_until);
        bool marked = PQgetvalue(job, 0, 6)[0] == 't';
        if (end != due || !marked) {
            char endtxt[24];
            snprintf(endtxt, sizeof endtxt, "%lld", (long long)end);
            const char *pj[2] = {in->jid, endtxt};
            w = sql_query(pg, "UPDATE rb_jobs SET trk = true, due_ms = $2::bigint WHERE jid = $1",
                          2, pj, err);
            if (!w) {
                rc = fail_rc(err);
                goto out;
            }
        }
    }
    rc = sql_commit(pg, err);
out:
    PQclear(w);
    PQclear(rec);
    PQclear(job);
    if (rc)
        sql_rollback(pg);
    return rc;
}

int rb_pg_track_expire(rb_pg *pg, int64_t now, int limit, int *n, rb_err *err)
{
    if (n)
        *n = 0;
    int rc = sql_ensure(pg, err);
    if (rc)
        return rc;
    char cut[24], lim[16];
    snprintf(cut, sizeof cut, "%lld", (long long)(now - RB_TRACK_RETENTION_MS));
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[2] = {cut, lim};
    PGresult *r = sql_query(pg,
                            "DELETE FROM rb_track d USING (SELECT jid FROM rb_track"
                            "  WHERE ended_ms > 0 AND ended_ms <= $1::bigint ORDER BY ended_ms"
                            "  LIMIT $2::int FOR UPDATE SKIP LOCKED) x WHERE d.jid = x.jid",
                            2, params, err);
    if (!r)
        return fail_rc(err);
    if (n)
        *n = atoi(PQcmdTuples(r));
    PQclear(r);
    return 0;
}
