/* The tables keyed by queue whose entries hold flow limits, read once for
 * [groups] and [throttles] (config/load.h's rb_config_queue_tables): each
 * entry a table, its key a queue name, its keys the limits' (concurrency,
 * rate, period, burst: engine/group.h's rules) and the section's own, each
 * mistake named with the file, line, key and rule. */
#include <string.h>

#include "common/buf.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/toml_json.h"

/* One limits key of the table named tkey into o; 0, RB_ENOENT for another
 * key (nothing said), or RB_EINVAL with err "FILE:LINE: key 'TKEY.KEY':
 * rule". */
static int flow_key(const rb_config_files *f, const char *tkey, const rb_toml_kv *kv,
                    rb_flow_override *o, rb_err *err)
{
    json_t *j = rb_toml_to_json(kv->val);
    rb_err e = {0};
    int rc = rb_flow_key_parse(o, kv->key, j, &e);
    json_decref(j);
    if (rc == RB_EINVAL) {
        rb_buf full = RB_BUF_INIT;
        rb_buf_printf(&full, "%s.%s", tkey, kv->key);
        rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL, "%s",
                            e.msg);
        rb_buf_release(&full);
    }
    return rc;
}

/* Table q of section s (key "S.Q") into *limits, s->key taking its own keys
 * first. */
static int one(const rb_config_files *f, const rb_toml_kv *q, const rb_queue_tables *s,
               rb_flow_override *limits, rb_err *err)
{
    rb_buf key = RB_BUF_INIT;
    int rc = 0;
    rb_buf_printf(&key, "%s.%s", s->section, q->key);
    if (q->val->type != RB_TOML_TABLE) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "must be a table ([%s.%s] or %s = {concurrency = N}), got %s",
                            s->section, q->key, q->key, rb_toml_type_name(q->val->type));
        goto out;
    }
    bool star = s->star && !strcmp(q->key, "*");
    if (strlen(q->key) != q->keylen || (!star && !rb_group_name_valid(q->key, q->keylen))) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "a queue name must be a non-empty string without spaces%s",
                            s->star ? " (or \"*\": every queue)" : "");
        goto out;
    }
    for (size_t i = 0; i < q->val->u.table.n && rc == 0; i++) {
        const rb_toml_kv *kv = &q->val->u.table.items[i];
        rb_buf full = RB_BUF_INIT;
        rb_buf_printf(&full, "%s.%s", rb_buf_str(&key), kv->key);
        rc = s->key ? s->key(s->arg, f, rb_buf_str(&full), kv, err) : RB_ENOENT;
        if (rc == RB_ENOENT)
            rc = flow_key(f, rb_buf_str(&key), kv, limits, err);
        if (rc == RB_ENOENT)
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(kv->key, s->known, s->n_known));
        rb_buf_release(&full);
    }
    rb_err e = {0};
    if (rc == 0 && rb_flow_override_check(limits, &e))
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL, "%s",
                            e.msg);
out:
    rb_buf_release(&key);
    return rc;
}

int rb_config_queue_tables(const rb_config_files *f, const rb_toml_kv *sec,
                           const rb_queue_tables *s, rb_err *err)
{
    for (size_t i = 0; i < sec->val->u.table.n; i++) {
        const rb_toml_kv *q = &sec->val->u.table.items[i];
        rb_flow_override limits = {0};
        int rc = one(f, q, s, &limits, err);
        if (rc == 0)
            rc = s->add(s->arg, f, q, &limits, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
