/* Unit tests of the metrics module (no server): the jobtype scan used for
 * labels, counters by (queue, job type) and the series cap, histogram
 * buckets, label escaping in the exposition, the Enterprise figures
 * (expired jobs, throttles), and the throughput history. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/jobs.h"
#include "server/metrics.h"
#include "server/srv.h"

static void jobtype_is(const char *json, const char *want)
{
    char out[64];
    rb_metrics_jobtype(json, out, sizeof out);
    cr_assert_str_eq(out, want, "jobtype of %s", json);
}

Test(http_metrics, jobtype_scan_takes_the_top_level_key)
{
    jobtype_is("{\"jid\":\"a\",\"jobtype\":\"Mail\",\"args\":[]}", "Mail");
    jobtype_is("{\"args\":[{\"jobtype\":\"Inner\"}],\"jobtype\":\"Outer\"}", "Outer");
    jobtype_is("{\"custom\":{\"jobtype\":\"X\"},\"x\":\"\\\"jobtype\\\":\\\"Y\\\"\"}", "unknown");
    jobtype_is("{\"a\":\"jobtype\",\"jobtype\":\"Z\"}", "Z");
    jobtype_is("{ \"jobtype\" : \"Spaced\" }", "Spaced");
    jobtype_is("{\"jobtype\":7}", "unknown");
    jobtype_is("{\"jobtype\":\"unterminated", "unknown");
    jobtype_is("", "unknown");
    char small[5];
    rb_metrics_jobtype("{\"jobtype\":\"LongName\"}", small, sizeof small);
    cr_assert_str_eq(small, "Long");
}

/* A minimal server state for rendering, and the SQLite backend's job
 * indexes the test's jobs live in. */
static rb_jobs js;

static rb_srv *fake_srv(void)
{
    rb_srv *srv = calloc(1, sizeof *srv);
    srv->eng = rb_eng_new(srv, &srv->cfg, NULL); /* no backend, no connection */
    rb_jobs_init(&js);
    return srv;
}

static void free_srv(rb_srv *srv)
{
    rb_jobs_release(&js);
    rb_eng_free(srv->eng);
    free(srv);
}

static rb_job *job(rb_srv *srv, const char *queue, const char *json)
{
    (void)srv;
    rb_queue *q = rb_jobs_queue(&js, queue, true);
    return rb_job_new("jid-0001", strdup(json), q, 5);
}

Test(http_metrics, counters_render_by_queue_and_jobtype_escaped)
{
    rb_srv *srv = fake_srv();
    rb_metrics *m = rb_metrics_new();
    rb_job *a = job(srv, "q\"1", "{\"jobtype\":\"A\\\\B\"}");
    rb_job *b = job(srv, "q2", "{\"jobtype\":\"C\"}");
    rb_job_metric(m, RB_M_PUSHED, a);
    rb_job_metric(m, RB_M_PUSHED, a);
    rb_job_metric(m, RB_M_PUSHED, b);
    rb_job_metric(m, RB_M_DEAD, b);
    rb_job_metric(NULL, RB_M_DEAD, b); /* no metrics: no-op */
    cr_assert_eq(rb_metrics_total(m, RB_M_PUSHED), 3);
    cr_assert_eq(rb_metrics_total(m, RB_M_DEAD), 1);
    rb_buf out = RB_BUF_INIT;
    rb_metrics_render_state(m, srv, &(rb_metrics_state){0}, &out); /* counters only */
    const char *t = rb_buf_str(&out);
    cr_assert(strstr(t, "rebound_jobs_pushed_total{queue=\"q\\\"1\",jobtype=\"A\\\\\\\\B\"} 2\n"), "%s", t);
    cr_assert(strstr(t, "rebound_jobs_pushed_total{queue=\"q2\",jobtype=\"C\"} 1\n"));
    cr_assert(strstr(t, "rebound_jobs_dead_total{queue=\"q2\",jobtype=\"C\"} 1\n"));
    cr_assert(strstr(t, "rebound_jobs_dead_total{queue=\"q\\\"1\",jobtype=\"A\\\\\\\\B\"} 0\n"));
    rb_buf_release(&out);
    free(a->json);
    free(a);
    free(b->json);
    free(b);
    rb_metrics_free(m);
    free_srv(srv);
}

/* The Enterprise figures of the engine's INFO: the store's expired count
 * and each throttle's limit, timeout and slots (a backend that reports no
 * slots leaves their line out), with HELP and TYPE; none without them. */
