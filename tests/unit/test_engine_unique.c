/* The pure rules of unique and expiring jobs (engine/unique.h): the custom
 * keys checked, the lock key's canonical form, the lock's end, and
 * expires_in turned into expires_at. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/unique.h"

#define NOW 1764000000000LL

static json_t *parse(const char *s)
{
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "bad test JSON %s", s);
    return o;
}

/* rb_unique_parse of custom's members; its rc, message in msg. */
static int parse_unique(const char *custom, rb_unique_spec *s, char *msg)
{
    char text[512];
    snprintf(text, sizeof text, "{\"jid\":\"j1234567\",\"jobtype\":\"T\",\"args\":[],\"custom\":{%s}}",
             custom);
    json_t *o = parse(text);
    rb_err err = {0};
    int rc = rb_unique_parse(o, s, &err);
    strcpy(msg, rc ? rb_err_msg(&err) : "");
    json_decref(o);
    return rc;
}

Test(engine_unique, parse_accepts_numbers_and_both_modes)
{
    rb_unique_spec s;
    char msg[600];
    cr_assert_eq(parse_unique("\"unique_for\":60", &s, msg), 0);
    cr_assert(s.on && s.for_s == 60 && !s.until_start);
    cr_assert_eq(parse_unique("\"unique_for\":0.5,\"unique_until\":\"start\"", &s, msg), 0);
    cr_assert(s.on && s.for_s == 0.5 && s.until_start);
    cr_assert_eq(parse_unique("\"unique_for\":65.0,\"unique_until\":\"success\"", &s, msg), 0);
    cr_assert(s.on && !s.until_start);
    cr_assert_eq(parse_unique("\"unique_for\":0", &s, msg), 0);
    cr_assert(!s.on);
    cr_assert_eq(parse_unique("\"other\":1", &s, msg), 0);
    cr_assert(!s.on);
    cr_assert_eq(parse_unique("\"unique_for\":null", &s, msg), 0);
    cr_assert(!s.on);
    json_t *o = parse("{\"jid\":\"j1234567\",\"args\":[]}");
    cr_assert_eq(rb_unique_parse(o, &s, NULL), 0);
    cr_assert(!s.on);
    cr_assert(!rb_unique_or_expiring(o));
    json_decref(o);
}

Test(engine_unique, parse_refuses_bad_types)
{
    rb_unique_spec s;
    char msg[600];
    const char *bad_for[][2] = {{"\"unique_for\":\"600\"", "\"600\""}, {"\"unique_for\":-1", "-1"},
                                {"\"unique_for\":true", "true"}, {"\"unique_for\":[60]", "[60]"},
                                {"\"unique_for\":31536001", "31536001"},
                                {"\"unique_for\":1e12", "1000000000000.0"}};
    for (size_t i = 0; i < sizeof bad_for / sizeof *bad_for; i++) {
        char want[200];
        cr_assert_eq(parse_unique(bad_for[i][0], &s, msg), RB_EINVAL, "%s", bad_for[i][0]);
        snprintf(want, sizeof want, "custom.unique_for must be a number of seconds from 0 to "
                 "31536000 (one year), not %s", bad_for[i][1]);
        cr_assert_str_eq(msg, want); /* the range and the value given (issue 25) */
    }
    const char *bad_until[] = {"\"unique_for\":1,\"unique_until\":\"end\"",
                               "\"unique_for\":1,\"unique_until\":1"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(parse_unique(bad_until[i], &s, msg), RB_EINVAL);
        cr_assert_str_eq(msg, "custom.unique_until must be \"success\" or \"start\"");
    }
}

static void key_of(const char *text, char out[RB_UNIQUE_KEY_LEN])
{
    json_t *o = parse(text);
    rb_unique_key(o, out);
    json_decref(o);
}

