/* The configuration: defaults from the schema, loading and strict
 * validation (one case per error path), overlays, where values came from,
 * and which retry policy applies to a job. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "config/config.h"
#include "config/schema.h"
#include "policy/rng.h"

/* Each test runs in its own process: work in a fresh temporary directory. */
static void in_tmpdir(void)
{
    char tmpl[] = "/tmp/rebound-config-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    cr_assert_eq(chdir(tmpl), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void load_ok(rb_config *cfg, const char *text)
{
    write_file("c.toml", text);
    rb_err err = {0};
    int rc = rb_config_load(cfg, "c.toml", NULL, &err);
    cr_assert_eq(rc, 0, "load failed: %s", rb_err_msg(&err));
}

static void expect_load_error(const char *text, int code, const char *msg)
{
    write_file("c.toml", text);
    rb_config cfg;
    rb_err err = {0};
    int rc = rb_config_load(&cfg, "c.toml", NULL, &err);
    cr_expect_eq(rc, code, "for %s: code %d (%s)", text, rc, rb_err_msg(&err));
    cr_expect_str_eq(err.msg, msg, "for:\n%s", text);
    /* on failure cfg holds the defaults */
    cr_expect_str_eq(cfg.server.listen, "127.0.0.1:7419");
    cr_expect_not(cfg.has_retry_default);
    rb_config_release(&cfg);
}

Test(config, defaults_come_from_the_schema)
{
    rb_config cfg;
    rb_config_init(&cfg);
    cr_assert_str_eq(cfg.server.listen, "127.0.0.1:7419");
    cr_assert_str_eq(cfg.server.http_listen, "127.0.0.1:7420");
    cr_assert_null(cfg.server.password);
    cr_assert_null(cfg.server.tls_cert);
    cr_assert_null(cfg.server.tls_key);
    cr_assert_null(cfg.server.http_tls_cert);
    cr_assert_null(cfg.server.http_tls_key);
    cr_assert_not(cfg.server.http_allow_plaintext_password);
    cr_assert(!cfg.server.http_hosts || !cfg.server.http_hosts[0], "no http_hosts");
    cr_assert_eq(cfg.server.max_connections, 1024);
    cr_assert_eq(cfg.server.max_job_bytes, 1 << 20);
    cr_assert_eq(cfg.server.reserve_for_s, 1800);
    cr_assert_eq(cfg.server.line_timeout_s, 10);
    cr_assert_eq(cfg.server.hello_timeout_s, 10);
    cr_assert_eq(cfg.server.dead_retention_s, 180 * 86400);
    cr_assert_eq(cfg.server.metrics_auth, RB_CFG_AUTO);
    cr_assert_str_eq(cfg.storage.url, "./rebound.db");
    cr_assert_eq(cfg.log.level, 1, "info");
    cr_assert_eq(cfg.log.format, 0, "text");
    /* the schema's [backoff] defaults are tasker's seed defaults */
    rb_backoff_config seed;
    rb_backoff_config_init(&seed);
    cr_assert_eq(cfg.backoff.n_default_backoff, seed.n_default_backoff);
    for (size_t i = 0; i < seed.n_default_backoff; i++)
        cr_assert_eq(cfg.backoff.default_backoff_ms[i], seed.default_backoff_ms[i]);
    cr_assert_eq(cfg.backoff.max_backoff_ms, seed.max_backoff_ms);
    cr_assert_float_eq(cfg.backoff.backoff_multiplier, seed.backoff_multiplier, 1e-12);
    cr_assert_eq(cfg.backoff.jitter_enabled, seed.jitter_enabled);
    cr_assert_float_eq(cfg.backoff.jitter_max_percentage, seed.jitter_max_percentage, 1e-12);
    rb_backoff_config_release(&seed);
    cr_assert_not(cfg.has_retry_default);
    cr_assert_eq(cfg.n_queues + cfg.n_jobtypes, 0);
    rb_config_release(&cfg);

    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, NULL, NULL, &err), 0, "no file: defaults");
    cr_assert_null(cfg.path);
    for (size_t i = 0; i < rb_config_schema_len; i++)
        cr_assert_eq(cfg.key_from[i], RB_CFG_FROM_DEFAULT);
    rb_config_release(&cfg);
}

