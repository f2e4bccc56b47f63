/* A client connection: TCP connect with a timeout, TLS for tcp+tls:// URLs,
 * the HI/HELLO handshake, sending request lines, and close. */
#include "client/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_CONNECT_TIMEOUT_MS 5000

int rb__client_send_out(rb_client *c, rb_err *err)
{
    if (c->broken)
        return rb_err_set(err, RB_ECONN, "connection to %s is broken", c->addr);
    rb_buf_add(&c->out, "\r\n", 2);
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t n = rb__client_write(c, c->out.data + off, c->out.len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        c->broken = 1;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return rb_err_set(err, RB_ETIMEDOUT, "sending to %s timed out", c->addr);
        return rb_err_set(err, RB_ECONN, "sending to %s failed: %s", c->addr,
                          n < 0 ? strerror(errno) : "closed");
    }
    return 0;
}

int rb__client_call_out(rb_client *c, rb_reply *reply, rb_err *err)
{
    int rc = rb__client_send_out(c, err);
    return rc ? rc : rb__client_read_reply(c, reply, err);
}

int rb_client_call(rb_client *c, const char *line, rb_reply *reply, rb_err *err)
{
    if (strpbrk(line, "\r\n"))
        return rb_err_set(err, RB_EINVAL, "command line contains CR or LF");
    rb_buf_reset(&c->out);
    rb_buf_adds(&c->out, line);
    return rb__client_call_out(c, reply, err);
}

int rb_client_callf(rb_client *c, rb_reply *reply, rb_err *err, const char *fmt, ...)
{
    va_list ap;
    rb_buf_reset(&c->out);
    va_start(ap, fmt);
    rb_buf_vprintf(&c->out, fmt, ap);
    va_end(ap);
    if (memchr(c->out.data, '\r', c->out.len) || memchr(c->out.data, '\n', c->out.len))
        return rb_err_set(err, RB_EINVAL, "command line contains CR or LF");
    return rb__client_call_out(c, reply, err);
}

static void set_timeouts(int fd, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Reads +HI, sends HELLO, expects +OK. */
static int handshake(rb_client *c, const rb_client_opts *opts, const char *password,
                     rb_err *err)
{
    rb_reply r;
    int rc = rb__client_read_reply(c, &r, err);
    if (rc) {
        rb_err_prefix(err, "handshake with %s", c->addr);
        return rc;
    }
    if (r.type != RB_REPLY_STATUS || strncmp(r.str, "HI ", 3) != 0)
        return rb_err_set(err, RB_EPROTO, "%s did not greet with HI", c->addr);
    json_error_t jerr;
    c->greeting = json_loads(r.str + 3, 0, &jerr);
    if (!json_is_object(c->greeting))
        return rb_err_set(err, RB_EPROTO, "bad greeting from %s: '%s'", c->addr, r.str);

    json_t *hello = json_object();
    json_object_set_new(hello, "v", json_integer(2));
    char host[256] = "";
    const char *hostname = opts && opts->hostname ? opts->hostname : NULL;
    if (!hostname) {
        if (gethostname(host, sizeof host - 1) != 0)
            strcpy(host, "localhost");
        hostname = host;
    }
    json_object_set_new(hello, "hostname", json_string(hostname));
    json_object_set_new(hello, "pid", json_integer(getpid()));
    if (c->wid)
        json_object_set_new(hello, "wid", json_string(c->wid));
    if (opts && opts->labels) {
        json_t *labels = json_array();
        for (const char *const *l = opts->labels; *l; l++)
            json_array_append_new(labels, json_string(*l));
        json_object_set_new(hello, "labels", labels);
    }
    json_t *iter = json_object_get(c->greeting, "i");
    json_t *salt = json_object_get(c->greeting, "s");
    if (json_is_string(salt) || json_is_integer(iter)) {
        if (!password || !*password) {
            json_decref(hello);
            return rb_err_set(err, RB_EAUTH, "%s requires a password (tcp://:PASSWORD@host:port)",
                              c->addr);
        }
        char hash[65];
        rb_client_pwdhash(password, json_is_string(salt) ? json_string_value(salt) : "",
                          json_is_integer(iter) ? (long)json_integer_value(iter) : 1, hash);
        json_object_set_new(hello, "pwdhash", json_string(hash));
    }
    char *text = json_dumps(hello, JSON_COMPACT);
    json_decref(hello);
    rb_buf_reset(&c->out);
    rb_buf_adds(&c->out, "HELLO ");
    rb_buf_adds(&c->out, text);
    free(text);
    rc = rb__client_call_out(c, &r, err);
    if (rc == RB_EPROTO && err && strstr(err->msg, "assword")) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return rb_err_set(err, RB_EAUTH, "%s refused the password: %s", c->addr, msg);
    }
    if (rc) {
        if (rc == RB_EPROTO)
            rb_err_prefix(err, "%s refused HELLO", c->addr);
        return rc;
    }
    if (r.type != RB_REPLY_STATUS || strcmp(r.str, "OK") != 0)
        return rb_err_set(err, RB_EPROTO, "unexpected reply to HELLO from %s", c->addr);
    return 0;
}

