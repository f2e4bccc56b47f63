/* The export format's rules, once for both backends (engine/export.h):
 * writing the lines, checking them, and deciding per job whether an
 * import writes it, skips it as identical, refuses it as a conflict or
 * leaves it out as not carried. */
#include "engine/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/batch.h"
#include "engine/debounce.h"
#include "engine/depend.h"
#include "engine/job_state.h"

#define N_STATES 8

/* --- the graph --- */

void rb_port_graph_release(rb_port_graph *g)
{
    for (size_t i = 0; i < g->n_deps; i++) {
        free(g->deps[i].child);
        for (size_t k = 0; k < g->deps[i].n; k++)
            free(g->deps[i].parents[k]);
        free(g->deps[i].parents);
    }
    free(g->deps);
    for (size_t i = 0; i < g->n_done; i++)
        free(g->done[i].jid);
    free(g->done);
    for (size_t i = 0; i < g->n_batches; i++) {
        free(g->batches[i].bid);
        free(g->batches[i].parent_bid);
        free(g->batches[i].body);
    }
    free(g->batches);
    for (size_t i = 0; i < g->n_debounce; i++) {
        free(g->debounce[i].jid);
        free(g->debounce[i].hash);
        free(g->debounce[i].key);
    }
    free(g->debounce);
    for (size_t i = 0; i < g->n_aliases; i++) {
        free(g->aliases[i].jid);
        free(g->aliases[i].into);
        free(g->aliases[i].key);
    }
    free(g->aliases);
    memset(g, 0, sizeof *g);
}

void rb_port_graph_add_debounce(rb_port_graph *g, const char *jid, const char *hash,
                                const char *key, int64_t first_ms, int64_t merged)
{
    g->debounce = rb_xrealloc(g->debounce, (g->n_debounce + 1) * sizeof *g->debounce);
    g->debounce[g->n_debounce++] =
        (rb_port_debounce){rb_xstrdup(jid), rb_xstrdup(hash), rb_xstrdup(key), first_ms, merged};
}

void rb_port_graph_add_alias(rb_port_graph *g, const char *jid, const char *into,
                             const char *key, int64_t merged_ms)
{
    g->aliases = rb_xrealloc(g->aliases, (g->n_aliases + 1) * sizeof *g->aliases);
    g->aliases[g->n_aliases++] =
        (rb_port_alias){rb_xstrdup(jid), rb_xstrdup(into), rb_xstrdup(key), merged_ms};
}

void rb_port_graph_add_dep(rb_port_graph *g, const char *child, const char *const *parents,
                           size_t n, int mode, int64_t remaining, int64_t dead)
{
    g->deps = rb_xrealloc(g->deps, (g->n_deps + 1) * sizeof *g->deps);
    rb_port_dep *d = &g->deps[g->n_deps++];
    *d = (rb_port_dep){.child = rb_xstrdup(child), .n = n, .mode = mode,
                       .remaining = remaining, .dead = dead};
    d->parents = rb_xcalloc(n ? n : 1, sizeof *d->parents);
    for (size_t i = 0; i < n; i++)
        d->parents[i] = rb_xstrdup(parents[i]);
}

void rb_port_graph_add_done(rb_port_graph *g, const char *jid, int64_t until_ms)
{
    g->done = rb_xrealloc(g->done, (g->n_done + 1) * sizeof *g->done);
    g->done[g->n_done++] = (rb_port_done){rb_xstrdup(jid), until_ms};
}

void rb_port_graph_append(rb_port_graph *to, const rb_port_graph *from)
{
    for (size_t i = 0; i < from->n_deps; i++) {
        const rb_port_dep *d = &from->deps[i];
        rb_port_graph_add_dep(to, d->child, (const char *const *)d->parents, d->n, d->mode,
                              d->remaining, d->dead);
    }
    for (size_t i = 0; i < from->n_done; i++)
        rb_port_graph_add_done(to, from->done[i].jid, from->done[i].until_ms);
    for (size_t i = 0; i < from->n_batches; i++)
        rb_port_graph_add_batch(to, from->batches[i].body);
    for (size_t i = 0; i < from->n_debounce; i++) {
        const rb_port_debounce *d = &from->debounce[i];
        rb_port_graph_add_debounce(to, d->jid, d->hash, d->key, d->first_ms, d->merged);
    }
    for (size_t i = 0; i < from->n_aliases; i++) {
        const rb_port_alias *a = &from->aliases[i];
        rb_port_graph_add_alias(to, a->jid, a->into, a->key, a->merged_ms);
    }
}

bool rb_port_graph_add_batch(rb_port_graph *g, const char *body)
{
    rb_batch *b = body ? rb_batch_load(body) : NULL;
    if (!b)
        return false;
    g->batches = rb_xrealloc(g->batches, (g->n_batches + 1) * sizeof *g->batches);
    g->batches[g->n_batches++] = (rb_port_batch){
        .bid = rb_xstrdup(b->bid),
        .parent_bid = b->parent_bid ? rb_xstrdup(b->parent_bid) : NULL,
        .body = rb_xstrdup(body),
        .committed = b->committed,
        .created_ms = b->created_ms,
        .finished_ms = b->finished_ms,
    };
    rb_batch_free(b);
    return true;
}

/* --- writing --- */

static json_t *dep_json(const rb_port_dep *d)
{
    json_t *ps = json_array();
    for (size_t i = 0; i < d->n; i++)
        json_array_append_new(ps, json_string(d->parents[i]));
    return json_pack("{s:s, s:s, s:s, s:o, s:I, s:I}", "type", "dep", "child", d->child, "mode",
                     rb_dep_mode_name((rb_dep_mode)d->mode), "parents", ps, "remaining",
                     (json_int_t)d->remaining, "dead", (json_int_t)d->dead);
}

