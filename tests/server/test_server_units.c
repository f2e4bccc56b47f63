/* Unit tests of the server's data structures: the timer heap (order, FIFO
 * ties, removal from the middle), the intrusive table, the job indexes
 * (priorities, state moves) and the group-commit writer on a real SQLite
 * file. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/sqlite/heap.h"
#include "backend/sqlite/jobs.h"
#include "backend/sqlite/store.h"
#include "backend/sqlite/writer.h"
#include "common/buf.h"
#include "common/table.h"
#include "common/timeutil.h"

#include <sqlite3.h>

Test(heap, pops_in_deadline_order_fifo_on_ties_and_removes_any_node)
{
    enum { N = 500 };
    rb_heap h;
    rb_heap_init(&h);
    rb_heap_node n[N];
    for (int i = 0; i < N; i++) {
        rb_heap_node_init(&n[i]);
        rb_heap_push(&h, &n[i], (i * 7919) % 50); /* many equal deadlines */
    }
    for (int i = 0; i < N; i += 3) /* remove a third, from anywhere */
        rb_heap_remove(&h, &n[i]);
    rb_heap_remove(&h, &n[0]); /* removing twice is a no-op */
    int64_t last_at = -1;
    uint64_t last_seq = 0;
    int popped = 0;
    rb_heap_node *t;
    while ((t = rb_heap_top(&h))) {
        cr_assert(t->at_ms > last_at || (t->at_ms == last_at && t->seq > last_seq),
                  "out of order at %d", popped);
        cr_assert_neq((t - n) % 3, 0, "a removed node came out");
        last_at = t->at_ms;
        last_seq = t->seq;
        rb_heap_remove(&h, t);
        cr_assert_eq(t->idx, RB_HEAP_NONE);
        popped++;
    }
    cr_assert_eq(popped, N - (N + 2) / 3);
    rb_heap_release(&h);
}

typedef struct item {
    void *next;
    char key[16];
} item;

static const char *item_key(const void *e)
{
    return ((const item *)e)->key;
}

Test(table, put_get_del_through_growth)
{
    rb_table t;
    rb_table_init(&t, offsetof(item, next), item_key);
    enum { N = 5000 };
    item *it = calloc(N, sizeof *it);
    for (int i = 0; i < N; i++) {
        snprintf(it[i].key, sizeof it[i].key, "k%d", i);
        rb_table_put(&t, &it[i]);
    }
    cr_assert_eq(t.size, N);
    for (int i = 0; i < N; i += 2)
        rb_table_del(&t, &it[i]);
    for (int i = 0; i < N; i++)
        cr_assert_eq(rb_table_get(&t, it[i].key), i % 2 ? &it[i] : NULL);
    cr_assert_null(rb_table_get(&t, "missing"));
    rb_table_release(&t);
    free(it);
}

Test(jobs_index, priorities_fifo_and_state_moves)
{
    rb_jobs js;
    rb_jobs_init(&js);
    rb_queue *q = rb_jobs_queue(&js, "q", true);
    cr_assert_eq(rb_jobs_queue(&js, "q", false), q);
    cr_assert_null(rb_jobs_queue(&js, "other", false));
    int prios[] = {1, 5, 9, 5, 9};
    const char *jids[] = {"j0", "j1", "j2", "j3", "j4"};
    for (int i = 0; i < 5; i++) {
        rb_job *j = rb_job_new(jids[i], rb_xstrdup("{}"), q, prios[i]);
        rb_jobs_add(&js, j);
        rb_jobs_set_state(&js, j, RB_JOB_ENQUEUED, i);
    }
    cr_assert_eq(q->size, 5);
    const char *order[] = {"j2", "j4", "j1", "j3", "j0"};
    for (int i = 0; i < 5; i++) {
        rb_job *j = rb_group_first(q->none);
        cr_assert_str_eq(j->jid, order[i]);
        rb_jobs_set_state(&js, j, RB_JOB_WORKING, 1000 - i);
    }
    cr_assert_eq(js.enqueued, 0);
    cr_assert_eq(js.working.size, 5);
    cr_assert_str_eq(rb_jobs_next_timer(&js)->jid, "j0"); /* earliest lease end */
    rb_jobs_delete(&js, rb_jobs_find(&js, "j0"));
    cr_assert_null(rb_jobs_find(&js, "j0"));
    cr_assert_str_eq(rb_jobs_next_timer(&js)->jid, "j3");
    rb_jobs_set_state(&js, rb_jobs_find(&js, "j3"), RB_JOB_DEAD, 5000);
    cr_assert_eq(js.dead.size, 1);
    cr_assert_str_eq(rb_jobs_next_timer(&js)->jid, "j1");
    cr_assert_eq(rb_job_state_parse("retries"), RB_JOB_RETRIES);
    cr_assert_eq(rb_job_state_parse("pending"), -1);
    rb_jobs_release(&js);
}