Test(config, every_key_is_read_from_a_file, .init = in_tmpdir)
{
    rb_config cfg;
    load_ok(&cfg, "[server]\n"
                  "listen = \"0.0.0.0:17419\"\n"
                  "http_listen = \"[::1]:0\"\n"
                  "password = \"s3cret\"\n"
                  "tls_cert = \"c.pem\"\n"
                  "tls_key = \"k.pem\"\n"
                  "http_tls_cert = \"hc.pem\"\n"
                  "http_tls_key = \"hk.pem\"\n"
                  "http_allow_plaintext_password = true\n"
                  "http_hosts = [\"Rebound.Example.com\", \"*.corp.example\", \"[::1]\", "
                  "\"10.0.0.5\", \"*\"]\n"
                  "max_connections = 10\n"
                  "max_job_bytes = 2048\n"
                  "reserve_for = 3600\n"
                  "line_timeout = \"2m\"\n"
                  "hello_timeout = 3\n"
                  "dead_retention = \"7d\"\n"
                  "metrics_auth = true\n"
                  "[storage]\n"
                  "url = \"postgres://u@h/db\"\n"
                  "prefetch = true\n"
                  "forward = false\n"
                  "advertise = \"10.0.0.5:7419\"\n"
                  "request_timeout = \"3s\"\n"
                  "admin_timeout = \"2m\"\n"
                  "idle_in_transaction_timeout = 7\n"
                  "[workflows]\n"
                  "succeeded_ttl = \"10m\"\n"
                  "batch_retention = \"2h\"\n"
                  "batch_uncommitted_ttl = \"90s\"\n"
                  "[log]\n"
                  "level = \"warn\"\n"
                  "format = \"json\"\n"
                  "[backoff]\n"
                  "default_backoff_seconds = [0.5, 3]\n"
                  "max_backoff_seconds = 30.5\n"
                  "backoff_multiplier = 3\n"
                  "jitter_enabled = false\n"
                  "jitter_max_percentage = 0.25\n");
    cr_assert_str_eq(cfg.path, "c.toml");
    cr_assert_str_eq(cfg.server.listen, "0.0.0.0:17419");
    cr_assert_str_eq(cfg.server.http_listen, "[::1]:0");
    cr_assert_str_eq(cfg.server.password, "s3cret");
    cr_assert_str_eq(cfg.server.tls_cert, "c.pem");
    cr_assert_str_eq(cfg.server.tls_key, "k.pem");
    cr_assert_str_eq(cfg.server.http_tls_cert, "hc.pem");
    cr_assert_str_eq(cfg.server.http_tls_key, "hk.pem");
    cr_assert(cfg.server.http_allow_plaintext_password);
    const char *hosts[] = {"rebound.example.com", "*.corp.example", "[::1]", "10.0.0.5", "*", NULL};
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++)
        cr_assert(hosts[i] ? cfg.server.http_hosts[i] && !strcmp(cfg.server.http_hosts[i], hosts[i])
                           : !cfg.server.http_hosts[i], "http_hosts[%zu]", i);
    cr_assert_eq(cfg.server.max_connections, 10);
    cr_assert_eq(cfg.server.max_job_bytes, 2048);
    cr_assert_eq(cfg.server.reserve_for_s, 3600);
    cr_assert_eq(cfg.server.line_timeout_s, 120);
    cr_assert_eq(cfg.server.hello_timeout_s, 3);
    cr_assert_eq(cfg.workflows.batch_retention_s, 7200);
    cr_assert_eq(cfg.workflows.batch_uncommitted_ttl_s, 90);
    cr_assert_eq(cfg.server.dead_retention_s, 7 * 86400);
    cr_assert_eq(cfg.server.metrics_auth, RB_CFG_ON);
    cr_assert_str_eq(cfg.storage.url, "postgres://u@h/db");
    cr_assert(cfg.storage.prefetch);
    cr_assert_not(cfg.storage.forward);
    cr_assert_str_eq(cfg.storage.advertise, "10.0.0.5:7419");
    cr_assert_eq(cfg.storage.request_timeout_s, 3);
    cr_assert_eq(cfg.storage.admin_timeout_s, 120);
    cr_assert_eq(cfg.storage.idle_in_transaction_timeout_s, 7);
    cr_assert_eq(cfg.workflows.succeeded_ttl_s, 600);
    cr_assert_eq(cfg.log.level, 2, "warn");
    cr_assert_eq(cfg.log.format, 1, "json");
    cr_assert_eq(cfg.backoff.n_default_backoff, 2);
    cr_assert_eq(cfg.backoff.default_backoff_ms[0], 500);
    cr_assert_eq(cfg.backoff.default_backoff_ms[1], 3000);
    cr_assert_eq(cfg.backoff.max_backoff_ms, 30500);
    cr_assert_float_eq(cfg.backoff.backoff_multiplier, 3.0, 1e-12);
    cr_assert_not(cfg.backoff.jitter_enabled);
    cr_assert_float_eq(cfg.backoff.jitter_max_percentage, 0.25, 1e-12);
    for (size_t i = 0; i < rb_config_schema_len; i++)
        cr_assert_eq(cfg.key_from[i], RB_CFG_FROM_BASE, "%s", rb_config_schema[i].name);
    rb_config_release(&cfg);
}

