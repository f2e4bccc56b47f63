/* Faktory Enterprise batches against the real server (single node): the
 * wire format of BATCH NEW, OPEN, COMMIT and STATUS, bad input, the
 * lifecycles the stock clients' own tests run against Faktory Enterprise
 * (faktory-rs tests/real/enterprise.rs, the Go client's TestBatches,
 * faktory_worker_ruby's batch_test.rb), FAIL-then-ACK counting, the death
 * callback, a 1,000-job batch, and durability across restarts and kill -9
 * (docs/workflows.md, "Batches"). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common_helpers.h"

static void start(void)
{
    rbh_suite_start("w1");
}

TestSuite(batch, .init = start, .fini = rbh_suite_stop, .timeout = 120);

#define SERVER_TEST(name) RBH_SERVER_TEST(batch, name)

/* A job object's text: jid, jobtype, queue, and custom.bid when bid. */
static char *job_text(const char *jid, const char *type, const char *queue, const char *bid)
{
    char *s = NULL;
    if (bid)
        cr_assert(asprintf(&s,
                           "{\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[],\"queue\":\"%s\","
                           "\"custom\":{\"bid\":\"%s\"}}",
                           jid, type, queue, bid) > 0);
    else
        cr_assert(asprintf(&s, "{\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[],\"queue\":\"%s\"}",
                           jid, type, queue) > 0);
    return s;
}

/* BATCH NEW def; returns the bid (caller frees), asserting it is one. */
static char *batch_new(rbh_conn *c, const char *def)
{
    char *bid = rbh_cmd(c, "BATCH NEW %s", def);
    cr_assert(bid && !strncmp(bid, "b-", 2), "BATCH NEW gave '%s'", bid ? bid : "(closed)");
    return bid;
}

/* BATCH NEW with the given callbacks (job texts or NULL) and parent. */
static char *batch_new_cbs(rbh_conn *c, const char *success, const char *complete,
                           const char *parent)
{
    char def[4096];
    snprintf(def, sizeof def, "{\"description\":\"test\"%s%s%s%s%s%s%s}",
             parent ? ",\"parent_bid\":\"" : "", parent ? parent : "", parent ? "\"" : "",
             success ? ",\"success\":" : "", success ? success : "",
             complete ? ",\"complete\":" : "", complete ? complete : "");
    return batch_new(c, def);
}

static json_t *status(rbh_conn *c, const char *bid)
{
    json_t *v = rbh_json(rbh_cmd(c, "BATCH STATUS %s", bid));
    cr_assert(json_is_object(v), "BATCH STATUS %s is not JSON", bid);
    return v;
}

/* Asserts STATUS's counts and callback states. */
static void expect_status(rbh_conn *c, const char *bid, long total, long pending, long failed,
                          const char *complete_st, const char *success_st)
{
    json_t *v = status(c, bid);
    long t = (long)json_integer_value(json_object_get(v, "total"));
    long p = (long)json_integer_value(json_object_get(v, "pending"));
    long f = (long)json_integer_value(json_object_get(v, "failed"));
    const char *cs = json_string_value(json_object_get(v, "complete_st"));
    const char *ss = json_string_value(json_object_get(v, "success_st"));
    cr_assert(t == total && p == pending && f == failed && cs && ss && !strcmp(cs, complete_st) &&
                  !strcmp(ss, success_st),
              "batch %s: total %ld pending %ld failed %ld complete_st '%s' success_st '%s', "
              "wanted %ld %ld %ld '%s' '%s'",
              bid, t, p, f, cs ? cs : "?", ss ? ss : "?", total, pending, failed, complete_st,
              success_st);
    json_decref(v);
}

static void push_member(rbh_conn *c, const char *jid, const char *queue, const char *bid)
{
    char *j = job_text(jid, "Member", queue, bid);
    cr_assert(rbh_expect(c, "+OK", "PUSH %s", j));
    free(j);
}

static long queue_size(rbh_conn *c, const char *queue)
{
    char path[128];
    snprintf(path, sizeof path, "faktory.queues.%s", queue);
    long long n = rbh_info_int(c, path);
    return n < 0 ? 0 : (long)n;
}

/* FETCHes one job of queue (which must hold one); returns it. */
static json_t *fetch(rbh_conn *c, const char *queue)
{
    cr_assert(queue_size(c, queue) > 0, "queue %s is empty", queue);
    json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", queue));
    cr_assert(json_is_object(j), "FETCH %s gave no job", queue);
    return j;
}

static const char *str_at(json_t *v, const char *path)
{
    return json_string_value(rbh_get(v, path));
}

static void ack(rbh_conn *c, const char *jid)
{
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"%s\"}", jid));
}

/* Fetches the next job of queue, checks its jid, ACKs it. */
static void fetch_ack(rbh_conn *c, const char *queue, const char *jid)
{
    json_t *j = fetch(c, queue);
    cr_assert_str_eq(str_at(j, "jid"), jid);
    ack(c, jid);
    json_decref(j);
}

/* Fetches the callback of bid from queue, checks its custom keys, returns
 * its jid (caller frees). */
static char *fetch_callback(rbh_conn *c, const char *queue, const char *type, const char *bid,
                            const char *pbid)
{
    json_t *j = fetch(c, queue);
    cr_assert_str_eq(str_at(j, "jobtype"), type);
    cr_assert_str_eq(str_at(j, "custom._bid"), bid);
    cr_assert_null(rbh_get(j, "custom.bid"), "a callback is not a member");
    if (pbid)
        cr_assert_str_eq(str_at(j, "custom._pbid"), pbid);
    else
        cr_assert_null(rbh_get(j, "custom._pbid"));
    char *jid = strdup(str_at(j, "jid"));
    json_decref(j);
    return jid;
}

#define CB(jid, type, queue) \
    "{\"jid\":\"" jid "\",\"jobtype\":\"" type "\",\"args\":[],\"queue\":\"" queue "\"}"

/* ---- §6.1-3: the wire format ---- */

