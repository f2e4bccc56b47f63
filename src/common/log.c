/* The server's log (see log.h): text or JSON lines on stderr, one
 * fputs per line so that lines from several threads never interleave. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/timeutil.h"

/* Longest message kept (bytes, before "..."). */
#define RB_LOG_MSG_MAX 4096

static rb_log_level min_level = RB_LOG_INFO;
static bool json_lines;
static const char *const names[] = {"debug", "info", "warn", "error"};

int rb_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

void rb_log_set_level(rb_log_level l)
{
    min_level = l;
}

void rb_log_set_json(bool json)
{
    json_lines = json;
}

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0
 * when it is not one (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        len = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        if (s[0] == 0xE0)
            lo = 0xA0;
        else if (s[0] == 0xED)
            hi = 0x9F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        if (s[0] == 0xF0)
            lo = 0x90;
        else if (s[0] == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/* s as a JSON string; each byte that starts no well-formed UTF-8
 * sequence becomes U+FFFD (jansson escapes quotes and control characters). */
static json_t *clean_string(const char *s)
{
    size_t n = strlen(s);
    rb_buf b = RB_BUF_INIT;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq((const unsigned char *)s + i, n - i);
        if (len) {
            rb_buf_add(&b, s + i, len);
            i += len;
        } else {
            rb_buf_adds(&b, "\xEF\xBF\xBD");
            i++;
        }
    }
    json_t *j = json_stringn(b.data ? b.data : "", b.len);
    rb_buf_release(&b);
    return j;
}

static void emit(rb_log_level l, const char *const *kv, const char *fmt, va_list ap)
{
    char ts[RB_TIME_STRLEN];
    rb_time_format(rb_now_ms(), ts);
    rb_buf msg = RB_BUF_INIT;
    rb_buf_vprintf(&msg, fmt, ap);
    if (msg.len > RB_LOG_MSG_MAX) { /* a client's long error text, say */
        msg.len = RB_LOG_MSG_MAX;
        rb_buf_adds(&msg, "...");
    }
    rb_buf line = RB_BUF_INIT;
    if (!json_lines) {
        rb_buf_printf(&line, "%s %s ", ts, names[l]);
        /* one event, one line: a control character a client sent (a
         * newline in a jid) is written as \xNN */
        for (const unsigned char *p = (const unsigned char *)rb_buf_str(&msg); *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                rb_buf_printf(&line, "\\x%02x", *p);
            else
                rb_buf_addc(&line, (char)*p);
        rb_buf_addc(&line, '\n');
    } else {
        json_t *o = json_object();
        json_object_set_new(o, "time", json_string(ts));
        json_object_set_new(o, "level", json_string(names[l]));
        json_object_set_new(o, "msg", clean_string(rb_buf_str(&msg)));
        for (size_t i = 0; kv && kv[i]; i += 2)
            if (kv[i + 1])
                json_object_set_new(o, kv[i], clean_string(kv[i + 1]));
        char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        rb_buf_adds(&line, text);
        rb_buf_addc(&line, '\n');
        free(text);
        json_decref(o);
    }
    fputs(rb_buf_str(&line), stderr);
    rb_buf_release(&line);
    rb_buf_release(&msg);
}

void rb_log(rb_log_level l, const char *fmt, ...)
{
    if (l < min_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(l, NULL, fmt, ap);
    va_end(ap);
}

void rb_log_kv(rb_log_level l, const char *const *kv, const char *fmt, ...)
{
    if (l < min_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(l, kv, fmt, ap);
    va_end(ap);
}
