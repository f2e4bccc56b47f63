/* The HTTP side's refusals (docs/http.md, "Security") against the real
 * server, from one source for both backends (test_pg_http_security.c
 * includes it with RBH_PG): a browser's state-changing request from
 * another origin (a cross-site form post, a cross-site text/plain fetch, a
 * same-site request from another origin) is refused with 403 and changes
 * nothing, with the password's credentials attached as a browser attaches
 * them; requests with neither Origin nor Sec-Fetch-Site (curl, scripts)
 * and the dashboard's own requests still work. */
#include <criterion/criterion.h>

#include "test_http_harness.h"

#define PASSWORD "s3cret"
#define AUTH "Authorization: Basic eDpzM2NyZXQ=\r\n" /* x:s3cret */
#define WITH_PASSWORD "[server]\npassword = \"" PASSWORD "\"\n"

static rbh_server S;
static rbh_conn *C; /* the worker w-sec */
static int H;       /* HTTP port */
static const char *Auth = AUTH; /* "" on a server without a password */

/* After a failed test too: no server left running. */
static void cleanup(void)
{
    rbh_close(C);
    C = NULL;
    if (S.pid)
        rbh_stop(&S);
}

TestSuite(http_security, .fini = cleanup, .timeout = 60);

/* Starts the server with config (NULL: defaults, no password), and a
 * worker connection. */
static void start(const char *config)
{
    cr_assert_eq(rbh_start_http(&S, config, &H), 0, "server did not start (see %s)", S.log);
    Auth = config && strstr(config, "password") ? AUTH : "";
    C = rbh_connect_pw(&S, "w-sec", PASSWORD);
    cr_assert_not_null(C);
}

/* Every test ends by stopping the server and asserting a clean exit. */
static void finish(void)
{
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

#define SEC_TEST(name) \
    static void body_##name(void); \
    Test(http_security, name) \
    { \
        body_##name(); \
        finish(); \
    } \
    static void body_##name(void)

/* A request with the credentials and the given header lines (NULL: none)
 * whose reply must have status want; returns it. */
static rbh_resp *send_as(int want, const char *method, const char *path, const char *body,
                         const char *headers)
{
    char all[1024];
    snprintf(all, sizeof all, "%s%s", Auth, headers ? headers : "");
    rbh_resp *r = rbh_http(H, method, path, body, all);
    cr_assert_not_null(r, "%s %s: no HTTP reply", method, path);
    cr_assert_eq(r->status, want, "%s %s with\n%s: status %d, want %d: %s", method, path, all,
                 r->status, want, r->body);
    return r;
}

/* A request refused with status and a JSON error whose message holds want. */
static void refused(int status, const char *want, const char *method, const char *path,
                    const char *body, const char *headers)
{
    rbh_resp *r = send_as(status, method, path, body, headers);
    const char *msg = json_string_value(rbh_get(r->json, "error.message"));
    cr_assert(msg && strstr(msg, want), "%s %s: message '%s' lacks '%s'", method, path,
              msg ? msg : r->body, want);
    cr_assert_eq(json_integer_value(rbh_get(r->json, "error.status")), status);
    rbh_resp_free(r);
}

/* Sends text as it is (a request rbh_http would not write) and returns
 * the whole reply (caller frees). */
static char *raw_request(const char *text)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)H)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    char *got = calloc(1, 8192);
    ssize_t k, len = 0;
    while (len < 8191 && (k = read(fd, got + len, 8191 - (size_t)len)) > 0)
        len += k;
    close(fd);
    return got;
}

/* --- the state the attacks aim at --- */

/* Two dead jobs, a job waiting in queue "default" (not paused), and the
 * worker w-sec connected (no signal). */
