/* Duration parsing and formatting: the general grammar, FTL's strict one, and
 * JSON values, all to whole milliseconds with overflow checks. */
#include "policy/duration.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const struct unit {
    const char *name;
    int64_t ms;
} units[] = {
    /* largest first: the order components must appear in */
    {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
};
enum { N_UNITS = sizeof units / sizeof units[0], UNIT_MS = 4 };

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads the unit at *p (longest match: "ms" before "m"); returns its index or -1. */
static int read_unit(const char **p)
{
    const char *s = *p;
    if (s[0] == 'm' && s[1] == 's') {
        *p += 2;
        return UNIT_MS;
    }
    for (int i = 0; i < N_UNITS; i++)
        if (i != UNIT_MS && s[0] == units[i].name[0]) {
            *p += 1;
            return i;
        }
    return -1;
}

/* A number: digits, optionally '.' and more digits (when fractions are allowed).
 * Sets *ip and the fraction as *fp / 10^*fd. Returns false on bad syntax. */
static bool read_number(const char **p, bool allow_frac, __int128 *ip, __int128 *fp, int *fd,
                        bool *too_big)
{
    const char *s = *p;
    __int128 i = 0, f = 0;
    int nd = 0, nf = 0;
    while (is_digit(*s)) {
        if (i > (__int128)INT64_MAX)
            *too_big = true;
        else
            i = i * 10 + (*s - '0');
        s++, nd++;
    }
    if (allow_frac && *s == '.') {
        s++;
        while (is_digit(*s)) {
            if (nf < 18) {
                f = f * 10 + (*s - '0');
                nf++;
            } else if (*s != '0') {
                nf = 99; /* far finer than a millisecond */
            }
            s++;
        }
        if (nf == 0 && (s[-1] == '.'))
            return false; /* "1." or "." */
    }
    if (nd == 0)
        return false;
    *p = s;
    *ip = i, *fp = f, *fd = nf;
    return true;
}

static int fail(rb_err *err, int code, const char *s, const char *why)
{
    return rb_err_set(err, code, "invalid duration '%s': %s", s, why);
}

/* Adds number (i + f/10^fd) * unit_ms to *acc; false when not whole ms or too big. */
static int add_component(__int128 *acc, __int128 i, __int128 f, int fd, int64_t unit_ms)
{
    if (fd > 18)
        return RB_EPARSE;
    __int128 scale = 1;
    for (int k = 0; k < fd; k++)
        scale *= 10;
    __int128 fms = f * unit_ms;
    if (fms % scale != 0)
        return RB_EPARSE;
    *acc += i * unit_ms + fms / scale;
    if (*acc > (__int128)INT64_MAX)
        return RB_ERANGE;
    return 0;
}

static int parse(const char *s, bool ftl, int64_t *ms, rb_err *err)
{
    if (!s || !*s)
        return fail(err, RB_EPARSE, s ? s : "", "empty");
    const char *p = s;
    bool neg = false;
    if (*p == '-') {
        if (ftl)
            return fail(err, RB_EPARSE, s, "a sign is not allowed");
        neg = true;
        p++;
    }
    __int128 acc = 0;
    int last = -1, ncomp = 0;
    while (*p) {
        __int128 i, f;
        int fd;
        bool too_big = false;
        if (!read_number(&p, !ftl, &i, &f, &fd, &too_big))
            return fail(err, RB_EPARSE, s, "expected a number");
        if (too_big)
            return fail(err, RB_ERANGE, s, "out of range");
        if (ftl && *p == '.')
            return fail(err, RB_EPARSE, s, "fractions are not allowed");
        if (*p == '\0' && ncomp == 0 && !ftl) { /* plain seconds */
            int rc = add_component(&acc, i, f, fd, 1000);
            if (rc)
                return fail(err, rc, s, rc == RB_ERANGE ? "out of range"
                                                        : "finer than a millisecond");
            ncomp++;
            break;
        }
        if (*p == '\0')
            return fail(err, RB_EPARSE, s, "missing unit (d, h, m or s)");
        const char *u = p;
        int ui = read_unit(&p);
        if (ui < 0 || (ftl && ui == UNIT_MS)) {
            char why[80];
            snprintf(why, sizeof why, "unknown unit '%.*s' (%s)", (int)strcspn(u, "0123456789."),
                     u, ftl ? "FTL allows d, h, m, s" : "use d, h, m, s or ms");
            return fail(err, RB_EPARSE, s, why);
        }
        if (ui == last)
            return fail(err, RB_EPARSE, s, "a unit appears twice");
        if (ui < last)
            return fail(err, RB_EPARSE, s, "units must go from largest to smallest");
        last = ui;
        int rc = add_component(&acc, i, f, fd, units[ui].ms);
        if (rc)
            return fail(err, rc, s, rc == RB_ERANGE ? "out of range" : "finer than a millisecond");
        ncomp++;
    }
    if (ncomp == 0)
        return fail(err, RB_EPARSE, s, "expected a number");
    *ms = neg ? -(int64_t)acc : (int64_t)acc;
    return 0;
}

int rb_duration_parse(const char *s, int64_t *ms, rb_err *err)
{
    return parse(s, false, ms, err);
}

int rb_duration_parse_ftl(const char *s, int64_t *ms, rb_err *err)
{
    return parse(s, true, ms, err);
}

int rb_duration_from_json(const json_t *v, int64_t *ms, rb_err *err)
{
    if (json_is_string(v))
        return rb_duration_parse(json_string_value(v), ms, err);
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n > INT64_MAX / 1000 || n < -(INT64_MAX / 1000))
            return rb_err_set(err, RB_ERANGE, "invalid duration '%lld': out of range",
                              (long long)n);
        *ms = (int64_t)n * 1000;
        return 0;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v) * 1000.0;
        if (!isfinite(x) || fabs(x) > 9.0e15)
            return rb_err_set(err, RB_ERANGE, "invalid duration '%g': out of range",
                              json_real_value(v));
        double r = nearbyint(x);
        if (fabs(x - r) > 1e-6)
            return rb_err_set(err, RB_EPARSE, "invalid duration '%g': finer than a millisecond",
                              json_real_value(v));
        *ms = (int64_t)r;
        return 0;
    }
    return rb_err_set(err, RB_EINVAL,
                      "must be a duration (a string such as \"5s\" or a number of seconds)");
}

char *rb_duration_format(int64_t ms, char *out, size_t n)
{
    char buf[RB_DURATION_STRLEN];
    size_t len = 0;
    uint64_t v = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    if (ms < 0)
        buf[len++] = '-';
    if (v == 0)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "0s");
    for (int i = 0; i < N_UNITS && v; i++) {
        uint64_t q = v / (uint64_t)units[i].ms;
        if (q) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%llu%s", (unsigned long long)q,
                                    units[i].name);
            v -= q * (uint64_t)units[i].ms;
        }
    }
    snprintf(out, n, "%s", buf);
    return out;
}
