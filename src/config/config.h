/* Rebound's configuration: one TOML file (plus an optional environment
 * overlay), every setting with a built-in default. The schema, its validation
 * and the policy lookup the server uses live behind this header. */
#ifndef RB_CONFIG_CONFIG_H
#define RB_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"
#include "engine/cron.h"
#include "engine/group.h"
#include "policy/policy.h"

/* Where a setting's value came from (`rebound config check`). */
typedef enum rb_config_from {
    RB_CFG_FROM_DEFAULT = 0, /* built in */
    RB_CFG_FROM_BASE,        /* the base file */
    RB_CFG_FROM_OVERLAY,     /* the environment overlay */
    RB_CFG_FROM_BOTH,        /* a policy table with keys from both files */
} rb_config_from;

/* Room for the schema's keys in rb_config.key_from (see config/schema.h). */
#define RB_CONFIG_MAX_KEYS 40

/* A setting that is on, off, or decided from others (config/schema.h's
 * RB_CFG_SWITCH: true, false or "auto"). */
enum { RB_CFG_AUTO = -1, RB_CFG_OFF = 0, RB_CFG_ON = 1 };

typedef struct rb_named_policy {
    char *name; /* queue or job type; owned */
    rb_policy policy;
    rb_config_from from; /* which file(s) it came from */
} rb_named_policy;

/* One [[cron]] entry (docs/enterprise.md, "Cron"). */
typedef struct rb_cron_entry {
    char *name;       /* `name`, or "SCHEDULE JOBTYPE"; unique among entries; owned */
    char *schedule;   /* as written; owned */
    char *timezone;   /* IANA name, "UTC" by default; owned */
    rb_cron_spec spec;
    bool run_once;    /* missed = "run_once": one catch-up job after downtime */
    json_t *job;      /* the job without jid: jobtype, queue, args, custom, retry,
                         retry_policy, reserve_for; owned */
    int line;         /* of its [[cron]] header */
    rb_config_from from;
} rb_cron_entry;
/* A queue throttle ([throttles.QUEUE], docs/configuration.md): at most
 * concurrency jobs of the queue working at once; a slot held longer than
 * timeout_s (0: no timeout, the lease's end) is free again; at most rate
 * starts per period (+ burst), the queue's GCRA bucket (engine/gcra.h). At
 * least one of concurrency and rate is set. */
typedef struct rb_throttle {
    char *queue;          /* owned */
    int64_t concurrency;  /* 1..1000000, 0: none (a rate alone) */
    int64_t timeout_s;    /* 0: none */
    int64_t rate;         /* 0: none, else with period_ms (engine/group.h's bounds) */
    int64_t period_ms;
    int64_t burst;
    rb_config_from from;  /* which file(s) it came from */
} rb_throttle;

/* One [groups.QUEUE] table (or [groups."*"], queue "*": every queue's
 * default), docs/configuration.md "Groups": the limits of each named group
 * of the queue, field by field (engine/group.h). */
typedef struct rb_group_conf {
    char *queue;             /* owned; "*" for the default */
    rb_flow_override limits; /* the fields the table sets */
    rb_config_from from;
} rb_group_conf;

