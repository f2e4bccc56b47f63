/* The single-node backend's debounced jobs (backend/sqlite/debounce.h). */
#include "backend/sqlite/debounce.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/groups.h"
#include "backend/sqlite/sq.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/list.h"
#include "common/log.h"
#include "engine/group.h"
#include "engine/metrics.h"

/* A debounced job's record. Invariants: in by_jid; in by_key exactly when
 * pending (its job scheduled or enqueued, or PENDING in its push's commit);
 * in the ended list exactly when ended_ms > 0 (oldest end first); aliases
 * holds at most RB_DEBOUNCE_ALIASES, oldest first; its meta row says what
 * it holds. */
typedef struct rec {
    void *jnext, *knext; /* by_jid, by_key chains */
    rb_link elink;       /* ended list */
    rb_list aliases;     /* alias by link, oldest first */
    char *key;           /* the push's key; owned */
    int64_t first_ms;    /* its first push */
    int64_t merged;      /* pushes merged into it */
    int64_t ended_ms;    /* 0 while its job lives */
    bool pending;
    char hash[RB_DEBOUNCE_HASH_LEN];
    char jid[];
} rec;

/* A push merged into a record's job. */
typedef struct alias {
    void *hnext;
    rb_link link;     /* rec->aliases */
    rec *into;
    int64_t merged_ms;
    char jid[];
} alias;

struct rb_sq_debounce {
    rb_table by_jid, by_key; /* rec */
    rb_table aliases;        /* alias, by its jid */
    rb_list ended;           /* rec by elink */
    int64_t merged;          /* all time (counter "total_debounced") */
    /* loaded aliases whose record was not seen yet (the rows come in key
     * order): attached by rb_sq_debounce_rebuild */
    json_t *loose;
};

static const char *rec_jid(const void *e)
{
    return ((const rec *)e)->jid;
}

static const char *rec_hash(const void *e)
{
    return ((const rec *)e)->hash;
}

static const char *alias_jid(const void *e)
{
    return ((const alias *)e)->jid;
}

static void free_rec(void *e, void *arg)
{
    (void)arg;
    rec *r = e;
    free(r->key);
    free(r);
}

static void free_alias(void *e, void *arg)
{
    (void)arg;
    free(e);
}

static void tables_init(rb_sq_debounce *d)
{
    rb_table_init(&d->by_jid, offsetof(rec, jnext), rec_jid);
    rb_table_init(&d->by_key, offsetof(rec, knext), rec_hash);
    rb_table_init(&d->aliases, offsetof(alias, hnext), alias_jid);
    d->ended = (rb_list){0};
    d->loose = json_object();
}

static void tables_release(rb_sq_debounce *d)
{
    rb_table_each(&d->aliases, free_alias, NULL);
    rb_table_each(&d->by_jid, free_rec, NULL);
    rb_table_release(&d->aliases);
    rb_table_release(&d->by_jid);
    rb_table_release(&d->by_key);
    json_decref(d->loose);
    d->loose = NULL;
}

void rb_sq_debounce_init(rb_sq *sq)
{
    sq->debounce = rb_xcalloc(1, sizeof *sq->debounce);
    tables_init(sq->debounce);
}

void rb_sq_debounce_release(rb_sq *sq)
{
    if (!sq->debounce)
        return;
    tables_release(sq->debounce);
    free(sq->debounce);
    sq->debounce = NULL;
}

void rb_sq_debounce_flush(rb_sq *sq)
{
    tables_release(sq->debounce);
    tables_init(sq->debounce);
    sq->debounce->merged = 0;
}

/* --- rows --- */