Test(http_metrics, expired_jobs_and_throttles_render_with_help_and_type)
{
    rb_srv *srv = fake_srv();
    rb_buf out = RB_BUF_INIT;
    rb_metrics_render_state(NULL, srv, &(rb_metrics_state){0}, &out);
    cr_assert_null(strstr(rb_buf_str(&out), "expired_stored"), "%s", rb_buf_str(&out));
    cr_assert_null(strstr(rb_buf_str(&out), "rebound_throttle"), "%s", rb_buf_str(&out));
    rb_buf_release(&out);
    const rb_metrics_throttle ts[] = {{"img\"s", 4, 60, 3, 0, 0, 0}, {"bulk", 1, 0, -1, 0, 0, 0}};
    rb_metrics_state st = {.has_expired = true, .expired = 7, .throttles = ts, .n_throttles = 2};
    rb_metrics_render_state(NULL, srv, &st, &out);
    const char *t = rb_buf_str(&out);
    const char *want[] = {
        "# HELP rebound_jobs_expired_stored_total jobs dropped unrun",
        "\n# TYPE rebound_jobs_expired_stored_total counter\nrebound_jobs_expired_stored_total 7\n",
        "\n# TYPE rebound_throttle_limit gauge\nrebound_throttle_limit{queue=\"img\\\"s\"} 4\n"
        "rebound_throttle_limit{queue=\"bulk\"} 1\n",
        "\n# TYPE rebound_throttle_timeout_seconds gauge\n"
        "rebound_throttle_timeout_seconds{queue=\"img\\\"s\"} 60\n"
        "rebound_throttle_timeout_seconds{queue=\"bulk\"} 0\n",
        "# HELP rebound_throttle_slots_in_use ",
        "\n# TYPE rebound_throttle_slots_in_use gauge\n"
        "rebound_throttle_slots_in_use{queue=\"img\\\"s\"} 3\n#",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(t, want[i]), "lacks %s in:\n%s", want[i], t);
    cr_assert_null(strstr(t, "rebound_throttle_slots_in_use{queue=\"bulk\"}"), "%s", t);
    rb_buf_release(&out);
    free_srv(srv);
}

/* Distributed mode counts by the engine's decoded labels: the series must
 * be the one the stored JSON text gives (what PUSH counts under). */
