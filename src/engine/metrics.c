/* The metrics' counters, histograms and throughput history (metrics.h);
 * metrics_text.c writes them out. */
#include "engine/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "engine/metrics_impl.h"

static const double delay_bounds[] = {1,    5,     10,    30,    60,     300,    900,   1800,
                                      3600, 10800, 21600, 43200, 86400, 259200, 604800};
static const double lateness_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,   1,    2.5,   5,    10};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
static const double commit_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                       0.05,   0.1,   0.25,   0.5,   1,    2.5};

#define NB(a) (sizeof a / sizeof a[0])

static void hist_init(rb_histogram *h, const double *bounds, size_t n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n = n;
}

void rb_histogram_observe(rb_histogram *h, double v)
{
    size_t i = 0;
    while (i < h->n && v > h->bounds[i])
        i++;
    h->buckets[i]++; /* i == n: only in +Inf */
    h->count++;
    h->sum += v;
}

static const char *series_key(const void *e)
{
    return ((const rb_series *)e)->key;
}

rb_metrics *rb_metrics_new(void)
{
    rb_metrics *m = rb_xcalloc(1, sizeof *m);
    rb_table_init(&m->series, offsetof(rb_series, hnext), series_key);
    hist_init(&m->retry_delay, delay_bounds, NB(delay_bounds));
    hist_init(&m->lateness, lateness_bounds, NB(lateness_bounds));
    hist_init(&m->batch_ops, batch_bounds, NB(batch_bounds));
    hist_init(&m->commit_s, commit_bounds, NB(commit_bounds));
    return m;
}

static void series_free(void *e, void *arg)
{
    (void)arg;
    free(e);
}

void rb_metrics_free(rb_metrics *m)
{
    if (!m)
        return;
    rb_table_each(&m->series, series_free, NULL);
    rb_table_release(&m->series);
    free(m);
}

/* Skips a JSON string starting at its opening quote; returns the character
 * after the closing quote, or NULL when the text ends inside the string. */
static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : NULL;
}

void rb_metrics_jobtype(const char *json, char *out, size_t outlen)
{
    snprintf(out, outlen, "unknown");
    int depth = 0;
    bool want_key = false; /* at depth 1, after '{' or ',' */
    for (const char *p = json; p && *p;) {
        char c = *p;
        if (c == '"') {
            const char *end = skip_string(p);
            if (!end)
                return;
            if (depth == 1 && want_key && end - p == 9 && !strncmp(p, "\"jobtype\"", 9)) {
                const char *v = end;
                while (*v == ' ' || *v == ':' || *v == '\t' || *v == '\n' || *v == '\r')
                    v++;
                if (*v != '"')
                    return; /* not a string: "unknown" */
                const char *vend = skip_string(v);
                if (!vend)
                    return;
                size_t n = (size_t)(vend - v) - 2;
                if (n >= outlen)
                    n = outlen - 1;
                memcpy(out, v + 1, n);
                out[n] = '\0';
                return;
            }
            want_key = false;
            p = end;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
            want_key = c == '{' && depth == 1;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',') {
            want_key = depth == 1;
        }
        p++;
    }
}

static rb_series *series_for(rb_metrics *m, const char *queue, const char *jobtype)
{
    char key[512];
    snprintf(key, sizeof key, "%s\x1f%s", queue, jobtype);
    rb_series *s = rb_table_get(&m->series, key);
    if (s)
        return s;
    if (m->series.size >= RB_METRICS_MAX_SERIES) {
        snprintf(key, sizeof key, "%s\x1f_other", queue);
        if ((s = rb_table_get(&m->series, key)))
            return s;
    }
    size_t kl = strlen(key);
    s = rb_xcalloc(1, sizeof *s + kl + 1);
    memcpy(s->key, key, kl + 1);
    char *sep = strchr(s->key, '\x1f');
    s->qlen = (size_t)(sep - s->key);
    s->jobtype = sep + 1;
    rb_table_put(&m->series, s);
    return s;
}

