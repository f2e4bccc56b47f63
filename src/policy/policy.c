/* The canonical policy's lifecycle: defaults, copies, release, tasker's
 * [backoff] settings, the client's retry bound, catch-job policies, names. */
#include "policy/policy.h"
#include "policy/dialect.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

void rb_backoff_config_init(rb_backoff_config *cfg)
{
    static const int64_t seed_delays[] = {1000, 2000, 4000, 8000, 16000, 32000};
    cfg->n_default_backoff = sizeof seed_delays / sizeof seed_delays[0];
    cfg->default_backoff_ms = rb_xmalloc(sizeof seed_delays);
    memcpy(cfg->default_backoff_ms, seed_delays, sizeof seed_delays);
    cfg->max_backoff_ms = 60000;
    cfg->backoff_multiplier = 2.0;
    cfg->jitter_enabled = true;
    cfg->jitter_max_percentage = 0.1;
}

void rb_backoff_config_release(rb_backoff_config *cfg)
{
    free(cfg->default_backoff_ms);
    cfg->default_backoff_ms = NULL;
    cfg->n_default_backoff = 0;
}

void rb_backoff_config_copy(rb_backoff_config *dst, const rb_backoff_config *src)
{
    *dst = *src;
    dst->default_backoff_ms = NULL;
    if (src->n_default_backoff) {
        size_t sz = src->n_default_backoff * sizeof *src->default_backoff_ms;
        dst->default_backoff_ms = rb_xmalloc(sz);
        memcpy(dst->default_backoff_ms, src->default_backoff_ms, sz);
    }
}

void rb_policy_blank(rb_policy *p, rb_dialect d)
{
    memset(p, 0, sizeof *p);
    p->dialect = d;
    p->backoff = RB_BACKOFF_EXPONENTIAL;
    p->initial_ms = 1000;
    p->coefficient = 2.0;
    p->retryable = true;
    p->on_exhaust = RB_ON_EXHAUST_DEAD;
    p->jitter = RB_JITTER_NONE;
}

void rb_policy_default(rb_policy *p)
{
    rb_policy_blank(p, RB_DIALECT_FAKTORY);
    p->backoff = RB_BACKOFF_SIDEKIQ;
    p->initial_ms = 15000; /* Sidekiq's delay floor, for descriptions only */
    p->coefficient = 1.0;
    p->max_attempts = 26; /* retry 25: the first execution + 25 retries */
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char **dup_strv(char *const *v, size_t n)
{
    if (!n)
        return NULL;
    char **out = rb_xcalloc(n, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = rb_xstrdup(v[i]);
    return out;
}

void rb_policy_release(rb_policy *p)
{
    free(p->delays_ms);
    free_strv(p->non_retryable, p->n_non_retryable);
    free(p->catch_jobtype);
    free_strv(p->warnings, p->n_warnings);
    p->delays_ms = NULL;
    p->n_delays = 0;
    p->non_retryable = NULL;
    p->n_non_retryable = 0;
    p->catch_jobtype = NULL;
    p->warnings = NULL;
    p->n_warnings = 0;
}

void rb_policy_copy(rb_policy *dst, const rb_policy *src)
{
    *dst = *src;
    dst->delays_ms = NULL;
    if (src->n_delays) {
        dst->delays_ms = rb_xmalloc(src->n_delays * sizeof *src->delays_ms);
        memcpy(dst->delays_ms, src->delays_ms, src->n_delays * sizeof *src->delays_ms);
    }
    dst->non_retryable = dup_strv(src->non_retryable, src->n_non_retryable);
    dst->catch_jobtype = src->catch_jobtype ? rb_xstrdup(src->catch_jobtype) : NULL;
    dst->warnings = dup_strv(src->warnings, src->n_warnings);
}

void rb_policy_warn(rb_policy *p, const char *fmt, ...)
{
    rb_buf b = RB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    rb_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    p->warnings = rb_xrealloc(p->warnings, (p->n_warnings + 1) * sizeof *p->warnings);
    p->warnings[p->n_warnings++] = rb_buf_detach(&b, NULL);
}

void rb_policy_apply_client_retry(rb_policy *p, int64_t retry)
{
    if (retry <= 0) {
        /* 0: a failure discards the job; -1: it goes to dead (callers
         * reject anything below -1). Either way no retry, and no catch
         * job: the client said stop. */
        p->max_attempts = 1;
        p->on_exhaust = retry == 0 ? RB_ON_EXHAUST_DISCARD : RB_ON_EXHAUST_DEAD;
        free(p->catch_jobtype);
        p->catch_jobtype = NULL;
        return;
    }
    int64_t bound = retry >= INT64_MAX - 1 ? INT64_MAX : retry + 1;
    if (p->max_attempts == 0 || p->max_attempts > bound)
        p->max_attempts = bound;
}

void rb_policy_for_catch(const rb_policy *orig, rb_policy *out)
{
    rb_policy_blank(out, orig->dialect);
    out->backoff = RB_BACKOFF_FIXED;
    out->initial_ms = orig->max_interval_ms > 0 ? orig->max_interval_ms : 3600000;
    out->max_interval_ms = out->initial_ms;
    out->coefficient = 1.0;
    out->max_attempts = 0;
    out->retry_after_cap_ms = orig->retry_after_cap_ms;
}

static const char *const dialect_names[] = {
    [RB_DIALECT_FAKTORY] = "faktory", [RB_DIALECT_TEMPORAL] = "temporal",
    [RB_DIALECT_TASKER] = "tasker",   [RB_DIALECT_FTL] = "ftl",
    [RB_DIALECT_TUTORIAL] = "tutorial",
};

const char *rb_dialect_name(rb_dialect d)
{
    return (unsigned)d < sizeof dialect_names / sizeof *dialect_names ? dialect_names[d] : "?";
}

int rb_dialect_from_name(const char *name, rb_dialect *d)
{
    for (size_t i = 0; i < sizeof dialect_names / sizeof *dialect_names; i++)
        if (name && !strcmp(name, dialect_names[i])) {
            *d = (rb_dialect)i;
            return 0;
        }
    return RB_ENOENT;
}

const char *rb_outcome_name(rb_outcome o)
{
    switch (o) {
    case RB_OUTCOME_RETRY: return "retry";
    case RB_OUTCOME_DEAD: return "dead";
    case RB_OUTCOME_DISCARD: return "discard";
    case RB_OUTCOME_CATCH: return "catch";
    }
    return "?";
}

const char *rb_source_name(rb_delay_source s)
{
    switch (s) {
    case RB_SOURCE_COMPUTED: return "computed";
    case RB_SOURCE_SERVER_REQUESTED: return "server-requested";
    case RB_SOURCE_OVERRIDE: return "override";
    }
    return "?";
}

const char *rb_reason_name(rb_dead_reason r)
{
    switch (r) {
    case RB_REASON_NONE: return "none";
    case RB_REASON_EXHAUSTED: return "exhausted";
    case RB_REASON_NON_RETRYABLE_TYPE: return "non-retryable-type";
    case RB_REASON_NON_RETRYABLE_FLAG: return "non-retryable-flag";
    case RB_REASON_DEADLINE: return "deadline";
    case RB_REASON_NOT_RETRYABLE: return "not-retryable";
    case RB_REASON_DEPENDENCY: return "dependency";
    }
    return "?";
}
