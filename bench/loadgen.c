/* Rebound's load generator: drives Rebound (Faktory protocol v2) or beanstalkd
 * with producer and worker threads, one blocking TCP_NODELAY connection each,
 * and prints one figure per line ("workload.metric value") for bench/run.sh.
 * Usage: loadgen --help. */
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "common/timeutil.h"
#include "lg_beanstalk.h"
#include "lg_conn.h"
#include "lg_faktory.h"
#include "lg_proto.h"
#include "lg_stats.h"

typedef enum workload { WL_LIFECYCLE, WL_RETRIES, WL_DEPTH, WL_SCHED, WL_LATENCY, WL_FAIRNESS } workload;
static const char *const wl_names[] = {"lifecycle", "retries", "depth", "sched", "latency",
                                       "fairness"};

#define PREFILL_BATCH 1000

static struct opts {
    const lg_proto *proto;
    const char *host;
    int port;
    int ports[8];       /* --port P1,P2,...: connection i uses ports[i % n_ports] */
    int n_ports;
    int wports[8];      /* --worker-port: the workers' own list (default: ports) */
    int n_wports;
    workload wl;
    int producers, workers;
    long jobs;          /* jobs pushed and acked in the timed phase */
    long prefill;       /* jobs waiting before the timed phase (depth) */
    double rate;        /* pushes per second over all producers; 0 = flat out */
    int64_t delay_ms;   /* sched: how far ahead scheduled jobs are due */
    int64_t retry_ms;   /* sched: retry delay of the failing half */
    int fail_pct;       /* retries: share of first attempts that fail */
    int server_pid;     /* for RSS and CPU figures; 0 = none */
    const char *data_dir; /* for bytes on disk; NULL = none */
    int timeout_s;
    int push_batch;     /* jobs per PUSHB (1 = one PUSH per job) */
    int drain_ms;       /* after the last ACK, workers go on fetching this long */
    long dup_seq;       /* >= 0: push job dup_seq once more (checks the checker) */
    const char *tag;    /* the figures' prefix (default: the workload's name) */
} O = {
    .host = "127.0.0.1", .producers = 4, .workers = 8, .jobs = 100000,
    .delay_ms = 1000, .retry_ms = 1000, .fail_pct = 10, .timeout_s = 600,
    .push_batch = 1, .dup_seq = -1,
};

/* Shared between threads. Per-job arrays are indexed by seq; seqs at or
 * above O.jobs are prefilled jobs (no timing kept). */
