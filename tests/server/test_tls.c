/* TLS: the server with server.tls_cert/tls_key serves the work protocol over
 * TLS only; the C client speaks tcp+tls:// and checks the certificate and
 * host name. Certificates are made by the `openssl` command line in each
 * test's directory. */
#include <criterion/criterion.h>

#include "rebound/client.h"

#include "harness.h"
#include "tls_certs.h"

static rbh_server S;
static char cert[400], key[400];

static void stop(void)
{
    rbh_stop(&S); /* after finish() this only removes what is left */
}

TestSuite(tls, .fini = stop, .timeout = 60);

static void finish(void)
{
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define SERVER_TEST(name) \
    static void body_##name(void); \
    Test(tls, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

/* A self-signed EC certificate for the given subjectAltName, as
 * dir/NAME.pem and dir/NAME.key. */
static void make_cert(const char *name, const char *san, char *cert_out, char *key_out)
{
    cr_assert_eq(rbh_make_cert(S.dir, name, san, cert_out, key_out), 0,
                 "openssl could not make a certificate");
}

/* Starts a TLS server with a fresh certificate for san (NULL: 127.0.0.1
 * and localhost), plus extra config lines. */
static void start_tls(const char *extra, const char *san)
{
    rbh_init(&S);
    make_cert("server", san ? san : "IP:127.0.0.1,DNS:localhost", cert, key);
    char toml[1200];
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\n%s", cert, key,
             extra ? extra : "");
    rbh_write_file(&S, "rebound.toml", toml, S.config, sizeof S.config);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not start (see %s)", S.log);
}

static rb_client *tls_connect(const char *host, const char *wid, const char *ca, rb_err *e)
{
    char url[300];
    snprintf(url, sizeof url, "tcp+tls://%s:%d", host, S.port);
    rb_client_opts o = {.wid = wid, .tls_ca_file = ca, .timeout_ms = 10000};
    return rb_client_connect(url, &o, e);
}

static long long info_connections(rb_client *c)
{
    json_t *info = NULL;
    cr_assert_eq(rb_client_info(c, &info, NULL), 0);
    long long n = (long long)json_integer_value(rbh_get(info, "server.connections"));
    json_decref(info);
    return n;
}

SERVER_TEST(push_fetch_ack_over_tls)
{
    start_tls(NULL, NULL);
    rb_err e = {0};
    rb_client *p = tls_connect("127.0.0.1", NULL, cert, &e);
    cr_assert_not_null(p, "%s", e.msg);
    rb_client *w = tls_connect("localhost", "tls-worker", cert, &e);
    cr_assert_not_null(w, "%s", e.msg);
    /* a job larger than any TLS record, so it spans many */
    size_t n = 300000;
    char *pad = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        pad[i] = (char)('a' + i % 26);
    pad[n] = '\0';
    rb_reply r;
    cr_assert_eq(rb_client_callf(p, &r, &e, "PUSH {\"jid\":\"tls-0000001\",\"jobtype\":\"t\","
                                            "\"args\":[\"%s\"]}", pad),
                 0, "%s", e.msg);
    cr_assert_eq(rb_client_call(w, "FETCH default", &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.type, RB_REPLY_BULK);
    json_t *job = json_loads(r.str, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(job, "jid")), "tls-0000001");
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(job, "args"), 0)), pad);
    json_decref(job);
    free(pad);
    cr_assert_eq(rb_client_call(w, "ACK {\"jid\":\"tls-0000001\"}", &r, &e), 0, "%s", e.msg);
    json_t *info = NULL;
    cr_assert_eq(rb_client_info(p, &info, &e), 0, "%s", e.msg);
    cr_assert_eq(json_integer_value(rbh_get(info, "faktory.total_processed")), 1);
    json_decref(info);
    rb_client_close(w);
    rb_client_close(p);
}

