/* The single node's side of export and import (engine/export.h): its
 * SQLite file opened offline through the store (store.h), every row read
 * into memory once, new rows written in one transaction. What a row means
 * as a job view is the single node's storage rule: an enqueued job's text
 * has no enqueued_at (its row's due_ms and due_us are the enqueue time). */
#include "engine/export.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/sqlite/batch.h"
#include "backend/sqlite/deps.h"
#include "backend/sqlite/debounce.h"
#include "backend/sqlite/jobs.h"
#include "backend/sqlite/store.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/job_state.h"

typedef struct sqlite_port {
    rb_port base;
    rb_store *store;
    rb_job_view *jobs; /* every stored job, in the store's (due, seq) order */
    size_t n, cap;
    json_t *by_jid;    /* jid -> index into jobs */
    int64_t max_id, max_seq;
    int64_t processed, failures;
    char **paused; /* the paused queues (meta keys "paused:Q") */
    size_t n_paused;
    rb_port_graph g; /* succeeded records and batches (meta keys); deps derived at open */
    json_t *deb_recs, *deb_aliases; /* the debounce meta rows: jid -> record, alias -> value */
} sqlite_port;

/* A row's text as clients see it: an enqueued job's enqueued_at added. */
static char *view_json(const rb_job_row *r)
{
    if (r->state != RB_JOB_ENQUEUED)
        return rb_xstrdup(r->json);
    json_t *o = json_loads(r->json, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return rb_xstrdup(r->json);
    }
    char ts[RB_TIME_STRLEN];
    json_object_set_new(o, "enqueued_at",
                        json_string(rb_time_format_us(r->due_ms * 1000 + r->due_us, ts)));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static int on_row(void *arg, const rb_job_row *r)
{
    sqlite_port *p = arg;
    if (r->id > p->max_id)
        p->max_id = r->id;
    if ((int64_t)r->seq > p->max_seq)
        p->max_seq = (int64_t)r->seq;
    if (r->state < RB_JOB_SCHEDULED || r->state > RB_JOB_BLOCKED || !r->jid || !r->json ||
        !r->queue || json_object_get(p->by_jid, r->jid))
        return 0; /* what the server skips at start-up (server.c's load_job) */
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->jobs = rb_xrealloc(p->jobs, p->cap * sizeof *p->jobs);
    }
    p->jobs[p->n] = (rb_job_view){
        .jid = rb_xstrdup(r->jid),
        .queue = rb_xstrdup(r->queue),
        .json = view_json(r),
        .history = r->history ? rb_xstrdup(r->history) : NULL,
        .wid = r->wid ? rb_xstrdup(r->wid) : NULL,
        .state = r->state,
        .priority = r->priority,
        .attempts = r->attempts,
        .reserve_s = r->reserve_s,
        .due_ms = r->due_ms,
        .first_ms = r->first_ms,
    };
    json_object_set_new(p->by_jid, r->jid, json_integer((json_int_t)p->n));
    p->n++;
    return 0;
}

static int on_counter(void *arg, const char *name, int64_t value)
{
    sqlite_port *p = arg;
    if (!strcmp(name, "total_processed"))
        p->processed = value;
    else if (!strcmp(name, "total_failures"))
        p->failures = value;
    return 0;
}

static int on_meta(void *arg, const char *key, const char *value)
{
    sqlite_port *p = arg;
    size_t nd = strlen(RB_DEPS_DONE_KEY), nb = strlen(RB_MEM_BATCH_KEY);
    if (!strncmp(key, "paused:", 7)) { /* what server.c's load_meta reads */
        p->paused = rb_xrealloc(p->paused, (p->n_paused + 1) * sizeof *p->paused);
        p->paused[p->n_paused++] = rb_xstrdup(key + 7);
    } else if (!strncmp(key, RB_DEPS_DONE_KEY, nd) && value) { /* rb_deps_load_meta's */
        rb_port_graph_add_done(&p->g, key + nd, strtoll(value, NULL, 10));
    } else if (!strncmp(key, RB_MEM_BATCH_KEY, nb)) { /* rb_sq_batch_load's; unreadable skipped */
        rb_port_graph_add_batch(&p->g, value);
    } else if (!strncmp(key, RB_SQ_DEBOUNCED_KEY, strlen(RB_SQ_DEBOUNCED_KEY)) && value) {
        json_object_set_new(p->deb_aliases, key + strlen(RB_SQ_DEBOUNCED_KEY), json_string(value));
    } else if (!strncmp(key, RB_SQ_DEBOUNCE_KEY, strlen(RB_SQ_DEBOUNCE_KEY)) && value) {
        json_t *o = json_loads(value, 0, NULL);
        if (json_is_object(o))
            json_object_set_new(p->deb_recs, key + strlen(RB_SQ_DEBOUNCE_KEY), o);
        else
            json_decref(o);
    }
    return 0;
}

