/* `rebound jobs` (a listing by state, queue and job type) and `rebound job JID`
 * (one job with its attempt history and next retry). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"
#include "engine/failure.h"
#include "policy/duration.h"

/* Every state a listing shows, in its order: Faktory's, then the jobs a
 * workflow holds (docs/workflows.md). */
static const char *const all_states[] = {"enqueued", "scheduled", "working", "retries",
                                         "dead",     "waiting",   "blocked"};
#define NSTATES (sizeof all_states / sizeof all_states[0])

static const char jobs_usage[] =
    "usage: rebound jobs [--state S] [--queue Q] [--jobtype T] [--errtype E]\n"
    "                    [--limit N] [--offset N] [--url URL] [--json]\n"
    "Lists jobs. S is enqueued, scheduled, working, retries, dead, waiting or\n"
    "blocked (a workflow's jobs held by their parents); without --state every\n"
    "state is listed (--limit then applies to each state).\n"
    "--limit defaults to 50. --json prints {\"total\": N, \"jobs\": [...]}.\n"
    "exit: 0 listed, 1 server unreachable or failed, 2 bad usage\n";

enum { OPT_STATE = 0x300, OPT_QUEUE, OPT_JOBTYPE, OPT_ERRTYPE, OPT_LIMIT, OPT_OFFSET };

static int valid_state(const char *s)
{
    for (size_t i = 0; i < NSTATES; i++)
        if (!strcmp(s, all_states[i]))
            return 1;
    return 0;
}

/* The time that matters for a job in state: when it runs next, when it was
 * enqueued or failed, or when a held one (waiting, blocked) was created. */
static int64_t when_ms(const char *state, const json_t *job)
{
    const json_t *failure = json_object_get(job, "failure");
    if (!strcmp(state, "scheduled"))
        return cli_json_time_ms(json_object_get(job, "at"));
    if (!strcmp(state, "retries")) {
        int64_t t = cli_json_time_ms(json_object_get(failure, "next_at"));
        return t ? t : cli_json_time_ms(json_object_get(job, "at"));
    }
    if (!strcmp(state, "dead"))
        return cli_json_time_ms(json_object_get(failure, "failed_at"));
    if (!strcmp(state, "waiting") || !strcmp(state, "blocked"))
        return cli_json_time_ms(json_object_get(job, "created_at"));
    return cli_json_time_ms(json_object_get(job, "enqueued_at"));
}

/* One JOBS entry {"state", "job", "attempts"?}. */
static void print_row(const json_t *entry)
{
    char when[96], args[48];
    const char *state = json_string_value(json_object_get(entry, "state"));
    const json_t *job = json_object_get(entry, "job");
    if (!state)
        state = "?";
    char *a = json_dumps(json_object_get(job, "args"), JSON_COMPACT | JSON_ENCODE_ANY);
    const json_t *failure = json_object_get(job, "failure");
    const json_t *att = json_object_get(entry, "attempts");
    json_int_t tries = json_is_integer(att) ? json_integer_value(att)
                       : failure ? json_integer_value(json_object_get(failure, "retry_count")) + 1
                                 : 0;
    const char *jt = json_string_value(json_object_get(job, "jobtype"));
    const char *q = json_string_value(json_object_get(job, "queue"));
    printf("%-9s  %-24s  %-16s  %-10s  %5lld  %-38s  %s\n", state,
           json_string_value(json_object_get(job, "jid")), jt ? jt : "?",
           q ? q : "default", (long long)tries,
           cli_format_when(when_ms(state, job), when, sizeof when),
           cli_ellipsize(a ? a : "", args, sizeof args));
    free(a);
}

