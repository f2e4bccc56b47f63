/* Batches in distributed mode, for now: refused in one place
 * (rb_eng_batch_check) with a clear error, and nothing stored, until the
 * PostgreSQL backend keeps batches (issue 15). When it does, this file
 * becomes `#define RBH_PG 1` and `#include "test_server_batch.c"`, as
 * test_pg_server_deps.c is for test_server_deps.c. */
#define RBH_PG 1
#include <criterion/criterion.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(pg_batch, .init = start, .fini = rbh_suite_stop, .timeout = 60);

#define REFUSAL "-ERR batches are not supported in distributed mode yet"

RBH_SERVER_TEST(pg_batch, batch_commands_and_members_are_refused_and_change_nothing)
{
    rbh_conn *c = C;
    cr_assert(rbh_expect(c, REFUSAL,
                         "BATCH NEW {\"success\":{\"jid\":\"cb-000001\",\"jobtype\":\"cb\",\"args\":[]}}"));
    cr_assert(rbh_expect(c, REFUSAL, "BATCH STATUS b-0000000000000"));
    cr_assert(rbh_expect(c, "-ERR job member-0001: batches are not supported in distributed mode yet",
                         "PUSH {\"jid\":\"member-0001\",\"jobtype\":\"m\",\"args\":[],"
                         "\"custom\":{\"bid\":\"b-0000000000000\"}}"));
    cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"member-0001\"}"));
    cr_assert_eq(rbh_info_int(c, "faktory.total_enqueued"), 0);
}