static struct state {
    unsigned run;                 /* makes jids unique per run */
    long nseq;                    /* O.jobs + O.prefill */
    _Atomic int64_t *sent_us;     /* monotonic time each push was sent */
    _Atomic int64_t *due_ms;      /* sched: wall time each job is due */
    int64_t *sample_us;           /* latency or lateness at fetch; INT64_MIN = none */
    atomic_uchar *failed;         /* first attempt already failed */
    atomic_uchar *acks;           /* ACKs that succeeded per seq (saturates) */
    atomic_long acked, fails, errors, duplicates;
    atomic_int done;
    int64_t t0_us;
    _Atomic int64_t t_end_us, t_push_end_us;
    atomic_int producers_left;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

typedef struct thread_arg {
    lg_conn conn;
    int idx;
    pthread_t tid;
} thread_arg;

static void signal_main(void)
{
    pthread_mutex_lock(&S.mu);
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
}

static void note_error(void)
{
    atomic_fetch_add(&S.errors, 1);
    signal_main();
}

/* Whether this job's first attempt is to fail. */
static bool planned_failure(long seq)
{
    if (seq >= O.jobs)
        return false;
    if (O.wl == WL_RETRIES)
        return seq % 100 < O.fail_pct;
    if (O.wl == WL_SCHED)
        return seq % 2 == 1; /* odd seqs: the retry half; even: scheduled */
    return false;
}

/* The acks that end the timed phase: the fairness run drains its backlog
 * too (its end is the backlog's drain time), the others stop at --jobs. */
static long done_target(void)
{
    return O.wl == WL_FAIRNESS ? S.nseq : O.jobs;
}

static void *worker_main(void *arg)
{
    thread_arg *t = arg;
    lg_job j;
    while (!atomic_load(&S.done)) {
        int rc = O.proto->fetch(&t->conn, &j);
        if (rc == 0)
            continue;
        if (rc < 0)
            goto out;
        int64_t now_us = lg_mono_us(), wall_us = lg_wall_us();
        long s = j.seq;
        if (s < 0 || s >= S.nseq) {
            fprintf(stderr, "loadgen: fetched a job not of this run: %s\n", j.id);
            goto out;
        }
        if (planned_failure(s) && !atomic_exchange(&S.failed[s], 1)) {
            int64_t delay = O.wl == WL_SCHED ? O.retry_ms : 0;
            if (O.wl == WL_SCHED) /* whole seconds, as both servers get them */
                atomic_store(&S.due_ms[s], rb_now_ms() + (delay + 999) / 1000 * 1000);
            if (O.proto->fail(&t->conn, &j, delay) < 0)
                goto out;
            atomic_fetch_add(&S.fails, 1);
            continue;
        }
        if (s < O.jobs)
            S.sample_us[s] = O.wl == WL_SCHED ? wall_us - atomic_load(&S.due_ms[s]) * 1000
                                              : now_us - atomic_load(&S.sent_us[s]);
        if (O.proto->ack(&t->conn, &j) < 0)
            goto out;
        /* Exactly-once: a job completed again (or a prefilled job completed
         * twice) is a duplicate; the run ends when each job is done once. */
        unsigned char before = atomic_load(&S.acks[s]);
        while (before < UCHAR_MAX && !atomic_compare_exchange_weak(&S.acks[s], &before, before + 1))
            ;
        if (before > 0) {
            atomic_fetch_add(&S.duplicates, 1);
            fprintf(stderr, "loadgen: job %s completed again (duplicate)\n", j.id);
            continue;
        }
        if (atomic_fetch_add(&S.acked, 1) + 1 == done_target()) {
            atomic_store(&S.t_end_us, lg_mono_us());
            signal_main();
        }
    }
    return NULL;
out:
    if (!atomic_load(&S.done))
        note_error();
    return NULL;
}

/* --push-batch: this producer's share of the jobs in batches of contiguous
 * seqs (batch b goes to producer b % producers), one PUSHB each. */
static bool produce_batches(thread_arg *t)
{
    long batches = (O.jobs + O.push_batch - 1) / O.push_batch;
    for (long b = t->idx; b < batches; b += O.producers) {
        long first = b * O.push_batch;
        long n = O.jobs - first < O.push_batch ? O.jobs - first : O.push_batch;
        if (O.rate > 0)
            lg_sleep_until(S.t0_us + (int64_t)((double)first * 1e6 / O.rate));
        int64_t now = lg_mono_us();
        for (long i = 0; i < n; i++)
            atomic_store(&S.sent_us[first + i], now);
        if (O.proto->push_many(&t->conn, S.run, first, n) < 0) {
            note_error();
            return false;
        }
        if (atomic_load(&S.done))
            return false;
    }
    return true;
}

static void *producer_main(void *arg)
{
    thread_arg *t = arg;
    if (O.push_batch > 1 && !produce_batches(t))
        return NULL;
    long first_seq = O.push_batch > 1 ? O.jobs : t->idx; /* batches: all pushed */
    for (long seq = first_seq; seq < O.jobs; seq += O.producers) {
        if (O.rate > 0)
            lg_sleep_until(S.t0_us + (int64_t)((double)seq * 1e6 / O.rate));
        int64_t delay = O.wl == WL_SCHED && seq % 2 == 0 ? O.delay_ms : 0, due = 0;
        atomic_store(&S.sent_us[seq], lg_mono_us());
        if (delay > 0) /* beanstalkd's whole seconds: set before the job can run */
            atomic_store(&S.due_ms[seq], rb_now_ms() + (delay + 999) / 1000 * 1000);
        if (O.proto->push(&t->conn, S.run, seq, delay, &due) < 0) {
            note_error();
            return NULL;
        }
        if (delay > 0)
            atomic_store(&S.due_ms[seq], due);
        if (atomic_load(&S.done))
            return NULL;
    }
    /* --dup-seq: the same seq under another jid ("bench-OTHER-SEQ"), as if
     * the server ran one job twice: the run must report a duplicate. */
    if (t->idx == 0 && O.dup_seq >= 0) {
        int64_t due = 0;
        if (O.proto->push(&t->conn, S.run ^ 1u, O.dup_seq, 0, &due) < 0) {
            note_error();
            return NULL;
        }
    }
    if (atomic_fetch_sub(&S.producers_left, 1) == 1) {
        atomic_store(&S.t_push_end_us, lg_mono_us());
        signal_main();
    }
    return NULL;
}

static void *prefill_main(void *arg)
{
    thread_arg *t = arg;
    long batches = (O.prefill + PREFILL_BATCH - 1) / PREFILL_BATCH;
    for (long b = t->idx; b < batches; b += O.producers) {
        long first = O.jobs + b * PREFILL_BATCH;
        long n = O.prefill - b * PREFILL_BATCH < PREFILL_BATCH ? O.prefill - b * PREFILL_BATCH
                                                              : PREFILL_BATCH;
        if (O.proto->push_many(&t->conn, S.run, first, n) < 0) {
            note_error();
            return NULL;
        }
    }
    return NULL;
}

static void run_threads(thread_arg *ts, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++)
        if (pthread_create(&ts[i].tid, NULL, fn, &ts[i]) != 0) {
            fprintf(stderr, "loadgen: cannot start a thread\n");
            exit(1);
        }
}

