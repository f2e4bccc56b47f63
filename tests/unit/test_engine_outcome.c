/* The engine's one rule for a worker's ACK, FAIL, SNOOZE and EXTEND
 * (rb_job_outcome, engine/job_state.h) against the table both backends'
 * server suites run (tests/server/outcome_cases.h). */
#include <criterion/criterion.h>

#include "../server/outcome_cases.h"

Test(engine_outcome, every_shape_verb_and_worker_as_the_table_says)
{
    int n = 0;
    for (int s = 0; s < OC_SETUPS; s++)
        for (int v = RB_VERB_ACK; v <= RB_VERB_EXTEND; v++)
            for (int w = 0; w < OC_WIDS; w++, n++) {
                rb_job_status got =
                    rb_job_outcome((rb_job_verb)v, oc_shapes[s].exists, oc_shapes[s].state,
                                   oc_shapes[s].flags, oc_shapes[s].holder, oc_wids[w]);
                cr_expect_eq(got, oc_want[s][v][w], "%s of a %s job by %s: %d, want %d",
                             oc_verbs[v], oc_shapes[s].name, oc_wids[w] ? oc_wids[w] : "no wid",
                             got, oc_want[s][v][w]);
            }
    cr_assert_eq(n, OC_SETUPS * 4 * OC_WIDS);
}

/* A PENDING job (its push not committed yet) is not visible. */
Test(engine_outcome, a_pending_job_is_missing)
{
    for (int v = RB_VERB_ACK; v <= RB_VERB_EXTEND; v++)
        cr_assert_eq(rb_job_outcome((rb_job_verb)v, true, RB_JOB_PENDING, 0, NULL, "w1"),
                     RB_JOB_MISSING);
}
