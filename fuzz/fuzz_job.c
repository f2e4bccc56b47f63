/* Fuzzes PUSH's job validation (rb_job_validate, src/server/validate.c) with
 * a minimal rb_srv that holds only a configuration (policies by job type and
 * queue, a [retry] default), which is all validation reads. Properties: a job
 * that validates has the fields the server relies on afterwards (jid of 8+
 * characters, non-empty jobtype, args array, priority 1-9, reserve_for
 * 0-86400, an RFC 3339 or empty "at", an object or null custom) and an
 * effective policy; a rejected job gets a message and is not modified. */
#include <unistd.h>

#include <jansson.h>

#include "common/timeutil.h"
#include "config/config.h"
#include "fuzz.h"
#include "server/srv.h"

static rb_srv srv;

static const char config_text[] =
    "[retry]\n"
    "dialect = \"temporal\"\n"
    "initial_interval = \"1s\"\n"
    "maximum_attempts = 5\n"
    "[retry.queues.critical]\n"
    "ftl = \"10 5s 1m catch notify\"\n"
    "[retry.jobtypes.email]\n"
    "dialect = \"tasker\"\n"
    "max_attempts = 3\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[] = "/tmp/rebound-fuzz-job-XXXXXX";
    int fd = mkstemp(path);
    rb_err err = {0};
    if (fd < 0 || write(fd, config_text, sizeof config_text - 1) != (ssize_t)sizeof config_text - 1 ||
        rb_config_load(&srv.cfg, path, NULL, &err)) {
        fprintf(stderr, "fuzz_job: cannot load its configuration: %s\n", err.msg);
        abort();
    }
    close(fd);
    unlink(path);
    return 0;
}

static void check_int(const json_t *job, const char *key, json_int_t lo, json_int_t hi)
{
    json_t *v = json_object_get(job, key);
    if (!v || json_is_null(v))
        return;
    FUZZ_CHECK(json_is_integer(v));
    FUZZ_CHECK(json_integer_value(v) >= lo && json_integer_value(v) <= hi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *job = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!job)
        return 0;
    char *before = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    rb_err err = {0};
    int rc = rb_job_validate(&srv, job, &err);
    if (rc) {
        FUZZ_CHECK(rc == RB_EINVAL || rc < 0);
        FUZZ_CHECK(err.msg[0]);
        char *after = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        FUZZ_CHECK(strcmp(before, after) == 0);
        free(after);
    } else {
        FUZZ_CHECK(json_is_object(job));
        const char *jid = json_string_value(json_object_get(job, "jid"));
        const char *jobtype = json_string_value(json_object_get(job, "jobtype"));
        FUZZ_CHECK(jid && strlen(jid) >= 8);
        FUZZ_CHECK(jobtype && *jobtype);
        FUZZ_CHECK(json_is_array(json_object_get(job, "args")));
        check_int(job, "priority", 1, 9);
        check_int(job, "reserve_for", 0, 86400);
        const char *at = json_string_value(json_object_get(job, "at"));
        int64_t ms;
        if (at && *at)
            FUZZ_CHECK(rb_time_parse_rfc3339(at, &ms) == 0);
        json_t *custom = json_object_get(job, "custom");
        FUZZ_CHECK(!custom || json_is_null(custom) || json_is_object(custom));
        rb_policy p;
        rb_policy_layer layer;
        FUZZ_CHECK(rb_config_effective_policy(&srv.cfg, job, &p, &layer, NULL) == 0);
        FUZZ_CHECK(layer >= RB_LAYER_JOB && layer <= RB_LAYER_BUILTIN);
        rb_policy_release(&p);
    }
    free(before);
    json_decref(job);
    return 0;
}
