/* HTTP helpers for the API tests: start `rebound serve` with its HTTP
 * listener on a free port (--http-listen 127.0.0.1:0 --http-port-file), and
 * a tiny blocking HTTP/1.1 client (one request per connection). Header-only,
 * on top of harness.h. */
#ifndef RB_TESTS_SERVER_HTTP_HARNESS_H
#define RB_TESTS_SERVER_HTTP_HARNESS_H

#include "harness.h"

typedef struct rbh_resp {
    int status;
    char *head; /* status line and headers */
    char *body;
    json_t *json; /* body parsed, or NULL */
} rbh_resp;

static inline void rbh_resp_free(rbh_resp *r)
{
    if (!r)
        return;
    free(r->head);
    free(r->body);
    json_decref(r->json);
    free(r);
}

/* Starts the server (see rbh_start) with HTTP on a free port; *http_port
 * set. Returns 0, or -1 when it did not start. */
static inline int rbh_start_http(rbh_server *s, const char *config, int *http_port)
{
    rbh_init(s);
    if (config)
        rbh_write_file(s, "rebound.toml", config, s->config, sizeof s->config);
    static char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", s->dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    if (rbh_launch(s, extra))
        return -1;
    FILE *f = fopen(hpf, "r"); /* written before the protocol's port file */
    int ok = f && fscanf(f, "%d", http_port) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

/* Restarts a server stopped by rbh_kill on the same database and HTTP
 * port file. */
static inline int rbh_relaunch_http(rbh_server *s, int *http_port)
{
    static char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", s->dir);
    unlink(hpf);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    if (rbh_launch(s, extra))
        return -1;
    FILE *f = fopen(hpf, "r");
    int ok = f && fscanf(f, "%d", http_port) == 1;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

/* True when headers (complete lines ending in CRLF, or NULL) hold the
 * header name (case-insensitive). */
static inline bool rbh_has_header(const char *headers, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = headers; p && *p; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL)
        if (!strncasecmp(p, name, nl) && p[nl] == ':')
            return true;
    return false;
}

/* Sends one request (body may be NULL; extra_headers are complete lines
 * ending in CRLF, or NULL) and reads the whole reply. As curl does, it
 * sends "Host: 127.0.0.1:PORT", and with a body "Content-Type:
 * application/json", unless extra_headers name their own. NULL when the
 * connection fails. */
static inline rbh_resp *rbh_http(int port, const char *method, const char *path,
                                 const char *body, const char *extra_headers)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *req = NULL;
    size_t blen = body ? strlen(body) : 0;
    char host[64] = "", type[64] = "";
    if (!rbh_has_header(extra_headers, "Host"))
        snprintf(host, sizeof host, "Host: 127.0.0.1:%d\r\n", port);
    if (body && !rbh_has_header(extra_headers, "Content-Type"))
        snprintf(type, sizeof type, "Content-Type: application/json\r\n");
    int n = asprintf(&req,
                     "%s %s HTTP/1.1\r\n%s%sConnection: close\r\n%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method, path, host, type, extra_headers ? extra_headers : "", blen,
                     body ? body : "");
    bool sent = n > 0 && send(fd, req, (size_t)n, MSG_NOSIGNAL) == n;
    free(req);
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    int64_t deadline = rbh_now_ms() + 10000;
    while (sent) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)(deadline - rbh_now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (!sent || !sep || strncmp(buf, "HTTP/1.1 ", 9)) {
        free(buf);
        return NULL;
    }
    rbh_resp *resp = calloc(1, sizeof *resp);
    resp->status = atoi(buf + 9);
    resp->head = strndup(buf, (size_t)(sep - buf));
    resp->body = strdup(sep + 4);
    resp->json = json_loads(resp->body, JSON_DECODE_ANY, NULL);
    free(buf);
    return resp;
}

/* The server's log so far, up to 64 KiB (caller frees). */
static inline char *rbh_read_log(const rbh_server *s)
{
    char *log = calloc(1, 65536);
    FILE *f = fopen(s->log, "r");
    if (f) {
        size_t n = fread(log, 1, 65535, f);
        log[n] = '\0';
        fclose(f);
    }
    return log;
}

/* The value of header name (case-insensitive) in r (caller frees), or NULL. */
static inline char *rbh_header(const rbh_resp *r, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        if (!strncasecmp(p + 2, name, nl) && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            while (*v == ' ')
                v++;
            return strndup(v, strcspn(v, "\r\n"));
        }
    }
    return NULL;
}

/* The value of the /metrics exposition line of the node on http_port that
 * starts with prefix (a metric's name and labels, then a space); fails the
 * test when there is none. */
static inline double rbh_metric(int http_port, const char *prefix)
{
    rbh_resp *r = rbh_http(http_port, "GET", "/metrics", NULL, NULL);
    cr_assert(r && r->status == 200, "GET /metrics failed");
    double v = -1;
    for (const char *p = r->body; (p = strstr(p, prefix)); p++) {
        if (p == r->body || p[-1] == '\n') {
            v = strtod(p + strlen(prefix), NULL);
            break;
        }
    }
    rbh_resp_free(r);
    cr_assert(v >= 0, "/metrics lacks %s", prefix);
    return v;
}

#endif