int cmd_jobs(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_OPTIONS,
        {"state", required_argument, NULL, OPT_STATE},
        {"queue", required_argument, NULL, OPT_QUEUE},
        {"jobtype", required_argument, NULL, OPT_JOBTYPE},
        {"errtype", required_argument, NULL, OPT_ERRTYPE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {NULL, 0, NULL, 0},
    };
    cli_common co = {0};
    rb_jobs_query q = {.limit = 50};
    int opt;
    cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (cli_common_opt(&co, opt, optarg))
            continue;
        char *end;
        switch (opt) {
        case 'h':
        case CLI_OPT_HELP: fputs(jobs_usage, stdout); return CLI_OK;
        case OPT_STATE:
            if (!valid_state(optarg))
                return cli_error(CLI_USAGE,
                                 "jobs: --state '%s' must be enqueued, scheduled, working, "
                                 "retries, dead, waiting or blocked",
                                 optarg);
            q.state = optarg;
            break;
        case OPT_QUEUE: q.queue = optarg; break;
        case OPT_JOBTYPE: q.jobtype = optarg; break;
        case OPT_ERRTYPE: q.errtype = optarg; break;
        case OPT_LIMIT:
            q.limit = strtoll(optarg, &end, 10);
            if (!*optarg || *end || q.limit < 1 || q.limit > 100000)
                return cli_error(CLI_USAGE, "jobs: --limit '%s' must be 1-100000", optarg);
            break;
        case OPT_OFFSET:
            q.offset = strtoll(optarg, &end, 10);
            if (!*optarg || *end || q.offset < 0)
                return cli_error(CLI_USAGE, "jobs: --offset '%s' must be >= 0", optarg);
            break;
        default: return cli_bad_option("jobs", opt, argv);
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "jobs: unexpected argument '%s'", argv[optind]);
    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    json_t *all = json_pack("{s:I, s:[]}", "total", (json_int_t)0, "jobs");
    json_t *list = json_object_get(all, "jobs");
    json_int_t total = 0;
    int code = CLI_OK;
    for (size_t i = 0; i < NSTATES; i++) {
        if (q.state && strcmp(q.state, all_states[i]))
            continue;
        rb_jobs_query one = q;
        one.state = all_states[i];
        json_t *res = NULL;
        rb_err err = {0};
        int rc = rb_client_jobs(c, &one, &res, &err);
        if (rc) {
            code = cli_call_error("jobs", rc, &err, 0);
            break;
        }
        total += json_integer_value(json_object_get(res, "total"));
        json_array_extend(list, json_object_get(res, "jobs"));
        json_decref(res);
    }
    rb_client_close(c);
    if (code == CLI_OK) {
        json_object_set_new(all, "total", json_integer(total));
        if (co.json) {
            cli_print_json(all);
        } else if (json_array_size(list) == 0) {
            printf("no jobs\n");
        } else {
            printf("%-9s  %-24s  %-16s  %-10s  %5s  %-38s  %s\n", "STATE", "JID", "JOBTYPE",
                   "QUEUE", "TRIES", "WHEN", "ARGS");
            size_t i;
            json_t *e;
            json_array_foreach(list, i, e)
                print_row(e);
            printf("%zu shown of %lld\n", json_array_size(list), (long long)total);
        }
    }
    json_decref(all);
    return code;
}

/* ---- rebound job JID --------------------------------------------------- */

static const char job_usage[] =
    "usage: rebound job JID [--url URL] [--json]\n"
    "Shows one job: its state, fields, every failed attempt (when, error,\n"
    "decision, delay and where the delay came from) and the next retry; for\n"
    "a waiting or blocked job the parents it waits for and the dead one\n"
    "blocking it, for a job killed by its dependency the parent that died,\n"
    "with the jobs to retry for it to run.\n"
    "--json prints the server's {\"state\", \"job\", \"history\", \"next_at\"}, and\n"
    "for a tracked job (custom.track) its TRACK GET record as \"progress\",\n"
    "for a blocked job or one killed by its dependency the jobs to retry as\n"
    "\"retry\" (the workflow's advice).\n"
    "exit: 0 shown, 1 not found or server unreachable, 2 bad usage\n";

static void print_field(const char *name, const char *value)
{
    printf("%-11s %s\n", name, value && *value ? value : "-");
}

/* The progress line of a tracked job (TRACK GET's record): "33% Still
 * processing... (updated TIME)"; nothing for an untracked job. */
static void print_progress(const json_t *p)
{
    const char *state = json_string_value(json_object_get(p, "state"));
    if (!state || !strcmp(state, "unknown"))
        return;
    const json_t *pct = json_object_get(p, "percent");
    const char *desc = json_string_value(json_object_get(p, "desc"));
    char when[96], line[1400];
    cli_format_when(cli_json_time_ms(json_object_get(p, "updated_at")), when, sizeof when);
    if (json_is_integer(pct))
        snprintf(line, sizeof line, "%lld%%%s%s (updated %s)", (long long)json_integer_value(pct),
                 desc ? " " : "", desc ? desc : "", when);
    else
        snprintf(line, sizeof line, "%s%s(updated %s)", desc ? desc : "no progress reported",
                 " ", when);
    print_field("progress", line);
}

