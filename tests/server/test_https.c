/* HTTPS: with [server] tls_cert/tls_key, or its own http_tls_cert/
 * http_tls_key, the dashboard and HTTP API speak only TLS; plain HTTP with
 * a password on an address that is not loopback stops the start unless
 * [server] http_allow_plaintext_password is set; bad HTTPS files stop it
 * too. The client here is OpenSSL itself; certificates come from the
 * `openssl` command line (tls_certs.h). test_pg_https.c runs the same in
 * distributed mode. */
#include <criterion/criterion.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "rebound/client.h"

#include "test_http_harness.h"
#include "tls_certs.h"

static rbh_server S;
static int H; /* the HTTP port */
static char cert[400], key[400];

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(https, .fini = stop, .timeout = 60);

/* Ends a test that started a server: it must exit cleanly (Criterion
 * ignores failures in .fini). */
static void finish(void)
{
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define SERVER_TEST(name) \
    static void body_##name(void); \
    Test(https, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

static void make_cert(const char *name, char *cert_out, char *key_out)
{
    cr_assert_eq(rbh_make_cert(S.dir, name, "IP:127.0.0.1,DNS:localhost", cert_out, key_out), 0,
                 "openssl could not make a certificate");
}

/* Writes the config text to dir/rebound.toml (S prepared by rbh_init). */
static void write_config(const char *toml)
{
    rbh_write_file(&S, "rebound.toml", toml, S.config, sizeof S.config);
}

/* Starts S with the config written and HTTP on http_addr; sets H. */
static void launch(const char *http_addr)
{
    char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", S.dir);
    const char *extra[] = {"--http-listen", http_addr, "--http-port-file", hpf, NULL};
    cr_assert_eq(rbh_launch(&S, extra), 0, "server did not start (see %s)", S.log);
    FILE *f = fopen(hpf, "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%d", &H), 1);
    fclose(f);
}

/* The server's log so far (caller frees). */
static char *read_log(void)
{
    char *log = NULL;
    size_t n = 0;
    FILE *f = fopen(S.log, "r");
    cr_assert_not_null(f, "no log at %s", S.log);
    if (getdelim(&log, &n, '\0', f) < 0) {
        free(log);
        log = strdup("");
    }
    fclose(f);
    return log;
}

/* "Authorization: Basic ..." for user u and password pw, CRLF-ended. */
static void basic_auth(const char *pw, char *out, size_t n)
{
    char cred[200];
    unsigned char b64[300];
    int len = snprintf(cred, sizeof cred, "u:%s", pw);
    EVP_EncodeBlock(b64, (const unsigned char *)cred, len);
    snprintf(out, n, "Authorization: Basic %s\r\n", b64);
}

typedef struct https_reply {
    char why[300];    /* "": handshake done and certificate verified; else why not */
    int status;       /* the HTTP status, 0 when there was no HTTP answer */
    char *text;       /* everything read: head and body */
    json_t *json;     /* the body parsed, or NULL */
    bool clean_close; /* the server ended the session with a close_notify */
} https_reply;

static void https_reply_free(https_reply *r)
{
    free(r->text);
    json_decref(r->json);
    free(r);
}

/* One GET of path over HTTPS to 127.0.0.1:port, trusting only the
 * certificate in ca and checking that it names 127.0.0.1; headers are
 * extra complete header lines (or ""). Reads to the end of the session. */
static https_reply *https_get(int port, const char *ca, const char *path, const char *headers)
{
    https_reply *r = calloc(1, sizeof *r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "cannot connect to %d", port);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    cr_assert_eq(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1, "cannot read '%s'", ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL *ssl = SSL_new(ctx);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        long v = SSL_get_verify_result(ssl);
        unsigned long e = ERR_get_error();
        snprintf(r->why, sizeof r->why, "%s",
                 v != X509_V_OK ? X509_verify_cert_error_string(v)
                 : e            ? ERR_reason_error_string(e)
                                : "handshake failed");
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "handshake failed");
        goto out;
    }
    char req[1200];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", path,
                     headers);
    cr_assert_eq(SSL_write(ssl, req, n), n);
    size_t cap = 65536, len = 0;
    r->text = malloc(cap);
    for (;;) {
        if (len + 4096 > cap)
            r->text = realloc(r->text, cap *= 2);
        int got = SSL_read(ssl, r->text + len, (int)(cap - len - 1));
        if (got <= 0) {
            r->clean_close = SSL_get_error(ssl, got) == SSL_ERROR_ZERO_RETURN;
            break;
        }
        len += (size_t)got;
    }
    r->text[len] = '\0';
    if (!strncmp(r->text, "HTTP/1.1 ", 9))
        r->status = atoi(r->text + 9);
    const char *body = strstr(r->text, "\r\n\r\n");
    if (body)
        r->json = json_loads(body + 4, JSON_DECODE_ANY, NULL);
