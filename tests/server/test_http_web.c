/* The HTTP side beyond the API: the embedded dashboard files, /metrics in
 * Prometheus format, basic auth with [server] password (/metrics too, and
 * metrics_public, metrics_auth's old name), and the HTTP listener's
 * options and errors. */
#include <criterion/criterion.h>

#include "test_http_harness.h"

TestSuite(http_web, .timeout = 30);

static rbh_resp *get(int port, const char *path, const char *headers)
{
    rbh_resp *r = rbh_http(port, "GET", path, NULL, headers);
    cr_assert_not_null(r, "GET %s: no HTTP reply", path);
    return r;
}

/* The value of the sample line that starts with prefix (metric and
 * labels), or -1 when absent. */
static double sample(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, n) && p[n] == ' ')
            return atof(p + n + 1);
    return -1;
}

static void stop_clean(rbh_server *s)
{
    cr_assert_eq(rbh_stop(s), 0, "the server did not exit cleanly (log above)");
    s->pid = 0;
}

Test(http_web, dashboard_files_are_served)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, NULL, &h), 0);
    rbh_resp *r = get(h, "/", NULL);
    cr_assert_eq(r->status, 200);
    char *ct = rbh_header(r, "Content-Type");
    cr_assert_str_eq(ct, "text/html; charset=utf-8");
    free(ct);
    cr_assert(strstr(r->body, "<title>Rebound</title>"), "index: %.200s", r->body);
    rbh_resp_free(r);
    const char *files[][2] = {{"/app.js", "text/javascript; charset=utf-8"},
                              {"/style.css", "text/css; charset=utf-8"},
                              {"/index.html", "text/html; charset=utf-8"}};
    for (size_t i = 0; i < 3; i++) {
        r = get(h, files[i][0], NULL);
        cr_assert_eq(r->status, 200, "%s: %d", files[i][0], r->status);
        ct = rbh_header(r, "Content-Type");
        cr_assert_str_eq(ct, files[i][1]);
        free(ct);
        cr_assert_gt(strlen(r->body), 100);
        rbh_resp_free(r);
    }
    r = get(h, "/missing.js", NULL);
    cr_assert_eq(r->status, 404);
    cr_assert_eq(json_integer_value(rbh_get(r->json, "error.status")), 404);
    rbh_resp_free(r);
    r = rbh_http(h, "POST", "/index.html", "x", NULL);
    cr_assert_eq(r->status, 405);
    rbh_resp_free(r);
    stop_clean(&s);
}

