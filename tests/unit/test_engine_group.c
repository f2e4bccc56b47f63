/* Flow control's rules (engine/group.h): group names and custom.group,
 * limits' keys and GROUP SET's JSON with every refusal, resolution field by
 * field (override > [groups.QUEUE] > [groups."*"], 0 lifts), and a pause's
 * UNTIL. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/group.h"

#define NOW 1764000000000LL /* 2025-11-24T16:00:00Z */

static json_t *parse(const char *s)
{
    json_t *o = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    cr_assert_not_null(o, "bad test JSON %s", s);
    return o;
}

/* rb_group_of_job of a job with custom {custom}; rc, *name copied into name. */
static int group_of(const char *custom, char *name, char *msg)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"jid\":\"j1\",\"jobtype\":\"T\",\"args\":[],\"custom\":%s}", custom);
    json_t *o = parse(text);
    rb_err err = {0};
    const char *g = (const char *)1;
    int rc = rb_group_of_job(o, &g, &err);
    strcpy(name, g ? g : "(none)");
    strcpy(msg, rc ? rb_err_msg(&err) : "");
    json_decref(o);
    return rc;
}

Test(engine_group, names)
{
    cr_assert(rb_group_name_valid("acme", 4));
    cr_assert(rb_group_name_valid("tenant:42/eu-west", 17));
    cr_assert_not(rb_group_name_valid("", 0));
    cr_assert_not(rb_group_name_valid("a b", 3));
    cr_assert_not(rb_group_name_valid("a\tb", 3));
    cr_assert_not(rb_group_name_valid("a\x7f", 2));
    char longname[202];
    memset(longname, 'x', sizeof longname);
    cr_assert(rb_group_name_valid(longname, 200));
    cr_assert_not(rb_group_name_valid(longname, 201));
    /* bytes above 0x7f are fine (UTF-8 names) */
    cr_assert(rb_group_name_valid("caf\xc3\xa9", 5));
}

