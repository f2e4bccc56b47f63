/* `rebound policy check|simulate`: runs the real binary (REBOUND_BIN, else
 * build/rebound) and checks its text, JSON and exit codes. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct run {
    int rc;
    char *out, *err;
} run;

static char *slurp(FILE *f)
{
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

/* Runs `rebound policy ARGS...` (NULL-terminated). */
static run rebound(const char *arg0, ...)
{
    const char *bin = getenv("REBOUND_BIN");
    if (!bin || !*bin)
        bin = "build/rebound";
    const char *argv[32] = {bin, "policy", arg0};
    int n = 3;
    va_list ap;
    va_start(ap, arg0);
    while ((argv[n] = va_arg(ap, const char *)) != NULL && n < 30)
        n++;
    va_end(ap);
    FILE *out = tmpfile(), *err = tmpfile();
    cr_assert(out && err);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    run r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
    cr_assert_neq(r.rc, 127, "could not run %s", bin);
    return r;
}

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
}

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    cr_assert_not_null(v, "not JSON (%s): %s", e.text, text);
    return v;
}

Test(policy_cli, simulate_ftl_json_is_the_semantics_schedule)
{
    run r = rebound("simulate", "ftl:10 5s 1m", "--json", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *v = parse(r.out);
    json_t *pol = json_object_get(v, "policy");
    cr_assert_str_eq(json_string_value(json_object_get(pol, "dialect")), "ftl");
    cr_assert_eq(json_integer_value(json_object_get(pol, "max_attempts")), 11);
    json_t *a = json_object_get(v, "attempts");
    cr_assert_eq(json_array_size(a), 11, "11 executions");
    const int64_t want[] = {5, 10, 20, 40, 60, 60, 60, 60, 60, 60};
    int64_t at = 0;
    for (size_t i = 0; i < 10; i++) {
        json_t *s = json_array_get(a, i);
        at += want[i] * 1000;
        cr_assert_eq(json_integer_value(json_object_get(s, "attempt")), (json_int_t)i + 1);
        cr_assert_str_eq(json_string_value(json_object_get(s, "outcome")), "retry");
        cr_assert_eq(json_integer_value(json_object_get(s, "delay_ms")), want[i] * 1000);
        cr_assert_eq(json_integer_value(json_object_get(s, "at_ms")), at);
        cr_assert_str_eq(json_string_value(json_object_get(s, "source")), "computed");
    }
    json_t *last = json_array_get(a, 10);
    cr_assert_str_eq(json_string_value(json_object_get(last, "outcome")), "dead");
    cr_assert_str_eq(json_string_value(json_object_get(last, "reason")), "exhausted");
    cr_assert_str_eq(json_string_value(json_object_get(v, "final")), "dead");
    cr_assert_str_eq(json_string_value(json_object_get(v, "reason")), "exhausted");
    json_decref(v);
    run_free(&r);
}

Test(policy_cli, simulate_text_table_chart_and_end)
{
    run r = rebound("simulate", "//ftl:retry 2 5s 1m catch notify", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dialect:     ftl\n"), "%s", r.out);
    cr_assert(strstr(r.out, "attempt  outcome   delay"), "%s", r.out);
    cr_assert(strstr(r.out, "      1  retry     5s            5s              computed\n"), "%s", r.out);
    cr_assert(strstr(r.out, "      2  retry     10s           15s             computed\n"), "%s", r.out);
    cr_assert(strstr(r.out, "      3  catch     -             15s             exhausted\n"), "%s", r.out);
    /* bars: the longest fills 50 columns, 5 s is half of 10 s */
    char bar50[64] = "      2 |", bar25[64] = "      1 |";
    memset(bar50 + 9, '#', 50);
    memset(bar25 + 9, '#', 25);
    bar25[34] = ' ';
    cr_assert(strstr(r.out, bar50), "%s", r.out);
    cr_assert(strstr(r.out, bar25), "%s", r.out);
    cr_assert(strstr(r.out, "end: catch job 'notify' after 3 attempts (exhausted); the job ends dead\n"),
              "%s", r.out);
    run_free(&r);
}

Test(policy_cli, simulate_unlimited_and_failures)
{
    run r = rebound("simulate", "{\"dialect\": \"temporal\"}", "--json", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *v = parse(r.out);
    cr_assert_eq(json_array_size(json_object_get(v, "attempts")), 30);
    cr_assert_str_eq(json_string_value(json_object_get(v, "final")), "unlimited");
    json_decref(v);
    run_free(&r);
    r = rebound("simulate", "{\"dialect\": \"temporal\"}", "--failures", "5", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "end: unlimited (no maximum attempts and no deadline); shown up to 5 "
                            "failures\n"), "%s", r.out);
    cr_assert(strstr(r.out, "      5  retry     16s           31s             computed\n"), "%s", r.out);
    cr_assert_null(strstr(r.out, "      6  "));
    run_free(&r);
}

Test(policy_cli, simulate_faktory_seeded_and_bounded)
{
    run a = rebound("simulate", "faktory:25", "--seed", "42", "--json", NULL);
    run b = rebound("simulate", "faktory:25", "--seed", "42", "--json", NULL);
    run c = rebound("simulate", "faktory:25", "--seed", "43", "--json", NULL);
    cr_assert_eq(a.rc, 0, "%s", a.err);
    cr_assert_str_eq(a.out, b.out, "--seed makes the output reproducible");
    cr_assert_str_neq(a.out, c.out);
    json_t *v = parse(a.out);
    json_t *at = json_object_get(v, "attempts");
    cr_assert_eq(json_array_size(at), 26);
    for (size_t i = 0; i < 25; i++) {
        int64_t cc = (int64_t)i, d = json_integer_value(json_object_get(json_array_get(at, i), "delay_ms"));
        int64_t lo = cc * cc * cc * cc + 15;
        cr_assert_geq(d, lo * 1000);
        cr_assert_leq(d, (lo + 29 * (cc + 1)) * 1000);
    }
    cr_assert_str_eq(json_string_value(json_object_get(v, "final")), "dead");
    json_decref(v);
    run_free(&a);
    run_free(&b);
    run_free(&c);
    a = rebound("simulate", "faktory:0", "--json", NULL);
    v = parse(a.out);
    cr_assert_str_eq(json_string_value(json_object_get(v, "final")), "discard");
    json_decref(v);
    run_free(&a);
}

Test(policy_cli, simulate_errtype_and_retry_after)
{
    run r = rebound("simulate", "{\"non_retryable_error_types\": [\"Fatal\"]}", "--errtype", "Fatal",
                    "--json", NULL);
    json_t *v = parse(r.out);
    cr_assert_str_eq(json_string_value(json_object_get(v, "final")), "dead");
    cr_assert_str_eq(json_string_value(json_object_get(v, "reason")), "non-retryable-type");
    cr_assert_eq(json_array_size(json_object_get(v, "attempts")), 1);
    json_decref(v);
    run_free(&r);
    r = rebound("simulate", "ftl:3 5s 1m", "--retry-after", "45", "--json", NULL);
    v = parse(r.out);
    json_t *s = json_array_get(json_object_get(v, "attempts"), 0);
    cr_assert_eq(json_integer_value(json_object_get(s, "delay_ms")), 45000);
    cr_assert_str_eq(json_string_value(json_object_get(s, "source")), "server-requested");
    json_decref(v);
    run_free(&r);
}

Test(policy_cli, check_text_and_warnings)
{
    run r = rebound("check", "{\"max_attempts\": 0}", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dialect:     tasker\n"));
    cr_assert(strstr(r.out, "executions:  1 (the first execution only, no retries)\n"), "%s", r.out);
    cr_assert(strstr(r.out, "warning:     max_attempts 0 allows the first execution and no retries"),
              "%s", r.out);
    run_free(&r);
    r = rebound("check", "{\"max_retries\": 3}", NULL);
    cr_assert(strstr(r.out, "warning:     max_retries 3 means 3 executions in total (2 retries)"),
              "%s", r.out);
    run_free(&r);
    r = rebound("check", "{\"retryable\": false, \"max_attempts\": 4}", NULL);
    cr_assert(strstr(r.out, "warning:     retryable false with max_attempts 4 behaves as max_attempts 1"),
              "%s", r.out);
    run_free(&r);
    /* the summary line says what will happen: one execution, whatever
     * max_attempts says (issue 13) */
    r = rebound("check", "{\"max_attempts\": 3, \"retryable\": false}", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "executions:  1 (the first execution only: retryable is false)\n"),
              "%s", r.out);
    cr_assert_null(strstr(r.out, "at most"), "%s", r.out);
    run_free(&r);
    r = rebound("check", "{\"max_attempts\": 0, \"retryable\": false}", NULL);
    cr_assert(strstr(r.out, "executions:  1 (the first execution only: retryable is false)\n"),
              "%s", r.out);
    run_free(&r);
    r = rebound("check", "ftl:10 5s 1m", NULL);
    cr_assert(strstr(r.out, "executions:  at most 11 (the first + 10 retries)\n"), "%s", r.out);
    cr_assert(strstr(r.out, "backoff:     exponential: 5s before the first retry, x2 each retry, "
                            "capped at 1m\n"), "%s", r.out);
    run_free(&r);
}

Test(policy_cli, check_json)
{
    run r = rebound("check", "{\"maximum_attempts\": 5, \"non_retryable_error_types\": [\"E\"], "
                             "\"schedule_to_close_timeout\": \"1h\"}", "--json", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *v = parse(r.out);
    cr_assert_str_eq(json_string_value(json_object_get(v, "dialect")), "temporal");
    cr_assert_eq(json_integer_value(json_object_get(v, "max_attempts")), 5);
    cr_assert_eq(json_integer_value(json_object_get(v, "initial_ms")), 1000);
    cr_assert_eq(json_integer_value(json_object_get(v, "max_interval_ms")), 100000);
    cr_assert_eq(json_integer_value(json_object_get(v, "deadline_ms")), 3600000);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "non_retryable"), 0)), "E");
    cr_assert_eq(json_array_size(json_object_get(v, "warnings")), 0);
    json_decref(v);
    run_free(&r);
}

