/* `rebound queue pause|resume|remove|latency Q...`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"

static const char queue_usage[] =
    "usage: rebound queue pause|resume|remove|latency Q... [--url URL] [--json]\n"
    "  pause    FETCH skips the queues until resumed ('*' = every known queue)\n"
    "  resume   undoes pause ('*' too)\n"
    "  remove   deletes the queues and every job enqueued in them ('*' too)\n"
    "  latency  seconds the oldest job of each queue has waited (names only)\n"
    "exit: 0 done, 1 server unreachable or failed, 2 bad usage\n";

int cmd_queue(int argc, char **argv)
{
    cli_common co = {0};
    int prc = cli_parse_common_only("queue", queue_usage, argc, argv, &co);
    if (prc >= 0)
        return prc;
    if (optind >= argc)
        return cli_error(CLI_USAGE, "queue: missing pause, resume, remove or latency");
    const char *verb = argv[optind++];
    int latency = !strcmp(verb, "latency");
    if (!latency && strcmp(verb, "pause") && strcmp(verb, "resume") && strcmp(verb, "remove"))
        return cli_error(CLI_USAGE,
                         "queue: unknown action '%s' (want pause, resume, remove or latency)",
                         verb);
    if (optind >= argc)
        return cli_error(CLI_USAGE, "queue %s: missing queue name", verb);
    const char *const *names = (const char *const *)argv + optind;
    size_t n = (size_t)(argc - optind);
    for (size_t i = 0; i < n; i++)
        if (!*names[i] || strpbrk(names[i], " \t\r\n"))
            return cli_error(CLI_USAGE, "queue %s: bad queue name '%s'", verb, names[i]);

    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    rb_err err = {0};
    int rc, code = CLI_OK;
    if (latency) {
        json_t *lat = NULL;
        rc = rb_client_queue_latency(c, names, n, &lat, &err);
        if (rc) {
            code = cli_call_error("queue latency", rc, &err, 0);
        } else if (co.json) {
            cli_print_json(lat);
        } else {
            for (size_t i = 0; i < n; i++) {
                json_t *v = json_object_get(lat, names[i]);
                printf("%-20s %.3fs\n", names[i], json_is_number(v) ? json_number_value(v) : 0.0);
            }
        }
        json_decref(lat);
    } else {
        rc = rb_client_queue(c, verb, names, n, &err);
        if (rc) {
            char what[32];
            snprintf(what, sizeof what, "queue %s", verb);
            code = cli_call_error(what, rc, &err, 0);
        } else if (co.json) {
            json_t *j = json_pack("{s:s, s:[]}", "action", verb, "queues");
            for (size_t i = 0; i < n; i++)
                json_array_append_new(json_object_get(j, "queues"), json_string(names[i]));
            cli_print_json(j);
            json_decref(j);
        } else {
            const char *past = !strcmp(verb, "pause") ? "paused"
                               : !strcmp(verb, "resume") ? "resumed" : "removed";
            for (size_t i = 0; i < n; i++)
                printf("queue %s %s\n", names[i], past);
        }
    }
    rb_client_close(c);
    return code;
}
