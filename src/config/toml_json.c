/* TOML trees as JSON: plain values (for the policy parsers) and toml-test's
 * tagged form (for the conformance tests and tests/tools/toml_decode). */
#include "config/toml_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void rb_toml_format_float(double f, char *out, size_t cap)
{
    if (isnan(f)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(out, cap, f < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, f);
        if (strtod(out, NULL) == f)
            break;
    }
}

static json_t *table_json(const rb_toml_value *v, bool tagged)
{
    json_t *o = json_object();
    for (size_t i = 0; i < v->u.table.n; i++) {
        const rb_toml_kv *kv = &v->u.table.items[i];
        json_object_setn_new(o, kv->key, kv->keylen,
                             tagged ? rb_toml_to_tagged_json(kv->val) : rb_toml_to_json(kv->val));
    }
    return o;
}

static json_t *array_json(const rb_toml_value *v, bool tagged)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->u.array.n; i++)
        json_array_append_new(a, tagged ? rb_toml_to_tagged_json(v->u.array.items[i])
                                        : rb_toml_to_json(v->u.array.items[i]));
    return a;
}

json_t *rb_toml_to_json(const rb_toml_value *v)
{
    char buf[64];
    switch (v->type) {
    case RB_TOML_TABLE: return table_json(v, false);
    case RB_TOML_ARRAY: return array_json(v, false);
    case RB_TOML_STRING: return json_stringn(v->u.str.s, v->u.str.len);
    case RB_TOML_INTEGER: return json_integer(v->u.i);
    case RB_TOML_FLOAT:
        if (!isfinite(v->u.f)) {
            rb_toml_format_float(v->u.f, buf, sizeof buf);
            return json_string(buf);
        }
        return json_real(v->u.f);
    case RB_TOML_BOOL: return json_boolean(v->u.b);
    default: return json_string(rb_toml_format_datetime(v->type, &v->u.dt, buf));
    }
}

json_t *rb_toml_to_tagged_json(const rb_toml_value *v)
{
    char buf[64];
    json_t *text;
    switch (v->type) {
    case RB_TOML_TABLE: return table_json(v, true);
    case RB_TOML_ARRAY: return array_json(v, true);
    case RB_TOML_STRING: text = json_stringn(v->u.str.s, v->u.str.len); break;
    case RB_TOML_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)v->u.i);
        text = json_string(buf);
        break;
    case RB_TOML_FLOAT:
        rb_toml_format_float(v->u.f, buf, sizeof buf);
        text = json_string(buf);
        break;
    case RB_TOML_BOOL: text = json_string(v->u.b ? "true" : "false"); break;
    default: text = json_string(rb_toml_format_datetime(v->type, &v->u.dt, buf)); break;
    }
    return json_pack("{s:s, s:o}", "type", rb_toml_type_name(v->type), "value", text);
}
