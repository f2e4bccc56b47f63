/* TLS for the listeners: one OpenSSL context made from a certificate and
 * key, and the bufferevent each connection speaks through (TLS, or the
 * plain socket when no context is set). The work protocol (server.c) and
 * HTTPS (http.c) both use it, on the event loop thread. */
#ifndef RB_SERVER_TLS_H
#define RB_SERVER_TLS_H

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/error.h"

typedef struct rb_tls rb_tls;

/* Loads the PEM certificate (chain) cert_path and the private key key_path
 * and checks that they belong together. Returns the context (free it with
 * rb_tls_free), or NULL with err set (RB_EIO naming the file and OpenSSL's
 * reason). TLS 1.2 is the oldest version accepted. */
rb_tls *rb_tls_new(const char *cert_path, const char *key_path, rb_err *err);

/* The certificate t presents, as "sha256:" and the lower-case hex SHA-256
 * of its DER (71 characters), into out (at least 80 bytes); "" when t is
 * NULL. Forwarding (server/forward.c) relays a TLS client only to a leader
 * presenting the same. */
void rb_tls_id(const rb_tls *t, char *out, size_t n);

/* Frees the context; connections made from it keep their own reference.
 * NULL is a no-op. */
void rb_tls_free(rb_tls *t);

/* A bufferevent over the accepted socket fd (closed when the bufferevent
 * is freed): a TLS server-side one when t is non-NULL, else a plain socket
 * one. fd may be -1 when the caller sets it later with bufferevent_setfd
 * (as evhttp does); the handshake starts then. NULL when OpenSSL cannot
 * make a session (fd is closed then). */
struct bufferevent *rb_tls_bev_new(rb_tls *t, struct event_base *base, evutil_socket_t fd);

/* Sends a TLS close_notify on bev when it is a TLS connection whose
 * handshake is done (so the peer sees an orderly end rather than a reset);
 * one non-blocking attempt, no-op for a plain bufferevent. Call once its
 * output is sent or abandoned, just before it is freed. */
void rb_tls_bev_close_notify(struct bufferevent *bev);

/* rb_tls_bev_close_notify, then frees bev. */
void rb_tls_bev_free(struct bufferevent *bev);

#endif
