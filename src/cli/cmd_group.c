/* `rebound groups [QUEUE]` and `rebound group show|set|pause|resume QUEUE
 * GROUP` (docs/cli.md "groups, group"): GROUPS and GROUP over the work
 * protocol; the server checks every value (engine/group_cmd.h), so a
 * refusal is bad input (exit 2) and only an unreachable server or a
 * storage error is a runtime failure (exit 1). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"

static const char groups_usage[] =
    "usage: rebound groups [QUEUE] [--state all|active|held|paused] [--offset N] [--limit N]\n"
    "                      [--url URL] [--json]\n"
    "  without QUEUE: each queue's groups counted (active, held, paused) and its limits\n"
    "  with QUEUE: its groups, by name: GROUP  READY  WORKING  LIMITS  STATE\n"
    "exit: 0 done, 1 server unreachable or failed, 2 bad usage or refused\n";

static const char group_usage[] =
    "usage: rebound group show QUEUE GROUP\n"
    "       rebound group set QUEUE GROUP [--concurrency N] [--rate N --period D] [--burst N]\n"
    "                                     [--clear]\n"
    "       rebound group pause QUEUE GROUP --until TIME|SECONDS [--reason TEXT]\n"
    "       rebound group resume QUEUE GROUP\n"
    "       (each takes --url URL and --json)\n"
    "  set replaces the group's override with the limits given (0: no limit); --clear\n"
    "  removes it (the configured [groups] limits apply again)\n"
    "exit: 0 done, 1 server unreachable or failed, 2 bad usage or refused\n";

/* A call's failure: the server's refusal is bad input, but a storage
 * error. */
static int call_error(const char *what, int rc, const rb_err *err)
{
    bool store = rc == RB_EPROTO && !strncmp(rb_err_msg(err), "storage error", 13);
    return cli_call_error(what, rc, err, !store);
}

/* line sent; its bulk JSON into *out (status replies: NULL). */
static int call(rb_client *c, const char *what, const char *line, json_t **out)
{
    rb_reply rep;
    rb_err err = {0};
    *out = NULL;
    int rc = rb_client_call(c, line, &rep, &err);
    if (rc)
        return call_error(what, rc, &err);
    if (rep.type == RB_REPLY_BULK && !(*out = json_loadb(rep.str, rep.len, 0, NULL)))
        return cli_error(CLI_FAIL, "%s: the server's reply is not JSON", what);
    return CLI_OK;
}

/* o's member at "a.b" (one dot at most), or NULL. */
static const json_t *path(const json_t *o, const char *p)
{
    const char *dot = strchr(p, '.');
    if (!dot)
        return json_object_get(o, p);
    char head[32];
    snprintf(head, sizeof head, "%.*s", (int)(dot - p), p);
    return json_object_get(json_object_get(o, head), dot + 1);
}