Test(http_metrics, decoded_labels_count_in_the_json_texts_series)
{
    rb_srv *srv = fake_srv();
    rb_metrics *m = rb_metrics_new();
    rb_metrics_event(m, RB_M_PUSHED, "q", "{\"jobtype\":\"A\\\\B\\\"C\\n\"}");
    rb_metrics_event_labels(m, RB_M_PROCESSED, "q", "A\\B\"C\n");
    rb_metrics_event(m, RB_M_PUSHED, "q", "{\"jobtype\":\"Mail\"}");
    rb_metrics_event_labels(m, RB_M_FAILED, "q", "Mail");
    rb_metrics_event_labels(m, RB_M_DEAD, "", "");
    rb_metrics_event_labels(m, RB_M_DEAD, NULL, NULL);
    rb_buf out = RB_BUF_INIT;
    rb_metrics_render_state(m, srv, &(rb_metrics_state){0}, &out); /* counters only */
    const char *t = rb_buf_str(&out);
    /* label A\\B\"C\n as rendered: each backslash and quote escaped again */
    const char *want[] = {
        "rebound_jobs_pushed_total{queue=\"q\",jobtype=\"A\\\\\\\\B\\\\\\\"C\\\\n\"} 1\n",
        "rebound_jobs_processed_total{queue=\"q\",jobtype=\"A\\\\\\\\B\\\\\\\"C\\\\n\"} 1\n",
        "rebound_jobs_failed_total{queue=\"q\",jobtype=\"Mail\"} 1\n",
        "rebound_jobs_dead_total{queue=\"unknown\",jobtype=\"unknown\"} 2\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(t, want[i]), "lacks %s in:\n%s", want[i], t);
    cr_assert_eq(rb_metrics_total(m, RB_M_DEAD), 2);
    rb_buf_release(&out);
    rb_metrics_free(m);
    free_srv(srv);
}

Test(http_metrics, series_are_capped)
{
    rb_srv *srv = fake_srv();
    rb_metrics *m = rb_metrics_new();
    char json[64];
    for (int i = 0; i < RB_METRICS_MAX_SERIES + 50; i++) {
        snprintf(json, sizeof json, "{\"jobtype\":\"T%d\"}", i);
        rb_job *j = job(srv, "q", json);
        rb_job_metric(m, RB_M_PROCESSED, j);
        free(j->json);
        free(j);
    }
    cr_assert_eq(rb_metrics_total(m, RB_M_PROCESSED), RB_METRICS_MAX_SERIES + 50);
    rb_buf out = RB_BUF_INIT;
    rb_metrics_render_state(m, srv, &(rb_metrics_state){0}, &out); /* counters only */
    cr_assert(strstr(rb_buf_str(&out), "rebound_jobs_processed_total{queue=\"q\",jobtype=\"_other\"} 50\n"));
    cr_assert_null(strstr(rb_buf_str(&out), "jobtype=\"T2000\""));
    rb_buf_release(&out);
    rb_metrics_free(m);
    free_srv(srv);
}

Test(http_metrics, histograms_are_cumulative)
{
    rb_srv *srv = fake_srv();
    rb_metrics *m = rb_metrics_new();
    rb_metrics_retry_delay(m, 500);       /* 0.5 s: le=1 */
    rb_metrics_retry_delay(m, 60000);     /* 60 s: le=60 */
    rb_metrics_retry_delay(m, 700000000); /* beyond 7 d: +Inf only */
    rb_metrics_lateness(m, -5);           /* early counts as 0 */
    rb_metrics_commit(m, 3, 1500);
    rb_buf out = RB_BUF_INIT;
    rb_metrics_render_state(m, srv, &(rb_metrics_state){0}, &out); /* counters only */
    const char *t = rb_buf_str(&out);
    cr_assert(strstr(t, "backoff_delay_applied_seconds_bucket{le=\"1\"} 1\n"), "%s", t);
    cr_assert(strstr(t, "backoff_delay_applied_seconds_bucket{le=\"30\"} 1\n"));
    cr_assert(strstr(t, "backoff_delay_applied_seconds_bucket{le=\"60\"} 2\n"));
    cr_assert(strstr(t, "backoff_delay_applied_seconds_bucket{le=\"604800\"} 2\n"));
    cr_assert(strstr(t, "backoff_delay_applied_seconds_bucket{le=\"+Inf\"} 3\n"));
    cr_assert(strstr(t, "backoff_delay_applied_seconds_count 3\n"));
    cr_assert(strstr(t, "backoff_delay_applied_seconds_sum 700060.500000\n"));
    cr_assert(strstr(t, "rebound_scheduler_lateness_seconds_bucket{le=\"0.001\"} 1\n"));
    cr_assert(strstr(t, "rebound_commit_batch_size_bucket{le=\"2\"} 0\n"));
    cr_assert(strstr(t, "rebound_commit_batch_size_bucket{le=\"4\"} 1\n"));
    cr_assert(strstr(t, "rebound_commit_fsync_seconds_bucket{le=\"0.001\"} 0\n"));
    cr_assert(strstr(t, "rebound_commit_fsync_seconds_bucket{le=\"0.0025\"} 1\n"));
    rb_buf_release(&out);
    rb_metrics_free(m);
    free_srv(srv);
}

typedef struct seen {
    int n;
    int64_t t[400];
    uint64_t pushed[400];
} seen;

static void record(void *arg, int64_t t_s, uint64_t pushed, uint64_t processed, uint64_t failed)
{
    seen *s = arg;
    s->t[s->n] = t_s;
    s->pushed[s->n++] = pushed;
    (void)processed;
    (void)failed;
}

Test(http_metrics, history_keeps_the_last_minutes_as_differences)
{
    rb_srv *srv = fake_srv();
    rb_metrics *m = rb_metrics_new();
    rb_job *j = job(srv, "q", "{\"jobtype\":\"A\"}");
    for (int s = 0; s < RB_METRICS_HISTORY + 20; s++) {
        for (int k = 0; k < s % 3; k++)
            rb_job_metric(m, RB_M_PUSHED, j);
        rb_metrics_sample(m, 1000 + s);
        rb_metrics_sample(m, 1000 + s); /* the same second twice: kept once */
    }
    seen sn = {0};
    rb_metrics_history(m, record, &sn);
    cr_assert_eq(sn.n, RB_METRICS_HISTORY - 1);
    cr_assert_eq(sn.t[sn.n - 1], 1000 + RB_METRICS_HISTORY + 19);
    for (int i = 0; i < sn.n; i++)
        cr_assert_eq(sn.pushed[i], (uint64_t)((sn.t[i] - 1000) % 3), "second %lld", (long long)sn.t[i]);
    free(j->json);
    free(j);
    rb_metrics_free(m);
    free_srv(srv);
}
