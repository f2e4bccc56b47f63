/* Server URLs: where the default comes from, and
 * `tcp[+tls]://[:password@]host:port` taken apart. */
#include "client/internal.h"

#include <stdlib.h>
#include <string.h>

static const char *env_nonempty(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    return v && *v ? v : NULL;
}

const char *rb_client_default_url(void)
{
    const char *v = env_nonempty("FAKTORY_URL");
    if (!v)
        v = env_nonempty(env_nonempty("FAKTORY_PROVIDER"));
    if (!v)
        v = env_nonempty("REBOUND_URL");
    return v ? v : RB_CLIENT_DEFAULT_URL;
}

/* Copies [s, s+n) into out (cap bytes) or fails naming what. */
static int copy_part(char *out, size_t cap, const char *s, size_t n, const char *what,
                     const char *url, rb_err *err)
{
    if (n >= cap)
        return rb_err_set(err, RB_EINVAL, "%s too long in url '%s'", what, url);
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

int rb_client_url_parse(const char *url, rb_client_url *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!url || !*url)
        return rb_err_set(err, RB_EINVAL, "empty url");
    const char *p = url;
    const char *scheme_end = strstr(p, "://");
    if (scheme_end) {
        size_t n = (size_t)(scheme_end - p);
        if (n == 7 && !strncmp(p, "tcp+tls", 7))
            out->tls = 1;
        else if (n != 3 || strncmp(p, "tcp", 3) != 0)
            return rb_err_set(err, RB_EINVAL,
                              "unsupported scheme in url '%s' (want tcp:// or tcp+tls://)", url);
        p = scheme_end + 3;
    }
    /* Authority ends at the first '/', '?' or '#'; a trailing "/" is fine. */
    size_t alen = strcspn(p, "/?#");
    if (p[alen] && strcmp(p + alen, "/") != 0)
        return rb_err_set(err, RB_EINVAL, "unexpected path in url '%s'", url);
    const char *auth_end = p + alen;
    const char *at = memrchr(p, '@', alen);
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            int rc = copy_part(out->password, sizeof out->password, colon + 1,
                               (size_t)(at - colon - 1), "password", url, err);
            if (rc)
                return rc;
        }
        p = at + 1;
    }
    const char *host = p, *host_end, *port = NULL;
    if (*p == '[') {
        const char *close = memchr(p, ']', (size_t)(auth_end - p));
        if (!close)
            return rb_err_set(err, RB_EINVAL, "unclosed '[' in url '%s'", url);
        host = p + 1;
        host_end = close;
        if (close + 1 < auth_end) {
            if (close[1] != ':')
                return rb_err_set(err, RB_EINVAL, "bad host in url '%s'", url);
            port = close + 2;
        }
    } else {
        const char *colon = memrchr(p, ':', (size_t)(auth_end - p));
        host_end = colon ? colon : auth_end;
        if (colon)
            port = colon + 1;
    }
    if (host_end == host)
        return rb_err_set(err, RB_EINVAL, "no host in url '%s'", url);
    int rc = copy_part(out->host, sizeof out->host, host, (size_t)(host_end - host), "host",
                       url, err);
    if (rc)
        return rc;
    if (!port) {
        strcpy(out->port, "7419");
        return 0;
    }
    size_t plen = (size_t)(auth_end - port);
    unsigned long v = 0;
    if (plen == 0 || plen > 5)
        return rb_err_set(err, RB_EINVAL, "bad port in url '%s' (want 1-65535)", url);
    for (size_t i = 0; i < plen; i++) {
        if (port[i] < '0' || port[i] > '9')
            return rb_err_set(err, RB_EINVAL, "bad port in url '%s' (want 1-65535)", url);
        v = v * 10 + (unsigned long)(port[i] - '0');
    }
    if (v < 1 || v > 65535)
        return rb_err_set(err, RB_EINVAL, "bad port in url '%s' (want 1-65535)", url);
    snprintf(out->port, sizeof out->port, "%lu", v);
    return 0;
}
