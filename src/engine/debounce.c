/* Debounce's rules (engine/debounce.h): custom.debounce checked, the key's
 * hash, the merge and the run time, JOB's views. */
#include "engine/debounce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/depend.h"
#include "engine/job_state.h"

static json_t *custom_of(const json_t *job)
{
    json_t *c = json_is_object(job) ? json_object_get(job, "custom") : NULL;
    return json_is_object(c) ? c : NULL;
}

bool rb_debounce_has(const json_t *job)
{
    json_t *c = custom_of(job);
    return c && json_object_get(c, "debounce");
}

/* "got X": v as JSON, cut at 40 bytes. */
static int seconds_error(rb_err *err, const char *what, const json_t *v)
{
    char *given = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    int rc = rb_err_set(err, RB_EINVAL, "custom.debounce.%s, got %.40s", what,
                        given ? given : "?");
    free(given);
    return rc;
}

/* Seconds as a number in [lo, hi], else -1. */
static double seconds_in(const json_t *v, double lo, double hi)
{
    if (!json_is_number(v))
        return -1;
    double s = json_number_value(v);
    return isfinite(s) && s >= lo && s <= hi ? s : -1;
}

/* Which field a debounced job may not carry beside it, or NULL. */
static const char *combined_with(const json_t *job, const json_t *c)
{
    json_t *u = json_object_get(c, "unique_for");
    if (u && !json_is_null(u) && !(json_is_number(u) && json_number_value(u) == 0))
        return "custom.unique_for";
    json_t *bid = json_object_get(c, "bid");
    if (bid && !json_is_null(bid) && !(json_is_string(bid) && !*json_string_value(bid)))
        return "custom.bid";
    if (rb_dep_has(job))
        return "depends_on";
    const char *at = json_string_value(json_object_get(job, "at"));
    if (at && *at)
        return "at";
    return NULL;
}

int rb_debounce_parse(const json_t *job, rb_debounce_spec *out, rb_err *err)
{
    *out = (rb_debounce_spec){0};
    json_t *c = custom_of(job);
    json_t *d = c ? json_object_get(c, "debounce") : NULL;
    if (!d || json_is_null(d))
        return 0;
    if (!json_is_object(d))
        return rb_err_set(err, RB_EINVAL,
                          "custom.debounce must be an object {\"key\", \"for\", \"max\"}");
    const char *key = json_string_value(json_object_get(d, "key"));
    if (!key || !*key || strlen(key) > RB_DEBOUNCE_KEY_MAX)
        return rb_err_set(err, RB_EINVAL,
                          "custom.debounce.key must be a non-empty string of at most %d bytes",
                          RB_DEBOUNCE_KEY_MAX);
    json_t *f = json_object_get(d, "for");
    double for_s = seconds_in(f, 0.001, RB_DEBOUNCE_FOR_MAX);
    if (for_s < 0)
        return seconds_error(err, "for must be a number of seconds from 0.001 to 604800",
                             f ? f : json_null());
    json_t *m = json_object_get(d, "max");
    double max_s = 0;
    if (m && !json_is_null(m) && (max_s = seconds_in(m, for_s, RB_DEBOUNCE_MAX_MAX)) < 0) {
        char what[96];
        snprintf(what, sizeof what, "max must be a number of seconds from for (%g) to 2592000",
                 for_s);
        return seconds_error(err, what, m);
    }
    const char *with = combined_with(job, c);
    if (with)
        return rb_err_set(err, RB_EINVAL, "custom.debounce cannot be combined with %s", with);
    *out = (rb_debounce_spec){.on = true, .key = key, .for_ms = (int64_t)llround(for_s * 1000),
                              .max_ms = (int64_t)llround(max_s * 1000)};
    if (out->for_ms < 1)
        out->for_ms = 1;
    return 0;
}

char *rb_debounce_hash(const json_t *job, const char *key, char out[RB_DEBOUNCE_HASH_LEN])
{
    const char *type = json_string_value(json_object_get(job, "jobtype"));
    const char *queue = json_string_value(json_object_get(job, "queue"));
    return rb_key_hash(type ? type : "", queue ? queue : "default", key, out);
}

bool rb_debounce_mergeable(int st)
{
    return st == RB_JOB_PENDING || st == RB_JOB_SCHEDULED || st == RB_JOB_ENQUEUED;
}

int64_t rb_debounce_run_at(const rb_debounce_spec *s, int64_t now, int64_t first_ms)
{
    int64_t at = now + s->for_ms;
    if (s->max_ms && first_ms + s->max_ms < at)
        at = first_ms + s->max_ms;
    return at;
}

void rb_debounce_merge(json_t *stored, const json_t *push)
{
    static const char *const taken[] = {"args", "custom"};
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++) {
        json_t *v = json_object_get(push, taken[i]);
        if (v)
            json_object_set(stored, taken[i], v);
        else
            json_object_del(stored, taken[i]);
    }
}

char *rb_debounce_merge_text(const char *text, const json_t *push)
{
    json_t *o = json_loads(text, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    rb_debounce_merge(o, push);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

void rb_debounce_view_free(rb_debounce_view *v)
{
    if (!v)
        return;
    free(v->key);
    free(v->last_alias);
    free(v);
}

json_t *rb_debounce_view_json(const rb_debounce_view *v)
{
    char first[RB_TIME_STRLEN], runs[RB_TIME_STRLEN];
    return json_pack("{s:s, s:s, s:s, s:I, s:o}", "key", v->key ? v->key : "", "first_at",
                     rb_time_format(v->first_ms, first), "runs_at",
                     rb_time_format(v->runs_ms, runs), "merged", (json_int_t)v->merged,
                     "last_alias", v->last_alias ? json_string(v->last_alias) : json_null());
}

void rb_debounce_alias_release(rb_debounce_alias *a)
{
    free(a->alias);
    free(a->into);
    free(a->key);
    memset(a, 0, sizeof *a);
}

json_t *rb_debounce_alias_json(const rb_debounce_alias *a)
{
    char at[RB_TIME_STRLEN];
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "jid", a->alias, "state", "debounced",
                     "debounced_into", a->into, "key", a->key ? a->key : "", "merged_at",
                     rb_time_format(a->merged_ms, at));
}
