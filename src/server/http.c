/* The HTTP listener: HTTPS when a certificate is configured (and the
 * refusal of a password over plain HTTP off loopback), routing of /api/...,
 * HTTP basic auth against [server] password, the embedded dashboard files
 * and /metrics. */
#include "server/http_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "config/schema.h"
#include "server/assets.h"
#include "common/log.h"
#include "server/metrics.h"
#include "server/tls.h"

/* --- routing --- */

typedef struct route {
    enum evhttp_cmd_type method;
    int n;                  /* segments after /api/ */
    const char *pattern[4]; /* literal, or "*" for any one segment */
    rb_http_handler fn;
} route;

static const route routes[] = {
    {EVHTTP_REQ_GET, 1, {"info"}, rb_api_info},
    {EVHTTP_REQ_GET, 1, {"stats"}, rb_api_stats},
    {EVHTTP_REQ_GET, 1, {"queues"}, rb_api_queues},
    {EVHTTP_REQ_POST, 3, {"queues", "*", "*"}, rb_api_queue_action},
    {EVHTTP_REQ_GET, 1, {"jobs"}, rb_api_jobs},
    {EVHTTP_REQ_POST, 2, {"jobs", "*"}, rb_api_bulk_action},
    {EVHTTP_REQ_GET, 2, {"job", "*"}, rb_api_job},
    {EVHTTP_REQ_GET, 2, {"workflow", "*"}, rb_api_workflow},
    {EVHTTP_REQ_GET, 2, {"track", "*"}, rb_api_track},
    {EVHTTP_REQ_GET, 1, {"batches"}, rb_api_batches},
    {EVHTTP_REQ_GET, 2, {"batch", "*"}, rb_api_batch},
    {EVHTTP_REQ_POST, 3, {"job", "*", "*"}, rb_api_job_action},
    {EVHTTP_REQ_GET, 1, {"workers"}, rb_api_workers},
    {EVHTTP_REQ_POST, 2, {"workers", "*"}, rb_api_worker_action},
    {EVHTTP_REQ_POST, 2, {"policy", "simulate"}, rb_api_simulate},
    {EVHTTP_REQ_GET, 1, {"cron"}, rb_api_cron},
    {EVHTTP_REQ_GET, 1, {"throttles"}, rb_api_throttles},
    {EVHTTP_REQ_GET, 1, {"groups"}, rb_api_groups},
    {EVHTTP_REQ_GET, 2, {"groups", "*"}, rb_api_groups},
    {EVHTTP_REQ_GET, 3, {"groups", "*", "*"}, rb_api_group},
    {EVHTTP_REQ_POST, 4, {"groups", "*", "*", "*"}, rb_api_group_action},
};

static bool route_matches(const route *rt, char **seg, int nseg)
{
    if (rt->n != nseg)
        return false;
    for (int i = 0; i < nseg; i++)
        if (strcmp(rt->pattern[i], "*") && strcmp(rt->pattern[i], seg[i]))
            return false;
    return true;
}

/* Splits path (after "/api/") into decoded segments; false when a segment
 * decodes to something with a NUL byte or there are too many. */
static bool split_path(const char *path, char **seg, int *nseg, int max)
{
    *nseg = 0;
    while (*path) {
        size_t n = strcspn(path, "/");
        if (n > 0) {
            if (*nseg == max)
                return false;
            char *raw = rb_xstrndup(path, n);
            size_t len = 0;
            char *dec = evhttp_uridecode(raw, 0, &len);
            free(raw);
            if (!dec || strlen(dec) != len) {
                free(dec);
                return false;
            }
            seg[(*nseg)++] = dec;
        }
        path += n + (path[n] == '/');
    }
    return true;
}

static void api(rb_http *h, struct evhttp_request *req, const char *path)
{
    char *seg[8];
    int nseg = 0;
    if (!split_path(path, seg, &nseg, 8)) {
        for (int i = 0; i < nseg; i++)
            free(seg[i]);
        rb_http_reply_error(req, 404, "no such endpoint");
        return;
    }
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m == EVHTTP_REQ_HEAD)
        m = EVHTTP_REQ_GET;
    const route *hit = NULL;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && !hit; i++) {
        if (!route_matches(&routes[i], seg, nseg))
            continue;
        path_known = true;
        if (routes[i].method == m)
            hit = &routes[i];
    }
    if (hit) {
        rb_http_req r = {h, req, seg, nseg};
        if (hit->method != EVHTTP_REQ_POST || rb_http_json_body(req))
            hit->fn(&r);
    } else if (path_known) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          m == EVHTTP_REQ_GET ? "POST" : "GET");
        rb_http_reply_error(req, 405, "method not allowed on %s", evhttp_request_get_uri(req));
    } else {
        rb_http_reply_error(req, 404, "no such endpoint: %s", evhttp_request_get_uri(req));
    }
    for (int i = 0; i < nseg; i++)
        free(seg[i]);
}