typedef struct rb_config {
    char *path; /* the base file read, NULL when none; owned */
    struct {
        char *listen;          /* "127.0.0.1:7419" */
        char *http_listen;     /* "127.0.0.1:7420" */
        char *password;        /* NULL or "" = no authentication */
        char *tls_cert;        /* NULL = no TLS */
        char *tls_key;
        char *http_tls_cert;   /* NULL = tls_cert's (HTTPS when either is set) */
        char *http_tls_key;
        bool http_allow_plaintext_password; /* password over plain HTTP off loopback, default false */
        char **http_hosts;     /* more names HTTP's Host may carry, NULL-terminated, lower
                                  case; NULL or empty: none; "*": any (docs/http.md) */
        int64_t max_connections;   /* default 1024 */
        int64_t max_job_bytes;     /* largest job / command line, default 1 MiB */
        int64_t line_timeout_s;    /* half a command line, then silence: closed, default 10 */
        int64_t hello_timeout_s;   /* HELLO not done after connecting: closed, default 10 */
        int64_t reserve_for_s;     /* default reserve_for, 1800 */
        int64_t dead_retention_s;  /* default 180 days */
        int metrics_auth;          /* /metrics needs the password: RB_CFG_ON, RB_CFG_OFF, or
                                      RB_CFG_AUTO (default): on when a password is set */
    } server;
    struct {
        char *url; /* SQLite path (default "./rebound.db") or postgres:// URL */
        bool prefetch; /* distributed mode: an ACK claims its worker's next job, default false */
        bool forward;  /* distributed mode: client connections relayed to the leader
                          (server/forward.h), default false */
        char *advertise; /* with forward: "ip:port" of this node's client port for the
                            other nodes; NULL: server.listen's */
        int64_t request_timeout_s; /* distributed mode: a request's bound, default 5 */
        int64_t admin_timeout_s;   /* distributed mode: administration's, default 60 */
        int64_t idle_in_transaction_timeout_s; /* the server ends idle transactions, default 5 */
    } storage;
    struct {
        int64_t succeeded_ttl_s; /* ACKed workflow jobs remembered, default 1 h */
        int64_t batch_retention_s; /* a finished batch's STATUS kept, default 24 h */
        int64_t batch_uncommitted_ttl_s; /* a batch never committed, default 30 min */
    } workflows;
    struct {
        int level;  /* rb_log_level: 0 debug, 1 info (default), 2 warn, 3 error */
        int format; /* 0 text (default), 1 json: one object per line (common/log.h) */
    } log;
    rb_backoff_config backoff; /* tasker's [backoff] */
    bool has_retry_default;    /* [retry] present */
    rb_policy retry_default;   /* valid when has_retry_default */
    rb_named_policy *queues;   /* [retry.queues.NAME] */
    size_t n_queues;
    rb_named_policy *jobtypes; /* [retry.jobtypes.NAME] */
    size_t n_jobtypes;
    rb_cron_entry *cron;       /* [[cron]], in file order */
    size_t n_cron;
    rb_throttle *throttles;    /* [throttles.QUEUE], in file order (config/throttles.c) */
    size_t n_throttles;
    rb_group_conf *groups;     /* [groups.QUEUE] and [groups."*"], in file order (config/groups.c) */
    size_t n_groups;
    /* Added for `rebound config check`: */
    char *overlay_path;                          /* overlay read, NULL when none; owned */
    unsigned char key_from[RB_CONFIG_MAX_KEYS];  /* rb_config_from per schema entry */
    rb_config_from retry_default_from;
} rb_config;

/* The throttle of queue in cfg, or NULL when it has none. */
const rb_throttle *rb_config_throttle(const rb_config *cfg, const char *queue);
/* {QUEUE: {"concurrency", "timeout" (seconds, 0: none), "from"}} (new
 * reference); `config check --json` and INFO. */
json_t *rb_config_throttles_json(const rb_config *cfg);
/* Frees cfg's throttles (rb_config_release). */
void rb_config_throttles_release(rb_config *cfg);

/* The [groups.QUEUE] table of queue in cfg (queue "*": [groups."*"]), or
 * NULL when it has none. */
const rb_flow_override *rb_config_groups_of(const rb_config *cfg, const char *queue);
/* A named group's limits in queue: over (its GROUP SET, may be NULL), then
 * [groups.QUEUE], then [groups."*"] (rb_flow_limits_resolve). */
void rb_config_group_limits(const rb_config *cfg, const char *queue, const rb_flow_override *over,
                            rb_flow_limits *out, rb_flow_from from[RB_FLOW_NFIELDS]);
/* Whether cfg sets any limit a backend must apply at FETCH beyond
 * [throttles] concurrency: a [groups] concurrency or rate, or a
 * [throttles] rate (rb_eng_flow_limits_check). */
bool rb_config_has_flow_limits(const rb_config *cfg);
/* {QUEUE: {"concurrency", "rate", "period", "burst" (the keys set), "from"}}
 * (new reference); `config check --json`. */
json_t *rb_config_groups_json(const rb_config *cfg);
/* Frees cfg's groups (rb_config_release). */
void rb_config_groups_release(rb_config *cfg);

/* Frees a NULL-terminated list of strings such as server.http_hosts (NULL
 * is a no-op). */
void rb_config_hosts_free(char **list);

/* Fills cfg with the built-in defaults (no file). Release with
 * rb_config_release(). */
