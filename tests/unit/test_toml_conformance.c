/* The toml-test corpus (github.com/toml-lang/toml-test, not part of this
 * repository): every case listed in tests/files-toml-1.0.0. Valid files
 * must decode to exactly the tagged JSON beside them; invalid files must be
 * rejected with a line and column. The corpus is found through
 * $REBOUND_TOML_TEST (a toml-test checkout, or its tests/ directory), else
 * ../shared/toml-test beside the checkout; without it the cases are skipped
 * and the skip says why, except with $CI set, where a missing corpus fails
 * (docs/hacking.md). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "config/toml.h"
#include "config/toml_json.h"

static char root_dir[1024];

static bool read_all(const char *path, rb_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rb_buf_add(out, chunk, n);
    fclose(f);
    if (!out->data)
        rb_buf_adds(out, "");
    return true;
}

/* dir (a toml-test checkout or its tests/ directory) into root_dir when
 * it holds the case list. */
static bool corpus_at(const char *dir)
{
    static const char *const subs[] = {"/tests", ""};
    for (size_t i = 0; i < 2; i++) {
        char list[1100];
        snprintf(list, sizeof list, "%s%s/files-toml-1.0.0", dir, subs[i]);
        FILE *f = fopen(list, "r");
        if (f) {
            fclose(f);
            snprintf(root_dir, sizeof root_dir, "%s%s", dir, subs[i]);
            return true;
        }
    }
    return false;
}

/* The corpus's tests/ directory: $REBOUND_TOML_TEST, else
 * ../shared/toml-test from $REBOUND_TOP or the cwd. Absent: the test is
 * skipped with the reason, or fails when $CI is set (a CI run must not pass
 * without the cases). */
static const char *corpus(void)
{
    const char *env = getenv("REBOUND_TOML_TEST");
    if (env && *env) {
        if (corpus_at(env))
            return root_dir;
        cr_assert_fail("REBOUND_TOML_TEST='%s' holds no toml-test corpus "
                       "(no files-toml-1.0.0 in it or in its tests/)", env);
    }
    const char *top = getenv("REBOUND_TOP");
    char beside[1024];
    snprintf(beside, sizeof beside, "%s/../shared/toml-test", top && *top ? top : ".");
    if (corpus_at(beside) || corpus_at("../shared/toml-test"))
        return root_dir;
    const char *ci = getenv("CI");
    if (ci && *ci && strcmp(ci, "0") && strcmp(ci, "false"))
        cr_assert_fail("toml-test corpus not found and CI is set: a CI run needs it (set "
                       "REBOUND_TOML_TEST to a clone of github.com/toml-lang/toml-test)");
    /* said on stderr too: Criterion shows a skip's reason only verbosely */
    fprintf(stderr, "test_toml_conformance: the toml-test conformance cases were SKIPPED: no "
                    "corpus (set REBOUND_TOML_TEST to a clone of "
                    "github.com/toml-lang/toml-test to run them; looked in %s)\n", beside);
    cr_skip_test("toml-test corpus not found (looked in %s)", beside);
    return NULL;
}

static double float_of(const char *s)
{
    const char *t = (*s == '+' || *s == '-') ? s + 1 : s;
    if (!strcmp(t, "inf"))
        return *s == '-' ? -INFINITY : INFINITY;
    if (!strcmp(t, "nan"))
        return NAN;
    return strtod(s, NULL);
}

static void trim_frac(char *f)
{
    size_t n = strlen(f);
    while (n > 0 && f[n - 1] == '0')
        f[--n] = '\0';
}

/* Dates compare by value as toml-test does: offsets by instant. */
static bool same_datetime(const char *a, const char *b)
{
    rb_toml_datetime x, y;
    int kx = rb_toml_parse_datetime(a, strlen(a), &x);
    int ky = rb_toml_parse_datetime(b, strlen(b), &y);
    if (kx < 0 || kx != ky)
        return false;
    trim_frac(x.frac);
    trim_frac(y.frac);
    if (strcmp(x.frac, y.frac))
        return false;
    if (kx == RB_TOML_DATETIME) {
        int64_t ix = rb_days_from_civil(x.year, (unsigned)x.month, (unsigned)x.day) * 86400 +
                     x.hour * 3600 + x.minute * 60 + x.second - x.offset_min * 60;
        int64_t iy = rb_days_from_civil(y.year, (unsigned)y.month, (unsigned)y.day) * 86400 +
                     y.hour * 3600 + y.minute * 60 + y.second - y.offset_min * 60;
        return ix == iy;
    }
    return x.year == y.year && x.month == y.month && x.day == y.day && x.hour == y.hour &&
           x.minute == y.minute && x.second == y.second;
}