/* The parent whose death killed a dead job (engine/failure.h's reading
 * of its history), or NULL; a new string. */
static char *killer_of(const json_t *res)
{
    const char *st = json_string_value(json_object_get(res, "state"));
    return st && !strcmp(st, "dead") ? rb_fail_killed_by(json_object_get(res, "history")) : NULL;
}

/* A held job's (waiting, blocked) parents not done and the dead one that
 * blocks it, as JOB gives them, and a job killed by its dependency's
 * parent (docs/workflows.md); with the workflow's advice on what to retry
 * (res's "retry", job_with_progress). */
static void print_held(const json_t *res)
{
    const char *jid = json_string_value(json_object_get(json_object_get(res, "job"), "jid"));
    const json_t *retry = json_object_get(res, "retry");
    const json_t *w = json_object_get(res, "waits_for");
    const char *by = json_string_value(json_object_get(res, "blocked_by"));
    if (json_is_array(w)) {
        rb_buf b = RB_BUF_INIT;
        size_t i;
        json_t *p;
        json_array_foreach((json_t *)w, i, p)
            rb_buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(p) ? json_string_value(p) : "?");
        print_field("waits for", rb_buf_str(&b));
        rb_buf_release(&b);
    }
    char *killer = killer_of(res);
    if (!by && !killer)
        return;
    rb_buf b = RB_BUF_INIT;
    if (by)
        rb_buf_printf(&b, "%s (dead", by);
    else
        rb_buf_printf(&b, "%s (its parent died", killer);
    if (json_array_size(retry)) {
        rb_buf_adds(&b, ": to run this job, ");
        cli_retry_advice(retry, jid, &b);
    } else if (by) { /* a server without WORKFLOW's advice */
        rb_buf_printf(&b, ": retry it to let this job wait again, rebound retry %s", by);
    }
    rb_buf_adds(&b, ")");
    print_field(by ? "blocked by" : "killed by", rb_buf_str(&b));
    rb_buf_release(&b);
    free(killer);
}

/* A history entry that records a death by a dependency: not an execution
 * (docs/workflows.md). */
static bool killed_by_dependency(const json_t *h)
{
    const char *reason = json_string_value(json_object_get(h, "reason"));
    return reason && !strcmp(reason, "dependency");
}

/* The attempts line: the executions (JOB's attempts, counted at FETCH, as
 * `rebound jobs`, `rebound workflow` and the dashboard show them) and how
 * many of them failed; a death by a dependency is no attempt. */
static const char *attempts_text(const json_t *res, char *out, size_t n)
{
    long long runs = (long long)json_integer_value(json_object_get(res, "attempts"));
    long long failed = 0;
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(res, "history"), i, h)
        failed += !killed_by_dependency(h);
    if (!failed)
        snprintf(out, n, "%lld", runs);
    else if (failed == runs)
        snprintf(out, n, "%lld, all failed", runs);
    else
        snprintf(out, n, "%lld, %lld failed", runs, failed);
    return out;
}

