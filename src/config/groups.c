/* The [groups] table: the limits of a queue's named groups
 * (docs/configuration.md "Groups", docs/flow-control.md). Each key is a
 * queue, or "*" for every queue; its table holds concurrency, rate, period
 * and burst (engine/group.h's rules, shared with GROUP SET and
 * [throttles]' rate). */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/toml_json.h"

const rb_flow_override *rb_config_groups_of(const rb_config *cfg, const char *queue)
{
    for (size_t i = 0; i < cfg->n_groups; i++)
        if (!strcmp(cfg->groups[i].queue, queue))
            return &cfg->groups[i].limits;
    return NULL;
}

void rb_config_group_limits(const rb_config *cfg, const char *queue, const rb_flow_override *over,
                            rb_flow_limits *out, rb_flow_from from[RB_FLOW_NFIELDS])
{
    rb_flow_limits_resolve(over, rb_config_groups_of(cfg, queue), rb_config_groups_of(cfg, "*"),
                           out, from);
}

bool rb_config_has_flow_limits(const rb_config *cfg)
{
    for (size_t i = 0; i < cfg->n_throttles; i++)
        if (cfg->throttles[i].rate)
            return true;
    for (size_t i = 0; i < cfg->n_groups; i++)
        if (cfg->groups[i].limits.v.concurrency || cfg->groups[i].limits.v.rate)
            return true;
    return false;
}

void rb_config_groups_release(rb_config *cfg)
{
    for (size_t i = 0; i < cfg->n_groups; i++)
        free(cfg->groups[i].queue);
    free(cfg->groups);
    cfg->groups = NULL;
    cfg->n_groups = 0;
}

json_t *rb_config_groups_json(const rb_config *cfg)
{
    json_t *o = json_object();
    for (size_t i = 0; i < cfg->n_groups; i++) {
        json_t *e = rb_flow_override_json(&cfg->groups[i].limits);
        json_object_set_new(e, "from", json_string(rb_config_from_name(cfg->groups[i].from)));
        json_object_set_new(o, cfg->groups[i].queue, e);
    }
    return o;
}

int rb_config_flow_key(const rb_config_files *f, const char *tkey, const rb_toml_kv *kv,
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

/* One queue's table q into g. */
static int load_one(const rb_config_files *f, const rb_toml_kv *q, rb_group_conf *g, rb_err *err)
{
    rb_buf key = RB_BUF_INIT;
    int rc = 0;
    rb_buf_printf(&key, "groups.%s", q->key);
    if (q->val->type != RB_TOML_TABLE) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "must be a table ([groups.%s] or %s = {concurrency = N}), got %s",
                            q->key, q->key, rb_toml_type_name(q->val->type));
        goto out;
    }
    if (strlen(q->key) != q->keylen || (strcmp(q->key, "*") && !rb_group_name_valid(q->key, q->keylen))) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "a queue name must be a non-empty string without spaces (or \"*\": "
                            "every queue)");
        goto out;
    }
    for (size_t i = 0; i < q->val->u.table.n && rc == 0; i++) {
        const rb_toml_kv *kv = &q->val->u.table.items[i];
        rc = rb_config_flow_key(f, rb_buf_str(&key), kv, &g->limits, err);
        if (rc == RB_ENOENT) {
            rb_buf full = RB_BUF_INIT;
            rb_buf_printf(&full, "%s.%s", rb_buf_str(&key), kv->key);
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(kv->key, rb_flow_field_names, RB_FLOW_NFIELDS));
            rb_buf_release(&full);
        }
    }
    rb_err e = {0};
    if (rc == 0 && rb_flow_override_check(&g->limits, &e))
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL, "%s",
                            e.msg);
out:
    rb_buf_release(&key);
    return rc;
}

int rb_config_load_groups(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                          rb_err *err)
{
    rb_config_groups_release(cfg);
    size_t n = sec->val->u.table.n;
    cfg->groups = n ? rb_xcalloc(n, sizeof *cfg->groups) : NULL;
    for (size_t i = 0; i < n; i++) {
        const rb_toml_kv *q = &sec->val->u.table.items[i];
        rb_group_conf g = {0};
        int rc = load_one(f, q, &g, err);
        if (rc < 0) {
            rb_config_groups_release(cfg);
            return rc;
        }
        g.queue = rb_xstrdup(q->key);
        g.from = rb_config_from_value(q->val);
        cfg->groups[cfg->n_groups++] = g;
    }
    return 0;
}