static void make_state(void)
{
    for (int i = 1; i <= 2; i++) {
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dead-000%d\",\"jobtype\":\"Pay\","
                                       "\"args\":[],\"retry\":-1,\"queue\":\"fq\"}", i));
        char *jid = rbh_fetch_jid(C, "fq");
        cr_assert(jid && !strncmp(jid, "dead-000", 8), "fetched %s", jid ? jid : "nothing");
        cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"x\"}",
                             jid));
        free(jid);
    }
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"waiting-0001\",\"jobtype\":\"Mail\","
                                   "\"args\":[]}"));
}

static long long dead_total(void)
{
    rbh_resp *r = send_as(200, "GET", "/api/jobs?state=dead", NULL, NULL);
    long long n = json_integer_value(rbh_get(r->json, "total"));
    rbh_resp_free(r);
    return n;
}

static bool paused(const char *queue)
{
    rbh_resp *r = send_as(200, "GET", "/api/queues", NULL, NULL);
    json_t *qs = rbh_get(r->json, "queues"), *q;
    size_t i;
    bool p = false;
    json_array_foreach(qs, i, q) {
        if (!strcmp(json_string_value(json_object_get(q, "name")), queue))
            p = json_is_true(json_object_get(q, "paused"));
    }
    rbh_resp_free(r);
    return p;
}

/* The worker's next BEAT: "+OK", or {"state":"quiet"} once told to quiet. */
static bool told_to_quiet(void)
{
    char *r = rbh_cmd(C, "BEAT {\"wid\":\"w-sec\"}");
    cr_assert_not_null(r);
    bool quiet = strstr(r, "quiet") != NULL;
    cr_assert(quiet || !strcmp(r, "+OK"), "BEAT: %s", r);
    free(r);
    return quiet;
}

/* Nothing an attack aimed at changed. */
static void assert_unchanged(void)
{
    cr_assert_eq(dead_total(), 2, "the dead jobs were changed");
    cr_assert_not(paused("default"), "the queue was paused");
    cr_assert_not(told_to_quiet(), "the worker was told to quiet");
}

/* --- 1. cross-origin requests --- */

/* What a browser sends for a form on http://evil.example posted to the
 * dashboard: its Origin, Sec-Fetch-Site cross-site, a form body. */
#define FORM_POST \
    "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: navigate\r\n" \
    "Sec-Fetch-Dest: iframe\r\n"

SEC_TEST(cross_site_form_post_is_refused_and_changes_nothing)
{
    start(WITH_PASSWORD);
    make_state();
    refused(403, "cross-origin request refused: Sec-Fetch-Site 'cross-site'", "POST",
            "/api/queues/default/pause", "a=b",
            FORM_POST "Content-Type: application/x-www-form-urlencoded\r\n");
    /* enctype="text/plain" with a field named so that the body reads as JSON */
    refused(403, "cross-origin request refused", "POST", "/api/jobs/discard",
            "{\"state\":\"dead\",\"all\":true,\"x\":\"=\"}",
            FORM_POST "Content-Type: text/plain\r\n");
    refused(403, "cross-origin request refused", "POST", "/api/workers/quiet", "",
            FORM_POST "Content-Type: application/x-www-form-urlencoded\r\n");
    assert_unchanged();
    /* the log names what was refused */
    char *log = rbh_read_log(&S);
    cr_assert(strstr(log, "refused a cross-origin POST /api/jobs/discard: Sec-Fetch-Site "
                          "'cross-site'"), "log: %s", log);
    free(log);
}

