/* Distributed mode does not apply group limits or queue rates yet
 * (docs/configuration.md "Groups"): a node configured with any of them
 * refuses to start, saying so, rather than ignoring them; one with groups
 * that set no limit starts. */
#include <criterion/criterion.h>

#define RBH_PG 1
#include "harness.h"

static bool log_says(const rbh_server *s, const char *what)
{
    FILE *f = fopen(s->log, "r");
    cr_assert_not_null(f);
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

Test(pg_flow_refused, limits_refuse_to_start, .timeout = 60)
{
    static const char *const configs[] = {
        "[groups.q]\nconcurrency = 2\n",
        "[groups.\"*\"]\nrate = 10\nperiod = \"1m\"\n",
        "[throttles.q]\nconcurrency = 3\nrate = 5\nperiod = 1\n",
    };
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        rbh_server s;
        cr_assert_neq(rbh_start(&s, configs[i], NULL), 0, "started with %s", configs[i]);
        cr_assert(log_says(&s, "group limits and queue rates ([groups] concurrency or rate, "
                               "[throttles] rate) are not supported in distributed mode yet"),
                  "config %zu: the log does not say why (see %s)", i, s.log);
        rbh_stop(&s);
    }
    rbh_server s;
    cr_assert_eq(rbh_start(&s, "[groups.q]\nconcurrency = 0\n", NULL), 0,
                 "a [groups] table setting no limit refused (see %s)", s.log);
    cr_assert_eq(rbh_stop(&s), 0);
}

/* GROUP and GROUPS are refused, before their argument is read, while
 * distributed mode keeps no groups (engine/flow.h's capability: the
 * backend has no group hook). */
Test(pg_flow_refused, group_commands_refused, .timeout = 60)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0, "server did not start (see %s)", s.log);
    rbh_conn *c = rbh_connect(&s, "w0");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "-ERR GROUP: groups are not supported in distributed mode yet",
                         "GROUP SET q g {\"concurrency\": 1}"));
    cr_assert(rbh_expect(c, "-ERR GROUP: groups are not supported in distributed mode yet",
                         "GROUP PAUSE q g 60 upstream"));
    cr_assert(rbh_expect(c, "-ERR GROUPS: groups are not supported in distributed mode yet",
                         "GROUPS"));
    rbh_close(c);
    cr_assert_eq(rbh_stop(&s), 0);
}
