/* `rebound retry|kill|discard JID`: looks the job up with JOB, then moves it
 * with MUTATE (requeue, kill, discard) filtered to its jid, from the set it is
 * in (scheduled, retries or dead), and says where a retried job went (a
 * workflow's job may go back under its parents, docs/workflows.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"

typedef struct action {
    const char *name;  /* the subcommand */
    const char *cmd;   /* MUTATE's cmd */
    const char *done;  /* past tense for the report */
    const char *help;
} action;

static const action actions[] = {
    {"retry", "requeue", "enqueued",
     "enqueue it now (from scheduled, retries or dead; a dead job whose\n"
     "parents hold it goes back to waiting or blocked under them)"},
    {"kill", "kill", "moved to dead", "move it to dead (from scheduled or retries)"},
    {"discard", "discard", "discarded", "delete it (from scheduled, retries or dead)"},
};

/* A retried job held by its parents again: what it waits for, and for a
 * blocked one the jobs to retry for it to run (the workflow's advice). */
static void print_held(rb_client *c, const char *jid, const char *was, const json_t *job)
{
    const char *st = json_string_value(json_object_get(job, "state"));
    rb_buf b = RB_BUF_INIT;
    const json_t *w = json_object_get(job, "waits_for");
    size_t i;
    json_t *p;
    json_array_foreach((json_t *)w, i, p)
        rb_buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(p));
    printf("job %s %s (was %s): it waits for its parents again (%s)\n", jid, st, was,
           rb_buf_str(&b));
    rb_buf_release(&b);
    const char *by = json_string_value(json_object_get(job, "blocked_by"));
    json_t *g = NULL;
    rb_err err = {0};
    const json_t *n = by && rb_client_workflow(c, jid, &g, &err) == 0 && g
                          ? cli_workflow_node(g, jid) : NULL;
    if (n) {
        rb_buf a = RB_BUF_INIT;
        cli_retry_advice(json_object_get(n, "retry"), NULL, &a);
        printf("blocked by %s, which is dead: to run this job, %s\n", by, rb_buf_str(&a));
        rb_buf_release(&a);
    } else if (by) {
        printf("blocked by %s, which is dead: retry it to run this job (rebound retry %s)\n", by,
               by);
    }
    json_decref(g);
}

static int run(const action *a, int argc, char **argv)
{
    char usage[512];
    snprintf(usage, sizeof usage,
             "usage: rebound %s JID [--url URL] [--json]\n"
             "Finds the job and %s.\n"
             "exit: 0 done, 1 not found, not movable or server unreachable, 2 bad usage\n",
             a->name, a->help);
    cli_common co = {0};
    int prc = cli_parse_common_only(a->name, usage, argc, argv, &co);
    if (prc >= 0)
        return prc;
    if (optind >= argc)
        return cli_error(CLI_USAGE, "%s: missing JID (see 'rebound %s --help')", a->name,
                         a->name);
    if (argc - optind > 1)
        return cli_error(CLI_USAGE, "%s: unexpected argument '%s'", a->name, argv[optind + 1]);
    const char *jid = argv[optind];

    rb_client *c;
    int cc = cli_connect(&co, &c);
    if (cc != CLI_OK)
        return cc;
    int code = CLI_OK;
    json_t *res = NULL;
    rb_err err = {0};
    int rc = rb_client_job(c, jid, &res, &err);
    if (rc) {
        code = cli_call_error(a->name, rc, &err, 0);
        goto out;
    }
    if (!res) {
        code = cli_error(CLI_FAIL, "%s: job '%s' not found", a->name, jid);
        goto out;
    }
    const char *state = json_string_value(json_object_get(res, "state"));
    if (!state)
        state = "?";
    if (strcmp(state, "scheduled") && strcmp(state, "retries") && strcmp(state, "dead")) {
        code = cli_error(CLI_FAIL,
                         "%s: job '%s' is %s; only scheduled, retries and dead jobs can be "
                         "changed",
                         a->name, jid, state);
        goto out;
    }
    if (!strcmp(a->cmd, "kill") && !strcmp(state, "dead")) {
        code = cli_error(CLI_FAIL, "kill: job '%s' is already dead", jid);
        goto out;
    }
    const char *jids[] = {jid};
    rb_mutate m = {.cmd = a->cmd, .target = state, .jids = jids, .njids = 1};
    rc = rb_client_mutate(c, &m, &err);
    if (rc) {
        code = cli_call_error(a->name, rc, &err, 0);
        goto out;
    }
    /* where it went: a retried job of a workflow may be held by its parents */
    json_t *now = NULL;
    const char *st = NULL;
    if (!strcmp(a->cmd, "requeue") && rb_client_job(c, jid, &now, &err) == 0 && now)
        st = json_string_value(json_object_get(now, "state"));
    if (co.json) {
        json_t *j = json_pack("{s:s, s:s, s:s}", "jid", jid, "was", state, "action", a->cmd);
        if (st)
            json_object_set_new(j, "state", json_string(st));
        cli_print_json(j);
        json_decref(j);
    } else if (st && (!strcmp(st, "waiting") || !strcmp(st, "blocked"))) {
        print_held(c, jid, state, now);
    } else {
        printf("job %s %s (was %s)\n", jid, a->done, state);
    }
    json_decref(now);
out:
    json_decref(res);
    rb_client_close(c);
    return code;
}

int cmd_retry(int argc, char **argv)
{
    return run(&actions[0], argc, argv);
}

int cmd_kill(int argc, char **argv)
{
    return run(&actions[1], argc, argv);
}

int cmd_discard(int argc, char **argv)
{
    return run(&actions[2], argc, argv);
}
