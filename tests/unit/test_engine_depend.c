/* The job dependencies' pure rules (engine/depend.h): depends_on and
 * on_dep_failure parsing, a push's check for unknown parents and cycles,
 * and a child's next state on each parent event in each mode. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/depend.h"

static json_t *job(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert_not_null(j, "%s: %s", text, e.text);
    return j;
}

/* rb_dep_parse's error for text, or "" when accepted. */
static const char *parse_err(const char *text, rb_err *err)
{
    json_t *j = job(text);
    rb_dep_spec s;
    int rc = rb_dep_parse(j, &s, err);
    rb_dep_spec_release(&s);
    json_decref(j);
    return rc ? rb_err_msg(err) : "";
}

Test(engine_depend, parse_reads_both_places_and_the_mode)
{
    json_t *j = job("{\"jid\":\"c\",\"depends_on\":[\"a\",\"b\"],"
                    "\"custom\":{\"depends_on\":[\"b\",\"x\"],\"on_dep_failure\":\"ignore\"}}");
    rb_dep_spec s;
    cr_assert_eq(rb_dep_parse(j, &s, NULL), 0);
    cr_assert_eq(s.n, 3, "union without duplicates");
    cr_assert_str_eq(s.parents[0], "b");
    cr_assert_str_eq(s.parents[1], "x");
    cr_assert_str_eq(s.parents[2], "a");
    cr_assert_eq(s.mode, RB_DEP_IGNORE);
    cr_assert(rb_dep_has(j));
    rb_dep_spec_release(&s);
    json_decref(j);

    j = job("{\"jid\":\"c\",\"custom\":{\"depends_on\":null}}");
    cr_assert_not(rb_dep_has(j));
    cr_assert_eq(rb_dep_parse(j, &s, NULL), 0);
    cr_assert_eq(s.n, 0);
    cr_assert_eq(s.mode, RB_DEP_BLOCK, "block is the default");
    rb_dep_spec_release(&s);
    json_decref(j);
    cr_assert_str_eq(rb_dep_mode_name(RB_DEP_CANCEL), "cancel");
}

Test(engine_depend, parse_refuses_bad_values)
{
    rb_err err;
    const char *arr = "depends_on must be an array of non-empty strings";
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"depends_on\":\"a\"}", &err), arr);
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"depends_on\":[\"\"]}", &err), arr);
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"custom\":{\"depends_on\":[1]}}", &err), arr);
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"depends_on\":{}}", &err), arr);
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"depends_on\":[\"c\"]}", &err),
                     "depends_on: cycle through c");
    cr_assert_str_eq(parse_err("{\"jid\":\"c\",\"depends_on\":[\"a\"],"
                               "\"custom\":{\"on_dep_failure\":\"later\"}}", &err),
                     "on_dep_failure must be \"block\", \"cancel\" or \"ignore\"");
    json_t *j = job("{\"jid\":\"c\",\"depends_on\":[]}");
    json_t *a = json_object_get(j, "depends_on");
    char p[16];
    for (int i = 0; i <= RB_DEP_MAX_PARENTS; i++) {
        snprintf(p, sizeof p, "p%d", i);
        json_array_append_new(a, json_string(p));
    }
    rb_dep_spec s;
    cr_assert_eq(rb_dep_parse(j, &s, &err), RB_EINVAL);
    cr_assert_str_eq(rb_err_msg(&err), "depends_on must name at most 1000 parents");
    cr_assert_eq(s.n, 0);
    json_array_remove(a, 0);
    cr_assert_eq(rb_dep_parse(j, &s, &err), 0, "exactly 1000 is fine");
    cr_assert_eq(s.n, RB_DEP_MAX_PARENTS);
    rb_dep_spec_release(&s);
    json_decref(j);
}

/* The lookup of the check: "live-*" jobs exist, "done-*" succeeded,
 * "dead-*" are in the dead set. */
static rb_dep_known lookup(void *arg, const char *jid, char **into)
{
    (*(int *)arg)++;
    if (!strncmp(jid, "alias-", 6)) {
        *into = strdup("kept-1");
        return RB_DEP_DEBOUNCED;
    }
    if (!strncmp(jid, "live-", 5))
        return RB_DEP_LIVE;
    if (!strncmp(jid, "dead-", 5))
        return RB_DEP_DEAD;
    if (!strncmp(jid, "done-", 5))
        return RB_DEP_SUCCEEDED;
    return RB_DEP_UNKNOWN;
}

/* rb_dep_check_push on a JSON array text: its error or "". */
static const char *check(const char *arr, rb_err *err)
{
    json_t *a = job(arr);
    size_t n = json_array_size(a);
    json_t **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(a, i);
    int calls = 0;
    int rc = rb_dep_check_push(v, n, lookup, &calls, err);
    free(v);
    json_decref(a);
    return rc ? rb_err_msg(err) : "";
}