/* A held job's edges as the server derives them at start-up (deps.c's
 * rebuild_child): the parents its depends_on names that still hold it
 * (rb_dep_parent_holds); the dead ones block it. */
static void derive_dep(sqlite_port *p, const rb_job_view *v)
{
    json_t *job = json_loads(v->json, 0, NULL);
    rb_dep_spec spec = {0};
    if (!job || rb_dep_parse(job, &spec, NULL) || !spec.n) {
        rb_dep_spec_release(&spec);
        json_decref(job);
        return; /* the server releases it at start-up: a file without its dep line */
    }
    const char **ps = rb_xcalloc(spec.n, sizeof *ps);
    size_t n = 0;
    rb_dep_counts c = {0, 0};
    for (size_t i = 0; i < spec.n; i++) {
        json_t *ix = json_object_get(p->by_jid, spec.parents[i]);
        const rb_job_view *pv = ix ? &p->jobs[json_integer_value(ix)] : NULL;
        if (rb_dep_parent_holds(pv ? pv->state : -1, spec.mode, &c))
            ps[n++] = spec.parents[i];
    }
    if (n)
        rb_port_graph_add_dep(&p->g, v->jid, ps, n, spec.mode, (int64_t)c.remaining,
                              (int64_t)c.dead);
    free(ps);
    rb_dep_spec_release(&spec);
    json_decref(job);
}

/* The debounce rows as rb_sq_debounce_rebuild reads them: a record that
 * still holds its key and whose job waits (scheduled or enqueued) is a
 * debounce line; an alias of a stored job, a debounced line. */
static void derive_debounce(sqlite_port *p)
{
    const char *jid;
    json_t *r;
    json_object_foreach(p->deb_recs, jid, r) {
        json_t *ix = json_object_get(p->by_jid, jid);
        const rb_job_view *v = ix ? &p->jobs[json_integer_value(ix)] : NULL;
        const char *h = json_string_value(json_object_get(r, "h"));
        const char *k = json_string_value(json_object_get(r, "k"));
        if (v && h && k && json_is_true(json_object_get(r, "p")) &&
            (v->state == RB_JOB_SCHEDULED || v->state == RB_JOB_ENQUEUED))
            rb_port_graph_add_debounce(&p->g, jid, h, k,
                                       json_integer_value(json_object_get(r, "f")),
                                       json_integer_value(json_object_get(r, "m")));
    }
    json_t *a;
    json_object_foreach(p->deb_aliases, jid, a) {
        long long ms;
        int used = 0;
        const char *val = json_string_value(a);
        if (sscanf(val, "%lld %n", &ms, &used) != 1 || !val[used])
            continue;
        const char *into = val + used;
        const char *k = json_string_value(json_object_get(json_object_get(p->deb_recs, into), "k"));
        if (k && json_object_get(p->by_jid, into))
            rb_port_graph_add_alias(&p->g, jid, into, k, ms);
    }
}

/* g's debounce and debounced lines as the meta rows debounce.c writes:
 * a debounced line whose job has no debounce line (fetched) gets a record
 * that holds no key, which its aliases need. */
