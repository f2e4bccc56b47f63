/* The effective configuration for people (annotated TOML) and programs
 * (JSON), each value with where it came from. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/config.h"
#include "config/schema.h"

static json_t *policy_json(const rb_policy *p, rb_config_from from)
{
    return json_pack("{s:s, s:o}", "from", rb_config_from_name(from), "policy",
                     rb_policy_to_json(p));
}

static json_t *named_json(const rb_named_policy *v, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, v[i].name, policy_json(&v[i].policy, v[i].from));
    return o;
}

json_t *rb_config_to_json(const rb_config *cfg)
{
    json_t *settings = json_object();
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        const rb_config_key *k = &rb_config_schema[i];
        json_object_set_new(settings, k->name,
                            json_pack("{s:o, s:s, s:s}", "value", rb_config_key_json(cfg, k), "from",
                                      rb_config_from_name((rb_config_from)cfg->key_from[i]),
                                      "doc", k->doc));
    }
    json_t *retry = json_pack("{s:o, s:o, s:o}", "default",
                              cfg->has_retry_default
                                  ? policy_json(&cfg->retry_default, cfg->retry_default_from)
                                  : json_null(),
                              "queues", named_json(cfg->queues, cfg->n_queues), "jobtypes",
                              named_json(cfg->jobtypes, cfg->n_jobtypes));
    json_t *files = json_pack("{s:o, s:o}", "base", cfg->path ? json_string(cfg->path) : json_null(),
                              "overlay",
                              cfg->overlay_path ? json_string(cfg->overlay_path) : json_null());
    json_t *out =
        json_pack("{s:o, s:o, s:o}", "files", files, "settings", settings, "retry", retry);
    if (cfg->n_throttles)
        json_object_set_new(out, "throttles", rb_config_throttles_json(cfg));
    if (cfg->n_groups)
        json_object_set_new(out, "groups", rb_config_groups_json(cfg));
    if (cfg->n_cron) { /* [[cron]], only when there are entries */
        json_t *cron = json_array();
        for (size_t i = 0; i < cfg->n_cron; i++) {
            const rb_cron_entry *e = &cfg->cron[i];
            json_array_append_new(
                cron, json_pack("{s:s, s:s, s:s, s:s, s:O, s:s}", "name", e->name, "schedule",
                                e->schedule, "timezone", e->timezone, "missed",
                                e->run_once ? "run_once" : "skip", "job", e->job, "from",
                                rb_config_from_name(e->from)));
        }
        json_object_set_new(out, "cron", cron);
    }
    return out;
}

json_t *rb_config_throttles_json(const rb_config *cfg)
{
    json_t *o = json_object();
    for (size_t i = 0; i < cfg->n_throttles; i++) {
        const rb_throttle *t = &cfg->throttles[i];
        json_t *e = json_pack("{s:I, s:I, s:s}", "concurrency", (json_int_t)t->concurrency,
                              "timeout", (json_int_t)t->timeout_s, "from",
                              rb_config_from_name(t->from));
        if (t->rate) {
            json_object_set_new(e, "rate", json_integer(t->rate));
            json_object_set_new(e, "period", json_integer(t->period_ms / 1000));
            json_object_set_new(e, "burst", json_integer(t->burst));
        }
        json_object_set_new(o, t->queue, e);
    }
    return o;
}

/* The policy's description as comment lines. */
static void policy_comment(const rb_policy *p, rb_buf *out)
{
    rb_buf d = RB_BUF_INIT;
    rb_policy_describe(p, &d);
    const char *s = rb_buf_str(&d);
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        rb_buf_adds(out, "#   ");
        rb_buf_add(out, s, n);
        rb_buf_addc(out, '\n');
        s += n + (nl ? 1 : 0);
    }
    rb_buf_release(&d);
}

static void named_describe(const char *group, const rb_named_policy *v, size_t n, rb_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        rb_buf_printf(out, "\n[retry.%s.%s]  # %s\n", group, v[i].name,
                      rb_config_from_name(v[i].from));
        policy_comment(&v[i].policy, out);
    }
}

void rb_config_describe(const rb_config *cfg, rb_buf *out)
{
    rb_buf_printf(out, "# effective configuration: base file %s, overlay %s\n",
                  cfg->path ? cfg->path : "(none)", cfg->overlay_path ? cfg->overlay_path : "(none)");
    const char *section = "";
    size_t section_len = 0;
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        const rb_config_key *k = &rb_config_schema[i];
        const char *dot = strchr(k->name, '.');
        size_t slen = (size_t)(dot - k->name);
        if (section_len != slen || strncmp(section, k->name, slen)) {
            rb_buf_printf(out, "\n[%.*s]\n", (int)slen, k->name);
            section = k->name;
            section_len = slen;
        }
        size_t start = out->len;
        rb_buf_printf(out, "%s = ", dot + 1);
        rb_config_key_format(cfg, k, out);
        size_t width = out->len - start;
        rb_buf_printf(out, "%*s  # %s\n", width < 40 ? (int)(40 - width) : 0, "",
                      rb_config_from_name((rb_config_from)cfg->key_from[i]));
    }
    if (cfg->has_retry_default) {
        rb_buf_printf(out, "\n[retry]  # %s\n", rb_config_from_name(cfg->retry_default_from));
        policy_comment(&cfg->retry_default, out);
    } else {
        rb_policy builtin;
        rb_policy_default(&builtin);
        rb_buf_adds(out, "\n# [retry] not set: the built-in default applies  # default\n");
        policy_comment(&builtin, out);
        rb_policy_release(&builtin);
    }
    named_describe("queues", cfg->queues, cfg->n_queues, out);
    named_describe("jobtypes", cfg->jobtypes, cfg->n_jobtypes, out);
    for (size_t i = 0; i < cfg->n_throttles; i++) {
        const rb_throttle *t = &cfg->throttles[i];
        rb_buf_printf(out, "\n[throttles.%s]  # %s\n", t->queue, rb_config_from_name(t->from));
        if (t->concurrency)
            rb_buf_printf(out, "concurrency = %lld\n", (long long)t->concurrency);
        if (t->timeout_s)
            rb_buf_printf(out, "timeout = %lld\n", (long long)t->timeout_s);
        if (t->rate)
            rb_buf_printf(out, "rate = %lld\nperiod = %lld\nburst = %lld\n", (long long)t->rate,
                          (long long)t->period_ms / 1000, (long long)t->burst);
    }
    for (size_t i = 0; i < cfg->n_groups; i++) {
        const rb_group_conf *g = &cfg->groups[i];
        rb_buf_printf(out, "\n[groups.\"%s\"]  # %s\n", g->queue, rb_config_from_name(g->from));
        json_t *o = rb_flow_override_json(&g->limits);
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
            char *text = json_dumps(v, JSON_ENCODE_ANY);
            rb_buf_printf(out, "%s = %s\n", k, text);
            free(text);
        }
        json_decref(o);
    }
    for (size_t i = 0; i < cfg->n_cron; i++) { /* `rebound cron` shows their next runs */
        const rb_cron_entry *e = &cfg->cron[i];
        char *job = json_dumps(e->job, JSON_COMPACT | JSON_SORT_KEYS);
        rb_buf_printf(out,
                      "\n[[cron]]  # %s\n#   name %s, schedule \"%s\" in %s, missed %s\n"
                      "#   job %s\n",
                      rb_config_from_name(e->from), e->name, e->schedule, e->timezone,
                      e->run_once ? "run_once" : "skip", job);
        free(job);
    }
}
