/* The [[cron]] entries (issue 16 item 3): Faktory Enterprise's form plus
 * Rebound's timezone, name and missed, each checked with the line it was
 * written at. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/config.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/toml_json.h"

static const char *const entry_keys[] = {"schedule", "timezone", "missed", "name", "job", NULL};
static const char *const job_keys[] = {"type",        "jobtype",      "queue",  "args", "custom",
                                       "retry",       "retry_policy", "reserve_for",
                                       "priority",    "backtrace",    NULL};

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v[n])
        n++;
    return n;
}

static bool member(const char *const *v, const char *k)
{
    for (; *v; v++)
        if (!strcmp(*v, k))
            return true;
    return false;
}

/* "cron[I].key" into out. */
static const char *key_name(rb_buf *out, size_t i, const char *key)
{
    rb_buf_reset(out);
    rb_buf_printf(out, "cron[%zu]%s%s", i, key ? "." : "", key ? key : "");
    return rb_buf_str(out);
}

static int string_key(const rb_config_files *f, const rb_toml_kv *kv, const char *name,
                      rb_err *err)
{
    if (kv->val->type != RB_TOML_STRING || !kv->val->u.str.len ||
        strlen(kv->val->u.str.s) != kv->val->u.str.len)
        return rb_config_fail(f, kv->val->origin, kv->line, name, err, RB_EINVAL,
                              "must be a non-empty string, got %s",
                              rb_toml_type_name(kv->val->type));
    return 0;
}

/* The [cron.job] table as a job template (jid and created_at come per tick). */
static int load_job(rb_config *cfg, const rb_config_files *f, size_t i, const rb_toml_kv *jkv,
                    rb_cron_entry *e, rb_err *err)
{
    rb_buf name = RB_BUF_INIT;
    int rc = 0;
    const rb_toml_value *t = jkv->val;
    if (t->type != RB_TOML_TABLE) {
        rc = rb_config_fail(f, t->origin, jkv->line, key_name(&name, i, "job"), err, RB_EINVAL,
                            "must be a table ([cron.job]), got %s", rb_toml_type_name(t->type));
        goto out;
    }
    const rb_toml_kv *type = NULL;
    for (size_t k = 0; k < t->u.table.n; k++) {
        const rb_toml_kv *kv = &t->u.table.items[k];
        rb_buf_reset(&name);
        rb_buf_printf(&name, "cron[%zu].job.%s", i, kv->key);
        if (!member(job_keys, kv->key)) {
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&name), err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(kv->key, job_keys, count(job_keys)));
            goto out;
        }
        const char *k2 = kv->key;
        rb_toml_type ty = kv->val->type;
        const char *want = NULL;
        if (!strcmp(k2, "type") || !strcmp(k2, "jobtype")) {
            if (type) {
                rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&name), err,
                                    RB_EINVAL, "give either type or jobtype, not both");
                goto out;
            }
            type = kv;
            if ((rc = string_key(f, kv, rb_buf_str(&name), err)) < 0)
                goto out;
        } else if (!strcmp(k2, "queue")) {
            if ((rc = string_key(f, kv, rb_buf_str(&name), err)) < 0)
                goto out;
            for (const char *p = kv->val->u.str.s; *p && !want; p++)
                if ((unsigned char)*p <= ' ' || *p == 0x7f)
                    want = "a queue name without spaces";
        } else if (!strcmp(k2, "args")) {
            want = ty == RB_TOML_ARRAY ? NULL : "an array";
        } else if (!strcmp(k2, "custom")) {
            want = ty == RB_TOML_TABLE ? NULL : "a table ([cron.job.custom])";
        } else if (!strcmp(k2, "retry")) {
            want = ty == RB_TOML_INTEGER && kv->val->u.i >= -1 && kv->val->u.i <= 1000000
                       ? NULL : "an integer from -1 to 1000000";
        } else if (!strcmp(k2, "reserve_for")) {
            want = ty == RB_TOML_INTEGER && kv->val->u.i >= 0 && kv->val->u.i <= 86400
                       ? NULL : "an integer from 0 to 86400";
        } else if (!strcmp(k2, "priority")) {
            want = ty == RB_TOML_INTEGER && kv->val->u.i >= 1 && kv->val->u.i <= 9
                       ? NULL : "an integer from 1 to 9";
        } else if (!strcmp(k2, "backtrace")) {
            want = ty == RB_TOML_INTEGER && kv->val->u.i >= 0 && kv->val->u.i <= 1000
                       ? NULL : "an integer from 0 to 1000";
        }
        if (want) {
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&name), err, RB_EINVAL,
                                "must be %s, got %s", want, rb_toml_type_name(ty));
            goto out;
        }
    }
    if (!type) {
        rc = rb_config_fail(f, t->origin, t->line ? t->line : jkv->line,
                            key_name(&name, i, "job.type"), err, RB_EINVAL,
                            "missing: every [cron.job] names its job type (type = \"MyJob\")");
        goto out;
    }
    json_t *job = rb_toml_to_json(t);
    if (json_object_get(job, "type")) {
        json_object_set(job, "jobtype", json_object_get(job, "type"));
        json_object_del(job, "type");
    }
    if (!json_object_get(job, "args"))
        json_object_set_new(job, "args", json_array());
    if (!json_object_get(job, "queue"))
        json_object_set_new(job, "queue", json_string("default"));
    rb_policy pol;
    rb_policy_layer layer;
    rb_err perr = {0};
    if (rb_config_effective_policy(cfg, job, &pol, &layer, &perr) < 0) {
        const rb_toml_kv *at = rb_toml_get_kv(t, "retry_policy");
        if (!at)
            at = rb_toml_get_kv(rb_toml_get(t, "custom"), "retry_policy");
        if (!at)
            at = jkv;
        rc = rb_config_fail(f, at->val->origin, at->line, key_name(&name, i, "job"), err,
                            RB_EINVAL, "%s", rb_err_msg(&perr));
        json_decref(job);
        goto out;
    }
    rb_policy_release(&pol);
    e->job = job;
