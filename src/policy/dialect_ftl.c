/* FTL's retry directive (seed 004, semantics.md §4):
 * `//ftl:retry [count] min [max] [catch verb]`, count = retries (default 10),
 * durations in FTL's strict grammar, 1 s <= backoff <= 24 h. */
#include "policy/dialect.h"
#include "policy/duration.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

const char *const rb_dialect_ftl_keys[] = {"ftl", NULL};

enum {
    FTL_DEFAULT_COUNT = 10,
    FTL_MAX_TOKENS = 8,
};
#define FTL_MIN_BACKOFF_MS INT64_C(1000)
#define FTL_MAX_BACKOFF_MS INT64_C(86400000)
#define FTL_DEFAULT_MAX_MS INT64_C(3600000)
#define FTL_MAX_COUNT INT64_C(1000000000)

static bool all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* A verb reference: an identifier, optionally module-qualified ("mod.verb"). */
static bool valid_verb(const char *s)
{
    bool start = true;
    for (; *s; s++) {
        if (start && !(isalpha((unsigned char)*s) || *s == '_'))
            return false;
        if (!start && !(isalnum((unsigned char)*s) || *s == '_' || *s == '.'))
            return false;
        start = *s == '.';
    }
    return !start;
}

static int backoff(const char *what, const char *tok, int64_t *ms, rb_err *err)
{
    int rc = rb_duration_parse_ftl(tok, ms, err);
    if (rc) {
        rb_err_prefix(err, "ftl %s", what);
        return rc;
    }
    if (*ms < FTL_MIN_BACKOFF_MS)
        return rb_err_set(err, RB_EINVAL, "ftl %s: backoff must be at least 1s, got '%s'", what,
                          tok);
    if (*ms > FTL_MAX_BACKOFF_MS)
        return rb_err_set(err, RB_EINVAL, "ftl %s: backoff must be at most 1d, got '%s'", what,
                          tok);
    return 0;
}

int rb_dialect_parse_ftl_text(const char *text, rb_policy *out, rb_err *err)
{
    char buf[512];
    char *tok[FTL_MAX_TOKENS];
    size_t n = 0;
    if (strlen(text) >= sizeof buf)
        return rb_err_set(err, RB_EINVAL, "ftl: directive too long");
    strcpy(buf, text);
    for (char *save, *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == FTL_MAX_TOKENS)
            return rb_err_set(err, RB_EINVAL, "ftl: too many parts in '%s'", text);
        tok[n++] = t;
    }

    size_t i = 0;
    int64_t count = FTL_DEFAULT_COUNT, min = 0, max = 0;
    bool has_min = false, has_max = false;
    const char *verb = NULL;
    int rc;
    if (i < n && all_digits(tok[i])) {
        count = strlen(tok[i]) > 10 ? FTL_MAX_COUNT + 1 : (int64_t)strtoll(tok[i], NULL, 10);
        if (count > FTL_MAX_COUNT)
            return rb_err_set(err, RB_ERANGE, "ftl count: must be at most %lld, got '%s'",
                              (long long)FTL_MAX_COUNT, tok[i]);
        i++;
    }
    if (i < n && strcmp(tok[i], "catch")) {
        if ((rc = backoff("min", tok[i++], &min, err)))
            return rc;
        has_min = true;
    }
    if (i < n && strcmp(tok[i], "catch")) {
        if ((rc = backoff("max", tok[i++], &max, err)))
            return rc;
        has_max = true;
    }
    if (i < n && !strcmp(tok[i], "catch")) {
        if (++i == n)
            return rb_err_set(err, RB_EINVAL, "ftl catch: expected a verb after 'catch'");
        if (!valid_verb(tok[i]))
            return rb_err_set(err, RB_EINVAL, "ftl catch: invalid verb name '%s'", tok[i]);
        verb = tok[i++];
    }
    if (i < n)
        return rb_err_set(err, RB_EINVAL, "ftl: unexpected '%s' in '%s' (expected [count] min "
                                          "[max] [catch verb])", tok[i], text);

    if (count > 0 && !has_min)
        return rb_err_set(err, RB_EINVAL, "ftl min: retry must have a minimum backoff");
    if (count == 0 && has_min && !verb)
        return rb_err_set(err, RB_EINVAL, "ftl: can not define a backoff duration when retry "
                                          "count is 0 and no catch is declared");
    if (!has_max)
        max = min > FTL_DEFAULT_MAX_MS ? min : FTL_DEFAULT_MAX_MS;
    if (has_max && max < min) {
        char a[RB_DURATION_STRLEN], b[RB_DURATION_STRLEN];
        return rb_err_set(err, RB_EINVAL, "ftl max: cannot be less than min, got '%s' < '%s'",
                          rb_duration_format(max, a, sizeof a), rb_duration_format(min, b, sizeof b));
    }

    rb_policy_blank(out, RB_DIALECT_FTL);
    out->backoff = RB_BACKOFF_EXPONENTIAL;
    out->initial_ms = has_min ? min : FTL_MIN_BACKOFF_MS;
    out->coefficient = 2.0;
    out->max_interval_ms = max;
    out->max_attempts = count + 1;
    out->retry_after_cap_ms = max;
    out->catch_jobtype = verb ? rb_xstrdup(verb) : NULL;
    return 0;
}
