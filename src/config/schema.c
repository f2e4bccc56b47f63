/* The configuration schema table and the per-key checks, conversions and
 * formatting it drives. Add a setting here and it is validated, defaulted,
 * printed by `rebound config check` and required in the docs and example. */
#include "config/schema.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "config/toml_json.h"
#include "policy/duration.h"

#define OFF(field) offsetof(rb_config, field)
#define DAY (86400)

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"text", "json", NULL};

const rb_config_key rb_config_schema[] = {
    {"server.listen", RB_CFG_ADDRESS, "\"127.0.0.1:7419\"", 0, 0, 0, 0, OFF(server.listen),
     "address for workers and clients (Faktory work protocol); port 0 picks a free port", false},
    {"server.http_listen", RB_CFG_ADDRESS, "\"127.0.0.1:7420\"", 0, 0, 0, 0,
     OFF(server.http_listen), "address of the HTTP dashboard, JSON API and /metrics", false},
    {"server.password", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(server.password),
     "password clients must prove in HELLO; empty means no authentication", true},
    {"server.tls_cert", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(server.tls_cert),
     "PEM certificate file; set together with tls_key to serve TLS (and HTTPS unless "
     "http_tls_cert is set); empty means plain TCP", false},
    {"server.tls_key", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(server.tls_key),
     "PEM private key file for tls_cert", false},
    {"server.http_tls_cert", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(server.http_tls_cert),
     "PEM certificate file for HTTPS on http_listen; set together with http_tls_key; empty means "
     "tls_cert (plain HTTP when that is empty too)", false},
    {"server.http_tls_key", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(server.http_tls_key),
     "PEM private key file for http_tls_cert; empty means tls_key", false},
    {"server.http_allow_plaintext_password", RB_CFG_BOOL, "false", 0, 0, 0, 0,
     OFF(server.http_allow_plaintext_password),
     "start even with a password, plain HTTP and an http_listen that is not loopback (basic auth "
     "then crosses the network in clear text)", false},
    {"server.http_hosts", RB_CFG_HOSTS, "[]", 0, 0, 0, 0, OFF(server.http_hosts),
     "more names the Host header of an HTTP request may carry besides the http_listen address, "
     "localhost when it is loopback or every interface, and IP addresses; other names are "
     "refused (421) against DNS rebinding; [\"*\"] turns the check off", false},
    {"server.max_connections", RB_CFG_INT, "1024", 1, 1000000, 0, 0, OFF(server.max_connections),
     "most client connections open at once; more are refused", false},
    {"server.max_job_bytes", RB_CFG_INT, "1048576", 1024, 1073741824, 0, 0,
     OFF(server.max_job_bytes), "largest job payload or command line, in bytes", false},
    {"server.line_timeout", RB_CFG_DURATION, "\"10s\"", 1, 3600, 0, 0, OFF(server.line_timeout_s),
     "a connection that sends part of a command line and then nothing for this long is closed",
     false},
    {"server.hello_timeout", RB_CFG_DURATION, "\"10s\"", 1, 3600, 0, 0,
     OFF(server.hello_timeout_s), "a connection that has not finished HELLO this long after "
     "connecting is closed", false},
    {"server.reserve_for", RB_CFG_DURATION, "\"30m\"", 60, 7 * DAY, 0, 0, OFF(server.reserve_for_s),
     "how long a fetched job stays reserved when it sets no reserve_for of its own", false},
    {"server.dead_retention", RB_CFG_DURATION, "\"180d\"", 3600, 3650 * (int64_t)DAY, 0, 0,
     OFF(server.dead_retention_s), "how long dead jobs are kept before they are deleted", false},
    {"server.metrics_auth", RB_CFG_SWITCH, "\"auto\"", 0, 0, 0, 0, OFF(server.metrics_auth),
     "whether /metrics asks for the password (HTTP basic auth, as Prometheus sends it); auto: "
     "when one is set; true needs a password; false serves /metrics to anyone who can reach it "
     "(replaces metrics_public: metrics_public = true is false)", false},
    {"workflows.succeeded_ttl", RB_CFG_DURATION, "\"1h\"", 1, 30 * DAY, 0, 0,
     OFF(workflows.succeeded_ttl_s),
     "how long an ACKed job of a workflow (with dependents or dependencies) is remembered, so "
     "that a later push may still name it in depends_on", false},
    {"workflows.batch_retention", RB_CFG_DURATION, "\"24h\"", 60, 3650 * (int64_t)DAY, 0, 0,
     OFF(workflows.batch_retention_s), "how long a finished batch (every callback done) stays "
     "readable with BATCH STATUS and OPEN, and longer while its parent is unfinished", false},
    {"workflows.batch_uncommitted_ttl", RB_CFG_DURATION, "\"30m\"", 1, 30 * DAY, 0, 0,
     OFF(workflows.batch_uncommitted_ttl_s), "how long a batch that is never committed (BATCH "
     "COMMIT) lives before it expires with its counts (Faktory's is 30 minutes)", false},
    {"storage.url", RB_CFG_STORAGE_URL, "\"./rebound.db\"", 0, 0, 0, 0, OFF(storage.url),
     "a SQLite database file, or a postgres:// (postgresql://) connection URL", false},
    {"storage.prefetch", RB_CFG_BOOL, "false", 0, 0, 0, 0, OFF(storage.prefetch),
     "distributed mode: a worker's ACK also claims its next job, in the same transaction, so "
     "its next FETCH is answered at once (held 0.5 s at most, then put back); the job shows as "
     "working meanwhile", false},
    {"storage.forward", RB_CFG_BOOL, "false", 0, 0, 0, 0, OFF(storage.forward),
     "distributed mode: relay this node's client connections to the cluster's leader (the node "
     "holding the leader lease among those with forward on), so that one node batches every "
     "client's requests; served here when no leader is known or it cannot be reached; with "
     "tls_cert, relayed only to a leader presenting the same certificate (the bytes cross still "
     "encrypted)", false},
    {"storage.advertise", RB_CFG_STRING, "\"\"", 0, 0, 0, 0, OFF(storage.advertise),
     "with forward: the \"ip:port\" other nodes reach this node's client port at; empty means "
     "server.listen (then not every interface); port 0 means the port bound", false},
    {"storage.request_timeout", RB_CFG_DURATION, "\"5s\"", 1, 3600, 0, 0,
     OFF(storage.request_timeout_s),
     "distributed mode: a request the database has not committed this long after it arrived is "
     "answered -ERR storage error (the connection is dropped and made again); PostgreSQL's "
     "statement_timeout and lock_timeout are 80 % of it", false},
    {"storage.admin_timeout", RB_CFG_DURATION, "\"60s\"", 1, 86400, 0, 0,
     OFF(storage.admin_timeout_s),
     "distributed mode: request_timeout for INFO, JOB, JOBS, QUEUE, MUTATE, FLUSH, WORKERS, "
     "WORKFLOW and the HTTP API's reads and actions, which may read or change many rows (run "
     "one at a time, beside the work commands); request_timeout while the database is "
     "unreachable", false},
    {"storage.idle_in_transaction_timeout", RB_CFG_DURATION, "\"5s\"", 1, 3600, 0, 0,
     OFF(storage.idle_in_transaction_timeout_s),
     "distributed mode: PostgreSQL ends a node's transaction left idle this long (the node cut "
     "off or frozen mid-transaction), so its row locks are released for the other nodes", false},
    {"backoff.default_backoff_seconds", RB_CFG_SECONDS_LIST, "[1, 2, 4, 8, 16, 32]", 0, 0, 0,
     DAY, OFF(backoff.default_backoff_ms),
     "tasker dialect: the delays before retries 1, 2, ... (the last one repeats)", false},
    {"backoff.max_backoff_seconds", RB_CFG_SECONDS, "60", 0, 0, 1, DAY,
     OFF(backoff.max_backoff_ms), "tasker dialect: cap on any computed delay", false},
    {"backoff.backoff_multiplier", RB_CFG_FLOAT, "2.0", 0, 0, 1, 100,
     OFF(backoff.backoff_multiplier), "tasker dialect: growth factor of exponential backoff", false},
    {"backoff.jitter_enabled", RB_CFG_BOOL, "true", 0, 0, 0, 0, OFF(backoff.jitter_enabled),
     "tasker dialect: add random jitter to delays", false},
    {"backoff.jitter_max_percentage", RB_CFG_FLOAT, "0.1", 0, 0, 0, 1,
     OFF(backoff.jitter_max_percentage), "tasker dialect: largest jitter as a fraction of the delay", false},
    {"log.level", RB_CFG_CHOICE, "\"info\"", 0, 0, 0, 0, OFF(log.level),
     "the least severe log lines written (serve --log-level overrides it)", false},
    {"log.format", RB_CFG_CHOICE, "\"text\"", 0, 0, 0, 0, OFF(log.format),
     "text: \"TIME LEVEL message\" lines; json: one JSON object per line with time, level, msg "
     "and the job's fields (docs/operations.md)", false},
};
const size_t rb_config_schema_len = sizeof rb_config_schema / sizeof rb_config_schema[0];
_Static_assert(sizeof rb_config_schema / sizeof rb_config_schema[0] <= RB_CONFIG_MAX_KEYS,
               "rb_config.key_from is too small for the schema");

