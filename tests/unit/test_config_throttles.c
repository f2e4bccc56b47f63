/* The [throttles] table (config/throttles.c; docs/configuration.md,
 * "Throttles"): Faktory's inline form and the [throttles.QUEUE] form read
 * alike, and every mistake names the file, line, key and rule. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "config/config.h"
#include "config_helpers.h"
#include "engine/throttle.h"

Test(config_throttles, both_forms_read_alike, .init = in_tmpdir)
{
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(load(&cfg,
                      "[throttles]\nimg = { concurrency = 4, timeout = 60 }\n"
                      "\"bulk-export\" = { concurrency = 1 }\n"
                      "[throttles.reports]\nconcurrency = 2\ntimeout = \"5m\"\n",
                      &err),
                 0, "%s", rb_err_msg(&err));
    cr_assert_eq(cfg.n_throttles, 3);
    const rb_throttle *t = rb_config_throttle(&cfg, "img");
    cr_assert(t && t->concurrency == 4 && t->timeout_s == 60);
    t = rb_config_throttle(&cfg, "bulk-export");
    cr_assert(t && t->concurrency == 1 && t->timeout_s == 0);
    t = rb_config_throttle(&cfg, "reports");
    cr_assert(t && t->concurrency == 2 && t->timeout_s == 300);
    cr_assert_null(rb_config_throttle(&cfg, "other"));
    json_t *j = rb_config_to_json(&cfg);
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(j, "throttles"), "img"), "concurrency")),
                 4);
    json_decref(j);
    rb_config_release(&cfg);
    /* a rate beside or instead of concurrency */
    cr_assert_eq(load(&cfg,
                      "[throttles.mail]\nrate = 100\nperiod = \"1m\"\nburst = 10\n"
                      "[throttles.sms]\nconcurrency = 3\nrate = 5\nperiod = 1\n",
                      &err),
                 0, "%s", rb_err_msg(&err));
    t = rb_config_throttle(&cfg, "mail");
    cr_assert(t && t->concurrency == 0 && t->rate == 100 && t->period_ms == 60000 && t->burst == 10);
    t = rb_config_throttle(&cfg, "sms");
    cr_assert(t && t->concurrency == 3 && t->rate == 5 && t->period_ms == 1000 && t->burst == 0);
    cr_assert(rb_config_has_flow_limits(&cfg));
    j = rb_config_to_json(&cfg);
    json_t *m = json_object_get(json_object_get(j, "throttles"), "mail");
    cr_assert_eq(json_integer_value(json_object_get(m, "rate")), 100);
    cr_assert_eq(json_integer_value(json_object_get(m, "period")), 60);
    json_decref(j);
    rb_config_release(&cfg);
    /* no [throttles]: none */
    cr_assert_eq(load(&cfg, "[server]\n", &err), 0);
    cr_assert_eq(cfg.n_throttles, 0);
    rb_config_release(&cfg);
}

