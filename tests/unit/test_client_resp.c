/* The client against a scripted fake server on the other end of a socketpair:
 * handshake (with and without a password), every RESP reply form, error
 * replies, broken framing, and the exact request lines the typed calls send. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rebound/client.h"

#define MAX_STEPS 16

/* The fake server: sends greeting, then for each reply reads one request line
 * (kept in lines[]) and writes the reply, chunk bytes per write (0 = whole).
 * Afterwards it records what else arrives until EOF (the client's END). */
typedef struct fake {
    int fd;
    const char *greeting;
    const char *replies[MAX_STEPS];
    size_t reply_len[MAX_STEPS]; /* 0 = strlen */
    size_t nreplies;
    size_t chunk;
    char lines[MAX_STEPS][2048];
    size_t nlines;
    char trailer[64];
    pthread_t thread;
} fake;

static char *read_line(int fd)
{
    size_t cap = 256, len = 0;
    char *s = malloc(cap);
    for (;;) {
        char ch;
        ssize_t n = read(fd, &ch, 1);
        if (n <= 0) {
            free(s);
            return NULL;
        }
        if (ch == '\n')
            break;
        if (len + 2 > cap)
            s = realloc(s, cap *= 2);
        s[len++] = ch;
    }
    if (len && s[len - 1] == '\r')
        len--;
    s[len] = '\0';
    return s;
}

static void write_all(int fd, const char *p, size_t n, size_t chunk)
{
    while (n) {
        size_t k = chunk && chunk < n ? chunk : n;
        ssize_t w = write(fd, p, k);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    write_all(f->fd, f->greeting, strlen(f->greeting), f->chunk);
    for (size_t i = 0; i < f->nreplies; i++) {
        char *line = read_line(f->fd);
        if (!line)
            break;
        snprintf(f->lines[f->nlines++], sizeof f->lines[0], "%s", line);
        free(line);
        size_t n = f->reply_len[i] ? f->reply_len[i] : strlen(f->replies[i]);
        write_all(f->fd, f->replies[i], n, f->chunk);
    }
    size_t got = 0;
    ssize_t n;
    while (got < sizeof f->trailer - 1 &&
           (n = read(f->fd, f->trailer + got, sizeof f->trailer - 1 - got)) > 0)
        got += (size_t)n;
    close(f->fd);
    return NULL;
}

/* Starts the fake; returns the client's end of the socketpair. */
static int fake_start(fake *f)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    f->fd = sv[1];
    pthread_create(&f->thread, NULL, fake_main, f);
    return sv[0];
}

static void fake_finish(fake *f)
{
    pthread_join(f->thread, NULL);
}

/* Connects a client to a fake whose replies are the NULL-terminated list
 * after the HELLO's +OK. */
static rb_client *client_with(fake *f, const rb_client_opts *opts, const char *const *replies)
{
    f->replies[f->nreplies++] = "+OK\r\n"; /* HELLO */
    for (; replies && *replies; replies++)
        f->replies[f->nreplies++] = *replies;
    rb_err e = {0};
    rb_client *c = rb_client_attach(fake_start(f), opts, &e);
    cr_assert_not_null(c, "attach: %s", rb_err_msg(&e));
    return c;
}

static json_t *line_json(const char *line, const char *verb)
{
    size_t n = strlen(verb);
    cr_assert_eq(strncmp(line, verb, n), 0, "line '%s' is not %s", line, verb);
    cr_assert_eq(line[n], ' ', "line '%s'", line);
    json_error_t je;
    json_t *j = json_loads(line + n + 1, 0, &je);
    cr_assert_not_null(j, "bad JSON in '%s': %s", line, je.text);
    return j;
}