const char *const rb_config_sections[] = {"server", "storage", "backoff", "retry", "workflows",
                                          "throttles", "groups", "log",
                                          NULL};

const char *const *rb_config_choices(const rb_config_key *k)
{
    static const struct {
        const char *key;
        const char *const *choices;
    } sets[] = {{"log.level", log_levels}, {"log.format", log_formats}};
    for (size_t i = 0; k->kind == RB_CFG_CHOICE && i < sizeof sets / sizeof sets[0]; i++)
        if (!strcmp(sets[i].key, k->name))
            return sets[i].choices;
    return NULL;
}

int rb_config_key_index(const char *name)
{
    for (size_t i = 0; i < rb_config_schema_len; i++)
        if (!strcmp(rb_config_schema[i].name, name))
            return (int)i;
    return -1;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(b);
    size_t *row = rb_xcalloc(n + 1, sizeof *row);
    for (size_t j = 0; j <= n; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1]; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= n; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[n];
    free(row);
    return d;
}

const char *rb_config_nearest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, cands[i]);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best;
}

void rb_config_key_rule(const rb_config_key *k, rb_buf *out)
{
    char lo[RB_DURATION_STRLEN], hi[RB_DURATION_STRLEN];
    switch (k->kind) {
    case RB_CFG_STRING: rb_buf_adds(out, "a string"); break;
    case RB_CFG_ADDRESS: rb_buf_adds(out, "a string \"host:port\" with a port from 0 to 65535"); break;
    case RB_CFG_STORAGE_URL:
        rb_buf_adds(out, "a SQLite file path or a postgres:// URL (a non-empty string)");
        break;
    case RB_CFG_INT:
        rb_buf_printf(out, "an integer from %lld to %lld", (long long)k->min, (long long)k->max);
        break;
    case RB_CFG_BOOL: rb_buf_adds(out, "true or false"); break;
    case RB_CFG_SWITCH: rb_buf_adds(out, "true, false or \"auto\""); break;
    case RB_CFG_FLOAT: rb_buf_printf(out, "a number from %g to %g", k->fmin, k->fmax); break;
    case RB_CFG_DURATION:
        rb_buf_printf(out, "a duration from %s to %s (\"90s\", \"30m\", \"2h\", \"1d\", or seconds)",
                      rb_duration_format(k->min * 1000, lo, sizeof lo),
                      rb_duration_format(k->max * 1000, hi, sizeof hi));
        break;
    case RB_CFG_SECONDS:
        rb_buf_printf(out, "a number of seconds from %g to %g", k->fmin, k->fmax);
        break;
    case RB_CFG_SECONDS_LIST:
        rb_buf_printf(out, "a non-empty array of numbers of seconds, each from %g to %g", k->fmin,
                      k->fmax);
        break;
    case RB_CFG_HOSTS:
        rb_buf_adds(out, "an array of host names without port (\"rebound.example.com\", "
                         "\"*.example.com\"; \"*\": any)");
        break;
    case RB_CFG_CHOICE:
        rb_buf_adds(out, "one of");
        for (size_t i = 0; rb_config_choices(k)[i]; i++)
            rb_buf_printf(out, "%s \"%s\"", i ? (rb_config_choices(k)[i + 1] ? "," : " or") : "",
                          rb_config_choices(k)[i]);
        break;
    }
}