Test(engine_depend, check_push_finds_unknown_parents_and_cycles)
{
    rb_err err;
    cr_assert_str_eq(check("[{\"jid\":\"a\"},{\"jid\":\"b\",\"depends_on\":[\"a\",\"live-1\","
                           "\"done-2\"]},{\"jid\":\"d\",\"depends_on\":[\"b\",\"a\"]}]", &err), "");
    cr_assert_str_eq(check("[{\"jid\":\"b\",\"depends_on\":[\"gone\"]}]", &err),
                     "depends_on: unknown job gone");
    /* a dead parent is named as dead, with what to do (issue 25 item 11) */
    cr_assert_str_eq(check("[{\"jid\":\"b\",\"depends_on\":[\"live-1\",\"dead-1\"]}]", &err),
                     "depends_on: job dead-1 is dead, and a dead job is not accepted as a "
                     "parent: retry it first (rebound retry dead-1, or MUTATE requeue), or "
                     "push without it");
    /* a debounced push's jid names the job it was merged into */
    cr_assert_str_eq(check("[{\"jid\":\"b\",\"depends_on\":[\"live-1\",\"alias-1\"]}]", &err),
                     "depends_on: job alias-1 was debounced into kept-1; name kept-1");
    cr_assert_str_eq(check("[{\"jid\":\"a\",\"depends_on\":[\"b\"]},"
                           "{\"jid\":\"b\",\"depends_on\":[\"a\"]}]", &err),
                     "depends_on: cycle through a");
    /* the job named is on the cycle, not merely downstream of it */
    const char *m = check("[{\"jid\":\"z\",\"depends_on\":[\"y\"]},"
                          "{\"jid\":\"y\",\"depends_on\":[\"x\",\"live-1\"]},"
                          "{\"jid\":\"x\",\"depends_on\":[\"w\"]},"
                          "{\"jid\":\"w\",\"depends_on\":[\"x\"]}]", &err);
    cr_assert(!strcmp(m, "depends_on: cycle through x") ||
                  !strcmp(m, "depends_on: cycle through w"),
              "named a job off the cycle: %s", m);
    cr_assert_str_eq(check("[{\"jid\":\"s\",\"depends_on\":[\"s\"]}]", &err),
                     "depends_on: cycle through s");
    cr_assert_str_eq(check("[{\"jid\":\"s\",\"depends_on\":5}]", &err),
                     "depends_on must be an array of non-empty strings");
    /* no dependencies: nothing looked up */
    json_t *a = job("{\"jid\":\"plain\"}");
    int calls = 0;
    cr_assert_eq(rb_dep_check_push(&a, 1, lookup, &calls, &err), 0);
    cr_assert_eq(calls, 0);
    json_decref(a);
}

Test(engine_depend, block_mode_blocks_and_unblocks)
{
    rb_dep_counts c = {2, 0};
    bool used;
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_DIED, &c, &used), RB_DEP_NEXT_BLOCK);
    cr_assert_not(used);
    cr_assert_eq(c.dead, 1);
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_SUCCEEDED, &c, &used),
                 RB_DEP_NEXT_BLOCK, "the other parent's success does not unblock it");
    cr_assert(used);
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_REQUEUED, &c, &used),
                 RB_DEP_NEXT_WAIT);
    cr_assert_not(used);
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_SUCCEEDED, &c, &used),
                 RB_DEP_NEXT_RELEASE);
    cr_assert_eq(c.remaining, 0);
    rb_dep_counts d = {1, 1};
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_DISCARDED, &d, &used),
                 RB_DEP_NEXT_DIE);
    cr_assert(used);
}

/* A parent that died when its lease ran out on its last attempt keeps the
 * expired flag, and a late ACK completes it: with every parent left dead,
 * the one that succeeded was one of them, so the child is not blocked by
 * a count above its parents (dead <= remaining). */
Test(engine_depend, a_dead_parents_late_ack_keeps_dead_within_remaining)
{
    rb_dep_counts c = {1, 1};
    bool used;
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_SUCCEEDED, &c, &used),
                 RB_DEP_NEXT_RELEASE);
    cr_assert_eq(c.dead, 0);
    c = (rb_dep_counts){3, 3};
    cr_assert_eq(rb_dep_on_parent(RB_DEP_BLOCK, RB_DEP_PARENT_SUCCEEDED, &c, &used),
                 RB_DEP_NEXT_BLOCK);
    cr_assert_eq(c.remaining, 2);
    cr_assert_eq(c.dead, 2);
}

Test(engine_depend, cancel_and_ignore_modes)
{
    rb_dep_counts c = {2, 0};
    bool used;
    cr_assert_eq(rb_dep_on_parent(RB_DEP_CANCEL, RB_DEP_PARENT_DIED, &c, &used), RB_DEP_NEXT_DIE);
    cr_assert(used);
    c = (rb_dep_counts){2, 0};
    cr_assert_eq(rb_dep_on_parent(RB_DEP_IGNORE, RB_DEP_PARENT_DIED, &c, &used), RB_DEP_NEXT_WAIT);
    cr_assert(used, "the edge is used up: a later requeue and ACK do not count twice");
    cr_assert_eq(rb_dep_on_parent(RB_DEP_IGNORE, RB_DEP_PARENT_DISCARDED, &c, &used),
                 RB_DEP_NEXT_RELEASE);
    c = (rb_dep_counts){1, 0};
    cr_assert_eq(rb_dep_on_parent(RB_DEP_CANCEL, RB_DEP_PARENT_REQUEUED, &c, &used),
                 RB_DEP_NEXT_WAIT, "a requeue with nothing dead changes nothing");
    cr_assert_eq(c.remaining, 1);
    cr_assert_eq(rb_dep_state_of(&(rb_dep_counts){0, 0}), RB_DEP_NEXT_RELEASE);
    cr_assert_eq(rb_dep_state_of(&(rb_dep_counts){3, 1}), RB_DEP_NEXT_BLOCK);
}
