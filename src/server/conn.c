/* Client connections: the greeting, line framing with a length limit, one
 * command at a time, waiting FETCHes, and closing (deferred while commits
 * still refer to the connection). */
#include "server/srv.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "server/forward.h"
#include "server/tls.h"

static void process(rb_conn *c);

static void conn_free(rb_conn *c)
{
    free(c);
}

void rb_conn_unref(rb_conn *c)
{
    if (--c->refs == 0 && c->closed && !c->bev)
        conn_free(c);
}

static void conn_hold(rb_conn *c)
{
    c->busy = true;
    c->refs++;
}

static void conn_release(rb_conn *c, bool run_next);
const rb_eng_client rb_conn_client = {conn_hold, conn_release};

static void conn_release(rb_conn *c, bool run_next)
{
    if (run_next)
        rb_conn_done(c);
    else
        c->busy = false;
    rb_conn_unref(c);
}

/* The output of a closed connection is drained: now free the socket. */
static void on_drained(struct bufferevent *bev, void *arg)
{
    rb_conn *c = arg;
    rb_list_remove(&c->srv->draining, &c->link);
    rb_tls_bev_free(bev);
    c->bev = NULL;
    if (c->refs == 0)
        conn_free(c);
}

static void on_drain_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    on_drained(bev, arg);
}

void rb_conn_close(rb_conn *c)
{
    if (c->closed)
        return;
    if (c->line_timeout) {
        event_free(c->line_timeout);
        c->line_timeout = NULL;
    }
    c->closed = true;
    rb_srv *srv = c->srv;
    if (c->fetch_op) /* its FETCH waits for nobody now */
        rb_eng_fetch_cancel(srv->eng, c->fetch_op);
    rb_list_remove(&srv->conns, &c->link);
    if (c->worker)
        rb_eng_worker_detach(srv->eng, c->worker);
    c->worker = NULL;
    if (c->bev && evbuffer_get_length(bufferevent_get_output(c->bev)) > 0 && !srv->eng->stopping) {
        /* Send the last reply (an error before closing) before the socket
         * goes away; the write callback frees it once drained. */
        bufferevent_disable(c->bev, EV_READ);
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        struct timeval give_up = {5, 0}; /* a peer that never reads */
        bufferevent_set_timeouts(c->bev, NULL, &give_up);
        bufferevent_setcb(c->bev, NULL, on_drained, on_drain_event, c);
        bufferevent_enable(c->bev, EV_WRITE);
        rb_list_append(&srv->draining, &c->link);
        return;
    }
    if (c->bev) {
        rb_tls_bev_free(c->bev);
        c->bev = NULL;
    }
    if (c->refs == 0)
        conn_free(c);
    if (srv->eng->stopping && srv->conns.size == 0)
        event_base_loopexit(srv->eng->base, NULL); /* nobody left to tell: stop now */
}

void rb_conn_done(rb_conn *c)
{
    c->busy = false;
    if (!c->closed)
        process(c);
}

static void on_line_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_conn *c = arg;
    long long s = (long long)c->srv->cfg.server.line_timeout_s;
    rb_log_kv(RB_LOG_WARN, RB_LOG_KV("wid", c->worker ? c->worker->wid : NULL),
              "closing a connection: a command line unfinished after %lld s", s);
    rb_reply_err(c, "command line unfinished after %lld s", s);
    rb_conn_close(c);
}

/* Half a line is buffered and nothing runs: it must be finished within
 * server.line_timeout of now (or of when the previous half line began). */
static void arm_line_timeout(rb_conn *c)
{
    if (!c->line_timeout)
        c->line_timeout = evtimer_new(c->srv->eng->base, on_line_timeout, c);
    if (!evtimer_pending(c->line_timeout, NULL)) {
        struct timeval tv = {(time_t)c->srv->cfg.server.line_timeout_s, 0};
        evtimer_add(c->line_timeout, &tv);
    }
}

/* A client that sends commands but does not read their replies: drop what
 * it did not read and close. Returns true when c was closed. */
static bool unread_over_cap(rb_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t unread = evbuffer_get_length(out);
    size_t cap = 2 * (size_t)c->srv->cfg.server.max_job_bytes;
    if (cap < RB_MAX_UNREAD_BYTES)
        cap = RB_MAX_UNREAD_BYTES;
    if (unread <= cap)
        return false;
    rb_log_kv(RB_LOG_WARN, RB_LOG_KV("wid", c->worker ? c->worker->wid : NULL),
              "closing a connection that does not read its replies (%zu bytes unread)", unread);
    evbuffer_drain(out, unread);
    rb_conn_close(c);
    return true;
}