SEC_TEST(cross_site_text_plain_fetch_is_refused_and_changes_nothing)
{
    start(WITH_PASSWORD);
    make_state();
    /* fetch(url, {method: 'POST', mode: 'no-cors', credentials: 'include', body}) */
    const char *nocors = "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n"
                         "Sec-Fetch-Mode: no-cors\r\nContent-Type: text/plain;charset=UTF-8\r\n";
    refused(403, "cross-origin request refused: Sec-Fetch-Site 'cross-site'", "POST",
            "/api/jobs/discard", "{\"state\":\"dead\",\"all\":true}", nocors);
    refused(403, "cross-origin request refused", "POST", "/api/workers/quiet", "{}", nocors);
    refused(403, "cross-origin request refused", "POST", "/api/queues/default/pause", "{}",
            nocors);
    /* a browser without Sec-Fetch-Site: its Origin is not this server */
    refused(403, "cross-origin request refused: Origin 'http://evil.example' is not this "
                 "server's (Host '127.0.0.1:",
            "POST", "/api/jobs/discard", "{\"state\":\"dead\",\"all\":true}",
            "Origin: http://evil.example\r\nContent-Type: text/plain\r\n");
    /* an opaque origin (a sandboxed frame, a data: page) */
    refused(403, "Origin 'null'", "POST", "/api/jobs/discard", "{\"state\":\"dead\",\"all\":true}",
            "Origin: null\r\n");
    /* an application/json body changes nothing either */
    refused(403, "cross-origin request refused", "POST", "/api/jobs/kill",
            "{\"state\":\"dead\",\"all\":true}",
            "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n");
    assert_unchanged();
}

SEC_TEST(same_site_request_from_another_origin_is_refused)
{
    start(WITH_PASSWORD);
    make_state();
    /* a page on another port of the same host is same-site, not same-origin */
    char other[256];
    snprintf(other, sizeof other, "Origin: http://127.0.0.1:%d\r\nSec-Fetch-Site: same-site\r\n",
             H == 65535 ? 1 : H + 1);
    refused(403, "cross-origin request refused: Sec-Fetch-Site 'same-site'", "POST",
            "/api/workers/quiet", "{}", other);
    refused(403, "Sec-Fetch-Site 'same-site'", "POST", "/api/queues/default/pause", NULL, other);
    refused(403, "Sec-Fetch-Site 'same-site'", "POST", "/api/jobs/discard",
            "{\"state\":\"dead\",\"all\":true}", other);
    refused(403, "Sec-Fetch-Site 'same-site'", "POST", "/api/job/dead-0001/discard", NULL, other);
    /* without Sec-Fetch-Site the port decides */
    snprintf(other, sizeof other, "Origin: http://127.0.0.1:%d\r\n", H == 65535 ? 1 : H + 1);
    refused(403, "is not this server's", "POST", "/api/job/dead-0001/discard", NULL, other);
    snprintf(other, sizeof other, "Origin: http://localhost:%d\r\n", H);
    refused(403, "is not this server's", "POST", "/api/job/dead-0001/discard", NULL, other);
    assert_unchanged();
}

/* The reproduction without a password (the default on loopback):
 * refused as well. */
SEC_TEST(cross_site_discard_is_refused_without_a_password_too)
{
    start(NULL);
    make_state();
    refused(403, "cross-origin request refused", "POST", "/api/jobs/discard",
            "{\"state\":\"dead\",\"all\":true}",
            "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n"
            "Content-Type: text/plain\r\n");
    refused(403, "cross-origin request refused", "POST", "/api/workers/quiet", "{}",
            "Origin: http://evil.example\r\nContent-Type: text/plain\r\n");
    assert_unchanged();
}

