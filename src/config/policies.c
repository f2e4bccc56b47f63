/* The [retry], [retry.queues.NAME] and [retry.jobtypes.NAME] tables, and
 * which policy applies to a job (semantics.md §8). */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/config.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/toml_json.h"
#include "policy/dialect.h"

/* The entry the policy engine's message is about: the key it starts with
 * ("max_attempts: ...") or quotes ("'max_attempts'"). NULL when none. */
static const rb_toml_kv *blamed(const rb_toml_value *t, const char *msg)
{
    for (size_t i = 0; i < t->u.table.n; i++) {
        const rb_toml_kv *kv = &t->u.table.items[i];
        size_t n = strlen(kv->key);
        if (!strncmp(msg, kv->key, n) && (msg[n] == ':' || msg[n] == '[' || msg[n] == ' '))
            return kv;
    }
    for (size_t i = 0; i < t->u.table.n; i++) {
        const rb_toml_kv *kv = &t->u.table.items[i];
        rb_buf q = RB_BUF_INIT;
        rb_buf_printf(&q, "'%s'", kv->key);
        bool hit = strstr(msg, rb_buf_str(&q)) != NULL;
        rb_buf_release(&q);
        if (hit)
            return kv;
    }
    return NULL;
}

static bool is_sub(const char *key, bool top)
{
    return top && (!strcmp(key, "queues") || !strcmp(key, "jobtypes"));
}

/* Every key a policy table may hold: each dialect's, plus the config's own. */
static size_t policy_keys(const char **out, size_t cap, bool top)
{
    static const char *const own[] = {"dialect", "ftl", "faktory", NULL};
    static const char *const subs[] = {"queues", "jobtypes", NULL};
    const char *const *lists[] = {own,
                                  rb_dialect_temporal_keys,
                                  rb_dialect_tasker_keys,
                                  rb_dialect_faktory_keys,
                                  rb_dialect_tutorial_keys,
                                  rb_dialect_ftl_keys,
                                  top ? subs : NULL};
    size_t n = 0;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (const char *const *k = lists[l]; k && *k && n < cap; k++)
            out[n++] = *k;
    return n;
}

/* An unknown key in a policy table, with the nearest known one. */
static int check_keys(const rb_config_files *f, const char *name, const rb_toml_value *t, bool top,
                      rb_err *err)
{
    const char *known[128];
    size_t n = policy_keys(known, 128, top);
    for (size_t i = 0; i < t->u.table.n; i++) {
        const rb_toml_kv *kv = &t->u.table.items[i];
        bool ok = false;
        for (size_t k = 0; k < n && !ok; k++)
            ok = !strcmp(known[k], kv->key);
        if (!ok) {
            rb_buf key = RB_BUF_INIT;
            rb_buf_printf(&key, "%s.%s", name, kv->key);
            int rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&key), err, RB_EINVAL,
                                    "unknown policy key (did you mean '%s'?)",
                                    rb_config_nearest(kv->key, known, n));
            rb_buf_release(&key);
            return rc;
        }
    }
    return 0;
}

/* Which file(s) a policy table's keys came from. */
static rb_config_from policy_from(const rb_toml_value *t, bool top)
{
    rb_config_from acc = RB_CFG_FROM_DEFAULT;
    for (size_t i = 0; i < t->u.table.n; i++) {
        if (is_sub(t->u.table.items[i].key, top))
            continue;
        rb_config_from f = rb_config_from_value(t->u.table.items[i].val);
        acc = acc == RB_CFG_FROM_DEFAULT || acc == f ? f : RB_CFG_FROM_BOTH;
    }
    return acc;
}

/* One policy table (name "retry" or "retry.queues.Q"); top: skip the
 * queues/jobtypes sub-tables. Returns 0 with *out filled, 1 when the table
 * holds no policy key (top only), or a negative code. */