/* --- authentication --- */

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes base64 text into out (NUL-terminated); false when malformed or
 * longer than outlen-1 bytes. */
static bool b64_decode(const char *in, char *out, size_t outlen)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (; *in && *in != '='; in++) {
        int v = b64_value(*in);
        if (v < 0)
            return false;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n + 1 >= outlen)
                return false;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return true;
}

/* Compares without an early exit on the first difference. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

/* True when no password is set or the request's basic auth carries it
 * (any user name). */
static bool authorized(rb_http *h, struct evhttp_request *req)
{
    const char *pw = h->srv->cfg.server.password;
    if (!pw || !*pw)
        return true;
    const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!a || strncasecmp(a, "Basic ", 6))
        return false;
    a += 6;
    while (*a == ' ')
        a++;
    char cred[1024];
    if (!b64_decode(a, cred, sizeof cred))
        return false;
    const char *colon = strchr(cred, ':');
    return colon && same_secret(colon + 1, pw);
}

/* --- static files and /metrics --- */

static const rb_asset *asset(const char *path)
{
    if (!strcmp(path, "/"))
        path = "/index.html";
    for (size_t i = 0; i < rb_web_n_assets; i++)
        if (!strcmp(rb_web_assets[i].path, path))
            return &rb_web_assets[i];
    return NULL;
}

/* This node's counters and histograms with the engine's queues and jobs
 * by state (the cluster's in distributed mode), and the store's link. When
 * the store cannot be read (a database unreachable) the node's own figures
 * and the link are still served, without the jobs': a scrape during an
 * outage shows it. */
static void metrics_done(rb_srv *srv, rb_eng_op *op)
{
    rb_eng_health h;
    rb_eng_health_of(srv->eng, &h);
    if (op->rc && !(h.known && rb_eng_store_error(op->rc)) && rb_api_failed(srv, op))
        return;
    const rb_eng_info *f = &op->u.info;
    rb_metrics_queue *qs = rb_xcalloc(f->n_queues + 1, sizeof *qs);
    for (size_t i = 0; i < f->n_queues; i++)
        qs[i] = (rb_metrics_queue){f->queues[i].name, f->queues[i].size, f->queues[i].paused,
                                   f->latency_s[i]};
    rb_metrics_state st = {.queues = qs,         .n_queues = f->n_queues,
                           .scheduled = f->scheduled, .enqueued = f->enqueued,
                           .working = f->working, .retries = f->retries,
                           .dead = f->dead,        .waiting = f->waiting,
                           .blocked = f->blocked};
    json_t *batches = json_object_get(f->rebound, "batches");
    if (json_is_object(batches)) {
        st.has_batches = true;
        st.batches_open = json_integer_value(json_object_get(batches, "open"));
        st.batch_callbacks = json_integer_value(json_object_get(batches, "callbacks"));
    }
    json_t *unique = json_object_get(f->rebound, "unique");
    if (json_is_object(unique)) {
        st.has_unique = true;
        st.unique_locks = json_integer_value(json_object_get(unique, "locks"));
        st.unique_rejected = json_integer_value(json_object_get(unique, "rejected"));
    }
    json_t *expired = json_object_get(f->rebound, "expired");
    if (json_is_integer(expired)) {
        st.has_expired = true;
        st.expired = json_integer_value(expired);
    }
    json_t *reported = json_object_get(f->rebound, "throttles");
    rb_metrics_throttle *ts = rb_xcalloc(srv->cfg.n_throttles + 1, sizeof *ts);
    for (size_t i = 0; i < srv->cfg.n_throttles; i++) {
        const rb_throttle *t = &srv->cfg.throttles[i];
        json_t *in_use = json_object_get(json_object_get(reported, t->queue), "in_use");
        ts[i] = (rb_metrics_throttle){t->queue,     t->concurrency,
                                      t->timeout_s, json_is_integer(in_use) ? json_integer_value(in_use) : -1,
                                      t->rate,      t->period_ms,
                                      t->burst};
    }
    st.throttles = ts;
    st.n_throttles = srv->cfg.n_throttles;
    st.groups = json_object_get(f->rebound, "groups");
    st.jobs_unknown = op->rc != 0;
    st.has_link = h.known;
    st.link_up = h.up;
    st.link_since_ms = h.since_ms;
    st.last_commit_ms = h.last_commit_ms;
    rb_buf b = RB_BUF_INIT;
    rb_metrics_render_state(srv->eng->metrics, srv, &st, &b);
    free(ts);
    rb_http_reply_raw(rb_api_call_of(op)->req, 200, "text/plain; version=0.0.4; charset=utf-8",
                      rb_buf_str(&b), b.len);
    rb_buf_release(&b);
    free(qs);
    rb_eng_op_finish(srv->eng, op);
}