/* One case per error path of the schema: file, line, key and the rule. */
static const struct {
    const char *text;
    int code;
    const char *msg;
} error_cases[] = {
    /* syntax, sections, keys */
    {"[server]\nlisten = \n", RB_EPARSE, "c.toml:2:10: expected a value"},
    {"[sever]\n", RB_EINVAL, "c.toml:1: key 'sever': unknown key (did you mean 'server'?)"},
    {"storage = 5\n", RB_EINVAL, "c.toml:1: key 'storage': must be a table ([storage]), got integer"},
    {"[server]\n\nmax_conections = 5\n", RB_EINVAL,
     "c.toml:3: key 'server.max_conections': unknown key (did you mean 'server.max_connections'?)"},
    {"[backoff]\njitter = true\n", RB_EINVAL,
     "c.toml:2: key 'backoff.jitter': unknown key (did you mean 'backoff.jitter_enabled'?)"},
    /* strings */
    {"[server]\npassword = 5\n", RB_EINVAL,
     "c.toml:2: key 'server.password': must be a string, got integer 5"},
    {"[server]\npassword = \"a\\u0000b\"\n", RB_EINVAL,
     "c.toml:2: key 'server.password': must be a string, got string \"a\" (contains a NUL character)"},
    {"[server]\nlisten = \"localhost\"\n", RB_EINVAL,
     "c.toml:2: key 'server.listen': must be a string \"host:port\" with a port from 0 to 65535, "
     "got string \"localhost\""},
    {"[server]\nlisten = \"h:99999\"\n", RB_EINVAL,
     "c.toml:2: key 'server.listen': must be a string \"host:port\" with a port from 0 to 65535, "
     "got string \"h:99999\""},
    {"[server]\nhttp_listen = \"h:8x\"\n", RB_EINVAL,
     "c.toml:2: key 'server.http_listen': must be a string \"host:port\" with a port from 0 to "
     "65535, got string \"h:8x\""},
    {"[server]\nhttp_listen = \"[::1:80\"\n", RB_EINVAL,
     "c.toml:2: key 'server.http_listen': must be a string \"host:port\" with a port from 0 to "
     "65535, got string \"[::1:80\""},
    {"[server]\nhttp_hosts = \"rebound.example.com\"\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got string "
     "\"rebound.example.com\""},
    {"[server]\nhttp_hosts = [\"ok.example\", \"rebound.example.com:443\"]\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got array (element 1 is "
     "string \"rebound.example.com:443\")"},
    {"[server]\nhttp_hosts = [\"https://rebound.example.com\"]\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got array (element 0 is "
     "string \"https://rebound.example.com\")"},
    {"[server]\nhttp_hosts = [\"\"]\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got array (element 0 is "
     "string \"\")"},
    {"[server]\nhttp_hosts = [\"*.\", \"a..b\"]\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got array (element 0 is "
     "string \"*.\")"},
    {"[server]\nhttp_hosts = [7420]\n", RB_EINVAL,
     "c.toml:2: key 'server.http_hosts': must be an array of host names without port "
     "(\"rebound.example.com\", \"*.example.com\"; \"*\": any), got array (element 0 is "
     "integer 7420)"},
    {"[storage]\nurl = \"\"\n", RB_EINVAL,
     "c.toml:2: key 'storage.url': must be a SQLite file path or a postgres:// URL (a non-empty "
     "string), got string \"\""},
    {"[storage]\nurl = \"mysql://x/y\"\n", RB_EINVAL,
     "c.toml:2: key 'storage.url': must be a SQLite file path or a postgres:// URL (a non-empty "
     "string), got string \"mysql://x/y\""},
    /* choices */
    {"[log]\nformat = \"xml\"\n", RB_EINVAL,
     "c.toml:2: key 'log.format': must be one of \"text\" or \"json\", got string \"xml\""},
    {"[log]\nformat = 1\n", RB_EINVAL,
     "c.toml:2: key 'log.format': must be one of \"text\" or \"json\", got integer 1"},
    {"[log]\nlevel = \"INFO\"\n", RB_EINVAL,
     "c.toml:2: key 'log.level': must be one of \"debug\", \"info\", \"warn\" or \"error\", got "
     "string \"INFO\""},
    {"[log]\nlevel = \"verbose\"\n", RB_EINVAL,
     "c.toml:2: key 'log.level': must be one of \"debug\", \"info\", \"warn\" or \"error\", got "
     "string \"verbose\""},
    {"[log]\nformt = \"json\"\n", RB_EINVAL,
     "c.toml:2: key 'log.formt': unknown key (did you mean 'log.format'?)"},
    /* integers and booleans */
    {"[server]\nmax_connections = \"10\"\n", RB_EINVAL,
     "c.toml:2: key 'server.max_connections': must be an integer from 1 to 1000000, got string \"10\""},
    {"[server]\nmax_connections = 1.5\n", RB_ERANGE,
     "c.toml:2: key 'server.max_connections': must be an integer from 1 to 1000000, got float 1.5"},
    {"[server]\nmax_connections = 0\n", RB_ERANGE,
     "c.toml:2: key 'server.max_connections': must be an integer from 1 to 1000000, got integer 0"},
    {"[server]\nmax_job_bytes = 1073741825\n", RB_ERANGE,
     "c.toml:2: key 'server.max_job_bytes': must be an integer from 1024 to 1073741824, got "
     "integer 1073741825"},
    {"[server]\nmetrics_auth = \"yes\"\n", RB_EINVAL,
     "c.toml:2: key 'server.metrics_auth': must be true, false or \"auto\", got string \"yes\""},
    {"[server]\nmetrics_auth = 1\n", RB_EINVAL,
     "c.toml:2: key 'server.metrics_auth': must be true, false or \"auto\", got integer 1"},
    /* storage.advertise (server/forward.h): an ip:port */
    {"[storage]\nadvertise = \"node-a:7419\"\n", RB_EINVAL,
     "c.toml:2: key 'storage.advertise': 'node-a:7419' is not \"ip:port\" (an IPv4 address or "
     "a bracketed IPv6 one, not every interface)"},
    {"[storage]\nadvertise = \"0.0.0.0:7419\"\n", RB_EINVAL,
     "c.toml:2: key 'storage.advertise': '0.0.0.0:7419' is not \"ip:port\" (an IPv4 address or "
     "a bracketed IPv6 one, not every interface)"},
    {"[server]\n\nmetrics_auth = true\n", RB_EINVAL,
     "c.toml:3: key 'server.metrics_auth': true needs 'server.password' (the password /metrics "
     "asks for)"},
    {"[server]\nmetrics_public = \"yes\"\n", RB_EINVAL,
     "c.toml:2: key 'server.metrics_public': must be true or false (the old name of "
     "'server.metrics_auth', which it sets to false for true)"},
    {"[server]\nmetrics_auth = false\nmetrics_public = true\n", RB_EINVAL,
     "c.toml:3: key 'server.metrics_public': is the old name of 'server.metrics_auth': set only "
     "that one"},
    /* floats */
    {"[backoff]\nbackoff_multiplier = 0.5\n", RB_ERANGE,
     "c.toml:2: key 'backoff.backoff_multiplier': must be a number from 1 to 100, got float 0.5"},
    {"[backoff]\njitter_max_percentage = inf\n", RB_ERANGE,
     "c.toml:2: key 'backoff.jitter_max_percentage': must be a number from 0 to 1, got float inf"},
    {"[backoff]\njitter_max_percentage = true\n", RB_EINVAL,
     "c.toml:2: key 'backoff.jitter_max_percentage': must be a number from 0 to 1, got bool true"},
    /* durations */
    {"[server]\nreserve_for = true\n", RB_EINVAL,
     "c.toml:2: key 'server.reserve_for': must be a duration from 1m to 7d (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got bool true"},
    {"[server]\nreserve_for = \"5 minutes\"\n", RB_EINVAL,
     "c.toml:2: key 'server.reserve_for': must be a duration from 1m to 7d (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got string \"5 minutes\" (invalid duration '5 minutes': "},
    {"[server]\nreserve_for = \"90500ms\"\n", RB_EINVAL,
     "c.toml:2: key 'server.reserve_for': must be a duration from 1m to 7d (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got string \"90500ms\" (not a whole number of seconds)"},
    {"[server]\nline_timeout = \"0s\"\n", RB_EINVAL,
     "c.toml:2: key 'server.line_timeout': must be a duration from 1s to 1h (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got string \"0s\""},
    {"[server]\nhello_timeout = \"2h\"\n", RB_EINVAL,
     "c.toml:2: key 'server.hello_timeout': must be a duration from 1s to 1h (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got string \"2h\""},
    {"[server]\nreserve_for = 59\n", RB_ERANGE,
     "c.toml:2: key 'server.reserve_for': must be a duration from 1m to 7d (\"90s\", \"30m\", "
     "\"2h\", \"1d\", or seconds), got integer 59"},
    {"[server]\ndead_retention = \"3651d\"\n", RB_EINVAL,
     "c.toml:2: key 'server.dead_retention': must be a duration from 1h to 3650d (\"90s\", "
     "\"30m\", \"2h\", \"1d\", or seconds), got string \"3651d\""},
    /* seconds */
    {"[backoff]\nmax_backoff_seconds = \"60s\"\n", RB_EINVAL,
     "c.toml:2: key 'backoff.max_backoff_seconds': must be a number of seconds from 1 to 86400, "
     "got string \"60s\""},
    {"[backoff]\nmax_backoff_seconds = 0\n", RB_ERANGE,
     "c.toml:2: key 'backoff.max_backoff_seconds': must be a number of seconds from 1 to 86400, "
     "got integer 0"},
    {"[backoff]\nmax_backoff_seconds = 1.0001\n", RB_ERANGE,
     "c.toml:2: key 'backoff.max_backoff_seconds': must be a number of seconds from 1 to 86400, "
     "got float 1.0001 (not a whole number of milliseconds)"},
    {"[backoff]\ndefault_backoff_seconds = 5\n", RB_EINVAL,
     "c.toml:2: key 'backoff.default_backoff_seconds': must be a non-empty array of numbers of "
     "seconds, each from 0 to 86400, got integer 5"},
    {"[backoff]\ndefault_backoff_seconds = []\n", RB_EINVAL,
     "c.toml:2: key 'backoff.default_backoff_seconds': must be a non-empty array of numbers of "
     "seconds, each from 0 to 86400, got array"},
    {"[backoff]\ndefault_backoff_seconds = [1, \"2\"]\n", RB_EINVAL,
     "c.toml:2: key 'backoff.default_backoff_seconds': must be a non-empty array of numbers of "
     "seconds, each from 0 to 86400, got array (element 1 is string \"2\")"},
    {"[backoff]\ndefault_backoff_seconds = [1, -2]\n", RB_EINVAL,
     "c.toml:2: key 'backoff.default_backoff_seconds': must be a non-empty array of numbers of "
     "seconds, each from 0 to 86400, got array (element 1 is integer -2)"},
    /* TLS comes as a pair */
    {"[server]\ntls_cert = \"c.pem\"\n", RB_EINVAL,
     "c.toml:2: key 'server.tls_cert': must be set together with 'server.tls_key'"},
    {"[server]\n\ntls_key = \"k.pem\"\n", RB_EINVAL,
     "c.toml:3: key 'server.tls_key': must be set together with 'server.tls_cert'"},
    {"[server]\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\nhttp_tls_cert = \"h.pem\"\n", RB_EINVAL,
     "c.toml:4: key 'server.http_tls_cert': must be set together with 'server.http_tls_key'"},
    {"[server]\nhttp_tls_key = \"h.key\"\n", RB_EINVAL,
     "c.toml:2: key 'server.http_tls_key': must be set together with 'server.http_tls_cert'"},
    {"[server]\nhttp_allow_plaintext_password = \"yes\"\n", RB_EINVAL,
     "c.toml:2: key 'server.http_allow_plaintext_password': must be true or false, got string "
     "\"yes\""},
    /* policy tables */
    {"[retry]\nmax_atempts = 3\n", RB_EINVAL,
     "c.toml:2: key 'retry.max_atempts': unknown policy key (did you mean 'max_attempts'?)"},
    {"[retry.jobtypes.x]\n", RB_EINVAL,
     "c.toml:1: key 'retry.jobtypes.x': empty policy: give a dialect's keys, ftl = \"...\" or "
     "faktory = N"},
    {"[retry.queues.q]\nftl = \"3\"\nmax_attempts = 2\n", RB_EINVAL,
     "c.toml:3: key 'retry.queues.q.ftl': cannot be combined with other policy keys "
     "('max_attempts')"},
    {"[retry]\nftl = \"3\"\nfaktory = 2\n", RB_EINVAL,
     "c.toml:3: key 'retry.ftl': cannot be combined with other policy keys ('faktory')"},
    {"[retry]\nftl = 3\n", RB_EINVAL,
     "c.toml:2: key 'retry.ftl': must be a string such as \"10 5s 1m\", got integer"},
    {"[retry]\nfaktory = \"25\"\n", RB_EINVAL,
     "c.toml:2: key 'retry.faktory': must be an integer (Faktory's retry count), got string"},
    {"[retry.queues]\nq = 5\n", RB_EINVAL,
     "c.toml:2: key 'retry.queues.q': must be a table of policy keys ([retry.queues.q]), got "
     "integer"},
    {"[retry]\njobtypes = [1]\n", RB_EINVAL,
     "c.toml:2: key 'retry.jobtypes': must be a table of policy tables ([retry.jobtypes.NAME]), "
     "got array"},
};

