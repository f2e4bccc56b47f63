/* Queue throttles in distributed mode, for now: a server configured with
 * [throttles] refuses to start, in one place (rb_eng_throttle_check), with
 * a clear message, until the PostgreSQL backend applies them under the
 * queue row's lock (issue 16; the brief's §4.3). When it does, this file
 * becomes `#define RBH_PG 1` and `#include "test_server_throttle.c"`. */
#define RBH_PG 1
#include <criterion/criterion.h>

#include "common_helpers.h"

TestSuite(pg_throttle, .timeout = 60);

Test(pg_throttle, a_server_with_throttles_refuses_to_start)
{
    (void)rbh_suite_start;
    (void)rbh_suite_stop;
    (void)rbh_suite_finish;
    cr_assert_neq(rbh_start(&S, "[throttles.t]\nconcurrency = 2\n", NULL), 0,
                  "the server started with [throttles] in distributed mode");
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "grep -q 'throttles are not supported in distributed mode yet' '%s'", S.log);
    cr_assert_eq(system(cmd), 0, "no refusal in the log %s", S.log);
    S.pid = 0;
    rbh_stop(&S);
    /* without throttles the same server starts */
    cr_assert_eq(rbh_start(&S, "[server]\n", NULL), 0, "see %s", S.log);
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pgth-0001\",\"jobtype\":\"T\",\"args\":[]}"));
    rbh_close(c);
    cr_assert_eq(rbh_stop(&S), 0);
}
