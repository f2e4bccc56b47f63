/* SPEC parsing (semantics.md §7): which dialect a SPEC is written in, and
 * handing it to that dialect's parser. */
#include "policy/dialect.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"

static const struct {
    rb_dialect dialect;
    const char *const *keys;
} dialect_keys[] = {
    {RB_DIALECT_TEMPORAL, rb_dialect_temporal_keys}, {RB_DIALECT_TASKER, rb_dialect_tasker_keys},
    {RB_DIALECT_FTL, rb_dialect_ftl_keys},           {RB_DIALECT_FAKTORY, rb_dialect_faktory_keys},
    {RB_DIALECT_TUTORIAL, rb_dialect_tutorial_keys},
};
enum { N_DIALECTS = sizeof dialect_keys / sizeof dialect_keys[0] };

/* The dialect that owns key; false for an unknown key. */
static bool key_dialect(const char *key, rb_dialect *d)
{
    for (size_t i = 0; i < N_DIALECTS; i++)
        for (const char *const *k = dialect_keys[i].keys; *k; k++)
            if (!strcmp(*k, key)) {
                *d = dialect_keys[i].dialect;
                return true;
            }
    return false;
}

/* Works out obj's dialect: named by "dialect", else from its keys. Every
 * other key must be known and belong to that dialect. */
static int detect(const json_t *obj, rb_dialect *out, rb_err *err)
{
    const json_t *named = json_object_get(obj, "dialect");
    bool have = false;
    const char *first_key = NULL;
    rb_dialect d = RB_DIALECT_FAKTORY;
    char b[64];
    if (named) {
        if (!json_is_string(named) || rb_dialect_from_name(json_string_value(named), &d) != 0)
            return rb_err_set(err, RB_EINVAL,
                              "dialect: unknown dialect '%s' (known: temporal, tasker, ftl, "
                              "faktory, tutorial)",
                              rb_json_brief(named, b, sizeof b));
        have = true;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        rb_dialect kd;
        if (!strcmp(key, "dialect"))
            continue;
        if (!key_dialect(key, &kd))
            return rb_err_set(err, RB_EINVAL, "%s: unknown key%s%s", key,
                              have ? " for dialect " : "", have ? rb_dialect_name(d) : "");
        if (!have) {
            d = kd;
            have = true;
            first_key = key;
        } else if (kd != d) {
            if (named)
                return rb_err_set(err, RB_EINVAL, "%s: is a %s key, not a %s one", key,
                                  rb_dialect_name(kd), rb_dialect_name(d));
            return rb_err_set(err, RB_EINVAL,
                              "%s: keys of two dialects: '%s' is %s, '%s' is %s", key, first_key,
                              rb_dialect_name(d), key, rb_dialect_name(kd));
        }
    }
    if (!have)
        return rb_err_set(err, RB_EINVAL,
                          "dialect: no known policy key in the object (name one with \"dialect\": "
                          "temporal, tasker, ftl, faktory or tutorial)");
    *out = d;
    return 0;
}

/* "ftl:..." or "//ftl:retry ..." (also "ftl:retry ..."): the directive text
 * after the prefix, or NULL when s is not an FTL directive. */
static const char *ftl_body(const char *s)
{
    if (!strncmp(s, "//", 2)) {
        s += 2;
        while (*s == ' ' || *s == '\t')
            s++;
        if (strncmp(s, "ftl:retry", 9) || (s[9] && !isspace((unsigned char)s[9])))
            return NULL;
        return s + 9;
    }
    if (strncmp(s, "ftl:", 4))
        return NULL;
    s += 4;
    if (!strncmp(s, "retry", 5) && (!s[5] || isspace((unsigned char)s[5])))
        s += 5;
    return s;
}

