/* `rebound cron`: the [[cron]] entries of a configuration file with their
 * next run times, computed from the file alone (no server needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/timeutil.h"
#include "config/config.h"
#include "config/cron_json.h"

static int usage(FILE *to, int code)
{
    fprintf(to, "usage: rebound cron [FILE | --config FILE] [--env NAME] [--json] [--now TIME]\n"
                "                    [--count N]\n\n"
                "Lists the [[cron]] entries of FILE (with the overlay of --env NAME, else\n"
                "$REBOUND_ENV) with their schedule, time zone, missed-tick rule, job type and\n"
                "queue, and their next N run times (default 1) after TIME (an RFC 3339 time;\n"
                "default now). --json prints {\"now\", \"entries\": [{\"name\", \"schedule\",\n"
                "\"timezone\", \"missed\", \"jobtype\", \"queue\", \"job\", \"next\": [...]}]}.\n");
    return code;
}

int cmd_cron(int argc, char **argv)
{
    const char *file = NULL, *env = NULL, *now_text = NULL;
    bool json = false;
    long count = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return usage(stdout, CLI_OK);
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--config") || !strcmp(a, "--env") || !strcmp(a, "--now") ||
                   !strcmp(a, "--count")) {
            if (++i >= argc)
                return cli_error(CLI_USAGE, "%s needs a value", a);
            if (!strcmp(a, "--config")) {
                if (file)
                    return cli_error(CLI_USAGE, "only one FILE may be given");
                file = argv[i];
            } else if (!strcmp(a, "--env")) {
                env = argv[i];
            } else if (!strcmp(a, "--now")) {
                now_text = argv[i];
            } else {
                char *end;
                count = strtol(argv[i], &end, 10);
                if (*end || count < 1 || count > RB_CRON_NEXT_MAX)
                    return cli_error(CLI_USAGE, "--count must be a number from 1 to 1000, got '%s'",
                                     argv[i]);
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_error(CLI_USAGE, "unknown option '%s' (see 'rebound cron --help')", a);
        } else if (file) {
            return cli_error(CLI_USAGE, "only one FILE may be given, got '%s' and '%s'", file, a);
        } else {
            file = a;
        }
    }
    if (!file)
        return cli_error(CLI_USAGE,
                         "cron: name the configuration FILE (see 'rebound cron --help')");
    int64_t now_ms = rb_now_ms();
    if (now_text && rb_time_parse_rfc3339(now_text, &now_ms))
        return cli_error(CLI_USAGE, "--now '%s' is not an RFC 3339 time", now_text);
    rb_config cfg;
    int rc = cli_load_config(&cfg, NULL, file, env);
    if (rc != CLI_OK)
        return rc;
    int64_t now_s = now_ms / 1000 - (now_ms % 1000 < 0); /* floor */
    json_t *entries = json_array();
    for (size_t i = 0; i < cfg.n_cron; i++)
        json_array_append_new(entries, rb_cron_entry_json(&cfg.cron[i], now_s, (int)count));
    char buf[RB_TIME_STRLEN];
    if (json) {
        json_t *out = json_pack("{s:s, s:o}", "now", rb_time_format(now_s * 1000, buf), "entries",
                                entries);
        json_dumpf(out, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(out);
    } else {
        if (!cfg.n_cron)
            printf("no [[cron]] entries in %s\n", file);
        for (size_t i = 0; i < json_array_size(entries); i++) {
            json_t *e = json_array_get(entries, i);
            printf("%s%s\n  schedule: %s (%s)\n  missed:   %s\n  job:      %s in queue %s\n",
                   i ? "\n" : "", json_string_value(json_object_get(e, "name")),
                   json_string_value(json_object_get(e, "schedule")),
                   json_string_value(json_object_get(e, "timezone")),
                   json_string_value(json_object_get(e, "missed")),
                   json_string_value(json_object_get(e, "jobtype")),
                   json_string_value(json_object_get(e, "queue")));
            json_t *next = json_object_get(e, "next");
            if (!json_array_size(next))
                printf("  next:     never (no such date within ten years)\n");
            for (size_t k = 0; k < json_array_size(next); k++)
                printf("  %s %s\n", k ? "         " : "next:    ",
                       json_string_value(json_array_get(next, k)));
        }
        json_decref(entries);
    }
    rb_config_release(&cfg);
    return CLI_OK;
}
