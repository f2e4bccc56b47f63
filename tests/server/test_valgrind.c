/* The server under valgrind (--leak-check=full --error-exitcode=99): a short
 * protocol session over TLS and one over plain TCP with misbehaving
 * clients, then SIGTERM; the server must exit 0, i.e. with no invalid
 * access, no use of uninitialised memory and no leak. valgrind needs the
 * uninstrumented binary: under the ASan build the test uses the normal
 * build's rebound next to it ($O/asan/rebound -> $O/rebound). */
#include <criterion/criterion.h>

#include "rebound/client.h"

#include "harness.h"

static rbh_server S;
static char plain_bin[1024];

static void setup(void)
{
    const char *bin = rbh_bin();
    const char *asan = strstr(bin, "/asan/");
    if (asan)
        snprintf(plain_bin, sizeof plain_bin, "%.*s/%s", (int)(asan - bin), bin, asan + 6);
    else
        snprintf(plain_bin, sizeof plain_bin, "%s", bin);
    setenv("REBOUND_BIN", plain_bin, 1);
    setenv("REBOUND_VALGRIND", "1", 1);
}

static void stop(void)
{
    rbh_stop(&S);
}

TestSuite(valgrind, .init = setup, .fini = stop, .timeout = 60);

/* SIGTERM; asserts exit status 0 (99 would be valgrind's verdict). */
static void finish(void)
{
    int st = rbh_kill(&S, SIGTERM);
    bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!clean) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", S.log);
        if (system(cmd) != 0)
            fprintf(stderr, "(no log)\n");
    }
    cr_assert(clean, "the server under valgrind exited with status %d (log above)",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    cr_assert_eq(rbh_stop(&S), 0);
}

static void call_ok(rb_client *c, const char *line)
{
    rb_err e = {0};
    rb_reply r;
    cr_assert_eq(rb_client_call(c, line, &r, &e), 0, "'%s': %s", line, e.msg);
}

Test(valgrind, tls_session_exits_clean)
{
    cr_assert_eq(access("/usr/bin/valgrind", X_OK), 0, "valgrind is not installed");
    cr_assert_eq(access(plain_bin, X_OK), 0, "no binary at %s", plain_bin);
    rbh_init(&S);
    char cert[400], key[400], cmd[1200];
    snprintf(cert, sizeof cert, "%s/c.pem", S.dir);
    snprintf(key, sizeof key, "%s/c.key", S.dir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout '%s'"
             " -out '%s' -days 1 -subj /CN=vg -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
             key, cert);
    cr_assert_eq(system(cmd), 0);
    char toml[1000];
    snprintf(toml, sizeof toml, "[server]\ntls_cert = \"%s\"\ntls_key = \"%s\"\npassword = \"pw\"\n",
             cert, key);
    rbh_write_file(&S, "rebound.toml", toml, S.config, sizeof S.config);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no start under valgrind (log %s)", S.log);

    char url[200];
    snprintf(url, sizeof url, "tcp+tls://:pw@127.0.0.1:%d", S.port);
    rb_client_opts o = {.tls_ca_file = cert, .wid = "vg-worker", .timeout_ms = 20000};
    rb_err e = {0};
    rb_client *c = rb_client_connect(url, &o, &e);
    cr_assert_not_null(c, "%s", e.msg);
    call_ok(c, "PUSH {\"jid\":\"vg-00000001\",\"jobtype\":\"a\",\"args\":[1],\"retry\":2}");
    call_ok(c, "PUSH {\"jid\":\"vg-00000002\",\"jobtype\":\"a\",\"args\":[2],\"at\":\"2999-01-01T00:00:00Z\"}");
    call_ok(c, "FETCH default");
    call_ok(c, "FAIL {\"jid\":\"vg-00000001\",\"errtype\":\"E\",\"message\":\"m\",\"backtrace\":[\"x\"]}");
    call_ok(c, "JOB {\"jid\":\"vg-00000001\"}");
    call_ok(c, "MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\",\"filter\":{\"jids\":[\"vg-00000001\"]}}");
    call_ok(c, "FETCH default");
    call_ok(c, "ACK {\"jid\":\"vg-00000001\"}");
    call_ok(c, "QUEUE PAUSE q");
    call_ok(c, "QUEUE RESUME q");
    call_ok(c, "BEAT {\"wid\":\"vg-worker\"}");
    call_ok(c, "INFO");
    /* a plain-text client on the TLS port: a failed handshake */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(send(fd, "HELLO {}\r\n", 10, MSG_NOSIGNAL), 10);
    char buf[256];
    struct pollfd pf = {fd, POLLIN, 0};
    while (poll(&pf, 1, 20000) > 0 && read(fd, buf, sizeof buf) > 0)
        ; /* until the server hangs up */
    close(fd);
    /* a client that goes away mid-reply */
    rb_client *d = rb_client_connect(url, &o, &e);
    cr_assert_not_null(d, "%s", e.msg);
    rb_client_close(d);
    call_ok(c, "INFO");
    rb_client_close(c);
    finish();
}

Test(valgrind, plain_session_with_hostile_clients_exits_clean)
{
    cr_assert_eq(access("/usr/bin/valgrind", X_OK), 0, "valgrind is not installed");
    cr_assert_eq(access(plain_bin, X_OK), 0, "no binary at %s", plain_bin);
    cr_assert_eq(rbh_start(&S, "[server]\nmax_job_bytes = 2048\nmax_connections = 8\n", NULL), 0,
                 "no start under valgrind (log %s)", S.log);
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"vg-00000003\",\"jobtype\":\"a\",\"args\":[]}"));
    json_t *j = rbh_json(rbh_cmd(c, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "vg-00000003");
    json_decref(j);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"vg-00000003\"}"));
    /* a waiting FETCH whose client leaves */
    rbh_conn *w = rbh_connect(&S, "w2");
    cr_assert_not_null(w);
    rbh_send(w, "FETCH empty\r\n", 13);
    rbh_close(w);
    /* an over-long line */
    rbh_conn *l = rbh_connect(&S, NULL);
    cr_assert_not_null(l);
    char big[3000];
    memset(big, 'x', sizeof big);
    rbh_send(l, big, sizeof big);
    char *r = rbh_reply(l);
    cr_assert(r && strstr(r, "-ERR command line longer"), "got %s", r ? r : "(closed)");
    free(r);
    rbh_close(l);
    /* pipelined commands, gone before the replies */
    rbh_conn *p = rbh_connect(&S, NULL);
    cr_assert_not_null(p);
    const char burst[] = "PUSH {\"jid\":\"vg-00000004\",\"jobtype\":\"a\",\"args\":[]}\r\nINFO\r\nJOB {\"jid\":\"vg-00000004\"}\r\nFETCH def";
    rbh_send(p, burst, sizeof burst - 1);
    rbh_close(p);
    /* over the connection limit */
    rbh_conn *many[8] = {0};
    for (int i = 0; i < 8; i++)
        many[i] = rbh_connect_raw(&S);
    for (int i = 0; i < 8; i++)
        rbh_close(many[i]);
    /* a connection left open at shutdown, with a half line, once the
     * closes above are seen */
    int64_t deadline = rbh_now_ms() + 20000;
    while (rbh_info_int(c, "server.connections") != 1 && rbh_now_ms() < deadline)
        rbh_sleep_ms(20);
    rbh_conn *open_ = rbh_connect(&S, "w3");
    cr_assert_not_null(open_);
    rbh_send(open_, "INF", 3);
    cr_assert(rbh_wait_state(c, "vg-00000004", "enqueued", 20000));
    finish();
    rbh_close(open_);
    rbh_close(c);
}