json_t *rb_export_job_json(const rb_job_view *v)
{
    json_t *job = v->json ? json_loads(v->json, 0, NULL) : NULL;
    json_t *hist = v->history ? json_loads(v->history, 0, NULL) : NULL;
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:i, s:i, s:s?, s:o, s:o}", "type", "job",
                     "jid", v->jid, "state", rb_job_state_name((rb_job_state)v->state), "queue",
                     v->queue, "priority", v->priority, "due_ms", (json_int_t)v->due_ms,
                     "first_ms", (json_int_t)v->first_ms, "attempts", v->attempts,
                     "reserve_for", v->reserve_s, "wid", v->wid, "history",
                     hist ? hist : json_null(), "job", job ? job : json_object());
}

static int put_line(FILE *out, json_t *o, rb_err *err)
{
    int rc = 0;
    if (!o || json_dumpf(o, out, JSON_COMPACT) != 0 || fputc('\n', out) == EOF)
        rc = rb_err_set(err, RB_EIO, "cannot write the export: %s", strerror(errno));
    json_decref(o);
    return rc;
}

typedef struct export_ctx {
    FILE *out;
    rb_export_stats *st;
    rb_err *err;
} export_ctx;

static int export_one(void *arg, const rb_job_view *v)
{
    export_ctx *x = arg;
    int rc = put_line(x->out, rb_export_job_json(v), x->err);
    if (rc == 0) {
        x->st->jobs++;
        if (v->state >= 0 && v->state < N_STATES)
            x->st->by_state[v->state]++;
    }
    return rc;
}

int rb_export_run(rb_port *p, FILE *out, rb_export_stats *st, rb_err *err)
{
    memset(st, 0, sizeof *st);
    char ts[RB_TIME_STRLEN];
    int rc = put_line(out,
                      json_pack("{s:s, s:i, s:s, s:s}", "format", RB_EXPORT_FORMAT, "version",
                                RB_EXPORT_VERSION, "source", p->ops->name, "exported_at",
                                rb_time_format(rb_now_ms(), ts)),
                      err);
    export_ctx x = {out, st, err};
    if (rc || (rc = p->ops->each_job(p, export_one, &x, err)) ||
        (rc = p->ops->counters(p, &st->processed, &st->failures, err)))
        return rc;
    rb_port_graph g = {0};
    if ((rc = p->ops->graph(p, &g, err)))
        return rc;
    for (size_t i = 0; rc == 0 && i < g.n_deps; i++)
        rc = put_line(out, dep_json(&g.deps[i]), err);
    for (size_t i = 0; rc == 0 && i < g.n_done; i++)
        rc = put_line(out, json_pack("{s:s, s:s, s:I}", "type", "done", "jid", g.done[i].jid,
                                     "until_ms", (json_int_t)g.done[i].until_ms),
                      err);
    for (size_t i = 0; rc == 0 && i < g.n_batches; i++) {
        json_t *body = json_loads(g.batches[i].body, 0, NULL);
        rc = put_line(out, json_pack("{s:s, s:s, s:o}", "type", "batch", "bid", g.batches[i].bid,
                                     "batch", body ? body : json_null()),
                      err);
    }
    for (size_t i = 0; rc == 0 && i < g.n_debounce; i++) {
        const rb_port_debounce *d = &g.debounce[i];
        rc = put_line(out, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "type", "debounce", "jid",
                                     d->jid, "hash", d->hash, "key", d->key, "first_ms",
                                     (json_int_t)d->first_ms, "merged", (json_int_t)d->merged),
                      err);
    }
    for (size_t i = 0; rc == 0 && i < g.n_aliases; i++) {
        const rb_port_alias *a = &g.aliases[i];
        rc = put_line(out, json_pack("{s:s, s:s, s:s, s:s, s:I}", "type", "debounced", "jid",
                                     a->jid, "into", a->into, "key", a->key, "merged_ms",
                                     (json_int_t)a->merged_ms),
                      err);
    }
    st->deps = g.n_deps;
    st->done = g.n_done;
    st->batches = g.n_batches;
    st->debounce = g.n_debounce;
    st->aliases = g.n_aliases;
    rb_port_graph_release(&g);
    if (rc)
        return rc;
    char **names = NULL;
    size_t n = 0;
    if ((rc = p->ops->paused(p, &names, &n, err)))
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = put_line(out, json_pack("{s:s, s:s, s:b}", "type", "queue", "name", names[i],
                                         "paused", 1),
                          err);
        free(names[i]);
    }
    free(names);
    st->paused = n;
    if (rc)
        return rc;
    rc = put_line(out,
                  json_pack("{s:s, s:I, s:I}", "type", "counters", "processed",
                            (json_int_t)st->processed, "failures", (json_int_t)st->failures),
                  err);
    if (rc == 0)
        rc = put_line(out, json_pack("{s:s, s:I}", "type", "end", "jobs", (json_int_t)st->jobs),
                      err);
    if (rc == 0 && fflush(out) != 0)
        rc = rb_err_set(err, RB_EIO, "cannot write the export: %s", strerror(errno));
    return rc;
}

/* --- reading and checking --- */

/* Keys a line of each type may hold (anything else is refused: a newer
 * format's field is not silently dropped). */
static const char *const job_keys[] = {"type",     "jid",      "state",       "queue",
                                       "priority", "due_ms",   "first_ms",    "attempts",
                                       "reserve_for", "wid",   "history",     "job",
                                       NULL};
