/* The TOML 1.0 parser: one pass over the text, building the tree as it goes
 * and enforcing the spec's rules on redefinition of keys and tables. */
#include "config/toml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#define MAX_DEPTH 128 /* nesting of arrays and inline tables */

typedef struct parser {
    const char *s;
    size_t n, i;
    rb_err *err;
    bool failed;
    int depth;
    size_t pc_off; /* position cache for offset -> line/column */
    int pc_line, pc_col;
} parser;

typedef struct key_part {
    char *s;
    size_t len;
    size_t off;
} key_part;

typedef struct key_path {
    key_part *parts;
    size_t n, cap;
} key_path;

static void position(parser *p, size_t off, int *line, int *col)
{
    if (off < p->pc_off || p->pc_line == 0) {
        p->pc_off = 0;
        p->pc_line = 1;
        p->pc_col = 1;
    }
    for (size_t i = p->pc_off; i < off && i < p->n; i++) {
        unsigned char c = (unsigned char)p->s[i];
        if (c == '\n') {
            p->pc_line++;
            p->pc_col = 1;
        } else if ((c & 0xC0) != 0x80) {
            p->pc_col++;
        }
    }
    p->pc_off = off;
    *line = p->pc_line;
    *col = p->pc_col;
}

__attribute__((format(printf, 3, 4))) static int fail_at(parser *p, size_t off, const char *fmt,
                                                         ...)
{
    if (p->failed)
        return -1;
    p->failed = true;
    int line, col;
    position(p, off, &line, &col);
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rb_err_set(p->err, RB_EPARSE, "line %d, column %d: %s", line, col, msg);
    return -1;
}

static int peek(const parser *p, size_t ahead)
{
    return p->i + ahead < p->n ? (unsigned char)p->s[p->i + ahead] : -1;
}

static bool at_newline(const parser *p)
{
    return peek(p, 0) == '\n' || (peek(p, 0) == '\r' && peek(p, 1) == '\n');
}

static void skip_ws(parser *p)
{
    while (peek(p, 0) == ' ' || peek(p, 0) == '\t')
        p->i++;
}

/* A byte that may not appear raw in a comment or string (tab is fine). */
static bool is_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7F;
}

static int skip_comment(parser *p)
{
    p->i++; /* '#' */
    while (p->i < p->n && !at_newline(p)) {
        int c = peek(p, 0);
        if (is_control(c))
            return fail_at(p, p->i, "control character 0x%02x in comment", c);
        p->i++;
    }
    return 0;
}

static int skip_newline(parser *p)
{
    if (peek(p, 0) == '\n')
        p->i++;
    else if (peek(p, 0) == '\r' && peek(p, 1) == '\n')
        p->i += 2;
    else if (peek(p, 0) == '\r')
        return fail_at(p, p->i, "carriage return not followed by a newline");
    return 0;
}

/* Whitespace, comments and newlines (inside arrays). */
static int skip_ws_nl(parser *p)
{
    for (;;) {
        skip_ws(p);
        int c = peek(p, 0);
        if (c == '#') {
            if (skip_comment(p))
                return -1;
        } else if (c == '\n' || c == '\r') {
            if (skip_newline(p))
                return -1;
        } else {
            return 0;
        }
    }
}

/* After a key/value pair or header: blanks, an optional comment, then a
 * newline or the end of the text. */
static int expect_eol(parser *p, const char *after)
{
    skip_ws(p);
    if (peek(p, 0) == '#' && skip_comment(p))
        return -1;
    if (p->i >= p->n)
        return 0;
    if (!at_newline(p)) {
        if (peek(p, 0) == '\r')
            return skip_newline(p);
        return fail_at(p, p->i, "expected a newline after %s", after);
    }
    return skip_newline(p);
}