static int write_debounce(rb_store *s, const rb_port_graph *g, rb_err *err)
{
    int rc = 0;
    rb_buf key = RB_BUF_INIT, val = RB_BUF_INIT;
    json_t *recs = json_object();
    for (size_t i = 0; i < g->n_debounce; i++) {
        const rb_port_debounce *d = &g->debounce[i];
        json_object_set_new(recs, d->jid,
                            json_pack("{s:s, s:s, s:I, s:I, s:b, s:I}", "h", d->hash, "k", d->key,
                                      "f", (json_int_t)d->first_ms, "m", (json_int_t)d->merged,
                                      "p", 1, "e", (json_int_t)0));
    }
    for (size_t i = 0; i < g->n_aliases; i++) {
        const rb_port_alias *a = &g->aliases[i];
        if (!json_object_get(recs, a->into))
            json_object_set_new(recs, a->into,
                                json_pack("{s:s, s:s, s:I, s:I, s:b, s:I}", "h",
                                          "0000000000000000000000000000000000000000000000000000"
                                          "000000000000",
                                          "k", a->key, "f", (json_int_t)a->merged_ms, "m",
                                          (json_int_t)0, "p", 0, "e", (json_int_t)0));
        rb_buf_reset(&key);
        rb_buf_reset(&val);
        rb_buf_printf(&key, RB_SQ_DEBOUNCED_KEY "%s", a->jid);
        rb_buf_printf(&val, "%lld %s", (long long)a->merged_ms, a->into);
        if ((rc = s->ops->set_meta(s, rb_buf_str(&key), rb_buf_str(&val), err)))
            break;
    }
    const char *jid;
    json_t *r;
    json_object_foreach(recs, jid, r) {
        if (rc)
            break;
        char *text = json_dumps(r, JSON_COMPACT);
        rb_buf_reset(&key);
        rb_buf_printf(&key, RB_SQ_DEBOUNCE_KEY "%s", jid);
        rc = s->ops->set_meta(s, rb_buf_str(&key), text, err);
        free(text);
    }
    json_decref(recs);
    rb_buf_release(&key);
    rb_buf_release(&val);
    return rc;
}

static int sp_graph(rb_port *base, rb_port_graph *g, rb_err *err)
{
    (void)err;
    memset(g, 0, sizeof *g);
    rb_port_graph_append(g, &((sqlite_port *)base)->g);
    return 0;
}

static int sp_paused(rb_port *base, char ***names, size_t *n, rb_err *err)
{
    (void)err;
    sqlite_port *p = (sqlite_port *)base;
    *names = p->n_paused ? rb_xcalloc(p->n_paused, sizeof **names) : NULL;
    for (size_t i = 0; i < p->n_paused; i++)
        (*names)[i] = rb_xstrdup(p->paused[i]);
    *n = p->n_paused;
    return 0;
}

