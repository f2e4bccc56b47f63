/* Helpers shared by the client subcommands, and `rebound info`. */
#include "cli/cmd_client.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/timeutil.h"
#include "policy/duration.h"

int cli_common_opt(cli_common *co, int opt, const char *arg)
{
    switch (opt) {
    case CLI_OPT_URL: co->url = arg; return 1;
    case CLI_OPT_JSON: co->json = 1; return 1;
    default: return 0;
    }
}

void cli_getopt_reset(void)
{
    optind = 0; /* GNU: 0 reinitialises the scanner */
    opterr = 0; /* we report bad options ourselves */
}

int cli_bad_option(const char *cmd, int opt, char **argv)
{
    const char *word = argv[optind - 1];
    if (opt == ':')
        return cli_error(CLI_USAGE, "%s: option '%s' needs a value", cmd, word);
    return cli_error(CLI_USAGE, "%s: unknown option '%s' (see 'rebound %s --help')", cmd, word,
                     cmd);
}

int cli_parse_common_only(const char *cmd, const char *usage, int argc, char **argv,
                          cli_common *co)
{
    static const struct option longopts[] = {CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int opt;
    cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(co, opt, optarg))
            continue;
        if (opt == 'h' || opt == CLI_OPT_HELP) {
            fputs(usage, stdout);
            return CLI_OK;
        }
        return cli_bad_option(cmd, opt, argv);
    }
    return -1;
}

int cli_connect(const cli_common *co, rb_client **out)
{
    rb_err err = {0};
    rb_client_opts opts = {.timeout_ms = co->timeout_ms};
    *out = rb_client_connect(co->url, &opts, &err);
    if (*out)
        return CLI_OK;
    const char *url = co->url ? co->url : rb_client_default_url();
    if (err.code == RB_EINVAL)
        return cli_error(CLI_USAGE, "bad url '%s': %s", url, rb_err_msg(&err));
    if (err.code == RB_ECONN || err.code == RB_ETIMEDOUT)
        return cli_error(CLI_FAIL, "%s (is the server running? see --url, FAKTORY_URL)",
                         rb_err_msg(&err));
    return cli_error(CLI_FAIL, "%s", rb_err_msg(&err));
}

int cli_call_error(const char *what, int rc, const rb_err *err, int bad_input_is_usage)
{
    if (rc == RB_EPROTO && bad_input_is_usage)
        return cli_error(CLI_USAGE, "%s: rejected by the server: %s", what, rb_err_msg(err));
    if (rc == RB_EPROTO)
        return cli_error(CLI_FAIL, "%s: server error: %s", what, rb_err_msg(err));
    return cli_error(rc == RB_EINVAL ? CLI_USAGE : CLI_FAIL, "%s: %s", what, rb_err_msg(err));
}

int64_t cli_json_time_ms(const json_t *v)
{
    int64_t ms = 0;
    if (json_is_string(v)) {
        if (rb_time_parse_rfc3339(json_string_value(v), &ms) != 0)
            return 0;
        return ms;
    }
    if (json_is_number(v)) {
        double d = json_number_value(v);
        /* Values beyond year 5138 in seconds are taken as milliseconds. */
        return d > 1e11 ? (int64_t)d : (int64_t)(d * 1000.0);
    }
    return 0;
}

char *cli_format_when(int64_t ms, char *out, size_t n)
{
    if (ms == 0) {
        snprintf(out, n, "-");
        return out;
    }
    char t[RB_TIME_STRLEN], d[RB_DURATION_STRLEN];
    rb_time_format(ms, t);
    /* "2026-11-21T10:00:00.123Z" -> "2026-11-21 10:00:00Z" */
    char *dot = strchr(t, '.');
    if (dot)
        strcpy(dot, "Z");
    char *tee = strchr(t, 'T');
    if (tee)
        *tee = ' ';
    int64_t delta = ms - rb_now_ms();
    int64_t abs_s = (delta < 0 ? -delta : delta) / 1000;
    rb_duration_format(abs_s * 1000, d, sizeof d);
    if (abs_s == 0)
        snprintf(out, n, "%s (now)", t);
    else
        snprintf(out, n, "%s (%s%s%s)", t, delta > 0 ? "in " : "", d, delta > 0 ? "" : " ago");
    return out;
}

char *cli_ellipsize(const char *s, char *out, size_t n)
{
    size_t len = strlen(s);
    if (len < n) {
        memcpy(out, s, len + 1);
    } else {
        memcpy(out, s, n - 4);
        strcpy(out + n - 4, "...");
    }
    return out;
}

/* ---- rebound info ------------------------------------------------------ */

static const char info_usage[] =
    "usage: rebound info [--url URL] [--json]\n"
    "Shows the server's INFO: its version and the protocol's, queue sizes (and\n"
    "which are paused), scheduled/retry/dead/working counts, totals and\n"
    "connections. --json prints the server's JSON unchanged.\n";

static json_int_t size_of(const json_t *tasks, const char *name)
{
    return json_integer_value(json_object_get(json_object_get(tasks, name), "size"));
}

