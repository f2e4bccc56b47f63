/* The pure batch rules (engine/batch.h): BATCH NEW's checks, the events and
 * the actions they call for, the child/parent rules, STATUS's JSON and the
 * stored form. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/batch.h"

#define NOW 1764000000000LL

static json_t *parse(const char *s)
{
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "bad test JSON %s", s);
    return o;
}

/* A batch made from def text (which must be valid). */
static rb_batch *make(const char *bid, const char *def_text)
{
    json_t *o = parse(def_text);
    rb_batch_def def;
    rb_err err = {0};
    cr_assert_eq(rb_batch_parse_new(o, &def, &err), 0, "%s", rb_err_msg(&err));
    rb_batch *b = rb_batch_new(bid, &def, NOW * 1000 + 123); /* created 123 µs past NOW */
    json_decref(o);
    return b;
}

#define BOTH "{\"success\":{\"jid\":\"s1234567\",\"jobtype\":\"S\",\"args\":[]}," \
             "\"complete\":{\"jid\":\"c1234567\",\"jobtype\":\"C\",\"args\":[]}}"
#define SUCC "{\"success\":{\"jid\":\"s1234567\",\"jobtype\":\"S\",\"args\":[]}}"
#define COMP "{\"complete\":{\"jid\":\"c1234567\",\"jobtype\":\"C\",\"args\":[]}}"

Test(batch_parse, accepts_the_clients_forms)
{
    const char *ok[] = {
        BOTH, SUCC, COMP,
        "{\"success\":{\"jid\":\"x\"},\"bid\":\"\",\"description\":\"d\",\"parent_bid\":null}",
        "{\"complete\":{},\"death\":{},\"description\":null}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        json_t *o = parse(ok[i]);
        rb_batch_def def;
        rb_err err = {0};
        cr_assert_eq(rb_batch_parse_new(o, &def, &err), 0, "%s: %s", ok[i], rb_err_msg(&err));
        json_decref(o);
    }
}

Test(batch_parse, refuses_bad_definitions)
{
    struct {
        const char *text, *msg;
    } bad[] = {
        {"{}", "a success or complete callback is required"},
        {"{\"death\":{}}", "a success or complete callback is required"},
        {"{\"success\":null}", "a success or complete callback is required"},
        {"{\"success\":\"Foo\"}", "success must be a job object"},
        {"{\"complete\":[1]}", "complete must be a job object"},
        {"{\"success\":{},\"death\":3}", "death must be a job object"},
        {"{\"success\":{},\"bid\":\"b-1\"}", "bid must be empty"},
        {"{\"success\":{},\"bid\":3}", "bid must be empty"},
        {"{\"success\":{},\"description\":[]}", "description must be a string"},
        {"{\"success\":{},\"parent_bid\":\"\"}", "parent_bid must be a non-empty string"},
        {"{\"success\":{},\"parent_bid\":1}", "parent_bid must be a non-empty string"},
        {"[]", "argument must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *o = parse(bad[i].text);
        rb_batch_def def;
        rb_err err = {0};
        cr_assert_eq(rb_batch_parse_new(o, &def, &err), RB_EINVAL, "%s accepted", bad[i].text);
        cr_assert(strstr(rb_err_msg(&err), bad[i].msg), "%s: '%s'", bad[i].text,
                  rb_err_msg(&err));
        json_decref(o);
    }
    char *big = malloc(RB_BATCH_DESC_MAX + 64);
    memset(big, 'a', RB_BATCH_DESC_MAX + 1);
    big[RB_BATCH_DESC_MAX + 1] = '\0';
    json_t *o = json_pack("{s:s, s:{}}", "description", big, "success");
    rb_batch_def def;
    rb_err err = {0};
    cr_assert_eq(rb_batch_parse_new(o, &def, &err), RB_EINVAL);
    json_decref(o);
    free(big);
}

Test(batch_new, callbacks_carry_bid_and_pbid_never_custom_bid)
{
    rb_batch *b = make("b-child", "{\"parent_bid\":\"b-parent\",\"success\":{\"jid\":\"s1234567\","
                                  "\"jobtype\":\"S\",\"args\":[],\"custom\":{\"bid\":\"b-x\","
                                  "\"k\":1}}}");
    json_t *cb = parse(b->cb[RB_BATCH_SUCCESS]);
    json_t *custom = json_object_get(cb, "custom");
    cr_assert_str_eq(json_string_value(json_object_get(custom, "_bid")), "b-child");
    cr_assert_str_eq(json_string_value(json_object_get(custom, "_pbid")), "b-parent");
    cr_assert_null(json_object_get(custom, "bid"));
    cr_assert_eq(json_integer_value(json_object_get(custom, "k")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(cb, "queue")), "default");
    cr_assert_null(b->cb[RB_BATCH_COMPLETE]);
    json_decref(cb);
    rb_batch_free(b);
}

Test(batch_rules, nothing_fires_before_commit_and_empty_fires_at_commit)
{
    rb_batch *b = make("b-1", BOTH);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_NONE, NOW), 0u);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW), (unsigned)RB_BATCH_ENQUEUE_COMPLETE);
    cr_assert_eq(b->st[RB_BATCH_COMPLETE], RB_BATCH_ST_ENQUEUED);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW), 0u, "COMMIT twice fires nothing");
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_CB_COMPLETE_ACKED, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_SUCCESS);
    cr_assert_eq(b->finished_ms, 0);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_CB_SUCCESS_ACKED, NOW + 5), 0u);
    cr_assert_eq(b->st[RB_BATCH_SUCCESS], RB_BATCH_ST_DONE);
    cr_assert_eq(b->finished_ms, NOW + 5);
    rb_batch_free(b);
}