Test(config, every_error_names_file_line_key_and_rule, .init = in_tmpdir)
{
    for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
        write_file("c.toml", error_cases[i].text);
        rb_config cfg;
        rb_err err = {0};
        int rc = rb_config_load(&cfg, "c.toml", NULL, &err);
        cr_expect_eq(rc, error_cases[i].code, "case %zu: code %d (%s)", i, rc, rb_err_msg(&err));
        /* a message ending in ": " checks a prefix (the rest is the duration parser's) */
        size_t n = strlen(error_cases[i].msg);
        if (error_cases[i].msg[n - 1] == ' ')
            cr_expect(!strncmp(err.msg, error_cases[i].msg, n), "case %zu: %s", i, err.msg);
        else
            cr_expect_str_eq(err.msg, error_cases[i].msg, "case %zu", i);
        cr_expect_str_eq(cfg.server.listen, "127.0.0.1:7419", "case %zu: defaults after failure", i);
        cr_expect_not(cfg.has_retry_default);
        rb_config_release(&cfg);
    }
}

Test(config, policy_engine_errors_point_at_the_key, .init = in_tmpdir)
{
    /* the dialect's own rule, reported at the line of the key it names */
    write_file("c.toml", "[retry.queues.q]\nbackoff = \"linear\"\n\nmax_attempts = \"x\"\n");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_lt(rb_config_load(&cfg, "c.toml", NULL, &err), 0);
    cr_assert(!strncmp(err.msg, "c.toml:4: key 'retry.queues.q.max_attempts': max_attempts: ", 59),
              "%s", err.msg);
    rb_config_release(&cfg);
    /* keys of two dialects */
    expect_load_error("[retry]\nmax_attempts = 3\nmaximum_attempts = 4\n", RB_EINVAL,
                      "c.toml:3: key 'retry.maximum_attempts': maximum_attempts: keys of two "
                      "dialects: 'max_attempts' is tasker, 'maximum_attempts' is temporal");
}

Test(config, ftl_and_faktory_errors_come_from_the_policy_engine, .init = in_tmpdir)
{
    write_file("c.toml", "[retry]\nftl = \"ten\"\n");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_lt(rb_config_load(&cfg, "c.toml", NULL, &err), 0);
    cr_assert(!strncmp(err.msg, "c.toml:2: key 'retry.ftl': ", 27), "%s", err.msg);
    cr_assert(strstr(err.msg, "ten"), "names the bad value: %s", err.msg);
    rb_config_release(&cfg);
}

