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
    "children is marked '!'. Parents known only as succeeded or no longer\n"
    "known show as such. --json prints the server's graph (nodes, edges).\n"
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

static void print_graph(const json_t *g)
{
    const json_t *nodes = json_object_get(g, "nodes");
    size_t n_edges = json_array_size(json_object_get(g, "edges"));
    printf("workflow of %s: %zu jobs, %zu edges%s\n\n",
           json_string_value(json_object_get(g, "jid")), json_array_size(nodes), n_edges,
           json_is_true(json_object_get(g, "truncated")) ? " (truncated)" : "");
    printf("%-5s  %-1s %-24s  %-9s  %-16s  %5s  %s\n", "LAYER", "", "JID", "STATE", "JOBTYPE",
           "TRIES", "WAITS FOR");
    bool any_blocking = false;
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)nodes, i, x) {
        const char *jt = json_string_value(json_object_get(x, "jobtype"));
        const json_t *att = json_object_get(x, "attempts");
        char tries[24] = "-";
        if (json_is_integer(att))
            snprintf(tries, sizeof tries, "%lld", (long long)json_integer_value(att));
        bool blocking = json_is_true(json_object_get(x, "blocking"));
        any_blocking |= blocking;
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
    if (any_blocking)
        printf("\n! dead parent blocking its children: retry it (rebound retry JID) to "
               "unblock them\n");
    if (json_is_true(json_object_get(g, "truncated")))
        printf("\nshowing the first %lld jobs found\n",
               (long long)json_integer_value(json_object_get(g, "max_nodes")));
}

int cmd_workflow(int argc, char **argv)
{
    return cli_show_one("workflow", workflow_usage, "JID", argc, argv, rb_client_workflow, print_graph,
                        "job '%s' not found (done and discarded jobs are deleted)");
}