static void serve_metrics(rb_http *h, struct evhttp_request *req)
{
    rb_eng_submit(h->srv->eng, rb_api_info_op(req, metrics_done, true));
}

/* GET /healthz, for a load balancer (no password: it tells only whether
 * this node can commit): 200 {"status":"ok",...}, or 503 while the store's
 * link is down, with the link's state and last commit. At once: no round
 * trip to the store. */
static void serve_health(rb_http *h, struct evhttp_request *req)
{
    rb_eng_health hl;
    rb_eng_health_of(h->srv->eng, &hl);
    json_t *v = json_pack("{s:s}", "status", hl.up ? "ok" : "unavailable");
    if (hl.known)
        json_object_set_new(v, "database", rb_eng_health_json(&hl, false));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    rb_http_reply_json(req, hl.up ? 200 : 503, v);
}

/* An HTTPS connection is going away: end its TLS session with a
 * close_notify, so a client reading to the end sees an orderly close. */
static void on_https_close(struct evhttp_connection *evcon, void *arg)
{
    (void)arg;
    rb_tls_bev_close_notify(evhttp_connection_get_bufferevent(evcon));
}

static void on_request(struct evhttp_request *req, void *arg)
{
    rb_http *h = arg;
    if (h->srv->http_tls)
        evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_https_close, NULL);
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (!path || !*path)
        path = "/";
    bool is_metrics = !strcmp(path, "/metrics");
    if (!rb_http_host_allowed(h, req) || !rb_http_same_origin(req))
        return;
    if (!strcmp(path, "/healthz")) { /* a load balancer's probe: no password */
        serve_health(h, req);
        return;
    }
    /* metrics_auth "auto" asks as the dashboard does: when a password is set */
    bool open = is_metrics && h->srv->cfg.server.metrics_auth == RB_CFG_OFF;
    if (!open && !authorized(h, req)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Basic realm=\"Rebound\", charset=\"UTF-8\"");
        rb_http_reply_error(req, 401, "password required (HTTP basic auth, any user name)");
        return;
    }
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (!strncmp(path, "/api/", 5)) {
        api(h, req, path + 5);
        return;
    }
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
        rb_http_reply_error(req, 405, "method not allowed on %s", path);
        return;
    }
    if (is_metrics) {
        serve_metrics(h, req);
        return;
    }
    const rb_asset *a = asset(path);
    if (!a) {
        rb_http_reply_error(req, 404, "not found: %s", path);
        return;
    }
    rb_http_reply_raw(req, 200, a->content_type, (const char *)a->data, a->len);
}

/* --- lifecycle --- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_http *h = arg;
    rb_metrics_sample(h->srv->eng->metrics, rb_now_ms() / 1000);
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" into host (for getaddrinfo) and port;
 * -1 when malformed. */
static int split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= hostlen)
        return -1;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535)
        return -1;
    const char *h = addr;
    size_t n = (size_t)(colon - addr);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    if (!*host)
        snprintf(host, hostlen, "0.0.0.0");
    else if (!strcmp(host, "localhost"))
        snprintf(host, hostlen, "127.0.0.1");
    *port = (int)p;
    return 0;
}

static int write_port_file(const char *path, int port, rb_err *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        return rb_err_set(err, RB_EIO, "cannot write port file '%s'", path);
    return 0;
}

/* Each accepted HTTPS connection's bufferevent, made without its socket
 * (evhttp sets it). */
static struct bufferevent *https_bev(struct event_base *base, void *arg)
{
    struct bufferevent *bev = rb_tls_bev_new(arg, base, -1);
    if (!bev) {
        /* evhttp would serve this connection in plain text instead: never.
         * SSL_new fails only when memory runs out, which aborts anyway. */
        rb_log(RB_LOG_ERROR, "out of memory making a tls session for an HTTPS connection");
        abort();
    }
    return bev;
}

/* The address to serve HTTP on: addr when given, else [server]
 * http_listen; *from_default tells whether it is the built-in default.
 * NULL when HTTP is off. */