static void print_job(const json_t *res)
{
    const json_t *job = json_object_get(res, "job");
    const json_t *history = json_object_get(res, "history");
    char buf[128];
    print_field("jid", json_string_value(json_object_get(job, "jid")));
    print_field("state", json_string_value(json_object_get(res, "state")));
    print_held(res);
    print_field("jobtype", json_string_value(json_object_get(job, "jobtype")));
    const char *q = json_string_value(json_object_get(job, "queue"));
    print_field("queue", q ? q : "default");
    char *args = json_dumps(json_object_get(job, "args"), JSON_COMPACT | JSON_ENCODE_ANY);
    print_field("args", args);
    free(args);
    const json_t *pol = json_object_get(job, "retry_policy");
    if (!pol)
        pol = json_object_get(json_object_get(job, "custom"), "retry_policy");
    if (pol) {
        char *p = json_is_string(pol) ? NULL : json_dumps(pol, JSON_COMPACT);
        print_field("policy", p ? p : json_string_value(pol));
        free(p);
    }
    if (json_object_get(job, "retry")) {
        snprintf(buf, sizeof buf, "%lld",
                 (long long)json_integer_value(json_object_get(job, "retry")));
        print_field("retry", buf);
    }
    print_field("created", cli_format_when(cli_json_time_ms(json_object_get(job, "created_at")),
                                           buf, sizeof buf));
    if (json_object_get(job, "enqueued_at"))
        print_field("enqueued",
                    cli_format_when(cli_json_time_ms(json_object_get(job, "enqueued_at")), buf,
                                    sizeof buf));
    print_field("attempts", attempts_text(res, buf, sizeof buf));
    const json_t *next = json_object_get(res, "next_at");
    print_field("next run", json_is_null(next) || !next
                                ? "-"
                                : cli_format_when(cli_json_time_ms(next), buf, sizeof buf));
    print_progress(json_object_get(res, "progress"));
    if (json_array_size(history) == 0)
        return;
    printf("\nhistory\n  %3s  %-34s  %-8s  %-9s  %-16s  %s\n", "#", "AT", "OUTCOME", "DELAY",
           "SOURCE", "ERROR");
    size_t i;
    json_t *h;
    json_array_foreach((json_t *)history, i, h) {
        char at[96], delay[RB_DURATION_STRLEN] = "-", err[160], src[40];
        const json_t *d = json_object_get(h, "delay_ms");
        if (json_is_integer(d))
            rb_duration_format(json_integer_value(d), delay, sizeof delay);
        const char *et = json_string_value(json_object_get(h, "errtype"));
        const char *msg = json_string_value(json_object_get(h, "message"));
        snprintf(err, sizeof err, "%s: %s", et ? et : "?", msg ? msg : "");
        const char *source = json_string_value(json_object_get(h, "source"));
        const char *reason = json_string_value(json_object_get(h, "reason"));
        const char *outcome = json_string_value(json_object_get(h, "outcome"));
        /* For a stop (dead, discard) the reason says why; for a retry the source. */
        snprintf(src, sizeof src, "%s", outcome && strcmp(outcome, "retry") && reason
                                            ? reason
                                            : (source ? source : "-"));
        char num[24] = "-"; /* a death by a dependency is no attempt */
        if (!killed_by_dependency(h))
            snprintf(num, sizeof num, "%lld",
                     (long long)json_integer_value(json_object_get(h, "attempt")));
        printf("  %3s  %-34s  %-8s  %-9s  %-16s  %s\n", num,
               cli_format_when(cli_json_time_ms(json_object_get(h, "at")), at, sizeof at),
               outcome ? outcome : "?", delay, src, err);
    }
}

/* JOB, and for a tracked job TRACK GET's record as "progress" (a server
 * that refuses TRACK, as one of an earlier release in distributed mode
 * did, shows no progress); for a blocked job or one killed by its
 * dependency the jobs to retry for it to run, as "retry" (WORKFLOW's
 * advice; none from a server without it). */
static int job_with_progress(rb_client *c, const char *jid, json_t **out, rb_err *err)
{
    int rc = rb_client_job(c, jid, out, err);
    if (rc || !*out || strpbrk(jid, " \t\r\n"))
        return rc;
    const char *st = json_string_value(json_object_get(*out, "state"));
    char *killer = killer_of(*out);
    if ((st && !strcmp(st, "blocked")) || killer) {
        json_t *g = NULL;
        rb_err werr = {0};
        const json_t *n = rb_client_workflow(c, jid, &g, &werr) == 0 && g
                              ? cli_workflow_node(g, jid) : NULL;
        if (n)
            json_object_set(*out, "retry", json_object_get(n, "retry"));
        json_decref(g);
    }
    free(killer);
    rb_reply r;
    rb_err terr = {0};
    if (rb_client_callf(c, &r, &terr, "TRACK GET %s", jid) == 0 && r.type == RB_REPLY_BULK) {
        json_t *p = json_loadb(r.str, r.len, 0, NULL);
        const char *state = json_string_value(json_object_get(p, "state"));
        if (state && strcmp(state, "unknown"))
            json_object_set(*out, "progress", p);
        json_decref(p);
    }
    return 0;
}

int cmd_job(int argc, char **argv)
{
    return cli_show_one("job", job_usage, "JID", argc, argv, job_with_progress, print_job,
                        "job '%s' not found (done and discarded jobs are deleted)");
}
