/* `rebound`: one binary, one table of subcommands. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/version.h"

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("rebound %s (protocol: Faktory %s)\n", RB_VERSION, RB_FAKTORY_VERSION);
    return CLI_OK;
}

static int cmd_help(int argc, char **argv);

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"policy", cmd_policy, "check or simulate a retry policy (any dialect)"},
    {"config", cmd_config, "validate and print the effective configuration"},
    {"cron", cmd_cron, "list the [[cron]] entries of a config file with their next run times"},
    {"push", cmd_push, "push a job, or import a JSON-lines file of jobs"},
    {"info", cmd_info, "show the server's queues, sets and totals"},
    {"jobs", cmd_jobs, "list jobs by state, queue and job type"},
    {"job", cmd_job, "show one job with its attempt history and next retry"},
    {"workflow", cmd_workflow, "show the workflow (job dependencies) a job belongs to"},
    {"batch", cmd_batch, "show a batch: counts, callbacks and member jobs"},
    {"batches", cmd_batches, "list the open batches (--all: the finished ones too)"},
    {"retry", cmd_retry, "enqueue a scheduled, retrying or dead job now"},
    {"kill", cmd_kill, "move a scheduled or retrying job to dead"},
    {"discard", cmd_discard, "delete a scheduled, retrying or dead job"},
    {"queue", cmd_queue, "pause, resume or remove queues; show latency"},
    {"groups", cmd_groups, "list a queue's groups (or count every queue's): limits, holds, pauses"},
    {"group", cmd_group, "show a group, set its limits, pause or resume it"},
    {"serve", cmd_serve, "run the job server"},
    {"migrate", cmd_migrate, "create or upgrade the PostgreSQL schema (distributed mode)"},
    {"backup", cmd_backup, "copy a running single node's database into a new file"},
    {"restore", cmd_restore, "check a backup and install it as a stopped server's database"},
    {"export", cmd_export, "write every job and the counters as JSON lines (server stopped)"},
    {"import", cmd_import, "load a `rebound export` file into SQLite or PostgreSQL"},
    {"version", cmd_version, "print the version"},
    {"help", cmd_help, "show this list"},
};

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("usage: rebound <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("  %-10s %s\n", commands[i].name, commands[i].summary);
    printf("\nrun 'rebound <command> --help' for a command's options\n");
    return CLI_OK;
}

void cli_print_json(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s) {
        puts(s);
        free(s);
    }
}

int cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("rebound: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_isatty_out(void)
{
    return isatty(STDOUT_FILENO);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cmd_help(0, NULL);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return cmd_help(0, NULL);
    if (!strcmp(argv[1], "--version"))
        return cmd_version(0, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    return cli_error(CLI_USAGE, "unknown command '%s' (see 'rebound help')", argv[1]);
}
