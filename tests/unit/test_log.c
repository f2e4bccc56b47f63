/* server/log.c: the text and JSON line formats, the level filter, and JSON
 * that stays valid whatever a message or field holds (quotes, control
 * characters, invalid UTF-8 replaced by U+FFFD). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"

static char path[64];

/* Sends stderr to a fresh file. */
static void capture(void)
{
    snprintf(path, sizeof path, "/tmp/rebound-log-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    dup2(fd, 2);
    close(fd);
}

/* Everything logged since capture(), as text (caller frees). */
static char *captured(void)
{
    fflush(stderr);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    return buf;
}

/* The lines of text parsed as JSON objects. */
static json_t *parse_lines(char *text)
{
    json_t *all = json_array();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        cr_assert(json_is_object(o), "not a JSON object (%s): %s", e.text, line);
        json_array_append_new(all, o);
    }
    return all;
}

static const char *str(json_t *lines, size_t i, const char *k)
{
    return json_string_value(json_object_get(json_array_get(lines, i), k));
}

Test(log, json_escapes_anything, .init = capture)
{
    rb_log_set_json(true);
    rb_log_set_level(RB_LOG_INFO);
    rb_log(RB_LOG_INFO, "quote \" backslash \\ tab \t newline \n bell \a end");
    rb_log(RB_LOG_WARN, "bad utf-8: \xff|\xc0\xaf|\xed\xa0\x80|\xe2\x82|ok \xc3\xa9");
    rb_log_kv(RB_LOG_ERROR, RB_LOG_KV("jid", "j\"1\n\x80", "queue", NULL, "wid", "w1"),
              "job %s is dead", "j1");
    rb_log(RB_LOG_DEBUG, "below the level: not written");
    char *text = captured();
    json_t *lines = parse_lines(text);
    cr_assert_eq(json_array_size(lines), 3, "%s", text);
    cr_assert_str_eq(str(lines, 0, "level"), "info");
    cr_assert_str_eq(str(lines, 0, "msg"), "quote \" backslash \\ tab \t newline \n bell \a end");
    cr_assert_str_eq(str(lines, 1, "level"), "warn");
    /* each byte that starts no valid sequence is one U+FFFD */
    cr_assert_str_eq(str(lines, 1, "msg"),
                     "bad utf-8: \xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|ok \xc3\xa9");
    cr_assert_str_eq(str(lines, 2, "level"), "error");
    cr_assert_str_eq(str(lines, 2, "msg"), "job j1 is dead");
    cr_assert_str_eq(str(lines, 2, "jid"), "j\"1\n\xef\xbf\xbd");
    cr_assert_str_eq(str(lines, 2, "wid"), "w1");
    cr_assert_null(json_object_get(json_array_get(lines, 2), "queue"), "a NULL field is left out");
    /* time, level, msg first, in that order */
    const char *first = strchr(text, '{');
    cr_assert(!strncmp(first, "{\"time\":\"", 9), "%s", text);
    json_decref(lines);
    free(text);
}

/* Text lines: "TIME LEVEL msg", one per event (control characters
 * escaped), long messages cut. */
Test(log, text_lines_and_long_messages, .init = capture)
{
    rb_log_set_json(false);
    rb_log_set_level(RB_LOG_WARN);
    rb_log(RB_LOG_INFO, "hidden");
    rb_log_kv(RB_LOG_WARN, RB_LOG_KV("jid", "abc"), "job %s late", "abc");
    rb_log(RB_LOG_WARN, "job %s", "a\nb\x7f\xc3\xa9");
    char big[10000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rb_log(RB_LOG_ERROR, "%s", big);
    char *text = captured();
    char *nl = strchr(text, '\n');
    cr_assert_not_null(nl);
    *nl = '\0';
    /* "2026-11-21T10:00:00.000Z warn job abc late" */
    cr_assert_eq(strlen(text), 24 + strlen(" warn job abc late"), "%s", text);
    cr_assert_str_eq(text + 24, " warn job abc late");
    cr_assert_eq(text[10], 'T');
    cr_assert_eq(text[23], 'Z');
    char *injected = nl + 1;
    nl = strchr(injected, '\n');
    cr_assert_not_null(nl);
    *nl = '\0';
    cr_assert_str_eq(injected + 24, " warn job a\\x0ab\\x7f\xc3\xa9", "control characters escaped");
    char *second = nl + 1;
    cr_assert(strstr(second, " error xxx"), "%.60s", second);
    cr_assert(strlen(second) < 4200 && strstr(second, "...\n"), "a long message is cut");
    free(text);
}