static void save_rec(rb_sq *sq, const rec *r, bool gone)
{
    rb_buf key = RB_BUF_INIT;
    rb_buf_printf(&key, RB_SQ_DEBOUNCE_KEY "%s", r->jid);
    if (gone) {
        rb_writer_meta(sq->writer, rb_buf_str(&key), NULL);
    } else {
        json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:b, s:I}", "h", r->hash, "k", r->key, "f",
                              (json_int_t)r->first_ms, "m", (json_int_t)r->merged, "p",
                              r->pending, "e", (json_int_t)r->ended_ms);
        char *v = json_dumps(o, JSON_COMPACT);
        rb_writer_meta(sq->writer, rb_buf_str(&key), v);
        free(v);
        json_decref(o);
    }
    rb_buf_release(&key);
}

static void save_alias(rb_sq *sq, const alias *a, bool gone)
{
    rb_buf key = RB_BUF_INIT, v = RB_BUF_INIT;
    rb_buf_printf(&key, RB_SQ_DEBOUNCED_KEY "%s", a->jid);
    if (!gone)
        rb_buf_printf(&v, "%lld %s", (long long)a->merged_ms, a->into->jid);
    rb_writer_meta(sq->writer, rb_buf_str(&key), gone ? NULL : rb_buf_str(&v));
    rb_buf_release(&key);
    rb_buf_release(&v);
}

/* --- the tables --- */

static rec *rec_new(rb_sq_debounce *d, const char *jid, const char *hash, const char *key)
{
    size_t n = strlen(jid) + 1;
    rec *r = rb_xcalloc(1, sizeof *r + n);
    memcpy(r->jid, jid, n);
    snprintf(r->hash, sizeof r->hash, "%s", hash);
    r->key = rb_xstrdup(key);
    rb_table_put(&d->by_jid, r);
    return r;
}

static void alias_drop(rb_sq *sq, alias *a, bool save_it)
{
    rb_list_remove(&a->into->aliases, &a->link);
    rb_table_del(&sq->debounce->aliases, a);
    if (save_it)
        save_alias(sq, a, true);
    free(a);
}

/* An alias of r, appended (the oldest dropped beyond the cap). */
static alias *alias_add(rb_sq *sq, rec *r, const char *jid, int64_t ms, bool save_it)
{
    rb_sq_debounce *d = sq->debounce;
    alias *old = rb_table_get(&d->aliases, jid);
    if (old) /* a jid merged before (into an ended job): it now means r */
        alias_drop(sq, old, false);
    size_t n = strlen(jid) + 1;
    alias *a = rb_xcalloc(1, sizeof *a + n);
    memcpy(a->jid, jid, n);
    a->into = r;
    a->merged_ms = ms;
    rb_table_put(&d->aliases, a);
    rb_list_append(&r->aliases, &a->link);
    if (save_it)
        save_alias(sq, a, false);
    while (r->aliases.size > RB_DEBOUNCE_ALIASES)
        alias_drop(sq, rb_container_of(r->aliases.head, alias, link), true);
    return a;
}

static void unpend(rb_sq_debounce *d, rec *r)
{
    if (r->pending)
        rb_table_del(&d->by_key, r);
    r->pending = false;
}

/* r and its aliases forgotten, with their rows when save_it. */
static void rec_drop(rb_sq *sq, rec *r, bool save_it)
{
    rb_sq_debounce *d = sq->debounce;
    while (r->aliases.head)
        alias_drop(sq, rb_container_of(r->aliases.head, alias, link), save_it);
    unpend(d, r);
    if (r->ended_ms)
        rb_list_remove(&d->ended, &r->elink);
    rb_table_del(&d->by_jid, r);
    if (save_it)
        save_rec(sq, r, true);
    free_rec(r, NULL);
}

/* Records ended more than the retention ago dropped, oldest first. */
static void sweep(rb_sq *sq, int64_t now)
{
    rb_sq_debounce *d = sq->debounce;
    while (d->ended.head) {
        rec *r = rb_container_of(d->ended.head, rec, elink);
        if (r->ended_ms + RB_DEBOUNCE_RETENTION_MS > now)
            break;
        rec_drop(sq, r, true);
    }
}

