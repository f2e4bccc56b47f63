/* `rebound policy check|simulate SPEC`: argument parsing only; the policy
 * engine parses SPEC and policy_out.c prints. */
#include "cli/cli.h"
#include "cli/policy_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: rebound policy check SPEC [--json]\n"
    "       rebound policy simulate SPEC [--failures N] [--errtype T] [--retry-after S]\n"
    "                                    [--seed S] [--json]\n"
    "SPEC: a JSON object ({\"maximum_attempts\": 5}, {\"dialect\": \"tasker\", ...}),\n"
    "      an FTL directive ('ftl:10 5s 1m', '//ftl:retry 10 5s 1m catch verb'),\n"
    "      or 'faktory:N'\n";

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (!*s || *s == '-' || *end || errno)
        return cli_error(CLI_USAGE, "%s: must be a non-negative integer, got '%s'", opt, s);
    *v = x;
    return 0;
}

/* Parses SPEC; prints the one-line error and returns CLI_USAGE on failure. */
static int load_spec(const char *spec, rb_policy *p)
{
    rb_err err = {0};
    if (rb_policy_parse_spec(spec, NULL, p, &err) != 0)
        return cli_error(CLI_USAGE, "%s", rb_err_msg(&err));
    return 0;
}

static int policy_check(int argc, char **argv)
{
    const char *spec = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' && argv[i][1] == '-')
            return cli_error(CLI_USAGE, "policy check: unknown option '%s'", argv[i]);
        else if (spec)
            return cli_error(CLI_USAGE, "policy check: one SPEC only, got '%s' too", argv[i]);
        else
            spec = argv[i];
    }
    if (!spec)
        return cli_error(CLI_USAGE, "policy check: missing SPEC (see 'rebound policy --help')");
    rb_policy p;
    int rc = load_spec(spec, &p);
    if (rc)
        return rc;
    cli_print_policy(stdout, &p, json);
    rb_policy_release(&p);
    return CLI_OK;
}

static int policy_simulate(int argc, char **argv)
{
    const char *spec = NULL;
    cli_sim_opts o = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool takes_value = !strcmp(a, "--failures") || !strcmp(a, "--errtype") ||
                           !strcmp(a, "--retry-after") || !strcmp(a, "--seed");
        if (takes_value && i + 1 >= argc)
            return cli_error(CLI_USAGE, "policy simulate: %s needs a value", a);
        if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--failures")) {
            uint64_t n;
            if (parse_u64(a, argv[++i], &n))
                return CLI_USAGE;
            if (n == 0 || n > 1000000)
                return cli_error(CLI_USAGE, "--failures: must be between 1 and 1000000, got '%s'",
                                 argv[i]);
            o.failures = (int64_t)n;
        } else if (!strcmp(a, "--errtype")) {
            o.errtype = argv[++i];
        } else if (!strcmp(a, "--retry-after")) {
            o.retry_after = argv[++i];
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(a, argv[++i], &o.seed))
                return CLI_USAGE;
            o.seeded = true;
        } else if (a[0] == '-' && a[1] == '-') {
            return cli_error(CLI_USAGE, "policy simulate: unknown option '%s'", a);
        } else if (spec) {
            return cli_error(CLI_USAGE, "policy simulate: one SPEC only, got '%s' too", a);
        } else {
            spec = a;
        }
    }
    if (!spec)
        return cli_error(CLI_USAGE, "policy simulate: missing SPEC (see 'rebound policy --help')");
    rb_policy p;
    int rc = load_spec(spec, &p);
    if (rc)
        return rc;
    rc = cli_simulate_policy(stdout, &p, &o);
    rb_policy_release(&p);
    return rc;
}

int cmd_policy(int argc, char **argv)
{
    if (argc < 2)
        return fputs(usage, stderr), CLI_USAGE;
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return fputs(usage, stdout), CLI_OK;
    if (!strcmp(argv[1], "check"))
        return policy_check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "simulate"))
        return policy_simulate(argc - 1, argv + 1);
    return cli_error(CLI_USAGE, "policy: unknown subcommand '%s' (check or simulate)", argv[1]);
}