SEC_TEST(curl_style_and_the_dashboards_own_requests_work)
{
    start(WITH_PASSWORD);
    make_state();
    /* curl: neither Origin nor Sec-Fetch-Site */
    rbh_resp *r = send_as(200, "POST", "/api/queues/default/pause", "{}", NULL);
    rbh_resp_free(r);
    cr_assert(paused("default"));
    r = send_as(200, "POST", "/api/queues/default/resume", NULL, NULL); /* no body at all */
    rbh_resp_free(r);
    cr_assert_not(paused("default"));
    /* the dashboard in a current browser: same-origin (its Origin is
     * "null" under Referrer-Policy: no-referrer) */
    r = send_as(200, "POST", "/api/jobs/discard", "{\"state\":\"dead\",\"jids\":[\"dead-0001\"]}",
                "Origin: null\r\nSec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: cors\r\n");
    cr_assert_eq(json_integer_value(rbh_get(r->json, "changed")), 1, "%s", r->body);
    rbh_resp_free(r);
    /* an older browser: its Origin is this server */
    char own[128];
    snprintf(own, sizeof own, "Origin: http://127.0.0.1:%d\r\n", H);
    r = send_as(200, "POST", "/api/job/dead-0002/retry", NULL, own);
    cr_assert_str_eq(json_string_value(rbh_get(r->json, "state")), "enqueued");
    rbh_resp_free(r);
    cr_assert_eq(dead_total(), 0);
    /* typed in the address bar or a bookmark: none */
    r = send_as(200, "POST", "/api/policy/simulate", "{\"retry\": 2}", "Sec-Fetch-Site: none\r\n");
    rbh_resp_free(r);
    /* reads from another site are answered (nothing changes), without a
     * CORS header: the other page cannot read them */
    r = send_as(200, "GET", "/api/info", NULL,
                "Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n");
    char *acao = rbh_header(r, "Access-Control-Allow-Origin");
    cr_assert_null(acao, "%s", acao);
    rbh_resp_free(r);
    cr_assert_not(told_to_quiet());
    r = send_as(200, "POST", "/api/workers/quiet", NULL, NULL);
    rbh_resp_free(r);
    cr_assert(told_to_quiet());
}

/* --- 2. only JSON bodies --- */

SEC_TEST(an_api_body_that_is_not_json_is_refused_with_415)
{
    start(WITH_PASSWORD);
    make_state();
    /* no Origin, no Sec-Fetch-Site: past the cross-origin check, stopped here */
    refused(415, "the request body must be JSON: Content-Type 'text/plain' is not "
                 "application/json",
            "POST", "/api/jobs/discard", "{\"state\":\"dead\",\"all\":true}",
            "Content-Type: text/plain\r\n");
    /* curl --data's default type, as in the issue */
    refused(415, "Content-Type 'application/x-www-form-urlencoded'", "POST",
            "/api/queues/default/pause", "a=b",
            "Content-Type: application/x-www-form-urlencoded\r\n");
    refused(415, "Content-Type 'multipart/form-data; boundary=x'", "POST", "/api/workers/quiet",
            "--x--", "Content-Type: multipart/form-data; boundary=x\r\n");
    refused(415, "Content-Type 'application/jsonp'", "POST", "/api/job/dead-0001/discard", "{}",
            "Content-Type: application/jsonp\r\n");
    /* a form with no fields: a type but no body */
    refused(415, "Content-Type 'application/x-www-form-urlencoded'", "POST", "/api/workers/quiet",
            NULL, "Content-Type: application/x-www-form-urlencoded\r\n");
    /* a body without a type */
    char req[512];
    snprintf(req, sizeof req, "POST /api/workers/quiet HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
             AUTH "Connection: close\r\nContent-Length: 2\r\n\r\n{}", H);
    char *got = raw_request(req);
    cr_assert(!strncmp(got, "HTTP/1.1 415 ", 13) && strstr(got, "send Content-Type: "
                                                               "application/json"), "%s", got);
    free(got);
    /* the policy simulator too */
    refused(415, "Content-Type 'text/plain'", "POST", "/api/policy/simulate", "ftl:3 1s",
            "Content-Type: text/plain\r\n");
    assert_unchanged();
    /* an unknown endpoint stays a 404 */
    refused(404, "no such endpoint", "POST", "/api/nothing", "a=b",
            "Content-Type: text/plain\r\n");
}

