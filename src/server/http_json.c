/* HTTP replies (JSON, errors as JSON, raw bodies) and request parsing
 * (JSON bodies, query parameters) for the API handlers. */
#include "server/http_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "common/buf.h"

void rb_http_reply_raw(struct evhttp_request *req, int status, const char *type, const char *data,
                       size_t len)
{
    struct evkeyvalq *hdr = evhttp_request_get_output_headers(req);
    evhttp_add_header(hdr, "Content-Type", type);
    evhttp_add_header(hdr, "Cache-Control", "no-store");
    rb_http_security_headers(hdr);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        /* evhttp would send a body after the headers: say its length only */
        char n[32];
        snprintf(n, sizeof n, "%zu", len);
        evhttp_add_header(hdr, "Content-Length", n);
        evhttp_send_reply(req, status, NULL, NULL);
        return;
    }
    struct evbuffer *body = evbuffer_new();
    evbuffer_add(body, data, len);
    evhttp_send_reply(req, status, NULL, body);
    evbuffer_free(body);
}

void rb_http_reply_json(struct evhttp_request *req, int status, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (!s) {
        rb_http_reply_error(req, 500, "cannot encode the reply");
        return;
    }
    rb_http_reply_raw(req, status, "application/json", s, strlen(s));
    free(s);
}

void rb_http_reply_error(struct evhttp_request *req, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *v = json_pack("{s:{s:i, s:s%}}", "error", "status", status, "message", msg,
                          strlen(msg));
    if (!v) /* the message was not UTF-8 (a client's bytes quoted) */
        v = json_pack("{s:{s:i, s:s}}", "error", "status", status, "message", "invalid request");
    rb_http_reply_json(req, status, v);
}

char *rb_http_body_text(struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    char *s = rb_xmalloc(n + 1);
    evbuffer_copyout(in, s, n);
    s[n] = '\0';
    return s;
}

json_t *rb_http_body_json(struct evhttp_request *req)
{
    char *s = rb_http_body_text(req);
    const char *p = s;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    json_t *v;
    if (!*p) {
        v = json_object();
    } else {
        json_error_t e;
        v = json_loads(p, JSON_DECODE_ANY, &e);
        if (!v)
            rb_http_reply_error(req, 400, "request body is not JSON: %s (line %d)", e.text, e.line);
    }
    free(s);
    return v;
}

char *rb_http_query(struct evhttp_request *req, const char *name)
{
    const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    if (!q)
        return NULL;
    struct evkeyvalq params;
    if (evhttp_parse_query_str(q, &params) != 0) {
        evhttp_clear_headers(&params);
        return NULL;
    }
    const char *v = evhttp_find_header(&params, name);
    char *out = v ? rb_xstrdup(v) : NULL;
    evhttp_clear_headers(&params);
    return out;
}

bool rb_http_query_int(struct evhttp_request *req, const char *name, long long lo, long long hi,
                       long long def, long long *out)
{
    char *v = rb_http_query(req, name);
    if (!v || !*v) {
        free(v);
        *out = def;
        return true;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    bool ok = !*end && !errno && n >= lo && n <= hi;
    if (ok)
        *out = n;
    else
        rb_http_reply_error(req, 400, "query parameter %s='%s' must be an integer from %lld to %lld",
                            name, v, lo, hi);
    free(v);
    return ok;
}

/* --- job-engine ops on behalf of a request --- */

static void api_call_free(void *p)
{
    rb_api_call *a = p;
    for (size_t i = 0; i < sizeof a->strs / sizeof *a->strs; i++)
        free(a->strs[i]);
    free(a);
}

rb_eng_op *rb_api_op(rb_http_req *r, rb_eng_kind kind, void (*done)(rb_srv *, rb_eng_op *))
{
    return rb_api_op_for(r->req, kind, done);
}

rb_eng_op *rb_api_op_for(struct evhttp_request *req, rb_eng_kind kind,
                         void (*done)(rb_srv *, rb_eng_op *))
{
    rb_eng_op *op = rb_eng_op_new(kind, NULL, done);
    rb_api_call *a = rb_xcalloc(1, sizeof *a);
    a->req = req;
    op->arg = a;
    op->arg_free = api_call_free;
    return op;
}

rb_api_call *rb_api_call_of(rb_eng_op *op)
{
    return op->arg;
}

bool rb_api_failed(rb_srv *srv, rb_eng_op *op)
{
    if (!op->rc)
        return false;
    struct evhttp_request *req = rb_api_call_of(op)->req;
    if (rb_eng_store_error(op->rc))
        rb_http_reply_error(req, 500, "storage error: %s", rb_err_msg(&op->err));
    else
        rb_http_reply_error(req, 400, "%s", rb_err_msg(&op->err));
    rb_eng_op_finish(srv->eng, op);
    return true;
}
