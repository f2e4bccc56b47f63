/* Group limits across nodes (issue 30, docs/distributed.md "Groups and
 * limits"): two `rebound serve` nodes on one schema with [groups]
 * concurrency 2. A node killed with SIGKILL while its workers hold a
 * group's 2 slots: the other node's FETCH gets another group's job but
 * none of that group's until the dead node's leases end, and then it does
 * (the reaper frees a slot). The 16 workers on two nodes that never exceed
 * a group's concurrency are test_server_group_limits.c's case, run on two
 * nodes by its twin test_pg_server_group_limits.c. */
#include <criterion/criterion.h>

#define RBH_PG 1
#include "common/buf.h"
#include "common/timeutil.h"
#include "harness.h"

#define CONFIG "[groups.lim]\nconcurrency = 2\n"

static rbh_server node[2];

/* Starts node 0 with CONFIG and node 1 on node 0's schema. */
static void start_nodes(void)
{
    cr_assert_eq(rbh_start(&node[0], CONFIG, NULL), 0, "node 0 did not start (see %s)",
                 node[0].log);
    rbh_launch_second(&node[1], &node[0], CONFIG);
}

static void stop_nodes(void)
{
    for (int i = 1; i >= 0; i--)
        rbh_stop(&node[i]);
}

TestSuite(pg_groups_nodes, .init = start_nodes, .fini = stop_nodes, .timeout = 180);

/* PUSHB of n jobs "PREFIX-iiiiii" into queue lim, group g, reserve_for secs. */
static void push_many(rbh_conn *c, const char *prefix, const char *g, int n, int secs)
{
    rb_buf line = RB_BUF_INIT;
    rb_buf_adds(&line, "PUSHB [");
    for (int i = 0; i < n; i++)
        rb_buf_printf(&line,
                      "%s{\"jid\":\"%s-%06d\",\"jobtype\":\"T\",\"queue\":\"lim\",\"args\":[],"
                      "\"reserve_for\":%d,\"custom\":{\"group\":\"%s\"}}",
                      i ? "," : "", prefix, i, secs, g);
    rb_buf_addc(&line, ']');
    char *r = rbh_cmd(c, "%s", rb_buf_str(&line));
    cr_assert(r && !strcmp(r, "{}"), "PUSHB answered '%.200s'", r ? r : "(closed)");
    free(r);
    rb_buf_release(&line);
}

/* Node 0's workers hold group a's 2 slots (leases of 6 s) when node 0 is
 * killed with SIGKILL: on node 1 a FETCH gets group b's job at once but
 * none of a's while those leases last; a FETCH on node 1 gets a's next
 * job once the first of them ends (the reaper fails it: its slot comes
 * back), not before. */
Test(pg_groups_nodes, a_dead_nodes_slots_come_back_after_the_lease)
{
    enum { LEASE_S = 6 };
    rbh_conn *c = rbh_connect(&node[1], "w1");
    cr_assert_not_null(c);
    push_many(c, "a", "a", 4, LEASE_S);
    rbh_conn *a = rbh_connect(&node[0], "w0");
    cr_assert_not_null(a);
    char *h1 = rbh_fetch_jid(a, "lim"), *h2 = rbh_fetch_jid(a, "lim");
    cr_assert_str_eq(h1, "a-000000");
    cr_assert_str_eq(h2, "a-000001");
    int64_t e1 = rbh_lease_end_ms(c, h1), e2 = rbh_lease_end_ms(c, h2);
    cr_assert(e1 > 0 && e2 > 0, "a's jobs are not working");
    int64_t first_end = e1 < e2 ? e1 : e2;
    rbh_close(a);
    rbh_kill(&node[0], SIGKILL);
    push_many(c, "b", "b", 1, 600);
    char *jid = rbh_fetch_jid(c, "lim"); /* a is at its limit: b's job at once */
    cr_assert_str_eq(jid, "b-000000");
    free(jid);
    cr_assert(rbh_expect(c, "+OK", "ACK {\"jid\":\"b-000000\"}"));
    /* while the dead node's leases last, a's jobs wait: FETCHes answer null */
    int nulls = 0;
    while (rb_now_ms() < first_end - 2500) {
        char *r = rbh_cmd(c, "FETCH lim");
        cr_assert(r && !strcmp(r, "$-1"), "got %s while the dead node held a's slots", r);
        free(r);
        nulls++;
    }
    /* then one of a's jobs, once a lease ends (not before) */
    char *next = NULL;
    for (int i = 0; i < 10 && !next; i++)
        next = rbh_fetch_jid(c, "lim");
    int64_t got_at = rb_now_ms();
    cr_assert_not_null(next, "a's slots never came back");
    cr_assert(!strcmp(next, "a-000002") || !strcmp(next, "a-000003") || !strcmp(next, h1) ||
                  !strcmp(next, h2),
              "got %s", next);
    cr_assert_geq(got_at, first_end, "a's job %s came %lld ms before the first lease ended",
                  next, (long long)(first_end - got_at));
    cr_assert_geq(nulls, 1, "no FETCH was tried while the leases lasted (a weak test)");
    printf("pg_groups_nodes: the dead node's slot came back %lld ms after its lease ended\n",
           (long long)(got_at - first_end));
    free(next);
    free(h1);
    free(h2);
    rbh_close(c);
}