static int check_utf8(parser *p)
{
    const unsigned char *s = (const unsigned char *)p->s;
    for (size_t i = 0; i < p->n;) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07;
        } else {
            return fail_at(p, i, "invalid UTF-8 byte 0x%02x", c);
        }
        if (i + len > p->n)
            return fail_at(p, i, "truncated UTF-8 sequence");
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return fail_at(p, i, "invalid UTF-8 sequence");
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail_at(p, i, "invalid UTF-8 sequence");
        i += len;
    }
    return 0;
}

/* ---- values ---------------------------------------------------------- */

static rb_toml_value *new_value(parser *p, rb_toml_type t, size_t off)
{
    rb_toml_value *v = rb_xcalloc(1, sizeof *v);
    v->type = t;
    position(p, off, &v->line, &v->col);
    return v;
}

static void add_utf8(rb_buf *b, uint32_t cp)
{
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)), out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18)), out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    rb_buf_add(b, out, n);
}

/* An escape after '\' in a basic string (p->i at the character after '\'). */
static int escape(parser *p, rb_buf *b)
{
    size_t at = p->i - 1;
    int c = peek(p, 0);
    const char *simple = NULL;
    switch (c) {
    case 'b': simple = "\b"; break;
    case 't': simple = "\t"; break;
    case 'n': simple = "\n"; break;
    case 'f': simple = "\f"; break;
    case 'r': simple = "\r"; break;
    case '"': simple = "\""; break;
    case '\\': simple = "\\"; break;
    case 'u':
    case 'U': {
        size_t nd = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 1; k <= nd; k++) {
            int h = peek(p, k);
            int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0)
                return fail_at(p, at, "\\%c escape needs %zu hex digits", c, nd);
            if (cp > 0x10FFFF)
                return fail_at(p, at, "\\%c escape is not a Unicode scalar value", c);
            cp = cp * 16 + (uint32_t)d;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail_at(p, at, "\\%c escape is not a Unicode scalar value", c);
        add_utf8(b, cp);
        p->i += nd + 1;
        return 0;
    }
    default:
        if (c < 0)
            return fail_at(p, at, "unterminated string");
        return fail_at(p, at, "invalid escape '\\%c'", c);
    }
    rb_buf_adds(b, simple);
    p->i++;
    return 0;
}

/* A string of any of the four kinds; p->i at the opening quote. Fills b. */
static int string_body(parser *p, rb_buf *b, bool allow_multi, bool *multi_out)
{
    size_t start = p->i;
    char q = p->s[p->i];
    bool basic = q == '"';
    bool multi = peek(p, 1) == q && peek(p, 2) == q;
    if (multi_out)
        *multi_out = multi;
    if (multi && !allow_multi)
        return fail_at(p, start, "a multi-line string cannot be a key");
    p->i += multi ? 3 : 1;
    if (multi && at_newline(p))
        p->i += peek(p, 0) == '\r' ? 2 : 1;
    for (;;) {
        int c = peek(p, 0);
        if (c < 0)
            return fail_at(p, start, "unterminated string");
        if (c == q) {
            if (!multi) {
                p->i++;
                return 0;
            }
            size_t nq = 0;
            while (peek(p, nq) == q)
                nq++;
            if (nq >= 3) {
                if (nq > 5)
                    return fail_at(p, p->i, "too many quotes at the end of a string");
                rb_buf_add(b, p->s + p->i, nq - 3);
                p->i += nq;
                return 0;
            }
            rb_buf_add(b, p->s + p->i, nq);
            p->i += nq;
            continue;
        }
        if (c == '\\' && basic) {
            p->i++;
            if (multi) {
                size_t j = 0;
                while (peek(p, j) == ' ' || peek(p, j) == '\t')
                    j++;
                if (peek(p, j) == '\n' || (peek(p, j) == '\r' && peek(p, j + 1) == '\n')) {
                    p->i += j;
                    for (;;) {
                        int w = peek(p, 0);
                        if (w == ' ' || w == '\t' || w == '\n')
                            p->i++;
                        else if (w == '\r' && peek(p, 1) == '\n')
                            p->i += 2;
                        else
                            break;
                    }
                    continue;
                }
            }
            if (escape(p, b))
                return -1;
            continue;
        }
        if (c == '\n' || c == '\r') {
            if (!multi)
                return fail_at(p, p->i, "newline in a single-line string");
            if (c == '\r' && peek(p, 1) != '\n')
                return fail_at(p, p->i, "carriage return not followed by a newline");
            rb_buf_addc(b, '\n');
            p->i += c == '\r' ? 2 : 1;
            continue;
        }
        if (is_control(c))
            return fail_at(p, p->i, "control character 0x%02x in string", c);
        rb_buf_addc(b, (char)c);
        p->i++;
    }
}