static int parse_object(const json_t *obj, const rb_backoff_config *sys, rb_policy *out,
                        rb_err *err)
{
    rb_dialect d = RB_DIALECT_FAKTORY;
    int rc = detect(obj, &d, err);
    if (rc)
        return rc;
    switch (d) {
    case RB_DIALECT_TEMPORAL: return rb_dialect_parse_temporal(obj, out, err);
    case RB_DIALECT_TASKER: return rb_dialect_parse_tasker(obj, sys, out, err);
    case RB_DIALECT_FAKTORY: return rb_dialect_parse_faktory(obj, out, err);
    case RB_DIALECT_TUTORIAL: return rb_dialect_parse_tutorial(obj, out, err);
    case RB_DIALECT_FTL: {
        const json_t *t = json_object_get(obj, "ftl");
        char b[64];
        if (!t)
            return rb_dialect_parse_ftl_text("", out, err);
        if (!json_is_string(t))
            return rb_err_set(err, RB_EINVAL, "ftl: must be a directive string such as "
                                              "\"10 5s 1m\", got '%s'",
                              rb_json_brief(t, b, sizeof b));
        const char *body = ftl_body(json_string_value(t));
        return rb_dialect_parse_ftl_text(body ? body : json_string_value(t), out, err);
    }
    }
    return rb_err_set(err, RB_EINVAL, "dialect: unsupported");
}

/* Runs a parser into a scratch policy so *out is untouched on failure. */
static int finish(int rc, rb_policy *tmp, rb_policy *out)
{
    if (rc) {
        rb_policy_release(tmp);
        return rc < 0 ? rc : RB_EINVAL;
    }
    *out = *tmp;
    return 0;
}

int rb_policy_parse_json(const json_t *v, const rb_backoff_config *sys, rb_policy *out,
                         rb_err *err)
{
    rb_policy tmp;
    memset(&tmp, 0, sizeof tmp);
    char b[64];
    if (json_is_object(v))
        return finish(parse_object(v, sys, &tmp, err), &tmp, out);
    if (json_is_string(v))
        return rb_policy_parse_spec(json_string_value(v), sys, out, err);
    if (json_is_integer(v)) {
        json_t *o = json_pack("{sI}", "retry", json_integer_value(v));
        int rc = finish(rb_dialect_parse_faktory(o, &tmp, err), &tmp, out);
        json_decref(o);
        return rc;
    }
    return rb_err_set(err, RB_EINVAL,
                      "must be an object, a SPEC string or an integer, got '%s'",
                      v ? rb_json_brief(v, b, sizeof b) : "nothing");
}

int rb_policy_parse_spec(const char *spec, const rb_backoff_config *sys, rb_policy *out,
                         rb_err *err)
{
    rb_policy tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!spec)
        spec = "";
    while (isspace((unsigned char)*spec))
        spec++;
    if (*spec == '{') {
        json_error_t je;
        json_t *v = json_loads(spec, 0, &je);
        if (!v)
            return rb_err_set(err, RB_EPARSE, "spec: invalid JSON at column %d: %s", je.column,
                              je.text);
        int rc = finish(parse_object(v, sys, &tmp, err), &tmp, out);
        json_decref(v);
        return rc;
    }
    const char *body = ftl_body(spec);
    if (body)
        return finish(rb_dialect_parse_ftl_text(body, &tmp, err), &tmp, out);
    if (!strncmp(spec, "faktory:", 8)) {
        const char *n = spec + 8;
        char *end;
        errno = 0;
        long long r = strtoll(n, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (!*n || isspace((unsigned char)*n) || *end || errno == ERANGE)
            return rb_err_set(err, RB_EINVAL, "retry: must be an integer, got '%s'", n);
        json_t *o = json_pack("{sI}", "retry", (json_int_t)r);
        int rc = finish(rb_dialect_parse_faktory(o, &tmp, err), &tmp, out);
        json_decref(o);
        return rc;
    }
    return rb_err_set(err, RB_EINVAL,
                      "spec: unrecognised '%s' (expected a JSON object, 'ftl:COUNT MIN MAX', "
                      "'//ftl:retry ...' or 'faktory:N')",
                      spec);
}
