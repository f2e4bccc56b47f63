/* `rebound workflow JID`: the workflow a job belongs to (WORKFLOW), as a
 * table of its jobs in layer order with what each waits for, the dead
 * parents that block their children marked. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"

static const char workflow_usage[] =
    "usage: rebound workflow JID [--url URL] [--json]\n"
    "Shows the workflow (job dependencies) JID belongs to: every job linked\n"
    "to it by depends_on, parents before children, with its state, attempts\n"
    "and the parents it still waits for. A dead parent that blocks its\n"
    "children is marked '!', and below the table each dead job that blocks\n"
    "others or was killed by its dependency is named with the jobs to retry\n"
    "for it to run. Jobs known only as succeeded or no longer known show as\n"
    "such. --json prints the server's graph (nodes, edges).\n"
    "exit: 0 shown, 1 not found or server unreachable, 2 bad usage\n";

/* The comma-separated jids of a JSON array into b, "-" when empty. */
static void join(const json_t *a, rb_buf *b)
{
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)a, i, s) {
        if (i)
            rb_buf_adds(b, ",");
        rb_buf_adds(b, json_string_value(s) ? json_string_value(s) : "?");
    }
    if (!json_array_size(a))
        rb_buf_adds(b, "-");
}

const json_t *cli_workflow_node(const json_t *g, const char *jid)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(g, "nodes"), i, n) {
        const char *j = json_string_value(json_object_get(n, "jid"));
        if (j && !strcmp(j, jid))
            return n;
    }
    return NULL;
}

void cli_retry_advice(const json_t *retry, const char *self, rb_buf *b)
{
    size_t n = json_array_size(retry);
    if (!n)
        return;
    const char *only = json_string_value(json_array_get(retry, 0));
    if (n == 1 && self && only && !strcmp(only, self)) {
        rb_buf_printf(b, "retry it (rebound retry %s)", self);
        return;
    }
    rb_buf_adds(b, "retry ");
    for (size_t i = 0; i < n; i++)
        rb_buf_printf(b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                      json_string_value(json_array_get(retry, i)));
    rb_buf_adds(b, " (");
    for (size_t i = 0; i < n; i++)
        rb_buf_printf(b, "%srebound retry %s", i ? "; " : "",
                      json_string_value(json_array_get(retry, i)));
    rb_buf_adds(b, ")");
}

/* The footer's advice: each dead job that blocks others or was killed by
 * its dependency, with the jobs that actually have to be retried. */
static void print_advice(const json_t *nodes)
{
    size_t i;
    json_t *x;
    bool first = true;
    json_array_foreach((json_t *)nodes, i, x) {
        const char *jid = json_string_value(json_object_get(x, "jid"));
        const char *st = json_string_value(json_object_get(x, "state"));
        const char *killer = json_string_value(json_object_get(x, "killed_by"));
        bool blocking = json_is_true(json_object_get(x, "blocking"));
        if (!st || strcmp(st, "dead") || (!killer && !blocking))
            continue;
        rb_buf b = RB_BUF_INIT;
        if (killer)
            rb_buf_printf(&b, "%s was killed when its parent %s died", jid, killer);
        else
            rb_buf_printf(&b, "%s is dead", jid);
        rb_buf_adds(&b, blocking ? killer ? ", and blocks its children: to unblock them, "
                                          : " and blocks its children: to unblock them, "
                                 : ": to run it, ");
        cli_retry_advice(json_object_get(x, "retry"), jid, &b);
        printf("%s! %s\n", first ? "\n" : "", rb_buf_str(&b));
        first = false;
        rb_buf_release(&b);
    }
}

static void print_graph(const json_t *g)
{
    const json_t *nodes = json_object_get(g, "nodes");
    size_t n_edges = json_array_size(json_object_get(g, "edges"));
    printf("workflow of %s: %zu jobs, %zu edges%s\n\n",
           json_string_value(json_object_get(g, "jid")), json_array_size(nodes), n_edges,
           json_is_true(json_object_get(g, "truncated")) ? " (truncated)" : "");
    printf("%-5s  %-1s %-24s  %-9s  %-16s  %5s  %s\n", "LAYER", "", "JID", "STATE", "JOBTYPE",
           "TRIES", "WAITS FOR");
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)nodes, i, x) {
        const char *jt = json_string_value(json_object_get(x, "jobtype"));
        const json_t *att = json_object_get(x, "attempts");
        char tries[24] = "-";
        if (json_is_integer(att))
            snprintf(tries, sizeof tries, "%lld", (long long)json_integer_value(att));
        bool blocking = json_is_true(json_object_get(x, "blocking"));
        rb_buf w = RB_BUF_INIT;
        join(json_object_get(x, "waits_for"), &w);
        const char *by = json_string_value(json_object_get(x, "blocked_by"));
        if (by)
            rb_buf_printf(&w, " (blocked by %s)", by);
        printf("%5lld  %-1s %-24s  %-9s  %-16s  %5s  %s\n",
               (long long)json_integer_value(json_object_get(x, "layer")), blocking ? "!" : "",
               json_string_value(json_object_get(x, "jid")),
               json_string_value(json_object_get(x, "state")), jt ? jt : "-", tries,
               rb_buf_str(&w));
        rb_buf_release(&w);
    }
    print_advice(nodes);
    if (json_is_true(json_object_get(g, "truncated")))
        printf("\nshowing the first %lld jobs found\n",
               (long long)json_integer_value(json_object_get(g, "max_nodes")));
}

int cmd_workflow(int argc, char **argv)
{
    return cli_show_one("workflow", workflow_usage, "JID", argc, argv, rb_client_workflow, print_graph,
                        "job '%s' not found (done and discarded jobs are deleted)");
}
