/* `rebound policy check|simulate SPEC`: argument parsing only; the policy
 * engine parses SPEC and policy_out.c prints. */
#include "cli/cli.h"
#include "cli/policy_out.h"
#include "common/buf.h"
#include "config/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: rebound policy check SPEC [--json]\n"
    "       rebound policy simulate SPEC [--failures N] [--errtype T] [--retry-after S]\n"
    "                                    [--seed S] [--json]\n"
    "       rebound policy simulate [SPEC] --config FILE --jobtype T [--queue Q] [--retry N]\n"
    "                                    [--env NAME] [...]   (the effective policy for a job)\n"
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

/* `policy simulate --config`: the job a stock client would push. */
struct job_opts {
    const char *config, *env, *jobtype, *queue;
    bool has_retry;
    long long retry;
};

/* Simulates the policy semantics.md §8 gives a job of jobtype/queue under the
 * config file (SPEC, when given, plays the job's own retry_policy field). */
static int simulate_for_job(const char *spec, const struct job_opts *j, cli_sim_opts *o)
{
    if (!j->jobtype)
        return cli_error(CLI_USAGE, "policy simulate: --config needs --jobtype T");
    rb_config cfg;
    rb_err err = {0};
    int rc = cli_load_config(&cfg, NULL, j->config, j->env);
    if (rc != CLI_OK)
        return rc;
    json_t *jobj = json_pack("{s:s, s:s}", "jobtype", j->jobtype, "queue",
                             j->queue ? j->queue : "default");
    if (j->has_retry)
        json_object_set_new(jobj, "retry", json_integer(j->retry));
    if (spec) {
        json_error_t jerr;
        json_t *v = spec[0] == '{' ? json_loads(spec, 0, &jerr) : json_string(spec);
        if (!v) {
            json_decref(jobj);
            rb_config_release(&cfg);
            return cli_error(CLI_USAGE, "SPEC: invalid JSON at column %d: %s", jerr.column,
                             jerr.text);
        }
        json_object_set_new(jobj, "retry_policy", v);
    }
    rb_policy p;
    rb_policy_layer layer;
    rc = rb_config_effective_policy(&cfg, jobj, &p, &layer, &err);
    json_decref(jobj);
    if (rc != 0) {
        rb_config_release(&cfg);
        return cli_error(CLI_USAGE, "%s", rb_err_msg(&err));
    }
    const char *queue = j->queue ? j->queue : "default";
    rb_buf source = RB_BUF_INIT, file = RB_BUF_INIT;
    rb_config_policy_files(&cfg, j->jobtype, queue, &file); /* the overlay when it defines it */
    switch (layer) {
    case RB_LAYER_JOB: rb_buf_adds(&source, "the job's retry_policy"); break;
    case RB_LAYER_JOBTYPE:
        rb_buf_printf(&source, "[retry.jobtypes.%s] in %s", j->jobtype, rb_buf_str(&file));
        break;
    case RB_LAYER_QUEUE:
        rb_buf_printf(&source, "[retry.queues.%s] in %s", queue, rb_buf_str(&file));
        break;
    case RB_LAYER_DEFAULT: rb_buf_printf(&source, "[retry] in %s", rb_buf_str(&file)); break;
    default: rb_buf_adds(&source, "built-in default (Faktory's)"); break;
    }
    if (j->has_retry)
        rb_buf_printf(&source, "; bounded by the job's retry %lld", j->retry);
    o->source = rb_buf_str(&source);
    rc = cli_simulate_policy(stdout, &p, o);
    o->source = NULL;
    rb_buf_release(&source);
    rb_buf_release(&file);
    rb_policy_release(&p);
    rb_config_release(&cfg);
    return rc;
}

static int policy_simulate(int argc, char **argv)
{
    const char *spec = NULL;
    cli_sim_opts o = {0};
    struct job_opts job = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool takes_value = !strcmp(a, "--failures") || !strcmp(a, "--errtype") ||
                           !strcmp(a, "--retry-after") || !strcmp(a, "--seed") ||
                           !strcmp(a, "--config") || !strcmp(a, "--env") ||
                           !strcmp(a, "--jobtype") || !strcmp(a, "--queue") ||
                           !strcmp(a, "--retry");
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
        } else if (!strcmp(a, "--config")) {
            job.config = argv[++i];
        } else if (!strcmp(a, "--env")) {
            job.env = argv[++i];
        } else if (!strcmp(a, "--jobtype")) {
            job.jobtype = argv[++i];
        } else if (!strcmp(a, "--queue")) {
            job.queue = argv[++i];
        } else if (!strcmp(a, "--retry")) {
            char *end;
            errno = 0;
            long long r = strtoll(argv[++i], &end, 10);
            if (!*argv[i] || *end || errno || r < -1)
                return cli_error(CLI_USAGE, "--retry: must be an integer >= -1, got '%s'", argv[i]);
            job.retry = r;
            job.has_retry = true;
        } else if (a[0] == '-' && a[1] == '-') {
            return cli_error(CLI_USAGE, "policy simulate: unknown option '%s'", a);
        } else if (spec) {
            return cli_error(CLI_USAGE, "policy simulate: one SPEC only, got '%s' too", a);
        } else {
            spec = a;
        }
    }
    if (job.config || job.jobtype || job.queue || job.has_retry || job.env)
        return simulate_for_job(spec, &job, &o);
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