Test(batch_rules, members_acked_before_commit_fire_at_commit)
{
    rb_batch *b = make("b-1", SUCC);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW), 0u);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED, NOW), 0u);
    cr_assert_eq(b->pending, 0);
    cr_assert_eq(b->st[RB_BATCH_SUCCESS], RB_BATCH_ST_NONE);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW), (unsigned)RB_BATCH_ENQUEUE_SUCCESS);
    rb_batch_free(b);
}

Test(batch_rules, fail_then_ack)
{
    rb_batch *b = make("b-1", BOTH);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED, NOW), 0u);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_FIRST_FAIL, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_COMPLETE);
    cr_assert_eq(b->failed, 1);
    cr_assert_eq(b->pending, 1);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_CB_COMPLETE_ACKED, NOW), 0u,
                 "success waits for every member's ACK");
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED_AFTER_FAIL, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_SUCCESS);
    cr_assert_eq(b->failed, 0);
    cr_assert_eq(b->pending, 0);
    cr_assert_eq(b->executed, 2);
    rb_batch_free(b);
}

Test(batch_rules, success_waits_for_the_complete_callback)
{
    rb_batch *b = make("b-1", BOTH);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED, NOW), (unsigned)RB_BATCH_ENQUEUE_COMPLETE);
    cr_assert_eq(b->st[RB_BATCH_SUCCESS], RB_BATCH_ST_NONE);
    /* the complete callback's own FAIL is not an event: it stays "1" */
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_CB_COMPLETE_ACKED, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_SUCCESS);
    rb_batch_free(b);
}

Test(batch_rules, death_fires_once_and_success_never)
{
    rb_batch *b = make("b-1", "{\"success\":{},\"complete\":{},\"death\":{}}");
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    rb_batch_apply(b, RB_BATCH_EV_FIRST_FAIL, NOW);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_DIED, NOW), (unsigned)RB_BATCH_ENQUEUE_DEATH);
    rb_batch_apply(b, RB_BATCH_EV_FIRST_FAIL, NOW);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_DIED, NOW), 0u, "death fires once");
    cr_assert_eq(b->st[RB_BATCH_COMPLETE], RB_BATCH_ST_ENQUEUED);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_CB_COMPLETE_ACKED, NOW), 0u);
    cr_assert_eq(b->st[RB_BATCH_SUCCESS], RB_BATCH_ST_NONE);
    cr_assert_not(rb_batch_finished(b), "the death callback is not ACKed yet");
    rb_batch_apply(b, RB_BATCH_EV_CB_DEATH_ACKED, NOW);
    cr_assert(rb_batch_finished(b));
    rb_batch_free(b);
}

Test(batch_rules, a_child_blocks_its_parent_until_its_callbacks_are_acked)
{
    rb_batch *p = make("b-p", BOTH);
    rb_batch *c = make("b-c", "{\"parent_bid\":\"b-p\",\"success\":{}}");
    rb_batch_apply(p, RB_BATCH_EV_CHILD_ADDED, NOW);
    rb_batch_apply(p, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(c, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(p, RB_BATCH_EV_COMMIT, NOW);
    cr_assert_eq(rb_batch_apply(p, RB_BATCH_EV_ACKED, NOW), 0u, "the child is not complete");
    rb_batch_apply(c, RB_BATCH_EV_COMMIT, NOW);
    /* a child without a complete callback is complete when its condition holds */
    unsigned act = rb_batch_apply(c, RB_BATCH_EV_ACKED, NOW);
    cr_assert_eq(act, (unsigned)(RB_BATCH_TELL_COMPLETE | RB_BATCH_ENQUEUE_SUCCESS));
    cr_assert_eq(rb_batch_apply(p, RB_BATCH_EV_CHILD_COMPLETE, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_COMPLETE);
    cr_assert_eq(rb_batch_apply(p, RB_BATCH_EV_CB_COMPLETE_ACKED, NOW), 0u,
                 "success waits for the child's success callback");
    cr_assert_eq(rb_batch_apply(c, RB_BATCH_EV_CB_SUCCESS_ACKED, NOW),
                 (unsigned)RB_BATCH_TELL_SUCCESS);
    cr_assert_eq(rb_batch_apply(c, RB_BATCH_EV_NONE, NOW), 0u, "the parent is told once");
    cr_assert_eq(rb_batch_apply(p, RB_BATCH_EV_CHILD_SUCCESS, NOW),
                 (unsigned)RB_BATCH_ENQUEUE_SUCCESS);
    rb_batch_free(p);
    rb_batch_free(c);
}

Test(batch_rules, reopening_never_refires)
{
    rb_batch *b = make("b-1", COMP);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    cr_assert_eq(b->st[RB_BATCH_COMPLETE], RB_BATCH_ST_ENQUEUED);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW), 0u);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED, NOW), 0u);
    cr_assert_eq(rb_batch_apply(b, RB_BATCH_EV_ACKED, NOW), 0u);
    cr_assert_eq(b->st[RB_BATCH_COMPLETE], RB_BATCH_ST_ENQUEUED);
    cr_assert_eq(b->total, 2);
    rb_batch_free(b);
}