static int sp_each_job(rb_port *base, rb_port_job_fn fn, void *arg, rb_err *err)
{
    (void)err;
    sqlite_port *p = (sqlite_port *)base;
    for (size_t i = 0; i < p->n; i++) {
        int rc = fn(arg, &p->jobs[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int sp_counters(rb_port *base, int64_t *processed, int64_t *failures, rb_err *err)
{
    (void)err;
    sqlite_port *p = (sqlite_port *)base;
    *processed = p->processed;
    *failures = p->failures;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? rb_xstrdup(s) : NULL;
}

static int sp_find(rb_port *base, const char *jid, rb_job_view *out, bool *found, rb_err *err)
{
    (void)err;
    sqlite_port *p = (sqlite_port *)base;
    json_t *ix = json_object_get(p->by_jid, jid);
    *found = ix != NULL;
    if (ix) {
        const rb_job_view *v = &p->jobs[json_integer_value(ix)];
        *out = *v;
        out->jid = rb_xstrdup(v->jid);
        out->queue = rb_xstrdup(v->queue);
        out->json = rb_xstrdup(v->json);
        out->history = dup_or_null(v->history);
        out->wid = dup_or_null(v->wid);
        out->waits_for = out->blocked_by = NULL;
    }
    return 0;
}

static int sp_write(rb_port *base, const rb_job_view *jobs, size_t n, const char *const *pause,
                    size_t n_pause, bool set_counters, int64_t processed, int64_t failures,
                    const rb_port_graph *g, rb_err *err)
{
    sqlite_port *p = (sqlite_port *)base;
    rb_store *s = p->store;
    int rc = s->ops->begin(s, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const rb_job_view *v = &jobs[i];
        char *text = NULL;
        int due_us = 0;
        if (v->state == RB_JOB_ENQUEUED) { /* enqueued_at is the row's due_ms and due_us */
            json_t *o = json_loads(v->json, 0, NULL);
            int64_t us;
            const char *ea = json_string_value(json_object_get(o, "enqueued_at"));
            if (ea && !rb_time_parse_rfc3339_us(ea, &us) && us / 1000 == v->due_ms)
                due_us = (int)(us % 1000);
            json_object_del(o, "enqueued_at");
            text = json_dumps(o, JSON_COMPACT);
            json_decref(o);
        }
        rb_job_row row = {
            .id = ++p->max_id,
            .jid = v->jid,
            .state = v->state,
            .queue = v->queue,
            .priority = v->priority,
            .seq = (uint64_t)++p->max_seq,
            .due_ms = v->due_ms,
            .due_us = due_us,
            .first_ms = v->first_ms,
            .attempts = v->attempts,
            .reserve_s = v->reserve_s,
            .wid = v->wid,
            .json = text ? text : v->json,
            .history = v->history,
        };
        rc = s->ops->put_job(s, &row, err);
        free(text);
    }
    for (size_t i = 0; rc == 0 && i < n_pause; i++) {
        rb_buf key = RB_BUF_INIT;
        rb_buf_printf(&key, "paused:%s", pause[i]);
        rc = s->ops->set_meta(s, rb_buf_str(&key), "1", err);
        rb_buf_reset(&key);
        rb_buf_printf(&key, RB_QUEUE_META_KEY "%s", pause[i]); /* paused: known */
        if (rc == 0)
            rc = s->ops->set_meta(s, rb_buf_str(&key), "1", err);
        rb_buf_release(&key);
    }
    rb_buf key = RB_BUF_INIT;
    /* the jobs' queues are known queues, as after their PUSH (a row
     * written again for a queue is the same row) */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (i > 0 && !strcmp(jobs[i - 1].queue, jobs[i].queue))
            continue;
        rb_buf_reset(&key);
        rb_buf_printf(&key, RB_QUEUE_META_KEY "%s", jobs[i].queue);
        rc = s->ops->set_meta(s, rb_buf_str(&key), "1", err);
    }
    for (size_t i = 0; rc == 0 && i < g->n_done; i++) {
        char val[24];
        snprintf(val, sizeof val, "%lld", (long long)g->done[i].until_ms);
        rb_buf_reset(&key);
        rb_buf_printf(&key, RB_DEPS_DONE_KEY "%s", g->done[i].jid);
        rc = s->ops->set_meta(s, rb_buf_str(&key), val, err);
    }
    for (size_t i = 0; rc == 0 && i < g->n_batches; i++) {
        rb_buf_reset(&key);
        rb_buf_printf(&key, RB_MEM_BATCH_KEY "%s", g->batches[i].bid);
        rc = s->ops->set_meta(s, rb_buf_str(&key), g->batches[i].body, err);
    }
    rb_buf_release(&key);
    if (rc == 0)
        rc = write_debounce(s, g, err);
    if (rc == 0 && set_counters &&
        (rc = s->ops->set_counter(s, "total_processed", processed, err)) == 0)
        rc = s->ops->set_counter(s, "total_failures", failures, err);
    if (rc == 0)
        rc = s->ops->commit(s, err);
    if (rc)
        s->ops->rollback(s);
    return rc;
}

static void sp_close(rb_port *base)
{
    sqlite_port *p = (sqlite_port *)base;
    if (!p)
        return;
    if (p->store)
        p->store->ops->close(p->store);
    rb_job_views_free(p->jobs, p->n);
    for (size_t i = 0; i < p->n_paused; i++)
        free(p->paused[i]);
    free(p->paused);
    rb_port_graph_release(&p->g);
    json_decref(p->by_jid);
    json_decref(p->deb_recs);
    json_decref(p->deb_aliases);
    free(p);
}

static const rb_port_ops sqlite_port_ops = {
    .name = "sqlite",
    .each_job = sp_each_job,
    .counters = sp_counters,
    .paused = sp_paused,
    .find = sp_find,
    .write = sp_write,
    .graph = sp_graph,
    .close = sp_close,
};

int rb_port_sqlite_open(const char *path, bool create, rb_port **out, rb_err *err)
{
    if (!strncmp(path, "sqlite:", 7))
        path += 7;
    if (!create && access(path, F_OK) != 0)
        return rb_err_set(err, RB_EIO, "no database '%s'", path);
    sqlite_port *p = rb_xcalloc(1, sizeof *p);
    p->base.ops = &sqlite_port_ops;
    p->by_jid = json_object();
    p->deb_recs = json_object();
    p->deb_aliases = json_object();
    int rc = rb_store_sqlite_open(path, &p->store, err);
    if (rc == 0) {
        rb_store_loader l = {p, on_row, on_counter, on_meta};
        rc = p->store->ops->load(p->store, &l, err);
    }
    for (size_t i = 0; rc == 0 && i < p->n; i++)
        if (p->jobs[i].state == RB_JOB_WAITING || p->jobs[i].state == RB_JOB_BLOCKED)
            derive_dep(p, &p->jobs[i]);
    if (rc == 0)
        derive_debounce(p);
    if (rc) {
        if (strstr(rb_err_msg(err), "locked"))
            rb_err_prefix(err, "is the server running on it? stop it first");
        sp_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return 0;
}
