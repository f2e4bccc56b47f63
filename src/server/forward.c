/* Distributed mode's forwarding (server/forward.h): the relays from this
 * node's accepted client connections to the leader's client port, the
 * leader seen unreachable, and the address this node advertises. Loop
 * thread only. */
#include "server/forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/buf.h"
#include "common/list.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "config/config.h"
#include "engine/engine.h"
#include "server/srv.h"
#include "server/tls.h"

/* One end of a relay: its socket, its events (created once relaying) and
 * the bytes for it that its socket did not take yet. */
typedef struct side {
    evutil_socket_t fd;
    struct event *rd;    /* readable: bytes go to the other side */
    struct event *wr;    /* writable, armed while out holds bytes */
    struct evbuffer *out;
} side;

/* One client connection relayed to the leader. Until the leader's side
 * connects, the client's socket is only held (nothing is read from it, so
 * a fallback serves it from its first byte); then bytes go across
 * unchanged, written at once where the other socket takes them (one read
 * and one write per message: no buffering in between, no event changes
 * while the sockets keep up). */
typedef struct relay {
    rb_link link;         /* in fwd->relays */
    struct rb_forward *fwd;
    side s[2];            /* [0] the client, [1] the leader */
    char addr[256];       /* the leader's address */
    bool relaying;        /* the leader's side connected */
    bool closing;         /* one side ended: the other drains, then both close */
} relay;

struct rb_forward {
    rb_srv *srv;
    char self_addr[256];  /* what this node advertises ("" until started) */
    char tls_id[80];      /* its client port's certificate (rb_tls_id), "" for plain TCP */
    rb_list relays;
    uint64_t total, fallbacks;
    char bad_addr[256];   /* a leader address that did not answer, */
    int64_t bad_until;    /* until then (monotonic ms) */
    char logged_addr[256]; /* the leader last logged as forwarded to */
    char logged_tls[256];  /* the leader last logged as presenting another certificate */
};

/* --- set-up --- */

/* addr with "localhost" as 127.0.0.1, into out. */
static void normalize(const char *addr, char *out, size_t n)
{
    if (!strncmp(addr, "localhost:", 10))
        snprintf(out, n, "127.0.0.1:%s", addr + 10);
    else
        snprintf(out, n, "%s", addr);
}

int rb_forward_check(rb_srv *srv, rb_err *err)
{
    if (!srv->cfg.storage.forward)
        return 0;
    if (!rb_eng_leader_supported(srv->eng))
        return rb_err_set(err, RB_EINVAL,
                          "storage.forward: needs distributed mode (a postgres:// storage.url); "
                          "this node's storage is %s", srv->eng->backend->name);
    const char *adv = srv->cfg.storage.advertise;
    char addr[300];
    normalize(adv ? adv : srv->cfg.server.listen, addr, sizeof addr);
    if (!rb_config_ip_port_valid(addr, false)) {
        if (adv)
            return rb_err_set(err, RB_EINVAL, "storage.advertise: '%s' is not \"ip:port\"", adv);
        return rb_err_set(err, RB_EINVAL,
                          "storage.forward: server.listen '%s' is not one address other nodes "
                          "can reach (every interface?): set storage.advertise to \"ip:port\"",
                          srv->cfg.server.listen);
    }
    srv->fwd = rb_xcalloc(1, sizeof *srv->fwd);
    srv->fwd->srv = srv;
    return 0;
}

void rb_forward_start(rb_srv *srv)
{
    rb_forward *fwd = srv->fwd;
    if (!fwd || !srv->listener)
        return;
    const char *adv = srv->cfg.storage.advertise;
    char addr[300];
    normalize(adv ? adv : srv->cfg.server.listen, addr, sizeof addr);
    char *colon = strrchr(addr, ':');
    if (!strcmp(colon, ":0")) { /* the port bound */
        struct sockaddr_storage bound;
        socklen_t blen = sizeof bound;
        getsockname(evconnlistener_get_fd(srv->listener), (struct sockaddr *)&bound, &blen);
        int port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                     : ((struct sockaddr_in *)&bound)->sin_port);
        snprintf(colon, sizeof addr - (size_t)(colon - addr), ":%d", port);
    }
    snprintf(fwd->self_addr, sizeof fwd->self_addr, "%s", addr);
    rb_tls_id(srv->tls, fwd->tls_id, sizeof fwd->tls_id);
    rb_eng_leader_offer(srv->eng, fwd->self_addr, fwd->tls_id);
    rb_log(RB_LOG_INFO, "forwarding: on; this node's client port is advertised as %s%s",
           fwd->self_addr, fwd->tls_id[0] ? " (tls)" : "");
}

/* "ip:port" or "[ip6]:port" into ss; -1 when it is neither. */
static int to_sockaddr(const char *addr, struct sockaddr_storage *ss, int *len)
{
    memset(ss, 0, sizeof *ss);
    const char *colon = strrchr(addr, ':');
    if (!colon || colon - addr >= 64)
        return -1;
    char host[64];
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    long port = strtol(colon + 1, NULL, 10);
    size_t hl = strlen(host);
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
            return -1;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof *s6;
        return 0;
    }
    if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
        return -1;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    *len = sizeof *s4;
    return 0;
}

