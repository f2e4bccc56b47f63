/* `rebound serve`: runs the job server (src/server/). */
#include "cli/cli.h"

#include <getopt.h>
#include <string.h>

#include "config/config.h"
#include "server/server.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: rebound serve [--config F] [--env NAME] [--listen ADDR] [--db PATH]\n"
               "                     [--log-level debug|info|warn|error] [--port-file F]\n"
               "                     [--http-listen ADDR|off] [--http-port-file F]\n"
               "  --env NAME      also read the overlay rebound.NAME.toml beside the config\n"
               "                  (default: $REBOUND_ENV)\n"
               "  --listen ADDR   HOST:PORT to listen on (port 0: any free port); overrides the config\n"
               "  --db PATH       SQLite database; overrides storage.url\n"
               "  --port-file F   write the bound TCP port to F once listening\n"
               "  --http-listen ADDR  dashboard/API/metrics address (port 0: any free port; off: none)\n"
               "  --http-port-file F  write the bound HTTP port to F\n");
}

int cmd_serve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"env", required_argument, NULL, 'e'},
        {"listen", required_argument, NULL, 'l'}, {"db", required_argument, NULL, 'd'},
        {"log-level", required_argument, NULL, 'L'}, {"port-file", required_argument, NULL, 'p'},
        {"http-listen", required_argument, NULL, 'H'}, {"http-port-file", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    rb_server_opts o = {0};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:e:l:d:L:p:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c': o.config_path = optarg; break;
        case 'e': o.env = optarg; break;
        case 'l': o.listen = optarg; break;
        case 'd': o.db = optarg; break;
        case 'L': o.log_level = optarg; break;
        case 'p': o.port_file = optarg; break;
        case 'H': o.http_listen = optarg; break;
        case 'P': o.http_port_file = optarg; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_USAGE;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return cli_error(CLI_USAGE, "serve: unexpected argument '%s'", argv[optind]);
    }
    o.env = rb_config_env_name(o.env); /* --env, else $REBOUND_ENV: as config check reads it */
    rb_err err = {0};
    int rc = rb_server_run(&o, &err);
    if (rc == RB_EINVAL || rc == RB_EPARSE)
        return cli_error(CLI_USAGE, "serve: %s", rb_err_msg(&err));
    if (rc)
        return cli_error(CLI_FAIL, "serve: %s", rb_err_msg(&err));
    return CLI_OK;
}
