/* The documentation stays true to the schema: docs/configuration.md carries
 * exactly the generated reference and names no unknown setting, and the
 * example rebound.toml parses and shows every setting and no unknown one. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/config.h"
#include "config/schema.h"

static char *top_path(const char *rel)
{
    const char *top = getenv("REBOUND_TOP");
    rb_buf b = RB_BUF_INIT;
    rb_buf_printf(&b, "%s/%s", top && *top ? top : ".", rel);
    return rb_buf_detach(&b, NULL);
}

static char *slurp(const char *rel)
{
    char *path = top_path(rel);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (set REBOUND_TOP to the checkout)", path);
    rb_buf b = RB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rb_buf_add(&b, chunk, n);
    fclose(f);
    free(path);
    return rb_buf_detach(&b, NULL);
}

Test(config_docs, reference_table_is_the_generated_one)
{
    char *doc = slurp("docs/configuration.md");
    const char *begin = strstr(doc, "<!-- schema:begin -->\n");
    const char *end = strstr(doc, "<!-- schema:end -->");
    cr_assert(begin && end && end > begin, "schema markers missing in docs/configuration.md");
    begin += strlen("<!-- schema:begin -->\n");
    rb_buf want = RB_BUF_INIT;
    rb_config_reference_markdown(&want);
    cr_assert_eq((size_t)(end - begin), want.len,
                 "docs/configuration.md's reference differs from the schema; regenerate it with "
                 "'rebound config reference'");
    cr_assert(!memcmp(begin, want.data, want.len),
                 "docs/configuration.md's reference differs from the schema; regenerate it with "
                 "'rebound config reference'");
    rb_buf_release(&want);
    free(doc);
}

static bool is_section(const char *s, size_t n)
{
    for (const char *const *sec = rb_config_sections; *sec; sec++)
        if (strlen(*sec) == n && !strncmp(*sec, s, n))
            return true;
    return false;
}

Test(config_docs, docs_name_no_unknown_setting)
{
    char *doc = slurp("docs/configuration.md");
    int named = 0;
    for (const char *p = strchr(doc, '`'); p; p = strchr(p + 1, '`')) {
        const char *q = strchr(p + 1, '`');
        if (!q)
            break;
        const char *dot = memchr(p + 1, '.', (size_t)(q - p - 1));
        bool ident = dot && dot > p + 1;
        for (const char *c = p + 1; ident && c < q; c++)
            ident = islower((unsigned char)*c) || *c == '_' || (*c == '.' && c == dot);
        if (ident && is_section(p + 1, (size_t)(dot - p - 1)) &&
            strncmp(p + 1, "retry.", 6)) {
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            cr_expect_geq(rb_config_key_index(key), 0, "docs name unknown setting '%s'", key);
            named++;
        }
        p = q;
    }
    cr_assert_geq(named, (int)rb_config_schema_len, "found only %d setting names in the docs", named);
    free(doc);
}

Test(config_docs, example_file_loads_and_shows_exactly_the_schema)
{
    char *path = top_path("rebound.toml");
    rb_config cfg;
    rb_err err = {0};
    cr_assert_eq(rb_config_load(&cfg, path, NULL, &err), 0, "rebound.toml: %s", rb_err_msg(&err));
    cr_assert(cfg.has_retry_default);
    cr_assert_geq(cfg.n_queues + cfg.n_jobtypes, 1, "the example shows per-queue/jobtype policies");
    /* the example's values are the defaults */
    rb_config def;
    rb_config_init(&def);
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        rb_buf a = RB_BUF_INIT, b = RB_BUF_INIT;
        rb_config_key_format(&cfg, &rb_config_schema[i], &a);
        rb_config_key_format(&def, &rb_config_schema[i], &b);
        cr_expect_str_eq(rb_buf_str(&a), rb_buf_str(&b), "rebound.toml: %s is not the default",
                         rb_config_schema[i].name);
        rb_buf_release(&a);
        rb_buf_release(&b);
    }
    rb_config_release(&def);
    rb_config_release(&cfg);

    /* every `key = ` line (also commented out) under [server], [storage] or
     * [backoff] is a schema key, and every schema key has one */
    char *text = slurp("rebound.toml");
    bool seen[RB_CONFIG_MAX_KEYS] = {false};
    char section[64] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *s = line;
        while (*s == ' ')
            s++;
        bool commented = *s == '#';
        if (commented)
            s += s[1] == ' ' ? 2 : 1;
        if (*s == '[') {
            sscanf(s, "[%63[a-z_.]]", section);
            continue;
        }
        char key[64];
        if (sscanf(s, "%63[a-z_]", key) != 1 || strncmp(s + strlen(key), " = ", 3))
            continue;
        if (!is_section(section, strlen(section)) || !strncmp(section, "retry", 5))
            continue;
        char full[160];
        snprintf(full, sizeof full, "%s.%s", section, key);
        int idx = rb_config_key_index(full);
        cr_expect_geq(idx, 0, "rebound.toml shows unknown setting '%s'%s", full,
                      commented ? " (commented)" : "");
        if (idx >= 0)
            seen[idx] = true;
    }
    for (size_t i = 0; i < rb_config_schema_len; i++)
        cr_expect(seen[i], "rebound.toml does not show '%s'", rb_config_schema[i].name);
    free(text);
    free(path);
}
