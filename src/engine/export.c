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
#include "engine/job_state.h"

#define N_STATES 8

/* --- writing --- */

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

/* The file's contents once checked. */
typedef struct parsed {
    rb_job_view *jobs;
    size_t n, cap;
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
                rc = rb_err_set(err, RB_EINVAL, "field 'type' must be \"job\", \"queue\","
                                                " \"counters\" or \"end\"");
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
    json_decref(seen);
    if (rc == 0 && ferror(in))
        return rb_err_set(err, RB_EIO, "cannot read '%s': %s", name, strerror(errno));
    if (rc == 0 && !header)
        return rb_err_set(err, RB_EINVAL, "%s: empty file, not a rebound export", name);
    if (rc == 0 && !end)
        return rb_err_set(err, RB_EINVAL, "%s:%zu: the file ends without its end line"
                                          " (truncated?)", name, lineno);
    if (rc)
        rb_err_prefix(err, "%s:%zu", name, lineno);
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
    if (!same_json(db->json, f->json))
        rb_buf_adds(out, "; job differs");
    return out->len == start;
}

/* Why a job is not carried, or NULL. */
static const char *not_carried(const rb_job_view *v)
{
    if (v->state == RB_JOB_WAITING || v->state == RB_JOB_BLOCKED)
        return "waits on job dependencies, which are not carried";
    json_t *job = json_loads(v->json, 0, NULL);
    const char *bid = json_string_value(json_object_get(json_object_get(job, "custom"), "bid"));
    bool member = bid && *bid;
    json_decref(job);
    return member ? "is a batch member; batches are not carried" : NULL;
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
    rb_job_view *todo = rb_xcalloc(f.n ? f.n : 1, sizeof *todo);
    size_t n_todo = 0;
    rb_buf diff = RB_BUF_INIT;
    for (size_t i = 0; rc == 0 && i < f.n; i++) {
        rb_job_view *v = &f.jobs[i];
        rb_job_view db;
        bool found = false;
        if ((rc = p->ops->find(p, v->jid, &db, &found, err)))
            break;
        if (found) {
            rb_buf_reset(&diff);
            if (compare(&db, v, &diff)) {
                rep->same++;
            } else {
                rep->conflicts++;
                rb_buf_printf(&rep->conflict_text, "jid %s: %s\n", v->jid, rb_buf_str(&diff) + 2);
            }
            rb_job_view_release(&db);
            continue;
        }
        const char *why = not_carried(v);
        if (why) {
            rep->not_carried++;
            rb_buf_printf(&rep->skipped_text, "jid %s: %s\n", v->jid, why);
            continue;
        }
        if (has_unique(v))
            rep->unique_dropped++;
        rep->by_state[v->state]++;
        todo[n_todo++] = *v; /* borrowed from f */
    }
    rb_buf_release(&diff);
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
    if (rc == 0 && (n_todo || n_pause || set_counters))
        rc = p->ops->write(p, todo, n_todo, pause, n_pause, set_counters, f.processed,
                           f.failures, err);
    if (rc == 0)
        rep->paused_set = n_pause;
    free(pause);
    if (rc == 0)
        rep->imported = n_todo;
    else
        memset(rep->by_state, 0, sizeof rep->by_state);
    free(todo);
    parsed_release(&f);
    return rc;
}