static void join_threads(thread_arg *ts, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(ts[i].tid, NULL);
}

static void print_ms(const char *metric, int64_t us)
{
    printf("%s.%s %.3f\n", O.tag, metric, (double)us / 1000.0);
}

/* Fills the job queue with O.prefill jobs and prints the footprint figures:
 * footprint.x for the depth workload (bench/run.sh's table), TAG.footprint.x
 * for another workload's backlog (the fairness runs), so that a run of
 * several workloads has each figure once. */
static void prefill(thread_arg *prods)
{
    char fp[64];
    if (O.wl == WL_DEPTH)
        snprintf(fp, sizeof fp, "footprint");
    else
        snprintf(fp, sizeof fp, "%.40s.footprint", O.tag);
    long long rss0 = O.server_pid ? lg_rss_bytes(O.server_pid) : -1;
    long long disk0 = lg_dir_bytes(O.data_dir);
    int64_t t0 = lg_mono_us();
    run_threads(prods, O.producers, prefill_main);
    join_threads(prods, O.producers);
    if (atomic_load(&S.errors)) {
        fprintf(stderr, "loadgen: prefill failed\n");
        exit(1);
    }
    double secs = (double)(lg_mono_us() - t0) / 1e6;
    printf("%s.jobs %ld\n", fp, O.prefill);
    printf("%s.prefill_jobs_per_s %.0f\n", fp, (double)O.prefill / secs);
    rb_buf body = RB_BUF_INIT;
    lg_body(&body, S.run, O.jobs, "");
    printf("%s.body_bytes %zu\n", fp, body.len);
    rb_buf_release(&body);
    if (rss0 >= 0) {
        long long rss1 = lg_rss_bytes(O.server_pid);
        printf("%s.rss_mb %.1f\n", fp, (double)rss1 / 1048576.0);
        printf("%s.rss_bytes_per_job %.0f\n", fp, (double)(rss1 - rss0) / (double)O.prefill);
    }
    if (O.data_dir)
        printf("%s.disk_bytes_per_job %.0f\n", fp,
               (double)(lg_dir_bytes(O.data_dir) - disk0) / (double)O.prefill);
    fflush(stdout);
}

/* The loadgen's own CPU (all its threads) when the timed phase began. */
static long long self_cpu0 = -1;