static bool is_bare(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Digits of base with '_' only between two digits; appended to b without '_'. */
static bool digit_run(const char *s, size_t n, int base, rb_buf *b)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '_') {
            if (i == 0 || i + 1 == n || s[i + 1] == '_')
                return false;
            continue;
        }
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
        if (d >= base)
            return false;
        rb_buf_addc(b, c);
    }
    return true;
}

static rb_toml_value *number(parser *p)
{
    size_t start = p->i, end = p->i;
    while (end < p->n && (is_bare((unsigned char)p->s[end]) || p->s[end] == '.' ||
                          p->s[end] == '+'))
        end++;
    const char *t = p->s + start;
    size_t n = end - start;
    p->i = end;
    size_t sign = (t[0] == '+' || t[0] == '-') ? 1 : 0;
    if (n - sign == 3 && (!memcmp(t + sign, "inf", 3) || !memcmp(t + sign, "nan", 3))) {
        rb_toml_value *v = new_value(p, RB_TOML_FLOAT, start);
        double x = t[sign] == 'i' ? __builtin_inf() : __builtin_nan("");
        v->u.f = t[0] == '-' ? -x : x;
        return v;
    }
    rb_buf b = RB_BUF_INIT;
    if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
        int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
        if (!digit_run(t + 2, n - 2, base, &b)) {
            rb_buf_release(&b);
            fail_at(p, start, "invalid integer '%.*s'", (int)n, t);
            return NULL;
        }
        errno = 0;
        unsigned long long u = strtoull(rb_buf_str(&b), NULL, base);
        rb_buf_release(&b);
        if (errno || u > INT64_MAX) {
            fail_at(p, start, "integer '%.*s' out of range", (int)n, t);
            return NULL;
        }
        rb_toml_value *v = new_value(p, RB_TOML_INTEGER, start);
        v->u.i = (int64_t)u;
        return v;
    }
    /* decimal: [sign] int [. frac] [e [sign] exp] */
    size_t i = sign, int_end, frac_end = 0, exp_start = 0;
    while (i < n && (is_digit((unsigned char)t[i]) || t[i] == '_'))
        i++;
    int_end = i;
    bool is_float = false, ok = true;
    if (sign)
        rb_buf_addc(&b, t[0]);
    ok = digit_run(t + sign, int_end - sign, 10, &b);
    if (ok && int_end - sign > 1 && t[sign] == '0')
        ok = false; /* leading zero */
    if (ok && i < n && t[i] == '.') {
        is_float = true;
        rb_buf_addc(&b, '.');
        i++;
        while (i < n && (is_digit((unsigned char)t[i]) || t[i] == '_'))
            i++;
        frac_end = i;
        ok = digit_run(t + int_end + 1, frac_end - int_end - 1, 10, &b);
    }
    if (ok && i < n && (t[i] == 'e' || t[i] == 'E')) {
        is_float = true;
        rb_buf_addc(&b, 'e');
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            rb_buf_addc(&b, t[i++]);
        exp_start = i;
        while (i < n && (is_digit((unsigned char)t[i]) || t[i] == '_'))
            i++;
        ok = digit_run(t + exp_start, i - exp_start, 10, &b);
    }
    if (!ok || i != n) {
        rb_buf_release(&b);
        fail_at(p, start, "invalid number '%.*s'", (int)n, t);
        return NULL;
    }
    rb_toml_value *v = NULL;
    errno = 0;
    if (is_float) {
        double x = strtod(rb_buf_str(&b), NULL);
        if (errno == ERANGE && (x > 1 || x < -1)) {
            fail_at(p, start, "float '%.*s' out of range", (int)n, t);
        } else {
            v = new_value(p, RB_TOML_FLOAT, start);
            v->u.f = x;
        }
    } else {
        long long x = strtoll(rb_buf_str(&b), NULL, 10);
        if (errno) {
            fail_at(p, start, "integer '%.*s' out of range", (int)n, t);
        } else {
            v = new_value(p, RB_TOML_INTEGER, start);
            v->u.i = x;
        }
    }
    rb_buf_release(&b);
    return v;
}