static const char *const counter_keys[] = {"type", "processed", "failures", NULL};
static const char *const end_keys[] = {"type", "jobs", NULL};
static const char *const queue_keys[] = {"type", "name", "paused", NULL};
static const char *const dep_keys[] = {"type", "child", "mode", "parents", "remaining", "dead",
                                       NULL};
static const char *const done_keys[] = {"type", "jid", "until_ms", NULL};
static const char *const batch_keys[] = {"type", "bid", "batch", NULL};
static const char *const debounce_keys[] = {"type", "jid", "hash", "key", "first_ms", "merged",
                                            NULL};
static const char *const alias_keys[] = {"type", "jid", "into", "key", "merged_ms", NULL};

static int only_keys(json_t *o, const char *const *keys, rb_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i])
            return rb_err_set(err, RB_EINVAL, "unknown field '%s'", k);
    }
    return 0;
}

static int need_int(json_t *o, const char *key, int64_t min, int64_t max, int64_t *out, rb_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return rb_err_set(err, RB_EINVAL, "field '%s' is missing", key);
    if (!json_is_integer(v))
        return rb_err_set(err, RB_EINVAL, "field '%s' must be an integer", key);
    int64_t n = (int64_t)json_integer_value(v);
    if (n < min || n > max)
        return rb_err_set(err, RB_EINVAL, "field '%s' is %" PRId64 ", not from %" PRId64
                                          " to %" PRId64, key, n, min, max);
    *out = n;
    return 0;
}

static int need_str(json_t *o, const char *key, bool nullable, const char **out, rb_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v && !nullable)
        return rb_err_set(err, RB_EINVAL, "field '%s' is missing", key);
    if (nullable && (!v || json_is_null(v))) {
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v) || !json_string_length(v))
        return rb_err_set(err, RB_EINVAL, "field '%s' must be a non-empty string%s", key,
                          nullable ? " or null" : "");
    *out = json_string_value(v);
    return 0;
}

/* A job line into v (strings owned). */
static int parse_job(json_t *o, rb_job_view *v, rb_err *err)
{
    const char *jid, *state, *queue, *wid;
    int64_t prio, due, first, attempts, reserve;
    int rc;
    if ((rc = only_keys(o, job_keys, err)) || (rc = need_str(o, "jid", false, &jid, err)) ||
        (rc = need_str(o, "state", false, &state, err)) ||
        (rc = need_str(o, "queue", false, &queue, err)) ||
        (rc = need_int(o, "priority", 1, 9, &prio, err)) ||
        (rc = need_int(o, "due_ms", 0, INT64_MAX, &due, err)) ||
        (rc = need_int(o, "first_ms", 0, INT64_MAX, &first, err)) ||
        (rc = need_int(o, "attempts", 0, INT32_MAX, &attempts, err)) ||
        (rc = need_int(o, "reserve_for", 1, INT32_MAX, &reserve, err)) ||
        (rc = need_str(o, "wid", true, &wid, err)))
        return rc;
    int st = rb_job_state_parse(state);
    if (st < 0)
        return rb_err_set(err, RB_EINVAL, "field 'state' is '%s', not scheduled, enqueued,"
                                          " working, retries, dead, waiting or blocked", state);
    json_t *hist = json_object_get(o, "history");
    if (!hist)
        return rb_err_set(err, RB_EINVAL, "field 'history' is missing");
    if (!json_is_null(hist) && !json_is_array(hist))
        return rb_err_set(err, RB_EINVAL, "field 'history' must be an array or null");
    json_t *job = json_object_get(o, "job");
    if (!json_is_object(job))
        return rb_err_set(err, RB_EINVAL, "field 'job' must be an object");
    const char *inner = json_string_value(json_object_get(job, "jid"));
    if (!inner || strcmp(inner, jid))
        return rb_err_set(err, RB_EINVAL, "the job's own jid is not '%s'", jid);
    *v = (rb_job_view){
        .jid = rb_xstrdup(jid),
        .queue = rb_xstrdup(queue),
        .json = json_dumps(job, JSON_COMPACT),
        .history = json_is_array(hist) ? json_dumps(hist, JSON_COMPACT) : NULL,
        .wid = wid ? rb_xstrdup(wid) : NULL,
        .state = st,
        .priority = (int)prio,
        .attempts = (int)attempts,
        .reserve_s = (int)reserve,
        .due_ms = due,
        .first_ms = first,
    };
    return 0;
}

/* A dep line into g. */
static int parse_dep(json_t *o, rb_port_graph *g, rb_err *err)
{
    const char *child, *mode;
    int64_t remaining, dead;
    int rc;
    if ((rc = only_keys(o, dep_keys, err)) || (rc = need_str(o, "child", false, &child, err)) ||
        (rc = need_str(o, "mode", false, &mode, err)) ||
        (rc = need_int(o, "remaining", 1, RB_DEP_MAX_PARENTS, &remaining, err)) ||
        (rc = need_int(o, "dead", 0, RB_DEP_MAX_PARENTS, &dead, err)))
        return rc;
    int m = 0;
    while (m < 3 && strcmp(rb_dep_mode_name((rb_dep_mode)m), mode))
        m++;
    if (m == 3)
        return rb_err_set(err, RB_EINVAL, "field 'mode' is '%s', not block, cancel or ignore",
                          mode);
    if (dead > remaining)
        return rb_err_set(err, RB_EINVAL, "field 'dead' is %" PRId64 ", more than 'remaining'"
                                          " (%" PRId64 ")", dead, remaining);
    json_t *ps = json_object_get(o, "parents");
    size_t n = json_array_size(ps);
    if (!json_is_array(ps) || n < (size_t)remaining || n > RB_DEP_MAX_PARENTS)
        return rb_err_set(err, RB_EINVAL, "field 'parents' must be an array of 'remaining'"
                                          " (%" PRId64 ") to %d jids", remaining,
                          RB_DEP_MAX_PARENTS);
    const char **v = rb_xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n && rc == 0; i++) {
        v[i] = json_string_value(json_array_get(ps, i));
        if (!v[i] || !*v[i])
            rc = rb_err_set(err, RB_EINVAL, "field 'parents' must hold non-empty strings");
        else if (!strcmp(v[i], child))
            rc = rb_err_set(err, RB_EINVAL, "job '%s' names itself as its parent", child);
        for (size_t k = 0; rc == 0 && k < i; k++)
            if (!strcmp(v[k], v[i]))
                rc = rb_err_set(err, RB_EINVAL, "parent '%s' appears twice", v[i]);
    }
    if (rc == 0)
        rb_port_graph_add_dep(g, child, v, n, m, remaining, dead);
    free(v);
    return rc;
}

