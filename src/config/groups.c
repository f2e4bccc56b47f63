/* The [groups] table: the limits of a queue's named groups
 * (docs/configuration.md "Groups", docs/flow-control.md). Each key is a
 * queue, or "*" for every queue; its table holds concurrency, rate, period
 * and burst (engine/group.h's rules, shared with GROUP SET and
 * [throttles]' rate), read by config/queue_tables.c. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/load.h"

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

/* One queue's table read: appended to cfg->groups. */
static int add(void *arg, const rb_config_files *f, const rb_toml_kv *q,
               const rb_flow_override *limits, rb_err *err)
{
    (void)f;
    (void)err;
    rb_config *cfg = arg;
    cfg->groups[cfg->n_groups++] = (rb_group_conf){.queue = rb_xstrdup(q->key),
                                                   .limits = *limits,
                                                   .from = rb_config_from_value(q->val)};
    return 0;
}

int rb_config_load_groups(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                          rb_err *err)
{
    rb_config_groups_release(cfg);
    size_t n = sec->val->u.table.n;
    cfg->groups = n ? rb_xcalloc(n, sizeof *cfg->groups) : NULL;
    rb_queue_tables s = {.section = "groups",
                         .star = true,
                         .known = rb_flow_field_names,
                         .n_known = RB_FLOW_NFIELDS,
                         .add = add,
                         .arg = cfg};
    int rc = rb_config_queue_tables(f, sec, &s, err);
    if (rc < 0)
        rb_config_groups_release(cfg);
    return rc;
}
