/* Loading the configuration: defaults from the schema table, the base file,
 * the environment overlay merged over it, and strict validation. */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/load.h"
#include "config/schema.h"

void rb_config_init(rb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    rb_backoff_config_init(&cfg->backoff);
    /* The defaults are the schema's, read by the same code as a file's values. */
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        const rb_config_key *k = &rb_config_schema[i];
        rb_buf text = RB_BUF_INIT;
        rb_buf_printf(&text, "v = %s\n", k->def);
        rb_err err = {0};
        rb_toml_value *t = rb_toml_parse(text.data, text.len, &err);
        if (!t || rb_config_key_set(cfg, k, rb_toml_get(t, "v"), &err) < 0) {
            fprintf(stderr, "rebound: bad built-in default for %s: %s\n", k->name,
                    rb_err_msg(&err));
            abort();
        }
        rb_toml_free(t);
        rb_buf_release(&text);
    }
}

static void free_named(rb_named_policy *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        rb_policy_release(&v[i].policy);
    }
    free(v);
}

void rb_config_release(rb_config *cfg)
{
    free(cfg->path);
    free(cfg->overlay_path);
    free(cfg->server.listen);
    free(cfg->server.http_listen);
    free(cfg->server.password);
    free(cfg->server.tls_cert);
    free(cfg->server.tls_key);
    free(cfg->server.http_tls_cert);
    free(cfg->server.http_tls_key);
    rb_config_hosts_free(cfg->server.http_hosts);
    free(cfg->storage.url);
    free(cfg->storage.advertise);
    rb_backoff_config_release(&cfg->backoff);
    if (cfg->has_retry_default)
        rb_policy_release(&cfg->retry_default);
    free_named(cfg->queues, cfg->n_queues);
    free_named(cfg->jobtypes, cfg->n_jobtypes);
    rb_config_release_cron(cfg);
    rb_config_throttles_release(cfg);
    rb_config_groups_release(cfg);
    memset(cfg, 0, sizeof *cfg);
}

const char *rb_config_env_name(const char *flag)
{
    if (flag && *flag)
        return flag;
    const char *e = getenv("REBOUND_ENV");
    return e && *e ? e : NULL;
}

char *rb_config_overlay_path(const char *base, const char *env)
{
    rb_buf b = RB_BUF_INIT;
    const char *slash = base ? strrchr(base, '/') : NULL;
    if (slash)
        rb_buf_add(&b, base, (size_t)(slash - base + 1));
    rb_buf_printf(&b, "rebound.%s.toml", env);
    return rb_buf_detach(&b, NULL);
}

const char *rb_config_from_name(rb_config_from f)
{
    switch (f) {
    case RB_CFG_FROM_DEFAULT: return "default";
    case RB_CFG_FROM_BASE: return "base file";
    case RB_CFG_FROM_OVERLAY: return "overlay";
    case RB_CFG_FROM_BOTH: return "base file + overlay";
    }
    return "?";
}

int rb_config_fail(const rb_config_files *f, int origin, int line, const char *key, rb_err *err,
                   int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *file = origin == RB_ORIGIN_OVERLAY ? f->overlay : f->base;
    return rb_err_set(err, code, "%s:%d: key '%s': %s", file ? file : "(config)", line, key, msg);
}

rb_config_from rb_config_from_value(const rb_toml_value *v)
{
    unsigned seen = 0;
    if (v->type == RB_TOML_TABLE) {
        for (size_t i = 0; i < v->u.table.n; i++)
            seen |= 1u << rb_config_from_value(v->u.table.items[i].val);
    } else {
        seen |= 1u << (v->origin == RB_ORIGIN_OVERLAY ? RB_CFG_FROM_OVERLAY : RB_CFG_FROM_BASE);
    }
    if (seen & (1u << RB_CFG_FROM_BOTH))
        return RB_CFG_FROM_BOTH;
    bool base = seen & (1u << RB_CFG_FROM_BASE), over = seen & (1u << RB_CFG_FROM_OVERLAY);
    return base && over ? RB_CFG_FROM_BOTH : over ? RB_CFG_FROM_OVERLAY : RB_CFG_FROM_BASE;
}