out:
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return r;
}

/* An HTTPS GET that must verify and answer status; returns the reply. */
static https_reply *https_expect(int status, const char *ca, const char *path, const char *headers)
{
    https_reply *r = https_get(H, ca, path, headers);
    cr_assert_str_eq(r->why, "", "GET %s: TLS failed: %s", path, r->why);
    cr_assert_eq(r->status, status, "GET %s: status %d, want %d: %s", path, r->status, status,
                 r->text);
    cr_assert(r->clean_close, "GET %s: the session ended without a close_notify", path);
    return r;
}

SERVER_TEST(the_api_and_dashboard_are_https_with_the_work_certificate)
{
    rbh_init(&S);
    make_cert("server", cert, key);
    char toml[1200], auth[200];
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\npassword = \"s3cret\"\n",
             cert, key);
    write_config(toml);
    launch("127.0.0.1:0");
    basic_auth("s3cret", auth, sizeof auth);
    https_reply *r = https_expect(200, cert, "/api/info", auth);
    cr_assert_str_eq(json_string_value(rbh_get(r->json, "server.name")), "Rebound", "%s", r->text);
    https_reply_free(r);
    /* basic auth still guards it */
    https_reply_free(https_expect(401, cert, "/api/info", ""));
    basic_auth("wrong", auth, sizeof auth);
    https_reply_free(https_expect(401, cert, "/api/queues", auth));
    basic_auth("s3cret", auth, sizeof auth);
    r = https_expect(200, cert, "/", auth);
    cr_assert(strstr(r->text, "<html"), "%s", r->text);
    https_reply_free(r);
    https_reply_free(https_expect(401, cert, "/metrics", "")); /* metrics_auth "auto" */
    r = https_expect(200, cert, "/metrics", auth);
    cr_assert(strstr(r->text, "rebound_"), "%s", r->text);
    https_reply_free(r);
    char *log = read_log(), want[120];
    snprintf(want, sizeof want, "dashboard and API on https://127.0.0.1:0 (port %d)", H);
    cr_assert(strstr(log, want), "the log lacks '%s':\n%s", want, log);
    free(log);
    /* the work protocol is TLS with the same certificate */
    char url[200];
    snprintf(url, sizeof url, "tcp+tls://:s3cret@127.0.0.1:%d", S.port);
    rb_client_opts o = {.tls_ca_file = cert, .timeout_ms = 10000};
    rb_err e = {0};
    rb_client *c = rb_client_connect(url, &o, &e);
    cr_assert_not_null(c, "%s", e.msg);
    rb_client_close(c);
}

SERVER_TEST(plain_http_to_the_https_port_gets_no_http_answer)
{
    rbh_init(&S);
    make_cert("server", cert, key);
    char toml[1200];
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\n", cert, key);
    write_config(toml);
    launch("127.0.0.1:0");
    for (int i = 0; i < 3; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)H)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
        const char req[] = "GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        cr_assert_eq(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)sizeof req - 1);
        /* the server hangs up (perhaps after a TLS alert) without an
         * HTTP answer, well before the 60 s HTTP timeout */
        char buf[4096];
        size_t len = 0;
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t got = 1;
        while (got > 0 && poll(&p, 1, 5000) > 0) {
            got = read(fd, buf + len, sizeof buf - 1 - len);
            if (got > 0)
                len += (size_t)got;
        }
        cr_assert_leq(got, 0, "the plain HTTP connection is still open");
        buf[len] = '\0';
        cr_assert_null(strstr(buf, "HTTP/"), "a plain request got an HTTP answer: %s", buf);
        close(fd);
    }
    cr_assert_null(rbh_http(H, "GET", "/api/info", NULL, NULL));
    /* HTTPS is unaffected */
    https_reply_free(https_expect(200, cert, "/api/stats", ""));
}