SERVER_TEST(new_replies_the_bid_as_a_bulk_string)
{
    /* the Go client's payload: "bid":"" always sent, created_at, retry */
    const char *go = "BATCH NEW {\"success\":{\"jid\":\"go-cb-0001\",\"queue\":\"default\","
                     "\"jobtype\":\"Done\",\"args\":[],\"created_at\":"
                     "\"2026-01-01T00:00:00.123456789Z\",\"retry\":25},\"bid\":\"\","
                     "\"description\":\"go\"}\r\n";
    cr_assert_eq(rbh_send(C, go, strlen(go)), 0);
    char *line;
    cr_assert_eq(rbh_readline(C, &line), 0);
    cr_assert_str_eq(line, "$16", "NEW must answer a bulk string, got '%s'", line);
    free(line);
    cr_assert_eq(rbh_readline(C, &line), 0);
    cr_assert_eq(strlen(line), 16);
    cr_assert(!strncmp(line, "b-", 2));
    for (int i = 2; i < 16; i++)
        cr_assert(isalnum((unsigned char)line[i]), "bid '%s'", line);
    free(line);
    /* the Ruby client's callback: no retry, no created_at; defaults applied */
    char *bid = batch_new(C, "{\"success\":{\"jid\":\"0123456789abcdef01234567\",\"args\":[],"
                             "\"queue\":\"rb\",\"jobtype\":\"FooJob\"}}");
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    char *cb = fetch_callback(C, "rb", "FooJob", bid, NULL);
    json_t *view = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", cb));
    cr_assert_not_null(rbh_get(view, "job.created_at"));
    json_decref(view);
    free(cb);
    free(bid);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.stored"), 2);
}

SERVER_TEST(bad_batch_commands_are_refused_and_change_nothing)
{
    char big[1100 + 64];
    memset(big, 'x', 1100);
    big[1100] = '\0';
    struct {
        const char *line, *reply_prefix;
    } cases[] = {
        {"BATCH", "-ERR BATCH requires an argument"},
        {"BATCH FOO x", "-ERR unknown batch command FOO"},
        {"BATCH NEW", "-ERR BATCH NEW requires a JSON object"},
        {"BATCH NEW {}", "-ERR BATCH NEW: a success or complete callback is required"},
        {"BATCH NEW {\"death\":" CB("d0000001", "D", "q") "}",
         "-ERR BATCH NEW: a success or complete callback is required"},
        {"BATCH NEW {\"success\":", "-ERR BATCH NEW: invalid JSON"},
        {"BATCH NEW [1]", "-ERR BATCH NEW: argument must be a JSON object"},
        {"BATCH NEW {\"success\":\"FooJob\"}", "-ERR BATCH NEW: success must be a job object"},
        {"BATCH NEW {\"success\":{\"jid\":\"s0000001\",\"args\":[]}}",
         "-ERR BATCH NEW: success: jobs must have a jobtype parameter"},
        /* a callback needs a jid, said as a callback's rule (issue 25) */
        {"BATCH NEW {\"complete\":{\"jid\":\"c1\",\"jobtype\":\"X\",\"args\":[]}}",
         "-ERR BATCH NEW: complete: a callback job needs its own jid, a string of at least 8 "
         "characters (as any pushed job; docs/workflows.md)"},
        {"BATCH NEW {\"success\":{\"jobtype\":\"X\",\"args\":[]}}",
         "-ERR BATCH NEW: success: a callback job needs its own jid"},
        {"BATCH NEW {\"bid\":\"b-mine\",\"success\":" CB("s0000002", "S", "q") "}",
         "-ERR BATCH NEW: bid must be empty"},
        {"BATCH NEW {\"description\":7,\"success\":" CB("s0000003", "S", "q") "}",
         "-ERR BATCH NEW: description must be a string"},
        {"BATCH NEW {\"parent_bid\":\"b-nosuchbatch00\",\"success\":" CB("s0000004", "S", "q") "}",
         "-ERR No such batch b-nosuchbatch00"},
        {"BATCH NEW {\"parent_bid\":5,\"success\":" CB("s0000005", "S", "q") "}",
         "-ERR BATCH NEW: parent_bid must be"},
        {"BATCH OPEN", "-ERR BATCH OPEN requires one bid"},
        {"BATCH OPEN a b", "-ERR BATCH OPEN requires one bid"},
        {"BATCH STATUS b-nosuchbatch00", "-ERR No such batch b-nosuchbatch00"},
        {"BATCH COMMIT b-nosuchbatch00", "-ERR No such batch b-nosuchbatch00"},
        {"PUSH {\"jid\":\"m0000001\",\"jobtype\":\"M\",\"args\":[],\"custom\":{\"bid\":\"b-none\"}}",
         "-ERR No such batch b-none"},
        {"PUSH {\"jid\":\"m0000002\",\"jobtype\":\"M\",\"args\":[],\"custom\":{\"bid\":7}}",
         "-ERR job m0000002: custom.bid must be a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r = rbh_cmd(C, "%s", cases[i].line);
        cr_assert(r && !strncmp(r, cases[i].reply_prefix, strlen(cases[i].reply_prefix)),
                  "'%s' gave '%s', wanted '%s...'", cases[i].line, r ? r : "(closed)",
                  cases[i].reply_prefix);
        free(r);
    }
    char *r = rbh_cmd(C, "BATCH NEW {\"description\":\"%s\",\"success\":" CB("s0000006", "S", "q")
                         "}", big);
    cr_assert(r && strstr(r, "description is longer than 1024 bytes"), "%s", r);
    free(r);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.stored"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0);
    /* PUSHB: the unknown batch in the per-job rejection map, the rest pushed */
    json_t *errs = rbh_json(rbh_cmd(C, "PUSHB [{\"jid\":\"m0000003\",\"jobtype\":\"M\",\"args\":[],"
                                       "\"custom\":{\"bid\":\"b-gone\"}},{\"jid\":\"m0000004\","
                                       "\"jobtype\":\"M\",\"args\":[]}]"));
    cr_assert_str_eq(str_at(errs, "m0000003"), "No such batch b-gone");
    cr_assert_null(json_object_get(errs, "m0000004"));
    json_decref(errs);
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 1);
}

SERVER_TEST(open_commit_and_unknown_bids)
{
    char *bid = batch_new_cbs(C, CB("s0000001", "S", "q"), NULL, NULL);
    char *r = rbh_cmd(C, "BATCH OPEN %s", bid);
    cr_assert_str_eq(r, bid);
    free(r);
    cr_assert(rbh_expect(C, "-ERR No such batch non-existent-batch-id",
                         "BATCH OPEN non-existent-batch-id"));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    r = rbh_cmd(C, "BATCH OPEN %s", bid);
    cr_assert_str_eq(r, bid);
    free(r);
    /* the empty committed batch fired once, reopening and committing again did not re-fire */
    expect_status(C, bid, 0, 0, 0, "", "1");
    cr_assert_eq(queue_size(C, "q"), 1);
    free(bid);
}