Test(http_web, metrics_count_by_queue_and_jobtype)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, NULL, &h), 0);
    rbh_conn *c = rbh_connect(&s, "w1");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-ok-1\",\"jobtype\":\"Mail\",\"args\":[],\"queue\":\"q1\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-bad-1\",\"jobtype\":\"Mail\",\"args\":[],\"queue\":\"q1\"}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-die-1\",\"jobtype\":\"Pay\",\"args\":[],\"queue\":\"q1\",\"retry\":-1}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-drop-1\",\"jobtype\":\"Pay\",\"args\":[],\"queue\":\"q1\",\"retry\":0}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-wait-1\",\"args\":[{\"jobtype\":\"Nested\"}],\"jobtype\":\"Idle\",\"queue\":\"q2\"}"));
    const char *jids[] = {"job-ok-1", "job-bad-1", "job-die-1", "job-drop-1"};
    for (int i = 0; i < 4; i++) {
        json_t *j = rbh_json(rbh_cmd(c, "FETCH q1"));
        cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jids[i]);
        json_decref(j);
        if (i == 0)
            cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jids[i]));
        else
            cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\"}", jids[i]));
    }
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-busy-1\",\"jobtype\":\"Mail\",\"args\":[],\"queue\":\"q3\"}"));
    json_t *j = rbh_json(rbh_cmd(c, "FETCH q3"));
    json_decref(j);

    rbh_resp *r = get(h, "/metrics", NULL);
    cr_assert_eq(r->status, 200);
    char *ct = rbh_header(r, "Content-Type");
    cr_assert(ct && !strncmp(ct, "text/plain; version=0.0.4", 25), "%s", ct);
    free(ct);
    const char *m = r->body;
    cr_assert_eq(sample(m, "rebound_jobs_pushed_total{queue=\"q1\",jobtype=\"Mail\"}"), 2);
    cr_assert_eq(sample(m, "rebound_jobs_pushed_total{queue=\"q1\",jobtype=\"Pay\"}"), 2);
    /* the top-level jobtype, not the one nested in args */
    cr_assert_eq(sample(m, "rebound_jobs_pushed_total{queue=\"q2\",jobtype=\"Idle\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_pushed_total{queue=\"q2\",jobtype=\"Nested\"}"), -1);
    cr_assert_eq(sample(m, "rebound_jobs_processed_total{queue=\"q1\",jobtype=\"Mail\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_failed_total{queue=\"q1\",jobtype=\"Mail\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_retried_total{queue=\"q1\",jobtype=\"Mail\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_failed_total{queue=\"q1\",jobtype=\"Pay\"}"), 2);
    cr_assert_eq(sample(m, "rebound_jobs_dead_total{queue=\"q1\",jobtype=\"Pay\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_discarded_total{queue=\"q1\",jobtype=\"Pay\"}"), 1);
    cr_assert_eq(sample(m, "rebound_queue_size{queue=\"q2\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs{state=\"retries\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs{state=\"dead\"}"), 1);
    cr_assert_eq(sample(m, "rebound_jobs_in_flight"), 1);
    cr_assert_eq(sample(m, "rebound_connections"), 1);
    cr_assert_eq(sample(m, "rebound_workers"), 1);
    /* one retry delay observed; the default policy's first delay is >= 15 s */
    cr_assert_eq(sample(m, "backoff_delay_applied_seconds_count"), 1);
    cr_assert_eq(sample(m, "backoff_delay_applied_seconds_bucket{le=\"10\"}"), 0);
    cr_assert_eq(sample(m, "backoff_delay_applied_seconds_bucket{le=\"+Inf\"}"), 1);
    cr_assert_gt(sample(m, "rebound_commit_batch_size_count"), 0);
    cr_assert_gt(sample(m, "rebound_commit_fsync_seconds_count"), 0);
    cr_assert_eq(sample(m, "rebound_commit_batch_size_count"),
                 sample(m, "rebound_commit_fsync_seconds_count"));
    cr_assert(strstr(m, "# TYPE backoff_delay_applied_seconds histogram\n"));
    cr_assert(strstr(m, "# TYPE rebound_jobs_pushed_total counter\n"));
    rbh_resp_free(r);
    rbh_close(c);
    stop_clean(&s);
}

Test(http_web, scheduler_lateness_is_observed)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, NULL, &h), 0);
    rbh_conn *c = rbh_connect(&s, "w1");
    char at[64];
    time_t t = time(NULL) + 2; /* at least a second ahead, so the scheduler promotes it */
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"job-later\",\"jobtype\":\"T\",\"args\":[],\"at\":\"%s\"}", at));
    cr_assert(rbh_wait_state(c, "job-later", "enqueued", 5000));
    rbh_resp *r = get(h, "/metrics", NULL);
    cr_assert_eq(sample(r->body, "rebound_scheduler_lateness_seconds_count"), 1);
    rbh_resp_free(r);
    rbh_close(c);
    stop_clean(&s);
}

static const char *auth_ok = "Authorization: Basic YWRtaW46czNjcmV0\r\n";     /* admin:s3cret */
static const char *auth_bad = "Authorization: Basic YWRtaW46d3Jvbmc=\r\n";    /* admin:wrong */
static const char *auth_junk = "Authorization: Basic !!!\r\n";