/* jansson cannot hold NUL in object keys, so both sides spell U+0000 as
 * U+2400 (the symbol for NUL) before comparing. */
#define NUL_SYMBOL "\xE2\x90\x80"

static char *denul_text(const char *s, size_t n, bool json_text, size_t *out_len)
{
    rb_buf b = RB_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (json_text && s[i] == '\\' && i + 1 < n) {
            if (i + 5 < n && !memcmp(s + i + 1, "u0000", 5)) {
                rb_buf_adds(&b, NUL_SYMBOL);
                i += 5;
            } else {
                rb_buf_add(&b, s + i, 2);
                i++;
            }
        } else if (s[i] == '\0') {
            rb_buf_adds(&b, NUL_SYMBOL);
        } else {
            rb_buf_addc(&b, s[i]);
        }
    }
    return rb_buf_detach(&b, out_len);
}

static json_t *denul(const json_t *v)
{
    if (json_is_string(v)) {
        size_t n;
        char *t = denul_text(json_string_value(v), json_string_length(v), false, &n);
        json_t *r = json_stringn(t, n);
        free(t);
        return r;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, denul(json_array_get(v, i)));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        size_t klen;
        json_t *e;
        json_object_keylen_foreach((json_t *)v, k, klen, e)
        {
            size_t n;
            char *t = denul_text(k, klen, false, &n);
            json_object_setn_new(o, t, n, denul(e));
            free(t);
        }
        return o;
    }
    return json_incref((json_t *)v);
}

static bool is_tagged(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) == 2 &&
           json_is_string(json_object_get(v, "type")) &&
           json_is_string(json_object_get(v, "value"));
}

/* Compares expected with got; on a difference writes where into why. */
static bool same(const json_t *want, const json_t *got, rb_buf *why, const char *path)
{
    if (is_tagged(want)) {
        if (!is_tagged(got)) {
            rb_buf_printf(why, "%s: expected a scalar", path);
            return false;
        }
        const char *wt = json_string_value(json_object_get(want, "type"));
        const char *gt = json_string_value(json_object_get(got, "type"));
        const char *wv = json_string_value(json_object_get(want, "value"));
        const char *gv = json_string_value(json_object_get(got, "value"));
        bool ok;
        if (strcmp(wt, gt))
            ok = false;
        else if (!strcmp(wt, "float")) {
            double a = float_of(wv), b = float_of(gv);
            ok = (isnan(a) && isnan(b)) || a == b;
        } else if (!strcmp(wt, "integer"))
            ok = strtoll(wv, NULL, 10) == strtoll(gv, NULL, 10);
        else if (strstr(wt, "date") || strstr(wt, "time"))
            ok = same_datetime(wv, gv);
        else
            ok = json_equal(json_object_get(want, "value"), json_object_get(got, "value"));
        if (!ok)
            rb_buf_printf(why, "%s: want %s '%s', got %s '%s'", path, wt, wv, gt, gv);
        return ok;
    }
    if (json_is_array(want)) {
        if (!json_is_array(got) || json_array_size(want) != json_array_size(got)) {
            rb_buf_printf(why, "%s: array length differs", path);
            return false;
        }
        for (size_t i = 0; i < json_array_size(want); i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!same(json_array_get(want, i), json_array_get(got, i), why, sub))
                return false;
        }
        return true;
    }
    if (!json_is_object(got) || is_tagged(got) || json_object_size(want) != json_object_size(got)) {
        rb_buf_printf(why, "%s: table keys differ", path);
        return false;
    }
    const char *k;
    size_t klen;
    json_t *wv;
    json_object_keylen_foreach((json_t *)want, k, klen, wv)
    {
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%.*s", path, (int)klen, k);
        json_t *gv = json_object_getn(got, k, klen);
        if (!gv) {
            rb_buf_printf(why, "%s: missing", sub);
            return false;
        }
        if (!same(wv, gv, why, sub))
            return false;
    }
    return true;
}

