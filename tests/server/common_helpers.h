/* The scaffolding of a suite that runs one server per test with one
 * protocol connection (test_server_jobs.c, test_server_admin.c, and their
 * PostgreSQL builds through test_pg_server_*.c): the server S and the
 * connection C, start and stop for the suite, and SERVER_TEST, which ends
 * every test by stopping the server and asserting that it exited cleanly.
 * Include once, after harness.h, in a single test file. */
#ifndef RBH_COMMON_HELPERS_H
#define RBH_COMMON_HELPERS_H

#include <criterion/criterion.h>

#include "harness.h"

static rbh_server S;
static rbh_conn *C;

/* A suite's .init: starts S and connects C as worker wid. */
static void rbh_suite_start(const char *wid)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, wid);
    cr_assert_not_null(C);
}

/* A suite's .fini. */
static void rbh_suite_stop(void)
{
    rbh_close(C);
    rbh_stop(&S); /* after rbh_suite_finish() this only removes what is left */
}

/* Criterion ignores assertion failures in .fini, so every test ends by
 * stopping the server and asserting that it exited cleanly (status 0, no
 * sanitizer report in its log). */
static void rbh_suite_finish(void)
{
    rbh_close(C);
    C = NULL;
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

/* A test of suite whose body is followed by rbh_suite_finish(). */
#define RBH_SERVER_TEST(suite, name) \
    static void body_##name(void); \
    Test(suite, name) \
    { \
        body_##name(); \
        rbh_suite_finish(); \
    } \
    static void body_##name(void)

#endif