/* A batch line into g. */
static int parse_batch(json_t *o, rb_port_graph *g, rb_err *err)
{
    const char *bid;
    int rc;
    if ((rc = only_keys(o, batch_keys, err)) || (rc = need_str(o, "bid", false, &bid, err)))
        return rc;
    json_t *b = json_object_get(o, "batch");
    if (!json_is_object(b))
        return rb_err_set(err, RB_EINVAL, "field 'batch' must be an object");
    char *text = json_dumps(b, JSON_COMPACT);
    bool ok = rb_port_graph_add_batch(g, text);
    free(text);
    if (!ok)
        return rb_err_set(err, RB_EINVAL, "field 'batch' is not a stored batch of this"
                                          " version");
    if (strcmp(g->batches[g->n_batches - 1].bid, bid))
        return rb_err_set(err, RB_EINVAL, "the batch's own bid is not '%s'", bid);
    return 0;
}

/* A debounce or debounced line (type) into g; seen: the lines so far, to
 * refuse a second one for the same jid. */
static int parse_debounce(json_t *o, const char *type, json_t *seen, size_t lineno,
                          rb_port_graph *g, rb_err *err)
{
    bool alias = !strcmp(type, "debounced");
    const char *jid, *key, *hash = NULL, *into = NULL;
    int64_t ms, merged = 0;
    int rc;
    if ((rc = only_keys(o, alias ? alias_keys : debounce_keys, err)) ||
        (rc = need_str(o, "jid", false, &jid, err)) || (rc = need_str(o, "key", false, &key, err)))
        return rc;
    if (alias)
        rc = need_str(o, "into", false, &into, err);
    else if (!(rc = need_str(o, "hash", false, &hash, err)) &&
             !(rc = need_int(o, "merged", 0, INT64_MAX, &merged, err)) &&
             strlen(hash) != RB_DEBOUNCE_HASH_LEN - 1)
        rc = rb_err_set(err, RB_EINVAL, "field 'hash' must be 64 hex digits");
    if (rc || (rc = need_int(o, alias ? "merged_ms" : "first_ms", 0, INT64_MAX, &ms, err)))
        return rc;
    char k[16 + 1024];
    snprintf(k, sizeof k, "\001%s %.1000s", type, jid);
    if (json_object_get(seen, k))
        return rb_err_set(err, RB_EINVAL, "a second %s line for '%s'", type, jid);
    json_object_set_new(seen, k, json_integer((json_int_t)lineno));
    if (alias)
        rb_port_graph_add_alias(g, jid, into, key, ms);
    else
        rb_port_graph_add_debounce(g, jid, hash, key, ms, merged);
    return 0;
}

/* The file's contents once checked. */
typedef struct parsed {
    rb_job_view *jobs;
    size_t n, cap;
    json_t *ix; /* jid -> index into jobs */
    rb_port_graph g;
    char **paused; /* queue names */
    size_t n_paused;
    int64_t processed, failures;
} parsed;

static void parsed_release(parsed *p)
{
    rb_job_views_free(p->jobs, p->n);
    for (size_t i = 0; i < p->n_paused; i++)
        free(p->paused[i]);
    free(p->paused);
    rb_port_graph_release(&p->g);
    json_decref(p->ix);
    memset(p, 0, sizeof *p);
}