static const char *http_addr(rb_srv *srv, const char *addr, bool *from_default)
{
    *from_default = false;
    if (!addr) {
        int k = rb_config_key_index("server.http_listen");
        addr = srv->cfg.server.http_listen;
        *from_default = k >= 0 && srv->cfg.key_from[k] == RB_CFG_FROM_DEFAULT;
    }
    return addr && *addr && strcmp(addr, "off") ? addr : NULL;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
    if (sa->sa_family != AF_INET6)
        return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

static bool is_wildcard(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* 1 when every address host resolves to (resolved as evhttp does to bind)
 * is a loopback one, 0 when one is not, a negative code with err set when
 * it does not resolve. */
static int loopback_only(const char *addr, const char *host, rb_err *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai)
        return rb_err_set(err, RB_EINVAL, "cannot resolve http listen address '%s': %s", addr,
                          gai_strerror(gai));
    int all = 1;
    for (const struct addrinfo *p = res; p; p = p->ai_next)
        all &= is_loopback(p->ai_addr);
    freeaddrinfo(res);
    return all;
}

int rb_http_prepare(rb_srv *srv, const char *addr, rb_err *err)
{
    bool from_default;
    if (!(addr = http_addr(srv, addr, &from_default)))
        return 0;
    const char *cert = srv->cfg.server.http_tls_cert, *key = srv->cfg.server.http_tls_key;
    if (cert && key) { /* the config allows both or neither */
        if (!(srv->http_tls = rb_tls_new(cert, key, err))) {
            rb_err_prefix(err, "[server] http_tls_cert, http_tls_key");
            return err ? err->code : RB_EIO;
        }
    } else {
        srv->http_tls = srv->tls;
    }
    const char *pw = srv->cfg.server.password;
    if (srv->http_tls || !pw || !*pw)
        return 0;
    char host[256];
    int port;
    if (split_addr(addr, host, sizeof host, &port))
        return rb_err_set(err, RB_EINVAL, "http listen address '%s' is not HOST:PORT", addr);
    int lo = loopback_only(addr, host, err);
    if (lo)
        return lo < 0 ? lo : 0;
    if (srv->cfg.server.http_allow_plaintext_password) {
        rb_log(RB_LOG_WARN, "plain HTTP with a password on '%s' (http_allow_plaintext_password): "
                            "basic auth crosses the network in clear text", addr);
        return 0;
    }
    return rb_err_set(err, RB_EINVAL,
                      "refusing plain HTTP on '%s' (not loopback) with [server] password "
                      "set: basic auth would send it in clear text; serve HTTPS "
                      "([server] tls_cert and tls_key, or http_tls_cert and http_tls_key) or set "
                      "[server] http_allow_plaintext_password = true",
                      addr);
}

static int bind_http(rb_http *h, const char *addr, const char *port_file, rb_err *err)
{
    char host[256];
    int port;
    if (split_addr(addr, host, sizeof host, &port))
        return rb_err_set(err, RB_EINVAL, "http listen address '%s' is not HOST:PORT", addr);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(h->eh, host, (ev_uint16_t)port);
    if (!bs)
        return rb_err_set(err, RB_EIO, "cannot listen for HTTP on '%s': %s", addr, strerror(errno));
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &len);
    int bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    rb_http_hosts_init(h, addr, is_loopback((struct sockaddr *)&ss) ||
                                    is_wildcard((struct sockaddr *)&ss));
    if (port_file && write_port_file(port_file, bound, err))
        return err ? err->code : RB_EIO;
    rb_log(RB_LOG_INFO, "dashboard and API on %s://%s (port %d)",
           h->srv->http_tls ? "https" : "http", addr, bound);
    return 0;
}

int rb_http_start(rb_srv *srv, const char *addr, const char *port_file, rb_err *err)
{
    bool from_default;
    if (!(addr = http_addr(srv, addr, &from_default)))
        return 0;
    rb_http *h = rb_xcalloc(1, sizeof *h);
    h->srv = srv;
    h->eh = evhttp_new(srv->eng->base);
    evhttp_set_gencb(h->eh, on_request, h);
    if (srv->http_tls)
        evhttp_set_bevcb(h->eh, https_bev, srv->http_tls);
    evhttp_set_max_body_size(h->eh, RB_HTTP_MAX_BODY);
    evhttp_set_max_headers_size(h->eh, 64 * 1024);
    evhttp_set_timeout(h->eh, 60);
    evhttp_set_allowed_methods(h->eh, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                          EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                          EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    int rc = bind_http(h, addr, port_file, err);
    if (rc) {
        rb_http_free(h);
        if (from_default && rc == RB_EIO && !port_file) {
            /* The built-in address is a convenience: another server may
             * have it. An address someone asked for must work. */
            rb_log(RB_LOG_WARN, "%s; serving without HTTP", rb_err_msg(err));
            return 0;
        }
        return rc;
    }
    h->tick = event_new(srv->eng->base, -1, EV_PERSIST, on_tick, h);
    struct timeval one = {1, 0};
    event_add(h->tick, &one);
    rb_metrics_sample(srv->eng->metrics, rb_now_ms() / 1000);
    srv->http = h;
    return 0;
}

void rb_http_free(rb_http *h)
{
    if (!h)
        return;
    if (h->tick)
        event_free(h->tick);
    evhttp_free(h->eh);
    if (h->srv->http == h)
        h->srv->http = NULL;
    free(h->listen_name);
    free(h);
}
