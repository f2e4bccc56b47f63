/* The Prometheus text exposition (format 0.0.4) of the metrics and of the
 * server's current state, for GET /metrics. */
#include "server/metrics.h"

#include "engine/metrics_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/version.h"
#include "server/cron.h"
#include "server/forward.h"
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
        {"rebound_jobs_expired_total", "jobs dropped unrun because their expires_at passed"},
        {"rebound_debounce_merged_total", "pushes merged into their debounce key's pending job"},
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

static void queue_lines(rb_buf *out, const rb_metrics_state *st, int what)
{
    static const char *names[] = {"rebound_queue_size", "rebound_queue_paused",
                                  "rebound_queue_latency_seconds"};
    for (size_t i = 0; i < st->n_queues; i++) {
        const rb_metrics_queue *q = &st->queues[i];
        rb_buf_printf(out, "%s{queue=\"", names[what]);
        add_label(out, q->name, strlen(q->name));
        if (what == 0)
            rb_buf_printf(out, "\"} %lld\n", (long long)q->size);
        else if (what == 1)
            rb_buf_printf(out, "\"} %d\n", q->paused ? 1 : 0);
        else
            rb_buf_printf(out, "\"} %.3f\n", q->latency_s);
    }
}

/* Each throttled queue's limit, timeout and slots in use (the slots only
 * where the engine counts them). */
static void throttle_lines(rb_buf *out, const rb_metrics_state *st)
{
    static const struct {
        const char *name, *help;
    } g[] = {
        {"rebound_throttle_limit", "a throttled queue's concurrency: at most this many of its "
                                   "jobs working at once ([throttles.QUEUE])"},
        {"rebound_throttle_timeout_seconds", "a throttled queue's slot timeout (0: none)"},
        {"rebound_throttle_slots_in_use", "a throttled queue's slots held now (working jobs "
                                          "whose slot has not timed out)"},
    };
    if (!st->n_throttles)
        return;
    for (int k = 0; k < 3; k++) {
        head(out, g[k].name, "gauge", g[k].help);
        for (size_t i = 0; i < st->n_throttles; i++) {
            const rb_metrics_throttle *t = &st->throttles[i];
            int64_t v = k == 0 ? t->concurrency : k == 1 ? t->timeout_s : t->in_use;
            if (v < 0)
                continue;
            rb_buf_printf(out, "%s{queue=\"", g[k].name);
            add_label(out, t->queue, strlen(t->queue));
            rb_buf_printf(out, "\"} %lld\n", (long long)v);
        }
    }
}

/* A throttle's rate, and per queue its groups (active, held, paused) and
 * held-back starts by reason (INFO's rebound.groups; no per-group labels:
 * their number is unbounded). */
static void flow_lines(rb_buf *out, const rb_metrics_state *st)
{
    static const char *const rate_names[3][2] = {
        {"rebound_throttle_rate", "a throttled queue's rate: starts per period ([throttles.QUEUE] rate)"},
        {"rebound_throttle_period_seconds", "a throttled queue's rate period"},
        {"rebound_throttle_burst", "a throttled queue's burst beyond its rate"},
    };
    bool rates = false;
    for (size_t i = 0; i < st->n_throttles; i++)
        rates |= st->throttles[i].rate > 0;
    for (int k = 0; rates && k < 3; k++) {
        head(out, rate_names[k][0], "gauge", rate_names[k][1]);
        for (size_t i = 0; i < st->n_throttles; i++) {
            const rb_metrics_throttle *t = &st->throttles[i];
            if (!t->rate)
                continue;
            rb_buf_printf(out, "%s{queue=\"", rate_names[k][0]);
            add_label(out, t->queue, strlen(t->queue));
            if (k == 1)
                rb_buf_printf(out, "\"} %.3f\n", (double)t->period_ms / 1000.0);
            else
                rb_buf_printf(out, "\"} %lld\n", (long long)(k == 0 ? t->rate : t->burst));
        }
    }
    const json_t *by = json_object_get(st->groups, "by_queue");
    if (!json_is_object(by))
        return;
    static const char *const reasons[] = {"concurrency", "rate", "paused", "queue_rate"};
    static const struct {
        const char *name, *type, *help;
    } g[] = {
        {"rebound_group_holds_total", "counter",
         "held-back starts: a group entered a hold (concurrency, rate, paused) or a FETCH passed "
         "the queue over for its [throttles] rate (queue_rate)"},
        {"rebound_groups_active", "gauge", "named groups with jobs and no hold"},
        {"rebound_groups_held", "gauge", "named groups held by their concurrency or rate"},
        {"rebound_groups_paused", "gauge", "named groups paused (GROUP PAUSE)"},
    };
    for (int k = 0; k < 4; k++) {
        head(out, g[k].name, g[k].type, g[k].help);
        const char *q;
        const json_t *v;
        json_object_foreach((json_t *)by, q, v) {
            int n = k == 0 ? 4 : k == 2 ? 2 : 1;
            for (int r = 0; r < n; r++) {
                const json_t *x = k == 0   ? json_object_get(json_object_get(v, "holds"), reasons[r])
                                  : k == 1 ? json_object_get(v, "active")
                                  : k == 2 ? json_object_get(json_object_get(v, "held"), reasons[r])
                                           : json_object_get(v, "paused");
                rb_buf_printf(out, "%s{queue=\"", g[k].name);
                add_label(out, q, strlen(q));
                if (k == 0 || k == 2)
                    rb_buf_printf(out, "\",reason=\"%s", reasons[r]);
                rb_buf_printf(out, "\"} %lld\n", (long long)json_integer_value(x));
            }
        }
    }
}