SERVER_TEST(status_json_has_the_nine_keys_with_their_types)
{
    time_t before = time(NULL);
    char *parent = batch_new(C, "{\"success\":" CB("s0000001", "S", "q") "}");
    char def[256];
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"description\":\"kid\",\"complete\":"
             CB("c0000001", "C", "q") "}", parent);
    char *child = batch_new(C, def);
    json_t *v = status(C, parent);
    time_t after = time(NULL);
    static const char *const keys[] = {"bid", "parent_bid", "description", "created_at", "total",
                                       "pending", "failed", "complete_st", "success_st"};
    cr_assert_eq(json_object_size(v), 9);
    for (size_t i = 0; i < 9; i++)
        cr_assert_not_null(json_object_get(v, keys[i]), "no %s", keys[i]);
    cr_assert_str_eq(str_at(v, "bid"), parent);
    cr_assert(json_is_null(json_object_get(v, "parent_bid")), "top level: parent_bid null");
    cr_assert(json_is_null(json_object_get(v, "description")), "no description: null");
    cr_assert(json_is_integer(json_object_get(v, "total")));
    cr_assert(json_is_integer(json_object_get(v, "pending")));
    cr_assert(json_is_integer(json_object_get(v, "failed")));
    cr_assert_str_eq(str_at(v, "complete_st"), "");
    cr_assert_str_eq(str_at(v, "success_st"), "");
    struct tm tm = {0};
    const char *at = str_at(v, "created_at");
    const char *end = strptime(at, "%Y-%m-%dT%H:%M:%S", &tm);
    cr_assert(end && (*end == '.' || *end == 'Z'), "created_at '%s' is not RFC 3339", at);
    cr_assert_eq(at[strlen(at) - 1], 'Z');
    time_t t = timegm(&tm);
    cr_assert(t >= before - 1 && t <= after, "created_at %s outside the test", at);
    json_decref(v);
    v = status(C, child);
    cr_assert_str_eq(str_at(v, "parent_bid"), parent);
    cr_assert_str_eq(str_at(v, "description"), "kid");
    json_decref(v);
    free(parent);
    free(child);
}

/* ---- §6.4-8: faktory-rs tests/real/enterprise.rs ---- */

SERVER_TEST(rs_batch_of_jobs_can_be_initiated)
{
    char *bid = batch_new(C, "{\"description\":\"Image resizing workload\",\"complete\":"
                             CB("rs4-cb-01", "clean_up", "rs4cb") "}");
    push_member(C, "rs4-job-1", "rs4", bid);
    push_member(C, "rs4-job-2", "rs4", bid);
    push_member(C, "rs4-job-3", "rs4", bid);
    expect_status(C, bid, 3, 3, 0, "", "");
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, 3, 3, 0, "", "");
    fetch_ack(C, "rs4", "rs4-job-1");
    expect_status(C, bid, 3, 2, 0, "", "");
    fetch_ack(C, "rs4", "rs4-job-2");
    expect_status(C, bid, 3, 1, 0, "", "");
    cr_assert_eq(queue_size(C, "rs4cb"), 0);
    fetch_ack(C, "rs4", "rs4-job-3");
    expect_status(C, bid, 3, 0, 0, "1", ""); /* at once, no sleep */
    char *cb = fetch_callback(C, "rs4cb", "clean_up", bid, NULL);
    cr_assert_str_eq(cb, "rs4-cb-01");
    ack(C, cb);
    expect_status(C, bid, 3, 0, 0, "2", "");
    free(cb);
    free(bid);
}

SERVER_TEST(rs_callback_not_queued_unless_committed)
{
    char *bid = batch_new(C, "{\"success\":" CB("rs5-cb-01", "on_success", "rs5cb") "}");
    push_member(C, "rs5-job-1", "rs5", bid);
    push_member(C, "rs5-job-2", "rs5", bid);
    push_member(C, "rs5-job-3", "rs5", bid);
    fetch_ack(C, "rs5", "rs5-job-1");
    fetch_ack(C, "rs5", "rs5-job-2");
    fetch_ack(C, "rs5", "rs5-job-3");
    expect_status(C, bid, 3, 0, 0, "", "");
    cr_assert_eq(queue_size(C, "rs5cb"), 0);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, 3, 0, 0, "", "1");
    fetch_ack(C, "rs5cb", "rs5-cb-01");
    expect_status(C, bid, 3, 0, 0, "", "2");
    free(bid);
}

SERVER_TEST(rs_callback_queued_upon_commit_even_if_empty)
{
    char *bid = batch_new(C, "{\"success\":" CB("rs6-succ-1", "on_success", "rs6") ","
                             "\"complete\":" CB("rs6-comp-1", "on_complete", "rs6") "}");
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, 0, 0, 0, "1", "");
    fetch_ack(C, "rs6", "rs6-comp-1");
    expect_status(C, bid, 0, 0, 0, "2", "1");
    json_t *j = fetch(C, "rs6");
    cr_assert_str_eq(str_at(j, "jid"), "rs6-succ-1");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"rs6-succ-1\",\"errtype\":\"E\",\"message\":"
                                   "\"m\"}"));
    expect_status(C, bid, 0, 0, 0, "2", "1"); /* a failed callback stays "1" */
    free(bid);
}

SERVER_TEST(rs_batches_can_be_nested)
{
    char *parent = batch_new(C, "{\"success\":" CB("rs7-p-cb", "P", "rs7cb") "}");
    char def[256];
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"success\":" CB("rs7-c-cb", "C", "rs7cb")
             "}", parent);
    char *child = batch_new(C, def);
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"success\":" CB("rs7-g-cb", "G", "rs7cb")
             "}", child);
    char *grand = batch_new(C, def);
    push_member(C, "rs7-job-p-1", "rs7", parent);
    push_member(C, "rs7-job-c-1", "rs7", child);
    push_member(C, "rs7-job-c-2", "rs7", child);
    push_member(C, "rs7-job-g-1", "rs7", grand);
    expect_status(C, parent, 1, 1, 0, "", "");
    expect_status(C, child, 2, 2, 0, "", "");
    expect_status(C, grand, 1, 1, 0, "", "");
    json_t *v = status(C, grand);
    cr_assert_str_eq(str_at(v, "parent_bid"), child);
    json_decref(v);
    v = status(C, child);
    cr_assert_str_eq(str_at(v, "parent_bid"), parent);
    json_decref(v);
    v = status(C, parent);
    cr_assert(json_is_null(json_object_get(v, "parent_bid")));
    json_decref(v);
    /* run it to the end: grandchild, child, parent callbacks in that order */
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", parent));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", child));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", grand));
    fetch_ack(C, "rs7", "rs7-job-p-1");
    fetch_ack(C, "rs7", "rs7-job-c-1");
    fetch_ack(C, "rs7", "rs7-job-c-2");
    fetch_ack(C, "rs7", "rs7-job-g-1");
    expect_status(C, grand, 1, 0, 0, "", "1");
    expect_status(C, child, 2, 0, 0, "", "");
    cr_assert_eq(queue_size(C, "rs7cb"), 1);
    fetch_ack(C, "rs7cb", "rs7-g-cb");
    expect_status(C, child, 2, 0, 0, "", "1");
    cr_assert_eq(queue_size(C, "rs7cb"), 1);
    char *cb = fetch_callback(C, "rs7cb", "C", child, parent);
    ack(C, cb);
    free(cb);
    expect_status(C, parent, 1, 0, 0, "", "1");
    fetch_ack(C, "rs7cb", "rs7-p-cb");
    expect_status(C, parent, 1, 0, 0, "", "2");
    free(parent);
    free(child);
    free(grand);
}

