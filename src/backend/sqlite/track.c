/* The single-node backend's progress records (backend/sqlite/track.h). */
#include "backend/sqlite/track.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/debounce.h"
#include "backend/sqlite/jobs.h"
#include "backend/sqlite/writer.h"
#include "common/buf.h"
#include "common/list.h"
#include "common/timeutil.h"
#include "engine/engine.h"
#include "common/log.h"
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

/* One record. Invariant: in the table; in the ended list iff ended_ms > 0
 * (ordered by ended_ms, as records end in time order); its meta row says
 * what it holds. */
typedef struct rec {
    void *hnext;
    rb_link elink;      /* ended list */
    int percent;        /* -1: never set */
    char *desc;         /* NULL: never set; owned */
    int64_t updated_ms; /* last TRACK SET, 0: none */
    int64_t ended_ms;   /* 0 while the job lives */
    int64_t row_id;     /* the ended job's row (an ACK's end is not redone by its delete) */
    rb_track_state state; /* when ended: success or dead */
    char jid[];
} rec;

struct rb_sq_track {
    rb_table by_jid; /* rec */
    rb_list ended;   /* rec by elink, oldest end first */
};

static const char *rec_jid(const void *e)
{
    return ((const rec *)e)->jid;
}

static void free_rec(void *e, void *arg)
{
    (void)arg;
    rec *r = e;
    free(r->desc);
    free(r);
}

void rb_sq_track_init(rb_sq *sq)
{
    sq->track = rb_xcalloc(1, sizeof *sq->track);
    rb_table_init(&sq->track->by_jid, offsetof(rec, hnext), rec_jid);
}

void rb_sq_track_release(rb_sq *sq)
{
    if (!sq->track)
        return;
    rb_table_each(&sq->track->by_jid, free_rec, NULL);
    rb_table_release(&sq->track->by_jid);
    free(sq->track);
    sq->track = NULL;
}

void rb_sq_track_flush(rb_sq *sq)
{
    rb_sq_track_release(sq);
    rb_sq_track_init(sq);
}

static rec *rec_new(rb_sq_track *t, const char *jid)
{
    size_t n = strlen(jid) + 1;
    rec *r = rb_xcalloc(1, sizeof *r + n);
    memcpy(r->jid, jid, n);
    r->percent = -1;
    rb_table_put(&t->by_jid, r);
    return r;
}

/* Writes r's meta row, or deletes it (gone). */
static void save(rb_sq *sq, const rec *r, bool gone)
{
    rb_buf key = RB_BUF_INIT;
    rb_buf_printf(&key, RB_MEM_TRACK_KEY "%s", r->jid);
    if (gone) {
        rb_writer_meta(sq->writer, rb_buf_str(&key), NULL);
    } else {
        json_t *o = json_pack("{s:I, s:I, s:I, s:i, s:I}", "p", (json_int_t)r->percent, "u",
                              (json_int_t)r->updated_ms, "e", (json_int_t)r->ended_ms, "s",
                              (int)r->state, "r", (json_int_t)r->row_id);
        if (r->desc)
            json_object_set_new(o, "d", json_string(r->desc));
        char *v = json_dumps(o, JSON_COMPACT);
        rb_writer_meta(sq->writer, rb_buf_str(&key), v);
        free(v);
        json_decref(o);
    }
    rb_buf_release(&key);
}

/* Takes r out and frees it; its row deleted when save_it. */
static void drop(rb_sq *sq, rec *r, bool save_it)
{
    rb_sq_track *t = sq->track;
    if (r->ended_ms)
        rb_list_remove(&t->ended, &r->elink);
    rb_table_del(&t->by_jid, r);
    if (save_it)
        save(sq, r, true);
    free_rec(r, NULL);
}

/* Ended records past their retention dropped, oldest first. */
static void sweep(rb_sq *sq, int64_t now)
{
    rb_sq_track *t = sq->track;
    while (t->ended.head) {
        rec *r = rb_container_of(t->ended.head, rec, elink);
        if (r->ended_ms + RB_TRACK_RETENTION_MS > now)
            break;
        drop(sq, r, true);
    }
}

/* --- start-up --- */

void rb_sq_track_load(rb_sq *sq, const char *key, const char *value)
{
    size_t n = strlen(RB_MEM_TRACK_KEY);
    if (strncmp(key, RB_MEM_TRACK_KEY, n) != 0 || !key[n])
        return;
    json_t *o = value ? json_loads(value, 0, NULL) : NULL;
    if (!json_is_object(o) || rb_table_get(&sq->track->by_jid, key + n)) {
        rb_log(RB_LOG_WARN, "skipping unreadable stored progress record '%s'", key);
        json_decref(o);
        return;
    }
    rec *r = rec_new(sq->track, key + n);
    r->percent = (int)json_integer_value(json_object_get(o, "p"));
    r->updated_ms = json_integer_value(json_object_get(o, "u"));
    r->ended_ms = json_integer_value(json_object_get(o, "e"));
    r->state = (rb_track_state)json_integer_value(json_object_get(o, "s"));
    r->row_id = json_integer_value(json_object_get(o, "r"));
    const char *d = json_string_value(json_object_get(o, "d"));
    r->desc = d ? rb_xstrdup(d) : NULL;
    json_decref(o);
}

typedef struct rebuild {
    rb_sq *sq;
    rec **v;
    size_t n, cap;
} rebuild;

