/* The TOML tree: lookup, freeing, origin tags and the overlay merge. */
#include "config/toml.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

void rb_toml_free(rb_toml_value *v)
{
    if (!v)
        return;
    switch (v->type) {
    case RB_TOML_TABLE:
        for (size_t i = 0; i < v->u.table.n; i++) {
            free(v->u.table.items[i].key);
            rb_toml_free(v->u.table.items[i].val);
        }
        free(v->u.table.items);
        break;
    case RB_TOML_ARRAY:
        for (size_t i = 0; i < v->u.array.n; i++)
            rb_toml_free(v->u.array.items[i]);
        free(v->u.array.items);
        break;
    case RB_TOML_STRING:
        free(v->u.str.s);
        break;
    default:
        break;
    }
    free(v);
}

rb_toml_kv *rb_toml_get_kv(const rb_toml_value *t, const char *key)
{
    if (!t || t->type != RB_TOML_TABLE)
        return NULL;
    size_t len = strlen(key);
    for (size_t i = 0; i < t->u.table.n; i++) {
        rb_toml_kv *kv = &t->u.table.items[i];
        if (kv->keylen == len && !memcmp(kv->key, key, len))
            return kv;
    }
    return NULL;
}

rb_toml_value *rb_toml_get(const rb_toml_value *t, const char *key)
{
    rb_toml_kv *kv = rb_toml_get_kv(t, key);
    return kv ? kv->val : NULL;
}

void rb_toml_set_origin(rb_toml_value *v, int origin)
{
    v->origin = origin;
    if (v->type == RB_TOML_TABLE)
        for (size_t i = 0; i < v->u.table.n; i++)
            rb_toml_set_origin(v->u.table.items[i].val, origin);
    else if (v->type == RB_TOML_ARRAY)
        for (size_t i = 0; i < v->u.array.n; i++)
            rb_toml_set_origin(v->u.array.items[i], origin);
}

void rb_toml_merge(rb_toml_value *base, rb_toml_value *overlay)
{
    for (size_t i = 0; i < overlay->u.table.n; i++) {
        rb_toml_kv *o = &overlay->u.table.items[i];
        rb_toml_kv *b = NULL;
        for (size_t j = 0; j < base->u.table.n; j++)
            if (base->u.table.items[j].keylen == o->keylen &&
                !memcmp(base->u.table.items[j].key, o->key, o->keylen))
                b = &base->u.table.items[j];
        if (b && b->val->type == RB_TOML_TABLE && o->val->type == RB_TOML_TABLE) {
            rb_toml_merge(b->val, o->val);
            o->val = NULL;
        } else if (b) {
            rb_toml_free(b->val);
            b->val = o->val;
            b->line = o->line;
            b->col = o->col;
            o->val = NULL;
        } else {
            if (base->u.table.n == base->u.table.cap) {
                base->u.table.cap = base->u.table.cap ? base->u.table.cap * 2 : 8;
                base->u.table.items = rb_xrealloc(base->u.table.items,
                                                  base->u.table.cap * sizeof(rb_toml_kv));
            }
            base->u.table.items[base->u.table.n++] = *o;
            o->key = NULL;
            o->val = NULL;
        }
    }
    for (size_t i = 0; i < overlay->u.table.n; i++) {
        free(overlay->u.table.items[i].key);
        rb_toml_free(overlay->u.table.items[i].val);
    }
    free(overlay->u.table.items);
    free(overlay);
}

const char *rb_toml_type_name(rb_toml_type t)
{
    switch (t) {
    case RB_TOML_TABLE: return "table";
    case RB_TOML_ARRAY: return "array";
    case RB_TOML_STRING: return "string";
    case RB_TOML_INTEGER: return "integer";
    case RB_TOML_FLOAT: return "float";
    case RB_TOML_BOOL: return "bool";
    case RB_TOML_DATETIME: return "datetime";
    case RB_TOML_DATETIME_LOCAL: return "datetime-local";
    case RB_TOML_DATE_LOCAL: return "date-local";
    case RB_TOML_TIME_LOCAL: return "time-local";
    }
    return "?";
}
