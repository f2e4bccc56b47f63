/* Fuzzes configuration loading (rb_config_load, src/config/): TOML text
 * through the schema, [backoff] and the [retry] policies. Properties: a
 * failure names the file; a configuration that loads has positive limits and
 * policies rb_policy_decide() accepts, and converts to JSON and text. */
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "common/buf.h"
#include "config/config.h"
#include "fuzz.h"

/* The input as a file: a memfd, named through /proc/self/fd. */
static int as_file(const void *data, size_t size, char *path, size_t n)
{
    int fd = memfd_create("rebound-fuzz-config", 0);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

/* A loaded policy is one rb_policy_decide() accepts: check its basic ranges
 * and run one decision. */
static void check_policy(const rb_policy *p)
{
    FUZZ_CHECK(p->initial_ms >= 0 && p->max_interval_ms >= 0 && p->max_attempts >= 0);
    FUZZ_CHECK(p->backoff != RB_BACKOFF_EXPONENTIAL || p->coefficient >= 1.0);
    rb_rng r;
    rb_rng_seed(&r, 1);
    rb_decision d;
    rb_policy_decide(p, 2, NULL, 1000000, 0, &r, &d);
    FUZZ_CHECK(d.outcome != RB_OUTCOME_RETRY || (d.delay_ms >= 0 && d.retry_at_ms == 1000000 + d.delay_ms));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = as_file(data, size, path, sizeof path);
    rb_config cfg;
    rb_err err = {0};
    int rc = rb_config_load(&cfg, path, NULL, &err);
    close(fd);
    if (rc) {
        FUZZ_CHECK(rc < 0 && strstr(err.msg, path) != NULL);
        rb_config_release(&cfg);
        return 0;
    }
    FUZZ_CHECK(cfg.server.max_job_bytes > 0 && cfg.server.max_connections > 0);
    if (cfg.has_retry_default)
        check_policy(&cfg.retry_default);
    for (size_t i = 0; i < cfg.n_queues; i++)
        check_policy(&cfg.queues[i].policy);
    for (size_t i = 0; i < cfg.n_jobtypes; i++)
        check_policy(&cfg.jobtypes[i].policy);
    rb_policy_layer l; /* the lookup the server does for every job */
    const rb_policy *p = rb_config_policy_for(&cfg, cfg.n_jobtypes ? cfg.jobtypes[0].name : "x",
                                              cfg.n_queues ? cfg.queues[0].name : "default", &l);
    if (p)
        check_policy(p);
    json_t *j = rb_config_to_json(&cfg);
    FUZZ_CHECK(json_is_object(j));
    json_decref(j);
    rb_buf text;
    rb_buf_init(&text);
    rb_config_describe(&cfg, &text);
    rb_buf_release(&text);
    rb_config_release(&cfg);
    return 0;
}
