/* The load generator's view of a work queue: one table of operations that
 * bench/lg_faktory.h (Rebound) and bench/lg_beanstalk.h (beanstalkd) fill,
 * plus the job body both servers carry, byte for byte the same. */
#ifndef RB_BENCH_LG_PROTO_H
#define RB_BENCH_LG_PROTO_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lg_conn.h"

/* A fetched job: the server's handle for it and the load generator's
 * sequence number (parsed from the jid "bench-RUN-SEQ"). */
typedef struct lg_job {
    char id[96]; /* Faktory jid or beanstalkd job id */
    long seq;
} lg_job;

typedef struct lg_proto {
    const char *name;
    /* Handshake and queue selection; wid NULL for a producer. 0 or -1. */
    int (*hello)(lg_conn *c, const char *wid);
    /* Pushes job seq, due delay_ms from now (0 = ready now). Sets *due_ms to
     * the wall-clock time (ms) the job becomes due as sent to the server. */
    int (*push)(lg_conn *c, unsigned run, long seq, int64_t delay_ms, int64_t *due_ms);
    /* Pushes jobs first..first+n-1 ready now, pipelined or batched. */
    int (*push_many)(lg_conn *c, unsigned run, long first, long n);
    /* Waits (about a second or two) for a job: 1 got one, 0 none, -1 error. */
    int (*fetch)(lg_conn *c, lg_job *j);
    int (*ack)(lg_conn *c, const lg_job *j);
    /* Fails the job so it runs again after delay_ms. */
    int (*fail)(lg_conn *c, const lg_job *j, int64_t delay_ms);
} lg_proto;

/* The body of job seq: {"jid":"bench-RUN-SEQ","jobtype":"bench",...}.
 * `extra` is inserted before the closing brace (e.g. ,"at":"...") or "". */
/* Groups (issue 30, --groups): 0 = jobs name no group. With
 * lg_fair_split >= 0 (the fairness workload) seqs below it are the small
 * tenant "b" and the rest the backlog tenant "a"; otherwise job seq is in
 * group "g%03ld" of seq mod lg_groups. Set once before any thread starts. */
static long lg_groups;
static long lg_fair_split = -1;

static void lg_body(rb_buf *b, unsigned run, long seq, const char *extra)
{
    rb_buf_printf(b, "{\"jid\":\"bench-%08x-%ld\",\"jobtype\":\"bench\",\"queue\":\"bench\","
                     "\"args\":[%ld]%s", run, seq, seq, extra);
    if (lg_groups > 0 && lg_fair_split >= 0)
        rb_buf_printf(b, ",\"custom\":{\"group\":\"%s\"}", seq < lg_fair_split ? "b" : "a");
    else if (lg_groups > 0)
        rb_buf_printf(b, ",\"custom\":{\"group\":\"g%03ld\"}", seq % lg_groups);
    rb_buf_addc(b, '}');
}

/* Finds "jid" in a job's JSON text and fills j. Returns 0, or -1 when the
 * text holds no jid of ours. */
static int lg_parse_jid(const char *json, lg_job *j)
{
    const char *p = strstr(json, "\"jid\"");
    if (!p)
        return -1;
    p += 5;
    while (*p == ' ' || *p == ':')
        p++;
    if (*p++ != '"')
        return -1;
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= sizeof j->id)
        return -1;
    memcpy(j->id, p, (size_t)(q - p));
    j->id[q - p] = '\0';
    const char *dash = strrchr(j->id, '-');
    if (!dash)
        return -1;
    j->seq = strtol(dash + 1, NULL, 10);
    return 0;
}

/* Set once the run is over: connections cut on purpose are not news. */
static atomic_int lg_quiet;

/* Reports an unexpected reply on stderr (unless lg_quiet) and returns -1. */
static int lg_unexpected(const char *proto, const char *what, const char *line)
{
    if (atomic_load(&lg_quiet))
        return -1;
    fprintf(stderr, "loadgen: %s: unexpected reply to %s: %.200s\n", proto, what,
            line ? line : "(connection closed)");
    return -1;
}

#endif