SEC_TEST(json_bodies_with_any_parameters_work)
{
    start(NULL);
    make_state();
    rbh_resp *r = send_as(200, "POST", "/api/jobs/discard",
                          "{\"state\":\"dead\",\"jids\":[\"dead-0001\"]}",
                          "Content-Type: application/json; charset=utf-8\r\n");
    cr_assert_eq(json_integer_value(rbh_get(r->json, "changed")), 1, "%s", r->body);
    rbh_resp_free(r);
    r = send_as(200, "POST", "/api/job/dead-0002/kill", "", "Content-Type: Application/JSON\r\n");
    rbh_resp_free(r);
    /* the simulator's SPEC text, sent as the dashboard sends it */
    r = send_as(200, "POST", "/api/policy/simulate", "ftl:3 1s", NULL);
    cr_assert_str_eq(json_string_value(rbh_get(r->json, "final")), "dead", "%s", r->body);
    rbh_resp_free(r);
}

/* --- 3. Host names against DNS rebinding --- */

/* Starts the server with HTTP on addr ("127.0.0.1:0", "0.0.0.0:0") and
 * config, and the worker connection. */
static void start_on(const char *addr, const char *config)
{
    rbh_init(&S);
    if (config)
        rbh_write_file(&S, "rebound.toml", config, S.config, sizeof S.config);
    char hpf[400];
    snprintf(hpf, sizeof hpf, "%s/http-port", S.dir);
    const char *extra[] = {"--http-listen", addr, "--http-port-file", hpf, NULL};
    cr_assert_eq(rbh_launch(&S, extra), 0, "server did not start (see %s)", S.log);
    FILE *f = fopen(hpf, "r");
    cr_assert(f && fscanf(f, "%d", &H) == 1);
    fclose(f);
    Auth = config && strstr(config, "password") ? AUTH : "";
    C = rbh_connect_pw(&S, "w-sec", PASSWORD);
    cr_assert_not_null(C);
}

/* Host: name (with this server's port when port is true) answers status. */
static void host_gets(int status, const char *name, bool port, const char *method,
                      const char *path, const char *body)
{
    char hdr[300];
    if (port)
        snprintf(hdr, sizeof hdr, "Host: %s:%d\r\n", name, H);
    else
        snprintf(hdr, sizeof hdr, "Host: %s\r\n", name);
    if (status == 421 && strcmp(method, "HEAD")) {
        char want[300];
        snprintf(want, sizeof want, "host '%s' is not a name this server answers to: add it to "
                 "[server] http_hosts", name);
        refused(421, want, method, path, body, hdr);
    } else {
        rbh_resp_free(send_as(status, method, path, body, hdr));
    }
}

SEC_TEST(a_foreign_host_is_refused_with_421_and_changes_nothing)
{
    start(WITH_PASSWORD);
    make_state();
    /* what a page on evil.example, rebound to 127.0.0.1, reads and sends */
    const char *reads[] = {"/api/info", "/api/jobs?state=dead", "/", "/app.js", "/metrics"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        host_gets(421, "evil.example", true, "GET", reads[i], NULL);
        host_gets(421, "evil.example", false, "HEAD", reads[i], NULL);
    }
    char own[200];
    snprintf(own, sizeof own, "Host: evil.example:%d\r\nOrigin: http://evil.example:%d\r\n"
             "Sec-Fetch-Site: same-origin\r\n", H, H);
    refused(421, "host 'evil.example' is not a name", "POST", "/api/jobs/discard",
            "{\"state\":\"dead\",\"all\":true}", own);
    host_gets(421, "evil.example", true, "POST", "/api/queues/default/pause", NULL);
    host_gets(421, "rebound.example.com", true, "POST", "/api/workers/quiet", "{}");
    host_gets(421, "localhost.evil.example", false, "GET", "/api/info", NULL);
    host_gets(421, "127.0.0.1.evil.example", false, "GET", "/api/info", NULL);
    assert_unchanged();
    /* the log says which name */
    char *log = rbh_read_log(&S);
    cr_assert(strstr(log, "refused Host 'rebound.example.com:"), "log: %s", log);
    free(log);
}