out:
    rb_buf_release(&name);
    return rc;
}

static int load_entry(rb_config *cfg, const rb_config_files *f, size_t i, const rb_toml_value *t,
                      int line, rb_cron_entry *e, rb_err *err)
{
    rb_buf name = RB_BUF_INIT;
    int rc = 0;
    e->line = t->line ? t->line : line;
    e->from = rb_config_from_value(t);
    const rb_toml_kv *sched = NULL, *job = NULL;
    for (size_t k = 0; k < t->u.table.n; k++) {
        const rb_toml_kv *kv = &t->u.table.items[k];
        const char *kn = key_name(&name, i, kv->key);
        if (!member(entry_keys, kv->key)) {
            rc = rb_config_fail(f, kv->val->origin, kv->line, kn, err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(kv->key, entry_keys, count(entry_keys)));
            goto out;
        }
        if (!strcmp(kv->key, "job")) {
            job = kv;
            continue;
        }
        if ((rc = string_key(f, kv, kn, err)) < 0)
            goto out;
        const char *v = kv->val->u.str.s;
        if (!strcmp(kv->key, "schedule")) {
            rb_err perr = {0};
            sched = kv;
            if (rb_cron_parse(v, &e->spec, &perr) < 0) {
                rc = rb_config_fail(f, kv->val->origin, kv->line, kn, err, RB_EINVAL,
                                    "bad schedule \"%s\": %s", v, rb_err_msg(&perr));
                goto out;
            }
            e->schedule = rb_xstrdup(v);
        } else if (!strcmp(kv->key, "timezone")) {
            if (!rb_cron_zone_valid(v)) {
                rc = rb_config_fail(f, kv->val->origin, kv->line, kn, err, RB_EINVAL,
                                    "unknown time zone \"%s\" (an IANA name from the system's tz "
                                    "database, such as \"Europe/Berlin\" or \"UTC\")", v);
                goto out;
            }
            e->timezone = rb_xstrdup(v);
        } else if (!strcmp(kv->key, "missed")) {
            if (strcmp(v, "skip") && strcmp(v, "run_once")) {
                rc = rb_config_fail(f, kv->val->origin, kv->line, kn, err, RB_EINVAL,
                                    "must be \"skip\" or \"run_once\", got \"%s\"", v);
                goto out;
            }
            e->run_once = !strcmp(v, "run_once");
        } else if (!strcmp(kv->key, "name")) {
            e->name = rb_xstrdup(v);
        }
    }
    if (!sched) {
        rc = rb_config_fail(f, t->origin, e->line, key_name(&name, i, "schedule"), err, RB_EINVAL,
                            "missing: every [[cron]] has a schedule (\"*/5 * * * *\", \"@daily\")");
        goto out;
    }
    if (!job) {
        rc = rb_config_fail(f, t->origin, e->line, key_name(&name, i, "job"), err, RB_EINVAL,
                            "missing: every [[cron]] has a [cron.job] with its type");
        goto out;
    }
    if ((rc = load_job(cfg, f, i, job, e, err)) < 0)
        goto out;
    if (!e->timezone)
        e->timezone = rb_xstrdup("UTC");
    if (!e->name) {
        rb_buf n = RB_BUF_INIT;
        rb_buf_printf(&n, "%s %s", e->schedule,
                      json_string_value(json_object_get(e->job, "jobtype")));
        e->name = rb_buf_detach(&n, NULL);
    }
out:
    rb_buf_release(&name);
    return rc;
}

