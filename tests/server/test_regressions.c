/* Regressions found by the bad-input table and the fuzzers, one test each. */
#include <criterion/criterion.h>

#include "harness.h"

static rbh_server S;

static void cleanup(void)
{
    if (S.pid > 0)
        rbh_kill(&S, SIGKILL); /* a failed assertion left it running */
}

Test(empty_jid, each_command_gets_exactly_one_reply, .timeout = 30, .fini = cleanup)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert_not_null(c);
    const char *verbs[] = {"ACK", "FAIL", "SNOOZE", "EXTEND", "JOB"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        char want[80];
        snprintf(want, sizeof want, "-ERR %s: jid must be a non-empty string", verbs[i]);
        cr_assert(rbh_expect(c, want, "%s {\"jid\":\"\"}", verbs[i]));
        /* the next command must get its own reply, not a leftover */
        cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"nothing-here\"}"), "after %s", verbs[i]);
    }
    rbh_close(c);
    cr_assert_eq(rbh_stop(&S), 0);
}

/* FAIL with a numeric retry_after past 2^63 (1e20): once an undefined
 * float-to-integer cast; now whole seconds, a server-requested delay capped
 * by the policy like the same value written as a string. */
Test(retry_after, huge_number_is_a_capped_server_request, .timeout = 30, .fini = cleanup)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert_not_null(c);
    const char *forms[] = {"1e20", "\"100000000000000000000\"", "1e15"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "huge-retry-after-%zu", i);
        cr_assert(rbh_expect(c, "+OK",
                             "PUSH {\"jid\":\"%s\",\"jobtype\":\"t\",\"args\":[],"
                             "\"queue\":\"ra\",\"retry_policy\":\"ftl:3 1s 1m\"}",
                             jid));
        json_t *job = rbh_json(rbh_cmd(c, "FETCH ra"));
        cr_assert_str_eq(json_string_value(json_object_get(job, "jid")), jid);
        json_decref(job);
        cr_assert(rbh_expect(c, "+OK",
                             "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"retry_after\":%s}", jid,
                             forms[i]));
        json_t *info = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jid));
        json_t *h = rbh_get(info, "history.0");
        cr_assert_not_null(h, "no history for %s", forms[i]);
        cr_assert_str_eq(json_string_value(json_object_get(h, "source")), "server-requested",
                         "retry_after %s", forms[i]);
        /* FTL caps a server request at its max backoff (1m) */
        cr_assert_eq(json_integer_value(json_object_get(h, "delay_ms")), 60000, "retry_after %s",
                     forms[i]);
        json_decref(info);
    }
    rbh_close(c);
    cr_assert_eq(rbh_stop(&S), 0);
}

/* QUEUE PAUSE with a name past the queue-name limit: once stored truncated
 * as "paused:<prefix>", so a restart paused another queue. Now refused. */
Test(queue, overlong_name_is_refused_and_nothing_paused, .timeout = 30, .fini = cleanup)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert_not_null(c);
    char name[300];
    memset(name, 'q', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char want[128];
    snprintf(want, sizeof want, "-ERR QUEUE: queue name '%.40s...' is longer than 200 bytes",
             name);
    cr_assert(rbh_expect(c, want, "QUEUE PAUSE %s", name));
    /* a valid name and '*' still work, and the error changed nothing */
    cr_assert(rbh_expect(c, "+OK", "QUEUE PAUSE %.200s", name));
    cr_assert(rbh_expect(c, "+OK", "QUEUE RESUME *"));
    rbh_close(c);
    cr_assert_eq(rbh_stop(&S), 0);
}

/* Reads answered from memory (JOB, JOBS) complete before their handler
 * returns; the connection's loop then goes on to the next line, rather
 * than the completion starting another loop one level deeper on the stack
 * per pipelined command. Tens of thousands of reads in one write are all
 * answered, in order. */
Test(pipelining, many_reads_in_one_write_answer_in_order, .timeout = 60, .fini = cleanup)
{
    cr_assert_eq(rbh_start(&S, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&S, NULL);
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"pipelined-1\",\"jobtype\":\"t\",\"args\":[]}"));
    enum { N = 60000 };
    static const char miss[] = "JOB {\"jid\":\"nothing-here\"}\r\n";
    static const char hit[] = "JOBS {\"state\":\"enqueued\",\"limit\":1}\r\n";
    size_t cap = N * sizeof hit, len = 0;
    char *all = malloc(cap);
    for (int i = 0; i < N; i++) {
        const char *line = i % 1000 == 999 ? hit : miss;
        size_t n = strlen(line);
        memcpy(all + len, line, n);
        len += n;
    }
    cr_assert_eq(rbh_send(c, all, len), 0);
    free(all);
    for (int i = 0; i < N; i++) {
        char *r = rbh_reply(c);
        cr_assert_not_null(r, "no reply %d: the server is gone", i);
        if (i % 1000 == 999)
            cr_assert(strstr(r, "\"pipelined-1\""), "reply %d: %s", i, r);
        else
            cr_assert_str_eq(r, "$-1", "reply %d", i);
        free(r);
    }
    cr_assert(rbh_expect(c, "+OK", "QUEUE RESUME *"));
    rbh_close(c);
    cr_assert_eq(rbh_stop(&S), 0);
}
