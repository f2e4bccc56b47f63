/* Progress tracking in distributed mode, for now: TRACK SET and TRACK GET
 * are refused in one place (rb_eng_track_check) with a clear error, and
 * nothing is stored, until the PostgreSQL backend keeps progress records
 * (issue 16). When it does, this file becomes `#define RBH_PG 1` and
 * `#include "test_server_track.c"`. */
#define RBH_PG 1
#include <criterion/criterion.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(pg_track, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define NO_TRACK "-ERR tracking is not supported in distributed mode yet"

RBH_SERVER_TEST(pg_track, track_set_and_get_are_refused_and_change_nothing)
{
    rbh_conn *c = C;
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pgt-00001\",\"jobtype\":\"T\",\"args\":[],"
                                   "\"custom\":{\"track\":1}}"));
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK SET {\"jid\":\"pgt-00001\",\"percent\":10}"));
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK GET pgt-00001"));
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK GET never-pushed"));
    /* refused before the argument is read: one answer for every form */
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK SET nope"));
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK X"));
    /* the tracked job is an ordinary job, untouched */
    json_t *j = rbh_json(rbh_cmd(c, "FETCH default"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "pgt-00001");
    json_decref(j);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"pgt-00001\"}"));
    cr_assert(rbh_expect(c, NO_TRACK, "TRACK GET pgt-00001"));
}
