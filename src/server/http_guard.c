/* What the HTTP side refuses before a handler runs (docs/http.md,
 * "Security"): a Host this server does not answer to (DNS rebinding), a
 * state-changing request a browser sent from another origin (cross-origin
 * request forgery), and an API body that is not JSON; and the headers that
 * keep a browser from framing, sniffing or leaking what it serves. */
#include "server/http_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "common/buf.h"
#include "config/schema.h"
#include "common/log.h"

/* --- headers --- */

/* The dashboard's scripts and styles are its own files (web/app.js,
 * web/style.css): nothing inline, nothing from elsewhere, no framing. Its
 * one data: URL is the empty favicon. */
#define CSP \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

void rb_http_security_headers(struct evkeyvalq *out)
{
    evhttp_add_header(out, "Content-Security-Policy", CSP);
    evhttp_add_header(out, "X-Frame-Options", "DENY");
    evhttp_add_header(out, "Referrer-Policy", "no-referrer");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(out, "Cross-Origin-Resource-Policy", "same-origin");
}

/* --- Host --- */

/* True when name ("1.2.3.4", "[::1]") is an IP address: a browser sends
 * one only for a page loaded from that address, never through DNS. */
static bool ip_literal(const char *name)
{
    unsigned char a[16];
    if (inet_pton(AF_INET, name, a) == 1)
        return true;
    size_t n = strlen(name);
    if (n < 3 || name[0] != '[' || name[n - 1] != ']' || n - 2 >= 64)
        return false;
    char v6[64];
    memcpy(v6, name + 1, n - 2);
    v6[n - 2] = '\0';
    return inet_pton(AF_INET6, v6, a) == 1;
}

/* The host of "HOST:PORT", "[V6]:PORT", "HOST" or "[V6]" into out (without
 * the port, with a V6's brackets, without a final dot). */
static void host_name(const char *s, char *out, size_t outlen)
{
    size_t n = s[0] == '[' ? strcspn(s, "]") + (strchr(s, ']') != NULL) : strcspn(s, ":");
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    if (n > 1 && out[n - 1] == '.')
        out[n - 1] = '\0';
}

void rb_http_hosts_init(rb_http *h, const char *addr, bool local)
{
    char name[256];
    host_name(addr, name, sizeof name);
    free(h->listen_name);
    h->listen_name = *name && !ip_literal(name) ? rb_xstrdup(name) : NULL;
    h->local = local;
}

bool rb_http_host_allowed(rb_http *h, struct evhttp_request *req)
{
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    if (!host)
        return true;
    char name[256];
    host_name(host, name, sizeof name);
    if (ip_literal(name) || (h->local && !strcasecmp(name, "localhost")) ||
        (h->listen_name && !strcasecmp(name, h->listen_name)))
        return true;
    for (char **p = h->srv->cfg.server.http_hosts; p && *p; p++)
        if (rb_config_host_matches(*p, name))
            return true;
    rb_log(RB_LOG_WARN, "HTTP: refused Host '%.200s' (not in [server] http_hosts)", host);
    rb_http_reply_error(req, 421, "host '%.200s' is not a name this server answers to: add it "
                        "to [server] http_hosts", name);
    return false;
}

/* --- cross-origin requests --- */

/* Methods that change nothing (every other one may). */
static bool safe_method(enum evhttp_cmd_type m)
{
    return m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD || m == EVHTTP_REQ_OPTIONS;
}

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_PATCH: return "PATCH";
    default: return "request";
    }
}

/* True when origin ("scheme://host[:port]") names the authority host (the
 * request's Host header) with http or https. The scheme is not compared:
 * behind a proxy that ends TLS the browser's origin is https and this
 * server's plain http, and one port serves one scheme. */
static bool origin_is_host(const char *origin, const char *host)
{
    const char *auth = !strncasecmp(origin, "http://", 7)    ? origin + 7
                       : !strncasecmp(origin, "https://", 8) ? origin + 8
                                                             : NULL;
    return auth && host && *host && !strcasecmp(auth, host);
}

bool rb_http_same_origin(struct evhttp_request *req)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (safe_method(m))
        return true;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *site = evhttp_find_header(in, "Sec-Fetch-Site");
    const char *origin = evhttp_find_header(in, "Origin");
    const char *host = evhttp_find_header(in, "Host");
    char why[400];
    if (site) {
        /* a browser's own word: same-origin, or none (typed by the user) */
        if (!strcasecmp(site, "same-origin") || !strcasecmp(site, "none"))
            return true;
        snprintf(why, sizeof why, "Sec-Fetch-Site '%.40s'", site);
    } else {
        /* an older browser: its Origin must be this server; no Origin at
         * all is not a browser's cross-origin request (curl, scripts) */
        if (!origin || origin_is_host(origin, host))
            return true;
        snprintf(why, sizeof why, "Origin '%.150s' is not this server's (Host '%.150s')", origin,
                 host ? host : "");
    }
    rb_log(RB_LOG_WARN, "HTTP: refused a cross-origin %s %.200s: %s", method_name(m),
           evhttp_request_get_uri(req), why);
    rb_http_reply_error(req, 403, "cross-origin request refused: %s", why);
    return false;
}

/* --- bodies --- */

bool rb_http_json_body(struct evhttp_request *req)
{
    const char *type = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    size_t len = evbuffer_get_length(evhttp_request_get_input_buffer(req));
    if (!type && !len)
        return true; /* no body at all (curl -X POST) */
    if (type) {
        size_t n = strcspn(type, ";");
        while (n && (type[n - 1] == ' ' || type[n - 1] == '\t'))
            n--;
        if (n == 16 && !strncasecmp(type, "application/json", 16))
            return true;
        rb_http_reply_error(req, 415, "the request body must be JSON: Content-Type '%.100s' is "
                            "not application/json", type);
    } else {
        rb_http_reply_error(req, 415, "the request body must be JSON: send Content-Type: "
                            "application/json");
    }
    return false;
}