static void end_rec(rb_sq *sq, rec *r, int64_t now)
{
    unpend(sq->debounce, r);
    if (!r->aliases.size) { /* nothing to answer for */
        rec_drop(sq, r, true);
        return;
    }
    r->ended_ms = now;
    rb_list_append(&sq->debounce->ended, &r->elink);
    save_rec(sq, r, false);
}

/* --- start-up --- */

void rb_sq_debounce_load(rb_sq *sq, const char *key, const char *value)
{
    rb_sq_debounce *d = sq->debounce;
    size_t nr = strlen(RB_SQ_DEBOUNCE_KEY), na = strlen(RB_SQ_DEBOUNCED_KEY);
    if (!strncmp(key, RB_SQ_DEBOUNCED_KEY, na)) {
        long long ms;
        int used = 0;
        if (!value || !key[na] || sscanf(value, "%lld %n", &ms, &used) != 1 || !value[used]) {
            rb_log(RB_LOG_WARN, "skipping unreadable stored debounce alias '%s'", key);
            return;
        }
        json_object_set_new(d->loose, key + na,
                            json_pack("[I, s]", (json_int_t)ms, value + used));
        return;
    }
    if (strncmp(key, RB_SQ_DEBOUNCE_KEY, nr))
        return;
    json_t *o = value ? json_loads(value, 0, NULL) : NULL;
    const char *hash = json_string_value(json_object_get(o, "h"));
    const char *k = json_string_value(json_object_get(o, "k"));
    if (!key[nr] || !hash || strlen(hash) != RB_DEBOUNCE_HASH_LEN - 1 || !k ||
        rb_table_get(&d->by_jid, key + nr)) {
        rb_log(RB_LOG_WARN, "skipping unreadable stored debounce record '%s'", key);
        json_decref(o);
        return;
    }
    rec *r = rec_new(d, key + nr, hash, k);
    r->first_ms = json_integer_value(json_object_get(o, "f"));
    r->merged = json_integer_value(json_object_get(o, "m"));
    r->pending = json_is_true(json_object_get(o, "p")); /* checked by the rebuild */
    r->ended_ms = json_integer_value(json_object_get(o, "e"));
    json_decref(o);
}

void rb_sq_debounce_load_counter(rb_sq *sq, const char *name, int64_t value)
{
    if (!strcmp(name, "total_debounced"))
        sq->debounce->merged = value;
}

typedef struct rebuild {
    rb_sq *sq;
    int64_t now;
    rec **v;
    size_t n;
} rebuild;

static void collect(void *e, void *arg)
{
    rebuild *b = arg;
    b->v[b->n++] = e;
}

static int by_end(const void *a, const void *b)
{
    const rec *x = *(rec *const *)a, *y = *(rec *const *)b;
    return (x->ended_ms > y->ended_ms) - (x->ended_ms < y->ended_ms);
}

typedef struct loose {
    const char *jid, *into;
    int64_t ms;
} loose;

static int by_merge(const void *a, const void *b)
{
    const loose *x = a, *y = b;
    return (x->ms > y->ms) - (x->ms < y->ms);
}