Test(policy_cli, bad_input_exits_2_with_one_line)
{
    const struct {
        const char *a, *b, *c, *msg;
    } cases[] = {
        {"check", "{\"initial_interval\": \"-1s\"}", NULL,
         "rebound: initial_interval: cannot be negative, got '-1s'\n"},
        {"check", "ftl:0 5s", NULL,
         "rebound: ftl: can not define a backoff duration when retry count is 0 and no catch is declared\n"},
        {"simulate", "faktory:-3", NULL, "rebound: retry: must be -1, 0 or a positive count, got '-3'\n"},
        {"check", "{\"retry\": 1, \"max_retries\": 2}", NULL,
         "rebound: max_retries: keys of two dialects: 'retry' is faktory, 'max_retries' is tutorial\n"},
        {"simulate", "ftl:5s", "--failures", "rebound: policy simulate: --failures needs a value\n"},
        {"simulate", "ftl:5s", "--bogus", "rebound: policy simulate: unknown option '--bogus'\n"},
        {"check", NULL, NULL, "rebound: policy check: missing SPEC (see 'rebound policy --help')\n"},
        {"frobnicate", NULL, NULL, "rebound: policy: unknown subcommand 'frobnicate' (check or simulate)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run r = rebound(cases[i].a, cases[i].b, cases[i].c, NULL);
        cr_assert_eq(r.rc, 2, "case %zu", i);
        cr_assert_str_eq(r.err, cases[i].msg);
        cr_assert_str_eq(r.out, "");
        run_free(&r);
    }
    run r = rebound("simulate", "ftl:5s", "--failures", "0", NULL);
    cr_assert_eq(r.rc, 2);
    cr_assert_str_eq(r.err, "rebound: --failures: must be between 1 and 1000000, got '0'\n");
    run_free(&r);
    r = rebound("--help", NULL);
    cr_assert_eq(r.rc, 0);
    cr_assert(strstr(r.out, "usage: rebound policy check SPEC"));
    run_free(&r);
}

/* `policy simulate --config`: the effective policy for a job (semantics.md §8). */
static char *write_config(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/rebound-policy-cli-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_neq(fd, -1);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static const char layered_config[] =
    "[retry]\ndialect = \"temporal\"\ninitial_interval = \"2s\"\n"
    "[retry.queues.bulk]\nfaktory = 3\n"
    "[retry.jobtypes.send_email]\nftl = \"10 5s 1m\"\n";

static json_t *simulate_json(const char *cfg, const char *jobtype, const char *queue,
                             const char *retry)
{
    run r = retry ? rebound("simulate", "--config", cfg, "--jobtype", jobtype, "--queue", queue,
                            "--retry", retry, "--seed", "1", "--json", NULL)
                  : rebound("simulate", "--config", cfg, "--jobtype", jobtype, "--queue", queue,
                            "--seed", "1", "--json", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *root = json_loads(r.out, 0, NULL);
    cr_assert_not_null(root, "%s", r.out);
    run_free(&r);
    return root;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    cr_assert_not_null(s, "no string %s", k);
    return s;
}

Test(policy_cli, config_layers_in_precedence_order)
{
    char *cfg = write_config(layered_config);
    char want[128];

    /* job type beats queue: FTL 10 retries -> 11 attempts, dead */
    json_t *root = simulate_json(cfg, "send_email", "bulk", NULL);
    snprintf(want, sizeof want, "[retry.jobtypes.send_email] in %s", cfg);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    cr_assert_eq(json_array_size(json_object_get(root, "attempts")), 11);
    cr_assert_str_eq(jstr(root, "final"), "dead");
    json_decref(root);

    /* queue next: faktory 3 -> 4 attempts */
    root = simulate_json(cfg, "resize", "bulk", NULL);
    snprintf(want, sizeof want, "[retry.queues.bulk] in %s", cfg);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    cr_assert_eq(json_array_size(json_object_get(root, "attempts")), 4);
    json_decref(root);

    /* then [retry]: temporal, unlimited, first delay 2 s */
    root = simulate_json(cfg, "resize", "default", NULL);
    snprintf(want, sizeof want, "[retry] in %s", cfg);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    cr_assert_str_eq(jstr(root, "final"), "unlimited");
    json_t *first = json_array_get(json_object_get(root, "attempts"), 0);
    cr_assert_eq(json_integer_value(json_object_get(first, "delay_ms")), 2000);
    json_decref(root);
    unlink(cfg);
}

/* policy_source names the file a table came from: the overlay, the base, or
 * both when the overlay changes a table of the base (issue 13). */
Test(policy_cli, config_policy_source_names_the_overlay)
{
    char dir[] = "/tmp/rebound-policy-env-XXXXXX", base[128], over[128], want[400];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(base, sizeof base, "%s/rebound.toml", dir);
    snprintf(over, sizeof over, "%s/rebound.staging.toml", dir);
    FILE *f = fopen(base, "w");
    fputs("[retry]\nftl = \"5 1s 1m\"\n"
          "[retry.jobtypes.both]\ninitial_interval = \"2s\"\nmaximum_attempts = 4\n", f);
    fclose(f);
    f = fopen(over, "w");
    fputs("[retry.jobtypes.tk]\nftl = \"3 9s 1m\"\n[retry.jobtypes.both]\nmaximum_attempts = 7\n", f);
    fclose(f);
    unsetenv("REBOUND_ENV");
    run r = rebound("simulate", "--config", base, "--env", "staging", "--jobtype", "tk",
                    "--seed", "1", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    snprintf(want, sizeof want, "policy from: [retry.jobtypes.tk] in %s\n", over);
    cr_assert(strstr(r.out, want), "want '%s' in:\n%s", want, r.out);
    run_free(&r);
    setenv("REBOUND_ENV", "staging", 1); /* the same through the environment */
    r = rebound("simulate", "--config", base, "--jobtype", "tk", "--seed", "1", "--json", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    json_t *root = parse(r.out);
    snprintf(want, sizeof want, "[retry.jobtypes.tk] in %s", over);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    json_decref(root);
    run_free(&r);
    root = simulate_json(base, "other", "default", NULL);
    snprintf(want, sizeof want, "[retry] in %s", base);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    json_decref(root);
    root = simulate_json(base, "both", "default", NULL);
    snprintf(want, sizeof want, "[retry.jobtypes.both] in %s + %s", base, over);
    cr_assert_str_eq(jstr(root, "policy_source"), want);
    cr_assert_eq(json_array_size(json_object_get(root, "attempts")), 7, "the overlay's count");
    json_decref(root);
    unsetenv("REBOUND_ENV");
    unlink(base);
    unlink(over);
    rmdir(dir);
}

Test(policy_cli, config_client_retry_bounds_the_schedule)
{
    char *cfg = write_config(layered_config);
    /* a stock client's retry 25 caps the unlimited temporal policy at 26 runs */
    json_t *root = simulate_json(cfg, "resize", "default", "25");
    cr_assert_eq(json_array_size(json_object_get(root, "attempts")), 26);
    cr_assert_str_eq(jstr(root, "final"), "dead");
    cr_assert(strstr(jstr(root, "policy_source"), "bounded by the job's retry 25"));
    json_decref(root);
    /* retry 0: the first failure discards */
    root = simulate_json(cfg, "send_email", "default", "0");
    cr_assert_eq(json_array_size(json_object_get(root, "attempts")), 1);
    cr_assert_str_eq(jstr(root, "final"), "discard");
    json_decref(root);
    unlink(cfg);
}

Test(policy_cli, config_errors_exit_with_one_line)
{
    char *cfg = write_config("[retry]\nftl = \"0 5s\"\n");
    run r = rebound("simulate", "--config", cfg, "--jobtype", "x", NULL);
    cr_assert_eq(r.rc, 2, "%s", r.err);
    cr_assert(strstr(r.err, "retry count is 0"), "%s", r.err);
    run_free(&r);
    unlink(cfg);
    r = rebound("simulate", "--config", "/nonexistent/rebound.toml", "--jobtype", "x", NULL);
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert(strstr(r.err, "/nonexistent/rebound.toml"), "%s", r.err);
    run_free(&r);
    r = rebound("simulate", "--config", "/nonexistent/rebound.toml", NULL);
    cr_assert_eq(r.rc, 2);
    cr_assert(strstr(r.err, "--jobtype"), "%s", r.err);
    run_free(&r);
}
