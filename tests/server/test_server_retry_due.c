/* A retry runs when it is due, not at a maintenance tick: on a single
 * node (its scheduler's own timer) and (test_pg_retry_due.c, RBH_PG) in
 * distributed mode, from this one source. There the maintenance thread
 * promotes due retries (src/backend/pg/maint_thread.c, mode_maint_due): a
 * FAIL that schedules its job's retry sooner than the thread's next wake
 * wakes it. The tick is stretched to 30 s here (the fault pg.tick_ms,
 * which a single node ignores), so a retry due in 0.2 s that is fetched
 * within 10 s was promoted by the wake, not by a tick: without it the job
 * would wait 24-36 s. */
#include "harness.h"

#include <criterion/criterion.h>

static rbh_server srv;

static void teardown(void)
{
    if (srv.dir[0])
        rbh_stop(&srv);
}

TestSuite(retry_due, .fini = teardown, .timeout = 60);

Test(retry_due, a_retry_due_soon_wakes_the_maintenance_thread)
{
    rbh_fault_set("pg.tick_ms", "30000");
    cr_assert_eq(rbh_start(&srv, NULL, NULL), 0, "the server did not start (see %s)", srv.log);
    rbh_conn *w = rbh_connect(&srv, "rd-1");
    cr_assert(w);
    /* the first tick ran at start with nothing due: the thread sleeps ~30 s */
    rbh_sleep_ms(300);
    cr_assert(rbh_expect(w, "+OK", "PUSH {\"jid\":\"retry-due-1\",\"jobtype\":\"t\",\"args\":[]}"));
    char *jid = rbh_fetch_jid(w, "default");
    cr_assert(jid && !strcmp(jid, "retry-due-1"));
    free(jid);
    jid = NULL;
    cr_assert(rbh_expect(w, "+OK", "FAIL {\"jid\":\"retry-due-1\",\"errtype\":\"E\",\"message\":\"m\","
                                   "\"next_retry_delay\":0.2}"));
    int64_t deadline = rbh_now_ms() + 10000;
    while (!jid && rbh_now_ms() < deadline)
        jid = rbh_fetch_jid(w, "default"); /* each waits up to 2 s */
    cr_assert(jid && !strcmp(jid, "retry-due-1"), "the retry was not promoted when due");
    free(jid);
    cr_assert(rbh_expect(w, "+OK", "ACK {\"jid\":\"retry-due-1\"}"));
    rbh_close(w);
}
