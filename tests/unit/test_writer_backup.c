/* The writer's backup (rb_writer_backup, the SQLite store's backup): while
 * a copy is being made, a batch submitted meanwhile is committed and
 * answered before the copy is done (the writer is held up for one step,
 * not for the whole copy), the copy holds that batch too, a second backup
 * is refused while one runs, and an existing file is never replaced. The
 * store's backup is wrapped so that the test decides when its steps go on:
 * no timing. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/sqlite/store.h"
#include "backend/sqlite/writer.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int steps;      /* between() calls so far */
static bool submitted; /* the test's batch is in the writer's hands */
static bool released;  /* the rest of the copy may go on */

static const rb_store_ops *real;
static void (*real_between)(void *);
static void *real_arg;

/* Step 1: tell the test, wait for its batch, let the writer commit it.
 * Step 2: wait until the test has seen that batch answered. */
static void wrapped_between(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    int n = ++steps;
    pthread_cond_broadcast(&cv);
    while ((n == 1 && !submitted) || (n == 2 && !released))
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    real_between(real_arg);
}

static int wrapped_backup(rb_store *s, const char *path, void (*between)(void *), void *arg,
                          rb_err *err)
{
    real_between = between;
    real_arg = arg;
    return real->backup(s, path, wrapped_between, NULL, err);
}

static int commits_done, backups_done, backup_status;

static void on_commit(void *arg, int status, const rb_err *err)
{
    (void)arg;
    (void)err;
    cr_assert_eq(status, 0);
    commits_done++;
}

static void on_backup(void *arg, int status, const rb_err *err)
{
    (void)arg;
    (void)err;
    backup_status = status;
    backups_done++;
}

static void reap_until(rb_writer *w, const int *counter, int want)
{
    while (*counter < want)
        if (rb_writer_reap(w) == 0)
            usleep(1000);
}

typedef struct found {
    int jobs;
    bool during;
} found;

static int see_job(void *arg, const rb_job_row *r)
{
    found *f = arg;
    f->jobs++;
    f->during |= !strcmp(r->jid, "during-backup");
    return 0;
}

static int see_other(void *arg, const char *k, int64_t v)
{
    (void)arg;
    (void)k;
    (void)v;
    return 0;
}

static int see_meta(void *arg, const char *k, const char *v)
{
    (void)arg;
    (void)k;
    (void)v;
    return 0;
}

static void put(rb_writer *w, int64_t id, const char *jid, const char *json)
{
    rb_job_row r = {.id = id, .jid = jid, .state = 2, .queue = "q", .priority = 5,
                    .seq = (uint64_t)id, .due_ms = id, .json = json, .reserve_s = 30};
    rb_writer_put(w, &r);
}

Test(writer_backup, commits_go_on_during_a_copy_that_then_holds_them, .timeout = 60)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64], copy[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.db", dir);
    snprintf(copy, sizeof copy, "%s/copy.db", dir);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    real = s->ops;
    static rb_store_ops ops;
    ops = *real;
    ops.backup = wrapped_backup;
    s->ops = &ops;
    rb_writer *w = rb_writer_start(s, &err);
    cr_assert_not_null(w);
    /* a database of a few hundred pages: the copy takes several steps */
    static char big[2001];
    memset(big, 'x', 2000);
    big[0] = '"';
    big[1999] = '"';
    for (int i = 1; i <= 400; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "before-%03d", i);
        put(w, i, jid, big);
    }
    rb_writer_then(w, on_commit, NULL);
    reap_until(w, &commits_done, 1);

    cr_assert_eq(rb_writer_backup(w, copy, on_backup, NULL, &err), 0, "%s", err.msg);
    pthread_mutex_lock(&mu);
    while (steps < 1)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    /* one at a time */
    rb_err e2 = {0};
    cr_assert_eq(rb_writer_backup(w, copy, on_backup, NULL, &e2), RB_ESTATE);
    cr_assert_str_eq(e2.msg, "a backup is already running");
    /* a request while the copy is under way: answered before it ends */
    put(w, 1000, "during-backup", "{}");
    rb_writer_then(w, on_commit, NULL);
    pthread_mutex_lock(&mu);
    submitted = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    reap_until(w, &commits_done, 2);
    cr_assert_eq(backups_done, 0, "the copy finished before its second step");
    pthread_mutex_lock(&mu);
    released = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    reap_until(w, &backups_done, 1);
    cr_assert_eq(backup_status, 0);
    cr_assert_geq(steps, 2);
    char part[80];
    snprintf(part, sizeof part, "%s.part", copy);
    cr_assert_neq(access(part, F_OK), 0, "the .part file is left");

    /* never over an existing file */
    cr_assert_eq(rb_writer_backup(w, copy, on_backup, NULL, &err), 0);
    reap_until(w, &backups_done, 2);
    cr_assert_eq(backup_status, RB_EEXIST);
    rb_writer_free(w);
    s->ops->close(s);

    long long jobs = -1;
    cr_assert_eq(rb_store_sqlite_check(copy, &jobs, &err), 0, "%s", err.msg);
    cr_assert_eq(jobs, 401);
    rb_store *c;
    cr_assert_eq(rb_store_open(copy, &c, &err), 0, "%s", err.msg);
    found f = {0};
    rb_store_loader l = {&f, see_job, see_other, see_meta};
    cr_assert_eq(c->ops->load(c, &l, &err), 0);
    cr_assert_eq(f.jobs, 401);
    cr_assert(f.during, "the batch committed during the copy is not in it");
    c->ops->close(c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