/* --- relays --- */

static void relay_free(relay *r)
{
    rb_list_remove(&r->fwd->relays, &r->link);
    for (int i = 0; i < 2; i++) {
        side *d = &r->s[i];
        if (d->rd)
            event_free(d->rd);
        if (d->wr)
            event_free(d->wr);
        if (d->out)
            evbuffer_free(d->out);
        if (d->fd >= 0)
            evutil_closesocket(d->fd);
    }
    free(r);
}

/* The leader did not answer: the client is served here, and the address
 * is not tried again for a while (said once). */
static void relay_fallback(relay *r, const char *why)
{
    rb_forward *fwd = r->fwd;
    rb_srv *srv = fwd->srv;
    if (strcmp(fwd->bad_addr, r->addr) || rb_mono_ms() >= fwd->bad_until)
        rb_log(RB_LOG_WARN, "forwarding: the leader at %s cannot be reached (%s): serving "
                            "clients here for %d s", r->addr, why, RB_FORWARD_BACKOFF_MS / 1000);
    snprintf(fwd->bad_addr, sizeof fwd->bad_addr, "%s", r->addr);
    fwd->bad_until = rb_mono_ms() + RB_FORWARD_BACKOFF_MS;
    fwd->logged_addr[0] = '\0';
    fwd->fallbacks++;
    evutil_socket_t fd = r->s[0].fd;
    r->s[0].fd = -1;
    relay_free(r);
    if (srv->eng->stopping)
        evutil_closesocket(fd);
    else
        rb_conn_serve(srv, fd);
}

static bool again(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* One side ended (to is the other): what to still holds goes on, then
 * both close; a peer that takes nothing for 5 s is given up. False when r
 * was freed. */
static bool relay_close(relay *r, side *to)
{
    if (evbuffer_get_length(to->out) == 0) {
        relay_free(r);
        return false;
    }
    r->closing = true;
    event_del(r->s[0].rd);
    event_del(r->s[1].rd);
    struct timeval give_up = {5, 0};
    event_add(to->wr, &give_up);
    return true;
}

/* Bytes read on one side go to the other: written at once when nothing
 * waits before them, else queued behind what waits (the writable event
 * sends it); reading from stops while to holds RB_FORWARD_HIGH or more. */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    relay *r = arg;
    side *from = &r->s[fd == r->s[0].fd ? 0 : 1], *to = &r->s[fd == r->s[0].fd ? 1 : 0];
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
        if (!again())
            relay_free(r); /* a broken side: both close now */
        return;
    }
    if (n == 0) {
        relay_close(r, to);
        return;
    }
    size_t off = 0;
    if (evbuffer_get_length(to->out) == 0) {
        ssize_t w = send(to->fd, buf, (size_t)n, MSG_NOSIGNAL);
        if (w < 0 && !again()) {
            relay_free(r);
            return;
        }
        off = w > 0 ? (size_t)w : 0;
    }
    if (off == (size_t)n)
        return;
    evbuffer_add(to->out, buf + off, (size_t)n - off);
    event_add(to->wr, NULL);
    if (evbuffer_get_length(to->out) >= RB_FORWARD_HIGH)
        event_del(from->rd);
}

/* A side's socket takes bytes again: send what waits; once it holds no
 * more than RB_FORWARD_LOW its peer reads again; while closing, both close
 * once it is all sent (or after 5 s without progress). */
static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    relay *r = arg;
    side *to = &r->s[fd == r->s[0].fd ? 0 : 1], *from = &r->s[fd == r->s[0].fd ? 1 : 0];
    if (what & EV_TIMEOUT) {
        relay_free(r);
        return;
    }
    if (evbuffer_write(to->out, fd) < 0 && !again()) {
        relay_free(r);
        return;
    }
    size_t left = evbuffer_get_length(to->out);
    if (left == 0) {
        if (r->closing) {
            relay_free(r);
            return;
        }
        event_del(to->wr);
    }
    if (!r->closing && left <= RB_FORWARD_LOW && !event_pending(from->rd, EV_READ, NULL))
        event_add(from->rd, NULL);
}