Test(batch_status, nine_keys_and_string_states)
{
    rb_batch *b = make("b-1", SUCC);
    json_t *v = rb_batch_status_json(b);
    cr_assert_eq(json_object_size(v), 9);
    cr_assert(json_is_null(json_object_get(v, "parent_bid")));
    cr_assert(json_is_null(json_object_get(v, "description")));
    /* microseconds, as Faktory's fractions (issue 25) */
    cr_assert_str_eq(json_string_value(json_object_get(v, "created_at")),
                     "2025-11-24T16:00:00.000123Z");
    cr_assert_str_eq(json_string_value(json_object_get(v, "complete_st")), "");
    cr_assert_str_eq(json_string_value(json_object_get(v, "success_st")), "");
    json_decref(v);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    v = rb_batch_status_json(b);
    cr_assert_str_eq(json_string_value(json_object_get(v, "success_st")), "1");
    json_decref(v);
    rb_batch_free(b);
}

Test(batch_store, dump_and_load_round_trip)
{
    rb_batch *b = make("b-1", "{\"parent_bid\":\"b-0\",\"description\":\"d\",\"success\":{},"
                              "\"complete\":{},\"death\":{}}");
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_CHILD_ADDED, NOW);
    rb_batch_apply(b, RB_BATCH_EV_COMMIT, NOW);
    rb_batch_apply(b, RB_BATCH_EV_FIRST_FAIL, NOW);
    rb_batch_apply(b, RB_BATCH_EV_DIED, NOW);
    b->cb_jid[RB_BATCH_DEATH] = strdup("death-jid");
    char *text = rb_batch_dump(b);
    rb_batch *c = rb_batch_load(text);
    cr_assert_not_null(c);
    char *again = rb_batch_dump(c);
    cr_assert_str_eq(text, again);
    cr_assert_str_eq(c->parent_bid, "b-0");
    cr_assert_eq(c->total, 2);
    cr_assert_eq(c->children, 1);
    cr_assert_eq(c->st[RB_BATCH_DEATH], RB_BATCH_ST_ENQUEUED);
    cr_assert_eq(rb_batch_callback_of(c, "death-jid"), RB_BATCH_DEATH);
    cr_assert_eq(rb_batch_callback_of(c, "other"), -1);
    cr_assert_eq(c->created_us, NOW * 1000 + 123);
    /* a batch stored before created_us: its milliseconds */
    json_t *old = json_loads(text, 0, NULL);
    json_object_del(old, "created_us");
    char *old_text = json_dumps(old, JSON_COMPACT);
    rb_batch *d = rb_batch_load(old_text);
    cr_assert_eq(d->created_us, NOW * 1000);
    rb_batch_free(d);
    free(old_text);
    json_decref(old);
    cr_assert_null(rb_batch_load("{\"v\":2}"));
    cr_assert_null(rb_batch_load("not json"));
    free(text);
    free(again);
    rb_batch_free(b);
    rb_batch_free(c);
}

Test(batch_member, custom_bid)
{
    const char *bid;
    rb_err err = {0};
    json_t *o = parse("{\"custom\":{\"bid\":\"b-1\"}}");
    cr_assert_eq(rb_batch_member_bid(o, &bid, &err), 0);
    cr_assert_str_eq(bid, "b-1");
    json_decref(o);
    o = parse("{\"custom\":{\"bid\":\"\"}}");
    cr_assert_eq(rb_batch_member_bid(o, &bid, &err), 0);
    cr_assert_null(bid);
    json_decref(o);
    o = parse("{\"custom\":{\"bid\":1}}");
    cr_assert_eq(rb_batch_member_bid(o, &bid, &err), RB_EINVAL);
    json_decref(o);
    o = parse("{\"args\":[]}");
    cr_assert_eq(rb_batch_member_bid(o, &bid, &err), 0);
    cr_assert_null(bid);
    json_decref(o);
}
