/* `rebound push`: one job from the command line, or (with --file) many from a
 * JSON-lines file through PUSHB (cmd_push_file.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/timeutil.h"
#include "policy/duration.h"
#include "policy/policy.h"

static const char push_usage[] =
    "usage: rebound push JOBTYPE [ARGS_JSON] [options]\n"
    "       rebound push --file JOBS.jsonl [--batch N] [--url URL] [--json]\n"
    "Pushes one job (ARGS_JSON is a JSON array, default []), or every line of a\n"
    "JSON-lines file (one job object per line, '-' = stdin) in PUSHB batches.\n"
    "options:\n"
    "  --queue Q         queue (default \"default\")\n"
    "  --at T            run at T: RFC 3339 time, or a delay from now (30s, +5m, 1h30m)\n"
    "  --policy SPEC     the job's retry_policy: JSON object, 'ftl:10 5s 1m', 'faktory:N'\n"
    "  --retry N         Faktory's retry bound (-1 dead on failure, 0 discard)\n"
    "  --priority N      1-9, higher first\n"
    "  --reserve-for S   reservation in seconds (1-86400)\n"
    "  --jid J           job id (default: 24 random hex digits)\n"
    "  --custom JSON     the job's custom object\n"
    "  --batch N         jobs per PUSHB with --file (default 1000)\n"
    "  --url URL         server (default $FAKTORY_URL, $REBOUND_URL, tcp://127.0.0.1:7419)\n"
    "  --json            print {\"jid\": ...} (or the import summary) as JSON\n"
    "exit: 0 pushed, 1 server unreachable or failed, 2 bad usage or job rejected\n";

enum {
    OPT_QUEUE = 0x200, OPT_AT, OPT_POLICY, OPT_RETRY, OPT_PRIORITY, OPT_RESERVE, OPT_JID,
    OPT_CUSTOM, OPT_FILE, OPT_BATCH,
};

/* Parses a whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* --at: an RFC 3339 time, or a delay from now ("30s", "+5m"). */
static int parse_at(const char *s, char out[RB_TIME_STRLEN])
{
    int64_t ms;
    if (rb_time_parse_rfc3339(s, &ms) == 0) {
        rb_time_format(ms, out);
        return 0;
    }
    int64_t d;
    if (rb_duration_parse(*s == '+' ? s + 1 : s, &d, NULL) != 0 || d < 0)
        return -1;
    rb_time_format(rb_now_ms() + d, out);
    return 0;
}