static int done_calls, done_status;

static void on_done(void *arg, int status, const rb_err *err)
{
    (void)arg;
    (void)err;
    done_calls++;
    done_status = status;
}

typedef struct seen {
    int jobs, counter_value;
    char first_jid[32];
} seen;

static int see_job(void *arg, const rb_job_row *r)
{
    seen *s = arg;
    if (s->jobs++ == 0)
        snprintf(s->first_jid, sizeof s->first_jid, "%s", r->jid);
    return 0;
}

static int see_counter(void *arg, const char *name, int64_t v)
{
    if (!strcmp(name, "c"))
        ((seen *)arg)->counter_value = (int)v;
    return 0;
}

static int see_meta(void *arg, const char *k, const char *v)
{
    (void)arg;
    (void)k;
    (void)v;
    return 0;
}

Test(writer, commits_batches_and_runs_completions_in_order)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.db", dir);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    rb_writer *w = rb_writer_start(s, &err);
    cr_assert_not_null(w);
    for (int i = 0; i < 100; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "jid-%03d", i);
        rb_job_row r = {.id = i + 1, .jid = jid, .state = 2, .queue = "q", .priority = 5,
                        .seq = (uint64_t)i, .due_ms = i, .json = "{}", .reserve_s = 30};
        rb_writer_put(w, &r);
        if (i % 10 == 0)
            rb_writer_del(w, i + 1, jid);
        rb_writer_then(w, on_done, NULL);
    }
    rb_writer_counter(w, "c", 42);
    rb_writer_then(w, on_done, NULL);
    while (done_calls < 101) /* completions run on this thread */
        if (rb_writer_reap(w) == 0)
            usleep(1000);
    cr_assert_eq(done_status, 0);
    rb_writer_free(w);
    s->ops->close(s);

    cr_assert_eq(rb_store_open(path, &s, &err), 0);
    seen sn = {0};
    rb_store_loader l = {&sn, see_job, see_counter, see_meta};
    cr_assert_eq(s->ops->load(s, &l, &err), 0);
    cr_assert_eq(sn.jobs, 90);
    cr_assert_str_eq(sn.first_jid, "jid-001");
    cr_assert_eq(sn.counter_value, 42);
    s->ops->close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static int defer_calls;
static void on_defer(void *arg)
{
    (void)arg;
    defer_calls++;
}

Test(writer, deferred_seal_groups_requests_and_counts_them)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.db", dir);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    rb_writer *w = rb_writer_start(s, &err);
    cr_assert_not_null(w);
    rb_writer_defer(w, on_defer, NULL);
    done_calls = 0;
    for (int i = 0; i < 5; i++) { /* five requests in one loop iteration */
        char jid[32];
        snprintf(jid, sizeof jid, "jid-%d", i);
        rb_job_row r = {.id = i + 1, .jid = jid, .state = 2, .queue = "q", .priority = 5,
                        .seq = (uint64_t)i, .json = "{}", .reserve_s = 30};
        rb_writer_put(w, &r);
        rb_writer_then(w, on_done, NULL);
    }
    cr_assert_eq(defer_calls, 1, "the hook runs once per open batch");
    usleep(20000);
    cr_assert_eq(rb_writer_reap(w), 0, "nothing is committed before the seal");
    rb_writer_seal(w);
    while (done_calls < 5)
        if (rb_writer_reap(w) == 0)
            usleep(1000);
    cr_assert_eq(done_status, 0);
    rb_writer_stats st;
    rb_writer_get_stats(w, &st);
    cr_assert_eq(st.commits, 1, "one transaction for the five requests");
    cr_assert_eq(st.requests, 5);
    cr_assert_eq(st.rows, 5);
    cr_assert_eq(st.failed, 0);
    cr_assert(st.commit_us_max <= st.commit_us);
    rb_writer_counter(w, "c", 1); /* a new batch: the hook runs again */
    cr_assert_eq(defer_calls, 2);
    rb_writer_free(w); /* seals and commits it */
    s->ops->close(s);
    cr_assert_eq(rb_store_open(path, &s, &err), 0);
    seen sn = {0};
    rb_store_loader l = {&sn, see_job, see_counter, see_meta};
    cr_assert_eq(s->ops->load(s, &l, &err), 0);
    cr_assert_eq(sn.jobs, 5);
    cr_assert_eq(sn.counter_value, 1);
    s->ops->close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static int count_job(void *arg, const rb_job_row *r)
{
    seen *s = arg;
    if (r->id <= 0 || r->id > 3)
        return -1;
    s->jobs++;
    if (r->id == 2)
        snprintf(s->first_jid, sizeof s->first_jid, "%s", r->jid);
    return 0;
}