Test(client_handshake, hello_fields_without_password)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    static const char *const labels[] = {"a", "b", NULL};
    rb_client_opts o = {.wid = "w-1", .hostname = "box", .labels = labels};
    rb_client *c = client_with(&f, &o, NULL);
    cr_assert_eq(json_integer_value(json_object_get(rb_client_greeting(c), "v")), 2);
    rb_client_close(c);
    fake_finish(&f);
    json_t *h = line_json(f.lines[0], "HELLO");
    cr_assert_eq(json_integer_value(json_object_get(h, "v")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(h, "hostname")), "box");
    cr_assert_str_eq(json_string_value(json_object_get(h, "wid")), "w-1");
    cr_assert_eq(json_integer_value(json_object_get(h, "pid")), getpid());
    cr_assert_eq(json_array_size(json_object_get(h, "labels")), 2);
    cr_assert_null(json_object_get(h, "pwdhash"));
    json_decref(h);
    cr_assert_str_eq(f.trailer, "END\r\n");
}

Test(client_handshake, password_hash_sent)
{
    fake f = {.greeting = "+HI {\"v\":2,\"i\":4000,\"s\":\"abc123\"}\r\n"};
    rb_client_opts o = {.password = "secret"};
    rb_client *c = client_with(&f, &o, NULL);
    rb_client_close(c);
    fake_finish(&f);
    json_t *h = line_json(f.lines[0], "HELLO");
    /* sha256^4000("secret" + "abc123"), computed with Python's hashlib */
    cr_assert_str_eq(json_string_value(json_object_get(h, "pwdhash")),
                     "e5b99ef60d63e4f9c31e8187ee8434f17bb1cab581e109b70df79012514bb5b0");
    cr_assert_null(json_object_get(h, "wid"));
    json_decref(h);
}

Test(client_handshake, wrong_password_is_eauth)
{
    fake f = {.greeting = "+HI {\"v\":2,\"i\":1,\"s\":\"x\"}\r\n"};
    f.replies[f.nreplies++] = "-ERR Invalid password\r\n";
    rb_client_opts o = {.password = "nope"};
    rb_err e = {0};
    rb_client *c = rb_client_attach(fake_start(&f), &o, &e);
    cr_assert_null(c);
    cr_assert_eq(e.code, RB_EAUTH);
    cr_assert(strstr(e.msg, "Invalid password"), "%s", e.msg);
    fake_finish(&f);
}

Test(client_handshake, missing_password_is_eauth_before_hello)
{
    fake f = {.greeting = "+HI {\"v\":2,\"i\":10,\"s\":\"x\"}\r\n"};
    rb_err e = {0};
    rb_client *c = rb_client_attach(fake_start(&f), NULL, &e);
    cr_assert_null(c);
    cr_assert_eq(e.code, RB_EAUTH);
    cr_assert(strstr(e.msg, "requires a password"), "%s", e.msg);
    fake_finish(&f);
    cr_assert_eq(f.nlines, 0, "nothing may be sent");
}

Test(client_handshake, not_a_greeting)
{
    fake f = {.greeting = "+HELLO there\r\n"};
    rb_err e = {0};
    cr_assert_null(rb_client_attach(fake_start(&f), NULL, &e));
    cr_assert_eq(e.code, RB_EPROTO);
    fake_finish(&f);
}

