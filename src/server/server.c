/* The server's lifecycle: configuration, recovery from the store, the
 * listener, signals, and a graceful shutdown (stop accepting, tell workers
 * to quiet, finish the commit in progress, exit). */
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/fault.h"
#include "common/timeutil.h"
#include "engine/engine.h"
#include "engine/flow.h"
#include "server/cron.h"
#include "server/forward.h"
#include "server/http.h"
#include "common/log.h"
#include "server/metrics.h"
#include "server/sdnotify.h"
#include "server/srv.h"
#include "server/tls.h"

/* --- events --- */

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    rb_conn_accept(arg, fd);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    if (srv->listener)
        evconnlistener_enable(srv->listener);
}

/* accept() failed. Out of file descriptors (EMFILE, ENFILE) the pending
 * connection would make the listener fire again at once: pause accepting
 * for 100 ms instead of spinning. */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    rb_srv *srv = arg;
    int e = errno;
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
        return;
    rb_log(RB_LOG_WARN, "cannot accept a connection: %s; pausing accepts for 100 ms",
           strerror(e));
    evconnlistener_disable(l);
    if (!srv->accept_ev)
        srv->accept_ev = evtimer_new(srv->eng->base, on_accept_resume, srv);
    struct timeval tv = {0, 100000};
    evtimer_add(srv->accept_ev, &tv);
}

/* Raises the soft limit on open files to the hard one, so max_connections
 * idle clients fit; warns when they still cannot. */
static void raise_fd_limit(const rb_srv *srv)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t want = (rlim_t)srv->cfg.server.max_connections + 64;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        rb_log(RB_LOG_WARN, "open file limit %llu is below max_connections + 64 (%llu)",
               (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_srv *srv = arg;
    event_base_loopexit(srv->eng->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    rb_srv *srv = arg;
    if (srv->eng->stopping) {
        rb_log(RB_LOG_WARN, "second signal: exiting now");
        event_base_loopexit(srv->eng->base, NULL);
        return;
    }
    srv->eng->stopping = true;
    srv->quiet_all = RB_WORKER_QUIET;
    rb_sdnotify("STOPPING=1\nSTATUS=shutting down");
    rb_log(RB_LOG_INFO, "signal %d: shutting down (no new connections, workers told to quiet)",
           (int)sig);
    if (srv->listener) {
        evconnlistener_free(srv->listener);
        srv->listener = NULL;
    }
    /* Give connections a moment to finish their command and hear "quiet";
     * with none open, stop at once. */
    struct timeval tv = {srv->conns.size ? 1 : 0, 0};
    srv->grace_ev = evtimer_new(srv->eng->base, on_grace, srv);
    evtimer_add(srv->grace_ev, &tv);
}

/* --- set-up --- */

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces); port 0 = any free
 * port. Returns 0 with ss and len filled, -1 when malformed. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, int *len)
{
    memset(ss, 0, sizeof *ss);
    const char *colon = strrchr(addr, ':');
    if (!colon || colon - addr >= 256)
        return -1;
    char host[256], *end;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return -1;
    char *h = host;
    size_t hl = strlen(h);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
    }
    if (!*h || !strcmp(h, "localhost"))
        h = *h ? "127.0.0.1" : "0.0.0.0";
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, h, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *len = sizeof *s4;
    } else if (inet_pton(AF_INET6, h, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof *s6;
    } else {
        return -1;
    }
    return 0;
}