SERVER_TEST(rs_batch_can_be_reopened_with_jobs_and_batches_added)
{
    /* 0: no such batch */
    cr_assert(rbh_expect(C, "-ERR No such batch non-existent-batch-id",
                         "BATCH OPEN non-existent-batch-id"));
    /* 1-2: a committed batch reopened from outside takes more jobs */
    char *bid = batch_new(C, "{\"success\":" CB("rs8-cb-01", "S", "rs8cb") "}");
    push_member(C, "rs8-job-1", "rs8", bid);
    push_member(C, "rs8-job-2", "rs8", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, 2, 2, 0, "", "");
    char *r = rbh_cmd(C, "BATCH OPEN %s", bid);
    cr_assert_str_eq(r, bid);
    free(r);
    push_member(C, "rs8-job-3", "rs8", bid);
    push_member(C, "rs8-job-4", "rs8", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, 4, 4, 0, "", "");
    /* 3: a nested batch added to the committed one */
    char def[256];
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"complete\":" CB("rs8-kid-cb", "K", "rs8cb")
             "}", bid);
    char *kid = batch_new(C, def);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", kid));
    /* 4: the empty child fired its complete callback; reopened, +2 jobs, it stays "1" */
    expect_status(C, kid, 0, 0, 0, "1", "");
    r = rbh_cmd(C, "BATCH OPEN %s", kid);
    cr_assert_str_eq(r, kid);
    free(r);
    push_member(C, "rs8-kid-1", "rs8", kid);
    push_member(C, "rs8-kid-2", "rs8", kid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", kid));
    expect_status(C, kid, 2, 2, 0, "1", "");
    expect_status(C, bid, 4, 4, 0, "", "");
    free(kid);
    free(bid);
}

/* ---- §6.9: the Go client's TestBatches ---- */

SERVER_TEST(go_test_batches_flow)
{
    char *b = batch_new(C, "{\"success\":" CB("go-succ-01", "OnSuccess", "TestBatches_Q") ","
                           "\"complete\":" CB("go-comp-01", "OnComplete", "TestBatches_Q") ","
                           "\"bid\":\"\",\"description\":\"Test batch\"}");
    char *r = rbh_cmd(C, "BATCH OPEN %s", b); /* open a batch not committed */
    cr_assert_str_eq(r, b);
    free(r);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", b));
    r = rbh_cmd(C, "BATCH OPEN %s", b); /* reopen from outside */
    cr_assert_str_eq(r, b);
    free(r);
    push_member(C, "go-job-01", "TestBatches_J", b);
    push_member(C, "go-job-02", "TestBatches_J", b);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", b));
    r = rbh_cmd(C, "BATCH OPEN %s", b);
    free(r);
    char def[512];
    snprintf(def, sizeof def, "{\"success\":" CB("go-nsucc-1", "OnNestedSuccess",
             "TestBatches_CallbacksQueue") ",\"complete\":" CB("go-ncomp-1", "OnNestedComplete",
             "TestBatches_CallbacksQueue") ",\"bid\":\"\",\"parent_bid\":\"%s\","
             "\"description\":\"nested\"}", b);
    char *nb = batch_new(C, def);
    push_member(C, "go-nest-01", "TestBatches_N", nb);
    push_member(C, "go-nest-02", "TestBatches_N", nb);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", nb));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", b));
    expect_status(C, nb, 2, 2, 0, "", "");
    fetch_ack(C, "TestBatches_N", "go-nest-01");
    fetch_ack(C, "TestBatches_N", "go-nest-02");
    expect_status(C, nb, 2, 0, 0, "1", "");
    char *cb = fetch_callback(C, "TestBatches_CallbacksQueue", "OnNestedComplete", nb, b);
    ack(C, cb);
    free(cb);
    expect_status(C, nb, 2, 0, 0, "2", "1");
    r = rbh_cmd(C, "BATCH OPEN %s", nb);
    cr_assert_str_eq(r, nb);
    free(r);
    push_member(C, "go-nest-03", "TestBatches_N", nb);
    push_member(C, "go-nest-04", "TestBatches_N", nb);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", nb));
    expect_status(C, nb, 4, 2, 0, "2", "1");
    free(nb);
    free(b);
}

/* ---- §6.10-11: faktory_worker_ruby test/batch_test.rb ---- */

SERVER_TEST(ruby_basic_definition)
{
    char *bid = batch_new(C, "{\"description\":\"Test batch\",\"success\":{\"jid\":"
                             "\"aaaaaaaaaaaaaaaaaaaaaaaa\",\"args\":[],\"queue\":\"default\","
                             "\"jobtype\":\"FooJob\"}}");
    push_member(C, "rb-member-1", "default", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    json_t *j = fetch(C, "default");
    cr_assert_str_eq(str_at(j, "custom.bid"), bid);
    ack(C, str_at(j, "jid"));
    json_decref(j);
    char *cb = fetch_callback(C, "default", "FooJob", bid, NULL);
    ack(C, cb);
    free(cb);
    free(bid);
}

SERVER_TEST(ruby_nested_definition)
{
    char *parent = batch_new(C, "{\"success\":{\"jid\":\"fooooooooooooooooooooooo\",\"args\":[],"
                                "\"queue\":\"default\",\"jobtype\":\"FooJob\"}}");
    char def[256];
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"success\":{\"jid\":"
             "\"baaaaaaaaaaaaaaaaaaaaaar\",\"args\":[],\"queue\":\"default\","
             "\"jobtype\":\"BarJob\"}}", parent);
    char *child = batch_new(C, def);
    push_member(C, "rb-parent-1", "default", parent);
    push_member(C, "rb-child-1", "default", child);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", child));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", parent));
    expect_status(C, parent, 1, 1, 0, "", "");
    expect_status(C, child, 1, 1, 0, "", "");
    /* pops: member, member (a child job that reopens its batch and adds one),
     * the added member, BarJob, and only after BarJob's ACK, FooJob */
    fetch_ack(C, "default", "rb-parent-1");
    json_t *j = fetch(C, "default");
    cr_assert_str_eq(str_at(j, "jid"), "rb-child-1");
    cr_assert_str_eq(str_at(j, "custom.bid"), child);
    char *r = rbh_cmd(C, "BATCH OPEN %s", child);
    cr_assert_str_eq(r, child);
    free(r);
    push_member(C, "rb-child-2", "default", child);
    ack(C, "rb-child-1");
    json_decref(j);
    expect_status(C, child, 2, 1, 0, "", "");
    expect_status(C, parent, 1, 0, 0, "", "");
    fetch_ack(C, "default", "rb-child-2");
    char *bar = fetch_callback(C, "default", "BarJob", child, parent);
    cr_assert_eq(queue_size(C, "default"), 0);
    expect_status(C, parent, 1, 0, 0, "", "");
    ack(C, bar);
    free(bar);
    char *foo = fetch_callback(C, "default", "FooJob", parent, NULL);
    ack(C, foo);
    free(foo);
    expect_status(C, parent, 1, 0, 0, "", "2");
    expect_status(C, child, 2, 0, 0, "", "2");
    free(parent);
    free(child);
}