static const char *text_or(const json_t *v, const char *dflt)
{
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* "c=2 r=100/60s b=10", "-" without a limit. */
static void limits_text(const json_t *l, char *out, size_t n)
{
    long long c = json_integer_value(json_object_get(l, "concurrency"));
    long long r = json_integer_value(json_object_get(l, "rate"));
    int k = 0;
    out[0] = '\0';
    if (c)
        k += snprintf(out + k, n - (size_t)k, "c=%lld", c);
    if (r && k < (int)n)
        k += snprintf(out + k, n - (size_t)k, "%sr=%lld/%gs", k ? " " : "", r,
                      json_number_value(json_object_get(l, "period")));
    long long b = json_integer_value(json_object_get(l, "burst"));
    if (r && b && k < (int)n)
        snprintf(out + k, n - (size_t)k, " b=%lld", b);
    if (!out[0])
        snprintf(out, n, "-");
}

/* "held: concurrency", "paused until T (reason)", "active", "idle". */
static void state_text(const json_t *g, char *out, size_t n)
{
    const char *held = text_or(json_object_get(g, "held"), NULL);
    const char *reason = text_or(json_object_get(g, "reason"), NULL);
    if (held && !strcmp(held, "paused"))
        snprintf(out, n, "paused until %s%s%s%s",
                 text_or(json_object_get(g, "paused_until"), "?"), reason ? " (" : "",
                 reason ? reason : "", reason ? ")" : "");
    else if (held && !strcmp(held, "rate"))
        snprintf(out, n, "held: rate until %s", text_or(json_object_get(g, "held_until"), "?"));
    else if (held)
        snprintf(out, n, "held: %s", held);
    else
        snprintf(out, n, "%s",
                 json_integer_value(json_object_get(g, "ready")) ||
                         json_integer_value(json_object_get(g, "working"))
                     ? "active"
                     : "idle");
}

static void print_group_row(const json_t *g)
{
    char lim[80], st[300], work[48];
    limits_text(json_object_get(g, "limits"), lim, sizeof lim);
    state_text(g, st, sizeof st);
    long long conc = json_integer_value(path(g, "limits.concurrency"));
    if (conc)
        snprintf(work, sizeof work, "%lld/%lld",
                 (long long)json_integer_value(json_object_get(g, "working")), conc);
    else
        snprintf(work, sizeof work, "%lld", (long long)json_integer_value(json_object_get(g, "working")));
    printf("%-24s %7lld  %-9s %-22s %s\n", text_or(json_object_get(g, "group"), "?"),
           (long long)json_integer_value(json_object_get(g, "ready")), work, lim, st);
}

static void print_counts(const json_t *q)
{
    char lim[80];
    limits_text(json_object_get(q, "limits"), lim, sizeof lim);
    printf("%-24s %6lld %6lld %6lld %6lld %6lld  %s\n", text_or(json_object_get(q, "queue"), "?"),
           (long long)json_integer_value(json_object_get(q, "total")),
           (long long)json_integer_value(json_object_get(q, "active")),
           (long long)json_integer_value(path(q, "held.concurrency")),
           (long long)json_integer_value(path(q, "held.rate")),
           (long long)json_integer_value(json_object_get(q, "paused")), lim);
}

enum { OPT_STATE = 0x200, OPT_OFFSET, OPT_LIMIT, OPT_CONC, OPT_RATE, OPT_PERIOD, OPT_BURST,
       OPT_CLEAR, OPT_UNTIL, OPT_REASON };

int cmd_groups(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_OPTIONS,
        {"state", required_argument, NULL, OPT_STATE},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {NULL, 0, NULL, 0},
    };
    cli_common co = {0};
    json_t *arg = json_object();
    int opt, code;
    cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(&co, opt, optarg))
            continue;
        char *end;
        long long n;
        switch (opt) {
        case 'h':
        case CLI_OPT_HELP: fputs(groups_usage, stdout); json_decref(arg); return CLI_OK;
        case OPT_STATE: json_object_set_new(arg, "state", json_string(optarg)); break;
        case OPT_OFFSET:
        case OPT_LIMIT:
            n = strtoll(optarg, &end, 10);
            if (!*optarg || *end) {
                json_decref(arg);
                return cli_error(CLI_USAGE, "groups: --%s '%s' must be an integer",
                                 opt == OPT_LIMIT ? "limit" : "offset", optarg);
            }
            json_object_set_new(arg, opt == OPT_LIMIT ? "limit" : "offset", json_integer(n));
            break;
        default: json_decref(arg); return cli_bad_option("groups", opt, argv);
        }
    }
    if (optind < argc)
        json_object_set_new(arg, "queue", json_string(argv[optind++]));
    if (optind < argc) {
        json_decref(arg);
        return cli_error(CLI_USAGE, "groups: unexpected argument '%s'", argv[optind]);
    }
    rb_client *c;
    if ((code = cli_connect(&co, &c)) != CLI_OK) {
        json_decref(arg);
        return code;
    }
    char *text = json_dumps(arg, JSON_COMPACT);
    rb_buf line = RB_BUF_INIT;
    rb_buf_printf(&line, "GROUPS %s", text);
    json_t *out;
    code = call(c, "groups", rb_buf_str(&line), &out);
    if (code == CLI_OK && co.json) {
        cli_print_json(out);
    } else if (code == CLI_OK && json_object_get(out, "groups")) {
        printf("%-24s %7s  %-9s %-22s %s\n", "GROUP", "READY", "WORKING", "LIMITS", "STATE");
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(out, "groups"), i, g) print_group_row(g);
        printf("(%lld of %lld shown)\n", (long long)json_array_size(json_object_get(out, "groups")),
               (long long)json_integer_value(json_object_get(out, "total")));
    } else if (code == CLI_OK) {
        printf("%-24s %6s %6s %6s %6s %6s  %s\n", "QUEUE", "GROUPS", "ACTIVE", "CONC", "RATE",
               "PAUSED", "LIMITS");
        size_t i;
        json_t *q;
        json_array_foreach(json_object_get(out, "queues"), i, q) print_counts(q);
    }
    json_decref(out);
    free(text);
    rb_buf_release(&line);
    json_decref(arg);
    rb_client_close(c);
    return code;
}

/* A non-negative integer option's value into o[key]. */
static int int_opt(json_t *o, const char *key, const char *v)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end)
        return cli_error(CLI_USAGE, "group set: --%s '%s' must be an integer", key, v);
    json_object_set_new(o, key, json_integer(n));
    return CLI_OK;
}