/* Reads and checks every line; err "NAME:LINE: what" on the first bad one. */
static int read_all(FILE *in, const char *name, parsed *p, rb_err *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t lineno = 0;
    bool header = false, counters = false, end = false;
    json_t *seen = json_object();
    p->ix = json_object();
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0) {
            rc = rb_err_set(err, RB_EINVAL, "empty line");
            break;
        }
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)len, 0, &je);
        if (!o) {
            rc = rb_err_set(err, RB_EINVAL, "not JSON: %s", je.text);
            break;
        }
        if (!json_is_object(o)) {
            rc = rb_err_set(err, RB_EINVAL, "not a JSON object");
        } else if (end) {
            rc = rb_err_set(err, RB_EINVAL, "a line after the end line");
        } else if (!header) {
            const char *fmt = json_string_value(json_object_get(o, "format"));
            json_t *ver = json_object_get(o, "version");
            if (!fmt || strcmp(fmt, RB_EXPORT_FORMAT))
                rc = rb_err_set(err, RB_EINVAL, "not a rebound export (the first line has no"
                                                " \"format\":\"%s\")", RB_EXPORT_FORMAT);
            else if (!json_is_integer(ver))
                rc = rb_err_set(err, RB_EINVAL, "field 'version' must be an integer");
            else if (json_integer_value(ver) != RB_EXPORT_VERSION)
                rc = rb_err_set(err, RB_EVERSION, "export format version %" JSON_INTEGER_FORMAT
                                                  " is not supported (this rebound reads"
                                                  " version %d)",
                                json_integer_value(ver), RB_EXPORT_VERSION);
            header = true;
        } else {
            const char *type = json_string_value(json_object_get(o, "type"));
            if (!type) {
                rc = rb_err_set(err, RB_EINVAL, "field 'type' must be \"job\", \"dep\","
                                                " \"done\", \"batch\", \"debounce\","
                                                " \"debounced\", \"queue\","
                                                " \"counters\" or \"end\"");
            } else if (counters && (!strcmp(type, "dep") || !strcmp(type, "done") ||
                                    !strcmp(type, "batch") || !strcmp(type, "debounce") ||
                                    !strcmp(type, "debounced"))) {
                rc = rb_err_set(err, RB_EINVAL, "a %s line after the counters line", type);
            } else if (!strcmp(type, "dep")) {
                if ((rc = parse_dep(o, &p->g, err)) == 0) {
                    const char *c = p->g.deps[p->g.n_deps - 1].child;
                    char key[8 + 1024];
                    snprintf(key, sizeof key, "\001dep %.1000s", c);
                    if (json_object_get(seen, key))
                        rc = rb_err_set(err, RB_EINVAL, "a second dep line for '%s'", c);
                    json_object_set_new(seen, key, json_integer((json_int_t)lineno));
                }
            } else if (!strcmp(type, "done")) {
                const char *jid;
                int64_t until;
                char key[8 + 1024];
                if (!(rc = only_keys(o, done_keys, err)) &&
                    !(rc = need_str(o, "jid", false, &jid, err)) &&
                    !(rc = need_int(o, "until_ms", 0, INT64_MAX, &until, err))) {
                    snprintf(key, sizeof key, "\001done %.1000s", jid);
                    if (json_object_get(seen, key))
                        rc = rb_err_set(err, RB_EINVAL, "a second done line for '%s'", jid);
                    else
                        rb_port_graph_add_done(&p->g, jid, until);
                    json_object_set_new(seen, key, json_integer((json_int_t)lineno));
                }
            } else if (!strcmp(type, "batch")) {
                if ((rc = parse_batch(o, &p->g, err)) == 0) {
                    const char *b = p->g.batches[p->g.n_batches - 1].bid;
                    char key[8 + 1024];
                    snprintf(key, sizeof key, "\001batch %.1000s", b);
                    if (json_object_get(seen, key))
                        rc = rb_err_set(err, RB_EINVAL, "a second batch line for '%s'", b);
                    json_object_set_new(seen, key, json_integer((json_int_t)lineno));
                }
            } else if (!strcmp(type, "debounce") || !strcmp(type, "debounced")) {
                rc = parse_debounce(o, type, seen, lineno, &p->g, err);
            } else if (!strcmp(type, "job")) {
                if (counters)
                    rc = rb_err_set(err, RB_EINVAL, "a job line after the counters line");
                rb_job_view v;
                if (rc == 0 && (rc = parse_job(o, &v, err)) == 0) {
                    if (json_object_get(seen, v.jid)) {
                        rc = rb_err_set(err, RB_EINVAL, "jid '%s' appears twice (first on"
                                                        " line %" JSON_INTEGER_FORMAT ")",
                                        v.jid, json_integer_value(json_object_get(seen, v.jid)));
                        rb_job_view_release(&v);
                    } else {
                        json_object_set_new(seen, v.jid, json_integer((json_int_t)lineno));
                        if (p->n == p->cap) {
                            p->cap = p->cap ? p->cap * 2 : 64;
                            p->jobs = rb_xrealloc(p->jobs, p->cap * sizeof *p->jobs);
                        }
                        json_object_set_new(p->ix, v.jid, json_integer((json_int_t)p->n));
                        p->jobs[p->n++] = v;
                    }
                }
            } else if (!strcmp(type, "queue")) {
                const char *qn;
                json_t *pz = json_object_get(o, "paused");
                if (counters)
                    rc = rb_err_set(err, RB_EINVAL, "a queue line after the counters line");
                else if (!(rc = only_keys(o, queue_keys, err)) &&
                         !(rc = need_str(o, "name", false, &qn, err))) {
                    if (!json_is_boolean(pz))
                        rc = rb_err_set(err, RB_EINVAL, "field 'paused' must be true or false");
                    else if (json_is_true(pz)) {
                        p->paused = rb_xrealloc(p->paused, (p->n_paused + 1) * sizeof *p->paused);
                        p->paused[p->n_paused++] = rb_xstrdup(qn);
                    }
                }
            } else if (!strcmp(type, "counters")) {
                if (counters)
                    rc = rb_err_set(err, RB_EINVAL, "a second counters line");
                else if (!(rc = only_keys(o, counter_keys, err)) &&
                         !(rc = need_int(o, "processed", 0, INT64_MAX, &p->processed, err)))
                    rc = need_int(o, "failures", 0, INT64_MAX, &p->failures, err);
                counters = true;
            } else if (!strcmp(type, "end")) {
                int64_t n;
                if (!counters)
                    rc = rb_err_set(err, RB_EINVAL, "the end line comes before the counters line");
                else if (!(rc = only_keys(o, end_keys, err)) &&
                         !(rc = need_int(o, "jobs", 0, INT64_MAX, &n, err)) &&
                         (size_t)n != p->n)
                    rc = rb_err_set(err, RB_EINVAL, "the end line counts %" PRId64
                                                    " jobs, the file has %zu", n, p->n);
                end = true;
            } else {
                rc = rb_err_set(err, RB_EINVAL, "unknown line type '%s'", type);
            }
        }
        json_decref(o);
    }
    free(line);
    if (rc == 0 && ferror(in))
        rc = rb_err_set(err, RB_EIO, "cannot read '%s': %s", name, strerror(errno));
    else if (rc == 0 && !header)
        rc = rb_err_set(err, RB_EINVAL, "%s: empty file, not a rebound export", name);
    else if (rc == 0 && !end)
        rc = rb_err_set(err, RB_EINVAL, "%s:%zu: the file ends without its end line"
                                        " (truncated?)", name, lineno);
    else if (rc)
        rb_err_prefix(err, "%s:%zu", name, lineno);
    if (rc) {
        json_decref(seen);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < p->g.n_debounce; i++) {
        const char *j = p->g.debounce[i].jid;
        json_t *at = json_object_get(p->ix, j);
        const rb_job_view *v = at ? &p->jobs[json_integer_value(at)] : NULL;
        if (!v || (v->state != RB_JOB_SCHEDULED && v->state != RB_JOB_ENQUEUED))
            rc = rb_err_set(err, RB_EINVAL, "%s: the debounce line of '%s' has no scheduled or"
                                            " enqueued job line", name, j);
    }
    for (size_t i = 0; rc == 0 && i < p->g.n_aliases; i++)
        if (!json_object_get(p->ix, p->g.aliases[i].into))
            rc = rb_err_set(err, RB_EINVAL, "%s: the debounced line of '%s' names '%s', which"
                                            " has no job line", name, p->g.aliases[i].jid,
                            p->g.aliases[i].into);
    for (size_t i = 0; i < p->g.n_deps; i++) {
        const char *c = p->g.deps[i].child;
        json_t *at = json_object_get(p->ix, c);
        const rb_job_view *v = at ? &p->jobs[json_integer_value(at)] : NULL;
        if (rc == 0 && (!v || (v->state != RB_JOB_WAITING && v->state != RB_JOB_BLOCKED)))
            rc = rb_err_set(err, RB_EINVAL, "%s: the dep line of '%s' has no waiting or"
                                            " blocked job line", name, c);
    }
    json_decref(seen);
    return rc;
}

