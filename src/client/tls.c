/* The client's byte stream: plain TCP, or OpenSSL over the same blocking
 * socket for tcp+tls:// URLs (certificate and host name checked unless the
 * caller opts out). */
#include "client/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* 1 when host is an IPv4 or IPv6 literal. */
static int is_ip_literal(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

static int tls_fail(rb_client *c, rb_err *err, const char *what)
{
    char why[256] = "connection closed";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, why, sizeof why);
    else if (errno == EAGAIN || errno == EWOULDBLOCK)
        return rb_err_set(err, RB_ETIMEDOUT, "tls %s with %s timed out", what, c->addr);
    ERR_clear_error();
    if (c->ssl) {
        long v = SSL_get_verify_result(c->ssl);
        if (v != X509_V_OK)
            snprintf(why, sizeof why, "certificate not trusted: %s",
                     X509_verify_cert_error_string(v));
    }
    return rb_err_set(err, RB_ECONN, "tls %s with %s failed: %s", what, c->addr, why);
}

int rb__client_tls_start(rb_client *c, const char *host, const rb_client_opts *opts,
                         rb_err *err)
{
    ERR_clear_error();
    c->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ssl_ctx)
        return tls_fail(c, err, "set-up");
    SSL_CTX_set_min_proto_version(c->ssl_ctx, TLS1_2_VERSION);
    int insecure = opts && opts->tls_insecure;
    if (!insecure) {
        const char *ca = opts ? opts->tls_ca_file : NULL;
        int ok = ca ? SSL_CTX_load_verify_locations(c->ssl_ctx, ca, NULL)
                    : SSL_CTX_set_default_verify_paths(c->ssl_ctx);
        if (ok != 1)
            return rb_err_set(err, RB_EINVAL, "cannot load tls ca file '%s'",
                              ca ? ca : "(default)");
        SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_PEER, NULL);
    }
    c->ssl = SSL_new(c->ssl_ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
        return tls_fail(c, err, "set-up");
    /* SNI only for names; IP addresses are checked as such. */
    int is_ip = is_ip_literal(host);
    if (!is_ip)
        SSL_set_tlsext_host_name(c->ssl, host);
    if (!insecure) {
        X509_VERIFY_PARAM *p = SSL_get0_param(c->ssl);
        if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : SSL_set1_host(c->ssl, host)) != 1)
            return tls_fail(c, err, "set-up");
    }
    errno = 0;
    if (SSL_connect(c->ssl) != 1)
        return tls_fail(c, err, "handshake");
    return 0;
}

void rb__client_tls_free(rb_client *c)
{
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->ssl_ctx) {
        SSL_CTX_free(c->ssl_ctx);
        c->ssl_ctx = NULL;
    }
}

/* Maps a failed SSL_read/SSL_write onto read(2)'s conventions. */
static ssize_t ssl_result(rb_client *c, int n)
{
    int e = SSL_get_error(c->ssl, n);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_SYSCALL && errno == 0)
        return 0; /* the peer closed without close_notify */
    if (e != SSL_ERROR_SYSCALL)
        errno = EPROTO;
    return -1;
}

ssize_t rb__client_read(rb_client *c, void *buf, size_t n)
{
    if (!c->ssl)
        return read(c->fd, buf, n);
    errno = 0;
    int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : ssl_result(c, r);
}

/* OpenSSL writes with write(2), which raises SIGPIPE on a closed socket:
 * block it in this thread for the call and swallow one it raised, so a
 * library call never kills the caller (send(2) with MSG_NOSIGNAL for TCP). */
ssize_t rb__client_write(rb_client *c, const void *buf, size_t n)
{
    if (!c->ssl)
        return send(c->fd, buf, n, MSG_NOSIGNAL);
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    errno = 0;
    int r = SSL_write(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    ssize_t out = r > 0 ? r : ssl_result(c, r);
    int e = errno;
    if (!was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return out;
}

int rb__client_pending(rb_client *c)
{
    return c->ssl ? SSL_pending(c->ssl) : 0;
}
