/* The `rebound` command line: one entry point per subcommand, and the few
 * helpers they share. Exit codes: 0 success, 1 runtime failure (server
 * unreachable, job not found, I/O), 2 bad usage or bad input. */
#ifndef RB_CLI_CLI_H
#define RB_CLI_CLI_H

#include <stdio.h>

#include <jansson.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Each subcommand: argv[0] is the subcommand's name. Returns the exit code. */
int cmd_policy(int argc, char **argv);
int cmd_serve(int, char **);
int cmd_config(int argc, char **argv);
int cmd_cron(int argc, char **argv); /* cmd_cron.c */
/* Client commands (cmd_client.c, cmd_push*.c, cmd_jobs.c, cmd_mutate.c, cmd_queue.c). */
int cmd_push(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_workflow(int argc, char **argv); /* cmd_workflow.c */
int cmd_batch(int argc, char **argv);    /* cmd_batch.c */
int cmd_batches(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_discard(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_groups(int argc, char **argv); /* cmd_group.c */
int cmd_group(int argc, char **argv);
/* Distributed mode's PostgreSQL schema (cmd_migrate.c). */
int cmd_migrate(int, char **);
/* Moving jobs between databases (cmd_export.c). */
int cmd_export(int, char **);
int cmd_import(int, char **);
/* A single node's database: backup (asks the server) and restore (cmd_backup.c). */
int cmd_backup(int argc, char **argv);
int cmd_restore(int argc, char **argv);

/* Loads the configuration a subcommand reads: file (NULL: defaults only) and
 * the overlay of the environment rb_config_env_name(env_flag) resolves
 * (--env, else $REBOUND_ENV). Every subcommand that reads the config goes
 * through here or, for `serve`, through rb_config_env_name itself, so they
 * all read the same files. Returns CLI_OK with *cfg filled (release it), or
 * prints the one-line error (prefixed "what: " when what is non-NULL) and
 * returns CLI_FAIL for an unreadable file, CLI_USAGE for a bad one, *cfg
 * released. (cmd_config.c) */
struct rb_config;
int cli_load_config(struct rb_config *cfg, const char *what, const char *file,
                    const char *env_flag);

/* Prints "rebound: <message>" to stderr; returns code. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints v as one line of compact JSON and a newline on stdout: every
 * --json output goes through here (docs/cli.md promises one line). */
void cli_print_json(const json_t *v);

/* True when stdout is a terminal (for colour, bars and progress output). */
int cli_isatty_out(void);

#endif