void rb_config_init(rb_config *cfg);
void rb_config_release(rb_config *cfg);
/* Whether addr is "IPV4:PORT" or "[IPV6]:PORT" (port 0 to 65535), and
 * with wildcard_ok false not every interface (0.0.0.0, [::]). */
bool rb_config_ip_port_valid(const char *addr, bool wildcard_ok);
/* "host:port" with a port from 0 to 65535 (an IPv6 host in brackets): the
 * form of server.listen and http_listen (schema.c). */
bool rb_config_address_valid(const char *s);

/* Loads path (NULL: defaults only) and, when env is non-NULL and non-empty,
 * the overlay rebound.<env>.toml next to it, merged key by key (arrays replaced
 * whole); pass rb_config_env_name(flag) to honour $REBOUND_ENV. cfg need not
 * be initialised (its old contents are not released). On success returns 0
 * with *cfg filled (release it); on failure returns a negative code with err
 * naming file, line, key and rule ("FILE:LINE: key 'k': rule"; TOML syntax
 * errors "FILE:LINE:COL: what"; RB_EIO "cannot read 'FILE': ..." for a missing
 * base or requested overlay file), and *cfg is left initialised to defaults
 * (still to be released). */
int rb_config_load(rb_config *cfg, const char *path, const char *env, rb_err *err);

/* The environment name to use: flag when non-NULL and non-empty, else
 * $REBOUND_ENV when set and non-empty, else NULL. The one place the name is
 * resolved: every subcommand that reads the config (serve, config check,
 * policy simulate, migrate) passes its --env through here. */
const char *rb_config_env_name(const char *flag);

/* The overlay path for base and env: rebound.<env>.toml in base's directory
 * (the current directory when base is NULL). Caller frees. */
char *rb_config_overlay_path(const char *base, const char *env);

/* The configuration as JSON (new reference): {"files": {"base", "overlay"},
 * "settings": {"server.listen": {"value", "from", "doc"}, ...},
 * "retry": {"default": {"from", "policy"} or null, "queues": {NAME: ...},
 * "jobtypes": {NAME: ...}}}. "from" is rb_config_from_name(). */
json_t *rb_config_to_json(const rb_config *cfg);
/* The same as annotated TOML text, each value followed by "# <from>",
 * appended to out. */
struct rb_buf;
void rb_config_describe(const rb_config *cfg, struct rb_buf *out);
/* "default", "base file", "overlay", "base file + overlay". */
const char *rb_config_from_name(rb_config_from f);

/* Which layer of the configuration a job's schedule came from. */
typedef enum rb_policy_layer {
    RB_LAYER_JOB,      /* the job's retry_policy field */
    RB_LAYER_JOBTYPE,  /* [retry.jobtypes.T] */
    RB_LAYER_QUEUE,    /* [retry.queues.Q] */
    RB_LAYER_DEFAULT,  /* [retry] */
    RB_LAYER_BUILTIN,  /* Faktory's 25 retries, Sidekiq backoff */
} rb_policy_layer;

const char *rb_policy_layer_name(rb_policy_layer l);

/* The configured policy for a job type and queue (either may be NULL), by
 * semantics.md §8: jobtype, then queue, then [retry], then built-in. The
 * returned policy is borrowed from cfg (NULL means the built-in default). */
const rb_policy *rb_config_policy_for(const rb_config *cfg, const char *jobtype,
                                      const char *queue, rb_policy_layer *layer);

/* Appends to out the file the configured policy rb_config_policy_for() finds
 * for jobtype and queue came from: the base file's path, the overlay's path,
 * or "BASE + OVERLAY" when the table has keys from both; "built-in
 * defaults" when no table applies. */
void rb_config_policy_files(const rb_config *cfg, const char *jobtype, const char *queue,
                            struct rb_buf *out);

/* The effective policy for a job (a JSON object in Faktory's job format):
 * its "retry_policy" (top-level, else in "custom") if present, else the
 * configured one; then the client's "retry" field applied as a bound
 * (semantics.md §8). Fills *out (release it) and *layer. Returns 0, or a
 * negative code with err naming the bad field: retry_policy or
 * custom.retry_policy (prefixed once, with the key inside it), or retry (not
 * an integer, or below -1). cfg may be NULL (built-in defaults). */
int rb_config_effective_policy(const rb_config *cfg, const json_t *job, rb_policy *out,
                               rb_policy_layer *layer, rb_err *err);

#endif