/* ---- §6.12: faktory_worker_ruby examples/complex_batch.rb ---- */

SERVER_TEST(ruby_complex_batch_done_fires_last_and_once)
{
    /* Overall (success: Done) with child step1 (success: Step1Done); Step1Done,
     * while it runs, adds child step2 (success: Step2Done) to the parent it
     * finds through _pbid: Done waits for step2 */
    char *overall = batch_new(C, "{\"description\":\"Overall\",\"success\":"
                                 CB("cx-done-01", "Done", "cxcb") "}");
    char def[512];
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"success\":" CB("cx-s1done", "Step1Done",
             "cxcb") "}", overall);
    char *step1 = batch_new(C, def);
    push_member(C, "cx-step1-a", "cx", step1);
    push_member(C, "cx-step1-b", "cx", step1);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", step1));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", overall));
    fetch_ack(C, "cx", "cx-step1-a");
    fetch_ack(C, "cx", "cx-step1-b");
    json_t *cb = fetch(C, "cxcb");
    cr_assert_str_eq(str_at(cb, "jobtype"), "Step1Done");
    const char *pbid = str_at(cb, "custom._pbid");
    cr_assert_str_eq(pbid, overall);
    char *r = rbh_cmd(C, "BATCH OPEN %s", pbid);
    cr_assert_str_eq(r, overall);
    free(r);
    snprintf(def, sizeof def, "{\"parent_bid\":\"%s\",\"success\":" CB("cx-s2done", "Step2Done",
             "cxcb") "}", pbid);
    char *step2 = batch_new(C, def);
    push_member(C, "cx-step2-a", "cx", step2);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", step2));
    ack(C, "cx-s1done");
    json_decref(cb);
    expect_status(C, overall, 0, 0, 0, "", "");
    cr_assert_eq(queue_size(C, "cxcb"), 0);
    fetch_ack(C, "cx", "cx-step2-a");
    fetch_ack(C, "cxcb", "cx-s2done");
    expect_status(C, overall, 0, 0, 0, "", "1");
    fetch_ack(C, "cxcb", "cx-done-01");
    cr_assert_eq(queue_size(C, "cxcb"), 0);
    expect_status(C, overall, 0, 0, 0, "", "2");
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 3);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.open"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.stored"), 3);
    free(overall);
    free(step1);
    free(step2);
}

/* ---- §6.13: FAIL then ACK; the death callback ---- */

/* Puts a member waiting for its retry back in its queue. */
static void requeue(rbh_conn *c, const char *jid)
{
    cr_assert(rbh_expect(c, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\","
                                   "\"filter\":{\"jids\":[\"%s\"]}}", jid));
}

static void fail(rbh_conn *c, const char *jid)
{
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"m\"}",
                         jid));
}

SERVER_TEST(fail_then_ack_counts_once)
{
    char *bid = batch_new(C, "{\"success\":" CB("ff-succ-1", "S", "ffcb") ",\"complete\":"
                             CB("ff-comp-1", "C", "ffcb") "}");
    push_member(C, "ff-job-01", "ff", bid);
    push_member(C, "ff-job-02", "ff", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    fetch_ack(C, "ff", "ff-job-01");
    json_t *j = fetch(C, "ff");
    json_decref(j);
    fail(C, "ff-job-02");
    expect_status(C, bid, 2, 1, 1, "1", ""); /* complete: every member executed once */
    requeue(C, "ff-job-02");
    json_decref(fetch(C, "ff"));
    fail(C, "ff-job-02"); /* a second FAIL does not count twice */
    expect_status(C, bid, 2, 1, 1, "1", "");
    fetch_ack(C, "ffcb", "ff-comp-1");
    expect_status(C, bid, 2, 1, 1, "2", "");
    requeue(C, "ff-job-02");
    fetch_ack(C, "ff", "ff-job-02");
    expect_status(C, bid, 2, 0, 0, "2", "1");
    fetch_ack(C, "ffcb", "ff-succ-1");
    expect_status(C, bid, 2, 0, 0, "2", "2");
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 2);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.open"), 0);
    free(bid);
}

SERVER_TEST(a_member_that_dies_fires_death_once_and_never_success)
{
    char *bid = batch_new(C, "{\"success\":" CB("dd-succ-1", "S", "ddcb") ",\"complete\":"
                             CB("dd-comp-1", "C", "ddcb") ",\"death\":" CB("dd-death-1", "D",
                             "ddcb") "}");
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dd-job-01\",\"jobtype\":\"M\",\"args\":[],"
                                   "\"queue\":\"dd\",\"retry\":0,\"custom\":{\"bid\":\"%s\"}}",
                         bid));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"dd-job-02\",\"jobtype\":\"M\",\"args\":[],"
                                   "\"queue\":\"dd\",\"retry\":0,\"custom\":{\"bid\":\"%s\"}}",
                         bid));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    json_decref(fetch(C, "dd"));
    fail(C, "dd-job-01");
    json_decref(fetch(C, "dd"));
    fail(C, "dd-job-02");
    expect_status(C, bid, 2, 2, 2, "1", "");
    cr_assert_eq(queue_size(C, "ddcb"), 2); /* complete and death, once */
    /* death fired at the first death, complete at the second member's */
    char *d = fetch_callback(C, "ddcb", "D", bid, NULL);
    char *a = fetch_callback(C, "ddcb", "C", bid, NULL);
    ack(C, a);
    ack(C, d);
    expect_status(C, bid, 2, 2, 2, "2", "");
    cr_assert_eq(queue_size(C, "ddcb"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 2);
    free(a);
    free(d);
    free(bid);
}

/* ---- size and durability ---- */

#define BIG 1000

