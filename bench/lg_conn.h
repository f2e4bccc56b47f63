/* The load generator's blocking TCP connection: connect with TCP_NODELAY,
 * write whole buffers, read CRLF-terminated lines and counted payloads from
 * one read buffer. Included only by bench/loadgen.c (each bench C file is its
 * own program, so shared code lives in headers). */
#ifndef RB_BENCH_LG_CONN_H
#define RB_BENCH_LG_CONN_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"

typedef struct lg_conn {
    int fd;
    char *in;      /* read buffer; in[start..end) is unread */
    size_t start, end, cap;
    rb_buf out;    /* the request being built */
} lg_conn;

/* Connects to host:port. Returns 0, or -1 with a message on stderr. */
static int lg_conn_open(lg_conn *c, const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    int rc = getaddrinfo(host, ports, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "loadgen: cannot resolve '%s': %s\n", host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            c->fd = fd;
            break;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        fprintf(stderr, "loadgen: cannot connect to %s:%d: %s\n", host, port, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->cap = 64 * 1024;
    c->in = rb_xmalloc(c->cap);
    rb_buf_init(&c->out);
    return 0;
}

static void lg_conn_close(lg_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->in);
    c->in = NULL;
    rb_buf_release(&c->out);
}

/* Writes all of p. Returns 0 or -1 (connection gone). */
static int lg_conn_write(lg_conn *c, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends the request built in c->out and empties it. */
static int lg_conn_flush(lg_conn *c)
{
    int rc = lg_conn_write(c, c->out.data, c->out.len);
    rb_buf_reset(&c->out);
    return rc;
}

/* Reads more bytes into the buffer. Returns 0, or -1 on EOF/error. */
static int lg_conn_fill(lg_conn *c)
{
    if (c->start > 0 && c->start == c->end)
        c->start = c->end = 0;
    if (c->end == c->cap) {
        if (c->start > 0) {
            memmove(c->in, c->in + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        } else {
            c->cap *= 2;
            c->in = rb_xrealloc(c->in, c->cap);
        }
    }
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->end, c->cap - c->end, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c->end += (size_t)r;
        return 0;
    }
}

/* Returns the next line without its CRLF (NUL-terminated in place, valid
 * until the next read), or NULL when the connection ended. */
static char *lg_conn_line(lg_conn *c, size_t *len)
{
    for (;;) {
        char *p = c->in + c->start;
        char *nl = memchr(p, '\n', c->end - c->start);
        if (nl) {
            size_t n = (size_t)(nl - p);
            c->start += n + 1;
            if (n > 0 && p[n - 1] == '\r')
                n--;
            p[n] = '\0';
            if (len)
                *len = n;
            return p;
        }
        if (lg_conn_fill(c) < 0)
            return NULL;
    }
}

/* Returns the next n bytes followed by CRLF (the CRLF is consumed and the
 * bytes NUL-terminated in place), or NULL when the connection ended. */
static char *lg_conn_payload(lg_conn *c, size_t n)
{
    while (c->end - c->start < n + 2)
        if (lg_conn_fill(c) < 0)
            return NULL;
    char *p = c->in + c->start;
    c->start += n + 2;
    p[n] = '\0';
    return p;
}

#endif
