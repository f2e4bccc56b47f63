/* The configuration schema: one table of every plain setting (name, type,
 * default, allowed range, one line of documentation). It drives validation,
 * the defaults, `rebound config check` and the reference in
 * docs/configuration.md. The [retry...] policy tables are validated by the
 * policy engine and described by rb_config_policy_keys. */
#ifndef RB_CONFIG_SCHEMA_H
#define RB_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/toml.h"

struct rb_buf;

typedef enum rb_config_kind {
    RB_CFG_STRING,       /* char * */
    RB_CFG_ADDRESS,      /* char *, "host:port" (port 0..65535) */
    RB_CFG_STORAGE_URL,  /* char *, a path or postgres:// URL */
    RB_CFG_INT,          /* int64_t, in [min, max] */
    RB_CFG_BOOL,         /* bool */
    RB_CFG_FLOAT,        /* double, in [fmin, fmax]; integers accepted */
    RB_CFG_DURATION,     /* int64_t seconds; "30m" / "1d" or a number of seconds */
    RB_CFG_SECONDS,      /* int64_t ms; a number of seconds in [fmin, fmax] */
    RB_CFG_SECONDS_LIST, /* rb_backoff_config's list; numbers of seconds in [fmin, fmax] */
    RB_CFG_CHOICE,       /* int, the index of one of its strings (rb_config_choices) */
    RB_CFG_HOSTS,        /* char **, NULL-terminated, lower case: host names, "*.domain"
                            or "*" (rb_config_host_matches) */
    RB_CFG_SWITCH,       /* int, RB_CFG_AUTO, RB_CFG_OFF or RB_CFG_ON: true, false or "auto" */
} rb_config_kind;

typedef struct rb_config_key {
    const char *name;    /* "section.key" */
    rb_config_kind kind;
    const char *def;     /* the default, written as a TOML value */
    int64_t min, max;    /* RB_CFG_INT: values; RB_CFG_DURATION: seconds */
    double fmin, fmax;   /* RB_CFG_FLOAT, RB_CFG_SECONDS, RB_CFG_SECONDS_LIST */
    size_t offset;       /* of the field in rb_config */
    const char *doc;     /* one line, for the reference and `config check` */
    bool secret;         /* printed as "********" when set */
} rb_config_key;

extern const rb_config_key rb_config_schema[];
extern const size_t rb_config_schema_len;

/* The sections of plain settings, and the policy keys a [retry] table may
 * hold besides a dialect's own (NULL-terminated). */
extern const char *const rb_config_sections[];

/* An RB_CFG_CHOICE key's allowed strings, NULL-terminated, in the order
 * of the values stored (NULL for another kind). */
const char *const *rb_config_choices(const rb_config_key *k);

/* True when name (a host name or IP literal without port, any case) is
 * one that pattern (an RB_CFG_HOSTS entry) allows: "*" any, "*.domain" a
 * name ending in ".domain", else the same name. */
bool rb_config_host_matches(const char *pattern, const char *name);

/* Index of name ("server.listen") in the schema, or -1. */
int rb_config_key_index(const char *name);

/* The candidate nearest to word by edit distance (NULL when none). */
const char *rb_config_nearest(const char *word, const char *const *cands, size_t n);

/* Checks a TOML value against k and stores it into cfg. On error returns
 * RB_EINVAL/RB_ERANGE with err saying what is allowed ("must be an integer
 * from 1 to 65536, got string \"x\""), without file or key (the caller adds them). */
int rb_config_key_set(rb_config *cfg, const rb_config_key *k, const rb_toml_value *v,
                      rb_err *err);

/* Both below print a secret that is set as "********". */
/* Appends k's current value in cfg as TOML text ("\"127.0.0.1:7419\"", "1024",
 * "\"30m\"", "[1, 2, 4]"). */
void rb_config_key_format(const rb_config *cfg, const rb_config_key *k, struct rb_buf *out);
/* k's current value in cfg as JSON (new reference). */
json_t *rb_config_key_json(const rb_config *cfg, const rb_config_key *k);

/* Human description of what k accepts ("an integer from 1 to 1000000"). */
void rb_config_key_rule(const rb_config_key *k, struct rb_buf *out);

/* The configuration reference as a Markdown table (docs/configuration.md
 * holds exactly this between its schema markers). */
void rb_config_reference_markdown(struct rb_buf *out);

/* The manual page rebound.toml(5) in roff: every setting of the schema by
 * section, and the policy dialects' keys (schema_man.c). */
void rb_config_reference_man(struct rb_buf *out);

#endif
