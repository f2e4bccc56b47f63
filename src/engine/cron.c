/* Cron schedules: the five-field parser and the next-tick search on a zone's
 * wall clock (engine/cron.h). */
#include "engine/cron.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/buf.h"
#include "common/timeutil.h"

typedef struct field_def {
    const char *what;
    int lo, hi;
    const char *const *names; /* names[i] is value lo + i, or NULL */
} field_def;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};

static const field_def fields[5] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},
    {"month", 1, 12, month_names},
    {"day of week", 0, 7, dow_names},
};

static const struct {
    const char *name, *expand;
} macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* One number or name of field f at *p; advances *p. */
static int value(const field_def *f, const char *text, const char **p, int *out, rb_err *err)
{
    const char *s = *p;
    if (isdigit((unsigned char)*s)) {
        long v = 0;
        while (isdigit((unsigned char)**p) && v < 1000)
            v = v * 10 + (*(*p)++ - '0');
        if (v < f->lo || v > f->hi)
            return rb_err_set(err, RB_EPARSE, "column %d: %s %ld out of range %d-%d",
                              (int)(s - text) + 1, f->what, v, f->lo, f->hi);
        *out = (int)v;
        return 0;
    }
    if (f->names && isalpha((unsigned char)*s)) {
        for (int i = 0; i <= f->hi - f->lo; i++)
            if (f->names[i] && !strncasecmp(s, f->names[i], 3) &&
                !isalpha((unsigned char)s[3])) {
                *p = s + 3;
                *out = f->lo + i;
                return 0;
            }
        return rb_err_set(err, RB_EPARSE, "column %d: unknown %s name '%.*s'", (int)(s - text) + 1,
                          f->what, (int)strcspn(s, " \t,-/"), s);
    }
    return rb_err_set(err, RB_EPARSE, "column %d: expected a %s %s, got '%.*s'",
                      (int)(s - text) + 1, f->what, f->names ? "number or name" : "number",
                      *s ? 1 : 0, *s ? s : "");
}

/* Field f written at text[start, end): its bits into *bits, *star when it
 * starts with '*'. */
static int parse_field(const field_def *f, const char *text, size_t start, size_t end,
                       uint64_t *bits, bool *star, rb_err *err)
{
    const char *p = text + start, *stop = text + end;
    *bits = 0;
    *star = *p == '*';
    for (;;) {
        int lo, hi, step = 1, rc;
        const char *item = p;
        if (*p == '*') {
            lo = f->lo;
            hi = f->hi == 7 ? 6 : f->hi;
            p++;
        } else {
            if ((rc = value(f, text, &p, &lo, err)) < 0)
                return rc;
            hi = lo;
            if (*p == '-') {
                p++;
                if ((rc = value(f, text, &p, &hi, err)) < 0)
                    return rc;
                if (hi < lo)
                    return rb_err_set(err, RB_EPARSE, "column %d: %s range %d-%d is backwards",
                                      (int)(item - text) + 1, f->what, lo, hi);
            }
        }
        if (*p == '/') {
            const char *sp = ++p;
            long v = 0;
            while (isdigit((unsigned char)*p) && v < 1000)
                v = v * 10 + (*p++ - '0');
            if (p == sp || v < 1 || v > f->hi)
                return rb_err_set(err, RB_EPARSE,
                                  "column %d: %s step must be a number from 1 to %d",
                                  (int)(sp - text) + 1, f->what, f->hi);
            step = (int)v;
            if (item[0] != '*' && hi == lo) /* "5/15": from 5 to the end */
                hi = f->hi == 7 ? 6 : f->hi;
        }
        for (int v = lo; v <= hi; v += step)
            *bits |= 1ull << (f->hi == 7 && v == 7 ? 0 : v);
        if (p == stop)
            return 0;
        if (*p != ',' || p + 1 == stop)
            return rb_err_set(err, RB_EPARSE, "column %d: unexpected '%c' in %s field",
                              (int)(p - text) + 1, *p == ',' ? ',' : *p, f->what);
        p++;
    }
}

static int parse_fields(const char *orig, const char *text, rb_cron_spec *out, rb_err *err)
{
    size_t start[5], end[5], n = 0, i = 0, len = strlen(text);
    while (i < len) {
        while (i < len && (text[i] == ' ' || text[i] == '\t'))
            i++;
        if (i == len)
            break;
        if (n == 5)
            return rb_err_set(err, RB_EPARSE, "column %zu: more than five fields", i + 1);
        start[n] = i;
        while (i < len && text[i] != ' ' && text[i] != '\t')
            i++;
        end[n++] = i;
    }
    if (n < 5)
        return rb_err_set(err, RB_EPARSE,
                          "column %zu: expected five fields (minute hour day-of-month month "
                          "day-of-week) or @hourly, @daily, ..., got %zu",
                          strlen(orig) + 1, n);
    uint64_t bits[5];
    bool star[5];
    for (size_t f = 0; f < 5; f++) {
        int rc = parse_field(&fields[f], text, start[f], end[f], &bits[f], &star[f], err);
        if (rc < 0)
            return rc;
    }
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint16_t)bits[3];
    out->dow = (uint8_t)bits[4];
    out->dom_star = star[2];
    out->dow_star = star[4];
    out->hour_star = star[1] && bits[1] == 0xffffffu;
    return 0;
}

