/* The Faktory work protocol v2 (Rebound's) for the load generator: HI/HELLO,
 * PUSH, PUSHB, FETCH, ACK, FAIL over RESP replies. */
#ifndef RB_BENCH_LG_FAKTORY_H
#define RB_BENCH_LG_FAKTORY_H

#include <unistd.h>

#include "common/timeutil.h"
#include "lg_proto.h"

/* Reads one reply expected to be +OK. */
static int fk_expect_ok(lg_conn *c, const char *what)
{
    char *line = lg_conn_line(c, NULL);
    if (!line || strcmp(line, "+OK") != 0)
        return lg_unexpected("faktory", what, line);
    return 0;
}

/* Reads a bulk reply: 1 and *out set, 0 for $-1, -1 on error. */
static int fk_bulk(lg_conn *c, const char *what, char **out)
{
    char *line = lg_conn_line(c, NULL);
    if (!line || line[0] != '$')
        return lg_unexpected("faktory", what, line);
    long n = strtol(line + 1, NULL, 10);
    if (n < 0)
        return 0;
    *out = lg_conn_payload(c, (size_t)n);
    return *out ? 1 : lg_unexpected("faktory", what, NULL);
}

static int fk_hello(lg_conn *c, const char *wid)
{
    char *line = lg_conn_line(c, NULL);
    if (!line || strncmp(line, "+HI ", 4) != 0)
        return lg_unexpected("faktory", "connect", line);
    if (strstr(line, "\"s\"")) {
        fprintf(stderr, "loadgen: faktory: the server wants a password; run it without one\n");
        return -1;
    }
    if (wid)
        rb_buf_printf(&c->out, "HELLO {\"v\":2,\"hostname\":\"bench\",\"wid\":\"%s\",\"pid\":%d,"
                               "\"labels\":[\"bench\"]}\r\n", wid, (int)getpid());
    else
        rb_buf_adds(&c->out, "HELLO {\"v\":2}\r\n");
    if (lg_conn_flush(c) < 0)
        return lg_unexpected("faktory", "HELLO", NULL);
    return fk_expect_ok(c, "HELLO");
}

static int fk_push(lg_conn *c, unsigned run, long seq, int64_t delay_ms, int64_t *due_ms)
{
    char extra[64] = "";
    int64_t now = rb_now_ms();
    *due_ms = now;
    if (delay_ms > 0) {
        char at[RB_TIME_STRLEN];
        *due_ms = now + delay_ms;
        snprintf(extra, sizeof extra, ",\"at\":\"%s\"", rb_time_format(*due_ms, at));
    }
    rb_buf_adds(&c->out, "PUSH ");
    lg_body(&c->out, run, seq, extra);
    rb_buf_adds(&c->out, "\r\n");
    if (lg_conn_flush(c) < 0)
        return lg_unexpected("faktory", "PUSH", NULL);
    return fk_expect_ok(c, "PUSH");
}

static int fk_push_many(lg_conn *c, unsigned run, long first, long n)
{
    rb_buf_adds(&c->out, "PUSHB [");
    for (long i = 0; i < n; i++) {
        if (i)
            rb_buf_addc(&c->out, ',');
        lg_body(&c->out, run, first + i, "");
    }
    rb_buf_adds(&c->out, "]\r\n");
    if (lg_conn_flush(c) < 0)
        return lg_unexpected("faktory", "PUSHB", NULL);
    char *res = NULL;
    int rc = fk_bulk(c, "PUSHB", &res);
    if (rc != 1 || strcmp(res, "{}") != 0)
        return lg_unexpected("faktory", "PUSHB", rc == 1 ? res : "$-1 or error");
    return 0;
}

static int fk_fetch(lg_conn *c, lg_job *j)
{
    rb_buf_adds(&c->out, "FETCH bench\r\n");
    if (lg_conn_flush(c) < 0)
        return -1;
    char *json = NULL;
    int rc = fk_bulk(c, "FETCH", &json);
    if (rc <= 0)
        return rc;
    if (lg_parse_jid(json, j) < 0)
        return lg_unexpected("faktory", "FETCH (no bench jid)", json);
    return 1;
}

static int fk_ack(lg_conn *c, const lg_job *j)
{
    rb_buf_printf(&c->out, "ACK {\"jid\":\"%s\"}\r\n", j->id);
    if (lg_conn_flush(c) < 0)
        return -1;
    return fk_expect_ok(c, "ACK");
}

static int fk_fail(lg_conn *c, const lg_job *j, int64_t delay_ms)
{
    /* next_retry_delay <= 0 means "none" to Rebound, so 0 becomes 1 ms. */
    double secs = delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.001;
    rb_buf_printf(&c->out, "FAIL {\"jid\":\"%s\",\"errtype\":\"BenchError\",\"message\":"
                           "\"planned failure\",\"backtrace\":[],\"next_retry_delay\":%.3f}\r\n",
                  j->id, secs);
    if (lg_conn_flush(c) < 0)
        return -1;
    return fk_expect_ok(c, "FAIL");
}

static const lg_proto lg_faktory = {
    "faktory", fk_hello, fk_push, fk_push_many, fk_fetch, fk_ack, fk_fail,
};

#endif