static int listen_on(rb_srv *srv, const char *addr, const char *port_file, rb_err *err)
{
    struct sockaddr_storage ss;
    int len;
    if (parse_addr(addr, &ss, &len))
        return rb_err_set(err, RB_EINVAL, "listen address '%s' is not HOST:PORT", addr);
    srv->listener = evconnlistener_new_bind(srv->eng->base, on_accept, srv,
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                                LEV_OPT_CLOSE_ON_EXEC,
                                            512, (struct sockaddr *)&ss, len);
    if (!srv->listener)
        return rb_err_set(err, RB_EIO, "cannot listen on '%s': %s", addr, strerror(errno));
    evconnlistener_set_error_cb(srv->listener, on_accept_error);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    getsockname(evconnlistener_get_fd(srv->listener), (struct sockaddr *)&bound, &blen);
    int port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port);
    if (port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, port_file) != 0)
            return rb_err_set(err, RB_EIO, "cannot write port file '%s'", port_file);
    }
    rb_log(RB_LOG_INFO, "listening on %s (port %d%s)", addr, port, srv->tls ? ", tls" : "");
    return 0;
}

static void close_conns(rb_srv *srv)
{
    while (srv->conns.head)
        rb_conn_close(rb_container_of(srv->conns.head, rb_conn, link));
    while (srv->draining.head) {
        rb_conn *c = rb_container_of(srv->draining.head, rb_conn, link);
        rb_list_remove(&srv->draining, &c->link);
        bufferevent_free(c->bev);
        c->bev = NULL;
        if (c->refs == 0)
            free(c);
    }
}

/* --- the in-memory server (srv.h) --- */

rb_srv *rb_srv_alloc(void)
{
    rb_srv *srv = rb_xcalloc(1, sizeof *srv);
    srv->started_ms = rb_now_ms();
    srv->eng = rb_eng_new(srv, &srv->cfg, &rb_conn_client);
    rb_rng_seed_os(&srv->rng);
    return srv;
}

void rb_srv_loop_new(rb_srv *srv)
{
    /* The changelist folds the add/remove of EV_WRITE around each reply
     * into one epoll_ctl (or none) per loop iteration. */
    struct event_config *ecfg = event_config_new();
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    srv->eng->base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
    if (!srv->eng->base)
        srv->eng->base = event_base_new();
    if (srv->eng->backend && srv->eng->backend->attach)
        srv->eng->backend->attach(srv->eng);
}

static void free_event(struct event *ev)
{
    if (ev)
        event_free(ev);
}

void rb_srv_free(rb_srv *srv)
{
    if (srv->listener)
        evconnlistener_free(srv->listener);
    close_conns(srv);
    rb_forward_free(srv); /* relayed clients see their connection end */
    /* what was submitted finishes: its completions run */
    if (srv->eng->backend && srv->eng->backend->close)
        srv->eng->backend->close(srv->eng);
    rb_cron_free(srv); /* after the backend: a tick's push completes there */
    rb_http_free(srv->http); /* after the backend: actions answer from its completions */
    free_event(srv->grace_ev);
    free_event(srv->watchdog_ev);
    free_event(srv->accept_ev);
    free_event(srv->sigterm_ev);
    free_event(srv->sigint_ev);
    if (srv->eng->base)
        event_base_free(srv->eng->base);
    if (srv->eng->backend && srv->eng->backend->release)
        srv->eng->backend->release(srv->eng);
    if (srv->http_tls != srv->tls)
        rb_tls_free(srv->http_tls);
    rb_tls_free(srv->tls);
    rb_config_release(&srv->cfg);
    rb_eng_free(srv->eng);
    free(srv);
}

