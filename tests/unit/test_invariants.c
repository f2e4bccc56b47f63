/* rb_assert (common/check.h) and the SQLite backend's job index
 * invariants (backend/sqlite/jobs.c): a broken one aborts with a message
 * saying which job and what, in a child process this test watches. */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/sqlite/jobs.h"
#include "common/check.h"

/* Runs fn in a child with stderr into a pipe; true when it died of
 * SIGABRT having said want. */
static bool aborts_saying(void (*fn)(void), const char *want)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(0);
    }
    close(p[1]);
    char out[2048];
    size_t len = 0;
    ssize_t got;
    while ((got = read(p[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)got;
    out[len] = '\0';
    close(p[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(strstr(out, want), "stderr: %s (wanted %s)", out, want);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(out, want);
}

static void broken_assert(void)
{
    int n = 3;
    rb_assert(n == 2, "n is %d", n);
}

static void kept_assert(void)
{
    rb_assert(1 + 1 == 2, "arithmetic");
}

Test(check, a_broken_assert_aborts_naming_the_place)
{
    cr_assert(aborts_saying(broken_assert, "invariant broken at tests/unit/test_invariants.c:"));
    cr_assert(aborts_saying(broken_assert, ": n == 2: n is 3"));
    cr_assert_not(aborts_saying(kept_assert, ""), "a kept invariant does not abort");
}

/* --- the job indexes --- */

static rb_jobs js;

static rb_job *job(const char *jid, rb_job_state st)
{
    rb_jobs_init(&js);
    rb_queue *q = rb_jobs_queue(&js, "default", true);
    rb_job *j = rb_job_new(jid, strdup("{}"), q, 5);
    rb_jobs_add(&js, j);
    rb_jobs_set_state(&js, j, st, 1000);
    return j;
}

/* Its state changed without moving it between lists. */
static void state_without_its_list(void)
{
    rb_job *j = job("j-list", RB_JOB_ENQUEUED);
    j->state = RB_JOB_DEAD;
    rb_jobs_set_state(&js, j, RB_JOB_SCHEDULED, 2000);
}

/* Out of the timer heap while it has a deadline. */
static void deadline_without_the_heap(void)
{
    rb_job *j = job("j-heap", RB_JOB_RETRIES);
    rb_heap_remove(&js.timers, &j->timer);
    rb_jobs_delete(&js, j);
}

/* Leaving WORKING with its holder kept. */
static void holder_kept(void)
{
    rb_job *j = job("j-wid", RB_JOB_WORKING);
    j->wid = strdup("w1");
    rb_jobs_set_state(&js, j, RB_JOB_RETRIES, 2000);
}

/* Every legal move, holder dropped before leaving WORKING. */
static void legal_moves(void)
{
    rb_job *j = job("j-ok", RB_JOB_SCHEDULED);
    rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, 1000);
    j->wid = strdup("w1");
    rb_jobs_set_state(&js, j, RB_JOB_WORKING, 2000);
    free(j->wid);
    j->wid = NULL;
    rb_jobs_set_state(&js, j, RB_JOB_RETRIES, 3000);
    rb_jobs_set_state(&js, j, RB_JOB_WAITING, 3000);
    rb_jobs_set_state(&js, j, RB_JOB_BLOCKED, 3000);
    rb_jobs_set_state(&js, j, RB_JOB_DEAD, 4000);
    rb_jobs_delete(&js, j);
    rb_jobs_release(&js);
}

Test(check, a_job_is_in_exactly_the_index_its_state_names)
{
    cr_assert(aborts_saying(state_without_its_list, "job j-list (state dead) is not in its"
                                                    " state's list"));
    cr_assert(aborts_saying(deadline_without_the_heap, "job j-heap (state retries) is not in the"
                                                       " timer heap"));
    cr_assert_not(aborts_saying(legal_moves, ""));
}

Test(check, only_a_working_job_has_a_holder)
{
    cr_assert(aborts_saying(holder_kept, "job j-wid (state retries) still has holder w1"));
}