int cmd_push(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_OPTIONS,
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"at", required_argument, NULL, OPT_AT},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"retry", required_argument, NULL, OPT_RETRY},
        {"priority", required_argument, NULL, OPT_PRIORITY},
        {"reserve-for", required_argument, NULL, OPT_RESERVE},
        {"jid", required_argument, NULL, OPT_JID},
        {"custom", required_argument, NULL, OPT_CUSTOM},
        {"file", required_argument, NULL, OPT_FILE},
        {"batch", required_argument, NULL, OPT_BATCH},
        {NULL, 0, NULL, 0},
    };
    cli_common co = {0};
    const char *queue = NULL, *at = NULL, *policy = NULL, *jid = NULL, *custom = NULL;
    const char *file = NULL;
    long long retry = 0, priority = 0, reserve = 0, batch = 1000;
    int has_retry = 0, has_priority = 0, has_reserve = 0;
    int opt;
    cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(&co, opt, optarg))
            continue;
        switch (opt) {
        case 'h':
        case CLI_OPT_HELP: fputs(push_usage, stdout); return CLI_OK;
        case OPT_QUEUE: queue = optarg; break;
        case OPT_AT: at = optarg; break;
        case OPT_POLICY: policy = optarg; break;
        case OPT_JID: jid = optarg; break;
        case OPT_CUSTOM: custom = optarg; break;
        case OPT_FILE: file = optarg; break;
        case OPT_RETRY:
            if (parse_int(optarg, -1, 1000000, &retry))
                return cli_error(CLI_USAGE, "push: --retry '%s' must be an integer >= -1",
                                 optarg);
            has_retry = 1;
            break;
        case OPT_PRIORITY:
            if (parse_int(optarg, 1, 9, &priority))
                return cli_error(CLI_USAGE, "push: --priority '%s' must be 1-9", optarg);
            has_priority = 1;
            break;
        case OPT_RESERVE:
            if (parse_int(optarg, 1, 86400, &reserve))
                return cli_error(CLI_USAGE, "push: --reserve-for '%s' must be 1-86400 seconds",
                                 optarg);
            has_reserve = 1;
            break;
        case OPT_BATCH:
            if (parse_int(optarg, 1, 100000, &batch))
                return cli_error(CLI_USAGE, "push: --batch '%s' must be 1-100000", optarg);
            break;
        default: return cli_bad_option("push", opt, argv);
        }
    }
    if (file) {
        if (optind < argc)
            return cli_error(CLI_USAGE, "push: --file takes no JOBTYPE (got '%s')",
                             argv[optind]);
        return cli_push_file(&co, file, (size_t)batch);
    }
    if (optind >= argc)
        return cli_error(CLI_USAGE, "push: missing JOBTYPE (see 'rebound push --help')");
    if (argc - optind > 2)
        return cli_error(CLI_USAGE, "push: unexpected argument '%s'", argv[optind + 2]);
    const char *jobtype = argv[optind];
    if (!*jobtype)
        return cli_error(CLI_USAGE, "push: JOBTYPE must not be empty");

    json_t *job = json_object();
    int code = CLI_USAGE;
    json_error_t jerr;
    json_object_set_new(job, "jobtype", json_string(jobtype));
    json_t *args = optind + 1 < argc ? json_loads(argv[optind + 1], JSON_DECODE_ANY, &jerr)
                                     : json_array();
    if (!json_is_array(args)) {
        json_decref(args);
        cli_error(CLI_USAGE, "push: ARGS_JSON '%s' must be a JSON array", argv[optind + 1]);
        goto out;
    }
    json_object_set_new(job, "args", args);
    if (queue)
        json_object_set_new(job, "queue", json_string(queue));
    if (at) {
        char t[RB_TIME_STRLEN];
        if (parse_at(at, t)) {
            cli_error(CLI_USAGE, "push: --at '%s' must be an RFC 3339 time or a delay like 30s",
                      at);
            goto out;
        }
        json_object_set_new(job, "at", json_string(t));
    }
    if (policy) {
        rb_policy p;
        rb_err perr = {0};
        if (rb_policy_parse_spec(policy, NULL, &p, &perr) != 0) {
            cli_error(CLI_USAGE, "push: --policy '%s': %s", policy, rb_err_msg(&perr));
            goto out;
        }
        rb_policy_release(&p);
        json_t *pv = policy[strspn(policy, " \t")] == '{' ? json_loads(policy, 0, &jerr)
                                                           : json_string(policy);
        json_object_set_new(job, "retry_policy", pv ? pv : json_string(policy));
    }
    if (has_retry)
        json_object_set_new(job, "retry", json_integer(retry));
    if (has_priority)
        json_object_set_new(job, "priority", json_integer(priority));
    if (has_reserve)
        json_object_set_new(job, "reserve_for", json_integer(reserve));
    if (jid) {
        if (strlen(jid) < 8) {
            cli_error(CLI_USAGE, "push: --jid '%s' must have at least 8 characters", jid);
            goto out;
        }
        json_object_set_new(job, "jid", json_string(jid));
    }
    if (custom) {
        json_t *cv = json_loads(custom, 0, &jerr);
        if (!json_is_object(cv)) {
            json_decref(cv);
            cli_error(CLI_USAGE, "push: --custom '%s' must be a JSON object", custom);
            goto out;
        }
        json_object_set_new(job, "custom", cv);
    }

    rb_client *c;
    code = cli_connect(&co, &c);
    if (code != CLI_OK)
        goto out;
    rb_err err = {0};
    int rc = rb_client_push_json(c, job, &err);
    rb_client_close(c);
    if (rc) {
        code = cli_call_error("push", rc, &err, 1);
        goto out;
    }
    const char *the_jid = json_string_value(json_object_get(job, "jid"));
    if (co.json) {
        json_t *res = json_pack("{s:s}", "jid", the_jid);
        cli_print_json(res);
        json_decref(res);
    } else {
        printf("pushed %s (%s, queue %s%s%s)\n", the_jid, jobtype, queue ? queue : "default",
               at ? ", at " : "",
               at ? json_string_value(json_object_get(job, "at")) : "");
    }
    code = CLI_OK;
out:
    json_decref(job);
    return code;
}