void rb_sq_debounce_rebuild(rb_sq *sq, int64_t now)
{
    rb_sq_debounce *d = sq->debounce;
    /* the aliases, oldest first, to their records */
    size_t n = json_object_size(d->loose), k = 0;
    loose *ls = rb_xcalloc(n + 1, sizeof *ls);
    const char *jid;
    json_t *v;
    json_object_foreach(d->loose, jid, v)
        ls[k++] = (loose){jid, json_string_value(json_array_get(v, 1)),
                          json_integer_value(json_array_get(v, 0))};
    qsort(ls, n, sizeof *ls, by_merge);
    for (size_t i = 0; i < n; i++) {
        rec *r = rb_table_get(&d->by_jid, ls[i].into);
        if (r) {
            alias_add(sq, r, ls[i].jid, ls[i].ms, false);
        } else { /* its record is gone: the row goes */
            rb_buf key = RB_BUF_INIT;
            rb_buf_printf(&key, RB_SQ_DEBOUNCED_KEY "%s", ls[i].jid);
            rb_writer_meta(sq->writer, rb_buf_str(&key), NULL);
            rb_buf_release(&key);
        }
    }
    free(ls);
    json_object_clear(d->loose);
    /* each record checked against its job, the ended ones listed by end */
    rebuild b = {sq, now, rb_xcalloc(d->by_jid.size + 1, sizeof *b.v), 0};
    rb_table_each(&d->by_jid, collect, &b);
    qsort(b.v, b.n, sizeof *b.v, by_end);
    for (size_t i = 0; i < b.n; i++) {
        rec *r = b.v[i];
        rb_job *j = rb_jobs_find(&sq->jobs, r->jid);
        if (!j && !r->ended_ms) { /* it ended unseen (its end's commit came first) */
            r->pending = false;
            end_rec(sq, r, now);
            continue;
        }
        if (r->ended_ms) {
            rb_list_append(&d->ended, &r->elink);
            continue;
        }
        bool waits = j->state == RB_JOB_SCHEDULED || j->state == RB_JOB_ENQUEUED;
        if (r->pending && waits && !rb_table_get(&d->by_key, r->hash))
            rb_table_put(&d->by_key, r);
        else
            r->pending = false;
    }
    free(b.v);
    sweep(sq, now);
    if (d->by_key.size)
        rb_log(RB_LOG_INFO, "recovered %zu pending debounced jobs", d->by_key.size);
}

/* --- PUSH --- */

/* j (not ENQUEUED) into the group its text names now. */
static void regroup(rb_sq *sq, rb_job *j, const json_t *job)
{
    rb_sq_group_of_json(sq, j, job);
}

bool rb_sq_debounce_merge(rb_sq *sq, const json_t *job, const rb_debounce_spec *spec,
                          int64_t now)
{
    rb_sq_debounce *d = sq->debounce;
    char hash[RB_DEBOUNCE_HASH_LEN];
    rec *r = rb_table_get(&d->by_key, rb_debounce_hash(job, spec->key, hash));
    rb_job *j = r ? rb_jobs_find(&sq->jobs, r->jid) : NULL;
    const char *jid = json_string_value(json_object_get(job, "jid"));
    if (!j || !rb_debounce_mergeable(j->state))
        return false;
    rb_job *other = rb_jobs_find(&sq->jobs, jid);
    if (other && other != j)
        return false; /* its jid is another job's: refused as taken */
    char *text = rb_debounce_merge_text(j->json, job);
    if (!text)
        return false;
    free(j->json);
    j->json = text;
    int64_t at = rb_debounce_run_at(spec, now, r->first_ms);
    const char *g = NULL;
    rb_group_of_job(job, &g, NULL);
    const char *was = rb_job_group_name(j);
    bool moved = strcmp(g ? g : "", was ? was : "") != 0;
    if (j->state == RB_JOB_PENDING) {
        regroup(sq, j, job);
        j->timer.at_ms = at > now ? at : now;
    } else if (j->state == RB_JOB_ENQUEUED && at <= now && !moved) {
        /* stays where it is in its queue */
    } else {
        rb_jobs_set_state(&sq->jobs, j, RB_JOB_SCHEDULED, at > now ? at : now);
        regroup(sq, j, job);
        if (at <= now)
            rb_sq_enqueue(sq, j, now, now);
    }
    rb_sq_unique_gone(sq, j); /* the expiry the last push names */
    rb_sq_unique_pushed(sq, j, job, now);
    rb_sq_persist(sq, j);
    if (strcmp(jid, j->jid)) {
        alias *a = rb_table_get(&d->aliases, jid);
        if (!a || a->into != r)
            alias_add(sq, r, jid, now, true);
    }
    r->merged++;
    save_rec(sq, r, false);
    d->merged++;
    rb_writer_counter(sq->writer, "total_debounced", d->merged);
    rb_job_metric(sq->metrics, RB_M_DEBOUNCED, j);
    return true;
}

