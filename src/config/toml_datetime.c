/* TOML's dates and times: strict RFC 3339 parsing with TOML's relaxations,
 * and the canonical text form. */
#include "config/toml.h"

#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"

static int digits(const char *s, size_t n, size_t at, size_t count, int *out)
{
    int v = 0;
    if (at + count > n)
        return -1;
    for (size_t i = 0; i < count; i++) {
        char c = s[at + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dim[m - 1];
}

/* HH:MM:SS[.frac] at s+at; returns the index after it, or 0 on error. */
static size_t parse_time(const char *s, size_t n, size_t at, rb_toml_datetime *dt)
{
    if (digits(s, n, at, 2, &dt->hour) || at + 2 >= n || s[at + 2] != ':' ||
        digits(s, n, at + 3, 2, &dt->minute) || at + 5 >= n || s[at + 5] != ':' ||
        digits(s, n, at + 6, 2, &dt->second))
        return 0;
    if (dt->hour > 23 || dt->minute > 59 || dt->second > 60)
        return 0;
    size_t i = at + 8;
    if (i < n && s[i] == '.') {
        size_t k = 0;
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (k < sizeof dt->frac - 1)
                dt->frac[k++] = s[i];
            i++;
        }
        if (k == 0)
            return 0;
        dt->frac[k] = '\0';
    }
    return i;
}

int rb_toml_parse_datetime(const char *s, size_t n, rb_toml_datetime *out)
{
    rb_toml_datetime dt;
    memset(&dt, 0, sizeof dt);
    if (n >= 3 && s[2] == ':') {
        size_t end = parse_time(s, n, 0, &dt);
        if (end == 0 || end != n)
            return -1;
        *out = dt;
        return RB_TOML_TIME_LOCAL;
    }
    if (digits(s, n, 0, 4, &dt.year) || n < 10 || s[4] != '-' || digits(s, n, 5, 2, &dt.month) ||
        s[7] != '-' || digits(s, n, 8, 2, &dt.day))
        return -1;
    if (dt.month < 1 || dt.month > 12 || dt.day < 1 || dt.day > days_in_month(dt.year, dt.month))
        return -1;
    if (n == 10) {
        *out = dt;
        return RB_TOML_DATE_LOCAL;
    }
    if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
        return -1;
    size_t i = parse_time(s, n, 11, &dt);
    if (i == 0)
        return -1;
    if (i == n) {
        *out = dt;
        return RB_TOML_DATETIME_LOCAL;
    }
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
        *out = dt;
        return RB_TOML_DATETIME;
    }
    int oh, om;
    if ((s[i] != '+' && s[i] != '-') || i + 6 != n || digits(s, n, i + 1, 2, &oh) ||
        s[i + 3] != ':' || digits(s, n, i + 4, 2, &om) || oh > 23 || om > 59)
        return -1;
    dt.offset_min = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
    *out = dt;
    return RB_TOML_DATETIME;
}

char *rb_toml_format_datetime(rb_toml_type kind, const rb_toml_datetime *dt, char *out)
{
    size_t len = 0, cap = 64;
    out[0] = '\0';
    if (kind != RB_TOML_TIME_LOCAL)
        len += (size_t)snprintf(out + len, cap - len, "%04d-%02d-%02d", dt->year, dt->month,
                                dt->day);
    if (kind == RB_TOML_DATE_LOCAL)
        return out;
    len += (size_t)snprintf(out + len, cap - len, "%s%02d:%02d:%02d",
                            kind == RB_TOML_TIME_LOCAL ? "" : "T", dt->hour, dt->minute,
                            dt->second);
    if (dt->frac[0])
        len += (size_t)snprintf(out + len, cap - len, ".%s", dt->frac);
    if (kind == RB_TOML_DATETIME) {
        int off = dt->offset_min;
        if (off == 0)
            snprintf(out + len, cap - len, "Z");
        else
            snprintf(out + len, cap - len, "%c%02d:%02d", off < 0 ? '-' : '+',
                     (off < 0 ? -off : off) / 60, (off < 0 ? -off : off) % 60);
    }
    return out;
}