/* Whether name is in the array names. */
static bool listed(const json_t *names, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), name))
            return true;
    return false;
}

static void print_info(const json_t *info, const char *addr)
{
    const json_t *fk = json_object_get(info, "faktory");
    const json_t *srv = json_object_get(info, "server");
    const json_t *rb = json_object_get(info, "rebound");
    const json_t *tasks = json_object_get(fk, "tasks");
    const json_t *queues = json_object_get(fk, "queues");
    const json_t *paused = json_object_get(rb, "paused_queues");
    char up[RB_DURATION_STRLEN];
    rb_duration_format((int64_t)json_integer_value(json_object_get(srv, "uptime")) * 1000, up,
                       sizeof up);
    const char *desc = json_string_value(json_object_get(srv, "description"));
    /* faktory_version is the protocol's; a stock Faktory server has no
     * rebound.version, its own version being that one */
    const char *proto = json_string_value(json_object_get(srv, "faktory_version"));
    const char *ver = json_string_value(json_object_get(rb, "version"));
    if (!ver)
        ver = proto;
    printf("server     %s %s at %s, up %s, %lld connection(s)\n", desc ? desc : "?",
           ver ? ver : "?", addr, up,
           (long long)json_integer_value(json_object_get(srv, "connections")));
    if (proto)
        printf("protocol   Faktory %s\n", proto);
    json_int_t enqueued = 0;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)queues, name, v)
        enqueued += json_integer_value(v);
    printf("jobs       %lld enqueued, %lld scheduled, %lld retries, %lld dead, %lld working",
           (long long)enqueued, (long long)size_of(tasks, "Scheduled"),
           (long long)size_of(tasks, "Retries"), (long long)size_of(tasks, "Dead"),
           (long long)size_of(tasks, "Busy"));
    /* workflows' held jobs (Rebound's own; a stock Faktory server has none) */
    if (json_is_integer(json_object_get(rb, "waiting")))
        printf(", %lld waiting, %lld blocked",
               (long long)json_integer_value(json_object_get(rb, "waiting")),
               (long long)json_integer_value(json_object_get(rb, "blocked")));
    printf("\n");
    printf("workers    %lld\n", (long long)size_of(tasks, "Workers"));
    /* total_enqueued is Faktory's current count, not a running total. */
    printf("totals     %lld processed, %lld failures\n",
           (long long)json_integer_value(json_object_get(fk, "total_processed")),
           (long long)json_integer_value(json_object_get(fk, "total_failures")));
    if (json_object_size(queues) == 0) {
        printf("queues     (none)\n");
        return;
    }
    printf("queues\n");
    int width = 5, digits = 1;
    json_object_foreach((json_t *)queues, name, v) {
        if ((int)strlen(name) > width)
            width = (int)strlen(name);
        int d = snprintf(NULL, 0, "%lld", (long long)json_integer_value(v));
        if (d > digits)
            digits = d;
    }
    json_object_foreach((json_t *)queues, name, v)
        printf("  %-*s  %*lld%s\n", width, name, digits, (long long)json_integer_value(v),
               listed(paused, name) ? "  paused" : "");
}

int cmd_info(int argc, char **argv)
{
    cli_common co = {0};
    int prc = cli_parse_common_only("info", info_usage, argc, argv, &co);
    if (prc >= 0)
        return prc;
    if (optind < argc)
        return cli_error(CLI_USAGE, "info: unexpected argument '%s'", argv[optind]);
    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    rb_err err = {0};
    json_t *info = NULL;
    int rc = rb_client_info(c, &info, &err);
    if (rc) {
        rb_client_close(c);
        return cli_call_error("info", rc, &err, 0);
    }
    if (co.json)
        cli_print_json(info);
    else
        print_info(info, rb_client_addr(c));
    json_decref(info);
    rb_client_close(c);
    return CLI_OK;
}

int cli_show_one(const char *cmd, const char *usage, const char *id_name, int argc, char **argv,
                 int (*fetch)(rb_client *c, const char *id, json_t **out, rb_err *err),
                 void (*print)(const json_t *v), const char *missing)
{
    cli_common co = {0};
    int prc = cli_parse_common_only(cmd, usage, argc, argv, &co);
    if (prc >= 0)
        return prc;
    if (optind >= argc)
        return cli_error(CLI_USAGE, "%s: missing %s (see 'rebound %s --help')", cmd, id_name, cmd);
    if (argc - optind > 1)
        return cli_error(CLI_USAGE, "%s: unexpected argument '%s'", cmd, argv[optind + 1]);
    const char *id = argv[optind];
    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    json_t *res = NULL;
    rb_err err = {0};
    int rc = fetch(c, id, &res, &err);
    rb_client_close(c);
    if (rc)
        return cli_call_error(cmd, rc, &err, 0);
    if (!res)
        return cli_error(CLI_FAIL, missing, id);
    if (co.json)
        cli_print_json(res);
    else
        print(res);
    json_decref(res);
    return CLI_OK;
}