Test(store, converts_a_table_keyed_by_jid_and_deletes_by_row_id)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/old.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "CREATE TABLE jobs(jid TEXT PRIMARY KEY, state INTEGER NOT NULL,"
                              " queue TEXT NOT NULL, priority INTEGER NOT NULL, seq INTEGER NOT NULL,"
                              " due_ms INTEGER NOT NULL, first_ms INTEGER NOT NULL,"
                              " attempts INTEGER NOT NULL, wid TEXT, json TEXT NOT NULL,"
                              " history TEXT, reserve_s INTEGER NOT NULL);"
                              "INSERT INTO jobs VALUES('job-a',2,'q',5,1,10,10,0,NULL,'{}',NULL,30);"
                              "INSERT INTO jobs VALUES('job-b',2,'q',5,2,11,11,0,NULL,'{}',NULL,30);"
                              "INSERT INTO jobs VALUES('job-c',1,'q',5,3,99,0,0,NULL,'{}',NULL,30);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    seen sn = {0};
    rb_store_loader l = {&sn, count_job, see_counter, see_meta};
    cr_assert_eq(s->ops->load(s, &l, &err), 0, "every row has an id from 1 to 3");
    cr_assert_eq(sn.jobs, 3);
    cr_assert_str_eq(sn.first_jid, "job-b", "ids follow the old rows' order");
    cr_assert_eq(s->ops->begin(s, &err), 0);
    cr_assert_eq(s->ops->del_job(s, 2, "job-b", &err), 0);
    cr_assert_eq(s->ops->commit(s, &err), 0);
    s->ops->close(s);
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg); /* already converted */
    sn = (seen){0};
    cr_assert_eq(s->ops->load(s, &l, &err), 0);
    cr_assert_eq(sn.jobs, 2);
    cr_assert_str_eq(sn.first_jid, "", "row 2 is gone");
    s->ops->close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Whether the counters table of the database at path has a rowid (an
 * index on name beside the table). */
static int counters_have_rowid(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int n = -1;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT count(*) FROM sqlite_master WHERE"
                                    " tbl_name='counters' AND type='index'",
                                    -1, &st, NULL),
                 SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