int cmd_group(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_OPTIONS,
        {"concurrency", required_argument, NULL, OPT_CONC},
        {"rate", required_argument, NULL, OPT_RATE},
        {"period", required_argument, NULL, OPT_PERIOD},
        {"burst", required_argument, NULL, OPT_BURST},
        {"clear", no_argument, NULL, OPT_CLEAR},
        {"until", required_argument, NULL, OPT_UNTIL},
        {"reason", required_argument, NULL, OPT_REASON},
        {NULL, 0, NULL, 0},
    };
    cli_common co = {0};
    json_t *limits = json_object();
    bool clear = false, has_limits = false;
    const char *until = NULL, *reason = NULL;
    int opt, code = CLI_OK;
    cli_getopt_reset();
    while (code == CLI_OK && (opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(&co, opt, optarg))
            continue;
        switch (opt) {
        case 'h':
        case CLI_OPT_HELP: fputs(group_usage, stdout); json_decref(limits); return CLI_OK;
        case OPT_CONC: code = int_opt(limits, "concurrency", optarg); has_limits = true; break;
        case OPT_RATE: code = int_opt(limits, "rate", optarg); has_limits = true; break;
        case OPT_BURST: code = int_opt(limits, "burst", optarg); has_limits = true; break;
        case OPT_PERIOD:
            json_object_set_new(limits, "period", json_string(optarg));
            has_limits = true;
            break;
        case OPT_CLEAR: clear = true; break;
        case OPT_UNTIL: until = optarg; break;
        case OPT_REASON: reason = optarg; break;
        default: code = cli_bad_option("group", opt, argv); break;
        }
    }
    const char *verb = optind < argc ? argv[optind] : NULL;
    const char *queue = optind + 1 < argc ? argv[optind + 1] : NULL;
    const char *group = optind + 2 < argc ? argv[optind + 2] : NULL;
    static const char *const verbs[] = {"show", "set", "pause", "resume"};
    int v = -1;
    for (int i = 0; verb && i < 4; i++)
        if (!strcmp(verb, verbs[i]))
            v = i;
    if (code != CLI_OK)
        ;
    else if (v < 0)
        code = cli_error(CLI_USAGE, verb ? "group: unknown action '%s' (want show, set, pause or "
                                           "resume)"
                                         : "group: missing show, set, pause or resume%s",
                         verb ? verb : "");
    else if (!queue || !group || optind + 3 < argc)
        code = cli_error(CLI_USAGE, "group %s: want QUEUE GROUP (see rebound group --help)", verb);
    else if (v == 1 && clear == has_limits)
        code = cli_error(CLI_USAGE, "group set: give limits (--concurrency, --rate --period, "
                                    "--burst) or --clear");
    else if (v == 2 && !until)
        code = cli_error(CLI_USAGE, "group pause: --until TIME|SECONDS is required");
    else if ((v != 1 && (clear || has_limits)) || (v != 2 && (until || reason)))
        code = cli_error(CLI_USAGE, "group %s: an option of another action was given", verb);
    else if (reason && strpbrk(reason, "\r\n"))
        code = cli_error(CLI_USAGE, "group pause: --reason must be one line");
    rb_client *c = NULL;
    if (code != CLI_OK || (code = cli_connect(&co, &c)) != CLI_OK) {
        json_decref(limits);
        return code;
    }
    rb_buf line = RB_BUF_INIT;
    char *text = json_dumps(limits, JSON_COMPACT);
    switch (v) {
    case 0: rb_buf_printf(&line, "GROUP GET %s %s", queue, group); break;
    case 1: rb_buf_printf(&line, "GROUP SET %s %s %s", queue, group, text); break;
    case 2:
        rb_buf_printf(&line, "GROUP PAUSE %s %s %s%s%s", queue, group, until, reason ? " " : "",
                      reason ? reason : "");
        break;
    default: rb_buf_printf(&line, "GROUP RESUME %s %s", queue, group); break;
    }
    char what[32];
    snprintf(what, sizeof what, "group %s", verb);
    json_t *out = NULL;
    code = call(c, what, rb_buf_str(&line), &out);
    if (code == CLI_OK && v != 0)
        out = json_pack("{s:s, s:s, s:s}", "action", verb, "queue", queue, "group", group);
    if (code == CLI_OK && co.json) {
        cli_print_json(out);
    } else if (code == CLI_OK && v == 0) {
        printf("%-24s %7s  %-9s %-22s %s\n", "GROUP", "READY", "WORKING", "LIMITS", "STATE");
        print_group_row(out);
        json_t *over = json_object_get(out, "override");
        char *o = json_is_object(over) ? json_dumps(over, JSON_COMPACT) : NULL;
        printf("override: %s\n", o ? o : "none");
        free(o);
        if (json_is_string(json_object_get(out, "next_start_at")))
            printf("next start: %s\n", json_string_value(json_object_get(out, "next_start_at")));
    } else if (code == CLI_OK) {
        static const char *const past[] = {"", "set", "paused", "resumed"};
        printf("group %s %s %s%s\n", queue, group, past[v], v == 1 && clear ? " (override cleared)" : "");
    }
    json_decref(out);
    free(text);
    rb_buf_release(&line);
    json_decref(limits);
    rb_client_close(c);
    return code;
}