static void collect(void *e, void *arg)
{
    rebuild *b = arg;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->v = rb_xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n++] = e;
}

static int by_end(const void *a, const void *b)
{
    const rec *x = *(rec *const *)a, *y = *(rec *const *)b;
    return (x->ended_ms > y->ended_ms) - (x->ended_ms < y->ended_ms);
}

void rb_sq_track_rebuild(rb_sq *sq)
{
    rebuild b = {sq, NULL, 0, 0};
    rb_table_each(&sq->track->by_jid, collect, &b);
    if (b.n)
        qsort(b.v, b.n, sizeof *b.v, by_end);
    for (size_t i = 0; i < b.n; i++) {
        rec *r = b.v[i];
        if (r->ended_ms)
            rb_list_append(&sq->track->ended, &r->elink);
        else if (!rb_jobs_find(&sq->jobs, r->jid)) /* cannot happen: defensive */
            drop(sq, r, true);
    }
    free(b.v);
    sweep(sq, rb_now_ms());
}

/* --- a job's end --- */

void rb_sq_track_ended(rb_sq *sq, const rb_job *j, rb_track_state s, int64_t now)
{
    rb_sq_track *t = sq->track;
    rec *r = rb_table_get(&t->by_jid, j->jid);
    /* Only a job that reported progress is remembered: faktory-rs tracks
     * every job, and a record per ended job would cost a row and memory
     * for each ACK (the rest answer "unknown" once they are gone). */
    if (!r || (r->ended_ms && r->row_id == j->row_id))
        return; /* none, or ACKed: its delete keeps the success */
    if (r->ended_ms)
        rb_list_remove(&t->ended, &r->elink);
    r->ended_ms = now;
    r->row_id = j->row_id;
    r->state = s;
    rb_list_append(&t->ended, &r->elink);
    save(sq, r, false);
    sweep(sq, now);
}

/* --- TRACK SET and GET --- */

/* When j entered its current state, as far as its row tells. */
static int64_t state_ms(const rb_job *j)
{
    if (j->state == RB_JOB_WORKING)
        return j->timer.at_ms - (int64_t)j->reserve_s * 1000;
    if (j->state == RB_JOB_ENQUEUED)
        return j->timer.at_ms;
    return j->created_us ? j->created_us / 1000 : j->first_ms;
}

/* What TRACK GET and SET go by (engine/track.h). */
static rb_track_seen seen_of(const rb_job *j, const rec *r)
{
    rb_track_seen v = {0};
    if (j && j->state != RB_JOB_PENDING)
        v = (rb_track_seen){.live = true, .job_state = j->state,
                            .tracked = rb_track_enabled_text(j->json), .state_ms = state_ms(j)};
    if (r) {
        v.has_rec = true;
        v.percent = r->percent;
        v.desc = r->desc;
        v.updated_ms = r->updated_ms;
        v.ended_ms = r->ended_ms;
        v.ended = r->state;
    }
    return v;
}

static void track_get(rb_sq *sq, rb_eng_op *op)
{
    const char *jid = op->u.track.jid;
    rec *r = rb_table_get(&sq->track->by_jid, jid);
    rb_job *j = rb_jobs_find(&sq->jobs, jid);
    rb_debounce_alias a;
    if (!j && !r && rb_sq_debounce_alias(sq, jid, op->now, &a)) {
        /* a push merged into another job: that job's progress, under jid */
        r = rb_table_get(&sq->track->by_jid, a.into);
        j = rb_jobs_find(&sq->jobs, a.into);
        rb_debounce_alias_release(&a);
    }
    rb_track_seen v = seen_of(j, r);
    /* a read sweeps nothing: a later end or SET will */
    op->u.track.reply = rb_track_get(jid, &v, op->now);
    rb_eng_complete(sq->eng, op);
}

static void track_set(rb_sq *sq, rb_eng_op *op)
{
    const rb_track_set *in = &op->u.track.set;
    rb_sq_track *t = sq->track;
    rb_job *j = rb_jobs_find(&sq->jobs, in->jid);
    bool live = j && j->state != RB_JOB_PENDING;
    sweep(sq, op->now);
    rec *r = rb_table_get(&t->by_jid, in->jid); /* after the sweep, which may drop it */
    rb_track_seen v = seen_of(j, r);
    if (!rb_track_set_stores(&v, op->now)) {
        rb_eng_complete(sq->eng, op); /* untracked or unknown: +OK, nothing kept */
        return;
    }
    if (!r)
        r = rec_new(t, in->jid);
    if (live && r->ended_ms) { /* a job pushed again under an ended record's jid */
        rb_list_remove(&t->ended, &r->elink);
        r->ended_ms = 0;
    }
    if (in->has_percent)
        r->percent = in->percent;
    if (in->desc) {
        free(r->desc);
        r->desc = rb_xstrdup(in->desc);
    }
    r->updated_ms = op->now;
    save(sq, r, false);
    if (live && in->reserve_until && j->state == RB_JOB_WORKING) {
        int64_t end = rb_track_lease_end(op->now, j->timer.at_ms, in->reserve_until);
        if (end > j->timer.at_ms) {
            rb_jobs_set_state(&sq->jobs, j, RB_JOB_WORKING, end);
            rb_sq_persist(sq, j);
        }
    }
    sweep(sq, op->now);
    rb_sq_after_commit(sq, op);
}

void rb_sq_track_op(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    if (op->u.track.get)
        track_get(sq, op);
    else
        track_set(sq, op);
}
