/* PUSH's job validation (the reference server's rules plus Rebound's
 * fields), shared by both backends. */
#include "server/srv.h"

#include "engine/flow.h"

#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/depend.h"
#include "policy/policy.h"

/* Reads an optional integer field into *out; error when present but not an
 * integer in [lo, hi]. */
static int int_field(const json_t *job, const char *key, json_int_t lo, json_int_t hi,
                     json_int_t *out, rb_err *err)
{
    json_t *v = json_object_get(job, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return rb_err_set(err, RB_EINVAL, "%s must be an integer", key);
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi)
        return rb_err_set(err, RB_EINVAL, "%s must be between %lld and %lld, not %lld", key,
                          (long long)lo, (long long)hi, (long long)n);
    *out = n;
    return 0;
}

int rb_queue_name_valid(const char *q)
{
    size_t n = strlen(q);
    if (n == 0 || n > RB_QUEUE_NAME_MAX)
        return 0;
    for (; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == 0x7f)
            return 0;
    return 1;
}

/* Faktory's refusals (manager.go's Push), word for word where Faktory
 * refuses the same thing: clients' own tests compare them (the Rust
 * client's PUSHB test). Where Rebound's rule is wider (a field of another
 * type, which Faktory reports as invalid JSON), Faktory's sentence comes
 * first and Rebound's rule after it, in parentheses. */
#define FK_JID "jobs must have a reasonable jid parameter"
#define FK_JOBTYPE "jobs must have a jobtype parameter"
#define FK_ARGS "jobs must have an args parameter"
#define FK_RESERVE "jobs cannot be reserved for more than one day"

int rb_job_validate(rb_srv *srv, json_t *job, rb_err *err)
{
    if (!json_is_object(job))
        return rb_err_set(err, RB_EINVAL, "job must be a JSON object");
    json_t *jv = json_object_get(job, "jid");
    const char *jid = json_string_value(jv);
    if (jv && !json_is_null(jv) && !jid)
        return rb_err_set(err, RB_EINVAL, FK_JID " (a string of at least 8 characters)");
    if (!jid || strlen(jid) < 8)
        return rb_err_set(err, RB_EINVAL, FK_JID);
    json_t *tv = json_object_get(job, "jobtype");
    const char *jobtype = json_string_value(tv);
    if (tv && !json_is_null(tv) && !jobtype)
        return rb_err_set(err, RB_EINVAL, FK_JOBTYPE " (job %s: a non-empty string)", jid);
    if (!jobtype || !*jobtype)
        return rb_err_set(err, RB_EINVAL, FK_JOBTYPE);
    json_t *args = json_object_get(job, "args");
    if (!args || json_is_null(args))
        return rb_err_set(err, RB_EINVAL, FK_ARGS);
    if (!json_is_array(args))
        return rb_err_set(err, RB_EINVAL, FK_ARGS " (job %s: args must be an array)", jid);
    json_t *q = json_object_get(job, "queue");
    if (q && !json_is_null(q) && (!json_is_string(q) || !rb_queue_name_valid(json_string_value(q))))
        return rb_err_set(err, RB_EINVAL,
                          "job %s: queue must be a non-empty name without spaces", jid);
    json_t *at = json_object_get(job, "at");
    if (at && !json_is_null(at)) {
        int64_t ms;
        if (!json_is_string(at))
            return rb_err_set(err, RB_EINVAL, "job %s: at must be an RFC 3339 time string", jid);
        if (*json_string_value(at) && rb_time_parse_rfc3339(json_string_value(at), &ms))
            return rb_err_set(err, RB_EINVAL,
                              "invalid timestamp for 'at': \"%s\" (job %s: not an RFC 3339 time)",
                              json_string_value(at), jid);
    }
    json_int_t n;
    int rc;
    json_t *rv = json_object_get(job, "reserve_for");
    if (json_is_integer(rv) && json_integer_value(rv) > 86400)
        return rb_err_set(err, RB_EINVAL, FK_RESERVE);
    if ((rc = int_field(job, "reserve_for", 0, 86400, &n, err)) ||
        (rc = int_field(job, "priority", 1, 9, &n, err)) ||
        (rc = int_field(job, "retry", -1, 1000000, &n, err)) ||
        (rc = int_field(job, "backtrace", 0, 1000, &n, err))) {
        rb_err_prefix(err, "job %s", jid);
        return rc;
    }
    json_t *custom = json_object_get(job, "custom");
    if (custom && !json_is_null(custom) && !json_is_object(custom))
        return rb_err_set(err, RB_EINVAL, "job %s: custom must be an object", jid);
    const char *bid;
    if ((rc = rb_batch_member_bid(job, &bid, err)) || (bid && (rc = rb_eng_batch_check(srv->eng, err)))) {
        rb_err_prefix(err, "job %s", jid);
        return rc;
    }
    if ((rc = rb_eng_unique_check(srv->eng, job, rb_now_ms(), err))) /* engine/unique.h */
        return rc;
    if ((rc = rb_eng_flow_check(srv->eng, job, rb_now_ms(), err))) /* engine/flow.h */
        return rc;
    if (rb_dep_has(job)) { /* job dependencies (docs/workflows.md) */
        rb_dep_spec spec;
        if ((rc = rb_dep_parse(job, &spec, err))) {
            /* a field's type: "job J: ..."; a self-dependency reads as a
             * push's cycle, "depends_on: cycle through J" */
            if (err && strncmp(rb_err_msg(err), "depends_on:", 11))
                rb_err_prefix(err, "job %s", jid);
            return rc;
        }
        rb_dep_spec_release(&spec);
    }
    rb_policy pol;
    rb_policy_layer layer;
    if ((rc = rb_config_effective_policy(&srv->cfg, job, &pol, &layer, err))) {
        /* err already names the field (retry_policy or custom.retry_policy) */
        rb_err_prefix(err, "job %s", jid);
        return rc;
    }
    rb_policy_release(&pol);
    return 0;
}
