/* The [groups] table (config/groups.c; docs/configuration.md "Groups"):
 * [groups.QUEUE] and [groups."*"] read, resolved field by field with a
 * group's override, and every mistake names the file, line, key and rule. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "config/config.h"
#include "config_helpers.h"

Test(config_groups, tables_and_resolution, .init = in_tmpdir)
{
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(load(&cfg,
                      "[groups.\"*\"]\nconcurrency = 5\n"
                      "[groups.emails]\nconcurrency = 2\nrate = 100\nperiod = \"1m\"\nburst = 10\n"
                      "[groups]\nsms = { rate = 1, period = 1 }\n",
                      &err),
                 0, "%s", rb_err_msg(&err));
    cr_assert_eq(cfg.n_groups, 3);
    cr_assert(rb_config_has_flow_limits(&cfg));
    const rb_flow_override *e = rb_config_groups_of(&cfg, "emails");
    cr_assert(e && e->v.concurrency == 2 && e->v.rate == 100 && e->v.period_ms == 60000 &&
              e->v.burst == 10);
    cr_assert_null(rb_config_groups_of(&cfg, "other"));

    rb_flow_limits l;
    rb_flow_from from[RB_FLOW_NFIELDS];
    rb_config_group_limits(&cfg, "emails", NULL, &l, from);
    cr_assert(l.concurrency == 2 && l.rate == 100);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "queue");
    rb_config_group_limits(&cfg, "sms", NULL, &l, from);
    cr_assert(l.concurrency == 5 && l.rate == 1 && l.period_ms == 1000 && l.burst == 0);
    cr_assert_str_eq(rb_flow_from_name(from[RB_FLOW_CONCURRENCY]), "default");
    rb_config_group_limits(&cfg, "other", NULL, &l, from);
    cr_assert(l.concurrency == 5 && l.rate == 0);
    rb_flow_override over = {.set = 1, .v = {.concurrency = 0}};
    rb_config_group_limits(&cfg, "emails", &over, &l, from);
    cr_assert(l.concurrency == 0 && l.rate == 100, "an override's 0 lifts the inherited limit");

    json_t *j = rb_config_to_json(&cfg);
    json_t *g = json_object_get(json_object_get(j, "groups"), "emails");
    cr_assert_eq(json_integer_value(json_object_get(g, "period")), 60);
    cr_assert_str_eq(json_string_value(json_object_get(g, "from")), "base file");
    json_decref(j);
    rb_buf d = RB_BUF_INIT;
    rb_config_describe(&cfg, &d);
    cr_assert(strstr(rb_buf_str(&d), "[groups.\"emails\"]  # base file\n"), "%s", rb_buf_str(&d));
    rb_buf_release(&d);
    rb_config_release(&cfg);

    /* no limit set: nothing a backend must apply */
    cr_assert_eq(load(&cfg, "[groups.q]\nconcurrency = 0\n", &err), 0, "%s", rb_err_msg(&err));
    cr_assert_not(rb_config_has_flow_limits(&cfg));
    rb_config_release(&cfg);
    cr_assert_eq(load(&cfg, "[server]\n", &err), 0);
    cr_assert_eq(cfg.n_groups, 0);
    cr_assert_not(rb_config_has_flow_limits(&cfg));
    rb_config_release(&cfg);
}

Test(config_groups, mistakes_name_file_line_key_and_rule, .init = in_tmpdir)
{
    static const char *const cases[][2] = {
        {"[groups.emails]\nrate = -3\nperiod = 60\n",
         "c.toml:2: key 'groups.emails.rate': must be an integer from 0 to 1000000 (0: no "
         "limit), got -3"},
        {"[groups.emails]\nconcurrency = 1000001\n",
         "c.toml:2: key 'groups.emails.concurrency': must be an integer from 0 to 1000000 (0: "
         "no limit), got 1000001"},
        {"[groups.emails]\nconcurrency = \"2\"\n",
         "c.toml:2: key 'groups.emails.concurrency': must be an integer from 0 to 1000000 (0: "
         "no limit), got '2'"},
        {"[groups.emails]\nrate = 10\n",
         "c.toml:1: key 'groups.emails': rate needs a period (\"1s\" to \"7d\")"},
        {"[groups.emails]\nrate = 10\nperiod = \"8d\"\n",
         "c.toml:3: key 'groups.emails.period': must be a duration from \"1s\" to \"7d\" (or "
         "seconds), got '8d'"},
        {"[groups.emails]\nconcurency = 2\n",
         "c.toml:2: key 'groups.emails.concurency': unknown key (did you mean 'concurrency'?)"},
        {"[groups]\nemails = 4\n",
         "c.toml:2: key 'groups.emails': must be a table ([groups.emails] or emails = "
         "{concurrency = N}), got integer"},
        {"[groups.\"a b\"]\nconcurrency = 1\n",
         "c.toml:1: key 'groups.a b': a queue name must be a non-empty string without spaces "
         "(or \"*\": every queue)"},
        {"groups = 1\n", "c.toml:1: key 'groups': must be a table ([groups]), got integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rb_config cfg;
        rb_err err = {0};
        cr_expect_eq(load(&cfg, cases[i][0], &err), RB_EINVAL, "case %zu", i);
        cr_expect_str_eq(err.msg, cases[i][1], "case %zu", i);
        cr_expect_eq(cfg.n_groups, 0, "case %zu: defaults after failure", i);
        rb_config_release(&cfg);
    }
}