static rb_toml_value *datetime(parser *p)
{
    size_t start = p->i, end = p->i;
    while (end < p->n && (is_digit((unsigned char)p->s[end]) || p->s[end] == '-' ||
                          p->s[end] == ':'))
        end++;
    if (end < p->n && (p->s[end] == 'T' || p->s[end] == 't' ||
                       (p->s[end] == ' ' && end + 1 < p->n &&
                        is_digit((unsigned char)p->s[end + 1]))) &&
        end - start == 10) {
        end++;
        while (end < p->n && (is_digit((unsigned char)p->s[end]) || p->s[end] == ':' ||
                              p->s[end] == '.'))
            end++;
    }
    if (end < p->n && (p->s[end] == '.'))
        while (++end < p->n && is_digit((unsigned char)p->s[end]))
            ;
    if (end < p->n && (p->s[end] == 'Z' || p->s[end] == 'z'))
        end++;
    else if (end < p->n && (p->s[end] == '+' || p->s[end] == '-'))
        while (++end < p->n && (is_digit((unsigned char)p->s[end]) || p->s[end] == ':'))
            ;
    rb_toml_datetime dt;
    int kind = rb_toml_parse_datetime(p->s + start, end - start, &dt);
    if (kind < 0 || (end < p->n && is_bare((unsigned char)p->s[end]))) {
        while (end < p->n && (is_bare((unsigned char)p->s[end]) || p->s[end] == ':' ||
                              p->s[end] == '.'))
            end++;
        fail_at(p, start, "invalid date or time '%.*s'", (int)(end - start), p->s + start);
        return NULL;
    }
    p->i = end;
    rb_toml_value *v = new_value(p, (rb_toml_type)kind, start);
    v->u.dt = dt;
    return v;
}

static rb_toml_value *value(parser *p);
static int keyval(parser *p, rb_toml_value *table);

static void array_push(rb_toml_value *a, rb_toml_value *v)
{
    if (a->u.array.n == a->u.array.cap) {
        a->u.array.cap = a->u.array.cap ? a->u.array.cap * 2 : 4;
        a->u.array.items = rb_xrealloc(a->u.array.items, a->u.array.cap * sizeof *a->u.array.items);
    }
    a->u.array.items[a->u.array.n++] = v;
}

static rb_toml_value *array(parser *p)
{
    rb_toml_value *a = new_value(p, RB_TOML_ARRAY, p->i);
    a->frozen = 1;
    p->i++;
    for (;;) {
        if (skip_ws_nl(p))
            goto fail;
        if (peek(p, 0) == ']') {
            p->i++;
            return a;
        }
        if (peek(p, 0) < 0) {
            fail_at(p, p->i, "unterminated array");
            goto fail;
        }
        rb_toml_value *v = value(p);
        if (!v)
            goto fail;
        array_push(a, v);
        if (skip_ws_nl(p))
            goto fail;
        if (peek(p, 0) == ',') {
            p->i++;
        } else if (peek(p, 0) != ']') {
            fail_at(p, p->i, peek(p, 0) < 0 ? "unterminated array" : "expected ',' or ']' in array");
            goto fail;
        }
    }
fail:
    rb_toml_free(a);
    return NULL;
}

