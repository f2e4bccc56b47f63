/* The client's private state and the helpers its files share; not installed,
 * not for callers of include/rebound/client.h. */
#ifndef RB_CLIENT_INTERNAL_H
#define RB_CLIENT_INTERNAL_H

#include "rebound/client.h"

#include "common/buf.h"

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
};

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
