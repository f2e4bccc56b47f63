/* What flow control stores on a single node (backend/sqlite/store.h,
 * writer.h): a job row's group (the grp column) is written and read back
 * (NULL for an ungrouped job), and a rate bucket's row ("gcra:" meta key),
 * written at each start, is folded to its last value per commit: one row
 * write per key per batch, as counters are; other meta keys are not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/sqlite/store.h"
#include "backend/sqlite/writer.h"

static const rb_store_ops *real;
static int gcra_writes, other_writes;

static int counting_set_meta(rb_store *s, const char *key, const char *value, rb_err *err)
{
    if (!strncmp(key, "gcra:", 5))
        gcra_writes++;
    else
        other_writes++;
    return real->set_meta(s, key, value, err);
}

static int commits;

static void on_commit(void *arg, int status, const rb_err *err)
{
    (void)arg;
    (void)err;
    cr_assert_eq(status, 0);
    commits++;
}

typedef struct seen {
    char grp_a[32], gcra[32], other[32];
    bool b_ungrouped;
} seen;

static int see_job(void *arg, const rb_job_row *r)
{
    seen *s = arg;
    if (!strcmp(r->jid, "job-a-0001"))
        snprintf(s->grp_a, sizeof s->grp_a, "%s", r->grp ? r->grp : "(null)");
    if (!strcmp(r->jid, "job-b-0001"))
        s->b_ungrouped = r->grp == NULL;
    return 0;
}

static int see_counter(void *arg, const char *k, int64_t v)
{
    (void)arg;
    (void)k;
    (void)v;
    return 0;
}

static int see_meta(void *arg, const char *k, const char *v)
{
    seen *s = arg;
    if (!strcmp(k, "gcra:q acme"))
        snprintf(s->gcra, sizeof s->gcra, "%s", v);
    if (!strcmp(k, "queue:q"))
        snprintf(s->other, sizeof s->other, "%s", v);
    return 0;
}

Test(store_groups, group_column_and_folded_bucket_rows, .timeout = 30)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/g.db", dir);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    real = s->ops;
    static rb_store_ops ops;
    ops = *real;
    ops.set_meta = counting_set_meta;
    s->ops = &ops;
    rb_writer *w = rb_writer_start(s, &err);
    cr_assert_not_null(w);
    rb_job_row a = {.id = 1, .jid = "job-a-0001", .state = 2, .queue = "q", .priority = 5,
                    .seq = 1, .due_ms = 1, .json = "{}", .reserve_s = 30, .grp = "acme"};
    rb_job_row b = {.id = 2, .jid = "job-b-0001", .state = 2, .queue = "q", .priority = 5,
                    .seq = 2, .due_ms = 2, .json = "{}", .reserve_s = 30};
    rb_writer_put(w, &a);
    rb_writer_put(w, &b);
    rb_writer_meta(w, "gcra:q acme", "100");
    rb_writer_meta(w, "queue:q", "1");
    rb_writer_meta(w, "gcra:q acme", "200");
    rb_writer_meta(w, "queue:q", "1");
    rb_writer_meta(w, "gcra:q acme", "300");
    rb_writer_then(w, on_commit, NULL);
    while (commits < 1)
        if (rb_writer_reap(w) == 0)
            usleep(1000);
    cr_assert_eq(gcra_writes, 1, "the bucket's row was written %d times in one commit",
                 gcra_writes);
    cr_assert_eq(other_writes, 2, "other meta rows are not folded");
    rb_writer_free(w);
    s->ops->close(s);

    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    seen got = {0};
    rb_store_loader l = {&got, see_job, see_counter, see_meta};
    cr_assert_eq(s->ops->load(s, &l, &err), 0, "%s", err.msg);
    s->ops->close(s);
    cr_assert_str_eq(got.grp_a, "acme");
    cr_assert(got.b_ungrouped);
    cr_assert_str_eq(got.gcra, "300", "the last value is the one stored");
    cr_assert_str_eq(got.other, "1");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