Test(engine_unique, key_is_jobtype_queue_and_canonical_args)
{
    char a[RB_UNIQUE_KEY_LEN], b[RB_UNIQUE_KEY_LEN];
    key_of("{\"jobtype\":\"T\",\"args\":[1,{\"a\":1,\"b\":[2.0]}],\"jid\":\"x\"}", a);
    cr_assert_eq(strlen(a), 64);
    /* key order, 1.0 vs 1, an absent queue vs "default", other fields */
    key_of("{\"queue\":\"default\",\"args\":[1.0,{\"b\":[2],\"a\":1}],\"jobtype\":\"T\",\"jid\":\"y\","
           "\"retry\":3}", b);
    cr_assert_str_eq(a, b);
    key_of("{\"jobtype\":\"T\",\"args\":[1,{\"a\":1,\"b\":[2.5]}]}", b);
    cr_assert_str_neq(a, b);
    key_of("{\"jobtype\":\"T\",\"queue\":\"q2\",\"args\":[1,{\"a\":1,\"b\":[2]}]}", b);
    cr_assert_str_neq(a, b);
    key_of("{\"jobtype\":\"T2\",\"args\":[1,{\"a\":1,\"b\":[2]}]}", b);
    cr_assert_str_neq(a, b);
    /* the parts are separated: "ab"+"c" is not "a"+"bc" */
    key_of("{\"jobtype\":\"ab\",\"queue\":\"c\",\"args\":[]}", a);
    key_of("{\"jobtype\":\"a\",\"queue\":\"bc\",\"args\":[]}", b);
    cr_assert_str_neq(a, b);
    /* "1" (a string) is not 1 */
    key_of("{\"jobtype\":\"T\",\"args\":[\"1\"]}", a);
    key_of("{\"jobtype\":\"T\",\"args\":[1]}", b);
    cr_assert_str_neq(a, b);
}

Test(engine_unique, lock_ends_unique_for_after_push_or_at)
{
    rb_unique_spec s = {.on = true, .for_s = 1.5};
    cr_assert_eq(rb_unique_until_ms(&s, NOW, NOW), NOW + 1500);
    cr_assert_eq(rb_unique_until_ms(&s, NOW, NOW - 5000), NOW + 1500);
    cr_assert_eq(rb_unique_until_ms(&s, NOW, NOW + 10000), NOW + 11500);
}

Test(engine_unique, expires_in_becomes_expires_at)
{
    json_t *o = parse("{\"jid\":\"j1234567\",\"args\":[],\"custom\":{\"expires_in\":60}}");
    cr_assert(rb_unique_or_expiring(o));
    int64_t ms;
    cr_assert_eq(rb_expiry_prepare(o, NOW, &ms, NULL), 0);
    cr_assert_eq(ms, NOW + 60000);
    const char *at = json_string_value(json_object_get(json_object_get(o, "custom"), "expires_at"));
    char want[RB_TIME_STRLEN];
    cr_assert_str_eq(at, rb_time_format(NOW + 60000, want));
    cr_assert_not_null(json_object_get(json_object_get(o, "custom"), "expires_in")); /* kept */
    cr_assert_eq(rb_expiry_of(o), NOW + 60000);
    json_decref(o);
}

Test(engine_unique, expires_at_wins_and_offsets_are_read)
{
    json_t *o = parse("{\"custom\":{\"expires_at\":\"2025-11-24T18:00:00+02:00\",\"expires_in\":5}}");
    int64_t ms, want;
    cr_assert_eq(rb_time_parse_rfc3339("2025-11-24T16:00:00Z", &want), 0);
    cr_assert_eq(rb_expiry_prepare(o, NOW, &ms, NULL), 0);
    cr_assert_eq(ms, want);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "custom"), "expires_at")),
                     "2025-11-24T18:00:00+02:00");
    cr_assert_eq(rb_expiry_of(o), want);
    json_decref(o);
    o = parse("{\"custom\":{\"expires_at\":\"2025-11-24T16:00:00.123456789Z\"}}");
    cr_assert_eq(rb_expiry_prepare(o, NOW, &ms, NULL), 0);
    cr_assert_eq(ms, want + 123);
    json_decref(o);
}

Test(engine_unique, bad_expiry_values_change_nothing)
{
    const char *bad[] = {"{\"custom\":{\"expires_at\":\"soon\"}}", "{\"custom\":{\"expires_at\":5}}",
                         "{\"custom\":{\"expires_in\":\"60\"}}", "{\"custom\":{\"expires_in\":-1}}"};
    for (size_t i = 0; i < 4; i++) {
        json_t *o = parse(bad[i]);
        char *before = json_dumps(o, JSON_SORT_KEYS);
        rb_err err = {0};
        int64_t ms;
        cr_assert_eq(rb_expiry_prepare(o, NOW, &ms, &err), RB_EINVAL, "%s", bad[i]);
        cr_assert(strstr(rb_err_msg(&err), i < 2 ? "custom.expires_at must be an RFC 3339 time"
                                                 : "custom.expires_in must be a number of seconds "
                                                   "from 0 to 315360000 (ten years), not "));
        char *after = json_dumps(o, JSON_SORT_KEYS);
        cr_assert_str_eq(before, after);
        free(before);
        free(after);
        cr_assert_eq(rb_expiry_of(o), 0);
        json_decref(o);
    }
    json_t *o = parse("{\"args\":[]}");
    int64_t ms = 1;
    cr_assert_eq(rb_expiry_prepare(o, NOW, &ms, NULL), 0);
    cr_assert_eq(ms, 0);
    json_decref(o);
}