void rb_metrics_render_state(const rb_metrics *m, const rb_srv *srv, const rb_metrics_state *st,
                             rb_buf *out)
{
    if (m)
        counters(m, out);
    int64_t now = rb_now_ms();
    if (st->has_link) {
        head(out, "rebound_database_up", "gauge",
             "1 while this node can commit to its database (distributed mode), 0 while it cannot "
             "reach it");
        rb_buf_printf(out, "rebound_database_up %d\n", st->link_up ? 1 : 0);
        head(out, "rebound_database_state_since_timestamp_seconds", "gauge",
             "when rebound_database_up last changed (or the node started)");
        rb_buf_printf(out, "rebound_database_state_since_timestamp_seconds %.3f\n",
                      (double)st->link_since_ms / 1000.0);
        head(out, "rebound_database_last_commit_timestamp_seconds", "gauge",
             "this node's last successful round trip to its database");
        rb_buf_printf(out, "rebound_database_last_commit_timestamp_seconds %.3f\n",
                      (double)st->last_commit_ms / 1000.0);
    }
    if (st->jobs_unknown)
        goto node;
    head(out, "rebound_queue_size", "gauge", "jobs waiting in the queue");
    queue_lines(out, st, 0);
    head(out, "rebound_queue_paused", "gauge", "1 when the queue is paused");
    queue_lines(out, st, 1);
    head(out, "rebound_queue_latency_seconds", "gauge", "age of the oldest waiting job");
    queue_lines(out, st, 2);

    head(out, "rebound_jobs", "gauge", "jobs by state");
    rb_buf_printf(out,
                  "rebound_jobs{state=\"scheduled\"} %lld\nrebound_jobs{state=\"enqueued\"} %lld\n"
                  "rebound_jobs{state=\"working\"} %lld\nrebound_jobs{state=\"retries\"} %lld\n"
                  "rebound_jobs{state=\"dead\"} %lld\nrebound_jobs{state=\"waiting\"} %lld\n"
                  "rebound_jobs{state=\"blocked\"} %lld\n",
                  (long long)st->scheduled, (long long)st->enqueued, (long long)st->working,
                  (long long)st->retries, (long long)st->dead, (long long)st->waiting,
                  (long long)st->blocked);
    if (st->has_batches) {
        head(out, "rebound_batches_open", "gauge",
             "batches whose callbacks have not all run (uncommitted ones included)");
        rb_buf_printf(out, "rebound_batches_open %lld\n", (long long)st->batches_open);
        head(out, "rebound_batch_callbacks_total", "counter",
             "batch callback jobs enqueued (complete, success, death)");
        rb_buf_printf(out, "rebound_batch_callbacks_total %lld\n", (long long)st->batch_callbacks);
    }
    if (st->has_unique) {
        head(out, "rebound_unique_locks", "gauge",
             "unique locks held (some may have run out, freed at the next push of their key)");
        rb_buf_printf(out, "rebound_unique_locks %lld\n", (long long)st->unique_locks);
        head(out, "rebound_unique_rejected_total", "counter",
             "pushes refused NOTUNIQUE since the server started");
        rb_buf_printf(out, "rebound_unique_rejected_total %lld\n", (long long)st->unique_rejected);
    }
    if (st->debounce_pending >= 0) {
        head(out, "rebound_debounce_pending", "gauge",
             "debounce keys with a pending job (pushed, not fetched yet)");
        rb_buf_printf(out, "rebound_debounce_pending %lld\n", (long long)st->debounce_pending);
    }
    if (st->has_expired) {
        head(out, "rebound_jobs_expired_stored_total", "counter",
             "jobs dropped unrun because their expires_at passed, all time as the store counts "
             "them (the cluster's in distributed mode; FLUSH zeroes it)");
        rb_buf_printf(out, "rebound_jobs_expired_stored_total %lld\n", (long long)st->expired);
    }
    throttle_lines(out, st);
    flow_lines(out, st);
    if (srv->cfg.n_cron) {
        head(out, "rebound_cron_fired_total", "counter",
             "jobs [[cron]] entries enqueued since the server started");
        rb_buf_printf(out, "rebound_cron_fired_total %lld\n", (long long)rb_cron_fired(srv));
        head(out, "rebound_cron_last_tick_timestamp_seconds", "gauge",
             "each [[cron]] entry's last fired tick as the store keeps it (0: never)");
        for (size_t i = 0; i < srv->cfg.n_cron; i++) {
            rb_buf_adds(out, "rebound_cron_last_tick_timestamp_seconds{entry=\"");
            add_label(out, srv->cfg.cron[i].name, strlen(srv->cfg.cron[i].name));
            rb_buf_printf(out, "\"} %lld\n", (long long)rb_cron_last_tick(srv, i));
        }
    }
    head(out, "rebound_jobs_in_flight", "gauge", "jobs reserved by workers (fetched, not yet ACKed or FAILed)");
    rb_buf_printf(out, "rebound_jobs_in_flight %lld\n", (long long)st->working);
node:
    head(out, "rebound_connections", "gauge", "open work-protocol connections");
    rb_buf_printf(out, "rebound_connections %zu\n", srv->conns.size);
    rb_forward_stats fs; /* storage.forward (server/forward.h) */
    if (rb_forward_stats_of(srv, &fs)) {
        head(out, "rebound_forward_leader", "gauge", "1 while this node holds the leader lease");
        rb_buf_printf(out, "rebound_forward_leader %d\n", fs.leader ? 1 : 0);
        head(out, "rebound_forward_relays", "gauge",
             "client connections open that this node relays to the leader");
        rb_buf_printf(out, "rebound_forward_relays %llu\n", (unsigned long long)fs.open);
        head(out, "rebound_forward_relayed_total", "counter",
             "client connections this node relayed to the leader");
        rb_buf_printf(out, "rebound_forward_relayed_total %llu\n", (unsigned long long)fs.total);
        head(out, "rebound_forward_fallbacks_total", "counter",
             "client connections served here because the leader could not be reached");
        rb_buf_printf(out, "rebound_forward_fallbacks_total %llu\n",
                      (unsigned long long)fs.fallbacks);
    }
    head(out, "rebound_workers", "gauge", "worker processes known by their HELLO wid");
    rb_buf_printf(out, "rebound_workers %zu\n", rb_eng_workers_count(srv->eng));
    head(out, "rebound_uptime_seconds", "gauge", "seconds since the server started");
    rb_buf_printf(out, "rebound_uptime_seconds %lld\n", (long long)((now - srv->started_ms) / 1000));
    head(out, "rebound_build_info", "gauge",
         "always 1; labels: Rebound's version and the Faktory release whose protocol it speaks");
    rb_buf_printf(out, "rebound_build_info{version=\"%s\",faktory_protocol_version=\"%s\"} 1\n",
                  RB_VERSION, RB_FAKTORY_VERSION);
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
    if (!srv->eng->backend || !srv->eng->backend->counts_claims)
        return;
    static const char *const trigger[2] = {"fetch", "wake"};
    head(out, "rebound_fetch_claims_total", "counter",
         "claim statements this node ran for FETCHes (distributed mode; trigger wake: "
         "for FETCHes parked and woken, one per queue list a round)");
    for (int i = 0; i < 2; i++)
        rb_buf_printf(out, "rebound_fetch_claims_total{trigger=\"%s\"} %llu\n", trigger[i],
                      (unsigned long long)m->claims[i]);
    head(out, "rebound_fetch_claims_empty_total", "counter",
         "claim statements of rebound_fetch_claims_total that found no job");
    for (int i = 0; i < 2; i++)
        rb_buf_printf(out, "rebound_fetch_claims_empty_total{trigger=\"%s\"} %llu\n", trigger[i],
                      (unsigned long long)m->claims_empty[i]);
}