Test(config, unreadable_files, .init = in_tmpdir)
{
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, "missing.toml", NULL, &err), RB_EIO);
    cr_assert_str_eq(err.msg, "cannot read 'missing.toml': No such file or directory");
    rb_config_release(&cfg);
    write_file("c.toml", "[server]\n");
    cr_assert_eq(rb_config_load(&cfg, "c.toml", "prod", &err), RB_EIO, "a named overlay must exist");
    cr_assert_str_eq(err.msg, "cannot read 'rebound.prod.toml': No such file or directory");
    rb_config_release(&cfg);
}

Test(config, overlay_merges_key_by_key, .init = in_tmpdir)
{
    cr_assert_eq(mkdir("etc", 0700), 0);
    write_file("etc/base.toml", "[server]\nlisten = \"0.0.0.0:1\"\nmax_connections = 5\n"
                                "[backoff]\ndefault_backoff_seconds = [1, 2, 3]\n"
                                "[retry.queues.q]\nmax_attempts = 3\nretryable = true\n"
                                "[retry.jobtypes.a]\nftl = \"10 5s 1m\"\n");
    write_file("etc/rebound.prod.toml", "[server]\nmax_connections = 500\n"
                                        "[backoff]\ndefault_backoff_seconds = [7]\n"
                                        "[retry.queues.q]\nmax_attempts = 9\n"
                                        "[retry.jobtypes.b]\nfaktory = 2\n");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, "etc/base.toml", "prod", &err), 0, "%s", rb_err_msg(&err));
    cr_assert_str_eq(cfg.overlay_path, "etc/rebound.prod.toml");
    cr_assert_str_eq(cfg.server.listen, "0.0.0.0:1");
    cr_assert_eq(cfg.server.max_connections, 500);
    cr_assert_eq(cfg.backoff.n_default_backoff, 1, "arrays are replaced whole");
    cr_assert_eq(cfg.backoff.default_backoff_ms[0], 7000);
    cr_assert_eq(cfg.key_from[rb_config_key_index("server.listen")], RB_CFG_FROM_BASE);
    cr_assert_eq(cfg.key_from[rb_config_key_index("server.max_connections")], RB_CFG_FROM_OVERLAY);
    cr_assert_eq(cfg.key_from[rb_config_key_index("server.http_listen")], RB_CFG_FROM_DEFAULT);
    cr_assert_eq(cfg.n_queues, 1);
    cr_assert_eq(cfg.queues[0].policy.max_attempts, 9);
    cr_assert_eq(cfg.queues[0].from, RB_CFG_FROM_BOTH);
    cr_assert_eq(cfg.n_jobtypes, 2);
    cr_assert_str_eq(cfg.jobtypes[0].name, "a");
    cr_assert_eq(cfg.jobtypes[0].from, RB_CFG_FROM_BASE);
    cr_assert_str_eq(cfg.jobtypes[1].name, "b");
    cr_assert_eq(cfg.jobtypes[1].from, RB_CFG_FROM_OVERLAY);
    cr_assert_eq(cfg.jobtypes[1].policy.max_attempts, 3);
    rb_config_release(&cfg);

    /* an error in the overlay names the overlay */
    write_file("etc/rebound.bad.toml", "[server]\nmax_connections = -1\n");
    cr_assert_lt(rb_config_load(&cfg, "etc/base.toml", "bad", &err), 0);
    cr_assert_str_eq(err.msg, "etc/rebound.bad.toml:2: key 'server.max_connections': must be an "
                              "integer from 1 to 1000000, got integer -1");
    rb_config_release(&cfg);
}

Test(config, env_name_and_overlay_path)
{
    unsetenv("REBOUND_ENV");
    cr_assert_null(rb_config_env_name(NULL));
    cr_assert_null(rb_config_env_name(""));
    cr_assert_str_eq(rb_config_env_name("dev"), "dev");
    setenv("REBOUND_ENV", "staging", 1);
    cr_assert_str_eq(rb_config_env_name(NULL), "staging");
    cr_assert_str_eq(rb_config_env_name("dev"), "dev", "the flag wins");
    setenv("REBOUND_ENV", "", 1);
    cr_assert_null(rb_config_env_name(NULL));
    char *p = rb_config_overlay_path("/etc/rebound/rebound.toml", "prod");
    cr_assert_str_eq(p, "/etc/rebound/rebound.prod.toml");
    free(p);
    p = rb_config_overlay_path("my.toml", "prod");
    cr_assert_str_eq(p, "rebound.prod.toml");
    free(p);
    p = rb_config_overlay_path(NULL, "test");
    cr_assert_str_eq(p, "rebound.test.toml");
    free(p);
}

Test(config, overlay_without_base_file, .init = in_tmpdir)
{
    write_file("rebound.test.toml", "[storage]\nurl = \"t.db\"\n");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, NULL, "test", &err), 0, "%s", rb_err_msg(&err));
    cr_assert_str_eq(cfg.storage.url, "t.db");
    cr_assert_eq(cfg.key_from[rb_config_key_index("storage.url")], RB_CFG_FROM_OVERLAY);
    rb_config_release(&cfg);
}

static const char *policy_file = "[retry]\nfaktory = 5\n"
                                 "[retry.queues.critical]\nmax_attempts = 3\n"
                                 "[retry.queues.default]\nmax_retries = 7\n"
                                 "[retry.jobtypes.send_email]\nftl = \"10 5s 1m\"\n";