static void report(long long cpu0)
{
    /* With jobs waiting beforehand (depth) the acks may reach the count
     * before the last push: the phase ends when both are done. */
    int64_t t_end = atomic_load(&S.t_end_us), t_push = atomic_load(&S.t_push_end_us);
    double secs = (double)((t_end > t_push ? t_end : t_push) - S.t0_us) / 1e6;
    double push_secs = (double)(atomic_load(&S.t_push_end_us) - S.t0_us) / 1e6;
    const char *wl = O.tag;
    long fails = atomic_load(&S.fails);
    printf("%s.jobs %ld\n", wl, O.jobs);
    printf("%s.secs %.3f\n", wl, secs);
    printf("%s.jobs_per_s %.0f\n", wl, (double)done_target() / secs);
    printf("%s.push_per_s %.0f\n", wl, (double)O.jobs / push_secs);
    /* push + fetch + ack per job, fetch + fail per failure */
    printf("%s.ops_per_s %.0f\n", wl, (double)(3 * O.jobs + 2 * fails) / secs);
    if (fails)
        printf("%s.fails %ld\n", wl, fails);
    /* Exactly-once: each pushed job completed once (with a prefill the
     * timed phase ends after as many completions, not these jobs'). */
    printf("%s.duplicates %ld\n", wl, atomic_load(&S.duplicates));
    if (O.prefill == 0) {
        long missing = 0;
        for (long i = 0; i < O.jobs; i++)
            missing += atomic_load(&S.acks[i]) == 0;
        printf("%s.completed %ld\n", wl, O.jobs - missing);
        printf("%s.missing %ld\n", wl, missing);
    }
    if (O.rate > 0)
        printf("%s.rate_asked %.0f\n", wl, O.rate);
    long long cpu = cpu0 >= 0 ? lg_cpu_us(O.server_pid) - cpu0 : -1;
    if (cpu >= 0) {
        printf("%s.server_cpu_s %.2f\n", wl, (double)cpu / 1e6);
        printf("%s.server_cpu_us_per_job %.1f\n", wl, (double)cpu / (double)O.jobs);
    }
    /* Both programs share the machine's cores: what the load itself costs,
     * and how many cores the two kept busy together. */
    long long self = self_cpu0 >= 0 ? lg_cpu_us((int)getpid()) - self_cpu0 : -1;
    if (self >= 0) {
        printf("%s.loadgen_cpu_us_per_job %.1f\n", wl, (double)self / (double)O.jobs);
        if (cpu >= 0)
            printf("%s.cores_busy %.2f\n", wl, (double)(cpu + self) / 1e6 / secs);
    }
    int64_t *v = rb_xmalloc(sizeof *v * (size_t)(O.jobs ? O.jobs : 1));
    size_t n = 0;
    for (long i = 0; i < O.jobs; i++)
        if (S.sample_us[i] != INT64_MIN)
            v[n++] = S.sample_us[i];
    lg_summary s = lg_summarize(v, n);
    free(v);
    if (O.wl == WL_SCHED) {
        printf("%s.samples %zu\n", wl, s.n);
        print_ms("late_min_ms", s.min);
        print_ms("late_p50_ms", s.p50);
        print_ms("late_p99_ms", s.p99);
        print_ms("late_max_ms", s.max);
    } else if (O.wl != WL_DEPTH) {
        print_ms("lat_p50_ms", s.p50);
        print_ms("lat_p99_ms", s.p99);
        print_ms("lat_max_ms", s.max);
    }
}

/* Adds the numeric leaves of obj to flat as "prefix.key" (recursive). */
static void flatten(json_t *flat, const char *prefix, json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (json_is_number(v))
            json_object_set_new(flat, key, json_real(json_number_value(v)));
        else if (json_is_object(v))
            flatten(flat, key, v);
    }
}

/* Faktory only: the numeric leaves of INFO's JSON ("server.command_count"
 * ...), so the run can report what the server counted (commits, fsyncs). */