Test(engine_group, custom_group)
{
    char name[300], msg[600];
    cr_assert_eq(group_of("{\"group\":\"acme\"}", name, msg), 0);
    cr_assert_str_eq(name, "acme");
    cr_assert_eq(group_of("{}", name, msg), 0);
    cr_assert_str_eq(name, "(none)");
    cr_assert_eq(group_of("{\"group\":null}", name, msg), 0);
    cr_assert_str_eq(name, "(none)");
    cr_assert_eq(group_of("null", name, msg), 0);
    cr_assert_str_eq(name, "(none)");

    cr_assert_eq(group_of("{\"group\":42}", name, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "custom.group must be a string (a tenant, an account), got number");
    cr_assert_eq(group_of("{\"group\":[\"a\"]}", name, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "custom.group must be a string (a tenant, an account), got array");
    cr_assert_eq(group_of("{\"group\":\"a b\"}", name, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "custom.group must be 1 to 200 bytes without spaces or control "
                          "characters, got 'a b'");
    cr_assert_eq(group_of("{\"group\":\"\"}", name, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "custom.group must be 1 to 200 bytes without spaces or control "
                          "characters, got ''");
    cr_assert_eq(group_of("{\"group\":\"a\\nb\"}", name, msg), RB_EINVAL);
    cr_assert(strstr(msg, "got 'a\\x0ab'"), "%s", msg);
    cr_assert_eq(group_of("{\"group\":\"a\\u0000b\"}", name, msg), RB_EINVAL);
    char big[400] = "{\"group\":\"";
    memset(big + 10, 'y', 201);
    strcpy(big + 211, "\"}");
    cr_assert_eq(group_of(big, name, msg), RB_EINVAL);
    cr_assert(strstr(msg, "...' (too long)"), "%s", msg);
}

/* rb_flow_override_parse of text; rc, message in msg. */
static int over(const char *text, rb_flow_override *o, char *msg)
{
    json_t *v = parse(text);
    rb_err err = {0};
    int rc = rb_flow_override_parse(v, o, &err);
    strcpy(msg, rc ? rb_err_msg(&err) : "");
    json_decref(v);
    return rc;
}

Test(engine_group, override_json)
{
    rb_flow_override o;
    char msg[600];
    cr_assert_eq(over("{}", &o, msg), 0);
    cr_assert_eq(o.set, 0);
    cr_assert_eq(over("{\"concurrency\":2,\"rate\":100,\"period\":\"1m\",\"burst\":10}", &o, msg), 0);
    cr_assert_eq(o.set, 15);
    cr_assert_eq(o.v.concurrency, 2);
    cr_assert_eq(o.v.rate, 100);
    cr_assert_eq(o.v.period_ms, 60000);
    cr_assert_eq(o.v.burst, 10);
    json_t *back = rb_flow_override_json(&o);
    char *s = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
    cr_assert_str_eq(s, "{\"burst\":10,\"concurrency\":2,\"period\":60,\"rate\":100}");
    free(s);
    json_decref(back);
    cr_assert_eq(over("{\"rate\":5,\"period\":30}", &o, msg), 0);
    cr_assert_eq(o.v.period_ms, 30000);
    cr_assert_eq(over("{\"rate\":0}", &o, msg), 0, "0 lifts a limit and needs no period");
    cr_assert_eq(over("{\"concurrency\":0}", &o, msg), 0);
    cr_assert_eq(o.set, 1);

    cr_assert_eq(over("[1]", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "limits must be a JSON object, got '[1]'");
    cr_assert_eq(over("{\"concurrency\":-1}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "concurrency must be an integer from 0 to 1000000 (0: no limit), got -1");
    cr_assert_eq(over("{\"concurrency\":1000001}", &o, msg), RB_EINVAL);
    cr_assert_eq(over("{\"concurrency\":\"2\"}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "concurrency must be an integer from 0 to 1000000 (0: no limit), got '2'");
    cr_assert_eq(over("{\"rate\":1.5,\"period\":1}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "rate must be an integer from 0 to 1000000 (0: no limit), got 1.5");
    cr_assert_eq(over("{\"burst\":-3}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "burst must be an integer from 0 to 1000000, got -3");
    cr_assert_eq(over("{\"rate\":10}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "rate needs a period (\"1s\" to \"7d\")");
    cr_assert_eq(over("{\"rate\":10,\"period\":\"500ms\"}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "period must be a duration from \"1s\" to \"7d\" (or seconds), got '500ms'");
    cr_assert_eq(over("{\"rate\":10,\"period\":\"8d\"}", &o, msg), RB_EINVAL);
    cr_assert_eq(over("{\"rate\":10,\"period\":true}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "period must be a duration from \"1s\" to \"7d\" (or seconds), got boolean");
    cr_assert_eq(over("{\"concurency\":2}", &o, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "unknown key 'concurency' (did you mean 'concurrency'?)");
}

static rb_flow_override make(int64_t conc, int64_t rate, int64_t period_ms, int64_t burst,
                             unsigned set)
{
    rb_flow_override o = {.set = set, .v = {conc, rate, period_ms, burst}};
    return o;
}

Test(engine_group, resolution_field_by_field)
{
    enum { C = 1, R = 2, P = 4, B = 8 };
    rb_flow_override deflt = make(5, 0, 0, 0, C);
    rb_flow_override queue = make(2, 100, 60000, 10, C | R | P | B);
    rb_flow_override o = make(0, 0, 0, 3, B);
    rb_flow_limits l;
    rb_flow_from from[RB_FLOW_NFIELDS];

    rb_flow_limits_resolve(NULL, NULL, NULL, &l, from);
    cr_assert(l.concurrency == 0 && l.rate == 0 && l.period_ms == 0 && l.burst == 0);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "none");

    rb_flow_limits_resolve(NULL, NULL, &deflt, &l, from);
    cr_assert_eq(l.concurrency, 5);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "default");

    rb_flow_limits_resolve(NULL, &queue, &deflt, &l, from);
    cr_assert(l.concurrency == 2 && l.rate == 100 && l.period_ms == 60000 && l.burst == 10);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_RATE]), "queue");

    rb_flow_limits_resolve(&o, &queue, &deflt, &l, from);
    cr_assert(l.concurrency == 2 && l.burst == 3);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_BURST]), "override");
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "queue");

    /* 0 in an override lifts an inherited limit; no rate: no period or burst */
    o = make(0, 0, 0, 0, C | R);
    rb_flow_limits_resolve(&o, &queue, &deflt, &l, from);
    cr_assert(l.concurrency == 0 && l.rate == 0 && l.period_ms == 0 && l.burst == 0);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "override");
}

Test(engine_group, hold_names)
{
    cr_assert_null(rb_group_hold_name(RB_HOLD_NONE));
    cr_assert_str_eq(rb_group_hold_name(RB_HOLD_CONCURRENCY), "concurrency");
    cr_assert_str_eq(rb_group_hold_name(RB_HOLD_RATE), "rate");
    cr_assert_str_eq(rb_group_hold_name(RB_HOLD_PAUSED), "paused");
}

static int until(const char *s, int64_t *ms, char *msg)
{
    rb_err err = {0};
    int rc = rb_group_until_parse(s, NOW, ms, &err);
    strcpy(msg, rc ? rb_err_msg(&err) : "");
    return rc;
}

Test(engine_group, until)
{
    int64_t ms;
    char msg[600];
    cr_assert_eq(until("30", &ms, msg), 0);
    cr_assert_eq(ms, NOW + 30000);
    cr_assert_eq(until("1.5", &ms, msg), 0);
    cr_assert_eq(ms, NOW + 1500);
    cr_assert_eq(until("2025-11-24T16:00:10Z", &ms, msg), 0);
    cr_assert_eq(ms, NOW + 10000);
    cr_assert_eq(until("31536000", &ms, msg), 0);

    cr_assert_eq(until("soon", &ms, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "until must be an RFC 3339 time or seconds from now, got 'soon'");
    cr_assert_eq(until("0", &ms, msg), RB_EINVAL);
    cr_assert_eq(until("-5", &ms, msg), RB_EINVAL);
    cr_assert_eq(until("", &ms, msg), RB_EINVAL);
    cr_assert_eq(until("5s", &ms, msg), RB_EINVAL);
    cr_assert_eq(until("31536001", &ms, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "until is more than a year away ('31536001' seconds)");
    cr_assert_eq(until("2020-01-01T00:00:00Z", &ms, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "until '2020-01-01T00:00:00Z' is in the past");
    cr_assert_eq(until("2099-01-01T00:00:00Z", &ms, msg), RB_EINVAL);
    cr_assert_str_eq(msg, "until is more than a year away ('2099-01-01T00:00:00Z')");
}