static int parse_policy(rb_config *cfg, const rb_config_files *f, const char *name,
                        const rb_toml_value *t, int line, bool top, rb_policy *out, rb_err *err)
{
    const rb_toml_kv *special = NULL, *other = NULL;
    size_t n = 0;
    int rc = check_keys(f, name, t, top, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < t->u.table.n; i++) {
        const rb_toml_kv *kv = &t->u.table.items[i];
        if (is_sub(kv->key, top))
            continue;
        n++;
        if (!strcmp(kv->key, "ftl") || !strcmp(kv->key, "faktory"))
            special = special ? special : kv;
        else
            other = other ? other : kv;
    }
    if (n == 0) {
        if (top)
            return 1;
        return rb_config_fail(f, t->origin, line, name, err, RB_EINVAL,
                              "empty policy: give a dialect's keys, ftl = \"...\" or faktory = N");
    }
    rb_buf key = RB_BUF_INIT;
    rb_err perr = {0};
    if (special) {
        rb_buf_printf(&key, "%s.%s", name, special->key);
        if (n > 1) {
            const rb_toml_kv *with = other ? other : special;
            if (with == special) /* ftl and faktory together */
                for (size_t i = 0; i < t->u.table.n; i++)
                    if (&t->u.table.items[i] != special && !is_sub(t->u.table.items[i].key, top))
                        with = &t->u.table.items[i];
            rc = rb_config_fail(f, with->val->origin, with->line, rb_buf_str(&key), err, RB_EINVAL,
                                "cannot be combined with other policy keys ('%s')", with->key);
            goto out;
        }
        const rb_toml_value *v = special->val;
        if (!strcmp(special->key, "ftl")) {
            if (v->type != RB_TOML_STRING) {
                rc = rb_config_fail(f, v->origin, special->line, rb_buf_str(&key), err, RB_EINVAL,
                                    "must be a string such as \"10 5s 1m\", got %s",
                                    rb_toml_type_name(v->type));
                goto out;
            }
            rb_buf spec = RB_BUF_INIT;
            if (strncmp(v->u.str.s, "//ftl:", 6) && strncmp(v->u.str.s, "ftl:", 4))
                rb_buf_adds(&spec, "ftl:");
            rb_buf_adds(&spec, v->u.str.s);
            rc = rb_policy_parse_spec(rb_buf_str(&spec), &cfg->backoff, out, &perr);
            rb_buf_release(&spec);
        } else {
            if (v->type != RB_TOML_INTEGER) {
                rc = rb_config_fail(f, v->origin, special->line, rb_buf_str(&key), err, RB_EINVAL,
                                    "must be an integer (Faktory's retry count), got %s",
                                    rb_toml_type_name(v->type));
                goto out;
            }
            json_t *j = json_integer(v->u.i);
            rc = rb_policy_parse_json(j, &cfg->backoff, out, &perr);
            json_decref(j);
        }
        if (rc < 0)
            rc = rb_config_fail(f, v->origin, special->line, rb_buf_str(&key), err, perr.code, "%s",
                                rb_err_msg(&perr));
        goto out;
    }
    json_t *obj = json_object();
    for (size_t i = 0; i < t->u.table.n; i++) {
        const rb_toml_kv *kv = &t->u.table.items[i];
        if (!is_sub(kv->key, top))
            json_object_set_new(obj, kv->key, rb_toml_to_json(kv->val));
    }
    rc = rb_policy_parse_json(obj, &cfg->backoff, out, &perr);
    json_decref(obj);
    if (rc < 0) {
        const rb_toml_kv *kv = blamed(t, rb_err_msg(&perr));
        if (kv) {
            rb_buf_printf(&key, "%s.%s", name, kv->key);
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&key), err, perr.code,
                                "%s", rb_err_msg(&perr));
        } else {
            rc = rb_config_fail(f, t->origin, line, name, err, perr.code, "%s", rb_err_msg(&perr));
        }
    }
out:
    rb_buf_release(&key);
    return rc;
}

/* [retry.queues.*] or [retry.jobtypes.*] into a named-policy array. */
static int load_named(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *group,
                      rb_named_policy **out, size_t *n_out, rb_err *err)
{
    rb_buf name = RB_BUF_INIT;
    rb_buf_printf(&name, "retry.%s", group->key);
    int rc = 0;
    if (group->val->type != RB_TOML_TABLE) {
        rc = rb_config_fail(f, group->val->origin, group->line, rb_buf_str(&name), err, RB_EINVAL,
                            "must be a table of policy tables ([retry.%s.NAME]), got %s",
                            group->key, rb_toml_type_name(group->val->type));
        goto out;
    }
    const rb_toml_value *g = group->val;
    *out = rb_xcalloc(g->u.table.n ? g->u.table.n : 1, sizeof **out);
    for (size_t i = 0; i < g->u.table.n; i++) {
        const rb_toml_kv *kv = &g->u.table.items[i];
        rb_buf_reset(&name);
        rb_buf_printf(&name, "retry.%s.%s", group->key, kv->key);
        if (kv->val->type != RB_TOML_TABLE) {
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&name), err, RB_EINVAL,
                                "must be a table of policy keys ([%s]), got %s", rb_buf_str(&name),
                                rb_toml_type_name(kv->val->type));
            goto out;
        }
        rb_named_policy *np = &(*out)[*n_out];
        if ((rc = parse_policy(cfg, f, rb_buf_str(&name), kv->val, kv->line, false, &np->policy,
                               err)) < 0)
            goto out;
        np->name = rb_xstrdup(kv->key);
        np->from = policy_from(kv->val, false);
        (*n_out)++;
    }
out:
    rb_buf_release(&name);
    return rc;
}

int rb_config_load_retry(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *retry,
                         rb_err *err)
{
    const rb_toml_value *t = retry->val;
    int rc = parse_policy(cfg, f, "retry", t, retry->line, true, &cfg->retry_default, err);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        cfg->has_retry_default = true;
        cfg->retry_default_from = policy_from(t, true);
    }
    const rb_toml_kv *q = rb_toml_get_kv(t, "queues"), *j = rb_toml_get_kv(t, "jobtypes");
    if (q && (rc = load_named(cfg, f, q, &cfg->queues, &cfg->n_queues, err)) < 0)
        return rc;
    if (j && (rc = load_named(cfg, f, j, &cfg->jobtypes, &cfg->n_jobtypes, err)) < 0)
        return rc;
    return 0;
}