/* PUSHB of BIG members of bid into queue, 100 at a time. */
static void push_big(rbh_conn *c, const char *bid, const char *queue, const char *prefix)
{
    for (int k = 0; k < BIG; k += 100) {
        size_t cap = 100 * 200 + 16, n = 0;
        char *s = malloc(cap);
        n += (size_t)snprintf(s + n, cap - n, "[");
        for (int i = k; i < k + 100; i++)
            n += (size_t)snprintf(s + n, cap - n,
                                  "%s{\"jid\":\"%s-%06d\",\"jobtype\":\"M\",\"args\":[],"
                                  "\"queue\":\"%s\",\"custom\":{\"bid\":\"%s\"}}",
                                  i > k ? "," : "", prefix, i, queue, bid);
        snprintf(s + n, cap - n, "]");
        cr_assert(rbh_expect(c, "{}", "PUSHB %s", s));
        free(s);
    }
}

SERVER_TEST(a_batch_of_1000_fires_each_callback_exactly_once)
{
    char *bid = batch_new(C, "{\"success\":" CB("big-succ-1", "S", "bigcb") ",\"complete\":"
                             CB("big-comp-1", "C", "bigcb") "}");
    push_big(C, bid, "big", "big");
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    expect_status(C, bid, BIG, BIG, 0, "", "");
    for (int i = 0; i < BIG; i++) {
        json_t *j = rbh_json(rbh_cmd(C, "FETCH big"));
        cr_assert(json_is_object(j), "member %d not fetched", i);
        ack(C, str_at(j, "jid"));
        json_decref(j);
        if (i < BIG - 1 && i % 100 == 0)
            cr_assert_eq(queue_size(C, "bigcb"), 0);
    }
    expect_status(C, bid, BIG, 0, 0, "1", "");
    cr_assert_eq(queue_size(C, "bigcb"), 1);
    fetch_ack(C, "bigcb", "big-comp-1");
    cr_assert_eq(queue_size(C, "bigcb"), 1);
    fetch_ack(C, "bigcb", "big-succ-1");
    cr_assert_eq(queue_size(C, "bigcb"), 0);
    expect_status(C, bid, BIG, 0, 0, "2", "2");
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 2);
    free(bid);
}

/* Restarts S on its database: SIGTERM (graceful) or SIGKILL. */
static void restart(int sig)
{
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, sig);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

static void restart_between_member_ack_and_callback_ack(int sig)
{
    char *bid = batch_new(C, "{\"success\":" CB("rs-succ-1", "S", "rscb") ",\"complete\":"
                             CB("rs-comp-1", "C", "rscb") "}");
    push_member(C, "rs-job-01", "rsq", bid);
    push_member(C, "rs-job-02", "rsq", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    fetch_ack(C, "rsq", "rs-job-01");
    restart(sig);
    expect_status(C, bid, 2, 1, 0, "", "");
    fetch_ack(C, "rsq", "rs-job-02");
    expect_status(C, bid, 2, 0, 0, "1", "");
    restart(sig);
    expect_status(C, bid, 2, 0, 0, "1", "");
    cr_assert_eq(queue_size(C, "rscb"), 1);
    fetch_ack(C, "rscb", "rs-comp-1");
    expect_status(C, bid, 2, 0, 0, "2", "1");
    restart(sig);
    expect_status(C, bid, 2, 0, 0, "2", "1");
    cr_assert_eq(queue_size(C, "rscb"), 1);
    fetch_ack(C, "rscb", "rs-succ-1");
    restart(sig);
    expect_status(C, bid, 2, 0, 0, "2", "2");
    cr_assert_eq(queue_size(C, "rscb"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 2);
    free(bid);
}

SERVER_TEST(graceful_restart_keeps_batches_and_callbacks)
{
    restart_between_member_ack_and_callback_ack(SIGTERM);
}

SERVER_TEST(kill_9_between_last_ack_and_callback_ack_fires_once)
{
    restart_between_member_ack_and_callback_ack(SIGKILL);
}

/* kill -9 at random moments while two workers run a 1,000-job batch. */
static atomic_int acked;

static void *worker(void *arg)
{
    rbh_conn *c = rbh_connect(&S, arg);
    if (!c)
        return NULL;
    for (;;) {
        char *r = rbh_cmd(c, "FETCH kq");
        if (!r)
            break;
        json_t *j = rbh_json(r);
        const char *jid = json_string_value(json_object_get(j, "jid"));
        if (!jid) {
            json_decref(j);
            continue;
        }
        r = rbh_cmd(c, "ACK {\"jid\":\"%s\"}", jid);
        json_decref(j);
        if (!r)
            break;
        if (!strcmp(r, "+OK"))
            atomic_fetch_add(&acked, 1);
        free(r);
    }
    rbh_close(c);
    return NULL;
}

SERVER_TEST(kill_9_at_random_moments_fires_each_callback_once)
{
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "batch crash test seed %u\n", seed);
    srand(seed);
    char *bid = batch_new(C, "{\"success\":" CB("kk-succ-1", "S", "kcb") ",\"complete\":"
                             CB("kk-comp-1", "C", "kcb") "}");
    push_big(C, bid, "kq", "kk");
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    rbh_close(C);
    C = NULL;
    for (int round = 0; round < 8; round++) {
        if (round > 0)
            cr_assert_eq(rbh_launch(&S, NULL), 0, "round %d: no start (see %s)", round, S.log);
        pthread_t w1, w2;
        pthread_create(&w1, NULL, worker, "kw1");
        pthread_create(&w2, NULL, worker, "kw2");
        rbh_sleep_ms(10 + rand() % 120);
        rbh_kill(&S, SIGKILL);
        pthread_join(w1, NULL);
        pthread_join(w2, NULL);
    }
    cr_assert_eq(rbh_launch(&S, NULL), 0);
    C = rbh_connect(&S, NULL); /* no wid: ACKs jobs reserved before a kill */
    while (queue_size(C, "kq") > 0) {
        json_t *j = rbh_json(rbh_cmd(C, "FETCH kq"));
        if (json_is_object(j))
            ack(C, str_at(j, "jid"));
        json_decref(j);
    }
    for (int i = 0; i < BIG; i++) { /* those reserved when the server was killed */
        char jid[32];
        snprintf(jid, sizeof jid, "kk-%06d", i);
        ack(C, jid);
    }
    expect_status(C, bid, BIG, 0, 0, "1", "");
    cr_assert_eq(queue_size(C, "kcb"), 1);
    restart(SIGKILL);
    cr_assert_eq(queue_size(C, "kcb"), 1);
    fetch_ack(C, "kcb", "kk-comp-1");
    cr_assert_eq(queue_size(C, "kcb"), 1);
    fetch_ack(C, "kcb", "kk-succ-1");
    expect_status(C, bid, BIG, 0, 0, "2", "2");
    cr_assert_eq(queue_size(C, "kcb"), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.batches.callbacks"), 2);
    free(bid);
}

/* A batch never committed expires after [workflows] batch_uncommitted_ttl
 * (Faktory's 30 minutes by default; 1 s here): OPEN, STATUS and a member's
 * PUSH then answer No such batch. A committed one stays. */
SERVER_TEST(an_uncommitted_batch_expires_after_its_ttl)
{
    rbh_close(C);
    cr_assert_eq(rbh_stop(&S), 0);
    cr_assert_eq(rbh_start(&S, "[workflows]\nbatch_uncommitted_ttl = \"1s\"\n", NULL), 0);
    C = rbh_connect(&S, "w1");
    const char *cb = "{\"success\":{\"jid\":\"cb-ttl-0001\",\"jobtype\":\"cb\",\"args\":[]}}";
    char *open_bid = batch_new(C, cb);
    char *kept = batch_new(C, cb);
    char *member = job_text("member-ttl-0001", "m", "default", kept);
    cr_assert(rbh_expect(C, "+OK", "PUSH %s", member));
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", kept));
    rbh_sleep_ms(1500);
    char want[128];
    snprintf(want, sizeof want, "-ERR No such batch %s", open_bid);
    cr_assert(rbh_expect(C, want, "BATCH STATUS %s", open_bid));
    cr_assert(rbh_expect(C, want, "BATCH OPEN %s", open_bid));
    char *late = job_text("member-ttl-0002", "m", "default", open_bid);
    char *r = rbh_cmd(C, "PUSH %s", late);
    cr_assert(r && strstr(r, "No such batch"), "PUSH into an expired batch: %s", r ? r : "(closed)");
    free(r);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"member-ttl-0002\"}"));
    json_t *st = status(C, kept);
    cr_assert_eq(json_integer_value(json_object_get(st, "total")), 1);
    json_decref(st);
    free(late);
    free(member);
    free(kept);
    free(open_bid);
}

