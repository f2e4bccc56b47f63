/* The [throttles] table: Faktory Enterprise's queue throttles
 * (docs/configuration.md, docs/enterprise.md "Throttles"). Each key is a
 * queue; its table holds concurrency and timeout, and a rate (rate, period,
 * burst: engine/group.h's rules, as [groups]); concurrency or rate is
 * required. */
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

/* One queue's table q (key name) into t. */
static int load_one(const rb_config_files *f, const rb_toml_kv *q, rb_throttle *t, rb_err *err)
{
    rb_buf key = RB_BUF_INIT;
    int rc = 0;
    rb_buf_printf(&key, "throttles.%s", q->key);
    if (q->val->type != RB_TOML_TABLE) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "must be a table ([throttles.%s] or %s = {concurrency = N}), got %s",
                            q->key, q->key, rb_toml_type_name(q->val->type));
        goto out;
    }
    if (!*q->key || strlen(q->key) != q->keylen || strchr(q->key, ' ')) {
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "a queue name must be a non-empty string without spaces");
        goto out;
    }
    bool has_conc = false;
    rb_flow_override rate = {0};
    for (size_t i = 0; i < q->val->u.table.n && rc == 0; i++) {
        const rb_toml_kv *kv = &q->val->u.table.items[i];
        rb_buf full = RB_BUF_INIT;
        rb_buf_printf(&full, "%s.%s", rb_buf_str(&key), kv->key);
        const rb_toml_value *v = kv->val;
        if (!strcmp(kv->key, "concurrency")) {
            if (v->type != RB_TOML_INTEGER)
                rc = rb_config_fail(f, v->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                    "must be an integer from 1 to %d, got %s", MAX_CONCURRENCY,
                                    rb_toml_type_name(v->type));
            else if (v->u.i < 1 || v->u.i > MAX_CONCURRENCY)
                rc = rb_config_fail(f, v->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                    "must be an integer from 1 to %d, got %lld", MAX_CONCURRENCY,
                                    (long long)v->u.i);
            else {
                t->concurrency = v->u.i;
                has_conc = true;
            }
        } else if (!strcmp(kv->key, "timeout")) {
            int64_t ms = -1;
            rb_err derr = {0};
            if (v->type == RB_TOML_STRING || v->type == RB_TOML_INTEGER ||
                v->type == RB_TOML_FLOAT) {
                json_t *j = rb_toml_to_json(v);
                if (rb_duration_from_json(j, &ms, &derr) < 0)
                    ms = -1;
                json_decref(j);
            }
            if (ms < 1000 || ms % 1000 || ms / 1000 > MAX_TIMEOUT_S)
                rc = rb_config_fail(f, v->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                    "must be a duration from 1s to 7d (\"90s\", \"30m\", or "
                                    "whole seconds)");
            else
                t->timeout_s = ms / 1000;
        } else if (!strcmp(kv->key, "worker")) {
            /* Faktory's key: said so, not a spelling guess */
            rc = rb_config_fail(f, v->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                "per-worker throttles are not supported (a throttle takes "
                                "concurrency, timeout, rate, period and burst)");
        } else if ((rc = rb_config_flow_key(f, rb_buf_str(&key), kv, &rate, err)) != RB_ENOENT) {
            ; /* rate, period, burst: read, or refused with the rule */
        } else {
            static const char *const known[] = {"concurrency", "timeout", "rate", "period",
                                                "burst"};
            rc = rb_config_fail(f, v->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(kv->key, known, 5));
        }
        rb_buf_release(&full);
    }
    rb_err e = {0};
    if (rc == 0 && rb_flow_override_check(&rate, &e))
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL, "%s",
                            e.msg);
    if (rc == 0 && !has_conc && !rate.v.rate)
        rc = rb_config_fail(f, q->val->origin, q->line, rb_buf_str(&key), err, RB_EINVAL,
                            "concurrency or rate is required (an integer from 1 to %d)",
                            MAX_CONCURRENCY);
    if (rc == 0 && rate.v.rate) {
        t->rate = rate.v.rate;
        t->period_ms = rate.v.period_ms;
        t->burst = rate.v.burst;
    }
out:
    rb_buf_release(&key);
    return rc;
}

int rb_config_load_throttles(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                             rb_err *err)
{
    rb_config_throttles_release(cfg);
    size_t n = sec->val->u.table.n;
    cfg->throttles = n ? rb_xcalloc(n, sizeof *cfg->throttles) : NULL;
    for (size_t i = 0; i < n; i++) {
        const rb_toml_kv *q = &sec->val->u.table.items[i];
        rb_throttle t = {0};
        int rc = load_one(f, q, &t, err);
        if (rc < 0)
            return rc;
        t.queue = rb_xstrdup(q->key);
        t.from = rb_config_from_value(q->val);
        cfg->throttles[cfg->n_throttles++] = t;
    }
    return 0;
}