SERVER_TEST(the_client_checks_the_certificate_and_host)
{
    start_tls(NULL, NULL);
    char other_cert[400], other_key[400];
    make_cert("other", "DNS:other.example", other_cert, other_key);
    rb_err e = {0};
    /* not signed by anything the client trusts */
    setenv("SSL_CERT_FILE", other_cert, 1);
    cr_assert_null(tls_connect("127.0.0.1", NULL, NULL, &e));
    cr_assert_eq(e.code, RB_ECONN);
    cr_assert(strstr(e.msg, "certificate not trusted"), "got '%s'", e.msg);
    /* trusted through $SSL_CERT_FILE (OpenSSL's default store) */
    setenv("SSL_CERT_FILE", cert, 1);
    rb_client *c = tls_connect("127.0.0.1", NULL, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    rb_client_close(c);
    unsetenv("SSL_CERT_FILE");
    /* trusted, but issued for another name */
    rbh_stop(&S);
    start_tls(NULL, "DNS:other.example");
    rb_client_opts o = {.tls_ca_file = cert, .timeout_ms = 10000};
    char url[300];
    snprintf(url, sizeof url, "tcp+tls://127.0.0.1:%d", S.port);
    cr_assert_null(rb_client_connect(url, &o, &e));
    cr_assert_eq(e.code, RB_ECONN);
    cr_assert(strstr(e.msg, "mismatch"), "got '%s'", e.msg);
    /* insecure mode skips every check */
    rb_client_opts insecure = {.tls_insecure = 1, .timeout_ms = 10000};
    c = rb_client_connect(url, &insecure, &e);
    cr_assert_not_null(c, "%s", e.msg);
    rb_client_close(c);
}

SERVER_TEST(plain_tcp_clients_are_dropped_tls_ones_unaffected)
{
    start_tls(NULL, NULL);
    rb_err e = {0};
    rb_client *c = tls_connect("127.0.0.1", "w", cert, &e);
    cr_assert_not_null(c, "%s", e.msg);
    for (int i = 0; i < 5; i++) {
        /* a plain-text client: its HELLO is no TLS handshake */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
        const char hello[] = "HELLO {\"v\":2}\r\nPUSH {\"jid\":\"plain-00001\",\"jobtype\":\"a\",\"args\":[]}\r\n";
        cr_assert_eq(send(fd, hello, sizeof hello - 1, MSG_NOSIGNAL), (ssize_t)sizeof hello - 1);
        /* the server hangs up (perhaps after a TLS alert), well before
         * the HELLO timeout */
        char buf[4096];
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r = 1;
        while (r > 0 && poll(&p, 1, 5000) > 0)
            r = read(fd, buf, sizeof buf);
        cr_assert_leq(r, 0, "the plain-text connection is still open");
        cr_assert(r == 0 || memcmp(buf, "+HI", 3) != 0);
        close(fd);
    }
    rb_reply rr;
    cr_assert_eq(rb_client_call(c, "JOB {\"jid\":\"plain-00001\"}", &rr, &e), 0, "%s", e.msg);
    cr_assert_eq(rr.type, RB_REPLY_NIL, "the plain-text PUSH must not have run");
    int64_t deadline = rbh_now_ms() + 10000;
    while (info_connections(c) != 1 && rbh_now_ms() < deadline)
        rbh_sleep_ms(10);
    cr_assert_eq(info_connections(c), 1);
    rb_client_close(c);
}

SERVER_TEST(tls_with_a_password)
{
    start_tls("password = \"s3cret\"\n", NULL);
    rb_err e = {0};
    char url[300];
    snprintf(url, sizeof url, "tcp+tls://:s3cret@127.0.0.1:%d", S.port);
    rb_client_opts o = {.tls_ca_file = cert, .timeout_ms = 10000};
    rb_client *c = rb_client_connect(url, &o, &e);
    cr_assert_not_null(c, "%s", e.msg);
    rb_client_close(c);
    snprintf(url, sizeof url, "tcp+tls://:wrong@127.0.0.1:%d", S.port);
    cr_assert_null(rb_client_connect(url, &o, &e));
    cr_assert_eq(e.code, RB_EAUTH, "%s", e.msg);
}

/* Runs `rebound ARGS` (a shell fragment) with SSL_CERT_FILE=ca; stdout and
 * stderr land in dir/cli.out and dir/cli.err. Returns the exit status. */
static int run_cli(const char *ca, const char *args)
{
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "SSL_CERT_FILE='%s' '%s' %s >'%s/cli.out' 2>'%s/cli.err'", ca,
             rbh_bin(), args, S.dir, S.dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool cli_said(const char *file, const char *text)
{
    char path[400], buf[4096] = "";
    snprintf(path, sizeof path, "%s/%s", S.dir, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

/* The CLI's client commands speak tcp+tls:// too (docs/cli.md), trusting
 * OpenSSL's default store, which $SSL_CERT_FILE replaces. */
SERVER_TEST(the_cli_speaks_tls_and_checks_the_certificate)
{
    start_tls(NULL, NULL);
    char args[600];
    snprintf(args, sizeof args, "push t --jid cli-tls-0001 --url tcp+tls://localhost:%d", S.port);
    cr_assert_eq(run_cli(cert, args), 0, "push over tls failed");
    cr_assert(cli_said("cli.out", "pushed cli-tls-0001"));
    snprintf(args, sizeof args, "info --url tcp+tls://127.0.0.1:%d", S.port);
    cr_assert_eq(run_cli(cert, args), 0, "info over tls failed");
    cr_assert(cli_said("cli.out", "1 enqueued"));
    /* a certificate it does not trust: exit 1, the reason on stderr */
    char other_cert[400], other_key[400];
    make_cert("other", "DNS:other.example", other_cert, other_key);
    cr_assert_eq(run_cli(other_cert, args), 1);
    cr_assert(cli_said("cli.err", "certificate not trusted"));
}

Test(tls, bad_certificate_or_key_stops_the_start)
{
    rbh_init(&S);
    make_cert("a", "DNS:localhost", cert, key);
    char cert2[400], key2[400];
    make_cert("b", "DNS:localhost", cert2, key2);
    char toml[1200];
    /* a missing file */
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s/missing.pem\"\ntls_key = \"%s\"\n",
             S.dir, key);
    rbh_write_file(&S, "rebound.toml", toml, S.config, sizeof S.config);
    cr_assert_eq(rbh_launch(&S, NULL), -1, "the server started without its certificate");
    /* a key that belongs to another certificate */
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\n", cert, key2);
    rbh_write_file(&S, "rebound.toml", toml, S.config, sizeof S.config);
    cr_assert_eq(rbh_launch(&S, NULL), -1, "the server started with a mismatched key");
    char *log = NULL;
    size_t n = 0;
    FILE *f = fopen(S.log, "r");
    cr_assert_not_null(f);
    cr_assert_gt(getdelim(&log, &n, '\0', f), 0);
    fclose(f);
    cr_assert(strstr(log, "cannot load tls certificate"), "log: %s", log);
    cr_assert(strstr(log, "cannot load tls key"), "log: %s", log);
    cr_assert(strstr(log, "mismatch"), "log: %s", log);
    free(log);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", S.dir);
    cr_assert_eq(system(cmd), 0);
    S.log[0] = '\0';
}
