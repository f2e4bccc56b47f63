/* The single node's groups (backend/sqlite/jobs.h): a queue's groups and
 * their turns under random pushes, reservations, finishes and deletions,
 * with the invariants checked after each step (in the turns exactly when
 * the group has ready jobs and no hold; a concurrency hold only while the
 * group is at its limit, ended by a job leaving working; size, working and
 * refs equal to its jobs; a named group freed with its last job), and the
 * rotation's bound: taking
 * the head group's first job and moving it to the back, a group with ready
 * jobs waits at most one start of each other group. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/jobs.h"
#include "common/buf.h"

typedef struct counts {
    uint32_t size, working;
} counts;

/* Checks every invariant of q's groups against its jobs. */
static void check(rb_jobs *js, rb_queue *q, const char *const *names, int n_names)
{
    size_t in_turns = 0, enq = 0;
    for (rb_link *e = q->turns.head; e; e = e->next) {
        rb_group *g = rb_container_of(e, rb_group, turn);
        cr_assert(g->in_turns && g->size > 0, "group '%s' in the turns without jobs", g->name);
        in_turns++;
    }
    cr_assert_eq(in_turns, q->turns.size);
    for (int i = -1; i < n_names; i++) {
        rb_group *g = rb_queue_group(q, i < 0 ? NULL : names[i]);
        if (!g)
            continue;
        counts c = {0};
        for (int s = 0; s < RB_PRIORITIES; s++) {
            uint32_t k = 0;
            for (rb_link *e = g->ready[s].head; e; e = e->next, k++)
                cr_assert_eq(rb_job_of_link(e)->group, g);
            cr_assert_eq(!!(g->ready_mask & (1u << s)), k > 0);
            c.size += k;
        }
        for (rb_link *e = js->working.head; e; e = e->next)
            c.working += rb_job_of_link(e)->group == g;
        cr_assert_eq(g->size, c.size, "group '%s' size", g->name);
        cr_assert_eq(g->working, c.working, "group '%s' working", g->name);
        cr_assert_eq(g->in_turns, g->size > 0 && g->hold == RB_HOLD_NONE, "group '%s' turns",
                     g->name);
        cr_assert(g->hold != RB_HOLD_CONCURRENCY || g->working >= g->concurrency,
                  "group '%s' held with %u of %u working", g->name, g->working, g->concurrency);
        cr_assert(g == q->none || g->refs > 0, "named group '%s' kept without jobs", g->name);
        enq += g->size;
    }
    cr_assert_eq(q->size, enq);
    cr_assert_eq(js->enqueued, enq);
}

Test(sq_groups, random_operations_keep_the_invariants)
{
    static const char *const names[] = {"a", "b", "c", "tenant-42", "x"};
    enum { N_NAMES = 5, STEPS = 20000 };
    rb_jobs js;
    rb_jobs_init(&js);
    rb_queue *q = rb_jobs_queue(&js, "q", true);
    srand(30);
    int next = 0;
    for (int step = 0; step < STEPS; step++) {
        int op = rand() % 10;
        if (op < 4) { /* push */
            char jid[32];
            snprintf(jid, sizeof jid, "j%07d", next++);
            rb_job *j = rb_job_new(jid, rb_xstrdup("{}"), q, 1 + rand() % RB_PRIORITIES);
            int g = rand() % (N_NAMES + 1);
            if (g < N_NAMES) {
                rb_jobs_set_group(&js, j, names[g]);
                if (g < 2) /* "a" and "b" have a concurrency, as groups.c sets it */
                    j->group->concurrency = 2;
            }
            rb_jobs_add(&js, j);
            rb_jobs_set_state(&js, j, rand() % 4 ? RB_JOB_ENQUEUED : RB_JOB_SCHEDULED, step);
        } else if (op < 7 && q->turns.head) { /* reserve the head group's first job */
            rb_group *g = rb_container_of(q->turns.head, rb_group, turn);
            rb_job *j = rb_group_first(g);
            rb_group_next_turn(g);
            if (g->concurrency && g->working + 1 >= g->concurrency) /* groups.c's rule */
                rb_group_hold_back(g, RB_HOLD_CONCURRENCY);
            rb_jobs_set_state(&js, j, RB_JOB_WORKING, step + 1000);
        } else if (op < 9 && js.working.head) { /* finish: ACK (deleted) or back to enqueued */
            rb_job *j = rb_job_of_link(js.working.head);
            if (rand() % 2)
                rb_jobs_delete(&js, j);
            else
                rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, step);
        } else if (js.scheduled.head) { /* a scheduled job comes due, or is deleted */
            rb_job *j = rb_job_of_link(js.scheduled.head);
            if (rand() % 3)
                rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, step);
            else
                rb_jobs_delete(&js, j);
        }
        check(&js, q, names, N_NAMES);
    }
    rb_jobs_release(&js);
}

/* One group with 10,000 ready jobs, then 20 groups with 5 each: taking the
 * head's first job and rotating starts all 100 small jobs within 21 x 5 =
 * 105 takes (the issue asks 125), the backlog then runs alone. */
Test(sq_groups, rotation_bound)
{
    rb_jobs js;
    rb_jobs_init(&js);
    rb_queue *q = rb_jobs_queue(&js, "q", true);
    char jid[32], name[16];
    for (int i = 0; i < 10000; i++) {
        snprintf(jid, sizeof jid, "big-%05d", i);
        rb_job *j = rb_job_new(jid, rb_xstrdup("{}"), q, 5);
        rb_jobs_set_group(&js, j, "big");
        rb_jobs_add(&js, j);
        rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, i);
    }
    for (int g = 0; g < 20; g++)
        for (int i = 0; i < 5; i++) {
            snprintf(jid, sizeof jid, "small-%02d-%d", g, i);
            snprintf(name, sizeof name, "g%02d", g);
            rb_job *j = rb_job_new(jid, rb_xstrdup("{}"), q, 5);
            rb_jobs_set_group(&js, j, name);
            rb_jobs_add(&js, j);
            rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, 10000 + g);
        }
    int small = 0, last_small = -1;
    for (int take = 0; take < 200; take++) {
        rb_group *g = rb_container_of(q->turns.head, rb_group, turn);
        rb_job *j = rb_group_first(g);
        rb_group_next_turn(g);
        if (!strncmp(j->jid, "small-", 6)) {
            small++;
            last_small = take;
        }
        rb_jobs_delete(&js, j);
    }
    cr_assert_eq(small, 100);
    cr_assert_leq(last_small, 104, "the last small job started at take %d", last_small);
    cr_assert_eq(q->turns.size, 1, "only the backlog is left in the turns");
    cr_assert_null(rb_queue_group(q, "g00"), "an emptied group is freed");
    rb_jobs_release(&js);
}