/* ---- seeing batches: BATCHES (a batch's page, the listing; GET
 * /api/batch/BID and /api/batches in test_http_api.c) ---- */

static json_t *batch_view(rbh_conn *c, const char *bid)
{
    json_t *v = rbh_json(rbh_cmd(c, "BATCHES {\"bid\":\"%s\"}", bid));
    cr_assert(json_is_object(v), "BATCHES {bid: %s} is not JSON", bid);
    return v;
}

/* Asserts member i of view v: jid, state and attempts. */
static void expect_member(json_t *v, size_t i, const char *jid, const char *state, long attempts)
{
    json_t *m = json_array_get(json_object_get(v, "members"), i);
    cr_assert_not_null(m, "no member %zu", i);
    cr_assert_str_eq(str_at(m, "jid"), jid);
    cr_assert_str_eq(str_at(m, "state"), state, "%s", jid);
    cr_assert_eq(json_integer_value(json_object_get(m, "attempts")), attempts, "%s", jid);
    cr_assert_str_eq(str_at(m, "jobtype"), "Member");
}

/* A callback entry of view v: kind, st, and whether its jid is set. */
static void expect_callback(json_t *v, size_t i, const char *kind, const char *st, bool has_jid)
{
    json_t *cb = json_array_get(json_object_get(v, "callbacks"), i);
    cr_assert_not_null(cb, "no callback %zu", i);
    cr_assert_str_eq(str_at(cb, "kind"), kind);
    cr_assert_str_eq(str_at(cb, "st"), st, "%s", kind);
    cr_assert_eq(json_is_string(json_object_get(cb, "jid")), has_jid, "%s's jid", kind);
}

SERVER_TEST(batches_shows_a_batch_with_its_members_callbacks_and_children)
{
    char *bid = batch_new_cbs(C, CB("bv-succ-1", "S", "bvcb"), CB("bv-comp-1", "C", "bvcb"), NULL);
    push_member(C, "bv-job-03", "bv", bid);
    push_member(C, "bv-job-01", "bv", bid);
    push_member(C, "bv-job-02", "bv", bid);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", bid));
    fetch_ack(C, "bv", "bv-job-03");
    json_decref(fetch(C, "bv"));
    fail(C, "bv-job-01");
    json_t *v = batch_view(C, bid);
    cr_assert_str_eq(str_at(v, "bid"), bid);
    cr_assert_str_eq(str_at(v, "description"), "test");
    cr_assert(json_is_null(json_object_get(v, "parent_bid")));
    cr_assert(json_is_true(json_object_get(v, "committed")));
    cr_assert(json_is_null(json_object_get(v, "finished_at")));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 3);
    cr_assert_eq(json_integer_value(json_object_get(v, "pending")), 2);
    cr_assert_eq(json_integer_value(json_object_get(v, "failed")), 1);
    cr_assert_str_eq(str_at(v, "complete_st"), "");
    /* the ACKed member is deleted; the others by jid, with their attempts */
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 2);
    expect_member(v, 0, "bv-job-01", "retries", 1);
    expect_member(v, 1, "bv-job-02", "enqueued", 0);
    cr_assert(json_is_false(json_object_get(v, "truncated")));
    cr_assert_eq(json_integer_value(json_object_get(v, "max_members")), 1000);
    cr_assert_eq(json_array_size(json_object_get(v, "callbacks")), 2);
    expect_callback(v, 0, "complete", "", false);
    expect_callback(v, 1, "success", "", false);
    cr_assert_eq(json_array_size(json_object_get(v, "children")), 0);
    json_decref(v);
    /* the last member runs: complete fires; its callback job is no member */
    fetch_ack(C, "bv", "bv-job-02");
    v = batch_view(C, bid);
    cr_assert_str_eq(str_at(v, "complete_st"), "1");
    expect_callback(v, 0, "complete", "1", true);
    cr_assert_str_eq(str_at(json_array_get(json_object_get(v, "callbacks"), 0), "jid"),
                     "bv-comp-1");
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 1);
    expect_member(v, 0, "bv-job-01", "retries", 1);
    json_decref(v);
    /* a child batch, added from then on, is listed */
    char *child = batch_new_cbs(C, CB("bv-kid-s1", "S", "bvcb"), NULL, bid);
    v = batch_view(C, bid);
    cr_assert_eq(json_array_size(json_object_get(v, "children")), 1);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "children"), 0)), child);
    json_decref(v);
    /* the child: its parent named, no member yet, not committed */
    v = batch_view(C, child);
    cr_assert_str_eq(str_at(v, "parent_bid"), bid);
    cr_assert(json_is_false(json_object_get(v, "committed")));
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 0);
    cr_assert_eq(json_array_size(json_object_get(v, "callbacks")), 1);
    expect_callback(v, 0, "success", "", false);
    json_decref(v);
    free(child);
    free(bid);
}

