/* Unique and expiring jobs in distributed mode, for now: a PUSH naming
 * custom.unique_for / unique_until / expires_at / expires_in is refused in
 * one place (rb_eng_unique_check) with a clear error, and nothing is
 * stored, until the PostgreSQL backend keeps unique locks and expiries
 * (issue 16). When it does, this file becomes `#define RBH_PG 1` and
 * `#include "test_server_unique.c"`. */
#define RBH_PG 1
#include <criterion/criterion.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(pg_unique, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define NO_UNIQUE "-ERR unique jobs are not supported in distributed mode yet"
#define NO_EXPIRY "-ERR expiring jobs are not supported in distributed mode yet"

RBH_SERVER_TEST(pg_unique, unique_and_expiring_pushes_are_refused_and_change_nothing)
{
    rbh_conn *c = C;
    cr_assert(rbh_expect(c, NO_UNIQUE, "PUSH {\"jid\":\"pgu-00001\",\"jobtype\":\"U\",\"args\":[],"
                                       "\"custom\":{\"unique_for\":60}}"));
    cr_assert(rbh_expect(c, NO_UNIQUE, "PUSH {\"jid\":\"pgu-00002\",\"jobtype\":\"U\",\"args\":[],"
                                       "\"custom\":{\"unique_for\":1.5,\"unique_until\":\"start\"}}"));
    cr_assert(rbh_expect(c, NO_EXPIRY, "PUSH {\"jid\":\"pgu-00003\",\"jobtype\":\"U\",\"args\":[],"
                                       "\"custom\":{\"expires_at\":\"2099-01-01T00:00:00Z\"}}"));
    cr_assert(rbh_expect(c, NO_EXPIRY, "PUSH {\"jid\":\"pgu-00004\",\"jobtype\":\"U\",\"args\":[],"
                                       "\"custom\":{\"expires_in\":60}}"));
    /* a bad value still reads as the bad value */
    cr_assert(rbh_expect(c, "-ERR job pgu-00005: custom.unique_for must be a number of seconds",
                         "PUSH {\"jid\":\"pgu-00005\",\"jobtype\":\"U\",\"args\":[],"
                         "\"custom\":{\"unique_for\":\"60\"}}"));
    /* in PUSHB: the element's error, the others pushed */
    char *r = rbh_cmd(c, "PUSHB [{\"jid\":\"pgu-00006\",\"jobtype\":\"U\",\"args\":[],"
                         "\"custom\":{\"unique_for\":60}},"
                         "{\"jid\":\"pgu-00007\",\"jobtype\":\"U\",\"args\":[]}]");
    cr_assert_str_eq(r, "{\"pgu-00006\":\"unique jobs are not supported in distributed mode yet\"}");
    free(r);
    for (int i = 1; i <= 6; i++)
        cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"pgu-0000%d\"}", i));
    /* unique_for 0 asks for no lock: an ordinary job */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pgu-00008\",\"jobtype\":\"U\",\"args\":[],"
                                   "\"custom\":{\"unique_for\":0}}"));
    cr_assert_eq(rbh_info_int(c, "faktory.total_enqueued"), 2);
}