static rb_toml_value *inline_table(parser *p)
{
    rb_toml_value *t = new_value(p, RB_TOML_TABLE, p->i);
    p->i++;
    skip_ws(p);
    if (peek(p, 0) == '}') {
        p->i++;
        t->frozen = 1;
        return t;
    }
    for (;;) {
        skip_ws(p);
        if (keyval(p, t))
            goto fail;
        skip_ws(p);
        if (peek(p, 0) == ',') {
            p->i++;
            skip_ws(p);
            if (peek(p, 0) == '}') {
                fail_at(p, p->i, "trailing comma in an inline table");
                goto fail;
            }
        } else if (peek(p, 0) == '}') {
            p->i++;
            t->frozen = 1;
            return t;
        } else {
            fail_at(p, p->i,
                    peek(p, 0) < 0 ? "unterminated inline table"
                                   : "expected ',' or '}' in an inline table");
            goto fail;
        }
    }
fail:
    rb_toml_free(t);
    return NULL;
}

static rb_toml_value *value(parser *p)
{
    int c = peek(p, 0);
    size_t start = p->i;
    if (c == '"' || c == '\'') {
        rb_buf b = RB_BUF_INIT;
        if (string_body(p, &b, true, NULL)) {
            rb_buf_release(&b);
            return NULL;
        }
        rb_toml_value *v = new_value(p, RB_TOML_STRING, start);
        v->u.str.s = rb_buf_detach(&b, &v->u.str.len);
        return v;
    }
    if (c == '[' || c == '{') {
        if (++p->depth > MAX_DEPTH) {
            fail_at(p, start, "nesting deeper than %d", MAX_DEPTH);
            return NULL;
        }
        rb_toml_value *v = c == '[' ? array(p) : inline_table(p);
        p->depth--;
        return v;
    }
    if (c == 't' && p->n - p->i >= 4 && !memcmp(p->s + p->i, "true", 4) && !is_bare(peek(p, 4))) {
        p->i += 4;
        rb_toml_value *v = new_value(p, RB_TOML_BOOL, start);
        v->u.b = true;
        return v;
    }
    if (c == 'f' && p->n - p->i >= 5 && !memcmp(p->s + p->i, "false", 5) &&
        !is_bare(peek(p, 5))) {
        p->i += 5;
        return new_value(p, RB_TOML_BOOL, start);
    }
    if (is_digit(c) && ((is_digit(peek(p, 1)) && is_digit(peek(p, 2)) && is_digit(peek(p, 3)) &&
                         peek(p, 4) == '-') ||
                        (is_digit(peek(p, 1)) && peek(p, 2) == ':')))
        return datetime(p);
    if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
        return number(p);
    if (c < 0 || at_newline(p) || c == '#')
        fail_at(p, start, "expected a value");
    else if (is_bare(c))
        fail_at(p, start, "invalid value (strings must be quoted)");
    else
        fail_at(p, start, "expected a value, found '%c'", c);
    return NULL;
}

/* ---- keys and tables ------------------------------------------------- */

static void key_path_release(key_path *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->parts[i].s);
    free(k->parts);
    k->parts = NULL;
    k->n = k->cap = 0;
}

