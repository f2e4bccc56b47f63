/* The Prometheus text exposition (format 0.0.4) of the metrics and of the
 * server's current state, for GET /metrics. */
#include "server/metrics_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "server/srv.h"

/* A label value with \, " and newline escaped. */
static void add_label(rb_buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        char c = s[i];
        if (c == '\\' || c == '"')
            rb_buf_addc(out, '\\');
        if (c == '\n') {
            rb_buf_adds(out, "\\n");
            continue;
        }
        rb_buf_addc(out, c);
    }
}

static void head(rb_buf *out, const char *name, const char *type, const char *help)
{
    rb_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int cmp_series(const void *a, const void *b)
{
    return strcmp((*(rb_series *const *)a)->key, (*(rb_series *const *)b)->key);
}

typedef struct collect {
    rb_series **v;
    size_t n;
} collect;

static void collect_series(void *e, void *arg)
{
    collect *c = arg;
    c->v[c->n++] = e;
}

static void counters(const rb_metrics *m, rb_buf *out)
{
    static const struct {
        const char *name, *help;
    } ev[RB_M_EVENTS] = {
        {"rebound_jobs_pushed_total", "jobs pushed (counted once their commit is done)"},
        {"rebound_jobs_processed_total", "jobs acknowledged (ACK)"},
        {"rebound_jobs_failed_total", "failed executions (FAIL or an expired reservation)"},
        {"rebound_jobs_retried_total", "failures followed by a scheduled retry"},
        {"rebound_jobs_dead_total", "failures after which the job is dead"},
        {"rebound_jobs_discarded_total", "failures after which the job was discarded"},
    };
    collect c = {rb_xcalloc(m->series.size + 1, sizeof *c.v), 0};
    rb_table_each(&m->series, collect_series, &c);
    qsort(c.v, c.n, sizeof *c.v, cmp_series);
    for (int e = 0; e < RB_M_EVENTS; e++) {
        head(out, ev[e].name, "counter", ev[e].help);
        for (size_t i = 0; i < c.n; i++) {
            rb_buf_printf(out, "%s{queue=\"", ev[e].name);
            add_label(out, c.v[i]->key, c.v[i]->qlen);
            rb_buf_adds(out, "\",jobtype=\"");
            add_label(out, c.v[i]->jobtype, strlen(c.v[i]->jobtype));
            rb_buf_printf(out, "\"} %llu\n", (unsigned long long)c.v[i]->n[e]);
        }
    }
    free(c.v);
}

static void histogram(rb_buf *out, const char *name, const char *help, const rb_histogram *h)
{
    head(out, name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < h->n; i++) {
        cum += h->buckets[i];
        rb_buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
                      (unsigned long long)cum);
    }
    cum += h->buckets[h->n];
    rb_buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                  (unsigned long long)cum, name, h->sum, name, (unsigned long long)h->count);
}

typedef struct qctx {
    rb_buf *out;
    int what; /* 0 size, 1 paused, 2 latency */
    int64_t now;
} qctx;

static void queue_line(void *e, void *arg)
{
    const rb_queue *q = e;
    qctx *c = arg;
    static const char *names[] = {"rebound_queue_size", "rebound_queue_paused",
                                  "rebound_queue_latency_seconds"};
    rb_buf_printf(c->out, "%s{queue=\"", names[c->what]);
    add_label(c->out, q->name, strlen(q->name));
    if (c->what == 0) {
        rb_buf_printf(c->out, "\"} %zu\n", q->size);
    } else if (c->what == 1) {
        rb_buf_printf(c->out, "\"} %d\n", q->paused ? 1 : 0);
    } else {
        rb_buf_printf(c->out, "\"} %.3f\n", rb_queue_latency_s(q, c->now));
    }
}

void rb_metrics_render(const rb_metrics *m, const rb_srv *srv, rb_buf *out)
{
    if (m)
        counters(m, out);
    int64_t now = rb_now_ms();
    head(out, "rebound_queue_size", "gauge", "jobs waiting in the queue");
    qctx qc = {out, 0, now};
    rb_table_each(&srv->jobs.queues, queue_line, &qc);
    head(out, "rebound_queue_paused", "gauge", "1 when the queue is paused");
    qc.what = 1;
    rb_table_each(&srv->jobs.queues, queue_line, &qc);
    head(out, "rebound_queue_latency_seconds", "gauge", "age of the oldest waiting job");
    qc.what = 2;
    rb_table_each(&srv->jobs.queues, queue_line, &qc);

    head(out, "rebound_jobs", "gauge", "jobs by state");
    rb_buf_printf(out,
                  "rebound_jobs{state=\"scheduled\"} %zu\nrebound_jobs{state=\"enqueued\"} %zu\n"
                  "rebound_jobs{state=\"working\"} %zu\nrebound_jobs{state=\"retries\"} %zu\n"
                  "rebound_jobs{state=\"dead\"} %zu\n",
                  srv->jobs.scheduled.size, srv->jobs.enqueued, srv->jobs.working.size,
                  srv->jobs.retries.size, srv->jobs.dead.size);
    head(out, "rebound_jobs_in_flight", "gauge", "jobs reserved by workers (fetched, not yet ACKed or FAILed)");
    rb_buf_printf(out, "rebound_jobs_in_flight %zu\n", srv->jobs.working.size);
    head(out, "rebound_connections", "gauge", "open work-protocol connections");
    rb_buf_printf(out, "rebound_connections %zu\n", srv->conns.size);
    head(out, "rebound_workers", "gauge", "worker processes known by their HELLO wid");
    rb_buf_printf(out, "rebound_workers %zu\n", srv->workers.size);
    head(out, "rebound_uptime_seconds", "gauge", "seconds since the server started");
    rb_buf_printf(out, "rebound_uptime_seconds %lld\n", (long long)((now - srv->started_ms) / 1000));
    head(out, "rebound_commands_total", "counter", "work-protocol commands run");
    rb_buf_printf(out, "rebound_commands_total %llu\n", (unsigned long long)srv->command_count);
    if (!m)
        return;
    histogram(out, "backoff_delay_applied_seconds",
              "retry delays applied by the policy engine (seed ADR 001)", &m->retry_delay);
    histogram(out, "rebound_scheduler_lateness_seconds",
              "how late scheduled and retrying jobs were moved to their queue", &m->lateness);
    histogram(out, "rebound_commit_batch_size", "row writes per group commit", &m->batch_ops);
    histogram(out, "rebound_commit_fsync_seconds", "time of COMMIT (with its fsync) per group commit",
              &m->commit_s);
}
