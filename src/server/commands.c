/* The command table (name, argument rule, handler) and the connection-level
 * commands: HELLO, END, BEAT (the worker's HELLO and BEAT are engine ops:
 * where beats and signals are kept is the backend's). Every malformed line gets
 * an error reply that says what was wrong and changes nothing. */
#include "server/cmds.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timeutil.h"
#include "server/auth.h"
#include "common/log.h"

enum arg_rule { ARG_NONE, ARG_REQUIRED, ARG_OPTIONAL };

static void cmd_hello(rb_conn *c, char *arg);
static void cmd_end(rb_conn *c, char *arg);
static void cmd_beat(rb_conn *c, char *arg);

static const struct command {
    const char *name;
    enum arg_rule arg;
    void (*fn)(rb_conn *c, char *arg);
} commands[] = {
    {"HELLO", ARG_REQUIRED, cmd_hello},
    {"END", ARG_NONE, cmd_end},
    {"BEAT", ARG_REQUIRED, cmd_beat},
    {"PUSH", ARG_REQUIRED, rb_cmd_push},
    {"PUSHB", ARG_REQUIRED, rb_cmd_pushb},
    {"FETCH", ARG_OPTIONAL, rb_cmd_fetch},
    {"ACK", ARG_REQUIRED, rb_cmd_ack},
    {"FAIL", ARG_REQUIRED, rb_cmd_fail},
    {"SNOOZE", ARG_REQUIRED, rb_cmd_snooze},
    {"EXTEND", ARG_REQUIRED, rb_cmd_extend},
    {"INFO", ARG_NONE, rb_cmd_info},
    {"FLUSH", ARG_NONE, rb_cmd_flush},
    {"MUTATE", ARG_REQUIRED, rb_cmd_mutate},
    {"QUEUE", ARG_REQUIRED, rb_cmd_queue},
    {"JOB", ARG_REQUIRED, rb_cmd_job},
    {"JOBS", ARG_REQUIRED, rb_cmd_jobs},
    {"WORKERS", ARG_REQUIRED, rb_cmd_workers},
    {"BATCH", ARG_REQUIRED, rb_cmd_batch},
    {"WORKFLOW", ARG_REQUIRED, rb_cmd_workflow},
    {"BATCHES", ARG_REQUIRED, rb_cmd_batches},
    {"TRACK", ARG_REQUIRED, rb_cmd_track},
    {"BACKUP", ARG_REQUIRED, rb_cmd_backup},
    {"GROUP", ARG_REQUIRED, rb_cmd_group},
    {"GROUPS", ARG_OPTIONAL, rb_cmd_groups},
};

json_t *rb_cmd_json_arg(rb_conn *c, const char *verb, const char *arg, int want_type)
{
    json_error_t e;
    json_t *v = json_loads(arg, JSON_DECODE_ANY, &e);
    if (!v) {
        rb_reply_err(c, "%s: invalid JSON at column %d: %s", verb, e.column, e.text);
        return NULL;
    }
    if (want_type >= 0 && (int)json_typeof(v) != want_type) {
        rb_reply_err(c, "%s: argument must be a JSON %s", verb,
                     want_type == JSON_OBJECT ? "object" : "array");
        json_decref(v);
        return NULL;
    }
    return v;
}

const char *rb_cmd_jid(rb_conn *c, const char *verb, const json_t *o)
{
    const char *jid = json_string_value(json_object_get(o, "jid"));
    if (!jid || !*jid) {
        rb_reply_err(c, "%s: jid must be a non-empty string", verb);
        return NULL;
    }
    return jid;
}

void rb_command_run(rb_conn *c, char *line)
{
    rb_srv *srv = c->srv;
    srv->command_count++;
    while (*line == ' ')
        line++;
    char *arg = line + strcspn(line, " ");
    if (*arg) {
        *arg++ = '\0';
        while (*arg == ' ')
            arg++;
        size_t n = strlen(arg);
        while (n && (arg[n - 1] == ' ' || arg[n - 1] == '\t'))
            arg[--n] = '\0';
    }
    if (!c->hello_done && strcmp(line, "HELLO") != 0) {
        rb_reply_err(c, "expected HELLO, got '%.40s'", line);
        rb_conn_close(c);
        return;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcasecmp(line, commands[i].name) != 0)
            continue;
        if (commands[i].arg == ARG_REQUIRED && !*arg) {
            rb_reply_err(c, "%s requires an argument", commands[i].name);
            return;
        }
        if (commands[i].arg == ARG_NONE && *arg) {
            rb_reply_err(c, "%s takes no argument", commands[i].name);
            return;
        }
        commands[i].fn(c, arg);
        return;
    }
    if (!*line)
        rb_reply_err(c, "empty command");
    else
        rb_reply_err(c, "unknown command %.60s", line);
}