/* "string \"x\"", "integer 5", "float 2.5", "bool true", "array", "table", ... */
static void brief(const rb_toml_value *v, rb_buf *out)
{
    char b[64];
    rb_buf_printf(out, "%s", rb_toml_type_name(v->type));
    switch (v->type) {
    case RB_TOML_STRING: rb_buf_printf(out, " \"%.60s\"", v->u.str.s); break;
    case RB_TOML_INTEGER: rb_buf_printf(out, " %lld", (long long)v->u.i); break;
    case RB_TOML_FLOAT:
        rb_toml_format_float(v->u.f, b, sizeof b);
        rb_buf_printf(out, " %s", b);
        break;
    case RB_TOML_BOOL: rb_buf_adds(out, v->u.b ? " true" : " false"); break;
    case RB_TOML_TABLE:
    case RB_TOML_ARRAY: break;
    default: rb_buf_printf(out, " %s", rb_toml_format_datetime(v->type, &v->u.dt, b)); break;
    }
}

static int bad(const rb_config_key *k, const rb_toml_value *v, const char *extra, rb_err *err)
{
    rb_buf m = RB_BUF_INIT;
    rb_buf_adds(&m, "must be ");
    rb_config_key_rule(k, &m);
    rb_buf_adds(&m, ", got ");
    brief(v, &m);
    if (extra)
        rb_buf_printf(&m, " (%s)", extra);
    int code = (v->type == RB_TOML_INTEGER || v->type == RB_TOML_FLOAT) &&
                       (k->kind == RB_CFG_INT || k->kind == RB_CFG_FLOAT ||
                        k->kind == RB_CFG_SECONDS || k->kind == RB_CFG_DURATION)
                   ? RB_ERANGE
                   : RB_EINVAL;
    rb_err_set(err, code, "%s", rb_buf_str(&m));
    rb_buf_release(&m);
    return code;
}