/* --- comparing --- */

static bool same_json(const char *a, const char *b)
{
    if (!a || !b)
        return !a && !b;
    json_t *x = json_loads(a, 0, NULL), *y = json_loads(b, 0, NULL);
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* Two job texts alike, enqueued_at compared to the millisecond: a single
 * node keeps its microseconds, distributed mode milliseconds (its enq_ms
 * column, docs/protocol.md), so a job moved between them is the same job. */
static bool same_job_json(const char *a, const char *b)
{
    if (!a || !b)
        return !a && !b;
    json_t *x = json_loads(a, 0, NULL), *y = json_loads(b, 0, NULL);
    const char *ex = json_string_value(json_object_get(x, "enqueued_at"));
    const char *ey = json_string_value(json_object_get(y, "enqueued_at"));
    int64_t mx, my;
    if (ex && ey && !rb_time_parse_rfc3339(ex, &mx) && !rb_time_parse_rfc3339(ey, &my) &&
        mx == my) {
        json_object_del(x, "enqueued_at");
        json_object_del(y, "enqueued_at");
    }
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Appends "; field: stored X, file Y" for each difference; false if any. */
static bool compare(const rb_job_view *db, const rb_job_view *f, rb_buf *out)
{
    size_t start = out->len;
#define DIFF_INT(field, name)                                                                     \
    if (db->field != f->field)                                                                    \
        rb_buf_printf(out, "; %s: stored %lld, file %lld", name, (long long)db->field,             \
                      (long long)f->field);
    if (db->state != f->state)
        rb_buf_printf(out, "; state: stored %s, file %s",
                      rb_job_state_name((rb_job_state)db->state),
                      rb_job_state_name((rb_job_state)f->state));
    if (!same_str(db->queue, f->queue))
        rb_buf_printf(out, "; queue: stored '%s', file '%s'", db->queue, f->queue);
    DIFF_INT(priority, "priority")
    DIFF_INT(attempts, "attempts")
    DIFF_INT(due_ms, "due_ms")
    DIFF_INT(first_ms, "first_ms")
    DIFF_INT(reserve_s, "reserve_for")
#undef DIFF_INT
    if (!same_str(db->wid, f->wid))
        rb_buf_printf(out, "; wid: stored %s, file %s", db->wid ? db->wid : "none",
                      f->wid ? f->wid : "none");
    if (!same_json(db->history, f->history))
        rb_buf_adds(out, "; history differs");
    if (!same_job_json(db->json, f->json))
        rb_buf_adds(out, "; job differs");
    return out->len == start;
}

static bool held(const rb_job_view *v)
{
    return v->state == RB_JOB_WAITING || v->state == RB_JOB_BLOCKED;
}

static const rb_port_dep *dep_of(const rb_port_graph *g, const char *child)
{
    for (size_t i = 0; i < g->n_deps; i++)
        if (!strcmp(g->deps[i].child, child))
            return &g->deps[i];
    return NULL;
}

static bool in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

/* Appends "; what differs" for two deps of one child; false if any. */
static bool compare_dep(const rb_port_dep *db, const rb_port_dep *f, rb_buf *out)
{
    size_t start = out->len;
    if (db->mode != f->mode)
        rb_buf_printf(out, "; on_dep_failure: stored %s, file %s",
                      rb_dep_mode_name((rb_dep_mode)db->mode),
                      rb_dep_mode_name((rb_dep_mode)f->mode));
    bool same = db->n == f->n;
    for (size_t i = 0; same && i < f->n; i++)
        same = in_list(db->parents, db->n, f->parents[i]);
    if (!same)
        rb_buf_adds(out, "; parents differ");
    if (db->remaining != f->remaining || db->dead != f->dead)
        rb_buf_printf(out, "; remaining/dead: stored %lld/%lld, file %lld/%lld",
                      (long long)db->remaining, (long long)db->dead, (long long)f->remaining,
                      (long long)f->dead);
    return out->len == start;
}

/* What the import does with a job line. */
enum { FATE_NEW, FATE_STORED, FATE_OUT };

/* Whether jid is a stored job (a parent a child may wait on). */
static int stored(rb_port *p, const char *jid, bool *found, rb_err *err)
{
    rb_job_view db;
    int rc = p->ops->find(p, jid, &db, found, err);
    if (rc == 0 && *found)
        rb_job_view_release(&db);
    return rc;
}

/* The held jobs the import cannot carry: without their dep line (a file
 * of an earlier release), or waiting on a parent that is neither written
 * by this import nor stored (it would wait forever), and, in turn, their
 * children. fate[i] set to FATE_OUT with the reason reported. */
static int partial_graph(rb_port *p, const parsed *f, int *fate, rb_import_report *rep,
                         rb_err *err)
{
    int rc = 0;
    for (bool again = true; again && rc == 0;) {
        again = false;
        for (size_t i = 0; rc == 0 && i < f->n; i++) {
            const rb_job_view *v = &f->jobs[i];
            if (fate[i] != FATE_NEW || !held(v))
                continue;
            const rb_port_dep *d = dep_of(&f->g, v->jid);
            const char *missing = NULL;
            for (size_t k = 0; d && k < d->n && !missing && rc == 0; k++) {
                json_t *at = json_object_get(f->ix, d->parents[k]);
                if (at) {
                    if (fate[json_integer_value(at)] == FATE_OUT)
                        missing = d->parents[k];
                    continue;
                }
                bool found = false;
                rc = stored(p, d->parents[k], &found, err);
                if (rc == 0 && !found)
                    missing = d->parents[k];
            }
            if (rc || (d && !missing))
                continue;
            fate[i] = FATE_OUT;
            rep->not_carried++;
            rep->by_state[v->state]--;
            again = true;
            if (!d)
                rb_buf_printf(&rep->skipped_text, "jid %s: %s has no dep line: its parents are"
                                                  " not known (an export of an earlier"
                                                  " release?)\n", v->jid,
                              rb_job_state_name((rb_job_state)v->state));
            else
                rb_buf_printf(&rep->skipped_text, "jid %s: waits on %s, which is neither"
                                                  " imported nor stored here\n", v->jid,
                              missing);
        }
    }
    return rc;
}

/* The file's succeeded records and batches compared with the stored ones:
 * the new ones into todo (borrowed), the others skipped or reported. */
static void graph_lines(const rb_port_graph *db, const rb_port_graph *f, rb_port_graph *todo,
                        rb_import_report *rep)
{
    for (size_t i = 0; i < f->n_done; i++) {
        const rb_port_done *d = &f->done[i];
        size_t k = 0;
        while (k < db->n_done && strcmp(db->done[k].jid, d->jid))
            k++;
        if (k == db->n_done) {
            todo->done[todo->n_done++] = *d;
        } else if (db->done[k].until_ms == d->until_ms) {
            rep->graph_same++;
        } else {
            rep->conflicts++;
            rb_buf_printf(&rep->conflict_text, "succeeded record %s: until_ms: stored %lld,"
                                               " file %lld\n", d->jid,
                          (long long)db->done[k].until_ms, (long long)d->until_ms);
        }
    }
    /* a parent batch before its children: the file's order, each one
     * after its parent when that is new too */
    size_t n = f->n_batches;
    bool *taken = rb_xcalloc(n + 1, sizeof *taken);
    for (size_t i = 0; i < n; i++) {
        const rb_port_batch *b = &f->batches[i];
        size_t k = 0;
        while (k < db->n_batches && strcmp(db->batches[k].bid, b->bid))
            k++;
        if (k == db->n_batches)
            continue;
        taken[i] = true;
        if (same_json(db->batches[k].body, b->body)) {
            rep->graph_same++;
        } else {
            rep->conflicts++;
            rb_buf_printf(&rep->conflict_text, "batch %s: stored with other counts or"
                                               " callbacks\n", b->bid);
        }
    }
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < n; i++) {
            if (taken[i])
                continue;
            const char *pb = f->batches[i].parent_bid;
            bool wait = false;
            for (size_t k = 0; pb && k < n && !wait; k++)
                wait = !taken[k] && k != i && !strcmp(f->batches[k].bid, pb);
            if (wait)
                continue;
            taken[i] = again = true;
            todo->batches[todo->n_batches++] = f->batches[i];
        }
    }
    for (size_t i = 0; i < n; i++) /* a cycle of parents: in the file's order */
        if (!taken[i])
            todo->batches[todo->n_batches++] = f->batches[i];
    free(taken);
}

