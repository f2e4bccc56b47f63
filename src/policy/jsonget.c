/* Typed reads of a SPEC object's fields, with messages that name the field. */
#include "policy/dialect.h"
#include "policy/duration.h"

#include <stdio.h>
#include <stdlib.h>

const char *rb_json_brief(const json_t *v, char *out, size_t n)
{
    if (json_is_string(v)) {
        snprintf(out, n, "%s", json_string_value(v));
        return out;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(out, n, "%s", s ? s : "?");
    free(s);
    return out;
}

int rb_json_get_int(const json_t *obj, const char *key, int64_t *val, rb_err *err)
{
    const json_t *v = json_object_get(obj, key);
    char b[64];
    if (!v)
        return 1;
    if (!json_is_integer(v))
        return rb_err_set(err, RB_EINVAL, "%s: must be an integer, got '%s'", key,
                          rb_json_brief(v, b, sizeof b));
    *val = (int64_t)json_integer_value(v);
    return 0;
}

int rb_json_get_number(const json_t *obj, const char *key, double *val, rb_err *err)
{
    const json_t *v = json_object_get(obj, key);
    char b[64];
    if (!v)
        return 1;
    if (!json_is_number(v))
        return rb_err_set(err, RB_EINVAL, "%s: must be a number, got '%s'", key,
                          rb_json_brief(v, b, sizeof b));
    *val = json_number_value(v);
    return 0;
}

int rb_json_get_bool(const json_t *obj, const char *key, bool *val, rb_err *err)
{
    const json_t *v = json_object_get(obj, key);
    char b[64];
    if (!v)
        return 1;
    if (!json_is_boolean(v))
        return rb_err_set(err, RB_EINVAL, "%s: must be true or false, got '%s'", key,
                          rb_json_brief(v, b, sizeof b));
    *val = json_is_true(v);
    return 0;
}

int rb_json_get_duration(const json_t *obj, const char *key, int64_t *ms, rb_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return 1;
    int rc = rb_duration_from_json(v, ms, err);
    if (rc)
        rb_err_prefix(err, "%s", key);
    return rc;
}