Test(client_resp, every_reply_form_byte_by_byte)
{
    static char big[70000 + 16];
    int hdr = snprintf(big, sizeof big, "$%d\r\n", 70000);
    memset(big + hdr, 'x', 70000);
    memcpy(big + hdr + 70000, "\r\n", 2);
    fake f = {.greeting = "+HI {\"v\":2}\r\n", .chunk = 1};
    f.replies[f.nreplies++] = "+OK\r\n";
    f.replies[f.nreplies++] = "+PONG\r\n";
    f.replies[f.nreplies++] = "$5\r\nhe\r\no\r\n"; /* CRLF inside a bulk is data */
    f.replies[f.nreplies++] = "$-1\r\n";
    f.replies[f.nreplies++] = "$0\r\n\r\n";
    f.replies[f.nreplies++] = "-ERR something bad\r\n";
    f.replies[f.nreplies++] = "+OK\r\n";
    f.replies[f.nreplies] = big;
    f.reply_len[f.nreplies++] = (size_t)hdr + 70002;
    rb_err e = {0};
    rb_client *c = rb_client_attach(fake_start(&f), NULL, &e);
    cr_assert_not_null(c);
    rb_reply r;
    cr_assert_eq(rb_client_call(c, "A", &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_STATUS);
    cr_assert_str_eq(r.str, "PONG");
    cr_assert_eq(rb_client_call(c, "B", &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_BULK);
    cr_assert_eq(r.len, 5);
    cr_assert_eq(memcmp(r.str, "he\r\no", 5), 0);
    cr_assert_eq(rb_client_call(c, "C", &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_NIL);
    cr_assert_null(r.str);
    cr_assert_eq(rb_client_call(c, "D", &r, &e), 0);
    cr_assert_eq(r.type, RB_REPLY_BULK);
    cr_assert_str_eq(r.str, "");
    cr_assert_eq(rb_client_call(c, "E", &r, &e), RB_EPROTO);
    cr_assert_str_eq(e.msg, "something bad");
    /* an error reply leaves the connection usable */
    cr_assert_eq(rb_client_call(c, "F", &r, &e), 0);
    cr_assert_str_eq(r.str, "OK");
    cr_assert_eq(rb_client_callf(c, &r, &e, "G %d", 7), 0);
    cr_assert_eq(r.len, 70000);
    cr_assert_eq(strspn(r.str, "x"), 70000);
    cr_assert_eq(rb_client_call(c, "bad\r\nline", &r, &e), RB_EINVAL);
    rb_client_close(c);
    fake_finish(&f);
    cr_assert_str_eq(f.lines[1], "A");
    cr_assert_str_eq(f.lines[7], "G 7");
    cr_assert_eq(f.nlines, 8);
}

Test(client_resp, bad_framing_breaks_the_connection)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    static const char *const replies[] = {"$3\r\nabcd\r\n", NULL};
    rb_client *c = client_with(&f, NULL, replies);
    rb_err e = {0};
    cr_assert_eq(rb_client_call(c, "X", NULL, &e), RB_EPROTO);
    cr_assert_eq(rb_client_call(c, "Y", NULL, &e), RB_ECONN);
    cr_assert(strstr(e.msg, "broken"), "%s", e.msg);
    rb_client_close(c);
    fake_finish(&f);
    cr_assert_eq(f.nlines, 2, "Y must not be sent");
}

Test(client_resp, server_close_is_econn)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    rb_client *c = client_with(&f, NULL, NULL);
    /* the fake has no more replies: it reads X into its trailer... */
    rb_err e = {0};
    shutdown(f.fd, SHUT_WR);
    cr_assert_eq(rb_client_call(c, "X", NULL, &e), RB_ECONN);
    cr_assert(strstr(e.msg, "closed"), "%s", e.msg);
    rb_client_close(c);
    fake_finish(&f);
}

Test(client_resp, timeout_is_etimedout)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    static const char *const replies[] = {"", NULL}; /* never answers X */
    rb_client_opts o = {.timeout_ms = 100};
    rb_client *c = client_with(&f, &o, replies);
    rb_err e = {0};
    cr_assert_eq(rb_client_call(c, "X", NULL, &e), RB_ETIMEDOUT);
    rb_client_close(c);
    fake_finish(&f);
}

