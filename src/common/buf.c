/* Growable buffers and the aborting allocation helpers. */
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "rebound: out of memory allocating %zu bytes\n", n);
    abort();
}

void *rb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *rb_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *rb_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *rb_xstrdup(const char *s)
{
    return rb_xstrndup(s, strlen(s));
}

char *rb_xstrndup(const char *s, size_t n)
{
    char *p = rb_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void rb_buf_init(rb_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void rb_buf_release(rb_buf *b)
{
    free(b->data);
    rb_buf_init(b);
}

void rb_buf_reset(rb_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void rb_buf_grow(rb_buf *b, size_t n)
{
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = rb_xrealloc(b->data, cap);
    b->cap = cap;
}

void rb_buf_add(rb_buf *b, const void *p, size_t n)
{
    rb_buf_grow(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void rb_buf_adds(rb_buf *b, const char *s)
{
    rb_buf_add(b, s, strlen(s));
}

void rb_buf_addc(rb_buf *b, char c)
{
    rb_buf_add(b, &c, 1);
}

void rb_buf_vprintf(rb_buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return;
    rb_buf_grow(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void rb_buf_printf(rb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rb_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void rb_buf_consume(rb_buf *b, size_t n)
{
    if (n >= b->len) {
        rb_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *rb_buf_detach(rb_buf *b, size_t *len)
{
    char *p = b->data ? b->data : rb_xstrdup("");
    if (len)
        *len = b->len;
    rb_buf_init(b);
    return p;
}

const char *rb_buf_str(const rb_buf *b)
{
    return b->data ? b->data : "";
}
