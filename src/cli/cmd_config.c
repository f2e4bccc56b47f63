/* `rebound config`: validate and print the effective configuration, and the
 * reference table that docs/configuration.md carries. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "config/config.h"
#include "config/schema.h"

static int usage(FILE *to, int code)
{
    fprintf(to, "usage: rebound config check [FILE] [--env NAME] [--json]\n"
                "       rebound config reference [--man]\n\n"
                "check     validate FILE (none: built-in defaults only), merge the overlay\n"
                "          rebound.NAME.toml beside it (--env NAME, else $REBOUND_ENV), and\n"
                "          print every setting with where it came from\n"
                "reference print the settings reference table (Markdown); --man: the\n"
                "          manual page rebound.toml(5) (roff)\n");
    return code;
}

int cli_load_config(rb_config *cfg, const char *what, const char *file, const char *env_flag)
{
    rb_err err = {0};
    int rc = rb_config_load(cfg, file, rb_config_env_name(env_flag), &err);
    if (rc == 0)
        return CLI_OK;
    rb_config_release(cfg);
    return cli_error(rc == RB_EIO ? CLI_FAIL : CLI_USAGE, "%s%s%s", what ? what : "",
                     what ? ": " : "", rb_err_msg(&err));
}

static int check(int argc, char **argv)
{
    const char *file = NULL, *env = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--env")) {
            if (++i >= argc)
                return cli_error(CLI_USAGE, "--env needs a NAME");
            env = argv[i];
        } else if (!strncmp(argv[i], "--env=", 6)) {
            env = argv[i] + 6;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            return usage(stdout, CLI_OK);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_error(CLI_USAGE, "unknown option '%s' (see 'rebound config --help')",
                             argv[i]);
        } else if (file) {
            return cli_error(CLI_USAGE, "only one FILE may be given, got '%s' and '%s'", file,
                             argv[i]);
        } else {
            file = argv[i];
        }
    }
    rb_config cfg;
    int rc = cli_load_config(&cfg, NULL, file, env);
    if (rc != CLI_OK)
        return rc;
    if (json) {
        json_t *j = rb_config_to_json(&cfg);
        cli_print_json(j);
        json_decref(j);
    } else {
        rb_buf out = RB_BUF_INIT;
        rb_config_describe(&cfg, &out);
        fputs(rb_buf_str(&out), stdout);
        rb_buf_release(&out);
    }
    rb_config_release(&cfg);
    return CLI_OK;
}

int cmd_config(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr, CLI_USAGE);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return usage(stdout, CLI_OK);
    if (!strcmp(argv[1], "check"))
        return check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "reference")) {
        bool man = argc == 3 && !strcmp(argv[2], "--man");
        if (argc > 2 && !man)
            return cli_error(CLI_USAGE, "'config reference' takes only --man, got '%s'", argv[2]);
        rb_buf out = RB_BUF_INIT;
        if (man)
            rb_config_reference_man(&out);
        else
            rb_config_reference_markdown(&out);
        fputs(rb_buf_str(&out), stdout);
        rb_buf_release(&out);
        return CLI_OK;
    }
    return cli_error(CLI_USAGE, "unknown config command '%s' (see 'rebound config --help')",
                     argv[1]);
}
