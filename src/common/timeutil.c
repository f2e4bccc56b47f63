/* Clocks and time parsing/formatting, independent of the process's time zone. */
#include "common/timeutil.h"
#include "common/error.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int64_t rb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rb_now_us_from(int64_t ms)
{
    int64_t us = rb_now_us();
    return us / 1000 >= ms ? us : ms * 1000;
}

int64_t rb_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Howard Hinnant's days_from_civil. */
int64_t rb_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dm[m - 1];
}

static int64_t civil_ms(int y, int mo, int d, int h, int mi, int s)
{
    return ((rb_days_from_civil(y, (unsigned)mo, (unsigned)d) * 24 + h) * 60 + mi) * 60000LL
        + s * 1000LL;
}

static int valid_civil(int y, int mo, int d, int h, int mi, int s)
{
    return y >= 0 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= days_in_month(y, mo)
        && h >= 0 && h <= 23 && mi >= 0 && mi <= 59 && s >= 0 && s <= 60;
}

/* t, counted in 1/per_sec of a second since the epoch, as RFC 3339 UTC
 * with digits fractional digits (per_sec = 10^digits) into out. */
static char *format_fraction(int64_t t, int64_t per_sec, int digits, char *out)
{
    time_t secs = (time_t)(t >= 0 ? t / per_sec : (t - (per_sec - 1)) / per_sec);
    int frac = (int)(t - (int64_t)secs * per_sec);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, RB_TIME_STRLEN, "%04d-%02d-%02dT%02d:%02d:%02d.%0*dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, digits, frac);
    return out;
}

char *rb_time_format(int64_t ms, char *out)
{
    return format_fraction(ms, 1000, 3, out);
}

char *rb_time_format_us(int64_t us, char *out)
{
    return format_fraction(us, 1000000, 6, out);
}

/* Reads exactly n digits at *p into *v. */
static int digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

int rb_time_parse_rfc3339(const char *s, int64_t *ms)
{
    int64_t us;
    int rc = rb_time_parse_rfc3339_us(s, &us);
    if (rc == 0)
        *ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    return rc;
}

int rb_time_parse_rfc3339_us(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec, frac_us = 0;
    const char *p = s;
    if (!s || digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-'
        || digits(&p, 2, &d))
        return RB_EPARSE;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return RB_EPARSE;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':'
        || digits(&p, 2, &sec))
        return RB_EPARSE;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return RB_EPARSE;
        int n = 0;
        while (isdigit((unsigned char)*p)) {
            if (n < 6)
                frac_us = frac_us * 10 + (*p - '0');
            n++;
            p++;
        }
        for (; n < 6; n++)
            frac_us *= 10;
    }
    int off_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return RB_EPARSE;
        off_min = sign * (oh * 60 + om);
    } else {
        return RB_EPARSE;
    }
    if (*p || !valid_civil(y, mo, d, h, mi, sec))
        return RB_EPARSE;
    *out = (civil_ms(y, mo, d, h, mi, sec) - off_min * 60000LL) * 1000 + frac_us;
    return 0;
}

static int month_index(const char *m)
{
    static const char *names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int i = 0; i < 12; i++)
        if (strncmp(m, names[i], 3) == 0)
            return i + 1;
    return 0;
}

static int wkday_ok(const char *w, size_t n, int long_form)
{
    static const char *shortn[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    static const char *longn[] = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                  "Friday", "Saturday", "Sunday"};
    for (int i = 0; i < 7; i++) {
        const char *c = long_form ? longn[i] : shortn[i];
        if (strlen(c) == n && strncmp(w, c, n) == 0)
            return 1;
    }
    return 0;
}

/* hh:mm:ss at *p */
static int clock_part(const char **p, int *h, int *mi, int *s)
{
    if (digits(p, 2, h) || *(*p)++ != ':' || digits(p, 2, mi) || *(*p)++ != ':'
        || digits(p, 2, s))
        return -1;
    return 0;
}

int rb_time_parse_http_date(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec;
    const char *p;
    if (!s)
        return RB_EPARSE;
    const char *comma = strchr(s, ',');
    if (comma && comma - s == 3) { /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
        if (!wkday_ok(s, 3, 0))
            return RB_EPARSE;
        p = comma + 1;
        if (*p++ != ' ' || digits(&p, 2, &d) || *p++ != ' ' || !(mo = month_index(p)))
            return RB_EPARSE;
        p += 3;
        if (*p++ != ' ' || digits(&p, 4, &y) || *p++ != ' ' || clock_part(&p, &h, &mi, &sec)
            || strcmp(p, " GMT") != 0)
            return RB_EPARSE;
    } else if (comma) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
        if (!wkday_ok(s, (size_t)(comma - s), 1))
            return RB_EPARSE;
        p = comma + 1;
        if (*p++ != ' ' || digits(&p, 2, &d) || *p++ != '-' || !(mo = month_index(p)))
            return RB_EPARSE;
        p += 3;
        if (*p++ != '-' || digits(&p, 2, &y) || *p++ != ' ' || clock_part(&p, &h, &mi, &sec)
            || strcmp(p, " GMT") != 0)
            return RB_EPARSE;
        /* RFC 9110: a two-digit year more than 50 years ahead is in the past */
        y += y < 70 ? 2000 : 1900;
    } else { /* asctime: Sun Nov  6 08:49:37 1994 */
        if (strlen(s) < 24 || !wkday_ok(s, 3, 0) || s[3] != ' ' || !(mo = month_index(s + 4))
            || s[7] != ' ')
            return RB_EPARSE;
        p = s + 8;
        if (*p == ' ') {
            p++;
            if (digits(&p, 1, &d))
                return RB_EPARSE;
        } else if (digits(&p, 2, &d)) {
            return RB_EPARSE;
        }
        if (*p++ != ' ' || clock_part(&p, &h, &mi, &sec) || *p++ != ' ' || digits(&p, 4, &y)
            || *p)
            return RB_EPARSE;
    }
    if (!valid_civil(y, mo, d, h, mi, sec))
        return RB_EPARSE;
    *ms = civil_ms(y, mo, d, h, mi, sec);
    return 0;
}