static int key(parser *p, key_path *k)
{
    for (;;) {
        skip_ws(p);
        size_t start = p->i;
        int c = peek(p, 0);
        key_part part = {NULL, 0, start};
        if (c == '"' || c == '\'') {
            rb_buf b = RB_BUF_INIT;
            if (string_body(p, &b, false, NULL)) {
                rb_buf_release(&b);
                return -1;
            }
            part.s = rb_buf_detach(&b, &part.len);
        } else if (is_bare(c)) {
            while (is_bare(peek(p, 0)))
                p->i++;
            part.s = rb_xstrndup(p->s + start, p->i - start);
            part.len = p->i - start;
        } else {
            if (c < 0 || at_newline(p) || c == '=')
                return fail_at(p, start, "expected a key");
            return fail_at(p, start, "invalid character '%c' in a key", c);
        }
        if (k->n == k->cap) {
            k->cap = k->cap ? k->cap * 2 : 4;
            k->parts = rb_xrealloc(k->parts, k->cap * sizeof *k->parts);
        }
        k->parts[k->n++] = part;
        skip_ws(p);
        if (peek(p, 0) != '.')
            return 0;
        p->i++;
    }
}

static rb_toml_kv *find(rb_toml_value *t, const key_part *kp)
{
    for (size_t i = 0; i < t->u.table.n; i++) {
        rb_toml_kv *kv = &t->u.table.items[i];
        if (kv->keylen == kp->len && !memcmp(kv->key, kp->s, kp->len))
            return kv;
    }
    return NULL;
}

/* Adds key -> v to table t (the key must be new); takes ownership of v. */
static rb_toml_value *insert(parser *p, rb_toml_value *t, const key_part *kp, rb_toml_value *v)
{
    if (t->u.table.n == t->u.table.cap) {
        t->u.table.cap = t->u.table.cap ? t->u.table.cap * 2 : 8;
        t->u.table.items = rb_xrealloc(t->u.table.items, t->u.table.cap * sizeof(rb_toml_kv));
    }
    rb_toml_kv *kv = &t->u.table.items[t->u.table.n++];
    kv->key = rb_xmalloc(kp->len + 1);
    memcpy(kv->key, kp->s, kp->len);
    kv->key[kp->len] = '\0';
    kv->keylen = kp->len;
    position(p, kp->off, &kv->line, &kv->col);
    kv->val = v;
    return v;
}

static void key_name(const key_path *k, size_t upto, rb_buf *out)
{
    for (size_t i = 0; i <= upto && i < k->n; i++) {
        if (i)
            rb_buf_addc(out, '.');
        rb_buf_add(out, k->parts[i].s, strlen(k->parts[i].s));
    }
}

static int fail_key(parser *p, const key_path *k, size_t upto, const char *what)
{
    rb_buf name = RB_BUF_INIT;
    key_name(k, upto, &name);
    fail_at(p, k->parts[upto].off, "%s '%s'", what, rb_buf_str(&name));
    rb_buf_release(&name);
    return -1;
}

static int keyval(parser *p, rb_toml_value *table)
{
    key_path k = {0};
    if (key(p, &k))
        goto fail;
    if (peek(p, 0) != '=') {
        fail_at(p, p->i, "expected '=' after a key");
        goto fail;
    }
    p->i++;
    skip_ws(p);
    rb_toml_value *t = table;
    for (size_t i = 0; i + 1 < k.n; i++) {
        rb_toml_kv *kv = find(t, &k.parts[i]);
        if (!kv) {
            rb_toml_value *sub = new_value(p, RB_TOML_TABLE, k.parts[i].off);
            sub->dotted = 1;
            t = insert(p, t, &k.parts[i], sub);
        } else if (kv->val->type == RB_TOML_TABLE && kv->val->dotted && !kv->val->frozen) {
            t = kv->val;
        } else {
            fail_key(p, &k, i,
                     kv->val->type == RB_TOML_TABLE ? "cannot add keys with dotted keys to table"
                                                    : "key already has a value");
            goto fail;
        }
    }
    if (find(t, &k.parts[k.n - 1])) {
        fail_key(p, &k, k.n - 1, "duplicate key");
        goto fail;
    }
    rb_toml_value *v = value(p);
    if (!v)
        goto fail;
    insert(p, t, &k.parts[k.n - 1], v);
    key_path_release(&k);
    return 0;
fail:
    key_path_release(&k);
    return -1;
}