/* Runs every listed case whose path starts with prefix; returns failures. */
static int run_cases(const char *prefix, int *checked, rb_buf *report)
{
    const char *dir = corpus();
    char list[1100];
    snprintf(list, sizeof list, "%s/files-toml-1.0.0", dir);
    FILE *lf = fopen(list, "r");
    cr_assert_not_null(lf);
    char line[1024];
    int failures = 0;
    while (fgets(line, sizeof line, lf)) {
        line[strcspn(line, "\r\n")] = '\0';
        size_t len = strlen(line);
        if (strncmp(line, prefix, strlen(prefix)) || len < 5 || strcmp(line + len - 5, ".toml"))
            continue;
        char path[2200];
        snprintf(path, sizeof path, "%s/%s", dir, line);
        rb_buf text = RB_BUF_INIT;
        cr_assert(read_all(path, &text), "cannot read %s", path);
        rb_err err = {0};
        rb_toml_value *root = rb_toml_parse(text.data, text.len, &err);
        (*checked)++;
        rb_buf why = RB_BUF_INIT;
        if (!strcmp(prefix, "valid/")) {
            if (!root) {
                rb_buf_printf(&why, "rejected: %s", rb_err_msg(&err));
            } else {
                char jpath[2200];
                snprintf(jpath, sizeof jpath, "%.*s.json", (int)(strlen(path) - 5), path);
                json_error_t jerr;
                rb_buf jtext = RB_BUF_INIT;
                cr_assert(read_all(jpath, &jtext), "cannot read %s", jpath);
                size_t jn;
                char *clean = denul_text(jtext.data, jtext.len, true, &jn);
                json_t *want = json_loadb(clean, jn, 0, &jerr);
                free(clean);
                rb_buf_release(&jtext);
                cr_assert_not_null(want, "cannot read %s: %s", jpath, jerr.text);
                json_t *raw = rb_toml_to_tagged_json(root);
                json_t *got = denul(raw);
                json_decref(raw);
                same(want, got, &why, "");
                json_decref(want);
                json_decref(got);
            }
        } else if (root) {
            rb_buf_adds(&why, "accepted");
        } else if (err.code != RB_EPARSE || strncmp(err.msg, "line ", 5) ||
                   !strstr(err.msg, ", column ")) {
            rb_buf_printf(&why, "error without line and column: %s", rb_err_msg(&err));
        }
        if (why.len) {
            failures++;
            if (failures <= 40)
                rb_buf_printf(report, "\n  %s: %s", line, rb_buf_str(&why));
        }
        rb_buf_release(&why);
        rb_toml_free(root);
        rb_buf_release(&text);
    }
    fclose(lf);
    return failures;
}

Test(toml_conformance, valid_cases_decode_to_their_tagged_json)
{
    int checked = 0;
    rb_buf report = RB_BUF_INIT;
    int failures = run_cases("valid/", &checked, &report);
    cr_log_info("toml-test valid: %d cases checked, %d failed", checked, failures);
    cr_expect_geq(checked, 200, "only %d valid cases found", checked);
    cr_assert_eq(failures, 0, "%d of %d valid cases failed:%s", failures, checked,
                 rb_buf_str(&report));
    rb_buf_release(&report);
}

Test(toml_conformance, invalid_cases_are_rejected_with_line_and_column)
{
    int checked = 0;
    rb_buf report = RB_BUF_INIT;
    int failures = run_cases("invalid/", &checked, &report);
    cr_log_info("toml-test invalid: %d cases checked, %d failed", checked, failures);
    cr_expect_geq(checked, 400, "only %d invalid cases found", checked);
    cr_assert_eq(failures, 0, "%d of %d invalid cases failed:%s", failures, checked,
                 rb_buf_str(&report));
    rb_buf_release(&report);
}
