/* Reading one RESP reply (simple string, error, bulk string or null) from the
 * client's socket into its read buffer, where the reply's text then lives
 * until the next call. */
#include "client/internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bulk replies larger than this are taken as a framing error. */
#define RB_CLIENT_MAX_BULK (256u << 20)

static int broken(rb_client *c, rb_err *err, int code, const char *fmt, const char *arg)
{
    c->broken = 1;
    return rb_err_set(err, code, fmt, arg);
}

/* Reads more bytes into c->in: RB_ECONN on EOF or error, RB_ETIMEDOUT. */
static int fill(rb_client *c, rb_err *err)
{
    rb_buf_grow(&c->in, 16384);
    for (;;) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int pr = rb__client_pending(c) ? 1 : poll(&pfd, 1, c->timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            return broken(c, err, RB_ETIMEDOUT, "no reply from %s in time", c->addr);
        ssize_t n = rb__client_read(c, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
        if (n > 0) {
            c->in.len += (size_t)n;
            c->in.data[c->in.len] = '\0';
            return 0;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n == 0)
            return broken(c, err, RB_ECONN, "connection to %s closed by the server", c->addr);
        return broken(c, err, RB_ECONN, "reading from %s failed", c->addr);
    }
}

/* Makes sure a CRLF-terminated line starts at c->rpos; *eol = index of '\r'. */
static int read_line(rb_client *c, size_t *eol, rb_err *err)
{
    size_t scanned = c->rpos;
    for (;;) {
        char *nl = c->in.len > scanned ? memchr(c->in.data + scanned, '\n', c->in.len - scanned)
                                       : NULL;
        if (nl) {
            size_t at = (size_t)(nl - c->in.data);
            if (at == c->rpos || c->in.data[at - 1] != '\r')
                return broken(c, err, RB_EPROTO, "bad reply framing from %s (bare LF)",
                              c->addr);
            *eol = at - 1;
            return 0;
        }
        scanned = c->in.len;
        if (c->in.len - c->rpos > RB_CLIENT_MAX_BULK)
            return broken(c, err, RB_EPROTO, "reply line from %s too long", c->addr);
        int rc = fill(c, err);
        if (rc)
            return rc;
    }
}

int rb__client_read_reply(rb_client *c, rb_reply *reply, rb_err *err)
{
    rb_reply dummy;
    if (!reply)
        reply = &dummy;
    memset(reply, 0, sizeof *reply);
    if (c->broken)
        return rb_err_set(err, RB_ECONN, "connection to %s is broken", c->addr);
    /* Strict request/reply: whatever was consumed before can go. */
    if (c->rpos) {
        rb_buf_consume(&c->in, c->rpos);
        c->rpos = 0;
    }
    size_t eol = 0;
    int rc = read_line(c, &eol, err);
    if (rc)
        return rc;
    char *line = c->in.data + c->rpos;
    size_t linelen = eol - c->rpos;
    c->in.data[eol] = '\0';
    switch (line[0]) {
    case '+':
        reply->type = RB_REPLY_STATUS;
        reply->str = line + 1;
        reply->len = linelen - 1;
        c->rpos = eol + 2;
        return 0;
    case '-': {
        const char *text = line + 1;
        if (!strncmp(text, "ERR ", 4))
            text += 4;
        rc = rb_err_set(err, RB_EPROTO, "%s", text);
        c->rpos = eol + 2;
        return rc;
    }
    case '$': {
        char *end;
        errno = 0;
        long long n = strtoll(line + 1, &end, 10);
        if (end == line + 1 || *end || errno || n < -1)
            return broken(c, err, RB_EPROTO, "bad bulk length from %s", c->addr);
        c->rpos = eol + 2;
        if (n == -1) {
            reply->type = RB_REPLY_NIL;
            return 0;
        }
        if ((unsigned long long)n > RB_CLIENT_MAX_BULK)
            return broken(c, err, RB_EPROTO, "bulk reply from %s too large", c->addr);
        size_t need = c->rpos + (size_t)n + 2;
        while (c->in.len < need) {
            rb_buf_grow(&c->in, need - c->in.len);
            rc = fill(c, err);
            if (rc)
                return rc;
        }
        char *body = c->in.data + c->rpos;
        if (body[n] != '\r' || body[n + 1] != '\n')
            return broken(c, err, RB_EPROTO, "bulk reply from %s not ended by CRLF", c->addr);
        body[n] = '\0';
        reply->type = RB_REPLY_BULK;
        reply->str = body;
        reply->len = (size_t)n;
        c->rpos = need;
        return 0;
    }
    default:
        return broken(c, err, RB_EPROTO, "unexpected reply type from %s", c->addr);
    }
}
