/* `rebound serve`: the Faktory-compatible job server. One event loop thread
 * owns the protocol and every in-memory index; one writer thread commits to
 * the store in groups. docs/design.md explains the architecture. */
#ifndef RB_SERVER_SERVER_H
#define RB_SERVER_SERVER_H

#include "common/error.h"

typedef struct rb_server_opts {
    const char *config_path; /* NULL: built-in defaults */
    const char *env;         /* config overlay name, or NULL; used as given (the CLI
                              * resolves --env/$REBOUND_ENV with rb_config_env_name) */
    const char *listen;      /* overrides server.listen; port 0 = any free port */
    const char *db;          /* overrides storage.url */
    const char *log_level;   /* debug|info|warn|error, NULL = info */
    const char *port_file;   /* written with the bound port once listening */
    const char *http_listen; /* overrides server.http_listen; "off": no HTTP */
    const char *http_port_file; /* written with the bound HTTP port */
} rb_server_opts;

/* Runs the server until SIGTERM/SIGINT. Returns 0 after a clean shutdown, or
 * a negative code with err set when it cannot start (bad config, address in
 * use, database unreadable). */
int rb_server_run(const rb_server_opts *opts, rb_err *err);

#endif
