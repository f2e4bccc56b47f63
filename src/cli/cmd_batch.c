/* `rebound batch BID` (one batch: its counts, callbacks, children and
 * stored members) and `rebound batches` (the open batches, or every stored
 * one), both read with BATCHES. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"

static const char batch_usage[] =
    "usage: rebound batch BID [--url URL] [--json]\n"
    "Shows a batch: its counts (total, pending, failed), its callbacks with\n"
    "their states (- not yet, enqueued, done), its parent and child batches,\n"
    "and each member job still stored with its state and attempts (members\n"
    "that succeeded are deleted). --json prints the server's answer.\n"
    "exit: 0 shown, 1 not found or server unreachable, 2 bad usage\n";

static const char batches_usage[] =
    "usage: rebound batches [--all] [--limit N] [--offset N] [--url URL] [--json]\n"
    "Lists the open batches, newest first; --all also the finished ones still\n"
    "kept ([workflows] batch_retention). --limit defaults to 50 (at most 1000).\n"
    "--json prints {\"state\", \"total\", \"offset\", \"limit\", \"batches\"}.\n"
    "exit: 0 listed, 1 server unreachable or failed, 2 bad usage\n";

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : dflt;
}

static long long int_of(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* A callback's st as words. */
static const char *st_name(const char *st)
{
    return !st || !*st ? "-" : !strcmp(st, "1") ? "enqueued" : !strcmp(st, "2") ? "done" : st;
}

static void print_batch(const json_t *b)
{
    long long total = int_of(b, "total"), pending = int_of(b, "pending");
    printf("batch %s%s\n", str_or(b, "bid", "?"),
           json_is_true(json_object_get(b, "committed")) ? "" : " (not committed)");
    printf("description  %s\n", str_or(b, "description", "-"));
    printf("created      %s\n", str_or(b, "created_at", "-"));
    printf("finished     %s\n", str_or(b, "finished_at", "-"));
    printf("parent       %s\n", str_or(b, "parent_bid", "-"));
    printf("counts       total %lld, done %lld, pending %lld, failed %lld\n", total,
           total - pending, pending, int_of(b, "failed"));
    const json_t *kids = json_object_get(b, "children");
    printf("children     ");
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)kids, i, x)
        printf("%s%s", i ? ", " : "", json_string_value(x));
    printf("%s\n", json_array_size(kids) ? "" : "-");
    printf("callbacks    ");
    json_array_foreach(json_object_get(b, "callbacks"), i, x)
        printf("%s%s %s%s%s", i ? ", " : "", str_or(x, "kind", "?"),
               st_name(json_string_value(json_object_get(x, "st"))),
               json_string_value(json_object_get(x, "jid")) ? " " : "",
               str_or(x, "jid", ""));
    printf("%s\n", json_array_size(json_object_get(b, "callbacks")) ? "" : "-");
    const json_t *ms = json_object_get(b, "members");
    printf("\n%-24s  %-9s  %-16s  %-10s  %5s\n", "MEMBER", "STATE", "JOBTYPE", "QUEUE", "TRIES");
    json_array_foreach((json_t *)ms, i, x)
        printf("%-24s  %-9s  %-16s  %-10s  %5lld\n", str_or(x, "jid", "?"),
               str_or(x, "state", "?"), str_or(x, "jobtype", "-"), str_or(x, "queue", "-"),
               int_of(x, "attempts"));
    if (!json_array_size(ms))
        printf("(no member stored)\n");
    if (json_is_true(json_object_get(b, "truncated")))
        printf("showing the first %lld members\n", int_of(b, "max_members"));
}

int cmd_batch(int argc, char **argv)
{
    return cli_show_one("batch", batch_usage, "BID", argc, argv, rb_client_batch_view,
                        print_batch, "batch '%s' not found (finished batches expire)");
}

enum { OPT_ALL = 0x400, OPT_LIMIT, OPT_OFFSET };

int cmd_batches(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_OPTIONS,
        {"all", no_argument, NULL, OPT_ALL},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {NULL, 0, NULL, 0},
    };
    cli_common co = {0};
    bool all = false;
    long long limit = 0, offset = 0;
    int opt;
    cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(&co, opt, optarg))
            continue;
        char *end;
        switch (opt) {
        case 'h':
        case CLI_OPT_HELP: fputs(batches_usage, stdout); return CLI_OK;
        case OPT_ALL: all = true; break;
        case OPT_LIMIT:
            limit = strtoll(optarg, &end, 10);
            if (!*optarg || *end || limit < 1 || limit > 1000)
                return cli_error(CLI_USAGE, "batches: --limit '%s' must be 1-1000", optarg);
            break;
        case OPT_OFFSET:
            offset = strtoll(optarg, &end, 10);
            if (!*optarg || *end || offset < 0)
                return cli_error(CLI_USAGE, "batches: --offset '%s' must be >= 0", optarg);
            break;
        default: return cli_bad_option("batches", opt, argv);
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "batches: unexpected argument '%s'", argv[optind]);
    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    json_t *res = NULL;
    rb_err err = {0};
    int rc = rb_client_batches(c, all, offset, limit, &res, &err);
    rb_client_close(c);
    if (rc)
        return cli_call_error("batches", rc, &err, 0);
    if (co.json) {
        cli_print_json(res);
        json_decref(res);
        return CLI_OK;
    }
    const json_t *list = json_object_get(res, "batches");
    if (!json_array_size(list)) {
        printf("no %sbatches\n", all ? "" : "open ");
    } else {
        printf("%-18s  %-8s  %6s  %6s  %6s  %-8s  %-8s  %-18s  %s\n", "BID", "STATE", "TOTAL",
               "DONE", "FAILED", "COMPLETE", "SUCCESS", "PARENT", "DESCRIPTION");
        size_t i;
        json_t *b;
        json_array_foreach((json_t *)list, i, b) {
            long long total = int_of(b, "total");
            const char *state = json_string_value(json_object_get(b, "finished_at"))
                                    ? "finished"
                                    : json_is_true(json_object_get(b, "committed")) ? "open"
                                                                                     : "new";
            printf("%-18s  %-8s  %6lld  %6lld  %6lld  %-8s  %-8s  %-18s  %s\n",
                   str_or(b, "bid", "?"), state, total, total - int_of(b, "pending"),
                   int_of(b, "failed"),
                   st_name(json_string_value(json_object_get(b, "complete_st"))),
                   st_name(json_string_value(json_object_get(b, "success_st"))),
                   str_or(b, "parent_bid", "-"), str_or(b, "description", ""));
        }
        printf("%zu shown of %lld\n", json_array_size(list), int_of(res, "total"));
    }
    json_decref(res);
    return CLI_OK;
}