/* A [header] or [[header]] line; sets *cur to the table it opens. */
static int header(parser *p, rb_toml_value *root, rb_toml_value **cur)
{
    size_t start = p->i;
    bool aot = peek(p, 1) == '[';
    p->i += aot ? 2 : 1;
    key_path k = {0};
    if (key(p, &k))
        goto fail;
    if (peek(p, 0) != ']' || (aot && peek(p, 1) != ']')) {
        fail_at(p, p->i, aot ? "expected ']]' to close the table header"
                             : "expected ']' to close the table header");
        goto fail;
    }
    p->i += aot ? 2 : 1;
    rb_toml_value *t = root;
    for (size_t i = 0; i + 1 < k.n; i++) {
        rb_toml_kv *kv = find(t, &k.parts[i]);
        if (!kv) {
            rb_toml_value *sub = new_value(p, RB_TOML_TABLE, start);
            sub->implicit = 1;
            t = insert(p, t, &k.parts[i], sub);
        } else if (kv->val->type == RB_TOML_TABLE && !kv->val->frozen) {
            t = kv->val;
        } else if (kv->val->type == RB_TOML_ARRAY && kv->val->aot) {
            t = kv->val->u.array.items[kv->val->u.array.n - 1];
        } else {
            fail_key(p, &k, i, "cannot add a table to");
            goto fail;
        }
    }
    key_part *last = &k.parts[k.n - 1];
    rb_toml_kv *kv = find(t, last);
    rb_toml_value *nt = NULL;
    if (aot) {
        rb_toml_value *arr;
        if (!kv) {
            arr = insert(p, t, last, new_value(p, RB_TOML_ARRAY, start));
            arr->aot = 1;
        } else if (kv->val->type == RB_TOML_ARRAY && kv->val->aot) {
            arr = kv->val;
        } else {
            fail_key(p, &k, k.n - 1, "cannot make an array of tables of existing key");
            goto fail;
        }
        nt = new_value(p, RB_TOML_TABLE, start);
        nt->defined = 1;
        array_push(arr, nt);
    } else if (!kv) {
        nt = insert(p, t, last, new_value(p, RB_TOML_TABLE, start));
        nt->defined = 1;
    } else if (kv->val->type == RB_TOML_TABLE && !kv->val->defined && !kv->val->dotted &&
               !kv->val->frozen) {
        nt = kv->val;
        nt->defined = 1;
        position(p, start, &nt->line, &nt->col);
    } else {
        fail_key(p, &k, k.n - 1,
                 kv->val->type == RB_TOML_TABLE ? "table defined twice" : "key already has a value");
        goto fail;
    }
    *cur = nt;
    key_path_release(&k);
    return expect_eol(p, "a table header");
fail:
    key_path_release(&k);
    return -1;
}

rb_toml_value *rb_toml_parse(const char *text, size_t len, rb_err *err)
{
    parser p = {.s = text, .n = len, .err = err};
    rb_toml_value *root = rb_xcalloc(1, sizeof *root);
    root->type = RB_TOML_TABLE;
    root->line = root->col = 1;
    root->defined = 1;
    if (check_utf8(&p))
        goto fail;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        p.i = 3;
    rb_toml_value *cur = root;
    for (;;) {
        skip_ws(&p);
        int c = peek(&p, 0);
        if (c < 0)
            break;
        if (c == '#') {
            if (skip_comment(&p) || expect_eol(&p, "a comment"))
                goto fail;
        } else if (c == '\n' || c == '\r') {
            if (skip_newline(&p))
                goto fail;
        } else if (c == '[') {
            if (header(&p, root, &cur))
                goto fail;
        } else {
            if (keyval(&p, cur) || expect_eol(&p, "a key/value pair"))
                goto fail;
        }
    }
    return root;
fail:
    rb_toml_free(root);
    return NULL;
}