SERVER_TEST(http_tls_cert_gives_https_its_own_certificate)
{
    rbh_init(&S);
    char web_cert[400], web_key[400];
    make_cert("work", cert, key);
    make_cert("web", web_cert, web_key);
    char toml[2000];
    snprintf(toml, sizeof toml,
             "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\nhttp_tls_cert = \"%s\"\n"
             "http_tls_key = \"%s\"\n",
             cert, key, web_cert, web_key);
    write_config(toml);
    launch("127.0.0.1:0");
    https_reply_free(https_expect(200, web_cert, "/api/info", ""));
    /* HTTP does not present the work protocol's certificate ... */
    https_reply *r = https_get(H, cert, "/api/info", "");
    cr_assert_eq(r->status, 0);
    cr_assert(strstr(r->why, "self-signed") || strstr(r->why, "self signed"), "why: %s", r->why);
    https_reply_free(r);
    /* ... and the work protocol not HTTP's */
    char url[200];
    snprintf(url, sizeof url, "tcp+tls://127.0.0.1:%d", S.port);
    rb_err e = {0};
    rb_client_opts o = {.tls_ca_file = web_cert, .timeout_ms = 10000};
    cr_assert_null(rb_client_connect(url, &o, &e));
    cr_assert(strstr(e.msg, "certificate not trusted"), "got '%s'", e.msg);
    o.tls_ca_file = cert;
    rb_client *c = rb_client_connect(url, &o, &e);
    cr_assert_not_null(c, "%s", e.msg);
    rb_client_close(c);
}

SERVER_TEST(http_tls_cert_alone_serves_https_beside_a_plain_work_protocol)
{
    rbh_init(&S);
    make_cert("web", cert, key);
    char toml[1200];
    snprintf(toml, sizeof toml,
             "[server]\nhttp_tls_cert = \"%s\"\nhttp_tls_key = \"%s\"\npassword = \"s3cret\"\n",
             cert, key);
    write_config(toml);
    launch("0.0.0.0:0"); /* HTTPS: a password off loopback is fine */
    char auth[200];
    basic_auth("s3cret", auth, sizeof auth);
    https_reply_free(https_expect(200, cert, "/api/info", auth));
    char url[200];
    snprintf(url, sizeof url, "tcp://:s3cret@127.0.0.1:%d", S.port);
    rb_client_opts o = {.timeout_ms = 10000};
    rb_err e = {0};
    rb_client *c = rb_client_connect(url, &o, &e);
    cr_assert_not_null(c, "plain TCP on the work port: %s", e.msg);
    rb_client_close(c);
    char *log = read_log();
    cr_assert(strstr(log, "dashboard and API on https://0.0.0.0:0"), "%s", log);
    cr_assert_null(strstr(log, "clear text"), "%s", log);
    free(log);
}

/* s without the log's info lines ("2026-...Z info configuration: ...", what
 * the server says before it checks anything), in place: what is left is
 * the error a refusal prints. */
static char *without_info_lines(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        bool info = len > 24 && line[4] == '-' && line[10] == 'T' && !strncmp(line + 24, " info ", 6);
        if (!info) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
    return s;
}

/* Runs `rebound serve` with S's config (and --http-listen http_addr when
 * non-NULL), which must exit by itself within 10 s; returns its exit
 * status, *err_out its stderr (caller frees). */
