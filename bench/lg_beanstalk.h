/* The beanstalkd protocol for the load generator: put / reserve-with-timeout
 * / delete / release on tube "bench", with the same job body as Faktory's. */
#ifndef RB_BENCH_LG_BEANSTALK_H
#define RB_BENCH_LG_BEANSTALK_H

#include "common/timeutil.h"
#include "lg_proto.h"

#define BS_PRI 1024
#define BS_TTR 120

static int bs_expect(lg_conn *c, const char *what, const char *prefix)
{
    char *line = lg_conn_line(c, NULL);
    if (!line || strncmp(line, prefix, strlen(prefix)) != 0)
        return lg_unexpected("beanstalk", what, line);
    return 0;
}

static int bs_hello(lg_conn *c, const char *wid)
{
    if (!wid) {
        rb_buf_adds(&c->out, "use bench\r\n");
        if (lg_conn_flush(c) < 0)
            return -1;
        return bs_expect(c, "use", "USING bench");
    }
    rb_buf_adds(&c->out, "watch bench\r\nignore default\r\n");
    if (lg_conn_flush(c) < 0)
        return -1;
    if (bs_expect(c, "watch", "WATCHING") < 0)
        return -1;
    return bs_expect(c, "ignore", "WATCHING");
}

/* Appends one put command for job seq with a delay in whole seconds. */
static void bs_put(lg_conn *c, unsigned run, long seq, long delay_s)
{
    rb_buf body = RB_BUF_INIT;
    lg_body(&body, run, seq, "");
    rb_buf_printf(&c->out, "put %d %ld %d %zu\r\n%s\r\n", BS_PRI, delay_s, BS_TTR, body.len,
                  body.data);
    rb_buf_release(&body);
}

static int bs_push(lg_conn *c, unsigned run, long seq, int64_t delay_ms, int64_t *due_ms)
{
    /* beanstalkd delays are whole seconds; round up so the job is never due
     * earlier than asked. */
    long delay_s = (long)((delay_ms + 999) / 1000);
    *due_ms = rb_now_ms() + (int64_t)delay_s * 1000;
    bs_put(c, run, seq, delay_s);
    if (lg_conn_flush(c) < 0)
        return -1;
    return bs_expect(c, "put", "INSERTED ");
}

static int bs_push_many(lg_conn *c, unsigned run, long first, long n)
{
    for (long i = 0; i < n; i++)
        bs_put(c, run, first + i, 0);
    if (lg_conn_flush(c) < 0)
        return -1;
    for (long i = 0; i < n; i++)
        if (bs_expect(c, "put", "INSERTED ") < 0)
            return -1;
    return 0;
}

static int bs_fetch(lg_conn *c, lg_job *j)
{
    rb_buf_adds(&c->out, "reserve-with-timeout 1\r\n");
    if (lg_conn_flush(c) < 0)
        return -1;
    char *line = lg_conn_line(c, NULL);
    if (!line)
        return -1;
    if (strcmp(line, "TIMED_OUT") == 0 || strcmp(line, "DEADLINE_SOON") == 0)
        return 0;
    unsigned long long id = 0;
    size_t bytes = 0;
    if (sscanf(line, "RESERVED %llu %zu", &id, &bytes) != 2)
        return lg_unexpected("beanstalk", "reserve", line);
    char *body = lg_conn_payload(c, bytes);
    if (!body)
        return -1;
    if (lg_parse_jid(body, j) < 0)
        return lg_unexpected("beanstalk", "reserve (no bench jid)", body);
    snprintf(j->id, sizeof j->id, "%llu", id);
    return 1;
}

static int bs_ack(lg_conn *c, const lg_job *j)
{
    rb_buf_printf(&c->out, "delete %s\r\n", j->id);
    if (lg_conn_flush(c) < 0)
        return -1;
    return bs_expect(c, "delete", "DELETED");
}

static int bs_fail(lg_conn *c, const lg_job *j, int64_t delay_ms)
{
    rb_buf_printf(&c->out, "release %s %d %ld\r\n", j->id, BS_PRI, (long)((delay_ms + 999) / 1000));
    if (lg_conn_flush(c) < 0)
        return -1;
    return bs_expect(c, "release", "RELEASED");
}

static const lg_proto lg_beanstalk = {
    "beanstalk", bs_hello, bs_push, bs_push_many, bs_fetch, bs_ack, bs_fail,
};

#endif