Test(client_cmds, request_lines)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    static const char *const replies[] = {
        "+OK\r\n",                                  /* push */
        "+OK\r\n",                                  /* push_json */
        "$13\r\n{\"j1\":\"nope\"}\r\n",             /* pushb */
        "$26\r\n{\"jid\":\"j9\",\"jobtype\":\"t\"}\r\n", /* fetch */
        "+OK\r\n",                                  /* ack */
        "+OK\r\n",                                  /* fail */
        "+OK\r\n",                                  /* mutate */
        "+OK\r\n",                                  /* queue pause */
        "$-1\r\n",                                  /* job */
        "$21\r\n{\"total\":0,\"jobs\":[]}\r\n",     /* jobs */
        "+OK\r\n",                                  /* snooze */
        "-ERR unknown jid\r\n",                     /* extend */
        NULL};
    rb_client *c = client_with(&f, NULL, replies);
    rb_err e = {0};
    cr_assert_eq(rb_client_push(c, "{\"jid\":\"j1\",\"jobtype\":\"t\",\"args\":[]}", &e), 0);
    json_t *job = json_pack("{s:s, s:[i]}", "jobtype", "t2", "args", 1);
    cr_assert_eq(rb_client_push_json(c, job, &e), 0);
    const char *jid = json_string_value(json_object_get(job, "jid"));
    cr_assert_eq(strlen(jid), 24);
    json_t *rej = NULL;
    cr_assert_eq(rb_client_pushb(c, "[{\"jid\":\"j1\"}]", &rej, &e), 0, "%s", e.msg);
    cr_assert_str_eq(json_string_value(json_object_get(rej, "j1")), "nope");
    json_decref(rej);
    const char *qs[] = {"critical", "default"};
    rb_reply r;
    cr_assert_eq(rb_client_fetch(c, qs, 2, &r, &e), 0, "%s", e.msg);
    cr_assert_eq(r.type, RB_REPLY_BULK);
    cr_assert(strstr(r.str, "\"j9\""));
    cr_assert_eq(rb_client_ack(c, "we\"ird\\jid\n", &e), 0);
    const char *bt[] = {"a.c:1", "b.c:2"};
    rb_fail fl = {.jid = "j9", .errtype = "Boom", .message = "it broke", .backtrace = bt,
                  .nbacktrace = 2, .retryable = 0, .retry_after = "120",
                  .next_retry_delay = 1.5};
    cr_assert_eq(rb_client_fail(c, &fl, &e), 0);
    const char *jids[] = {"j1", "j2"};
    rb_mutate m = {.cmd = "requeue", .target = "retries", .jids = jids, .njids = 2,
                   .jobtype = "t"};
    cr_assert_eq(rb_client_mutate(c, &m, &e), 0);
    const char *q1[] = {"bulk", "*"};
    cr_assert_eq(rb_client_queue(c, "pause", q1, 2, &e), 0);
    json_t *jobj = json_true();
    cr_assert_eq(rb_client_job(c, "nope", &jobj, &e), 0);
    cr_assert_null(jobj);
    json_t *res = NULL;
    rb_jobs_query jq = {.state = "dead", .queue = "q", .limit = 10};
    cr_assert_eq(rb_client_jobs(c, &jq, &res, &e), 0, "%s", e.msg);
    cr_assert_eq(json_integer_value(json_object_get(res, "total")), 0);
    json_decref(res);
    cr_assert_eq(rb_client_snooze(c, "j9", 30, &e), 0);
    cr_assert_eq(rb_client_extend(c, "j9", 60, &e), RB_EPROTO);
    cr_assert_str_eq(e.msg, "unknown jid");
    rb_client_close(c);
    fake_finish(&f);

    json_t *p = line_json(f.lines[1], "PUSH");
    cr_assert_str_eq(json_string_value(json_object_get(p, "jid")), "j1");
    json_decref(p);
    p = line_json(f.lines[2], "PUSH");
    cr_assert_str_eq(json_string_value(json_object_get(p, "jid")), jid);
    json_decref(p);
    json_decref(job);
    cr_assert_str_eq(f.lines[3], "PUSHB [{\"jid\":\"j1\"}]");
    cr_assert_str_eq(f.lines[4], "FETCH critical default");
    p = line_json(f.lines[5], "ACK");
    cr_assert_str_eq(json_string_value(json_object_get(p, "jid")), "we\"ird\\jid\n");
    json_decref(p);
    p = line_json(f.lines[6], "FAIL");
    cr_assert_str_eq(json_string_value(json_object_get(p, "errtype")), "Boom");
    cr_assert_str_eq(json_string_value(json_object_get(p, "message")), "it broke");
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(p, "backtrace"), 1)),
                     "b.c:2");
    cr_assert(json_is_false(json_object_get(p, "retryable")));
    cr_assert_eq(json_integer_value(json_object_get(p, "retry_after")), 120);
    cr_assert_float_eq(json_real_value(json_object_get(p, "next_retry_delay")), 1.5, 1e-9);
    json_decref(p);
    p = line_json(f.lines[7], "MUTATE");
    cr_assert_str_eq(json_string_value(json_object_get(p, "cmd")), "requeue");
    cr_assert_str_eq(json_string_value(json_object_get(p, "target")), "retries");
    json_t *flt = json_object_get(p, "filter");
    cr_assert_eq(json_array_size(json_object_get(flt, "jids")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(flt, "jobtype")), "t");
    json_decref(p);
    cr_assert_str_eq(f.lines[8], "QUEUE PAUSE bulk *");
    cr_assert_str_eq(f.lines[9], "JOB {\"jid\":\"nope\"}");
    p = line_json(f.lines[10], "JOBS");
    cr_assert_str_eq(json_string_value(json_object_get(p, "state")), "dead");
    cr_assert_eq(json_integer_value(json_object_get(p, "limit")), 10);
    cr_assert_null(json_object_get(p, "offset"));
    json_decref(p);
    cr_assert_str_eq(f.lines[11], "SNOOZE {\"jid\":\"j9\",\"seconds\":30}");
    cr_assert_str_eq(f.lines[12], "EXTEND {\"jid\":\"j9\",\"reserve_for\":60}");
}