static rb_client *client_new(int fd, const rb_client_opts *opts, const char *addr)
{
    rb_client *c = rb_xcalloc(1, sizeof *c);
    c->fd = fd;
    c->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    if (opts && opts->wid && *opts->wid)
        c->wid = rb_xstrdup(opts->wid);
    rb_buf_init(&c->out);
    rb_buf_init(&c->in);
    set_timeouts(fd, c->timeout_ms);
    return c;
}

static void client_free(rb_client *c)
{
    rb__client_tls_free(c);
    if (c->fd >= 0)
        close(c->fd);
    json_decref(c->greeting);
    free(c->wid);
    rb_buf_release(&c->out);
    rb_buf_release(&c->in);
    free(c);
}

rb_client *rb_client_attach(int fd, const rb_client_opts *opts, rb_err *err)
{
    rb_client *c = client_new(fd, opts, "socket");
    if (handshake(c, opts, opts ? opts->password : NULL, err)) {
        client_free(c);
        return NULL;
    }
    return c;
}

/* Connects to one resolved address within timeout_ms; returns the fd or -1
 * with errno set. */
static int connect_one(const struct addrinfo *ai, int timeout_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int pr;
        do
            pr = poll(&pfd, 1, timeout_ms);
        while (pr < 0 && errno == EINTR);
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (pr == 0)
            soerr = ETIMEDOUT;
        else if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            soerr = errno;
        if (soerr) {
            close(fd);
            errno = soerr;
            return -1;
        }
    }
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

rb_client *rb_client_connect(const char *url, const rb_client_opts *opts, rb_err *err)
{
    rb_client_url u;
    if (!url)
        url = rb_client_default_url();
    if (rb_client_url_parse(url, &u, err))
        return NULL;
    char addr[300];
    snprintf(addr, sizeof addr, strchr(u.host, ':') ? "[%s]:%s" : "%s:%s", u.host, u.port);

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(u.host, u.port, &hints, &res);
    if (gai != 0) {
        rb_err_set(err, RB_ECONN, "cannot resolve '%s': %s", u.host, gai_strerror(gai));
        return NULL;
    }
    int timeout = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms
                                                       : DEFAULT_CONNECT_TIMEOUT_MS;
    int fd = -1, last = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, timeout);
        if (fd < 0)
            last = errno;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        rb_err_set(err, last == ETIMEDOUT ? RB_ETIMEDOUT : RB_ECONN, "cannot connect to %s: %s",
                   addr, strerror(last));
        return NULL;
    }
    rb_client *c = client_new(fd, opts, addr);
    const char *password = opts && opts->password ? opts->password : u.password;
    if ((u.tls && rb__client_tls_start(c, u.host, opts, err)) ||
        handshake(c, opts, password, err)) {
        client_free(c);
        return NULL;
    }
    return c;
}

void rb_client_close(rb_client *c)
{
    if (!c)
        return;
    if (!c->broken && c->fd >= 0) {
        /* Best effort: a server that closes first is fine. */
        static const char end[] = "END\r\n";
        ssize_t n = c->ssl ? rb__client_write(c, end, sizeof end - 1)
                           : send(c->fd, end, sizeof end - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n;
    }
    client_free(c);
}

const char *rb_client_addr(const rb_client *c)
{
    return c->addr;
}

const json_t *rb_client_greeting(const rb_client *c)
{
    return c->greeting;
}
