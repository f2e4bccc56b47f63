/* What the config unit suites share: each test in a temporary directory of
 * its own, and a configuration loaded from text written there (c.toml). */
#ifndef RB_TEST_CONFIG_HELPERS_H
#define RB_TEST_CONFIG_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config/config.h"

/* A Test's .init: the test runs in a new directory under /tmp. */
static inline void in_tmpdir(void)
{
    char tmpl[] = "/tmp/rebound-config-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    cr_assert_eq(chdir(tmpl), 0);
}

/* Writes text to c.toml and loads it into cfg (rb_config_load's result). */
static inline int load(rb_config *cfg, const char *text, rb_err *err)
{
    FILE *f = fopen("c.toml", "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return rb_config_load(cfg, "c.toml", NULL, err);
}

#endif
