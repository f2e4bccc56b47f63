/* TLS for the work-protocol and HTTP listeners: an OpenSSL server context
 * from a certificate and key; each accepted socket is wrapped in a libevent
 * OpenSSL bufferevent, so the code above is the same for TLS and plain TCP. */
#include "server/tls.h"

#include <stdlib.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/buf.h"

struct rb_tls {
    SSL_CTX *ctx;
};

/* OpenSSL's most recent error as text ("unknown" when its queue is empty);
 * empties the queue. */
static const char *ossl_reason(char *out, size_t n)
{
    unsigned long e = ERR_get_error();
    if (!e)
        snprintf(out, n, "unknown");
    else
        ERR_error_string_n(e, out, n);
    ERR_clear_error();
    return out;
}

rb_tls *rb_tls_new(const char *cert_path, const char *key_path, rb_err *err)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        rb_err_set(err, RB_EIO, "cannot create a tls context: %s", ossl_reason(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1) {
        rb_err_set(err, RB_EIO, "cannot load tls certificate '%s': %s", cert_path,
                   ossl_reason(why, sizeof why));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1) {
        rb_err_set(err, RB_EIO, "cannot load tls key '%s': %s", key_path,
                   ossl_reason(why, sizeof why));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        rb_err_set(err, RB_EIO, "tls key '%s' does not match certificate '%s'", key_path,
                   cert_path);
        goto fail;
    }
    rb_tls *t = rb_xcalloc(1, sizeof *t);
    t->ctx = ctx;
    return t;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

void rb_tls_id(const rb_tls *t, char *out, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    X509 *cert = t ? SSL_CTX_get0_certificate(t->ctx) : NULL;
    if (!cert || n < 80 || X509_digest(cert, EVP_sha256(), md, &len) != 1) {
        if (n)
            out[0] = '\0';
        return;
    }
    size_t at = (size_t)snprintf(out, n, "sha256:");
    for (unsigned int i = 0; i < len && at + 3 <= n; i++)
        at += (size_t)snprintf(out + at, n - at, "%02x", md[i]);
}

void rb_tls_free(rb_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

void rb_tls_bev_close_notify(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    if (ssl && SSL_is_init_finished(ssl)) {
        /* One non-blocking attempt; a peer that does not read misses it. */
        SSL_shutdown(ssl);
        ERR_clear_error();
    }
}

void rb_tls_bev_free(struct bufferevent *bev)
{
    rb_tls_bev_close_notify(bev);
    bufferevent_free(bev);
}

struct bufferevent *rb_tls_bev_new(rb_tls *t, struct event_base *base, evutil_socket_t fd)
{
    if (!t)
        return bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl) {
        ERR_clear_error();
        if (fd >= 0)
            evutil_closesocket(fd);
        return NULL;
    }
    /* With BEV_OPT_CLOSE_ON_FREE the bufferevent frees ssl and closes fd. */
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) { /* out of memory; whether libevent freed ssl differs by version: leave it */
        if (fd >= 0)
            evutil_closesocket(fd);
        return NULL;
    }
    /* A peer that closes without a TLS close_notify is an ordinary EOF. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}