SEC_TEST(the_names_a_loopback_server_answers_to)
{
    start(WITH_PASSWORD);
    make_state();
    host_gets(200, "127.0.0.1", true, "GET", "/api/info", NULL);
    host_gets(200, "localhost", true, "GET", "/api/info", NULL);
    host_gets(200, "LocalHost.", false, "GET", "/", NULL);
    host_gets(200, "[::1]", true, "GET", "/metrics", NULL);
    host_gets(200, "10.1.2.3", true, "GET", "/api/info", NULL); /* an address: never DNS */
    host_gets(200, "localhost", true, "POST", "/api/queues/default/pause", NULL);
    cr_assert(paused("default"));
    /* a request without Host (HTTP/1.0) is no browser's */
    char *got = raw_request("GET /api/info HTTP/1.0\r\n" AUTH "\r\n");
    cr_assert(!strncmp(got, "HTTP/1.0 200 ", 13) || !strncmp(got, "HTTP/1.1 200 ", 13), "%s", got);
    free(got);
}

SEC_TEST(http_hosts_adds_names_and_star_turns_the_check_off)
{
    start(WITH_PASSWORD "http_hosts = [\"Rebound.Example.com\", \"*.corp.example\"]\n");
    make_state();
    host_gets(200, "rebound.example.com", false, "GET", "/api/info", NULL);
    host_gets(200, "REBOUND.example.com", true, "GET", "/", NULL);
    host_gets(200, "dash.corp.example", false, "GET", "/api/info", NULL);
    host_gets(200, "a.b.corp.example", true, "GET", "/metrics", NULL);
    host_gets(421, "corp.example", false, "GET", "/api/info", NULL);
    host_gets(421, "evil.example", false, "GET", "/api/info", NULL);
    /* the dashboard behind a proxy that keeps the Host: its own actions work */
    rbh_resp *r = send_as(200, "POST", "/api/queues/default/pause", NULL,
                          "Host: rebound.example.com\r\nOrigin: https://rebound.example.com\r\n");
    rbh_resp_free(r);
    cr_assert(paused("default"));
    /* and another site still cannot act through it */
    refused(403, "cross-origin request refused", "POST", "/api/queues/default/resume", NULL,
            "Host: rebound.example.com\r\nOrigin: https://evil.example\r\n");
    finish();
    start(WITH_PASSWORD "http_hosts = [\"*\"]\n");
    host_gets(200, "evil.example", true, "GET", "/api/info", NULL);
    host_gets(200, "anything.at.all", false, "GET", "/", NULL);
}

SEC_TEST(a_server_on_every_interface_answers_to_localhost)
{
    start_on("0.0.0.0:0", NULL);
    host_gets(200, "localhost", true, "GET", "/api/info", NULL);
    host_gets(200, "192.0.2.7", true, "GET", "/api/info", NULL);
    host_gets(421, "evil.example", true, "GET", "/api/info", NULL);
}

/* --- 4. headers --- */

/* r carries the headers that keep a browser from framing the dashboard,
 * running anything but its own files, leaking its URLs or sniffing. */