Test(store, converts_counters_to_one_btree_keeping_their_values)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/old.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                              "INSERT INTO counters VALUES('c', 41);"
                              "INSERT INTO counters VALUES('d', 7);",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    cr_assert_eq(counters_have_rowid(path), 1);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    seen sn = {0};
    rb_store_loader l = {&sn, see_job, see_counter, see_meta};
    cr_assert_eq(s->ops->load(s, &l, &err), 0);
    cr_assert_eq(sn.counter_value, 41, "the value survives the conversion");
    cr_assert_eq(s->ops->begin(s, &err), 0);
    cr_assert_eq(s->ops->set_counter(s, "c", 42, &err), 0);
    cr_assert_eq(s->ops->commit(s, &err), 0);
    s->ops->close(s);
    cr_assert_eq(counters_have_rowid(path), 0, "counters are one B-tree now");
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg); /* already converted */
    sn = (seen){0};
    cr_assert_eq(s->ops->load(s, &l, &err), 0);
    cr_assert_eq(sn.counter_value, 42);
    s->ops->close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(store, the_writer_checkpoints_so_the_wal_stays_bounded)
{
    char dir[] = "/tmp/rebound-unit-XXXXXX", path[64], wal[80];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/w.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    rb_store *s;
    rb_err err = {0};
    cr_assert_eq(rb_store_open(path, &s, &err), 0, "%s", err.msg);
    rb_writer *w = rb_writer_start(s, &err);
    cr_assert_not_null(w);
    char *big = malloc(3001);
    memset(big, 'x', 3000);
    big[3000] = '\0';
    done_calls = 0;
    /* 1,500 commits of two rows of 3,000 bytes: over 3,000 WAL pages (12 MB)
     * without a checkpoint */
    for (int i = 0; i < 1500; i++) {
        for (int k = 0; k < 2; k++) {
            char jid[32];
            snprintf(jid, sizeof jid, "jid-%d-%d", i, k);
            rb_job_row r = {.id = 2 * i + k + 1, .jid = jid, .state = 2, .queue = "q",
                            .priority = 5, .json = big, .reserve_s = 30};
            rb_writer_put(w, &r);
        }
        rb_writer_then(w, on_done, NULL);
        while (done_calls < i + 1) /* one request at a time: one commit each */
            if (rb_writer_reap(w) == 0)
                usleep(100);
    }
    cr_assert_eq(done_status, 0);
    struct stat st;
    cr_assert_eq(stat(wal, &st), 0, "the WAL exists while the store is open");
    cr_assert_lt(st.st_size, 8 << 20, "WAL of %lld bytes: no checkpoint ran", (long long)st.st_size);
    rb_writer_free(w);
    s->ops->close(s);
    free(big);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(jobs_index, packed_fields_hold_their_largest_values_and_row_ids_increase)
{
    rb_jobs js;
    rb_jobs_init(&js);
    rb_queue *q = rb_jobs_queue(&js, "q", true);
    rb_job *a = rb_job_new("job-aaaa", rb_xstrdup("{}"), q, RB_PRIORITIES);
    rb_jobs_add(&js, a);
    a->reserve_s = 7 * 86400; /* server.reserve_for's maximum */
    a->flags = RB_JOB_EXPIRED | RB_JOB_REFETCHED;
    a->attempts = 1000000;
    rb_jobs_set_state(&js, a, RB_JOB_DEAD, 5000);
    cr_assert_eq(a->reserve_s, 7 * 86400);
    cr_assert_eq(a->state, RB_JOB_DEAD);
    cr_assert_eq(a->priority, RB_PRIORITIES);
    cr_assert_eq(a->flags, RB_JOB_EXPIRED | RB_JOB_REFETCHED);
    cr_assert_eq(a->attempts, 1000000);
    rb_jobs_enqueue_us(&js, a, 1700000000123999LL);
    cr_assert_eq(rb_job_enqueued_us(a), 1700000000123999LL); /* the row id's word */
    cr_assert_eq(a->row_id, 1);
    a->row_id = ((int64_t)1 << 53) - 1;
    cr_assert_eq(a->enq_frac_us, 999);
    cr_assert_eq(a->row_id, ((int64_t)1 << 53) - 1);
    a->row_id = 1;
    rb_jobs_set_state(&js, a, RB_JOB_DEAD, 5000);
    cr_assert_eq(a->enq_frac_us, 0, "only an enqueued job keeps enqueue microseconds");
    rb_job *b = rb_job_new("job-bbbb", rb_xstrdup("{}"), q, 1);
    b->row_id = 41; /* as loaded from the store */
    rb_jobs_add(&js, b);
    rb_job *c = rb_job_new("job-cccc", rb_xstrdup("{}"), q, 1);
    rb_jobs_add(&js, c);
    cr_assert_eq(a->row_id, 1);
    cr_assert_eq(b->row_id, 41);
    cr_assert_eq(c->row_id, 42, "a new job gets an id above every loaded one");
    rb_jobs_release(&js);
}

/* The job text's times (written from a per-second cache) read exactly as
 * rb_time_format_us writes them (microseconds), across second boundaries,
 * backwards in time and before 1970. */
Test(jobs_index, job_text_times_match_rb_time_format)
{
    const int64_t ms[] = {1700000000000, 1700000000001, 1700000000999, 1700000001000,
                          1700000000500, 1699999999999, 0,             999,
                          -1,            -1000,         -1001,         253402300799999,
                          1700000000042, 1700000000042, 86400000,      -62135596800000,
                          253402300800000, 253402300800001};
    char json[] = "{\"jid\":\"t\"}";
    rb_job j = {.json = json};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        int64_t cus = ms[i] ? ms[i] * 1000 + (int64_t)(i * 37 % 1000) : 0;
        j.created_us = cus;
        int64_t enq = ms[(i + 5) % (sizeof ms / sizeof *ms)] * 1000 + (int64_t)(i * 101 % 1000);
        char a[RB_TIME_STRLEN], b[RB_TIME_STRLEN], want[200];
        /* created_us 0 means none; enqueued_at is left out for times <= 0 */
        snprintf(want, sizeof want, "{\"jid\":\"t\"%s%s%s%s%s%s}",
                 cus ? ",\"created_at\":\"" : "", cus ? rb_time_format_us(cus, a) : "",
                 cus ? "\"" : "", enq > 0 ? ",\"enqueued_at\":\"" : "",
                 enq > 0 ? rb_time_format_us(enq, b) : "", enq > 0 ? "\"" : "");
        char *got = rb_job_json_out(&j, enq > 0 ? enq : 0);
        cr_assert_str_eq(got, want, "ms %lld", (long long)ms[i]);
        free(got);
    }
}
