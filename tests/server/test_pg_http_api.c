/* tests/server/test_http_api.c in distributed mode: the HTTP API of a node
 * whose jobs live in a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_http_api.c"

/* /metrics in distributed mode: queue sizes and jobs by state from the
 * database, counters from this node's commands. */
HTTP_TEST(metrics_read_the_database_and_count_this_nodes_commands)
{
    push("jobid-m1", "Mail", "mq");
    push("jobid-m2", "Mail", "mq");
    json_t *j = rbh_json(rbh_cmd(C, "FETCH mq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "jobid-m1");
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"jobid-m1\"}"));
    rbh_resp *r = expect(200, "GET", "/metrics", NULL);
    const char *want[] = {
        "rebound_queue_size{queue=\"mq\"} 1\n",
        "rebound_queue_paused{queue=\"mq\"} 0\n",
        "rebound_jobs{state=\"enqueued\"} 1\n",
        "rebound_jobs{state=\"working\"} 0\n",
        "rebound_jobs_pushed_total{queue=\"mq\",jobtype=\"Mail\"} 2\n",
        "rebound_jobs_processed_total{queue=\"unknown\",jobtype=\"unknown\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r->body, want[i]), "/metrics lacks %s in:\n%s", want[i], r->body);
    rbh_resp_free(r);
}
