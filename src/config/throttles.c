/* The [throttles] table: Faktory Enterprise's queue throttles
 * (docs/configuration.md, docs/enterprise.md "Throttles"). Each key is a
 * queue; its table holds concurrency and timeout, and a rate (rate, period,
 * burst: engine/group.h's rules, as [groups]; config/queue_tables.c reads
 * both); concurrency or rate is required. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/toml_json.h"
#include "policy/duration.h"

#define MAX_CONCURRENCY 1000000
#define MAX_TIMEOUT_S (7 * 86400)

const rb_throttle *rb_config_throttle(const rb_config *cfg, const char *queue)
{
    for (size_t i = 0; i < cfg->n_throttles; i++)
        if (!strcmp(cfg->throttles[i].queue, queue))
            return &cfg->throttles[i];
    return NULL;
}

void rb_config_throttles_release(rb_config *cfg)
{
    for (size_t i = 0; i < cfg->n_throttles; i++)
        free(cfg->throttles[i].queue);
    free(cfg->throttles);
    cfg->throttles = NULL;
    cfg->n_throttles = 0;
}

/* The throttle being read (rb_queue_tables' arg). */
typedef struct reading {
    rb_config *cfg;
    rb_throttle t; /* the current table's concurrency and timeout */
    bool has_conc;
} reading;

/* A throttle's own key (concurrency, timeout, and Faktory's worker,
 * refused): RB_ENOENT for the others (the limits'). */
static int key(void *arg, const rb_config_files *f, const char *full, const rb_toml_kv *kv,
               rb_err *err)
{
    reading *r = arg;
    const rb_toml_value *v = kv->val;
    if (!strcmp(kv->key, "concurrency")) {
        if (v->type != RB_TOML_INTEGER)
            return rb_config_fail(f, v->origin, kv->line, full, err, RB_EINVAL,
                                  "must be an integer from 1 to %d, got %s", MAX_CONCURRENCY,
                                  rb_toml_type_name(v->type));
        if (v->u.i < 1 || v->u.i > MAX_CONCURRENCY)
            return rb_config_fail(f, v->origin, kv->line, full, err, RB_EINVAL,
                                  "must be an integer from 1 to %d, got %lld", MAX_CONCURRENCY,
                                  (long long)v->u.i);
        r->t.concurrency = v->u.i;
        r->has_conc = true;
        return 0;
    }
    if (!strcmp(kv->key, "timeout")) {
        int64_t ms = -1;
        rb_err derr = {0};
        if (v->type == RB_TOML_STRING || v->type == RB_TOML_INTEGER || v->type == RB_TOML_FLOAT) {
            json_t *j = rb_toml_to_json(v);
            if (rb_duration_from_json(j, &ms, &derr) < 0)
                ms = -1;
            json_decref(j);
        }
        if (ms < 1000 || ms % 1000 || ms / 1000 > MAX_TIMEOUT_S)
            return rb_config_fail(f, v->origin, kv->line, full, err, RB_EINVAL,
                                  "must be a duration from 1s to 7d (\"90s\", \"30m\", or "
                                  "whole seconds)");
        r->t.timeout_s = ms / 1000;
        return 0;
    }
    if (!strcmp(kv->key, "worker")) /* Faktory's key: said so, not a spelling guess */
        return rb_config_fail(f, v->origin, kv->line, full, err, RB_EINVAL,
                              "per-worker throttles are not supported (a throttle takes "
                              "concurrency, timeout, rate, period and burst)");
    return RB_ENOENT;
}

/* One queue's table read, its rate in limits: appended to cfg->throttles
 * when it has a concurrency or a rate. */
static int add(void *arg, const rb_config_files *f, const rb_toml_kv *q,
               const rb_flow_override *limits, rb_err *err)
{
    reading *r = arg;
    rb_throttle t = r->t;
    bool has_conc = r->has_conc;
    r->t = (rb_throttle){0};
    r->has_conc = false;
    if (!has_conc && !limits->v.rate) {
        rb_buf k = RB_BUF_INIT;
        rb_buf_printf(&k, "throttles.%s", q->key);
        int rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&k), err, RB_EINVAL,
                                "concurrency or rate is required (an integer from 1 to %d)",
                                MAX_CONCURRENCY);
        rb_buf_release(&k);
        return rc;
    }
    if (limits->v.rate) {
        t.rate = limits->v.rate;
        t.period_ms = limits->v.period_ms;
        t.burst = limits->v.burst;
    }
    t.queue = rb_xstrdup(q->key);
    t.from = rb_config_from_value(q->val);
    r->cfg->throttles[r->cfg->n_throttles++] = t;
    return 0;
}

int rb_config_load_throttles(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                             rb_err *err)
{
    static const char *const known[] = {"concurrency", "timeout", "rate", "period", "burst"};
    rb_config_throttles_release(cfg);
    size_t n = sec->val->u.table.n;
    cfg->throttles = n ? rb_xcalloc(n, sizeof *cfg->throttles) : NULL;
    reading r = {.cfg = cfg};
    rb_queue_tables s = {.section = "throttles",
                         .known = known,
                         .n_known = sizeof known / sizeof *known,
                         .key = key,
                         .add = add,
                         .arg = &r};
    return rb_config_queue_tables(f, sec, &s, err);
}
