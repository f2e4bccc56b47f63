/* Unique jobs' and expiring jobs' rules (engine/unique.h): the custom keys
 * checked, the lock's key and end, expires_in turned into expires_at. */
#include "engine/unique.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/timeutil.h"

static json_t *custom_of(const json_t *job)
{
    json_t *c = json_is_object(job) ? json_object_get(job, "custom") : NULL;
    return json_is_object(c) ? c : NULL;
}

/* The error for a number-of-seconds field key whose value v is not one
 * from 0 to max: the range and the value given. */
static int seconds_error(rb_err *err, const char *key, const json_t *v, double max,
                         const char *max_words)
{
    char *given = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    int rc = rb_err_set(err, RB_EINVAL, "custom.%s must be a number of seconds from 0 to %.0f (%s), not %.40s",
                        key, max, max_words, given ? given : "?");
    free(given);
    return rc;
}

bool rb_unique_or_expiring(const json_t *job)
{
    json_t *c = custom_of(job);
    return c && (json_object_get(c, "unique_for") || json_object_get(c, "unique_until") ||
                 json_object_get(c, "expires_at") || json_object_get(c, "expires_in"));
}

int rb_unique_parse(const json_t *job, rb_unique_spec *out, rb_err *err)
{
    *out = (rb_unique_spec){0};
    json_t *c = custom_of(job);
    if (!c)
        return 0;
    json_t *f = json_object_get(c, "unique_for");
    json_t *u = json_object_get(c, "unique_until");
    if (f && !json_is_null(f)) {
        double s = json_is_number(f) ? json_number_value(f) : -1;
        if (!json_is_number(f) || !isfinite(s) || s < 0 || s > RB_UNIQUE_FOR_MAX)
            return seconds_error(err, "unique_for", f, RB_UNIQUE_FOR_MAX, "one year");
        out->on = s > 0;
        out->for_s = s;
    }
    if (u && !json_is_null(u)) {
        const char *s = json_string_value(u);
        if (!s || (strcmp(s, "success") && strcmp(s, "start")))
            return rb_err_set(err, RB_EINVAL,
                              "custom.unique_until must be \"success\" or \"start\"");
        out->until_start = !strcmp(s, "start");
    }
    return 0;
}

/* v with every integral real within 2^53 turned into an integer (so 1.0
 * and 1 read the same); a new reference. */
static json_t *canonical(json_t *v)
{
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) <= 9007199254740992.0)
            return json_integer((json_int_t)d);
        return json_incref(v);
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
            json_array_append_new(a, canonical(e));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e)
            json_object_set_new(o, k, canonical(e));
        return o;
    }
    return json_incref(v);
}

char *rb_key_hash(const char *a, const char *b, const char *c, char out[RB_UNIQUE_KEY_LEN])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, a, strlen(a) + 1); /* with its NUL */
    EVP_DigestUpdate(ctx, b, strlen(b) + 1);
    if (c)
        EVP_DigestUpdate(ctx, c, strlen(c));
    EVP_DigestFinal_ex(ctx, md, &n);
    EVP_MD_CTX_free(ctx);
    for (unsigned int i = 0; i < n && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = '\0';
    return out;
}

char *rb_unique_key(const json_t *job, char out[RB_UNIQUE_KEY_LEN])
{
    const char *type = json_string_value(json_object_get(job, "jobtype"));
    const char *queue = json_string_value(json_object_get(job, "queue"));
    json_t *args = json_object_get(job, "args");
    json_t *c = canonical(args ? args : json_null());
    char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(c);
    rb_key_hash(type ? type : "", queue ? queue : "default", text, out);
    free(text);
    return out;
}

int64_t rb_unique_until_ms(const rb_unique_spec *s, int64_t now, int64_t at_ms)
{
    int64_t from = at_ms > now ? at_ms : now;
    return from + (int64_t)llround(s->for_s * 1000.0);
}

int rb_expiry_prepare(json_t *job, int64_t now, int64_t *ms, rb_err *err)
{
    *ms = 0;
    json_t *c = custom_of(job);
    if (!c)
        return 0;
    json_t *at = json_object_get(c, "expires_at");
    json_t *in = json_object_get(c, "expires_in");
    if (in && !json_is_null(in)) {
        double s = json_is_number(in) ? json_number_value(in) : -1;
        if (!json_is_number(in) || !isfinite(s) || s < 0 || s > RB_EXPIRES_IN_MAX)
            return seconds_error(err, "expires_in", in, RB_EXPIRES_IN_MAX, "ten years");
        *ms = now + (int64_t)llround(s * 1000.0);
    }
    if (at && !json_is_null(at)) { /* expires_at wins over expires_in */
        int64_t t;
        const char *s = json_string_value(at);
        if (!s || rb_time_parse_rfc3339(s, &t))
            return rb_err_set(err, RB_EINVAL, "custom.expires_at must be an RFC 3339 time");
        *ms = t;
        return 0;
    }
    if (*ms) {
        char buf[RB_TIME_STRLEN];
        json_object_set_new(c, "expires_at", json_string(rb_time_format(*ms, buf)));
    }
    return 0;
}

int64_t rb_expiry_of(const json_t *job)
{
    json_t *c = custom_of(job);
    const char *s = c ? json_string_value(json_object_get(c, "expires_at")) : NULL;
    int64_t t;
    if (!s || rb_time_parse_rfc3339(s, &t))
        return 0;
    return t;
}