static json_t *info_numbers(lg_conn *c)
{
    rb_buf_adds(&c->out, "INFO\r\n");
    char *text = NULL;
    if (lg_conn_flush(c) < 0 || fk_bulk(c, "INFO", &text) != 1)
        return NULL;
    json_t *info = json_loads(text, 0, NULL), *flat = json_object();
    if (info)
        flatten(flat, "", info);
    json_decref(info);
    return flat;
}

/* Prints "workload.info.KEY delta" for every INFO number that changed. */
static void info_report(json_t *before, json_t *after)
{
    const char *k;
    json_t *v;
    if (!before || !after)
        return;
    json_object_foreach(after, k, v) {
        json_t *b = json_object_get(before, k);
        double d = json_real_value(v) - (b ? json_real_value(b) : 0);
        if (d != 0 && !strstr(k, "uptime") && !strstr(k, "used_memory"))
            printf("%s.info.%s %.0f\n", O.tag, k, d);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: loadgen --proto faktory|beanstalk --port P[,P2...] [options]\n"
        "  --host H          server address (127.0.0.1)\n"
        "  --workload W      lifecycle|retries|depth|sched|latency|fairness (lifecycle)\n"
        "  --producers N     producer connections (4)\n"
        "  --workers N       worker connections (8)\n"
        "  --jobs N          jobs pushed and acked in the timed phase (100000)\n"
        "  --prefill N       jobs waiting before the timed phase (depth; 0)\n"
        "  --rate R          pushes per second over all producers (0 = flat out)\n"
        "  --delay MS        sched: scheduled jobs are due MS ahead (1000)\n"
        "  --retry-delay MS  sched: retry delay of the failing half (1000)\n"
        "  --fail-pct P      retries: percent of first attempts failing (10)\n"
        "  --server-pid PID  report server RSS and CPU\n"
        "  --data-dir DIR    report the server's bytes on disk\n"
        "  --timeout S       give up after S seconds (600)\n"
        "  --push-batch N    producers push N jobs per PUSHB (1: one PUSH each)\n"
        "  --worker-port P[,P2...]  workers connect here (default: --port)\n"
        "  --drain-ms MS     after the last ACK workers fetch MS longer: a job\n"
        "                    completed again counts as a duplicate (0)\n"
        "  --groups N        jobs carry custom.group: g000..g(N-1) by seq; fairness:\n"
        "                    any N > 0 puts the backlog in group a, the --jobs in b (0)\n"
        "  --tag T           print figures as T.metric (default: the workload)\n"
        "  --dup-seq N       push job N a second time under another jid, as a\n"
        "                    server running a job twice would (checks the check)\n"
        "Prints 'workload.metric value' lines. Whole-second delays keep the\n"
        "two protocols comparable (beanstalkd delays are whole seconds).\n");
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "loadgen: %s: '%s' is not a number in %ld..%ld\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}

static void parse_args(int argc, char **argv)
{
    static const struct option longs[] = {
        {"proto", 1, 0, 'P'}, {"host", 1, 0, 'H'}, {"port", 1, 0, 'p'},
        {"workload", 1, 0, 'w'}, {"producers", 1, 0, 'n'}, {"workers", 1, 0, 'c'},
        {"jobs", 1, 0, 'j'}, {"prefill", 1, 0, 'f'}, {"rate", 1, 0, 'r'},
        {"delay", 1, 0, 'd'}, {"retry-delay", 1, 0, 'R'}, {"fail-pct", 1, 0, 'F'},
        {"server-pid", 1, 0, 's'}, {"data-dir", 1, 0, 'D'}, {"timeout", 1, 0, 't'},
        {"push-batch", 1, 0, 'B'}, {"worker-port", 1, 0, 'W'}, {"drain-ms", 1, 0, 'X'},
        {"dup-seq", 1, 0, 'U'}, {"groups", 1, 0, 'G'}, {"tag", 1, 0, 'T'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0},
    };
    int ch;
    bool wl_ok = true;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (ch) {
        case 'P':
            O.proto = strcmp(optarg, "faktory") == 0     ? &lg_faktory
                      : strcmp(optarg, "beanstalk") == 0 ? &lg_beanstalk
                                                         : NULL;
            if (!O.proto) {
                fprintf(stderr, "loadgen: --proto: '%s' is not faktory or beanstalk\n", optarg);
                exit(2);
            }
            break;
        case 'H': O.host = optarg; break;
        case 'p': /* several nodes of one cluster: P1,P2,... */
            O.n_ports = 0;
            for (char *save = NULL, *t = strtok_r(optarg, ",", &save); t && O.n_ports < 8;
                 t = strtok_r(NULL, ",", &save))
                O.ports[O.n_ports++] = (int)parse_num("--port", t, 1, 65535);
            O.port = O.n_ports ? O.ports[0] : 0;
            break;
        case 'W':
            O.n_wports = 0;
            for (char *save = NULL, *t = strtok_r(optarg, ",", &save); t && O.n_wports < 8;
                 t = strtok_r(NULL, ",", &save))
                O.wports[O.n_wports++] = (int)parse_num("--worker-port", t, 1, 65535);
            break;
        case 'B': O.push_batch = (int)parse_num("--push-batch", optarg, 1, 100000); break;
        case 'G': lg_groups = parse_num("--groups", optarg, 0, 1000000); break;
        case 'T': O.tag = optarg; break;
        case 'U': O.dup_seq = parse_num("--dup-seq", optarg, 0, 100000000); break;
        case 'X': O.drain_ms = (int)parse_num("--drain-ms", optarg, 0, 600000); break;
        case 'w':
            wl_ok = false;
            for (int i = 0; i < (int)(sizeof wl_names / sizeof *wl_names); i++)
                if (strcmp(optarg, wl_names[i]) == 0) {
                    O.wl = (workload)i;
                    wl_ok = true;
                }
            if (!wl_ok) {
                fprintf(stderr, "loadgen: --workload: '%s' is not a workload\n", optarg);
                exit(2);
            }
            break;
        case 'n': O.producers = (int)parse_num("--producers", optarg, 1, 256); break;
        case 'c': O.workers = (int)parse_num("--workers", optarg, 1, 256); break;
        case 'j': O.jobs = parse_num("--jobs", optarg, 1, 100000000); break;
        case 'f': O.prefill = parse_num("--prefill", optarg, 0, 100000000); break;
        case 'r': O.rate = (double)parse_num("--rate", optarg, 0, 100000000); break;
        case 'd': O.delay_ms = parse_num("--delay", optarg, 1, 3600000); break;
        case 'R': O.retry_ms = parse_num("--retry-delay", optarg, 0, 3600000); break;
        case 'F': O.fail_pct = (int)parse_num("--fail-pct", optarg, 0, 100); break;
        case 's': O.server_pid = (int)parse_num("--server-pid", optarg, 1, INT_MAX); break;
        case 'D': O.data_dir = optarg; break;
        case 't': O.timeout_s = (int)parse_num("--timeout", optarg, 1, 86400); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (!O.proto || !O.port || optind != argc) {
        usage(stderr);
        exit(2);
    }
    if (O.push_batch > 1 && (O.wl == WL_SCHED || O.wl == WL_DEPTH)) {
        fprintf(stderr, "loadgen: --push-batch: only for lifecycle, retries and latency\n");
        exit(2);
    }
    if (O.wl == WL_FAIRNESS && (O.prefill == 0 || O.push_batch > 1)) {
        fprintf(stderr, "loadgen: fairness: needs --prefill (the backlog), one PUSH per job\n");
        exit(2);
    }
    if (O.wl == WL_FAIRNESS)
        lg_fair_split = O.jobs;
    if (!O.tag)
        O.tag = wl_names[O.wl];
    if (O.dup_seq >= O.jobs) {
        fprintf(stderr, "loadgen: --dup-seq: %ld is not below --jobs %ld\n", O.dup_seq, O.jobs);
        exit(2);
    }
    if (!O.n_wports) {
        memcpy(O.wports, O.ports, sizeof O.ports);
        O.n_wports = O.n_ports;
    }
}

static void connect_all(thread_arg *ts, int n, bool worker)
{
    for (int i = 0; i < n; i++) {
        char wid[48];
        snprintf(wid, sizeof wid, "bench-%08x-w%d", S.run, i);
        ts[i].idx = i;
        int port = worker ? O.wports[i % O.n_wports] : O.ports[i % O.n_ports];
        if (lg_conn_open(&ts[i].conn, O.host, port) < 0 ||
            O.proto->hello(&ts[i].conn, worker ? wid : NULL) < 0)
            exit(1);
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    S.run = (unsigned)(lg_wall_us() ^ ((int64_t)getpid() << 20));
    S.nseq = O.jobs + O.prefill;
    S.sent_us = rb_xcalloc((size_t)O.jobs, sizeof *S.sent_us);
    S.due_ms = rb_xcalloc((size_t)O.jobs, sizeof *S.due_ms);
    S.sample_us = rb_xmalloc((size_t)O.jobs * sizeof *S.sample_us);
    for (long i = 0; i < O.jobs; i++)
        S.sample_us[i] = INT64_MIN;
    S.failed = rb_xcalloc((size_t)O.jobs, sizeof *S.failed);
    S.acks = rb_xcalloc((size_t)S.nseq, sizeof *S.acks);

    thread_arg *prods = rb_xcalloc((size_t)O.producers, sizeof *prods);
    thread_arg *works = rb_xcalloc((size_t)O.workers, sizeof *works);
    connect_all(prods, O.producers, false);
    connect_all(works, O.workers, true);
    if (O.prefill > 0)
        prefill(prods);

    json_t *info0 = O.proto == &lg_faktory ? info_numbers(&prods[0].conn) : NULL;
    long long cpu0 = O.server_pid ? lg_cpu_us(O.server_pid) : -1;
    self_cpu0 = lg_cpu_us((int)getpid());
    atomic_store(&S.producers_left, O.producers);
    S.t0_us = lg_mono_us();
    run_threads(works, O.workers, worker_main);
    run_threads(prods, O.producers, producer_main);

    int64_t deadline = S.t0_us + (int64_t)O.timeout_s * 1000000;
    pthread_mutex_lock(&S.mu);
    while ((atomic_load(&S.acked) < done_target() || atomic_load(&S.producers_left) > 0) &&
           !atomic_load(&S.errors) && lg_mono_us() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&S.cv, &S.mu, &ts);
    }
    pthread_mutex_unlock(&S.mu);
    bool ok = atomic_load(&S.acked) >= done_target() && atomic_load(&S.producers_left) == 0;
    if (ok && O.drain_ms > 0) /* a job delivered again now is a duplicate */
        lg_sleep_until(lg_mono_us() + (int64_t)O.drain_ms * 1000);
    atomic_store(&S.done, 1);
    atomic_store(&lg_quiet, 1); /* replies cut off by the shutdown are expected */
    for (int i = 0; i < O.workers; i++) /* wakes workers blocked in FETCH */
        shutdown(works[i].conn.fd, SHUT_RDWR);
    if (!ok)
        for (int i = 0; i < O.producers; i++)
            shutdown(prods[i].conn.fd, SHUT_RDWR);
    join_threads(works, O.workers);
    join_threads(prods, O.producers);
    if (!ok) {
        fprintf(stderr, "loadgen: %s: %ld of %ld jobs done (%s)\n", wl_names[O.wl],
                atomic_load(&S.acked), done_target(),
                atomic_load(&S.errors) ? "errors above" : "timed out");
        return 1;
    }
    report(cpu0);
    if (info0) {
        json_t *info1 = info_numbers(&prods[0].conn);
        info_report(info0, info1);
        json_decref(info0);
        json_decref(info1);
    }

    for (int i = 0; i < O.producers; i++)
        lg_conn_close(&prods[i].conn);
    for (int i = 0; i < O.workers; i++)
        lg_conn_close(&works[i].conn);
    free(prods);
    free(works);
    free(S.sent_us);
    free(S.due_ms);
    free(S.sample_us);
    free(S.failed);
    free(S.acks);
    return atomic_load(&S.duplicates) ? 1 : 0;
}
