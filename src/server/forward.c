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
#include <event2/bufferevent.h>
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

/* One client connection relayed to the leader. Until the leader's side
 * connects, the client's socket is only held (cfd: nothing is read from
 * it, so a fallback serves it from its first byte); then both sides are
 * bufferevents and bytes go across unchanged. */
typedef struct relay {
    rb_link link; /* in fwd->relays */
    struct rb_forward *fwd;
    evutil_socket_t cfd;          /* the client's socket while connecting, else -1 */
    struct bufferevent *client;   /* once relaying */
    struct bufferevent *up;       /* the connection to the leader */
    struct event *timer;          /* the connect's deadline */
    char addr[256];               /* the leader's address */
    bool closing;                 /* one side ended: the other drains, then both close */
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
    if (r->timer)
        event_free(r->timer);
    if (r->up)
        bufferevent_free(r->up);
    if (r->client)
        bufferevent_free(r->client);
    if (r->cfd >= 0)
        evutil_closesocket(r->cfd);
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
    evutil_socket_t fd = r->cfd;
    r->cfd = -1;
    relay_free(r);
    if (srv->eng->stopping)
        evutil_closesocket(fd);
    else
        rb_conn_serve(srv, fd);
}

static struct bufferevent *other(const relay *r, const struct bufferevent *bev)
{
    return bev == r->client ? r->up : r->client;
}

/* Bytes from one side go to the other's output; a full output stops the
 * reading (on_write resumes it). */
static void on_read(struct bufferevent *bev, void *arg)
{
    relay *r = arg;
    struct bufferevent *to = other(r, bev);
    struct evbuffer *out = bufferevent_get_output(to);
    evbuffer_add_buffer(out, bufferevent_get_input(bev));
    if (evbuffer_get_length(out) >= RB_FORWARD_HIGH)
        bufferevent_disable(bev, EV_READ);
}

/* bev's output drained to the low watermark: its peer may read again;
 * while closing, the side left is freed once it has sent everything. */
static void on_write(struct bufferevent *bev, void *arg)
{
    relay *r = arg;
    if (r->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            relay_free(r);
        return;
    }
    struct bufferevent *from = other(r, bev);
    if (!(bufferevent_get_enabled(from) & EV_READ))
        bufferevent_enable(from, EV_READ);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    relay *r = arg;
    if (r->closing || (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))) {
        relay_free(r); /* a broken side: both close now */
        return;
    }
    if (!(what & BEV_EVENT_EOF))
        return;
    /* An orderly end: what it sent goes on, then the other side closes
     * (a last "-ERR" from the leader, or a client's END). */
    struct bufferevent *to = other(r, bev);
    struct evbuffer *out = bufferevent_get_output(to);
    evbuffer_add_buffer(out, bufferevent_get_input(bev));
    if (evbuffer_get_length(out) == 0) {
        relay_free(r);
        return;
    }
    r->closing = true;
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    bufferevent_disable(to, EV_READ);
    bufferevent_setwatermark(to, EV_WRITE, 0, 0);
    struct timeval give_up = {5, 0}; /* a peer that never reads */
    bufferevent_set_timeouts(to, NULL, &give_up);
    bufferevent_enable(to, EV_WRITE);
}

/* The leader accepted: relaying starts. */
static void relay_start(relay *r)
{
    rb_forward *fwd = r->fwd;
    rb_srv *srv = fwd->srv;
    event_free(r->timer);
    r->timer = NULL;
    int one = 1;
    (void)setsockopt(bufferevent_getfd(r->up), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    r->client = bufferevent_socket_new(srv->eng->base, r->cfd, BEV_OPT_CLOSE_ON_FREE);
    if (!r->client) {
        relay_free(r);
        return;
    }
    r->cfd = -1;
    fwd->total++;
    if (strcmp(fwd->logged_addr, r->addr)) {
        rb_log(RB_LOG_INFO, "forwarding: clients relayed to the leader at %s", r->addr);
        snprintf(fwd->logged_addr, sizeof fwd->logged_addr, "%s", r->addr);
    }
    struct bufferevent *b[2] = {r->client, r->up};
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(b[i], on_read, on_write, on_event, r);
        bufferevent_setwatermark(b[i], EV_WRITE, RB_FORWARD_LOW, 0);
        bufferevent_setwatermark(b[i], EV_READ, 0, RB_FORWARD_HIGH);
        bufferevent_enable(b[i], EV_READ | EV_WRITE);
    }
}

static void on_up_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    relay *r = arg;
    if (what & BEV_EVENT_CONNECTED) {
        relay_start(r);
        return;
    }
    char why[160];
    snprintf(why, sizeof why, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    relay_fallback(r, why);
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    relay_fallback(arg, "no answer within 1 s");
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
    r->cfd = fd;
    snprintf(r->addr, sizeof r->addr, "%s", l.addr);
    rb_list_append(&fwd->relays, &r->link);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    r->up = bufferevent_socket_new(srv->eng->base, -1, BEV_OPT_CLOSE_ON_FREE);
    r->timer = evtimer_new(srv->eng->base, on_connect_timeout, r);
    if (!r->up || !r->timer) {
        relay_fallback(r, "out of memory");
        return true;
    }
    bufferevent_setcb(r->up, NULL, NULL, on_up_event, r);
    struct timeval tv = {RB_FORWARD_CONNECT_MS / 1000, (RB_FORWARD_CONNECT_MS % 1000) * 1000};
    evtimer_add(r->timer, &tv);
    if (bufferevent_socket_connect(r->up, (struct sockaddr *)&ss, len) < 0) {
        char why[160];
        snprintf(why, sizeof why, "%s", strerror(errno));
        relay_fallback(r, why); /* an immediate refusal */
    }
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
