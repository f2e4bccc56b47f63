/* What the client subcommands (push, info, jobs, job, retry, kill, discard,
 * queue) share: their common options, connecting, reporting call errors and
 * printing times. */
#ifndef RB_CLI_CMD_CLIENT_H
#define RB_CLI_CMD_CLIENT_H

#include <stdint.h>

#include <jansson.h>

#include "rebound/client.h"

/* Options every client subcommand takes. */
typedef struct cli_common {
    const char *url; /* --url, else NULL (the environment's) */
    int json;        /* --json */
    int timeout_ms;  /* per reply; 0: the client's default (set by the command) */
} cli_common;

/* Long-option entries for --url, --json and --help, to splice into a
 * getopt_long table; the values returned are these. */
enum { CLI_OPT_URL = 0x100, CLI_OPT_JSON, CLI_OPT_HELP };
#define CLI_COMMON_OPTIONS                                 \
    {"url", required_argument, NULL, CLI_OPT_URL},         \
    {"json", no_argument, NULL, CLI_OPT_JSON},             \
    {"help", no_argument, NULL, CLI_OPT_HELP}

/* Handles one of the common options in a getopt_long loop: returns 1 when opt
 * was one (and stored it), 0 otherwise. */
int cli_common_opt(cli_common *co, int opt, const char *arg);

/* Connects to co->url (or the environment's URL) into *out. Returns CLI_OK,
 * or prints the reason (naming the address) and returns the exit code:
 * CLI_USAGE for a malformed URL, CLI_FAIL otherwise. */
int cli_connect(const cli_common *co, rb_client **out);

/* Prints a failed call's message with context and returns the exit code:
 * CLI_USAGE when the server rejected the request as bad input and
 * bad_input_is_usage is set, CLI_FAIL otherwise. */
int cli_call_error(const char *what, int rc, const rb_err *err, int bad_input_is_usage);

/* A time as a job field holds it (RFC 3339 text, or epoch seconds/ms as a
 * number) in milliseconds; 0 when absent or unreadable. */
int64_t cli_json_time_ms(const json_t *v);

/* Writes "2026-11-21 10:00:00Z (in 4s)" / "(5m ago)" for ms into out (n bytes);
 * "-" when ms is 0. Returns out. */
char *cli_format_when(int64_t ms, char *out, size_t n);

/* Shortens s into out (n bytes) with "..." when it is longer than n-1. */
char *cli_ellipsize(const char *s, char *out, size_t n);

/* getopt_long wrapper setup: resets the parser for a fresh argv. Use an
 * optstring starting with ':' so a missing value returns ':'. */
void cli_getopt_reset(void);

/* Reports the option getopt_long() just refused (opt '?' or ':') for cmd and
 * returns CLI_USAGE. */
int cli_bad_option(const char *cmd, int opt, char **argv);

/* Parses the options of a command that takes only the common ones. Returns
 * -1 when the caller should go on (positional arguments from optind on), or
 * the exit code to return: CLI_OK after printing usage for --help,
 * CLI_USAGE after reporting a bad option. */
int cli_parse_common_only(const char *cmd, const char *usage, int argc, char **argv,
                          cli_common *co);

/* A command that shows one thing by its id (`rebound job JID`, `rebound
 * workflow JID`): the common options, exactly one ID argument, one client
 * call (fetch: 0 with *out NULL when there is no such thing), then the
 * JSON (--json) or print(out). missing is the message for no such id (a
 * printf format taking the id). Returns the exit code. */
int cli_show_one(const char *cmd, const char *usage, const char *id_name, int argc, char **argv,
                 int (*fetch)(rb_client *c, const char *id, json_t **out, rb_err *err),
                 void (*print)(const json_t *v), const char *missing);

/* The workflow (WORKFLOW's graph) advice on what to retry (cmd_workflow.c,
 * docs/workflows.md): jid's node in graph g (NULL: none), and the phrase
 * for a node's "retry" list into b: "retry P and X (rebound retry P;
 * rebound retry X)", or "retry it (rebound retry X)" when the list is self
 * alone. Nothing is added for an empty list. */
const json_t *cli_workflow_node(const json_t *g, const char *jid);
struct rb_buf;
void cli_retry_advice(const json_t *retry, const char *self, struct rb_buf *b);

/* `rebound push --file PATH` ('-' = stdin): PUSHB in batches of at most
 * batch jobs; returns the exit code (cmd_push_file.c). */
int cli_push_file(const cli_common *co, const char *path, size_t batch);

#endif