SERVER_TEST(batches_refuses_bad_arguments_and_answers_nil_for_an_unknown_bid)
{
    cr_assert(rbh_expect(C, "$-1", "BATCHES {\"bid\":\"b-nosuchbatch00\"}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: bid must be a non-empty string", "BATCHES {\"bid\":3}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: bid must be a non-empty string",
                         "BATCHES {\"bid\":\"\"}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: state must be open or all",
                         "BATCHES {\"state\":\"x\"}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: state must be open or all", "BATCHES {\"state\":1}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: offset must be >= 0 and limit from 0 to 1000",
                         "BATCHES {\"limit\":1001}"));
    cr_assert(rbh_expect(C, "-ERR BATCHES: offset must be >= 0 and limit from 0 to 1000",
                         "BATCHES {\"offset\":-1}"));
    char *r = rbh_cmd(C, "BATCHES");
    cr_assert(r && !strncmp(r, "-ERR", 4), "%s", r ? r : "(closed)");
    free(r);
    json_t *v = rbh_json(rbh_cmd(C, "BATCHES {}"));
    cr_assert_str_eq(str_at(v, "state"), "open");
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 0);
    cr_assert_eq(json_integer_value(json_object_get(v, "limit")), 50);
    cr_assert_eq(json_array_size(json_object_get(v, "batches")), 0);
    json_decref(v);
}

/* The bids of a listing's page, in order. */
static json_t *listing(rbh_conn *c, const char *arg, long total)
{
    json_t *v = rbh_json(rbh_cmd(c, "BATCHES %s", arg));
    cr_assert(json_is_object(v), "BATCHES %s", arg);
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), total, "BATCHES %s", arg);
    json_t *bids = json_array();
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(v, "batches"), i, b)
        json_array_append_new(bids, json_string(str_at(b, "bid")));
    json_decref(v);
    return bids;
}

SERVER_TEST(batches_lists_open_batches_first_then_finished_ones_paged)
{
    char *done = batch_new_cbs(C, CB("bl-succ-1", "S", "blcb"), NULL, NULL);
    push_member(C, "bl-job-01", "bl", done);
    cr_assert(rbh_expect(C, "+OK", "BATCH COMMIT %s", done));
    fetch_ack(C, "bl", "bl-job-01");
    fetch_ack(C, "blcb", "bl-succ-1"); /* success ACKed: finished */
    char *a = batch_new_cbs(C, CB("bl-succ-2", "S", "blcb"), NULL, NULL);
    char *b = batch_new_cbs(C, CB("bl-succ-3", "S", "blcb"), NULL, NULL);
    json_t *open = listing(C, "{\"state\":\"open\"}", 2);
    cr_assert_eq(json_array_size(open), 2);
    json_t *all = listing(C, "{\"state\":\"all\"}", 3);
    cr_assert_eq(json_array_size(all), 3);
    cr_assert_str_eq(json_string_value(json_array_get(all, 2)), done, "finished ones last");
    for (size_t i = 0; i < 2; i++) {
        const char *x = json_string_value(json_array_get(open, i));
        cr_assert(!strcmp(x, a) || !strcmp(x, b), "%s is open", x);
        cr_assert_str_eq(json_string_value(json_array_get(all, i)), x, "same order");
    }
    /* paging: [offset, offset + limit) of the same order */
    json_t *page = listing(C, "{\"state\":\"all\",\"offset\":1,\"limit\":1}", 3);
    cr_assert_eq(json_array_size(page), 1);
    cr_assert_str_eq(json_string_value(json_array_get(page, 0)),
                     json_string_value(json_array_get(all, 1)));
    json_decref(page);
    page = listing(C, "{\"state\":\"all\",\"offset\":3}", 3);
    cr_assert_eq(json_array_size(page), 0);
    json_decref(page);
    /* an entry: STATUS's fields and finished_at */
    json_t *v = rbh_json(rbh_cmd(C, "BATCHES {\"state\":\"all\",\"offset\":2,\"limit\":1}"));
    json_t *e = json_array_get(json_object_get(v, "batches"), 0);
    cr_assert_str_eq(str_at(e, "bid"), done);
    cr_assert(json_is_string(json_object_get(e, "finished_at")));
    cr_assert_str_eq(str_at(e, "success_st"), "2");
    cr_assert_eq(json_integer_value(json_object_get(e, "total")), 1);
    cr_assert_eq(json_integer_value(json_object_get(e, "pending")), 0);
    json_decref(v);
    json_decref(open);
    json_decref(all);
    free(a);
    free(b);
    free(done);
}

SERVER_TEST(batches_page_finds_members_pushed_before_and_after_a_restart)
{
    char *bid = batch_new_cbs(C, CB("br-succ-1", "S", "brcb"), NULL, NULL);
    push_member(C, "br-job-02", "br", bid);
    push_member(C, "br-job-01", "br", bid);
    json_t *v = batch_view(C, bid); /* the first read: members found by one pass */
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 2);
    json_decref(v);
    push_member(C, "br-job-03", "br", bid); /* then kept up by PUSH */
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"br-plain-1\",\"jobtype\":\"P\",\"args\":[],"
                                   "\"queue\":\"br\"}"));
    fetch_ack(C, "br", "br-job-02");
    v = batch_view(C, bid);
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 2);
    expect_member(v, 0, "br-job-01", "enqueued", 0);
    expect_member(v, 1, "br-job-03", "enqueued", 0);
    json_decref(v);
    restart(SIGKILL);
    push_member(C, "br-job-04", "br", bid);
    v = batch_view(C, bid);
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 3);
    expect_member(v, 0, "br-job-01", "enqueued", 0);
    expect_member(v, 1, "br-job-03", "enqueued", 0);
    expect_member(v, 2, "br-job-04", "enqueued", 0);
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 4);
    json_decref(v);
    free(bid);
}

SERVER_TEST(batches_page_lists_at_most_1000_members)
{
    char *bid = batch_new_cbs(C, CB("bt-succ-1", "S", "btcb"), NULL, NULL);
    push_big(C, bid, "btbig", "btm");
    push_member(C, "btm-zzzzzz", "btbig", bid);
    json_t *v = batch_view(C, bid);
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), BIG + 1);
    cr_assert_eq(json_array_size(json_object_get(v, "members")), 1000);
    cr_assert(json_is_true(json_object_get(v, "truncated")));
    json_t *ms = json_object_get(v, "members");
    cr_assert_str_eq(str_at(json_array_get(ms, 0), "jid"), "btm-000000");
    cr_assert_str_eq(str_at(json_array_get(ms, 999), "jid"), "btm-000999");
    json_decref(v);
    free(bid);
}
