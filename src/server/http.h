/* The HTTP side of `rebound serve`: the JSON API, the dashboard (files
 * compiled into the binary) and /metrics, served by libevent's evhttp on
 * the server's own event loop (same thread as the work protocol, so
 * handlers use the state machine directly). docs/http.md is the reference. */
#ifndef RB_SERVER_HTTP_H
#define RB_SERVER_HTTP_H

#include "common/error.h"

struct rb_srv;
typedef struct rb_http rb_http;

/* Checks what HTTP will be served before anything is opened: sets
 * srv->http_tls to the HTTPS context ([server] http_tls_cert/http_tls_key
 * loaded here, else srv->tls, else NULL for plain HTTP), and refuses plain
 * HTTP on an address that is not loopback while [server] password is set,
 * unless [server] http_allow_plaintext_password (basic auth would carry the
 * password in clear text). addr as for rb_http_start. Returns 0, or a
 * negative code with err set: RB_EIO when a certificate or key cannot be
 * loaded, RB_EINVAL for the refusal, a malformed or unresolvable address.
 * srv->http_tls is freed by rb_srv_free. */
int rb_http_prepare(struct rb_srv *srv, const char *addr, rb_err *err);

/* Starts serving HTTP (HTTPS when srv->http_tls is set) on srv's event
 * base and sets srv->http. addr ("HOST:PORT", "[V6]:PORT" or ":PORT"; port
 * 0 picks a free port) overrides [server] http_listen when non-NULL; "off"
 * or "" serves no HTTP. When port_file is non-NULL the bound port is
 * written to it (via a rename, so readers never see half a number). Returns
 * 0, or a negative code with err set (bad address, address in use, port
 * file). Only the built-in default address may be taken by someone else:
 * then a warning is logged and the server runs without HTTP. */
int rb_http_start(struct rb_srv *srv, const char *addr, const char *port_file, rb_err *err);

/* Stops listening and frees h and every HTTP connection. Call after the
 * writer has run its last completions (an action's reply waits for one).
 * NULL is a no-op. */
void rb_http_free(rb_http *h);

#endif