static int serve_exit(const char *http_addr, char **err_out)
{
    const char *argv[16];
    int n = 0;
    argv[n++] = rbh_bin();
    argv[n++] = "serve";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--db";
    argv[n++] = S.db;
    argv[n++] = "--config";
    argv[n++] = S.config;
    if (http_addr) {
        argv[n++] = "--http-listen";
        argv[n++] = http_addr;
    }
    argv[n] = NULL;
    unlink(S.log);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(S.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        close(fd);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    int64_t deadline = rbh_now_ms() + 10000;
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (rbh_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("rebound serve is still running: it should have refused to start");
        }
        rbh_sleep_ms(10);
    }
    *err_out = without_info_lines(read_log());
    cr_assert(WIFEXITED(st), "rebound serve died of signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* The one line of the refusal for addr. */
static void expect_refusal(const char *http_addr, const char *named)
{
    char *out = NULL;
    cr_assert_eq(serve_exit(http_addr, &out), 2, "%s", out);
    char want[600];
    snprintf(want, sizeof want,
             "rebound: serve: refusing plain HTTP on '%s' (not loopback) with [server] password "
             "set: basic auth would send it in clear text; serve HTTPS ([server] tls_cert and "
             "tls_key, or http_tls_cert and http_tls_key) or set [server] "
             "http_allow_plaintext_password = true\n",
             named);
    cr_assert_str_eq(out, want);
    free(out);
#ifndef RBH_PG
    cr_assert_neq(access(S.db, F_OK), 0, "the database was opened before the refusal");
#endif
}

Test(https, a_password_over_plain_http_off_loopback_stops_the_start)
{
    rbh_init(&S);
    write_config("[server]\npassword = \"s3cret\"\nhttp_listen = \"0.0.0.0:0\"\n");
    expect_refusal(NULL, "0.0.0.0:0");
    /* --http-listen is checked the same way */
    write_config("[server]\npassword = \"s3cret\"\n");
    expect_refusal(":0", ":0");
    expect_refusal("[::]:0", "[::]:0");
    /* without a password, or on loopback, plain HTTP is fine */
    write_config("[server]\nhttp_listen = \"0.0.0.0:0\"\n");
    launch("0.0.0.0:0");
    cr_assert_eq(rbh_stop(&S), 0);
    rbh_init(&S);
    write_config("[server]\npassword = \"s3cret\"\n");
    launch("localhost:0");
    char *log = read_log();
    cr_assert_null(strstr(log, "clear text"), "%s", log);
    free(log);
    finish();
}

Test(https, http_allow_plaintext_password_lets_it_start_with_a_warning)
{
    rbh_init(&S);
    write_config("[server]\npassword = \"s3cret\"\nhttp_allow_plaintext_password = true\n");
    launch("0.0.0.0:0");
    char auth[200];
    basic_auth("s3cret", auth, sizeof auth);
    rbh_resp *r = rbh_http(H, "GET", "/api/info", NULL, auth);
    cr_assert_not_null(r);
    cr_assert_eq(r->status, 200, "%s", r->body);
    rbh_resp_free(r);
    char *log = read_log();
    cr_assert(strstr(log, "warn plain HTTP with a password on '0.0.0.0:0' "
                          "(http_allow_plaintext_password): basic auth crosses the network in "
                          "clear text"),
              "%s", log);
    free(log);
    finish();
}

Test(https, bad_http_tls_files_stop_the_start)
{
    rbh_init(&S);
    char web_cert[400], web_key[400], toml[2000], want[1000];
    make_cert("work", cert, key);
    make_cert("web", web_cert, web_key);
    char *out = NULL;
    /* a missing key file */
    snprintf(toml, sizeof toml, "[server]\nhttp_tls_cert = \"%s\"\nhttp_tls_key = \"%s/missing.key\"\n",
             web_cert, S.dir);
    write_config(toml);
    cr_assert_eq(serve_exit("127.0.0.1:0", &out), 1, "%s", out);
    snprintf(want, sizeof want,
             "rebound: serve: [server] http_tls_cert, http_tls_key: cannot load tls key "
             "'%s/missing.key': ",
             S.dir);
    cr_assert(!strncmp(out, want, strlen(want)), "got: %s", out);
    cr_assert(strstr(out, "No such file"), "got: %s", out);
    free(out);
    /* a missing certificate file, beside a good work-protocol pair */
    snprintf(toml, sizeof toml,
             "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\nhttp_tls_cert = \"%s/missing.pem\"\n"
             "http_tls_key = \"%s\"\n",
             cert, key, S.dir, web_key);
    write_config(toml);
    cr_assert_eq(serve_exit("127.0.0.1:0", &out), 1, "%s", out);
    snprintf(want, sizeof want,
             "rebound: serve: [server] http_tls_cert, http_tls_key: cannot load tls certificate "
             "'%s/missing.pem': ",
             S.dir);
    cr_assert(!strncmp(out, want, strlen(want)), "got: %s", out);
    free(out);
    /* a key of another certificate */
    snprintf(toml, sizeof toml, "[server]\nhttp_tls_cert = \"%s\"\nhttp_tls_key = \"%s\"\n",
             web_cert, key);
    write_config(toml);
    cr_assert_eq(serve_exit("127.0.0.1:0", &out), 1, "%s", out);
    snprintf(want, sizeof want,
             "rebound: serve: [server] http_tls_cert, http_tls_key: cannot load tls key '%s': ",
             key);
    cr_assert(!strncmp(out, want, strlen(want)), "got: %s", out);
    cr_assert(strstr(out, "mismatch"), "got: %s", out);
    free(out);
    /* only one of the pair */
    snprintf(toml, sizeof toml, "[server]\nhttp_tls_cert = \"%s\"\n", web_cert);
    write_config(toml);
    cr_assert_eq(serve_exit("127.0.0.1:0", &out), 2, "%s", out);
    snprintf(want, sizeof want,
             "rebound: serve: %s:2: key 'server.http_tls_cert': must be set together with "
             "'server.http_tls_key'\n",
             S.config);
    cr_assert_str_eq(out, want);
    free(out);
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\nhttp_tls_key = \"%s\"\n",
             cert, key, web_key);
    write_config(toml);
    cr_assert_eq(serve_exit("127.0.0.1:0", &out), 2, "%s", out);
    snprintf(want, sizeof want,
             "rebound: serve: %s:4: key 'server.http_tls_key': must be set together with "
             "'server.http_tls_cert'\n",
             S.config);
    cr_assert_str_eq(out, want);
    free(out);
    cr_assert_eq(rbh_stop(&S), 0);
}