/* Runs buffered lines until the connection is busy or the input is empty. */
static void process(rb_conn *c)
{
    size_t max = (size_t)c->srv->cfg.server.max_job_bytes;
    while (!c->busy && !c->closed) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        if (unread_over_cap(c))
            return;
        size_t n;
        char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
        if (!line) {
            if (evbuffer_get_length(in) > max) {
                rb_reply_err(c, "command line longer than %zu bytes", max);
                rb_conn_close(c);
            } else if (evbuffer_get_length(in) > 0) {
                arm_line_timeout(c);
            }
            return;
        }
        if (c->line_timeout)
            evtimer_del(c->line_timeout);
        if (n > max) {
            free(line);
            rb_reply_err(c, "command line longer than %zu bytes", max);
            rb_conn_close(c);
            return;
        }
        if (strlen(line) != n) {
            free(line);
            rb_reply_err(c, "command line contains a NUL byte");
            continue;
        }
        c->refs++; /* the command may close c: keep the struct until we look */
        rb_command_run(c, line);
        free(line);
        bool gone = c->closed;
        rb_conn_unref(c);
        if (gone)
            return;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    process(arg);
}

void rb_conn_flush(rb_conn *c)
{
    if (!c->direct || !c->bev || c->closed || c->write_armed)
        return;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) == 0)
        return;
    /* A socket bufferevent keeps its output's front frozen except while it
     * writes itself; do as it does. */
    errno = 0;
    evbuffer_unfreeze(out, 1);
    int n = evbuffer_write(out, bufferevent_getfd(c->bev));
    evbuffer_freeze(out, 1);
    if (evbuffer_get_length(out) == 0)
        return;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        /* the peer is gone: the read side sees it and closes */
        evbuffer_drain(out, evbuffer_get_length(out));
        return;
    }
    c->write_armed = true; /* the socket is full: the bufferevent sends the rest */
    bufferevent_enable(c->bev, EV_WRITE);
}

/* A direct connection's output has drained after the socket was full. */
static void on_write(struct bufferevent *bev, void *arg)
{
    rb_conn *c = arg;
    if (c->direct && c->write_armed) {
        c->write_armed = false;
        bufferevent_disable(bev, EV_WRITE);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    /* After an error (a reset, a failed TLS handshake) nothing more can be
     * sent: drop what is queued rather than wait to drain it. */
    if (what & BEV_EVENT_ERROR) {
        struct evbuffer *out = bufferevent_get_output(bev);
        evbuffer_drain(out, evbuffer_get_length(out));
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        rb_conn_close(arg); /* a timeout only before HELLO */
}

void rb_conn_accept(rb_srv *srv, evutil_socket_t fd)
{
    size_t open = srv->conns.size + rb_forward_open(srv);
    if (srv->eng->stopping || (int64_t)open >= srv->cfg.server.max_connections) {
        if (srv->tls) { /* no session yet to say why in */
            evutil_closesocket(fd);
            return;
        }
        char msg[64];
        int n = snprintf(msg, sizeof msg, "-ERR too many connections: %zu\r\n", open);
        ssize_t w = write(fd, msg, (size_t)n);
        (void)w;
        evutil_closesocket(fd);
        return;
    }
    if (rb_forward_accept(srv, fd)) /* relayed to the leader (or served after it failed) */
        return;
    rb_conn_serve(srv, fd);
}

void rb_conn_serve(rb_srv *srv, evutil_socket_t fd)
{
    /* Replies go out as soon as they are written: with clients in
     * request/reply lockstep, Nagle could hold one back behind an ACK. */
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct bufferevent *bev = rb_tls_bev_new(srv->tls, srv->eng->base, fd);
    if (!bev) {
        rb_log(RB_LOG_WARN, "cannot set up a connection (tls session): closed");
        return;
    }
    rb_conn *c = rb_xcalloc(1, sizeof *c);
    c->srv = srv;
    c->bev = bev;
    c->direct = !srv->tls;
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    /* Read no more than a longest line past what is buffered: a client
     * that pipelines while its command waits is held back by TCP. */
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)srv->cfg.server.max_job_bytes + 4096);
    bufferevent_enable(c->bev, c->direct ? EV_READ : EV_READ | EV_WRITE);
    if (c->direct) /* a new socket bufferevent starts with EV_WRITE enabled */
        bufferevent_disable(c->bev, EV_WRITE);
    struct timeval hello_within = {(time_t)srv->cfg.server.hello_timeout_s, 0};
    bufferevent_set_timeouts(c->bev, &hello_within, NULL);
    rb_list_append(&srv->conns, &c->link);
    const char *pw = srv->cfg.server.password;
    if (pw && *pw) {
        c->iterations = 4000 + rb_rng_range(&srv->rng, 0, 4095);
        snprintf(c->salt, sizeof c->salt, "%016llx",
                 (unsigned long long)rb_rng_next(&srv->rng));
        evbuffer_add_printf(bufferevent_get_output(c->bev), "+HI {\"v\":2,\"i\":%ld,\"s\":\"%s\"}\r\n",
                            c->iterations, c->salt);
    } else {
        evbuffer_add_printf(bufferevent_get_output(c->bev), "+HI {\"v\":2}\r\n");
    }
    rb_conn_flush(c);
}