const char *rb_policy_layer_name(rb_policy_layer l)
{
    switch (l) {
    case RB_LAYER_JOB: return "job";
    case RB_LAYER_JOBTYPE: return "jobtype";
    case RB_LAYER_QUEUE: return "queue";
    case RB_LAYER_DEFAULT: return "default";
    case RB_LAYER_BUILTIN: return "builtin";
    }
    return "?";
}

static const rb_named_policy *find_named(const rb_named_policy *v, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

/* rb_config_policy_for, also saying which file(s) the policy came from
 * (RB_CFG_FROM_DEFAULT for the built-in one). */
static const rb_policy *policy_for(const rb_config *cfg, const char *jobtype, const char *queue,
                                   rb_policy_layer *layer, rb_config_from *from)
{
    const rb_named_policy *np;
    rb_policy_layer l = RB_LAYER_BUILTIN;
    rb_config_from f = RB_CFG_FROM_DEFAULT;
    const rb_policy *p = NULL;
    if (cfg && (np = find_named(cfg->jobtypes, cfg->n_jobtypes, jobtype))) {
        l = RB_LAYER_JOBTYPE, p = &np->policy, f = np->from;
    } else if (cfg && (np = find_named(cfg->queues, cfg->n_queues, queue))) {
        l = RB_LAYER_QUEUE, p = &np->policy, f = np->from;
    } else if (cfg && cfg->has_retry_default) {
        l = RB_LAYER_DEFAULT, p = &cfg->retry_default, f = cfg->retry_default_from;
    }
    if (layer)
        *layer = l;
    if (from)
        *from = f;
    return p;
}

const rb_policy *rb_config_policy_for(const rb_config *cfg, const char *jobtype,
                                      const char *queue, rb_policy_layer *layer)
{
    return policy_for(cfg, jobtype, queue, layer, NULL);
}

void rb_config_policy_files(const rb_config *cfg, const char *jobtype, const char *queue,
                            rb_buf *out)
{
    rb_config_from f;
    policy_for(cfg, jobtype, queue, NULL, &f);
    const char *base = cfg && cfg->path ? cfg->path : "(no file)";
    const char *over = cfg && cfg->overlay_path ? cfg->overlay_path : "(no overlay)";
    switch (f) {
    case RB_CFG_FROM_DEFAULT: rb_buf_adds(out, "built-in defaults"); break;
    case RB_CFG_FROM_BASE: rb_buf_adds(out, base); break;
    case RB_CFG_FROM_OVERLAY: rb_buf_adds(out, over); break;
    case RB_CFG_FROM_BOTH: rb_buf_printf(out, "%s + %s", base, over); break;
    }
}

int rb_config_effective_policy(const rb_config *cfg, const json_t *job, rb_policy *out,
                               rb_policy_layer *layer, rb_err *err)
{
    if (!json_is_object(job))
        return rb_err_set(err, RB_EINVAL, "job: must be a JSON object");
    const json_t *rp = json_object_get(job, "retry_policy");
    const char *field = "retry_policy";
    if (!rp || json_is_null(rp)) {
        const json_t *custom = json_object_get(job, "custom");
        rp = json_is_object(custom) ? json_object_get(custom, "retry_policy") : NULL;
        field = "custom.retry_policy";
    }
    const json_t *retry = json_object_get(job, "retry");
    if (retry && !json_is_null(retry) && !json_is_integer(retry))
        return rb_err_set(err, RB_EINVAL, "retry: must be an integer, got a %s",
                          json_is_string(retry) ? "string" : "non-integer");
    if (json_is_integer(retry) && json_integer_value(retry) < -1) /* as faktory:N */
        return rb_err_set(err, RB_EINVAL, "retry: must be -1, 0 or a positive count, got '%lld'",
                          (long long)json_integer_value(retry));
    rb_policy p;
    rb_policy_layer l;
    if (rp && !json_is_null(rp)) {
        rb_err perr = {0};
        if (rb_policy_parse_json(rp, cfg ? &cfg->backoff : NULL, &p, &perr) < 0)
            return rb_err_set(err, perr.code ? perr.code : RB_EINVAL, "%s: %s", field,
                              rb_err_msg(&perr));
        l = RB_LAYER_JOB;
    } else {
        const json_t *jt = json_object_get(job, "jobtype"), *q = json_object_get(job, "queue");
        const char *queue = json_is_string(q) && *json_string_value(q) ? json_string_value(q)
                                                                       : "default";
        const rb_policy *c = rb_config_policy_for(cfg, json_string_value(jt), queue, &l);
        if (c)
            rb_policy_copy(&p, c);
        else
            rb_policy_default(&p);
    }
    if (retry && json_is_integer(retry))
        rb_policy_apply_client_retry(&p, json_integer_value(retry));
    *out = p;
    if (layer)
        *layer = l;
    return 0;
}
