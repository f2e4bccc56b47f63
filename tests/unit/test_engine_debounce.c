/* Debounce's pure rules (engine/debounce.h): custom.debounce checked and
 * each refusal, the key's scope (queue and job type), the run time capped
 * by max, the merge (args and custom from the push, the rest kept), which
 * states take a merge, JOB's views. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/debounce.h"
#include "engine/job_state.h"

static json_t *parse(const char *s)
{
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "bad test JSON %s", s);
    return o;
}

/* rb_debounce_parse of a job with custom's members and top-level extra
 * members; its rc, the message in msg. */
static int parse_with(const char *custom, const char *extra, rb_debounce_spec *s, char *msg)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"jid\":\"j1234567\",\"jobtype\":\"T\",\"args\":[]%s%s,\"custom\":{%s}}",
             extra ? "," : "", extra ? extra : "", custom);
    json_t *o = parse(text);
    rb_err err = {0};
    int rc = rb_debounce_parse(o, s, &err);
    strcpy(msg, rc ? rb_err_msg(&err) : "");
    json_decref(o);
    return rc;
}

Test(debounce, parses_key_for_and_max)
{
    rb_debounce_spec s;
    char msg[256];
    cr_assert_eq(parse_with("\"debounce\":{\"key\":\"k\",\"for\":0.5,\"max\":10}", NULL, &s, msg), 0);
    cr_assert(s.on);
    cr_assert_eq(s.for_ms, 500);
    cr_assert_eq(s.max_ms, 10000);
    cr_assert_eq(parse_with("\"debounce\":{\"key\":\"k\",\"for\":2}", NULL, &s, msg), 0);
    cr_assert_eq(s.max_ms, 0, "no max: no cap");
    cr_assert_eq(parse_with("\"debounce\":null", NULL, &s, msg), 0);
    cr_assert(!s.on);
    cr_assert_eq(parse_with("\"x\":1", NULL, &s, msg), 0);
    cr_assert(!s.on);
    /* unique_for 0 is no uniqueness; an empty bid no batch; an empty at no time */
    cr_assert_eq(parse_with("\"debounce\":{\"key\":\"k\",\"for\":1},\"unique_for\":0", NULL, &s,
                            msg), 0);
    cr_assert_eq(parse_with("\"debounce\":{\"key\":\"k\",\"for\":1},\"bid\":\"\"", "\"at\":\"\"",
                            &s, msg), 0);
}

Test(debounce, refusals_name_the_rule)
{
    static const struct {
        const char *custom, *extra, *msg;
    } bad[] = {
        {"\"debounce\":[]", NULL, "custom.debounce must be an object {\"key\", \"for\", \"max\"}"},
        {"\"debounce\":{\"for\":1}", NULL,
         "custom.debounce.key must be a non-empty string of at most 200 bytes"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1e9}", NULL,
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got 1000000000.0"},
        {"\"debounce\":{\"key\":\"k\",\"for\":0.0001}", NULL,
         "custom.debounce.for must be a number of seconds from 0.001 to 604800, got 0.0001"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1.5,\"max\":1}", NULL,
         "custom.debounce.max must be a number of seconds from for (1.5) to 2592000, got 1"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1,\"max\":\"1h\"}", NULL,
         "custom.debounce.max must be a number of seconds from for (1) to 2592000, got \"1h\""},
        {"\"debounce\":{\"key\":\"k\",\"for\":1},\"unique_for\":5", NULL,
         "custom.debounce cannot be combined with custom.unique_for"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1},\"bid\":\"b\"", NULL,
         "custom.debounce cannot be combined with custom.bid"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1}", "\"depends_on\":[\"p1234567\"]",
         "custom.debounce cannot be combined with depends_on"},
        {"\"debounce\":{\"key\":\"k\",\"for\":1}", "\"at\":\"2030-01-01T00:00:00Z\"",
         "custom.debounce cannot be combined with at"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rb_debounce_spec s;
        char msg[256];
        cr_assert_eq(parse_with(bad[i].custom, bad[i].extra, &s, msg), RB_EINVAL, "%s",
                     bad[i].custom);
        cr_assert_str_eq(msg, bad[i].msg);
    }
    char long_key[300];
    snprintf(long_key, sizeof long_key, "\"debounce\":{\"key\":\"%0201d\",\"for\":1}", 0);
    rb_debounce_spec s;
    char msg[256];
    cr_assert_eq(parse_with(long_key, NULL, &s, msg), RB_EINVAL);
}