Test(config_throttles, mistakes_name_file_line_key_and_rule, .init = in_tmpdir)
{
    static const char *const cases[][2] = {
        {"[throttles.t]\nconcurrency = 0\n",
         "c.toml:2: key 'throttles.t.concurrency': must be an integer from 1 to 1000000, got 0"},
        {"[throttles.t]\nconcurrency = \"4\"\n",
         "c.toml:2: key 'throttles.t.concurrency': must be an integer from 1 to 1000000, got "
         "string"},
        {"[throttles.t]\ntimeout = 5\n",
         "c.toml:1: key 'throttles.t': concurrency or rate is required (an integer from 1 to "
         "1000000)"},
        {"[throttles.t]\nconcurrency = 1\ntimeout = \"x\"\n",
         "c.toml:3: key 'throttles.t.timeout': must be a duration from 1s to 7d (\"90s\", \"30m\", "
         "or whole seconds)"},
        {"[throttles.t]\nconcurrency = 1\ntimeout = 0\n",
         "c.toml:3: key 'throttles.t.timeout': must be a duration from 1s to 7d (\"90s\", \"30m\", "
         "or whole seconds)"},
        {"[throttles.t]\nconcurrency = 1\nworker = 2\n",
         "c.toml:3: key 'throttles.t.worker': per-worker throttles are not supported (a "
         "throttle takes concurrency, timeout, rate, period and burst)"},
        {"[throttles.t]\nconcurrency = 1\nrate = 2\n",
         "c.toml:1: key 'throttles.t': rate needs a period (\"1s\" to \"7d\")"},
        {"[throttles.t]\nrate = -3\nperiod = \"1m\"\n",
         "c.toml:2: key 'throttles.t.rate': must be an integer from 0 to 1000000 (0: no limit), "
         "got -3"},
        {"[throttles.t]\nrate = 0\n",
         "c.toml:1: key 'throttles.t': concurrency or rate is required (an integer from 1 to "
         "1000000)"},
        {"[throttles.t]\nrate = 5\nperiod = \"0.5s\"\n",
         "c.toml:3: key 'throttles.t.period': must be a duration from \"1s\" to \"7d\" (or "
         "seconds), got '0.5s'"},
        {"[throttles.t]\nrate = 5\nperiod = 60\nburst = 1.5\n",
         "c.toml:4: key 'throttles.t.burst': must be an integer from 0 to 1000000, got 1.5"},
        {"[throttles.t]\nrate = 5\nperiode = 60\n",
         "c.toml:3: key 'throttles.t.periode': unknown key (did you mean 'period'?)"},
        {"[throttles.t]\nconcurency = 1\n",
         "c.toml:2: key 'throttles.t.concurency': unknown key (did you mean 'concurrency'?)"},
        {"[throttles]\nt = 4\n",
         "c.toml:2: key 'throttles.t': must be a table ([throttles.t] or t = {concurrency = N}), "
         "got integer"},
        {"throttles = 4\n",
         "c.toml:1: key 'throttles': must be a table ([throttles]), got integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rb_config cfg;
        rb_err err = {0};
        cr_expect_eq(load(&cfg, cases[i][0], &err), RB_EINVAL, "case %zu", i);
        cr_expect_str_eq(err.msg, cases[i][1], "case %zu", i);
        cr_expect_eq(cfg.n_throttles, 0, "case %zu: defaults after failure", i);
        rb_config_release(&cfg);
    }
}

/* The engine's slot rule (engine/throttle.h), both backends' one count: a
 * working job holds its slot until it leaves working, or for timeout
 * seconds from its fetch; a fetch read back from a lease is its end minus
 * reserve_for. */
Test(config_throttles, a_slot_is_held_until_its_timeout)
{
    cr_assert(rb_throttle_holds(1000, 0, INT64_MAX - 1));
    cr_assert_eq(rb_throttle_frees_at(1000, 0), INT64_MAX);
    cr_assert(rb_throttle_holds(1000, 5, 5999));
    cr_assert_not(rb_throttle_holds(1000, 5, 6000));
    cr_assert_eq(rb_throttle_frees_at(1000, 5), 6000);
    cr_assert_eq(rb_throttle_fetched_from_lease(61000, 60), 1000);
    rb_throttle t = {.queue = "q", .concurrency = 3, .timeout_s = 7};
    json_t *o = json_object();
    rb_throttle_info_set(o, &t, 2);
    json_t *e = json_object_get(o, "q");
    cr_assert_eq(json_integer_value(json_object_get(e, "concurrency")), 3);
    cr_assert_eq(json_integer_value(json_object_get(e, "timeout")), 7);
    cr_assert_eq(json_integer_value(json_object_get(e, "in_use")), 2);
    cr_assert_null(json_object_get(e, "rate"), "no rate: no rate keys");
    rb_throttle r = {.queue = "r", .rate = 100, .period_ms = 60000, .burst = 10};
    rb_throttle_info_set(o, &r, 0);
    e = json_object_get(o, "r");
    cr_assert_eq(json_integer_value(json_object_get(e, "rate")), 100);
    cr_assert_eq(json_real_value(json_object_get(e, "period")), 60.0);
    cr_assert_eq(json_integer_value(json_object_get(e, "burst")), 10);
    json_decref(o);
}
