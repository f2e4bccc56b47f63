/* The server's log in the JSON format ([log] format = "json"): every line
 * a server writes from start to stop is one JSON object with time, level
 * and msg, and the job lines carry the job's fields, whatever the jid holds
 * (quotes, a newline). [log] level and --log-level choose the lines. */
#include <criterion/criterion.h>
#include <regex.h>

#include "harness.h"

/* Every line of s's log parsed (an array of objects); asserts that each
 * line is one JSON object with an RFC 3339 UTC time with milliseconds, a
 * known level and a string msg. */
static json_t *log_lines(const rbh_server *s)
{
    FILE *f = fopen(s->log, "r");
    cr_assert_not_null(f, "no log %s", s->log);
    regex_t re;
    cr_assert_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
                         REG_EXTENDED | REG_NOSUB), 0);
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        cr_assert_eq(line[n - 1], '\n', "unterminated log line: %s", line);
        json_error_t e;
        json_t *o = json_loadb(line, (size_t)n, 0, &e);
        cr_assert(json_is_object(o), "log line is no JSON object (%s): %s", e.text, line);
        const char *t = json_string_value(json_object_get(o, "time"));
        cr_assert(t && regexec(&re, t, 0, NULL, 0) == 0, "bad time in %s", line);
        const char *l = json_string_value(json_object_get(o, "level"));
        cr_assert(l && (!strcmp(l, "debug") || !strcmp(l, "info") || !strcmp(l, "warn") ||
                        !strcmp(l, "error")), "bad level in %s", line);
        cr_assert(json_is_string(json_object_get(o, "msg")), "no msg in %s", line);
        json_array_append_new(all, o);
    }
    free(line);
    fclose(f);
    regfree(&re);
    return all;
}

/* The first line whose msg contains part, or NULL. */
static json_t *find_line(json_t *lines, const char *part)
{
    size_t i;
    json_t *o;
    json_array_foreach(lines, i, o) {
        if (strstr(json_string_value(json_object_get(o, "msg")), part))
            return o;
    }
    return NULL;
}

static const char *field(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void fetch_fail(rbh_conn *c, const char *queue, const char *jid_json)
{
    char *r = rbh_cmd(c, "FETCH %s", queue);
    cr_assert(r && r[0] == '{', "FETCH %s: %s", queue, r ? r : "(closed)");
    free(r);
    cr_assert(rbh_expect(c, "+OK", "FAIL {\"jid\":%s,\"errtype\":\"E\",\"message\":\"m\"}",
                         jid_json));
}

Test(log, json_lines_with_job_fields, .timeout = 60)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, "[log]\nformat = \"json\"\nlevel = \"debug\"\n", NULL), 0);
    rbh_conn *c = rbh_connect(&s, "w-log");
    cr_assert_not_null(c);
    /* dead at its first failure, with a jid that needs escaping */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"dead\\\"q\\nx\\u00e9-1\",\"jobtype\":\"Dj\","
                                   "\"queue\":\"qd\",\"args\":[],\"retry\":-1}"));
    fetch_fail(c, "qd", "\"dead\\\"q\\nx\\u00e9-1\"");
    /* discarded at its first failure */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"discard-0001\",\"jobtype\":\"Xj\","
                                   "\"queue\":\"qx\",\"args\":[],\"retry\":0}"));
    fetch_fail(c, "qx", "\"discard-0001\"");
    /* expired: dropped at FETCH */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"expired-0001\",\"jobtype\":\"Ej\","
                                   "\"queue\":\"qe\",\"args\":[],"
                                   "\"custom\":{\"expires_at\":\"2001-01-01T00:00:00Z\"}}"));
    cr_assert(rbh_expect(c, "$-1", "FETCH qe"));
    rbh_close(c);
    cr_assert(WIFEXITED(rbh_kill(&s, SIGTERM)));

    json_t *lines = log_lines(&s);
    cr_assert_geq(json_array_size(lines), 4);
    cr_assert_not_null(find_line(lines, "rebound started"));
    cr_assert_not_null(find_line(lines, "rebound stopped"));
    json_t *dead = find_line(lines, "is dead");
    cr_assert_not_null(dead, "no dead-job line");
    cr_assert_str_eq(field(dead, "level"), "info");
    cr_assert_str_eq(field(dead, "jid"), "dead\"q\nx\xc3\xa9-1");
    cr_assert_str_eq(field(dead, "queue"), "qd");
    cr_assert_str_eq(field(dead, "jobtype"), "Dj");
    json_t *gone = find_line(lines, "discarded after a failure");
    cr_assert_not_null(gone, "no discard line");
    cr_assert_str_eq(field(gone, "jid"), "discard-0001");
    cr_assert_str_eq(field(gone, "queue"), "qx");
    cr_assert_str_eq(field(gone, "jobtype"), "Xj");
    json_t *exp = find_line(lines, "Halt: job expired");
    cr_assert_not_null(exp, "no expired-job line");
    cr_assert_str_eq(field(exp, "jid"), "expired-0001");
    cr_assert_str_eq(field(exp, "queue"), "qe");
    json_decref(lines);
    cr_assert_eq(rbh_stop(&s), 0);
}

/* [log] level = "warn" hides the info lines; --log-level overrides it. */
Test(log, level_from_config_and_flag, .timeout = 60)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, "[log]\nformat = \"json\"\nlevel = \"warn\"\n", NULL), 0);
    cr_assert(WIFEXITED(rbh_kill(&s, SIGTERM)));
    json_t *lines = log_lines(&s);
    cr_assert_null(find_line(lines, "rebound started"), "an info line at level warn");
    json_decref(lines);
    unlink(s.log);

    const char *extra[] = {"--log-level", "info", NULL};
    cr_assert_eq(rbh_launch(&s, extra), 0);
    cr_assert(WIFEXITED(rbh_kill(&s, SIGTERM)));
    lines = log_lines(&s);
    cr_assert_not_null(find_line(lines, "rebound started"), "--log-level info ignored");
    json_decref(lines);
    cr_assert_eq(rbh_stop(&s), 0);
}

/* A bad [log] value stops the start with the key and the rule. */
Test(log, bad_format_refused, .timeout = 30)
{
    rbh_server s;
    cr_assert_neq(rbh_start(&s, "[log]\nformat = \"yaml\"\n", NULL), 0);
    char cmd[800];
    snprintf(cmd, sizeof cmd,
             "grep -q \"key 'log.format': must be one of \\\"text\\\" or \\\"json\\\", got string "
             "\\\"yaml\\\"\" '%s'", s.log);
    cr_assert_eq(system(cmd), 0, "no clear error in the log");
    s.pid = 0;
    cr_assert_eq(rbh_stop(&s), 0);
}