/* The leader accepted: relaying starts. */
static void relay_start(relay *r)
{
    rb_forward *fwd = r->fwd;
    struct event_base *base = fwd->srv->eng->base;
    int one = 1;
    (void)setsockopt(r->s[1].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    event_free(r->s[1].wr); /* the connect's */
    r->s[1].wr = NULL;
    for (int i = 0; i < 2; i++) {
        side *d = &r->s[i];
        d->rd = event_new(base, d->fd, EV_READ | EV_PERSIST, on_readable, r);
        d->wr = event_new(base, d->fd, EV_WRITE | EV_PERSIST, on_writable, r);
        d->out = evbuffer_new();
        if (!d->rd || !d->wr || !d->out) {
            relay_free(r);
            return;
        }
    }
    r->relaying = true;
    fwd->total++;
    if (strcmp(fwd->logged_addr, r->addr)) {
        rb_log(RB_LOG_INFO, "forwarding: clients relayed to the leader at %s", r->addr);
        snprintf(fwd->logged_addr, sizeof fwd->logged_addr, "%s", r->addr);
    }
    event_add(r->s[0].rd, NULL);
    event_add(r->s[1].rd, NULL);
}

/* The connect to the leader finished, failed or ran out of time. */
static void on_connected(evutil_socket_t fd, short what, void *arg)
{
    relay *r = arg;
    if (what & EV_TIMEOUT) {
        relay_fallback(r, "no answer within 1 s");
        return;
    }
    int e = 0;
    socklen_t elen = sizeof e;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
        e = errno;
    if (e) {
        relay_fallback(r, strerror(e));
        return;
    }
    relay_start(r);
}

bool rb_forward_accept(rb_srv *srv, evutil_socket_t fd)
{
    rb_forward *fwd = srv->fwd;
    if (!fwd || !fwd->self_addr[0])
        return false;
    rb_eng_leader l;
    rb_eng_leader_of(srv->eng, &l);
    /* Served here: no leader known, this node leads (as far as it knows:
     * a node never forwards while it holds the lease, so two nodes cannot
     * send each other's clients round), or an address that is this node's
     * own. */
    if (!l.known || l.self || !strcmp(l.addr, fwd->self_addr))
        return false;
    /* The bytes cross unchanged, so a TLS client's session ends at the
     * leader: relayed only when the leader presents this node's own
     * certificate (or both speak plain TCP), so the client sees what this
     * node would have shown it. */
    if (strcmp(l.tls_id, fwd->tls_id)) {
        if (strcmp(fwd->logged_tls, l.addr))
            rb_log(RB_LOG_WARN, "forwarding: the leader at %s %s: serving clients here (give "
                                "every forwarding node the same server.tls_cert)", l.addr,
                   !l.tls_id[0] ? "speaks plain TCP and this node TLS"
                   : !fwd->tls_id[0] ? "speaks TLS and this node plain TCP"
                                     : "presents another certificate than this node's");
        snprintf(fwd->logged_tls, sizeof fwd->logged_tls, "%s", l.addr);
        fwd->fallbacks++;
        return false;
    }
    if (!strcmp(l.addr, fwd->bad_addr) && rb_mono_ms() < fwd->bad_until) {
        fwd->fallbacks++;
        return false;
    }
    struct sockaddr_storage ss;
    int len;
    if (to_sockaddr(l.addr, &ss, &len)) {
        if (strcmp(fwd->bad_addr, l.addr))
            rb_log(RB_LOG_WARN, "forwarding: the leader's address '%s' is not ip:port: serving "
                                "clients here", l.addr);
        snprintf(fwd->bad_addr, sizeof fwd->bad_addr, "%s", l.addr);
        fwd->bad_until = rb_mono_ms() + RB_FORWARD_BACKOFF_MS;
        fwd->fallbacks++;
        return false;
    }
    relay *r = rb_xcalloc(1, sizeof *r);
    r->fwd = fwd;
    r->s[0].fd = fd;
    r->s[1].fd = -1;
    snprintf(r->addr, sizeof r->addr, "%s", l.addr);
    rb_list_append(&fwd->relays, &r->link);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)evutil_make_socket_nonblocking(fd);
    r->s[1].fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->s[1].fd < 0) {
        relay_fallback(r, strerror(errno));
        return true;
    }
    if (connect(r->s[1].fd, (struct sockaddr *)&ss, (socklen_t)len) < 0 && errno != EINPROGRESS) {
        relay_fallback(r, strerror(errno)); /* an immediate refusal */
        return true;
    }
    r->s[1].wr = event_new(srv->eng->base, r->s[1].fd, EV_WRITE, on_connected, r);
    if (!r->s[1].wr) {
        relay_fallback(r, "out of memory");
        return true;
    }
    struct timeval tv = {RB_FORWARD_CONNECT_MS / 1000, (RB_FORWARD_CONNECT_MS % 1000) * 1000};
    event_add(r->s[1].wr, &tv);
    return true;
}

size_t rb_forward_open(const rb_srv *srv)
{
    return srv->fwd ? srv->fwd->relays.size : 0;
}

bool rb_forward_stats_of(const rb_srv *srv, rb_forward_stats *st)
{
    memset(st, 0, sizeof *st);
    rb_forward *fwd = srv->fwd;
    if (!fwd)
        return false;
    rb_eng_leader l;
    rb_eng_leader_of(srv->eng, &l);
    st->leader = l.known && l.self;
    if (l.known)
        snprintf(st->leader_addr, sizeof st->leader_addr, "%s", l.addr);
    st->open = fwd->relays.size;
    st->total = fwd->total;
    st->fallbacks = fwd->fallbacks;
    return true;
}

void rb_forward_free(rb_srv *srv)
{
    rb_forward *fwd = srv->fwd;
    if (!fwd)
        return;
    while (fwd->relays.head)
        relay_free(rb_container_of(fwd->relays.head, relay, link));
    free(fwd);
    srv->fwd = NULL;
}