int rb_server_run(const rb_server_opts *o, rb_err *err)
{
    int rc = 0;
    if (o->log_level) {
        int l = rb_log_level_parse(o->log_level);
        if (l < 0)
            return rb_err_set(err, RB_EINVAL, "--log-level '%s' is not debug, info, warn or error",
                              o->log_level);
        rb_log_set_level((rb_log_level)l);
    }
    rb_srv *srv = rb_srv_alloc();
    if ((rc = rb_config_load(&srv->cfg, o->config_path, o->env, err)))
        goto out;
    rb_log_set_json(srv->cfg.log.format == 1);
    if (!o->log_level) /* --log-level wins over [log] level */
        rb_log_set_level((rb_log_level)srv->cfg.log.level);
    if (srv->cfg.path || srv->cfg.overlay_path)
        rb_log(RB_LOG_INFO, "configuration: %s%s%s", srv->cfg.path ? srv->cfg.path : "defaults",
               srv->cfg.overlay_path ? " + overlay " : "",
               srv->cfg.overlay_path ? srv->cfg.overlay_path : "");
    if (o->listen) {
        free(srv->cfg.server.listen);
        srv->cfg.server.listen = rb_xstrdup(o->listen);
    }
    if (o->db) {
        free(srv->cfg.storage.url);
        srv->cfg.storage.url = rb_xstrdup(o->db);
    }
    if (srv->cfg.server.reserve_for_s < 1)
        srv->cfg.server.reserve_for_s = 1800;
    const char *cert = srv->cfg.server.tls_cert, *key = srv->cfg.server.tls_key;
    if (cert && *cert && key && *key && !(srv->tls = rb_tls_new(cert, key, err))) {
        rc = err ? err->code : RB_EIO;
        goto out;
    }
    if ((rc = rb_http_prepare(srv, o->http_listen, err))) /* HTTPS, or may plain HTTP serve? */
        goto out;
    raise_fd_limit(srv);
    srv->eng->backend = rb_backend_for_url(srv->cfg.storage.url);
    if ((rc = rb_forward_check(srv, err))) /* storage.forward: distributed, an address */
        goto out;
    if ((rc = srv->eng->backend->open(srv->eng, err))) /* the storage, and what it holds */
        goto out;
    if ((rc = rb_eng_throttle_check(srv->eng, err))) /* [throttles] where the backend has none */
        goto out;
    if ((rc = rb_eng_flow_limits_check(srv->eng, err))) /* [groups] limits, [throttles] rate */
        goto out;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit is a write error (EFBIG), not death */
    /* Ignored before the loop's events take SIGTERM and SIGINT: libevent
     * puts back the disposition it found when they are deleted after the
     * loop, so a repeat that lands then (a second Ctrl-C, a service
     * manager's repeat) is ignored rather than killing the final close
     * half way (a default action there killed a test's server once). */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    rb_srv_loop_new(srv);
    srv->sigterm_ev = evsignal_new(srv->eng->base, SIGTERM, on_signal, srv);
    srv->sigint_ev = evsignal_new(srv->eng->base, SIGINT, on_signal, srv);
    event_add(srv->sigterm_ev, NULL);
    event_add(srv->sigint_ev, NULL);
    if ((rc = rb_http_start(srv, o->http_listen, o->http_port_file, err)))
        goto out;
    if ((rc = listen_on(srv, srv->cfg.server.listen, o->port_file, err)))
        goto out;
    rb_forward_start(srv); /* storage.forward: compete for the leader lease */
    rb_cron_start(srv); /* [[cron]]: the timer (server/cron.h) */
    rb_log(RB_LOG_INFO, "rebound started (backend %s)", srv->eng->backend->name);
    /* systemd (Type=notify): ready once recovered and listening; keep-alives
     * from this loop, so a loop that stops turning gets the service restarted */
    rb_sdnotify("READY=1\nSTATUS=accepting connections");
    srv->watchdog_ev = rb_sdnotify_watchdog_start(srv->eng->base);
    event_base_dispatch(srv->eng->base);
    /* The loop is over: a further SIGTERM or SIGINT (a second Ctrl-C, a
     * service manager's repeat) must not kill the final commit half way.
     * Deleting the events puts back what was there before them: ignored
     * (set above, before they were added). */
    free_event(srv->sigterm_ev);
    free_event(srv->sigint_ev);
    srv->sigterm_ev = srv->sigint_ev = NULL;
    long long pause_ms = (long long)rb_fault_int("server.stop_pause_ms", 0); /* test hook */
    if (pause_ms > 0) {
        struct timespec ts = {(time_t)(pause_ms / 1000), (long)(pause_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) && errno == EINTR)
            ;
    }
out:
    rb_srv_free(srv);
    if (!rc)
        rb_log(RB_LOG_INFO, "rebound stopped");
    return rc;
}
