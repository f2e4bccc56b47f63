/* `rebound migrate`: creates or upgrades the PostgreSQL schema of
 * distributed mode (docs/distributed.md), or checks it with --check. */
#include "cli/cli.h"

#include <getopt.h>
#include <string.h>

#include "backend/pg/sql.h"
#include "config/config.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: rebound migrate [--config F] [--env NAME] [--url URL] [--check]\n"
               "  --url URL    the PostgreSQL database (postgres://...); default: storage.url\n"
               "  --check      only report the schema version; exit 1 unless it is current\n");
}

/* PostgreSQL URLs and conninfo strings; everything else is SQLite's. */
static int is_postgres_url(const char *url)
{
    return !strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13) ||
           strchr(url, '=') != NULL;
}

int cmd_migrate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"env", required_argument, NULL, 'e'},
        {"url", required_argument, NULL, 'u'},    {"check", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *file = NULL, *env = NULL, *url = NULL;
    int check = 0, ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:e:u:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c': file = optarg; break;
        case 'e': env = optarg; break;
        case 'u': url = optarg; break;
        case 'k': check = 1; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_USAGE;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return cli_error(CLI_USAGE, "migrate: unexpected argument '%s'", argv[optind]);
    }
    rb_config cfg;
    rb_err err = {0};
    int code = cli_load_config(&cfg, "migrate", file, env);
    if (code != CLI_OK)
        return code;
    if (!url)
        url = cfg.storage.url;
    rb_pg *pg = NULL;
    if (!url || !is_postgres_url(url)) {
        code = cli_error(CLI_USAGE,
                         "migrate: storage url '%s' is not a PostgreSQL url (postgres://...);"
                         " SQLite needs no migration", url ? url : "");
        goto out;
    }
    rb_pg_options o = {.url = url, .cfg = &cfg};
    int rc = rb_pg_open(&o, &pg, &err);
    if (rc) {
        code = cli_error(rc == RB_EINVAL ? CLI_USAGE : CLI_FAIL, "migrate: %s", rb_err_msg(&err));
        goto out;
    }
    if (check) {
        int v;
        if (rb_pg_schema_version(pg, &v, &err)) {
            code = cli_error(CLI_FAIL, "migrate: %s", rb_err_msg(&err));
        } else if (rb_pg_check_schema(pg, &err)) {
            printf("schema version %d: %s\n", v, rb_err_msg(&err));
            code = CLI_FAIL;
        } else {
            printf("schema version %d: up to date\n", v);
        }
        goto out;
    }
    int from, to;
    if (rb_pg_migrate(pg, &from, &to, &err)) {
        code = cli_error(CLI_FAIL, "migrate: %s", rb_err_msg(&err));
    } else if (from == to) {
        printf("schema is up to date (version %d)\n", to);
    } else if (from == 0) {
        printf("schema created (version %d)\n", to);
    } else {
        printf("schema upgraded from version %d to %d\n", from, to);
    }
out:
    rb_pg_close(pg);
    rb_config_release(&cfg);
    return code;
}
