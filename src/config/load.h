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

/* A section of tables keyed by queue that hold flow limits ([groups],
 * [throttles]), as rb_config_queue_tables reads it. */
typedef struct rb_queue_tables {
    const char *section;       /* "groups", "throttles" */
    bool star;                 /* "*" names every queue */
    const char *const *known;  /* the tables' keys, for "did you mean" */
    size_t n_known;
    /* A key of the current table, asked before the limits' keys (full:
     * "SECTION.QUEUE.KEY"): 0 read, RB_ENOENT not the section's own, or
     * RB_EINVAL with err set (rb_config_fail). NULL: none. */
    int (*key)(void *arg, const rb_config_files *f, const char *full, const rb_toml_kv *kv,
               rb_err *err);
    /* The current table q read, with its limits (checked together): 0, or
     * RB_EINVAL with err set, which stops the reading. */
    int (*add)(void *arg, const rb_config_files *f, const rb_toml_kv *q,
               const rb_flow_override *limits, rb_err *err);
    void *arg;
} rb_queue_tables;

/* Reads each table of section sec (its key a queue): a table, its key a
 * queue name (engine/group.h's rule: the rule of queue names; or "*" when
 * s->star), each key s->key's or a limit's (concurrency, rate, period,
 * burst: engine/group.h) and the limits checked together, then s->add.
 * Returns 0, or RB_EINVAL with err "FILE:LINE: key 'SECTION.QUEUE[.KEY]':
 * rule": "must be a table ([SECTION.Q] or Q = {concurrency = N}), got T",
 * "a queue name must be a non-empty string without spaces" (with
 * ' (or "*": every queue)' when s->star), "unknown key (did you mean
 * 'K'?)", a limit's rule (rb_flow_key_parse, rb_flow_override_check) or
 * s->key's or s->add's. */
int rb_config_queue_tables(const rb_config_files *f, const rb_toml_kv *sec,
                           const rb_queue_tables *s, rb_err *err);

#endif