/* bad() for array v whose element i, e, is not allowed. */
static int bad_element(const rb_config_key *k, const rb_toml_value *v, size_t i,
                       const rb_toml_value *e, rb_err *err)
{
    rb_buf what = RB_BUF_INIT;
    rb_buf_printf(&what, "element %zu is ", i);
    brief(e, &what);
    int code = bad(k, v, rb_buf_str(&what), err);
    rb_buf_release(&what);
    return code;
}

static bool is_number(const rb_toml_value *v, double *out)
{
    if (v->type == RB_TOML_INTEGER)
        *out = (double)v->u.i;
    else if (v->type == RB_TOML_FLOAT && isfinite(v->u.f))
        *out = v->u.f;
    else
        return false;
    return true;
}

static bool seconds_ms(double s, int64_t *ms)
{
    double x = nearbyint(s * 1000.0);
    if (fabs(s * 1000.0 - x) > 1e-6)
        return false;
    *ms = (int64_t)x;
    return true;
}

bool rb_config_address_valid(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1] || strlen(colon + 1) > 5)
        return false;
    if (s[0] == '[' && colon[-1] != ']')
        return false;
    long port = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        port = port * 10 + (*p - '0');
    }
    return port <= 65535;
}

/* A host name (letters, digits, '-', '_', dots between labels), an IPv4
 * address or an IPv6 one in brackets, perhaps after "*."; or "*" alone.
 * No port, scheme or path. */