int rb_config_load_cron(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *cron,
                        rb_err *err)
{
    const rb_toml_value *v = cron->val;
    if (v->type != RB_TOML_ARRAY)
        return rb_config_fail(f, v->origin, cron->line, "cron", err, RB_EINVAL,
                              "must be an array of tables ([[cron]]), got %s",
                              rb_toml_type_name(v->type));
    size_t n = v->u.array.n;
    cfg->cron = rb_xcalloc(n ? n : 1, sizeof *cfg->cron);
    for (size_t i = 0; i < n; i++) {
        const rb_toml_value *t = v->u.array.items[i];
        int line = t->line ? t->line : cron->line;
        if (t->type != RB_TOML_TABLE) {
            rb_buf name = RB_BUF_INIT;
            int rc = rb_config_fail(f, t->origin ? t->origin : v->origin, line,
                                    key_name(&name, i, NULL), err, RB_EINVAL,
                                    "must be a table ([[cron]]), got %s",
                                    rb_toml_type_name(t->type));
            rb_buf_release(&name);
            return rc;
        }
        rb_cron_entry *e = &cfg->cron[cfg->n_cron++];
        int rc = load_entry(cfg, f, i, t, line, e, err);
        if (rc < 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(cfg->cron[j].name, e->name)) {
                rb_buf name = RB_BUF_INIT;
                rc = rb_config_fail(f, t->origin, e->line, key_name(&name, i, "name"), err,
                                    RB_EINVAL, "\"%s\" is the name of the entry at line %d too "
                                    "(give each [[cron]] its own name)", e->name,
                                    cfg->cron[j].line);
                rb_buf_release(&name);
                return rc;
            }
    }
    return 0;
}

void rb_config_release_cron(rb_config *cfg)
{
    for (size_t i = 0; i < cfg->n_cron; i++) {
        rb_cron_entry *e = &cfg->cron[i];
        free(e->name);
        free(e->schedule);
        free(e->timezone);
        json_decref(e->job);
    }
    free(cfg->cron);
    cfg->cron = NULL;
    cfg->n_cron = 0;
}