/* Reads and parses one file; TOML errors become "FILE:LINE:COL: what". */
static rb_toml_value *read_toml(const char *path, int origin, rb_err *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        rb_err_set(err, RB_EIO, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    rb_buf text = RB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        rb_buf_add(&text, chunk, n);
    bool ioerr = ferror(fp);
    fclose(fp);
    if (ioerr) {
        rb_buf_release(&text);
        rb_err_set(err, RB_EIO, "cannot read '%s'", path);
        return NULL;
    }
    rb_err perr = {0};
    rb_toml_value *t = rb_toml_parse(text.data ? text.data : "", text.len, &perr);
    rb_buf_release(&text);
    if (!t) {
        int line = 0, col = 0, used = 0;
        if (sscanf(perr.msg, "line %d, column %d: %n", &line, &col, &used) == 2 && used > 0)
            rb_err_set(err, RB_EPARSE, "%s:%d:%d: %s", path, line, col, perr.msg + used);
        else
            rb_err_set(err, RB_EPARSE, "%s: %s", path, rb_err_msg(&perr));
        return NULL;
    }
    rb_toml_set_origin(t, origin);
    return t;
}

static int load_section(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                        rb_err *err)
{
    const char *names[RB_CONFIG_MAX_KEYS];
    size_t n = 0, plen = strlen(sec->key);
    for (size_t i = 0; i < rb_config_schema_len; i++)
        if (!strncmp(rb_config_schema[i].name, sec->key, plen) &&
            rb_config_schema[i].name[plen] == '.')
            names[n++] = rb_config_schema[i].name;
    for (size_t i = 0; i < sec->val->u.table.n; i++) {
        const rb_toml_kv *kv = &sec->val->u.table.items[i];
        rb_buf full = RB_BUF_INIT;
        rb_buf_printf(&full, "%s.%s", sec->key, kv->key);
        int idx = rb_config_key_index(rb_buf_str(&full));
        int rc = 0;
        if (!strcmp(rb_buf_str(&full), "server.metrics_public")) {
            /* an old name: check_metrics_auth reads it */
        } else if (idx < 0) {
            rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&full), err, RB_EINVAL,
                                "unknown key (did you mean '%s'?)",
                                rb_config_nearest(rb_buf_str(&full), names, n));
        } else {
            rb_err kerr = {0};
            if (rb_config_key_set(cfg, &rb_config_schema[idx], kv->val, &kerr) < 0)
                rc = rb_config_fail(f, kv->val->origin, kv->line, rb_buf_str(&full), err,
                                    kerr.code, "%s", kerr.msg);
            else
                cfg->key_from[idx] = (unsigned char)rb_config_from_value(kv->val);
        }
        rb_buf_release(&full);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A certificate and its key are set together or not at all (prefix "" for
 * tls_cert/tls_key, "http_" for http_tls_cert/http_tls_key). */
static int check_tls_pair(const char *cert, const char *key, const char *prefix,
                          const rb_config_files *f, const rb_toml_value *root, rb_err *err)
{
    if (!cert == !key)
        return 0;
    char set[40], unset[40];
    snprintf(set, sizeof set, "%stls_%s", prefix, cert ? "cert" : "key");
    snprintf(unset, sizeof unset, "%stls_%s", prefix, cert ? "key" : "cert");
    const rb_toml_kv *kv = rb_toml_get_kv(rb_toml_get(root, "server"), set);
    char name[64];
    snprintf(name, sizeof name, "server.%s", set);
    return rb_config_fail(f, kv ? kv->val->origin : RB_ORIGIN_BASE, kv ? kv->line : 0, name, err,
                          RB_EINVAL, "must be set together with 'server.%s'", unset);
}

static int check_tls(const rb_config *cfg, const rb_config_files *f, const rb_toml_value *root,
                     rb_err *err)
{
    int rc = check_tls_pair(cfg->server.tls_cert, cfg->server.tls_key, "", f, root, err);
    if (rc == 0)
        rc = check_tls_pair(cfg->server.http_tls_cert, cfg->server.http_tls_key, "http_", f, root,
                            err);
    return rc;
}

/* server.metrics_auth: server.metrics_public, its old name, still read
 * (true: metrics_auth = false; false, which asked for the password where
 * one is set: "auto"), but not beside it; and true needs a password. */
static int check_metrics_auth(rb_config *cfg, const rb_config_files *f, const rb_toml_value *root,
                              rb_err *err)
{
    const rb_toml_value *server = rb_toml_get(root, "server");
    const rb_toml_kv *old = rb_toml_get_kv(server, "metrics_public");
    const rb_toml_kv *kv = rb_toml_get_kv(server, "metrics_auth");
    if (old) {
        if (kv)
            return rb_config_fail(f, old->val->origin, old->line, "server.metrics_public", err,
                                  RB_EINVAL, "is the old name of 'server.metrics_auth': set only "
                                  "that one");
        if (old->val->type != RB_TOML_BOOL)
            return rb_config_fail(f, old->val->origin, old->line, "server.metrics_public", err,
                                  RB_EINVAL, "must be true or false (the old name of "
                                  "'server.metrics_auth', which it sets to false for true)");
        cfg->server.metrics_auth = old->val->u.b ? RB_CFG_OFF : RB_CFG_AUTO;
        cfg->key_from[rb_config_key_index("server.metrics_auth")] =
            (unsigned char)rb_config_from_value(old->val);
        kv = old;
    }
    const char *pw = cfg->server.password;
    if (cfg->server.metrics_auth == RB_CFG_ON && (!pw || !*pw))
        return rb_config_fail(f, kv ? kv->val->origin : RB_ORIGIN_BASE, kv ? kv->line : 0,
                              "server.metrics_auth", err, RB_EINVAL,
                              "true needs 'server.password' (the password /metrics asks for)");
    return 0;
}

/* storage.advertise is "ip:port" (the client listen address's form) or
 * empty. Whether forward has a PostgreSQL storage and a listen address to
 * advertise is checked at start (server/forward.c), after --db and
 * --listen; forward goes with tls_cert too (a relay carries a TLS
 * client's bytes to the leader unchanged, still encrypted). */
static int check_forward(const rb_config *cfg, const rb_config_files *f, const rb_toml_value *root,
                         rb_err *err)
{
    const rb_toml_value *storage = rb_toml_get(root, "storage");
    const char *adv = cfg->storage.advertise;
    if (adv && !rb_config_ip_port_valid(adv, false)) {
        const rb_toml_kv *kv = rb_toml_get_kv(storage, "advertise");
        return rb_config_fail(f, kv ? kv->val->origin : RB_ORIGIN_BASE, kv ? kv->line : 0,
                              "storage.advertise", err, RB_EINVAL,
                              "'%s' is not \"ip:port\" (an IPv4 address or a bracketed IPv6 one, "
                              "not every interface)", adv);
    }
    return 0;
}

static int apply(rb_config *cfg, const rb_config_files *f, const rb_toml_value *root, rb_err *err)
{
    const char *const *secs = rb_config_sections;
    size_t nsecs = 0;
    while (secs[nsecs])
        nsecs++;
    const rb_toml_kv *retry = NULL, *cron = NULL;
    for (size_t i = 0; i < root->u.table.n; i++) {
        const rb_toml_kv *kv = &root->u.table.items[i];
        if (!strcmp(kv->key, "cron")) { /* [[cron]]: config/cron.c */
            cron = kv;
            continue;
        }
        bool known = false;
        for (size_t s = 0; s < nsecs; s++)
            known |= !strcmp(secs[s], kv->key);
        if (!known)
            return rb_config_fail(f, kv->val->origin, kv->line, kv->key, err, RB_EINVAL,
                                  "unknown key (did you mean '%s'?)",
                                  rb_config_nearest(kv->key, secs, nsecs));
        if (kv->val->type != RB_TOML_TABLE)
            return rb_config_fail(f, kv->val->origin, kv->line, kv->key, err, RB_EINVAL,
                                  "must be a table ([%s]), got %s", kv->key,
                                  rb_toml_type_name(kv->val->type));
        int rc = 0;
        if (!strcmp(kv->key, "retry"))
            retry = kv;
        else if (!strcmp(kv->key, "throttles"))
            rc = rb_config_load_throttles(cfg, f, kv, err);
        else if (!strcmp(kv->key, "groups"))
            rc = rb_config_load_groups(cfg, f, kv, err);
        else
            rc = load_section(cfg, f, kv, err);
        if (rc < 0)
            return rc;
    }
    int rc = check_tls(cfg, f, root, err);
    if (rc == 0)
        rc = check_metrics_auth(cfg, f, root, err);
    if (rc == 0)
        rc = check_forward(cfg, f, root, err);
    if (rc == 0 && retry)
        rc = rb_config_load_retry(cfg, f, retry, err); /* after [backoff]: policies use it */
    if (rc == 0 && cron)
        rc = rb_config_load_cron(cfg, f, cron, err); /* after [retry] and [storage] */
    return rc;
}

int rb_config_load(rb_config *cfg, const char *path, const char *env, rb_err *err)
{
    rb_config_init(cfg);
    char *overlay = env && *env ? rb_config_overlay_path(path, env) : NULL;
    rb_config_files files = {path, overlay};
    rb_toml_value *root = NULL;
    int rc = 0;
    if (path && !(root = read_toml(path, RB_ORIGIN_BASE, err))) {
        rc = err ? err->code : RB_EIO;
        goto out;
    }
    if (overlay) {
        rb_toml_value *o = read_toml(overlay, RB_ORIGIN_OVERLAY, err);
        if (!o) {
            rc = err ? err->code : RB_EIO;
            goto out;
        }
        if (root)
            rb_toml_merge(root, o);
        else
            root = o;
    }
    if (root && (rc = apply(cfg, &files, root, err)) < 0)
        goto out;
    cfg->path = path ? rb_xstrdup(path) : NULL;
    cfg->overlay_path = overlay;
    overlay = NULL;
out:
    if (rc < 0) {
        rb_config_release(cfg);
        rb_config_init(cfg);
    }
    free(overlay);
    rb_toml_free(root);
    return rc;
}

bool rb_config_ip_port_valid(const char *addr, bool wildcard_ok)
{
    if (!rb_config_address_valid(addr))
        return false;
    const char *colon = strrchr(addr, ':');
    if (colon - addr >= 64)
        return false;
    char host[64];
    size_t n = (size_t)(colon - addr);
    memcpy(host, addr, n);
    host[n] = '\0';
    unsigned char bin[16];
    if (host[0] == '[' && n >= 2 && host[n - 1] == ']') {
        host[n - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, bin) != 1)
            return false;
        static const unsigned char any6[16];
        return wildcard_ok || memcmp(bin, any6, 16) != 0;
    }
    if (inet_pton(AF_INET, host, bin) != 1)
        return false;
    return wildcard_ok || memcmp(bin, "\0\0\0\0", 4) != 0;
}