Test(debounce, key_is_scoped_to_queue_and_jobtype)
{
    json_t *a = parse("{\"jobtype\":\"T\",\"queue\":\"q\"}");
    json_t *b = parse("{\"jobtype\":\"T\",\"queue\":\"r\"}");
    json_t *c = parse("{\"jobtype\":\"U\",\"queue\":\"q\"}");
    json_t *d = parse("{\"jobtype\":\"T\"}");
    json_t *e = parse("{\"jobtype\":\"T\",\"queue\":\"default\"}");
    char ha[RB_DEBOUNCE_HASH_LEN], hb[RB_DEBOUNCE_HASH_LEN], hc[RB_DEBOUNCE_HASH_LEN],
        hd[RB_DEBOUNCE_HASH_LEN], he[RB_DEBOUNCE_HASH_LEN], hk[RB_DEBOUNCE_HASH_LEN];
    rb_debounce_hash(a, "k", ha);
    rb_debounce_hash(b, "k", hb);
    rb_debounce_hash(c, "k", hc);
    rb_debounce_hash(d, "k", hd);
    rb_debounce_hash(e, "k", he);
    rb_debounce_hash(a, "k2", hk);
    cr_assert_eq(strlen(ha), 64);
    cr_assert_str_neq(ha, hb);
    cr_assert_str_neq(ha, hc);
    cr_assert_str_neq(ha, hk);
    cr_assert_str_eq(hd, he, "no queue is the default queue");
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
}

Test(debounce, run_time_is_capped_by_max)
{
    rb_debounce_spec s = {.on = true, .key = "k", .for_ms = 1000, .max_ms = 2000};
    cr_assert_eq(rb_debounce_run_at(&s, 5000, 5000), 6000);
    cr_assert_eq(rb_debounce_run_at(&s, 6500, 5000), 7000, "capped at first + max");
    cr_assert_eq(rb_debounce_run_at(&s, 9000, 5000), 7000, "in the past: ready at once");
    s.max_ms = 0;
    cr_assert_eq(rb_debounce_run_at(&s, 9000, 5000), 10000, "no max: no cap");
}

Test(debounce, merge_takes_args_and_custom_only)
{
    json_t *stored = parse("{\"jid\":\"first123\",\"jobtype\":\"T\",\"queue\":\"q\",\"priority\":7,"
                           "\"retry\":3,\"args\":[1],\"custom\":{\"a\":1,\"debounce\":{}}}");
    json_t *push = parse("{\"jid\":\"later123\",\"jobtype\":\"T\",\"queue\":\"q\",\"priority\":2,"
                         "\"args\":[2,3],\"custom\":{\"b\":2}}");
    rb_debounce_merge(stored, push);
    cr_assert_str_eq(json_string_value(json_object_get(stored, "jid")), "first123");
    cr_assert_eq(json_integer_value(json_object_get(stored, "priority")), 7);
    cr_assert_eq(json_integer_value(json_object_get(stored, "retry")), 3);
    cr_assert_eq(json_array_size(json_object_get(stored, "args")), 2);
    cr_assert_null(json_object_get(json_object_get(stored, "custom"), "a"));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(stored, "custom"), "b")), 2);
    char *t = rb_debounce_merge_text("{\"jid\":\"x1234567\",\"args\":[],\"custom\":{}}", push);
    cr_assert(t && strstr(t, "\"args\":[2,3]") && strstr(t, "\"jid\":\"x1234567\""), "%s", t);
    free(t);
    cr_assert_null(rb_debounce_merge_text("not json", push));
    json_decref(stored);
    json_decref(push);
}

Test(debounce, only_waiting_jobs_take_a_merge)
{
    cr_assert(rb_debounce_mergeable(RB_JOB_PENDING));
    cr_assert(rb_debounce_mergeable(RB_JOB_SCHEDULED));
    cr_assert(rb_debounce_mergeable(RB_JOB_ENQUEUED));
    cr_assert(!rb_debounce_mergeable(RB_JOB_WORKING));
    cr_assert(!rb_debounce_mergeable(RB_JOB_RETRIES));
    cr_assert(!rb_debounce_mergeable(RB_JOB_DEAD));
}

Test(debounce, views)
{
    rb_debounce_alias a = {strdup("alias123"), strdup("first123"), strdup("k"), 1764000000000LL};
    json_t *v = rb_debounce_alias_json(&a);
    char *s = json_dumps(v, JSON_COMPACT);
    cr_assert_str_eq(s, "{\"jid\":\"alias123\",\"state\":\"debounced\",\"debounced_into\":"
                        "\"first123\",\"key\":\"k\",\"merged_at\":\"2025-11-24T16:00:00.000Z\"}");
    free(s);
    json_decref(v);
    rb_debounce_alias_release(&a);
    rb_debounce_view *dv = calloc(1, sizeof *dv);
    dv->key = strdup("k");
    dv->merged = 3;
    v = rb_debounce_view_json(dv);
    cr_assert_eq(json_integer_value(json_object_get(v, "merged")), 3);
    cr_assert(json_is_null(json_object_get(v, "last_alias")));
    json_decref(v);
    rb_debounce_view_free(dv);
}