/* HELLO's +OK once the backend has the worker (engine/workers.h). */
static void hello_done(rb_srv *srv, rb_eng_op *op)
{
    rb_reply_ok(op->c); /* a store error is logged; HELLO succeeds */
    rb_eng_op_finish(srv->eng, op);
}

static void cmd_hello(rb_conn *c, char *arg)
{
    rb_srv *srv = c->srv;
    if (c->hello_done) {
        rb_reply_err(c, "HELLO: already identified");
        return;
    }
    json_t *o = rb_cmd_json_arg(c, "HELLO", arg, JSON_OBJECT);
    if (!o) {
        rb_conn_close(c);
        return;
    }
    json_t *v = json_object_get(o, "v");
    if (v && (!json_is_integer(v) || json_integer_value(v) > 2 || json_integer_value(v) < 1)) {
        rb_reply_err(c, "HELLO: unsupported protocol version (this server speaks v2)");
        json_decref(o);
        rb_conn_close(c);
        return;
    }
    if (c->iterations) {
        /* Faktory hashes once for a client below version 2 or without "v"
         * (the Python client sends none), the greeting's rounds from 2 on */
        long rounds = v && json_integer_value(v) >= 2 ? c->iterations : 1;
        const char *given = json_string_value(json_object_get(o, "pwdhash"));
        if (!rb_srv_auth_check(srv->cfg.server.password, c->salt, rounds, given)) {
            rb_log(RB_LOG_WARN, "connection refused: invalid password");
            rb_reply_err(c, "Invalid password");
            json_decref(o);
            rb_conn_close(c);
            return;
        }
    }
    c->hello_done = true;
    bufferevent_set_timeouts(c->bev, NULL, NULL); /* identified: no idle limit */
    const char *wid = json_string_value(json_object_get(o, "wid"));
    if (!wid || !*wid) {
        rb_reply_ok(c);
        json_decref(o);
        return;
    }
    c->worker = rb_eng_worker_attach(srv->eng, wid);
    rb_eng_op *op = rb_eng_op_new(RB_ENG_HELLO, c, hello_done);
    op->json = o;
    op->u.worker.wid = wid;
    op->u.worker.info = o;
    rb_eng_submit(srv->eng, op);
}

static void cmd_end(rb_conn *c, char *arg)
{
    (void)arg;
    rb_conn_close(c);
}

/* BEAT's reply: the signal the backend keeps for the worker, or the
 * server's own shutdown quiet when stronger. */
static void beat_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    rb_cmd_beat_reply(op->c, op->u.worker.signal);
    rb_eng_op_finish(srv->eng, op);
}

static void cmd_beat(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "BEAT", arg, JSON_OBJECT);
    if (!o)
        return;
    const char *wid = json_string_value(json_object_get(o, "wid"));
    if (!wid || !*wid) {
        rb_reply_err(c, "BEAT: wid must be a non-empty string");
        json_decref(o);
        return;
    }
    rb_eng_op *op = rb_eng_op_new(RB_ENG_BEAT, c, beat_done);
    op->json = o;
    op->u.worker.wid = wid;
    rb_eng_submit(c->srv->eng, op);
}

void rb_cmd_beat_reply(rb_conn *c, int signal)
{
    int sig = signal > c->srv->quiet_all ? signal : c->srv->quiet_all;
    if (sig == RB_WORKER_TERMINATE)
        rb_reply_json(c, json_pack("{s:s}", "state", "terminate"));
    else if (sig == RB_WORKER_QUIET)
        rb_reply_json(c, json_pack("{s:s}", "state", "quiet"));
    else
        rb_reply_ok(c);
}

char *rb_cmd_subcommand(char *arg)
{
    char *rest = arg + strcspn(arg, " \t");
    if (*rest) {
        *rest++ = '\0';
        rest += strspn(rest, " \t");
    }
    return rest;
}
