/* tests/server/test_http_api.c in distributed mode: the HTTP API of a node
 * whose jobs live in a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_http_api.c"

/* /metrics in distributed mode: queue sizes and jobs by state from the
 * database, counters from this node's commands under the jobs' own queue
 * and job type. */
HTTP_TEST(metrics_read_the_database_and_count_this_nodes_commands)
{
    push("jobid-m1", "Mail", "mq");
    push("jobid-m2", "Mail", "mq");
    json_t *j = rbh_json(rbh_cmd(C, "FETCH mq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-m1");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"jobid-m1\"}"));
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    const char *want[] = {
        "rebound_queue_size{queue=\"mq\"} 1\n",
        "rebound_queue_paused{queue=\"mq\"} 0\n",
        "rebound_jobs{state=\"enqueued\"} 1\n",
        "rebound_jobs{state=\"working\"} 0\n",
        "rebound_jobs_pushed_total{queue=\"mq\",jobtype=\"Mail\"} 2\n",
        "rebound_jobs_processed_total{queue=\"mq\",jobtype=\"Mail\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r->body, want[i]), "/metrics lacks %s in:\n%s", want[i], r->body);
    cr_assert_null(strstr(r->body, "queue=\"unknown\""), "%s", r->body);
    rbh_resp_free(r);
}

/* The value of the exposition line starting with prefix (-1: none). */
static double metric_value(const char *body, const char *prefix)
{
    for (const char *p = body; (p = strstr(p, prefix)); p++)
        if (p == body || p[-1] == '\n')
            return strtod(p + strlen(prefix), NULL);
    return -1;
}

/* Reads /metrics until the line prefix has a value >= min (the maintenance
 * thread's work reaches the loop asynchronously); the last body. */
static rbh_resp *metrics_until(const char *prefix, double min)
{
    int64_t deadline = rbh_now_ms() + 10000;
    for (;;) {
        rbh_resp *r = expect(200, "GET", "/metrics", NULL);
        double v = metric_value(r->body, prefix);
        if (v >= min || rbh_now_ms() > deadline) {
            cr_assert(v >= min, "%s stays at %g, want >= %g:\n%s", prefix, v, min, r->body);
            return r;
        }
        rbh_resp_free(r);
        rbh_sleep_ms(50);
    }
}

/* FAIL counts failed and its outcome under the job's queue and job type,
 * the retry delay, and the commit histogram times this node's PUSH, ACK
 * and FAIL transactions. */
HTTP_TEST(metrics_count_fail_outcomes_with_labels_and_commit_times)
{
    make_failed("jobid-f1", "Bill", "Oops", false); /* retries in 1 h */
    make_failed("jobid-f2", "Bill", "Oops", true);  /* dead */
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    const char *want[] = {
        "rebound_jobs_failed_total{queue=\"fq\",jobtype=\"Bill\"} 2\n",
        "rebound_jobs_retried_total{queue=\"fq\",jobtype=\"Bill\"} 1\n",
        "rebound_jobs_dead_total{queue=\"fq\",jobtype=\"Bill\"} 1\n",
        "backoff_delay_applied_seconds_bucket{le=\"3600\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r->body, want[i]), "/metrics lacks %s in:\n%s", want[i], r->body);
    cr_assert_null(strstr(r->body, "queue=\"unknown\""), "%s", r->body);
    /* two pushes and two fails, each its own transaction at least */
    cr_assert_geq(metric_value(r->body, "rebound_commit_fsync_seconds_count "), 3, "%s", r->body);
    cr_assert_geq(metric_value(r->body, "rebound_commit_batch_size_count "), 3, "%s", r->body);
    rbh_resp_free(r);
}

/* A reservation that expires is failed by the maintenance thread and counted
 * here as single-node counts an expiry: failed and its outcome under the
 * job's labels. */
HTTP_TEST(metrics_count_expired_reservations_with_labels)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-x1\",\"jobtype\":\"Slow\",\"args\":[],"
                                   "\"queue\":\"xq\",\"reserve_for\":1,\"retry\":-1}"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH xq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-x1");
    json_decref(j);
    rbh_resp *r = metrics_until("rebound_jobs_failed_total{queue=\"xq\",jobtype=\"Slow\"} ", 1);
    rbh_resp_free(r);
    /* the state gauges are read from the database apart from the counters:
     * wait for them too */
    r = metrics_until("rebound_jobs{state=\"dead\"} ", 1);
    cr_assert(strstr(r->body, "rebound_jobs_failed_total{queue=\"xq\",jobtype=\"Slow\"} 1\n"),
              "%s", r->body);
    cr_assert(strstr(r->body, "rebound_jobs_dead_total{queue=\"xq\",jobtype=\"Slow\"} 1\n"),
              "%s", r->body);
    cr_assert(strstr(r->body, "rebound_jobs{state=\"dead\"} 1\n"), "%s", r->body);
    rbh_resp_free(r);
}

/* A scheduled job promoted by the maintenance thread is observed in the
 * scheduler-lateness histogram. */
HTTP_TEST(metrics_observe_scheduler_lateness)
{
    /* due 2 s from now (far enough that the PUSH arrives before it) */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t due_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 2000;
    time_t t = (time_t)(due_ms / 1000);
    char sec[40], at[64];
    strftime(sec, sizeof sec, "%Y-%m-%dT%H:%M:%S", gmtime(&t));
    snprintf(at, sizeof at, "%s.%03dZ", sec, (int)(due_ms % 1000));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"jobid-s1\",\"jobtype\":\"Later\",\"args\":[],"
                                   "\"queue\":\"sq\",\"at\":\"%s\"}", at));
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    cr_assert(strstr(r->body, "rebound_jobs{state=\"scheduled\"} 1\n"), "%s", r->body);
    rbh_resp_free(r);
    r = metrics_until("rebound_scheduler_lateness_seconds_count ", 1);
    rbh_resp_free(r);
    json_t *j = rbh_json(rbh_cmd(C, "FETCH sq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-s1");
    json_decref(j);
}
