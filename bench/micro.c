/* Micro-benchmarks for bench/run.sh: retry-policy decisions and policy parses
 * per second (src/policy), and the per-request protocol work the server does
 * with jansson (PUSH line parse, FETCH reply encode) per second.
 * Usage: micro [--quick]. Prints "micro.metric value" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/buf.h"
#include "policy/policy.h"
#include "policy/rng.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keeps results alive so the compiler cannot drop the measured work. */
static volatile int64_t sink;

static const struct {
    const char *name, *spec;
} policies[] = {
    {"faktory", "faktory:25"},
    {"temporal", "{\"dialect\":\"temporal\",\"initial_interval\":\"1s\","
                 "\"backoff_coefficient\":2,\"maximum_interval\":\"100s\","
                 "\"maximum_attempts\":10,\"non_retryable_error_types\":[\"Fatal\"]}"},
    {"tasker", "{\"dialect\":\"tasker\",\"max_attempts\":8,\"backoff\":\"exponential\","
               "\"backoff_base_ms\":1000,\"max_backoff_ms\":60000}"},
    {"ftl", "//ftl:retry 10 5s 1m catch notify"},
};

/* Decisions per second for one policy, attempts cycling 1..12. */
static int bench_decide(const char *name, const char *spec, long n)
{
    rb_policy p;
    rb_err err = {0};
    if (rb_policy_parse_spec(spec, NULL, &p, &err) < 0) {
        fprintf(stderr, "micro: policy %s: %s\n", name, rb_err_msg(&err));
        return -1;
    }
    rb_rng rng;
    rb_rng_seed(&rng, 42);
    rb_failure f = {.errtype = "BenchError", .message = "planned failure"};
    rb_decision d;
    int64_t now = 1800000000000, acc = 0;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        rb_policy_decide(&p, 1 + i % 12, &f, now + i, now - 60000, &rng, &d);
        acc += d.delay_ms + (int64_t)d.outcome;
    }
    double secs = now_s() - t0;
    sink = acc;
    printf("micro.policy_decide_%s_per_s %.0f\n", name, (double)n / secs);
    rb_policy_release(&p);
    return 0;
}

static int bench_parse_policy(long n)
{
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        rb_policy p;
        rb_err err = {0};
        const char *spec = policies[i % 4].spec;
        if (rb_policy_parse_spec(spec, NULL, &p, &err) < 0) {
            fprintf(stderr, "micro: policy parse: %s\n", rb_err_msg(&err));
            return -1;
        }
        sink = p.max_attempts;
        rb_policy_release(&p);
    }
    printf("micro.policy_parse_per_s %.0f\n", (double)n / (now_s() - t0));
    return 0;
}

/* A PUSH line as the load generator sends it: split the verb, parse the JSON
 * argument, read the fields PUSH validation reads. */
static int bench_push_parse(long n)
{
    rb_buf line = RB_BUF_INIT;
    rb_buf_adds(&line, "PUSH {\"jid\":\"bench-0badf00d-123456\",\"jobtype\":\"bench\","
                       "\"queue\":\"bench\",\"args\":[123456]}");
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        const char *sp = memchr(line.data, ' ', line.len);
        if (!sp || sp - line.data != 4 || memcmp(line.data, "PUSH", 4) != 0)
            return -1;
        json_error_t jerr;
        json_t *job = json_loadb(sp + 1, line.len - (size_t)(sp + 1 - line.data), 0, &jerr);
        if (!job)
            return -1;
        const char *jid = json_string_value(json_object_get(job, "jid"));
        const char *type = json_string_value(json_object_get(job, "jobtype"));
        const char *queue = json_string_value(json_object_get(job, "queue"));
        sink = (int64_t)(jid && type && queue && json_is_array(json_object_get(job, "args")));
        json_decref(job);
    }
    printf("micro.push_parse_per_s %.0f\n", (double)n / (now_s() - t0));
    rb_buf_release(&line);
    return 0;
}

/* A FETCH reply: the stored job with the server's fields, encoded compact. */
static int bench_fetch_encode(long n)
{
    json_error_t jerr;
    json_t *job = json_loads("{\"jid\":\"bench-0badf00d-123456\",\"jobtype\":\"bench\","
                             "\"queue\":\"bench\",\"args\":[123456],\"priority\":5,"
                             "\"created_at\":\"2026-11-21T10:00:00.123Z\","
                             "\"enqueued_at\":\"2026-11-21T10:00:00.123Z\",\"retry\":25}",
                             0, &jerr);
    if (!job)
        return -1;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        char *s = json_dumps(job, JSON_COMPACT);
        sink = (int64_t)strlen(s);
        free(s);
    }
    printf("micro.fetch_encode_per_s %.0f\n", (double)n / (now_s() - t0));
    json_decref(job);
    return 0;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 2 || (argc == 2 && !quick)) {
        fprintf(stderr, "usage: micro [--quick]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    long n = quick ? 20000 : 2000000;
    int rc = 0;
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++)
        rc |= bench_decide(policies[i].name, policies[i].spec, n);
    rc |= bench_parse_policy(n / 10);
    rc |= bench_push_parse(n / 2);
    rc |= bench_fetch_encode(n / 2);
    if (rc)
        fprintf(stderr, "micro: a benchmark failed\n");
    return rc ? 1 : 0;
}