Test(http_web, password_protects_api_and_dashboard)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, "[server]\npassword = \"s3cret\"\n", &h), 0);
    const char *paths[] = {"/api/info", "/", "/app.js", "/api/jobs?state=dead"};
    for (size_t i = 0; i < 4; i++) {
        rbh_resp *r = get(h, paths[i], NULL);
        cr_assert_eq(r->status, 401, "%s: %d", paths[i], r->status);
        char *wa = rbh_header(r, "WWW-Authenticate");
        cr_assert(wa && !strncmp(wa, "Basic realm=\"Rebound\"", 21), "%s", wa ? wa : "(none)");
        free(wa);
        rbh_resp_free(r);
        r = get(h, paths[i], auth_bad);
        cr_assert_eq(r->status, 401);
        rbh_resp_free(r);
        r = get(h, paths[i], auth_junk);
        cr_assert_eq(r->status, 401);
        rbh_resp_free(r);
        r = get(h, paths[i], auth_ok);
        cr_assert_eq(r->status, 200, "%s with the password: %d", paths[i], r->status);
        rbh_resp_free(r);
    }
    rbh_resp *r = rbh_http(h, "POST", "/api/queues/default/pause", NULL, NULL);
    cr_assert_eq(r->status, 401);
    rbh_resp_free(r);
    /* metrics_auth "auto" (the default): /metrics asks for it too */
    r = get(h, "/metrics", NULL);
    cr_assert_eq(r->status, 401);
    rbh_resp_free(r);
    r = get(h, "/metrics", auth_ok);
    cr_assert_eq(r->status, 200);
    cr_assert(strstr(r->body, "rebound_jobs{state=\"dead\"} 0"));
    rbh_resp_free(r);
    stop_clean(&s);
}

/* metrics_public, metrics_auth's old name: true still opens /metrics */
Test(http_web, metrics_public_true_still_opens_metrics)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, "[server]\npassword = \"s3cret\"\nmetrics_public = true\n", &h), 0);
    rbh_resp *r = get(h, "/metrics", NULL);
    cr_assert_eq(r->status, 200);
    cr_assert(strstr(r->body, "rebound_jobs{state=\"dead\"} 0"));
    rbh_resp_free(r);
    r = get(h, "/api/info", NULL);
    cr_assert_eq(r->status, 401);
    rbh_resp_free(r);
    stop_clean(&s);
}

Test(http_web, large_bodies_are_refused)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, NULL, &h), 0);
    size_t n = 2 * 1024 * 1024;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[n] = '\0';
    rbh_resp *r = rbh_http(h, "POST", "/api/policy/simulate", big, NULL);
    free(big);
    cr_assert(r == NULL || r->status == 413, "status %d", r ? r->status : 0);
    rbh_resp_free(r);
    /* the server is still fine */
    r = get(h, "/api/info", NULL);
    cr_assert_eq(r->status, 200);
    rbh_resp_free(r);
    stop_clean(&s);
}

Test(http_web, listen_options_and_errors)
{
    rbh_server a, b;
    int h;
    cr_assert_eq(rbh_start_http(&a, NULL, &h), 0);
    /* an HTTP address someone asked for must be free */
    rbh_init(&b);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", h);
    const char *taken[] = {"--http-listen", addr, NULL};
    cr_assert_eq(rbh_launch(&b, taken), -1);
    char *log = rbh_read_log(&b);
    cr_assert(strstr(log, "cannot listen for HTTP"), "log: %s", log);
    free(log);
    const char *bad[] = {"--http-listen", "nonsense", NULL};
    cr_assert_eq(rbh_launch(&b, bad), -1);
    /* off: the protocol only */
    const char *off[] = {"--http-listen", "off", NULL};
    cr_assert_eq(rbh_launch(&b, off), 0);
    rbh_conn *c = rbh_connect(&b, NULL);
    cr_assert_not_null(c);
    rbh_close(c);
    stop_clean(&b);
    stop_clean(&a);
}

Test(http_web, head_sends_headers_only)
{
    rbh_server s;
    int h;
    cr_assert_eq(rbh_start_http(&s, NULL, &h), 0);
    rbh_resp *g = get(h, "/style.css", NULL);
    rbh_resp *r = rbh_http(h, "HEAD", "/style.css", NULL, NULL);
    cr_assert_not_null(r);
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "");
    char *len = rbh_header(r, "Content-Length");
    cr_assert_not_null(len);
    cr_assert_eq((size_t)atol(len), strlen(g->body));
    free(len);
    rbh_resp_free(r);
    rbh_resp_free(g);
    r = rbh_http(h, "HEAD", "/api/queues", NULL, NULL);
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "");
    rbh_resp_free(r);
    stop_clean(&s);
}
