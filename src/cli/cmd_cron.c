/* `rebound cron`: the [[cron]] entries of a configuration file with their
 * next run times, computed from the file alone (no server needed), and
 * with --db each entry's last fired tick as the store holds it (a SQLite
 * file or a PostgreSQL database; read only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/sqlite/store.h"
#include "backend/pg/mode.h"
#include "backend/pg/sql.h"
#include "cli/cli.h"
#include "common/timeutil.h"
#include "config/config.h"
#include "config/cron_json.h"
#include "engine/cron.h"
#include "server/cron.h"

static int usage(FILE *to, int code)
{
    fprintf(to, "usage: rebound cron [FILE | --config FILE] [--env NAME] [--json] [--now TIME]\n"
                "                    [--count N] [--db URL]\n\n"
                "Lists the [[cron]] entries of FILE (with the overlay of --env NAME, else\n"
                "$REBOUND_ENV) with their schedule, time zone, missed-tick rule, job type and\n"
                "queue, and their next N run times (default 1) after TIME (an RFC 3339 time;\n"
                "default now). --db URL (a SQLite file or a PostgreSQL URL, as serve's) adds\n"
                "each entry's last fired tick as the store holds it (\"last\", null: none).\n"
                "--json prints {\"now\", \"entries\": [{\"name\", \"schedule\", \"timezone\",\n"
                "\"missed\", \"jobtype\", \"queue\", \"job\", \"next\": [...]}]}.\n");
    return code;
}

static int keep_cron_row(void *arg, const char *key, const char *value)
{
    if (!strncmp(key, RB_CRON_META_KEY, strlen(RB_CRON_META_KEY)))
        json_object_set_new(arg, key + strlen(RB_CRON_META_KEY), json_string(value));
    return 0;
}

static void keep_pg_row(void *arg, const char *key, const char *value)
{
    keep_cron_row(arg, key, value);
}

static int skip_job(void *arg, const rb_job_row *row)
{
    (void)arg;
    (void)row;
    return 0;
}

static int skip_counter(void *arg, const char *name, int64_t value)
{
    (void)arg;
    (void)name;
    (void)value;
    return 0;
}

/* The stored last ticks of the store url names, {name: "seconds"}, into
 * out; 0 or an error printed. */
static int read_ticks(const char *url, const rb_config *cfg, json_t *out)
{
    rb_err err = {0};
    int rc;
    if (rb_pg_is_url(url)) {
        rb_pg_options o = {.url = url, .cfg = cfg};
        rb_pg *pg = NULL;
        if (!(rc = rb_pg_open(&o, &pg, &err)) && !(rc = rb_pg_check_schema(pg, &err)))
            rc = rb_pg_meta_each(pg, RB_CRON_META_KEY, keep_pg_row, out, &err);
        rb_pg_close(pg);
    } else {
        const char *path = strncmp(url, "sqlite:", 7) ? url : url + 7;
        if (access(path, R_OK) != 0)
            return cli_error(CLI_FAIL, "cron: no database at '%s'", path);
        rb_store *st = NULL;
        if (!(rc = rb_store_open(url, &st, &err))) {
            rb_store_loader l = {out, skip_job, skip_counter, keep_cron_row};
            rc = st->ops->load(st, &l, &err);
            st->ops->close(st);
        }
        if (rc)
            return cli_error(CLI_FAIL, "cron: %s (a running server holds its SQLite file: read "
                             "it once the server is stopped)", rb_err_msg(&err));
    }
    return rc ? cli_error(CLI_FAIL, "cron: %s", rb_err_msg(&err)) : CLI_OK;
}

int cmd_cron(int argc, char **argv)
{
    const char *file = NULL, *env = NULL, *now_text = NULL, *db = NULL;
    bool json = false;
    long count = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return usage(stdout, CLI_OK);
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--config") || !strcmp(a, "--env") || !strcmp(a, "--now") ||
                   !strcmp(a, "--count") || !strcmp(a, "--db")) {
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
            } else if (!strcmp(a, "--db")) {
                db = argv[i];
            } else {
                char *end;
                count = strtol(argv[i], &end, 10);
                if (*end || count < 1 || count > 1000)
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
    json_t *ticks = json_object();
    if (db && (rc = read_ticks(db, &cfg, ticks)) != CLI_OK) {
        json_decref(ticks);
        rb_config_release(&cfg);
        return rc;
    }
    char buf[RB_TIME_STRLEN];
    json_t *entries = json_array();
    for (size_t i = 0; i < cfg.n_cron; i++) {
        const rb_cron_entry *e = &cfg.cron[i];
        json_t *o = rb_cron_entry_json(e, now_s, (int)count);
        if (db) {
            const char *t = json_string_value(json_object_get(ticks, e->name));
            json_object_set_new(o, "last", t ? json_string(rb_time_format(strtoll(t, NULL, 10) *
                                                                              1000, buf))
                                             : json_null());
        }
        json_array_append_new(entries, o);
    }
    json_decref(ticks);
    if (json) {
        json_t *out = json_pack("{s:s, s:o}", "now", rb_time_format(now_s * 1000, buf), "entries",
                                entries);
        cli_print_json(out);
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
            json_t *last = json_object_get(e, "last");
            if (last)
                printf("  last:     %s\n",
                       json_is_string(last) ? json_string_value(last) : "none stored");
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