static void assert_security_headers(const rbh_resp *r, const char *what)
{
    const char *want[][2] = {
        {"Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
         "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {"X-Content-Type-Options", "nosniff"},
        {"Cross-Origin-Resource-Policy", "same-origin"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char *v = rbh_header(r, want[i][0]);
        cr_assert(v && !strcmp(v, want[i][1]), "%s: %s is '%s'", what, want[i][0],
                  v ? v : "(none)");
        free(v);
    }
}

SEC_TEST(every_reply_carries_the_security_headers)
{
    start(WITH_PASSWORD);
    struct {
        int status;
        const char *method, *path, *body, *headers;
    } cases[] = {
        {200, "GET", "/", NULL, NULL},
        {200, "GET", "/index.html", NULL, NULL},
        {200, "GET", "/app.js", NULL, NULL},
        {200, "GET", "/style.css", NULL, NULL},
        {200, "HEAD", "/", NULL, NULL},
        {200, "GET", "/api/info", NULL, NULL},
        {200, "GET", "/metrics", NULL, NULL},
        {200, "POST", "/api/queues/q1/pause", NULL, NULL},
        {404, "GET", "/missing.js", NULL, NULL},
        {404, "GET", "/api/job/nothing-here", NULL, NULL},
        {405, "DELETE", "/api/info", NULL, NULL},
        {415, "POST", "/api/workers/quiet", "a=b", "Content-Type: text/plain\r\n"},
        {403, "POST", "/api/workers/quiet", "{}", "Sec-Fetch-Site: cross-site\r\n"},
        {421, "GET", "/", NULL, "Host: evil.example\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rbh_resp *r = send_as(cases[i].status, cases[i].method, cases[i].path, cases[i].body,
                              cases[i].headers);
        char what[200];
        snprintf(what, sizeof what, "%s %s (%d)", cases[i].method, cases[i].path, cases[i].status);
        assert_security_headers(r, what);
        rbh_resp_free(r);
    }
    /* without the password: 401, with the headers too */
    rbh_resp *r = rbh_http(H, "GET", "/", NULL, NULL);
    cr_assert_eq(r->status, 401);
    assert_security_headers(r, "GET / (401)");
    rbh_resp_free(r);
}

/* --- 5. /metrics and the password --- */

/* GET /metrics with and without the credentials. */
static void metrics_asks(bool asks)
{
    rbh_resp *r = rbh_http(H, "GET", "/metrics", NULL, NULL);
    cr_assert_not_null(r);
    cr_assert_eq(r->status, asks ? 401 : 200, "/metrics without credentials: %d", r->status);
    if (asks) {
        char *wa = rbh_header(r, "WWW-Authenticate");
        cr_assert(wa && !strncmp(wa, "Basic realm=\"Rebound\"", 21), "%s", wa ? wa : "(none)");
        free(wa);
    }
    rbh_resp_free(r);
    if (*Auth) {
        r = send_as(200, "GET", "/metrics", NULL, NULL);
        cr_assert(strstr(r->body, "rebound_jobs{state=\"dead\"} 0\n"), "%s", r->body);
        rbh_resp_free(r);
        r = rbh_http(H, "GET", "/metrics", NULL, "Authorization: Basic eDp3cm9uZw==\r\n");
        cr_assert_eq(r->status, asks ? 401 : 200, "/metrics with a wrong password: %d", r->status);
        rbh_resp_free(r);
    }
}

SEC_TEST(metrics_asks_for_the_password_when_one_is_set)
{
    start(WITH_PASSWORD); /* metrics_auth "auto" */
    metrics_asks(true);
    finish();
    start(WITH_PASSWORD "metrics_auth = true\n");
    metrics_asks(true);
}

SEC_TEST(metrics_is_open_without_a_password_or_with_metrics_auth_false)
{
    start(NULL);
    metrics_asks(false);
    finish();
    start(WITH_PASSWORD "metrics_auth = false\n");
    metrics_asks(false);
    /* the dashboard and the API still ask */
    rbh_resp *r = rbh_http(H, "GET", "/api/info", NULL, NULL);
    cr_assert_eq(r->status, 401);
    rbh_resp_free(r);
}

SEC_TEST(metrics_auth_true_without_a_password_stops_the_start)
{
    rbh_init(&S);
    rbh_write_file(&S, "rebound.toml", "[server]\nmetrics_auth = true\n", S.config,
                   sizeof S.config);
    cr_assert_eq(rbh_launch(&S, NULL), -1);
    char *log = rbh_read_log(&S);
    cr_assert(strstr(log, "rebound.toml:2: key 'server.metrics_auth': true needs "
                          "'server.password' (the password /metrics asks for)"), "log: %s", log);
    free(log);
    C = rbh_connect(&S, NULL); /* nothing listens */
    cr_assert_null(C);
}
