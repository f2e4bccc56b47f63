/* RESP replies (Faktory speaks Redis's reply format): simple strings, bulk
 * strings, null and errors. */
#include "server/srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

static struct evbuffer *out(rb_conn *c)
{
    return c->closed || !c->bev ? NULL : bufferevent_get_output(c->bev);
}

void rb_reply_simple(rb_conn *c, const char *s)
{
    struct evbuffer *o = out(c);
    if (!o)
        return;
    evbuffer_add_printf(o, "+%s\r\n", s);
    rb_conn_flush(c);
}

void rb_reply_ok(rb_conn *c)
{
    struct evbuffer *o = out(c);
    if (!o)
        return;
    evbuffer_add(o, "+OK\r\n", 5);
    rb_conn_flush(c);
}

void rb_reply_bulk(rb_conn *c, const char *data, size_t len)
{
    struct evbuffer *o = out(c);
    if (!o)
        return;
    char head[32];
    int n = snprintf(head, sizeof head, "$%zu\r\n", len);
    evbuffer_add(o, head, (size_t)n);
    evbuffer_add(o, data, len);
    evbuffer_add(o, "\r\n", 2);
    rb_conn_flush(c);
}

void rb_reply_null(rb_conn *c)
{
    struct evbuffer *o = out(c);
    if (!o)
        return;
    evbuffer_add(o, "$-1\r\n", 5);
    rb_conn_flush(c);
}

void rb_reply_err(rb_conn *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    struct evbuffer *o = out(c);
    if (!o)
        return;
    evbuffer_add_printf(o, "-ERR %s\r\n", msg);
    rb_conn_flush(c);
}

void rb_reply_err_code(rb_conn *c, const char *code, const char *msg)
{
    struct evbuffer *o = out(c);
    if (!o)
        return;
    evbuffer_add_printf(o, "-%s %s\r\n", code, msg);
    rb_conn_flush(c);
}

void rb_reply_json(rb_conn *c, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (!s) {
        rb_reply_err(c, "cannot encode the reply");
        return;
    }
    rb_reply_bulk(c, s, strlen(s));
    free(s);
}

bool rb_reply_failed(rb_srv *srv, rb_eng_op *op)
{
    if (!op->rc)
        return false;
    if (op->c) {
        if (rb_eng_store_error(op->rc))
            rb_reply_err(op->c, "storage error: %s", rb_err_msg(&op->err));
        else
            rb_reply_err(op->c, "%s", rb_err_msg(&op->err));
    }
    rb_eng_op_finish(srv->eng, op);
    return true;
}