Test(config, policy_precedence_jobtype_queue_default_builtin, .init = in_tmpdir)
{
    rb_config cfg;
    load_ok(&cfg, policy_file);
    rb_policy_layer l;
    const rb_policy *p = rb_config_policy_for(&cfg, "send_email", "critical", &l);
    cr_assert_eq(l, RB_LAYER_JOBTYPE);
    cr_assert_eq(p->dialect, RB_DIALECT_FTL);
    cr_assert_eq(p->max_attempts, 11);
    p = rb_config_policy_for(&cfg, "other", "critical", &l);
    cr_assert_eq(l, RB_LAYER_QUEUE);
    cr_assert_eq(p->dialect, RB_DIALECT_TASKER);
    p = rb_config_policy_for(&cfg, NULL, "low", &l);
    cr_assert_eq(l, RB_LAYER_DEFAULT);
    cr_assert_eq(p->max_attempts, 6);
    p = rb_config_policy_for(&cfg, NULL, NULL, &l);
    cr_assert_eq(l, RB_LAYER_DEFAULT);
    cr_assert_str_eq(rb_policy_layer_name(l), "default");
    rb_config_release(&cfg);

    load_ok(&cfg, "[retry.queues.q]\nfaktory = 1\n");
    cr_assert_not(cfg.has_retry_default, "sub-tables alone set no default");
    cr_assert_null(rb_config_policy_for(&cfg, "x", "other", &l));
    cr_assert_eq(l, RB_LAYER_BUILTIN);
    rb_config_release(&cfg);
    cr_assert_null(rb_config_policy_for(NULL, "x", "q", &l));
    cr_assert_eq(l, RB_LAYER_BUILTIN);
    cr_assert_str_eq(rb_policy_layer_name(RB_LAYER_BUILTIN), "builtin");
    cr_assert_str_eq(rb_policy_layer_name(RB_LAYER_JOB), "job");
    cr_assert_str_eq(rb_policy_layer_name(RB_LAYER_JOBTYPE), "jobtype");
    cr_assert_str_eq(rb_policy_layer_name(RB_LAYER_QUEUE), "queue");
}

static int64_t attempts_of(const rb_config *cfg, const char *job_json, rb_policy_layer *l)
{
    json_error_t jerr;
    json_t *job = json_loads(job_json, 0, &jerr);
    cr_assert_not_null(job, "%s", jerr.text);
    rb_policy p;
    rb_err err = {0};
    cr_assert_eq(rb_config_effective_policy(cfg, job, &p, l, &err), 0, "%s", rb_err_msg(&err));
    int64_t n = p.max_attempts;
    rb_policy_release(&p);
    json_decref(job);
    return n;
}

Test(config, effective_policy_follows_semantics_section_8, .init = in_tmpdir)
{
    rb_config cfg;
    load_ok(&cfg, policy_file);
    rb_policy_layer l;
    /* a stock client's retry 25 does not hide the configured schedule */
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"send_email\",\"retry\":25}", &l), 11);
    cr_assert_eq(l, RB_LAYER_JOBTYPE);
    /* ... but bounds it: retry 3 allows at most 3 retries */
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"send_email\",\"retry\":3}", &l), 4);
    /* the job's own retry_policy comes first, top-level or in custom */
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"send_email\",\"retry_policy\":\"faktory:2\"}", &l),
                 3);
    cr_assert_eq(l, RB_LAYER_JOB);
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"send_email\",\"custom\":{\"retry_policy\":"
                                   "{\"max_retries\":2}}}",
                             &l),
                 2);
    cr_assert_eq(l, RB_LAYER_JOB);
    /* no queue means the queue "default" */
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"x\"}", &l), 7);
    cr_assert_eq(l, RB_LAYER_QUEUE);
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"x\",\"queue\":\"critical\"}", &l), 3);
    cr_assert_eq(attempts_of(&cfg, "{\"jobtype\":\"x\",\"queue\":\"low\"}", &l), 6);
    cr_assert_eq(l, RB_LAYER_DEFAULT);

    /* retry 0: a failure discards the job */
    json_t *job = json_pack("{s:s, s:i}", "jobtype", "send_email", "retry", 0);
    rb_policy p;
    rb_err err = {0};
    cr_assert_eq(rb_config_effective_policy(&cfg, job, &p, &l, &err), 0);
    rb_rng rng;
    rb_rng_seed(&rng, 1);
    rb_failure f = {0};
    rb_decision d;
    rb_policy_decide(&p, 1, &f, 1000, 0, &rng, &d);
    cr_assert_eq(d.outcome, RB_OUTCOME_DISCARD);
    rb_policy_release(&p);
    json_decref(job);

    /* errors */
    job = json_pack("{s:s, s:s}", "jobtype", "x", "retry_policy", "nonsense");
    cr_assert_lt(rb_config_effective_policy(&cfg, job, &p, &l, &err), 0);
    cr_assert(!strncmp(err.msg, "retry_policy: ", 14), "%s", err.msg);
    json_decref(job);
    job = json_pack("{s:s, s:{s:s}}", "jobtype", "x", "custom", "retry_policy", "nonsense");
    cr_assert_lt(rb_config_effective_policy(&cfg, job, &p, &l, &err), 0);
    cr_assert(!strncmp(err.msg, "custom.retry_policy: ", 21), "%s", err.msg);
    json_decref(job);
    job = json_pack("{s:s, s:s}", "jobtype", "x", "retry", "5");
    cr_assert_eq(rb_config_effective_policy(&cfg, job, &p, &l, &err), RB_EINVAL);
    cr_assert_str_eq(err.msg, "retry: must be an integer, got a string");
    json_decref(job);
    /* -1 is the least retry there is (Faktory: dead on failure); below is an
     * error, as at PUSH, not a second way to say dead */
    job = json_pack("{s:s, s:i}", "jobtype", "x", "retry", -2);
    cr_assert_eq(rb_config_effective_policy(&cfg, job, &p, &l, &err), RB_EINVAL);
    cr_assert_str_eq(err.msg, "retry: must be -1, 0 or a positive count, got '-2'");
    json_decref(job);
    job = json_string("x");
    cr_assert_eq(rb_config_effective_policy(&cfg, job, &p, &l, &err), RB_EINVAL);
    json_decref(job);
    rb_config_release(&cfg);

    /* no configuration: Faktory's default, bounded by the job's retry */
    cr_assert_eq(attempts_of(NULL, "{\"jobtype\":\"x\"}", &l), 26);
    cr_assert_eq(l, RB_LAYER_BUILTIN);
    cr_assert_eq(attempts_of(NULL, "{\"jobtype\":\"x\",\"retry\":4}", &l), 5);
}

Test(config, tasker_policies_use_the_configured_backoff, .init = in_tmpdir)
{
    rb_config cfg;
    load_ok(&cfg, "[backoff]\ndefault_backoff_seconds = [3, 9]\nmax_backoff_seconds = 8\n"
                  "[retry]\nmax_attempts = 4\n");
    cr_assert(cfg.has_retry_default);
    cr_assert_eq(cfg.retry_default.dialect, RB_DIALECT_TASKER);
    cr_assert_eq(cfg.retry_default.backoff, RB_BACKOFF_LIST);
    cr_assert_eq(cfg.retry_default.n_delays, 2);
    cr_assert_eq(cfg.retry_default.delays_ms[0], 3000);
    cr_assert_eq(cfg.retry_default.delays_ms[1], 9000);
    cr_assert_eq(cfg.retry_default.max_interval_ms, 8000);
    rb_config_release(&cfg);
}