static bool has_unique(const rb_job_view *v)
{
    json_t *job = json_loads(v->json, 0, NULL);
    bool u = json_object_get(json_object_get(job, "custom"), "unique_for") != NULL;
    json_decref(job);
    return u;
}

void rb_import_report_release(rb_import_report *r)
{
    rb_buf_release(&r->conflict_text);
    rb_buf_release(&r->skipped_text);
}

int rb_import_run(rb_port *p, FILE *in, const char *name, rb_import_report *rep, rb_err *err)
{
    memset(rep, 0, sizeof *rep);
    rb_buf_init(&rep->conflict_text);
    rb_buf_init(&rep->skipped_text);
    parsed f = {0};
    int rc = read_all(in, name, &f, err);
    if (rc) {
        parsed_release(&f);
        return rc;
    }
    rep->jobs = f.n;
    rep->processed = f.processed;
    rep->failures = f.failures;
    rb_port_graph db = {0};
    rc = p->ops->graph(p, &db, err);
    int *fate = rb_xcalloc(f.n ? f.n : 1, sizeof *fate);
    rb_buf diff = RB_BUF_INIT;
    for (size_t i = 0; rc == 0 && i < f.n; i++) {
        rb_job_view *v = &f.jobs[i];
        rb_job_view dbv;
        bool found = false;
        if ((rc = p->ops->find(p, v->jid, &dbv, &found, err)))
            break;
        if (!found) {
            fate[i] = FATE_NEW;
            rep->by_state[v->state]++;
            continue;
        }
        fate[i] = FATE_STORED;
        rb_buf_reset(&diff);
        bool same = compare(&dbv, v, &diff);
        const rb_port_dep *fd = dep_of(&f.g, v->jid), *dd = dep_of(&db, v->jid);
        if (fd && dd)
            same = compare_dep(dd, fd, &diff) && same;
        else if (fd || dd) {
            rb_buf_printf(&diff, "; dependencies: %s", fd ? "none stored" : "none in the file");
            same = false;
        }
        if (same) {
            rep->same++;
        } else {
            rep->conflicts++;
            rb_buf_printf(&rep->conflict_text, "jid %s: %s\n", v->jid, rb_buf_str(&diff) + 2);
        }
        rb_job_view_release(&dbv);
    }
    rb_buf_release(&diff);
    if (rc == 0)
        rc = partial_graph(p, &f, fate, rep, err);
    rb_job_view *todo = rb_xcalloc(f.n ? f.n : 1, sizeof *todo);
    size_t n_todo = 0;
    rb_port_graph gtodo = {
        .deps = rb_xcalloc(f.g.n_deps + 1, sizeof *gtodo.deps),
        .done = rb_xcalloc(f.g.n_done + 1, sizeof *gtodo.done),
        .batches = rb_xcalloc(f.g.n_batches + 1, sizeof *gtodo.batches),
    };
    for (size_t i = 0; rc == 0 && i < f.n; i++) {
        if (fate[i] != FATE_NEW)
            continue;
        rb_job_view *v = &f.jobs[i];
        if (has_unique(v))
            rep->unique_dropped++;
        todo[n_todo++] = *v; /* borrowed from f */
        const rb_port_dep *d = held(v) ? dep_of(&f.g, v->jid) : NULL;
        if (d)
            gtodo.deps[gtodo.n_deps++] = *d;
    }
    if (rc == 0)
        graph_lines(&db, &f.g, &gtodo, rep);
    gtodo.debounce = rb_xcalloc(f.g.n_debounce + 1, sizeof *gtodo.debounce);
    gtodo.aliases = rb_xcalloc(f.g.n_aliases + 1, sizeof *gtodo.aliases);
    for (size_t i = 0; rc == 0 && i < f.g.n_debounce; i++) /* with their new jobs only */
        if (fate[json_integer_value(json_object_get(f.ix, f.g.debounce[i].jid))] == FATE_NEW)
            gtodo.debounce[gtodo.n_debounce++] = f.g.debounce[i];
    for (size_t i = 0; rc == 0 && i < f.g.n_aliases; i++)
        if (fate[json_integer_value(json_object_get(f.ix, f.g.aliases[i].into))] == FATE_NEW)
            gtodo.aliases[gtodo.n_aliases++] = f.g.aliases[i];
    bool set_counters = false;
    if (rc == 0) {
        int64_t proc, fail;
        rc = p->ops->counters(p, &proc, &fail, err);
        if (rc == 0) {
            if (proc == f.processed && fail == f.failures) {
                rep->counters = 0;
            } else if (proc == 0 && fail == 0) {
                rep->counters = 1;
                set_counters = true;
            } else {
                rep->counters = -1;
                rb_buf_printf(&rep->conflict_text,
                              "counters: processed: stored %" PRId64 ", file %" PRId64
                              "; failures: stored %" PRId64 ", file %" PRId64 "\n",
                              proc, f.processed, fail, f.failures);
            }
        }
    }
    /* the file's paused queues not paused yet */
    const char **pause = rb_xcalloc(f.n_paused + 1, sizeof *pause);
    size_t n_pause = 0;
    if (rc == 0 && f.n_paused) {
        char **names = NULL;
        size_t n = 0;
        rc = p->ops->paused(p, &names, &n, err);
        for (size_t i = 0; rc == 0 && i < f.n_paused; i++) {
            size_t k = 0;
            while (k < n && strcmp(names[k], f.paused[i]))
                k++;
            if (k < n)
                rep->paused_same++;
            else
                pause[n_pause++] = f.paused[i];
        }
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    bool graph = gtodo.n_deps || gtodo.n_done || gtodo.n_batches || gtodo.n_debounce ||
                 gtodo.n_aliases;
    if (rc == 0 && (n_todo || n_pause || set_counters || graph))
        rc = p->ops->write(p, todo, n_todo, pause, n_pause, set_counters, f.processed,
                           f.failures, &gtodo, err);
    if (rc == 0) {
        rep->paused_set = n_pause;
        rep->imported = n_todo;
        rep->deps = gtodo.n_deps;
        rep->done = gtodo.n_done;
        rep->batches = gtodo.n_batches;
        rep->debounce = gtodo.n_debounce;
        rep->aliases = gtodo.n_aliases;
    } else {
        memset(rep->by_state, 0, sizeof rep->by_state);
    }
    free(pause);
    free(gtodo.deps); /* the entries are f's */
    free(gtodo.done);
    free(gtodo.batches);
    free(gtodo.debounce);
    free(gtodo.aliases);
    free(todo);
    free(fate);
    rb_port_graph_release(&db);
    parsed_release(&f);
    return rc;
}