static bool valid_host_pattern(const char *s)
{
    if (!strcmp(s, "*"))
        return true;
    if (!strncmp(s, "*.", 2))
        s += 2;
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    if (s[0] == '[')
        return n > 2 && s[n - 1] == ']' && strspn(s + 1, "0123456789abcdefABCDEF:.") == n - 2;
    if (s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    for (const char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
            return false;
    return true;
}

void rb_config_hosts_free(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}

bool rb_config_host_matches(const char *pattern, const char *name)
{
    if (!strcmp(pattern, "*"))
        return true;
    if (!strncmp(pattern, "*.", 2)) {
        size_t lp = strlen(pattern + 1), ln = strlen(name); /* ".domain" */
        return ln > lp && !strcasecmp(name + ln - lp, pattern + 1);
    }
    return !strcasecmp(pattern, name);
}

int rb_config_key_set(rb_config *cfg, const rb_config_key *k, const rb_toml_value *v, rb_err *err)
{
    void *field = (char *)cfg + k->offset;
    double x;
    switch (k->kind) {
    case RB_CFG_STRING:
    case RB_CFG_ADDRESS:
    case RB_CFG_STORAGE_URL: {
        if (v->type != RB_TOML_STRING)
            return bad(k, v, NULL, err);
        if (strlen(v->u.str.s) != v->u.str.len)
            return bad(k, v, "contains a NUL character", err);
        if (k->kind == RB_CFG_ADDRESS && !rb_config_address_valid(v->u.str.s))
            return bad(k, v, NULL, err);
        if (k->kind == RB_CFG_STORAGE_URL &&
            (!v->u.str.len || (strstr(v->u.str.s, "://") && strncmp(v->u.str.s, "postgres://", 11) &&
                               strncmp(v->u.str.s, "postgresql://", 13))))
            return bad(k, v, NULL, err);
        char **s = field;
        free(*s);
        *s = v->u.str.len ? rb_xstrdup(v->u.str.s) : NULL;
        return 0;
    }
    case RB_CFG_INT:
        if (v->type != RB_TOML_INTEGER || v->u.i < k->min || v->u.i > k->max)
            return bad(k, v, NULL, err);
        *(int64_t *)field = v->u.i;
        return 0;
    case RB_CFG_BOOL:
        if (v->type != RB_TOML_BOOL)
            return bad(k, v, NULL, err);
        *(bool *)field = v->u.b;
        return 0;
    case RB_CFG_SWITCH:
        if (v->type == RB_TOML_BOOL)
            *(int *)field = v->u.b ? RB_CFG_ON : RB_CFG_OFF;
        else if (v->type == RB_TOML_STRING && !strcmp(v->u.str.s, "auto") && v->u.str.len == 4)
            *(int *)field = RB_CFG_AUTO;
        else
            return bad(k, v, NULL, err);
        return 0;
    case RB_CFG_FLOAT:
        if (!is_number(v, &x) || x < k->fmin || x > k->fmax)
            return bad(k, v, NULL, err);
        *(double *)field = x;
        return 0;
    case RB_CFG_DURATION: {
        int64_t ms;
        rb_err derr = {0};
        if (v->type != RB_TOML_STRING && v->type != RB_TOML_INTEGER && v->type != RB_TOML_FLOAT)
            return bad(k, v, NULL, err);
        json_t *j = rb_toml_to_json(v);
        int rc = rb_duration_from_json(j, &ms, &derr);
        json_decref(j);
        if (rc < 0)
            return bad(k, v, rb_err_msg(&derr), err);
        if (ms % 1000)
            return bad(k, v, "not a whole number of seconds", err);
        if (ms / 1000 < k->min || ms / 1000 > k->max)
            return bad(k, v, NULL, err);
        *(int64_t *)field = ms / 1000;
        return 0;
    }
    case RB_CFG_SECONDS: {
        int64_t ms;
        if (!is_number(v, &x) || x < k->fmin || x > k->fmax)
            return bad(k, v, NULL, err);
        if (!seconds_ms(x, &ms))
            return bad(k, v, "not a whole number of milliseconds", err);
        *(int64_t *)field = ms;
        return 0;
    }
    case RB_CFG_SECONDS_LIST: {
        if (v->type != RB_TOML_ARRAY || v->u.array.n == 0)
            return bad(k, v, NULL, err);
        size_t n = v->u.array.n;
        int64_t *list = rb_xcalloc(n, sizeof *list);
        for (size_t i = 0; i < n; i++) {
            const rb_toml_value *e = v->u.array.items[i];
            if (!is_number(e, &x) || x < k->fmin || x > k->fmax || !seconds_ms(x, &list[i])) {
                free(list);
                return bad_element(k, v, i, e, err);
            }
        }
        rb_backoff_config *b = &cfg->backoff;
        free(b->default_backoff_ms);
        b->default_backoff_ms = list;
        b->n_default_backoff = n;
        return 0;
    }
    case RB_CFG_HOSTS: {
        if (v->type != RB_TOML_ARRAY)
            return bad(k, v, NULL, err);
        size_t n = v->u.array.n;
        char **list = rb_xcalloc(n + 1, sizeof *list);
        for (size_t i = 0; i < n; i++) {
            const rb_toml_value *e = v->u.array.items[i];
            if (e->type != RB_TOML_STRING || strlen(e->u.str.s) != e->u.str.len ||
                !valid_host_pattern(e->u.str.s)) {
                rb_config_hosts_free(list);
                return bad_element(k, v, i, e, err);
            }
            list[i] = rb_xstrdup(e->u.str.s);
            for (char *c = list[i]; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        }
        char ***field_list = field;
        rb_config_hosts_free(*field_list);
        *field_list = list;
        return 0;
    }
    case RB_CFG_CHOICE:
        if (v->type == RB_TOML_STRING && strlen(v->u.str.s) == v->u.str.len)
            for (int i = 0; rb_config_choices(k)[i]; i++)
                if (!strcmp(rb_config_choices(k)[i], v->u.str.s)) {
                    *(int *)field = i;
                    return 0;
                }
        return bad(k, v, NULL, err);
    }
    return rb_err_set(err, RB_EINVAL, "unknown setting kind");
}

static void seconds_text(int64_t ms, rb_buf *out)
{
    if (ms % 1000)
        rb_buf_printf(out, "%.3f", (double)ms / 1000.0);
    else
        rb_buf_printf(out, "%lld", (long long)(ms / 1000));
}

void rb_config_key_format(const rb_config *cfg, const rb_config_key *k, rb_buf *out)
{
    const void *field = (const char *)cfg + k->offset;
    char d[RB_DURATION_STRLEN];
    switch (k->kind) {
    case RB_CFG_STRING:
    case RB_CFG_ADDRESS:
    case RB_CFG_STORAGE_URL: {
        const char *s = *(char *const *)field ? *(char *const *)field : "";
        json_t *j = json_string(k->secret && *s ? "********" : s);
        char *t = json_dumps(j, JSON_ENCODE_ANY);
        rb_buf_adds(out, t);
        free(t);
        json_decref(j);
        break;
    }
    case RB_CFG_INT: rb_buf_printf(out, "%lld", (long long)*(const int64_t *)field); break;
    case RB_CFG_BOOL: rb_buf_adds(out, *(const bool *)field ? "true" : "false"); break;
    case RB_CFG_SWITCH: {
        int sw = *(const int *)field;
        rb_buf_adds(out, sw == RB_CFG_AUTO ? "\"auto\"" : sw ? "true" : "false");
        break;
    }
    case RB_CFG_FLOAT: {
        char b[64];
        rb_toml_format_float(*(const double *)field, b, sizeof b);
        rb_buf_adds(out, b);
        if (!strpbrk(b, ".e"))
            rb_buf_adds(out, ".0");
        break;
    }
    case RB_CFG_DURATION:
        rb_buf_printf(out, "\"%s\"", rb_duration_format(*(const int64_t *)field * 1000, d, sizeof d));
        break;
    case RB_CFG_SECONDS: seconds_text(*(const int64_t *)field, out); break;
    case RB_CFG_SECONDS_LIST:
        rb_buf_addc(out, '[');
        for (size_t i = 0; i < cfg->backoff.n_default_backoff; i++) {
            if (i)
                rb_buf_adds(out, ", ");
            seconds_text(cfg->backoff.default_backoff_ms[i], out);
        }
        rb_buf_addc(out, ']');
        break;
    case RB_CFG_CHOICE: rb_buf_printf(out, "\"%s\"", rb_config_choices(k)[*(const int *)field]); break;
    case RB_CFG_HOSTS: {
        char *const *list = *(char **const *)field;
        rb_buf_addc(out, '[');
        for (size_t i = 0; list && list[i]; i++)
            rb_buf_printf(out, "%s\"%s\"", i ? ", " : "", list[i]); /* no quote or backslash */
        rb_buf_addc(out, ']');
        break;
    }
    }
}

json_t *rb_config_key_json(const rb_config *cfg, const rb_config_key *k)
{
    const void *field = (const char *)cfg + k->offset;
    char d[RB_DURATION_STRLEN];
    switch (k->kind) {
    case RB_CFG_STRING:
    case RB_CFG_ADDRESS:
    case RB_CFG_STORAGE_URL: {
        const char *s = *(char *const *)field;
        return json_string(k->secret && s && *s ? "********" : s ? s : "");
    }
    case RB_CFG_INT: return json_integer(*(const int64_t *)field);
    case RB_CFG_BOOL: return json_boolean(*(const bool *)field);
    case RB_CFG_SWITCH:
        return *(const int *)field == RB_CFG_AUTO ? json_string("auto")
                                                  : json_boolean(*(const int *)field);
    case RB_CFG_FLOAT: return json_real(*(const double *)field);
    case RB_CFG_DURATION:
        return json_string(rb_duration_format(*(const int64_t *)field * 1000, d, sizeof d));
    case RB_CFG_SECONDS: return json_real((double)*(const int64_t *)field / 1000.0);
    case RB_CFG_SECONDS_LIST: {
        json_t *a = json_array();
        for (size_t i = 0; i < cfg->backoff.n_default_backoff; i++)
            json_array_append_new(a, json_real((double)cfg->backoff.default_backoff_ms[i] / 1000.0));
        return a;
    }
    case RB_CFG_CHOICE: return json_string(rb_config_choices(k)[*(const int *)field]);
    case RB_CFG_HOSTS: {
        json_t *a = json_array();
        for (char *const *list = *(char **const *)field; list && *list; list++)
            json_array_append_new(a, json_string(*list));
        return a;
    }
    }
    return json_null();
}

void rb_config_reference_markdown(rb_buf *out)
{
    rb_buf_adds(out, "| key | default | allowed | meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        const rb_config_key *k = &rb_config_schema[i];
        rb_buf rule = RB_BUF_INIT;
        rb_config_key_rule(k, &rule);
        rb_buf_printf(out, "| `%s` | `%s` | %s | %s |\n", k->name, k->def, rb_buf_str(&rule),
                      k->doc);
        rb_buf_release(&rule);
    }
}