/* t has a line starting with head and ending with tail. */
static bool has_line(const char *t, const char *head, const char *tail)
{
    for (const char *l = t; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (!strncmp(l, head, strlen(head)) && n >= strlen(tail) &&
            !strncmp(l + n - strlen(tail), tail, strlen(tail)))
            return true;
        l = nl ? nl + 1 : NULL;
    }
    return false;
}

Test(config, check_output_says_where_values_came_from, .init = in_tmpdir)
{
    write_file("c.toml", "[server]\nmax_connections = 7\npassword = \"pw\"\n"
                         "[retry.jobtypes.a]\nftl = \"3 1s\"\n");
    write_file("rebound.x.toml", "[server]\nreserve_for = \"2h\"\n");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, "c.toml", "x", &err), 0, "%s", rb_err_msg(&err));
    rb_buf out = RB_BUF_INIT;
    rb_config_describe(&cfg, &out);
    const char *t = rb_buf_str(&out);
    cr_assert(strstr(t, "# effective configuration: base file c.toml, overlay rebound.x.toml\n"), "%s", t);
    cr_assert(strstr(t, "\n[server]\nlisten = \"127.0.0.1:7419\""), "%s", t);
    cr_assert(has_line(t, "max_connections = 7", "# base file"), "%s", t);
    cr_assert(has_line(t, "reserve_for = \"2h\"", "# overlay"), "%s", t);
    cr_assert(has_line(t, "max_job_bytes = 1048576", "# default"), "%s", t);
    cr_assert(strstr(t, "password = \"********\""), "the password is not shown: %s", t);
    cr_assert_null(strstr(t, "pw\""), "%s", t);
    cr_assert(strstr(t, "default_backoff_seconds = [1, 2, 4, 8, 16, 32]  # default\n"), "%s", t);
    cr_assert(strstr(t, "# [retry] not set: the built-in default applies  # default\n"), "%s", t);
    cr_assert(strstr(t, "\n[retry.jobtypes.a]  # base file\n#   dialect:     ftl\n"), "%s", t);
    rb_buf_release(&out);

    json_t *j = rb_config_to_json(&cfg);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "files"), "overlay")),
                     "rebound.x.toml");
    json_t *settings = json_object_get(j, "settings");
    cr_assert_eq(json_object_size(settings), rb_config_schema_len);
    json_t *mc = json_object_get(settings, "server.max_connections");
    cr_assert_eq(json_integer_value(json_object_get(mc, "value")), 7);
    cr_assert_str_eq(json_string_value(json_object_get(mc, "from")), "base file");
    json_t *rf = json_object_get(settings, "server.reserve_for");
    cr_assert_str_eq(json_string_value(json_object_get(rf, "value")), "2h");
    cr_assert_str_eq(json_string_value(json_object_get(rf, "from")), "overlay");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(settings, "server.password"),
                                                       "value")),
                     "********");
    json_t *retry = json_object_get(j, "retry");
    cr_assert(json_is_null(json_object_get(retry, "default")));
    json_t *a = json_object_get(json_object_get(retry, "jobtypes"), "a");
    cr_assert_str_eq(json_string_value(json_object_get(a, "from")), "base file");
    cr_assert(json_is_object(json_object_get(a, "policy")));
    json_decref(j);
    rb_config_release(&cfg);
    cr_assert_str_eq(rb_config_from_name(RB_CFG_FROM_BOTH), "base file + overlay");
}

Test(config, nearest_key_by_edit_distance)
{
    const char *c[] = {"listen", "http_listen", "password"};
    cr_assert_str_eq(rb_config_nearest("lisen", c, 3), "listen");
    cr_assert_str_eq(rb_config_nearest("http-listen", c, 3), "http_listen");
    cr_assert_str_eq(rb_config_nearest("passwd", c, 3), "password");
    cr_assert_null(rb_config_nearest("x", c, 0));
}

/* [[cron]] (issue 16 item 3): entries read in file order with defaults, and
 * every mistake named with its line. */
Test(config, cron_entries, .init = in_tmpdir)
{
    rb_config cfg;
    load_ok(&cfg, "[[cron]]\n"
                  "schedule = \"*/5 * * * *\"\n"
                  "timezone = \"Europe/Berlin\"\n"
                  "[cron.job]\n"
                  "type = \"FiveJob\"\n"
                  "queue = \"critical\"\n"
                  "args = [1, \"x\"]\n"
                  "retry = 3\n"
                  "[cron.job.custom]\n"
                  "foo = \"bar\"\n"
                  "\n"
                  "[[cron]]\n"
                  "name = \"nightly\"\n"
                  "schedule = \"@daily\"\n"
                  "missed = \"run_once\"\n"
                  "[cron.job]\n"
                  "jobtype = \"Nightly\"\n");
    cr_assert_eq(cfg.n_cron, 2);
    rb_cron_entry *a = &cfg.cron[0], *b = &cfg.cron[1];
    cr_expect_str_eq(a->name, "*/5 * * * * FiveJob");
    cr_expect_str_eq(a->timezone, "Europe/Berlin");
    cr_expect_eq(a->line, 1);
    cr_expect_not(a->run_once);
    char *j = json_dumps(a->job, JSON_SORT_KEYS | JSON_COMPACT);
    cr_expect_str_eq(j, "{\"args\":[1,\"x\"],\"custom\":{\"foo\":\"bar\"},\"jobtype\":\"FiveJob\","
                        "\"queue\":\"critical\",\"retry\":3}");
    free(j);
    cr_expect_str_eq(b->name, "nightly");
    cr_expect_str_eq(b->timezone, "UTC");
    cr_expect(b->run_once);
    cr_expect_eq(b->line, 12);
    j = json_dumps(b->job, JSON_SORT_KEYS | JSON_COMPACT);
    cr_expect_str_eq(j, "{\"args\":[],\"jobtype\":\"Nightly\",\"queue\":\"default\"}");
    free(j);
    rb_config_release(&cfg);
}

