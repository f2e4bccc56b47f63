/* Internal to src/config: the files a configuration was read from, and the
 * error format every schema message uses ("FILE:LINE: key 'k': rule"). */
#ifndef RB_CONFIG_LOAD_H
#define RB_CONFIG_LOAD_H

#include "config/config.h"
#include "config/toml.h"

/* Origin tags set on the TOML trees (rb_toml_set_origin). */
enum { RB_ORIGIN_BASE = 1, RB_ORIGIN_OVERLAY = 2 };

typedef struct rb_config_files {
    const char *base;    /* may be NULL */
    const char *overlay; /* may be NULL */
} rb_config_files;

/* Sets err to "FILE:LINE: key 'key': <fmt>" (the file of origin) and returns code. */
int rb_config_fail(const rb_config_files *f, int origin, int line, const char *key, rb_err *err,
                   int code, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* The file tag of a whole value: the origin all its leaves share, or
 * RB_CFG_FROM_BOTH. */
rb_config_from rb_config_from_value(const rb_toml_value *v);

/* Reads the [retry] table (value v of key `retry` written at line) into cfg. */
int rb_config_load_retry(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *retry,
                         rb_err *err);

/* Reads the [[cron]] array (key `cron`) into cfg->cron, after [retry] (a
 * job's retry_policy is checked against the configured policies). */
int rb_config_load_cron(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *cron,
                        rb_err *err);
/* Frees cfg->cron. */
void rb_config_release_cron(rb_config *cfg);
/* Reads the [throttles] table (Faktory's `[throttles] q = {concurrency = 4,
 * timeout = 60}`, the same as `[throttles.q] concurrency = 4`) into cfg
 * (config/throttles.c). */
int rb_config_load_throttles(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                             rb_err *err);
/* Reads the [groups] table ([groups.QUEUE] and [groups."*"]) into cfg
 * (config/groups.c). */
int rb_config_load_groups(rb_config *cfg, const rb_config_files *f, const rb_toml_kv *sec,
                          rb_err *err);
/* One limits key (concurrency, rate, period, burst: engine/group.h) of the
 * table named tkey into o; 0, RB_ENOENT for another key (nothing said), or
 * RB_EINVAL with err "FILE:LINE: key 'TKEY.KEY': rule". */
int rb_config_flow_key(const rb_config_files *f, const char *tkey, const rb_toml_kv *kv,
                       rb_flow_override *o, rb_err *err);

#endif
