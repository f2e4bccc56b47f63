/* rebound.toml(5) as `rebound config reference --man` writes it
 * (src/config/schema_man.c): every schema setting is an entry under its
 * section with its default and rule, every dialect's keys are listed, and
 * the roff is safe (no text line that roff would read as a request, minus
 * signs escaped). tests/scripts/install.sh renders the installed page. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "config/schema.h"
#include "policy/dialect.h"

static char *page(void)
{
    rb_buf b = RB_BUF_INIT;
    rb_config_reference_man(&b);
    return rb_buf_detach(&b, NULL);
}

/* name with each '-' as roff's "\-" */
static void roff_name(const char *name, rb_buf *out)
{
    for (; *name; name++)
        rb_buf_adds(out, *name == '-' ? "\\-" : (char[]){*name, 0});
}

Test(config_man, every_setting_is_an_entry_under_its_section)
{
    char *p = page();
    cr_assert(!strncmp(p, ".\\\"", 3), "the page opens with a comment");
    cr_assert(strstr(p, "\n.TH REBOUND.TOML 5 "));
    for (size_t i = 0; i < rb_config_schema_len; i++) {
        const rb_config_key *k = &rb_config_schema[i];
        const char *dot = strchr(k->name, '.');
        cr_assert(dot);
        rb_buf sec = RB_BUF_INIT, entry = RB_BUF_INIT;
        rb_buf_printf(&sec, "\n.SS [%.*s]\n", (int)(dot - k->name), k->name);
        rb_buf_adds(&entry, "\n.TP\n.B ");
        roff_name(dot + 1, &entry);
        rb_buf_adds(&entry, "\n");
        const char *s = strstr(p, rb_buf_str(&sec));
        cr_assert(s, "no section %s", rb_buf_str(&sec));
        const char *e = strstr(s, rb_buf_str(&entry));
        cr_assert(e, "no entry for %s under its section", k->name);
        const char *next = strstr(s + 1, "\n.SS ");
        const char *sh = strstr(s + 1, "\n.SH ");
        if (!next || (sh && sh < next))
            next = sh;
        cr_assert(!next || e < next, "%s is not under [%.*s]", k->name, (int)(dot - k->name),
                  k->name);
        /* its default and rule follow the name, before the next entry */
        rb_buf def = RB_BUF_INIT, rule = RB_BUF_INIT, rr = RB_BUF_INIT;
        rb_buf_adds(&def, "Default: ");
        roff_name(k->def, &def);
        rb_config_key_rule(k, &rule);
        roff_name(rb_buf_str(&rule), &rr);
        const char *end = strstr(e + 1, "\n.TP\n");
        const char *d = strstr(e, rb_buf_str(&def));
        const char *r = strstr(e, rb_buf_str(&rr));
        cr_assert(d && (!end || d < end), "%s: no '%s'", k->name, rb_buf_str(&def));
        cr_assert(r && (!end || r < end), "%s: no rule '%s'", k->name, rb_buf_str(&rr));
        rb_buf_release(&sec);
        rb_buf_release(&entry);
        rb_buf_release(&def);
        rb_buf_release(&rule);
        rb_buf_release(&rr);
    }
    free(p);
}

Test(config_man, every_dialect_key_is_listed)
{
    char *p = page();
    const char *const *lists[] = {rb_dialect_temporal_keys, rb_dialect_tasker_keys,
                                  rb_dialect_faktory_keys, rb_dialect_tutorial_keys,
                                  rb_dialect_ftl_keys};
    const char *policies = strstr(p, "\n.SH RETRY POLICIES\n");
    cr_assert(policies);
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (const char *const *k = lists[l]; *k; k++) {
            rb_buf want = RB_BUF_INIT;
            rb_buf_adds(&want, "\\fB");
            roff_name(*k, &want);
            rb_buf_adds(&want, "\\fR");
            cr_assert(strstr(policies, rb_buf_str(&want)), "policy key %s is not listed", *k);
            rb_buf_release(&want);
        }
    free(p);
}

Test(config_man, roff_is_safe)
{
    char *p = page();
    static const char *const requests[] = {".\\\"", ".TH", ".SH", ".SS", ".TP", ".PP", ".B",
                                           ".I",    ".BI", ".BR", ".RB", ".IR", ".br", ".nf",
                                           ".fi",   NULL};
    int line = 1;
    for (char *s = p; *s; line++) {
        char *nl = strchr(s, '\n');
        cr_assert(nl, "line %d does not end with a newline", line);
        if (*s == '.' || *s == '\'') {
            bool known = false;
            for (size_t i = 0; requests[i] && !known; i++) {
                size_t n = strlen(requests[i]);
                known = !strncmp(s, requests[i], n) && (s[n] == ' ' || s + n == nl ||
                                                         !strcmp(requests[i], ".\\\""));
            }
            cr_assert(known, "line %d is an unexpected request: %.*s", line, (int)(nl - s), s);
        }
        for (char *c = s; c < nl; c++)
            cr_assert(*c != '-' || (c > s && c[-1] == '\\'), "line %d has an unescaped '-': %.*s",
                      line, (int)(nl - s), s);
        s = nl + 1;
    }
    free(p);
}