void rb_metrics_event(rb_metrics *m, rb_metric_event ev, const char *queue, const char *json)
{
    if (!m || ev < 0 || ev >= RB_M_EVENTS)
        return;
    char jt[128] = "unknown";
    if (json)
        rb_metrics_jobtype(json, jt, sizeof jt);
    series_for(m, queue ? queue : "unknown", jt)->n[ev]++;
    m->totals[ev]++;
}

void rb_metrics_event_labels(rb_metrics *m, rb_metric_event ev, const char *queue,
                             const char *jobtype)
{
    if (!m || ev < 0 || ev >= RB_M_EVENTS)
        return;
    char jt[128] = "unknown";
    if (jobtype && *jobtype) {
        bool plain = true; /* nothing the encoder escapes */
        for (const unsigned char *p = (const unsigned char *)jobtype; *p && plain; p++)
            plain = *p >= 0x20 && *p != '"' && *p != '\\' && *p != 0x7f;
        if (plain) {
            snprintf(jt, sizeof jt, "%s", jobtype);
        } else {
            json_t *s = json_string_nocheck(jobtype); /* may be cut inside UTF-8 */
            char *enc = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
            if (enc && strlen(enc) >= 2) {
                enc[strlen(enc) - 1] = '\0';
                snprintf(jt, sizeof jt, "%s", enc + 1);
            }
            free(enc);
            json_decref(s);
        }
    }
    series_for(m, queue && *queue ? queue : "unknown", jt)->n[ev]++;
    m->totals[ev]++;
}

void rb_metrics_retry_delay(rb_metrics *m, int64_t delay_ms)
{
    if (m)
        rb_histogram_observe(&m->retry_delay, (double)delay_ms / 1000.0);
}

void rb_metrics_lateness(rb_metrics *m, int64_t late_ms)
{
    if (m)
        rb_histogram_observe(&m->lateness, (double)(late_ms > 0 ? late_ms : 0) / 1000.0);
}

void rb_metrics_commit(void *arg, size_t n_ops, int64_t commit_us)
{
    rb_metrics *m = arg;
    if (!m)
        return;
    rb_histogram_observe(&m->batch_ops, (double)n_ops);
    rb_histogram_observe(&m->commit_s, (double)commit_us / 1e6);
}

void rb_metrics_claims(rb_metrics *m, bool wake, size_t statements, size_t empty)
{
    if (!m)
        return;
    m->claims[wake] += statements;
    m->claims_empty[wake] += empty;
}

uint64_t rb_metrics_total(const rb_metrics *m, rb_metric_event ev)
{
    return m && ev >= 0 && ev < RB_M_EVENTS ? m->totals[ev] : 0;
}

void rb_metrics_sample(rb_metrics *m, int64_t now_s)
{
    if (!m)
        return;
    if (m->n_hist > 0) {
        size_t last = (m->hist_start + m->n_hist - 1) % RB_METRICS_HISTORY;
        if (m->hist[last].t_s == now_s)
            return;
    }
    rb_sample s = {now_s, m->totals[RB_M_PUSHED], m->totals[RB_M_PROCESSED],
                   m->totals[RB_M_FAILED]};
    if (m->n_hist < RB_METRICS_HISTORY) {
        m->hist[(m->hist_start + m->n_hist) % RB_METRICS_HISTORY] = s;
        m->n_hist++;
    } else {
        m->hist[m->hist_start] = s;
        m->hist_start = (m->hist_start + 1) % RB_METRICS_HISTORY;
    }
}

void rb_metrics_history(const rb_metrics *m,
                        void (*fn)(void *arg, int64_t t_s, uint64_t pushed, uint64_t processed,
                                   uint64_t failed),
                        void *arg)
{
    if (!m)
        return;
    for (size_t i = 1; i < m->n_hist; i++) {
        const rb_sample *a = &m->hist[(m->hist_start + i - 1) % RB_METRICS_HISTORY];
        const rb_sample *b = &m->hist[(m->hist_start + i) % RB_METRICS_HISTORY];
        fn(arg, b->t_s, b->pushed - a->pushed, b->processed - a->processed, b->failed - a->failed);
    }
}