int rb_cron_parse(const char *text, rb_cron_spec *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    const char *s = text;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '@') {
        size_t n = strcspn(s, " \t");
        for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
            if (strlen(macros[i].name) == n && !strncasecmp(s, macros[i].name, n)) {
                const char *rest = s + n;
                while (*rest == ' ' || *rest == '\t')
                    rest++;
                if (*rest)
                    return rb_err_set(err, RB_EPARSE, "column %d: unexpected text after %s",
                                      (int)(rest - text) + 1, macros[i].name);
                return parse_fields(macros[i].expand, macros[i].expand, out, err);
            }
        return rb_err_set(err, RB_EPARSE,
                          "column %d: unknown '%.*s' (use @yearly, @annually, @monthly, @weekly, "
                          "@daily, @midnight or @hourly)",
                          (int)(s - text) + 1, (int)n, s);
    }
    return parse_fields(text, text, out, err);
}

bool rb_cron_zone_valid(const char *tz)
{
    if (!tz || !*tz || tz[0] == '/' || strstr(tz, "..") || strlen(tz) > 200)
        return false;
    for (const char *p = tz; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/_-+", *p))
            return false;
    const char *dir = getenv("TZDIR");
    rb_buf path = RB_BUF_INIT;
    rb_buf_printf(&path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    struct stat st;
    bool ok = stat(rb_buf_str(&path), &st) == 0 && S_ISREG(st.st_mode);
    rb_buf_release(&path);
    return ok;
}

static bool wall_match(const rb_cron_spec *s, const struct tm *tm)
{
    if (!(s->month >> (tm->tm_mon + 1) & 1) || !(s->hour >> tm->tm_hour & 1) ||
        !(s->minute >> tm->tm_min & 1))
        return false;
    bool d = s->dom >> tm->tm_mday & 1, w = s->dow >> tm->tm_wday & 1;
    return s->dom_star || s->dow_star ? d && w : d || w;
}

typedef struct tm *(*conv_fn)(const time_t *, struct tm *);

static long offset_at(conv_fn conv, int64_t t)
{
    struct tm tm;
    time_t tt = (time_t)t;
    conv(&tt, &tm);
    return tm.tm_gmtoff;
}

/* The instant of wall-clock time wall (seconds, as if UTC), given an
 * offset guess near it. */
static int64_t wall_to_instant(conv_fn conv, int64_t wall, long off)
{
    int64_t t = wall - off;
    long off2 = offset_at(conv, t);
    return off2 != off ? wall - off2 : t;
}

static int search(const rb_cron_spec *s, conv_fn conv, int64_t after_s, int64_t *next_s)
{
    int64_t t = (after_s >= 0 ? after_s / 60 : (after_s - 59) / 60) * 60 + 60;
    int64_t limit = after_s + 10 * 366 * 86400LL;
    while (t <= limit) {
        struct tm tm;
        time_t tt = (time_t)t;
        conv(&tt, &tm);
        long off = tm.tm_gmtoff, prev = offset_at(conv, t - 60);
        if (off > prev) { /* a gap: wall times skipped just before t fire once, now */
            for (int64_t w = t - 60 + prev + 60; w < t + off; w += 60) {
                struct tm wt;
                time_t wtt = (time_t)w;
                gmtime_r(&wtt, &wt);
                if (wall_match(s, &wt)) {
                    *next_s = t;
                    return 0;
                }
            }
        }
        int64_t wall = t + off, next;
        bool d = s->dom >> tm.tm_mday & 1, w = s->dow >> tm.tm_wday & 1;
        if (!(s->month >> (tm.tm_mon + 1) & 1)) {
            int y = tm.tm_year + 1900, m = tm.tm_mon + 2;
            if (m == 13)
                y++, m = 1;
            next = wall_to_instant(conv, rb_days_from_civil(y, (unsigned)m, 1) * 86400, off);
        } else if (!(s->dom_star || s->dow_star ? d && w : d || w)) {
            next = wall_to_instant(conv, (wall / 86400 + 1) * 86400, off);
        } else if (!(s->hour >> tm.tm_hour & 1)) {
            next = t + (60 - tm.tm_min) * 60 - tm.tm_sec;
        } else if (!(s->minute >> tm.tm_min & 1)) {
            next = t + 60;
        } else {
            bool repeat = false;
            for (int i = 0; i < 3 && !s->hour_star && !repeat; i++) {
                static const int folds[] = {1800, 3600, 7200};
                repeat = offset_at(conv, t - folds[i]) == off + folds[i];
            }
            if (!repeat) {
                *next_s = t;
                return 0;
            }
            next = t + 60;
        }
        t = next > t ? next : t + 60;
        t -= ((t % 60) + 60) % 60;
    }
    return RB_ENOENT;
}

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;

int rb_cron_next(const rb_cron_spec *s, const char *tz, int64_t after_s, int64_t *next_s)
{
    if (!tz || !*tz || !strcmp(tz, "UTC") || !strcmp(tz, "Etc/UTC"))
        return search(s, gmtime_r, after_s, next_s);
    if (!rb_cron_zone_valid(tz))
        return RB_EINVAL;
    pthread_mutex_lock(&tz_lock);
    const char *old = getenv("TZ");
    char *saved = old ? rb_xstrdup(old) : NULL;
    setenv("TZ", tz, 1);
    tzset();
    int rc = search(s, localtime_r, after_s, next_s);
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    free(saved);
    pthread_mutex_unlock(&tz_lock);
    return rc;
}

int64_t rb_cron_catch_up(const rb_cron_spec *s, const char *tz, bool run_once, int64_t last_s,
                         int64_t now_s, bool *missed)
{
    int64_t first = 0;
    *missed = last_s > 0 && !rb_cron_next(s, tz, last_s, &first) && first <= now_s;
    if (!*missed || !run_once)
        return 0;
    /* the latest tick <= now_s: from the first missed one on (a stored
     * tick far in the past is bounded by rb_cron_next's ten years, and
     * by the count here) */
    int64_t latest = first, t;
    for (int n = 0; n < 1000000 && !rb_cron_next(s, tz, latest, &t) && t <= now_s; n++)
        latest = t;
    return latest;
}