Test(client_cmds, beat_states)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    static const char *const replies[] = {
        "+OK\r\n", "$17\r\n{\"state\":\"quiet\"}\r\n", "$21\r\n{\"state\":\"terminate\"}\r\n",
        NULL};
    rb_client_opts o = {.wid = "w9"};
    rb_client *c = client_with(&f, &o, replies);
    rb_err e = {0};
    rb_beat_state st;
    cr_assert_eq(rb_client_beat(c, NULL, -1, &st, &e), 0);
    cr_assert_eq(st, RB_BEAT_OK);
    cr_assert_eq(rb_client_beat(c, "quiet", 1024, &st, &e), 0, "%s", e.msg);
    cr_assert_eq(st, RB_BEAT_QUIET);
    cr_assert_eq(rb_client_beat(c, NULL, -1, &st, &e), 0, "%s", e.msg);
    cr_assert_eq(st, RB_BEAT_TERMINATE);
    rb_client_close(c);
    fake_finish(&f);
    cr_assert_str_eq(f.lines[1], "BEAT {\"wid\":\"w9\"}");
    cr_assert_str_eq(f.lines[2], "BEAT {\"wid\":\"w9\",\"current_state\":\"quiet\",\"rss_kb\":1024}");
}

Test(client_cmds, beat_needs_wid)
{
    fake f = {.greeting = "+HI {\"v\":2}\r\n"};
    rb_client *c = client_with(&f, NULL, NULL);
    rb_err e = {0};
    cr_assert_eq(rb_client_beat(c, NULL, -1, NULL, &e), RB_EINVAL);
    const char *none[] = {"x"};
    cr_assert_eq(rb_client_fetch(c, none, 0, NULL, &e), RB_EINVAL);
    cr_assert_eq(rb_client_queue(c, "explode", none, 1, &e), RB_EINVAL);
    rb_client_close(c);
    fake_finish(&f);
    cr_assert_eq(f.nlines, 1, "only HELLO was sent");
}