Test(config, cron_errors_point_at_the_line, .init = in_tmpdir)
{
    expect_load_error("[[cron]]\nschedule = \"61 * * * *\"\n[cron.job]\ntype = \"X\"\n", RB_EINVAL,
                      "c.toml:2: key 'cron[0].schedule': bad schedule \"61 * * * *\": column 1: "
                      "minute 61 out of range 0-59");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\ntype = \"X\"\n\n[[cron]]\n"
                      "schedule = \"0 0 * jan mon-\"\n[cron.job]\ntype = \"X\"\n",
                      RB_EINVAL,
                      "c.toml:7: key 'cron[1].schedule': bad schedule \"0 0 * jan mon-\": column "
                      "15: expected a day of week number or name, got ''");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\ntimezone = \"Mars/Base\"\n[cron.job]\n"
                      "type = \"X\"\n",
                      RB_EINVAL,
                      "c.toml:3: key 'cron[0].timezone': unknown time zone \"Mars/Base\" (an IANA "
                      "name from the system's tz database, such as \"Europe/Berlin\" or \"UTC\")");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\nmissed = \"maybe\"\n[cron.job]\n"
                      "type = \"X\"\n",
                      RB_EINVAL,
                      "c.toml:3: key 'cron[0].missed': must be \"skip\" or \"run_once\", got "
                      "\"maybe\"");
    expect_load_error("[[cron]]\nschedul = \"@daily\"\n", RB_EINVAL,
                      "c.toml:2: key 'cron[0].schedul': unknown key (did you mean 'schedule'?)");
    expect_load_error("[[cron]]\n[cron.job]\ntype = \"X\"\n", RB_EINVAL,
                      "c.toml:1: key 'cron[0].schedule': missing: every [[cron]] has a schedule "
                      "(\"*/5 * * * *\", \"@daily\")");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n", RB_EINVAL,
                      "c.toml:1: key 'cron[0].job': missing: every [[cron]] has a [cron.job] with "
                      "its type");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\nqueue = \"q\"\n", RB_EINVAL,
                      "c.toml:3: key 'cron[0].job.type': missing: every [cron.job] names its job "
                      "type (type = \"MyJob\")");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\ntype = \"X\"\nargs = 5\n",
                      RB_EINVAL, "c.toml:5: key 'cron[0].job.args': must be an array, got integer");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\ntype = \"X\"\nretry = -2\n",
                      RB_EINVAL,
                      "c.toml:5: key 'cron[0].job.retry': must be an integer from -1 to 1000000, "
                      "got integer");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\ntype = \"X\"\n"
                      "retry_policy = {bogus = 1}\n",
                      RB_EINVAL, "c.toml:5: key 'cron[0].job': retry_policy: bogus: unknown key");
    expect_load_error("[[cron]]\nschedule = \"@daily\"\n[cron.job]\ntype = \"X\"\n[[cron]]\n"
                      "schedule = \"@daily\"\n[cron.job]\ntype = \"X\"\n",
                      RB_EINVAL,
                      "c.toml:5: key 'cron[1].name': \"@daily X\" is the name of the entry at line "
                      "1 too (give each [[cron]] its own name)");
    expect_load_error("cron = 5\n", RB_EINVAL,
                      "c.toml:1: key 'cron': must be an array of tables ([[cron]]), got integer");
    expect_load_error("[cron]\nschedule = \"@daily\"\n", RB_EINVAL,
                      "c.toml:1: key 'cron': must be an array of tables ([[cron]]), got table");
    /* Distributed mode has cron too (the store decides which node fires). */
    rb_config cfg;
    load_ok(&cfg, "[storage]\nurl = \"postgres://localhost/rebound\"\n\n[[cron]]\n"
                  "schedule = \"@daily\"\n[cron.job]\ntype = \"X\"\n");
    cr_assert_eq(cfg.n_cron, 1);
    cr_assert_str_eq(cfg.cron[0].name, "@daily X");
    rb_config_release(&cfg);
}

Test(config, http_hosts_patterns_match_names)
{
    cr_assert(rb_config_host_matches("*", "anything.example"));
    cr_assert(rb_config_host_matches("rebound.example.com", "Rebound.Example.COM"));
    cr_assert_not(rb_config_host_matches("rebound.example.com", "rebound.example.com.evil"));
    cr_assert_not(rb_config_host_matches("rebound.example.com", "x.rebound.example.com"));
    cr_assert(rb_config_host_matches("*.corp.example", "a.corp.example"));
    cr_assert(rb_config_host_matches("*.corp.example", "b.a.corp.example"));
    cr_assert_not(rb_config_host_matches("*.corp.example", "corp.example"));
    cr_assert_not(rb_config_host_matches("*.corp.example", "evilcorp.example"));
    cr_assert(rb_config_host_matches("[::1]", "[::1]"));
}

/* metrics_public, the old name of metrics_auth, is still read: true opens
 * /metrics (metrics_auth false), false asks for the password where one is
 * set (auto); `config check` shows metrics_auth with the file it came from. */
Test(config, metrics_public_is_read_as_metrics_auth, .init = in_tmpdir)
{
    rb_config cfg;
    int k = rb_config_key_index("server.metrics_auth");
    load_ok(&cfg, "[server]\nmetrics_public = true\n");
    cr_assert_eq(cfg.server.metrics_auth, RB_CFG_OFF);
    cr_assert_eq(cfg.key_from[k], RB_CFG_FROM_BASE);
    rb_config_release(&cfg);
    load_ok(&cfg, "[server]\nmetrics_public = false\n");
    cr_assert_eq(cfg.server.metrics_auth, RB_CFG_AUTO);
    rb_config_release(&cfg);
    load_ok(&cfg, "[server]\npassword = \"x\"\nmetrics_auth = false\n");
    cr_assert_eq(cfg.server.metrics_auth, RB_CFG_OFF);
    rb_buf b = RB_BUF_INIT;
    rb_config_key_format(&cfg, &rb_config_schema[k], &b);
    cr_assert_str_eq(rb_buf_str(&b), "false");
    rb_buf_release(&b);
    rb_config_release(&cfg);
    load_ok(&cfg, "[server]\nmetrics_auth = \"auto\"\n");
    json_t *j = rb_config_key_json(&cfg, &rb_config_schema[k]);
    cr_assert_str_eq(json_string_value(j), "auto");
    json_decref(j);
    rb_config_release(&cfg);
}