void rb_sq_debounce_pushed(rb_sq *sq, rb_job *j, const json_t *job, const rb_debounce_spec *spec,
                           int64_t now)
{
    rb_sq_debounce *d = sq->debounce;
    char hash[RB_DEBOUNCE_HASH_LEN];
    rb_debounce_hash(job, spec->key, hash);
    rec *old = rb_table_get(&d->by_jid, j->jid);
    if (old) /* an ended job's record under a jid pushed again */
        rec_drop(sq, old, true);
    rec *stale = rb_table_get(&d->by_key, hash);
    if (stale) /* its job was fetched or is gone: the key is free */
        unpend(d, stale);
    rec *r = rec_new(d, j->jid, hash, spec->key);
    r->first_ms = now;
    r->pending = true;
    rb_table_put(&d->by_key, r);
    j->timer.at_ms = rb_debounce_run_at(spec, now, now);
    j->enq_frac_us = 0;
    j->first_ms = 0;
    rb_sq_persist(sq, j);
    save_rec(sq, r, false);
}

/* --- a job's fetch and end --- */

void rb_sq_debounce_started(rb_sq *sq, const rb_job *j)
{
    rb_sq_debounce *d = sq->debounce;
    if (!d->by_key.size)
        return;
    rec *r = rb_table_get(&d->by_jid, j->jid);
    if (!r || !r->pending)
        return;
    unpend(d, r);
    if (r->aliases.size)
        save_rec(sq, r, false);
    else
        rec_drop(sq, r, true);
}

void rb_sq_debounce_gone(rb_sq *sq, const rb_job *j, int64_t now)
{
    rb_sq_debounce *d = sq->debounce;
    if (!d->by_jid.size)
        return;
    rec *r = rb_table_get(&d->by_jid, j->jid);
    if (r && !r->ended_ms)
        end_rec(sq, r, now);
    sweep(sq, now);
}

void rb_sq_debounce_unpushed(rb_sq *sq, const rb_job *j)
{
    rb_sq_debounce *d = sq->debounce;
    rec *r = d->by_jid.size ? rb_table_get(&d->by_jid, j->jid) : NULL;
    if (r)
        rec_drop(sq, r, false);
}

/* --- reads --- */

rb_debounce_view *rb_sq_debounce_view(const rb_sq *sq, const rb_job *j)
{
    const rb_sq_debounce *d = sq->debounce;
    const rec *r = d->by_key.size ? rb_table_get(&d->by_jid, j->jid) : NULL;
    if (!r || !r->pending)
        return NULL;
    rb_debounce_view *v = rb_xcalloc(1, sizeof *v);
    v->key = rb_xstrdup(r->key);
    v->first_ms = r->first_ms;
    v->runs_ms = j->timer.at_ms;
    v->merged = r->merged;
    if (r->aliases.tail)
        v->last_alias = rb_xstrdup(rb_container_of(r->aliases.tail, alias, link)->jid);
    return v;
}

bool rb_sq_debounce_alias(const rb_sq *sq, const char *jid, int64_t now, rb_debounce_alias *out)
{
    const alias *a = rb_table_get(&sq->debounce->aliases, jid);
    if (!a || (a->into->ended_ms && a->into->ended_ms + RB_DEBOUNCE_RETENTION_MS <= now))
        return false;
    *out = (rb_debounce_alias){rb_xstrdup(a->jid), rb_xstrdup(a->into->jid),
                               rb_xstrdup(a->into->key), a->merged_ms};
    return true;
}

void rb_sq_debounce_info(const rb_sq *sq, json_t *rebound)
{
    json_object_set_new(rebound, "debounce",
                        json_pack("{s:I, s:I}", "pending", (json_int_t)sq->debounce->by_key.size,
                                  "merged", (json_int_t)sq->debounce->merged));
}
