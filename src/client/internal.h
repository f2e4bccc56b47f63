/* The client's private state and the helpers its files share; not installed,
 * not for callers of include/rebound/client.h. */
#ifndef RB_CLIENT_INTERNAL_H
#define RB_CLIENT_INTERNAL_H

#include "rebound/client.h"

#include <sys/types.h>

#include "common/buf.h"

struct ssl_st;
struct ssl_ctx_st;

struct rb_client {
    int fd;            /* owned; -1 once closed */
    int broken;        /* an I/O or framing error happened: every call fails */
    int timeout_ms;    /* per read/write */
    char addr[300];    /* "host:port" for messages */
    char *wid;         /* NULL for producer connections */
    json_t *greeting;  /* the +HI object */
    rb_buf out;        /* the request being written (reused) */
    rb_buf in;         /* bytes read; a reply's text points into it */
    size_t rpos;       /* start of the unread part of in */
    struct ssl_st *ssl;        /* the TLS session over fd, or NULL (plain TCP) */
    struct ssl_ctx_st *ssl_ctx;
};

/* --- tls.c: the byte stream under the protocol, plain or TLS --- */
/* Runs the TLS handshake over c->fd (blocking, within c's timeouts),
 * checking the server's certificate for host unless opts->tls_insecure.
 * RB_ECONN (or RB_ETIMEDOUT) with the reason on failure. */
int rb__client_tls_start(rb_client *c, const char *host, const rb_client_opts *opts,
                         rb_err *err);
/* Frees the TLS session and context (a no-op for plain connections). */
void rb__client_tls_free(rb_client *c);
/* read(2)/send(2) over the stream: bytes moved, 0 at EOF (read), or -1
 * with errno set (EAGAIN after a timeout). */
ssize_t rb__client_read(rb_client *c, void *buf, size_t n);
ssize_t rb__client_write(rb_client *c, const void *buf, size_t n);
/* Bytes already decrypted and waiting (so poll(2) would not see them). */
int rb__client_pending(rb_client *c);

/* Reads one RESP reply into *reply (borrowing from c->in). Error replies are
 * RB_EPROTO with the text in err; framing and I/O errors mark c broken. */
int rb__client_read_reply(rb_client *c, rb_reply *reply, rb_err *err);

/* Writes c->out followed by CRLF. I/O errors mark c broken. */
int rb__client_send_out(rb_client *c, rb_err *err);

/* Appends s as a JSON string literal (quoted and escaped) to b. */
void rb__json_add_str(rb_buf *b, const char *s);

/* Sends c->out and reads the reply, which must be +OK (or any status). */
int rb__client_call_out(rb_client *c, rb_reply *reply, rb_err *err);

#endif
