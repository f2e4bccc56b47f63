/* The fault suite (issue 27; docs/distributed.md, "Network faults"): two
 * nodes on one PostgreSQL cluster under load, node A reaching it through
 * faultproxy (tests/tools/faultproxy.c), node B directly; producers and
 * workers on both, some jobs failing once. Each case injects one fault:
 *
 * - a blackhole (nothing passes either way, nothing is closed) that heals;
 * - a blackhole that ends with a reset of every connection;
 * - a blackhole that begins right after one of A's ACK transactions was
 *   sent (its row locks held by A's idle backend, shown in pg_locks until
 *   idle_in_transaction_session_timeout ends the session);
 * - blackholes at random moments;
 * - node A paused with SIGSTOP past its workers' leases;
 * - PostgreSQL restarted;
 * - with storage.forward on (B relays its clients to A, the leader), A
 *   killed with SIGKILL: B takes the lease and serves, A comes back as a
 *   follower relaying to B;
 *
 * and checks: no acknowledged push lost, no job run again after its ACK
 * was answered +OK, the processed counter equal to the jobs done, node A
 * never answering +OK to a change it cannot have committed, every request
 * to A answered within [storage] request_timeout (plus scheduling slack),
 * the jobs A's workers held reaped by B after their leases, B's ACKs not
 * waiting on A beyond the configured bounds, A back without a restart
 * (GET /healthz 503 during the outage, 200 after), and the outage logged
 * once at each end. Each case prints its measured times on one line
 * starting "faults:" (tests/faults/run.sh collects them). Run by
 * `make check-faults`; the cases run one at a time (--jobs 1): their
 * bounds are about the configured timeouts, on a machine shared with
 * other work. */
#define RBH_PG 1
#include "../server/test_http_harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/un.h>

#define REQUEST_TIMEOUT_MS 2000 /* [storage] request_timeout */
#define IDLE_TX_MS 2000         /* [storage] idle_in_transaction_timeout */
#define LEASE_S 3               /* each job's reserve_for */
#define FETCH_WAIT_MS 2000      /* a FETCH with nothing ready parks this long */
#define BACKOFF_MAX_MS 5000     /* the engine's reconnect backoff at most */
#define TICK_MS 250             /* the maintenance tick */
/* Scheduling noise on two cores shared with other work: every bound below
 * is a configured time plus this. */
#define SLACK_MS 1500
#define MAX_JOBS 20000
#define WORKERS 2 /* per node */
#define A 0
#define B 1

/* PUSHED: its PUSH answered +OK; DOUBT: answered "outcome unknown" (it
 * may be stored: not pushed again, a second job of the same jid could run
 * once the first is done); ACK_OK: an ACK answered +OK. */
enum { PUSHED = 1, ACK_OK = 2, DOUBT = 4 };

static const char *const node_name[2] = {"a", "b"};

static rbpg_cluster pgc;
static rbh_server node[2];
static int http_port[2];
static pid_t proxy_pid;
static char proxy_dir[64], ctl_path[128];
static int proxy_port;

static _Atomic unsigned char jobs[MAX_JOBS];
static atomic_int runs[MAX_JOBS];
static atomic_int next_job, violations, unexpected;
static int held_id = -1; /* the job hold_one_on_a fetched (not run by a worker there) */
static atomic_bool stop_push, stop_work;

/* What the clients of each node saw around the fault (monotonic ms). */
static _Atomic int64_t t_fault, t_heal; /* 0: not yet */
/* When the heal began: taken before the command that ends the fault (a
 * node may commit and answer before the command returns and t_heal is
 * read); 0: not yet. A reply counts as inside the outage only when it was
 * sent in a later millisecond than t_fault (the fault was in effect) and
 * received in an earlier one than t_healing. */
static _Atomic int64_t t_healing;
static _Atomic int64_t a_first_error;   /* A's first storage error after t_fault */
static _Atomic int64_t a_worst_write, a_worst_fetch; /* A's slowest replies in the outage */
static atomic_int a_ok_in_outage;       /* writes A answered +OK inside it: must stay 0 */
static _Atomic int64_t a_recovered;     /* A's first +OK to a request sent after t_heal */
static pthread_mutex_t lat_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t b_ack_ms[MAX_JOBS * 2]; /* B's ACK latencies sent during the outage */
static size_t n_b_ack;
static bool check_clients; /* A's clients must get answers in time (not with SIGSTOP) */
static bool forwarding;    /* nodes started from now on run with storage.forward */

static int64_t amax(_Atomic int64_t *v, int64_t x)
{
    int64_t old = atomic_load(v);
    while (x > old && !atomic_compare_exchange_weak(v, &old, x))
        ;
    return old;
}

static void amin_set(_Atomic int64_t *v, int64_t x)
{
    int64_t old = atomic_load(v);
    while ((old == 0 || x < old) && !atomic_compare_exchange_weak(v, &old, x))
        ;
}

/* --- the proxy --- */

/* One command to the proxy; its answer (caller frees) or NULL. */
static char *proxy(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *proxy(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", ctl_path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char out[256];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fd, out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return strdup(out);
}

static void proxy_ok(const char *cmd)
{
    char *r = proxy("%s", cmd);
    cr_assert(r && !strncmp(r, "ok", 2), "proxy: %s: %s", cmd, r ? r : "(no answer)");
    free(r);
}

static const char *tools_dir(void)
{
    const char *o = getenv("REBOUND_TOOLS");
    return o && *o ? o : "build/tools";
}

static void start_proxy(void)
{
    snprintf(proxy_dir, sizeof proxy_dir, "/tmp/rbfault.XXXXXX");
    cr_assert(mkdtemp(proxy_dir));
    snprintf(ctl_path, sizeof ctl_path, "%s/ctl", proxy_dir);
    char to[64], port_file[128], bin[512];
    snprintf(to, sizeof to, "127.0.0.1:%d", pgc.port);
    snprintf(port_file, sizeof port_file, "%s/port", proxy_dir);
    snprintf(bin, sizeof bin, "%s/faultproxy", tools_dir());
    proxy_pid = fork();
    if (proxy_pid == 0) {
        execl(bin, bin, "--to", to, "--control", ctl_path, "--port-file", port_file,
              (char *)NULL);
        perror(bin);
        _exit(127);
    }
    for (int64_t end = rbh_now_ms() + 10000; rbh_now_ms() < end; rbh_sleep_ms(10)) {
        FILE *f = fopen(port_file, "r");
        if (f && fscanf(f, "%d", &proxy_port) == 1) {
            fclose(f);
            return;
        }
        if (f)
            fclose(f);
    }
    cr_assert_fail("faultproxy (%s) did not start", bin);
}

/* --- the cluster and the nodes --- */

static void start_node(int i, const char *url)
{
    rbh_server s; /* made apart: the harness writes its paths from its own fields */
    rbh_init(&s);
    snprintf(s.db, sizeof s.db, "%s", url);
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "[storage]\nrequest_timeout = \"%ds\"\nidle_in_transaction_timeout = \"%ds\"\n%s",
             REQUEST_TIMEOUT_MS / 1000, IDLE_TX_MS / 1000, forwarding ? "forward = true\n" : "");
    rbh_write_file(&s, "rebound.toml", cfg, s.config, sizeof s.config);
    node[i] = s;
    cr_assert_eq(rbh_relaunch_http(&node[i], &http_port[i]), 0, "node %s did not start (see %s)",
                 node_name[i], node[i].log);
}

static void setup(void)
{
    cr_assert(rbpg_start(&pgc), "no PostgreSQL cluster (see %s)", pgc.setup);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' migrate --url '%s' >/dev/null", rbh_bin(), pgc.url);
    cr_assert_eq(system(cmd), 0, "rebound migrate failed");
    start_proxy();
    char url[300];
    snprintf(url, sizeof url,
             "postgresql://rebound@127.0.0.1:%d/rebound?application_name=rebound-a", proxy_port);
    start_node(A, url);
    snprintf(url, sizeof url, "%s&application_name=rebound-b", pgc.url);
    start_node(B, url);
}

static void teardown(void)
{
    forwarding = false;
    atomic_store(&stop_push, true);
    atomic_store(&stop_work, true);
    if (node[A].pid > 0)
        kill(node[A].pid, SIGCONT);
    for (int i = 0; i < 2; i++)
        if (node[i].dir[0])
            rbh_stop(&node[i]);
    if (proxy_pid > 0) {
        kill(proxy_pid, SIGTERM);
        waitpid(proxy_pid, NULL, 0);
    }
    if (proxy_dir[0])
        rbpg_rm_rf(proxy_dir);
    rbpg_destroy(&pgc);
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 240);

/* One statement on the cluster (directly); its first value (caller frees),
 * "" for no rows, NULL on an error. */
static char *sql(const char *text)
{
    return rbh_pg_value(pgc.url, text);
}

static long long sql_int(const char *text)
{
    char *v = sql(text);
    long long n = v && *v ? atoll(v) : -1;
    free(v);
    return n;
}

/* --- the load --- */

/* A connection to node i (NULL when it refuses for 10 s, or, for the
 * load's threads, once the load stops). */
static rbh_conn *connect_node(int i, const char *wid)
{
    for (int tries = 0; tries < 200; tries++) {
        rbh_conn *c = rbh_connect(&node[i], wid);
        if (c)
            return c;
        rbh_sleep_ms(50);
    }
    return NULL;
}

static bool storage_error(const char *r)
{
    return r && !strncmp(r, "-ERR storage error", 18);
}

/* A request to node i and its reply, timed; what A's clients see around
 * the fault is recorded. fetch: a FETCH (it may park FETCH_WAIT_MS). */
static char *timed(int i, rbh_conn *c, bool fetch, bool ack, const char *line)
{
    int64_t sent = rbh_now_ms();
    char *r = rbh_cmd(c, "%s", line);
    int64_t got = rbh_now_ms(), fault = atomic_load(&t_fault), heal = atomic_load(&t_heal);
    int64_t healing = atomic_load(&t_healing);
    bool in_outage = fault && sent >= fault && (!heal || sent < heal);
    if (i == A && in_outage && check_clients) {
        amax(fetch ? &a_worst_fetch : &a_worst_write, got - sent);
        if (storage_error(r))
            amin_set(&a_first_error, got);
        if (!fetch && r && !strcmp(r, "+OK") && sent > fault && (!healing || got < healing)) {
            fprintf(stderr, "faults: A answered +OK in the outage to %.60s\n", line);
            atomic_fetch_add(&a_ok_in_outage, 1);
        }
    }
    if (i == A && heal && sent >= heal && r && r[0] != '-')
        amin_set(&a_recovered, got);
    if (i == B && ack && in_outage) {
        pthread_mutex_lock(&lat_mu);
        if (n_b_ack < sizeof b_ack_ms / sizeof *b_ack_ms)
            b_ack_ms[n_b_ack++] = got - sent;
        pthread_mutex_unlock(&lat_mu);
    }
    return r;
}

static void job_json(char *out, size_t n, int id)
{
    snprintf(out, n,
             "{\"jid\":\"f-%07d\",\"jobtype\":\"f\",\"args\":[%d],\"queue\":\"fq\","
             "\"reserve_for\":%d,\"retry_policy\":{\"dialect\":\"temporal\","
             "\"initial_interval\":\"100ms\",\"backoff_coefficient\":1.0,"
             "\"maximum_attempts\":25}}",
             id, id, LEASE_S);
}

/* Pushes jobs one by one to its node until stopped, as a client should
 * (docs/distributed.md): a PUSH answered "not applied" is sent again; one
 * answered "outcome unknown", or whose connection broke before the reply,
 * is not (it is either stored, and runs, or not: the checks count it by
 * whether it ran). */
static void *producer(void *arg)
{
    int i = (int)(intptr_t)arg;
    rbh_conn *c = NULL;
    int id = -1;
    while (!atomic_load(&stop_push) || id >= 0) {
        if (!c && !(c = connect_node(i, NULL)))
            break;
        if (id < 0) {
            id = atomic_fetch_add(&next_job, 1);
            if (id >= MAX_JOBS)
                break;
        }
        char job[400], line[420];
        job_json(job, sizeof job, id);
        snprintf(line, sizeof line, "PUSH %s", job);
        char *r = timed(i, c, false, false, line);
        if (!r) { /* a broken connection (a node killed): outcome unknown, as a
                     client must take it; sent again, a push already run and
                     acknowledged would make a second job of the same jid */
            atomic_fetch_or(&jobs[id], DOUBT);
            id = -1;
            rbh_close(c);
            c = NULL;
            continue;
        }
        if (!strcmp(r, "+OK") || strstr(r, "already exists")) {
            atomic_fetch_or(&jobs[id], PUSHED);
            id = -1;
            rbh_sleep_ms(8);
        } else if (storage_error(r) && strstr(r, "outcome unknown")) {
            atomic_fetch_or(&jobs[id], DOUBT);
            id = -1;
        } else if (!storage_error(r) || !strstr(r, "not applied")) {
            fprintf(stderr, "producer %s: unexpected reply %s\n", node_name[i], r);
            atomic_fetch_add(&unexpected, 1);
            id = -1;
        } else {
            rbh_sleep_ms(20);
        }
        free(r);
    }
    rbh_close(c);
    return NULL;
}

/* Fetches from its node and ACKs (a job whose id is a multiple of 7 FAILs
 * on its first run); an ACK or FAIL answered with an error is sent again
 * until it is answered for good. A job fetched after its ACK was answered
 * +OK is a violation. */
static void *worker(void *arg)
{
    int self = (int)(intptr_t)arg, i = self / WORKERS;
    char wid[32], pending[160] = "";
    snprintf(wid, sizeof wid, "f%s-%d", node_name[i], self % WORKERS);
    rbh_conn *c = NULL;
    int pending_id = -1;
    bool pending_ack = false;
    while (!atomic_load(&stop_work)) {
        if (!c && !(c = connect_node(i, wid)))
            break;
        if (pending[0]) {
            char *r = timed(i, c, false, pending_ack, pending);
            if (!r) {
                rbh_close(c);
                c = NULL;
                continue;
            }
            if (storage_error(r)) {
                free(r);
                rbh_sleep_ms(20);
                continue;
            }
            if (pending_ack && !strcmp(r, "+OK"))
                atomic_fetch_or(&jobs[pending_id], ACK_OK);
            else if (strcmp(r, "+OK") && !strstr(r, "not found") &&
                     !strstr(r, "reserved by another worker")) {
                fprintf(stderr, "worker %s: unexpected reply to %s: %s\n", wid, pending, r);
                atomic_fetch_add(&unexpected, 1);
            }
            free(r);
            pending[0] = '\0';
            continue;
        }
        char *r = timed(i, c, true, false, "FETCH fq");
        if (!r) {
            rbh_close(c);
            c = NULL;
            continue;
        }
        if (r[0] == '-' || !strcmp(r, "$-1")) {
            bool failed = r[0] == '-';
            if (failed && !storage_error(r)) {
                fprintf(stderr, "worker %s: FETCH: %s\n", wid, r);
                atomic_fetch_add(&unexpected, 1);
            }
            free(r);
            if (failed)
                rbh_sleep_ms(20);
            continue;
        }
        int id = rbh_jid_number(r, 2);
        if (id < 0 || id >= MAX_JOBS)
            continue;
        if (atomic_load(&jobs[id]) & ACK_OK) {
            fprintf(stderr, "worker %s: job %d run again after its ACK\n", wid, id);
            atomic_fetch_add(&violations, 1);
        }
        int n = atomic_fetch_add(&runs[id], 1);
        rbh_sleep_ms(10); /* the work: A's workers hold jobs when a fault begins */
        pending_id = id;
        pending_ack = !(id % 7 == 0 && n == 0);
        if (pending_ack)
            snprintf(pending, sizeof pending, "ACK {\"jid\":\"f-%07d\"}", id);
        else
            snprintf(pending, sizeof pending,
                     "FAIL {\"jid\":\"f-%07d\",\"errtype\":\"Once\",\"message\":\"first run\"}",
                     id);
    }
    rbh_close(c);
    return NULL;
}

static pthread_t producers[2], workers[2 * WORKERS];

static void start_load(void)
{
    for (int i = 0; i < 2; i++)
        pthread_create(&producers[i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < 2 * WORKERS; i++)
        pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)i);
}

/* Waits until pred() or timeout_ms passed; whether it held. */
static bool wait_for(bool (*pred)(void), int64_t timeout_ms)
{
    for (int64_t end = rbh_now_ms() + timeout_ms; rbh_now_ms() < end; rbh_sleep_ms(20))
        if (pred())
            return true;
    return pred();
}

static bool some_jobs_done(void)
{
    return sql_int("SELECT coalesce(sum(value), 0) FROM rb_counters WHERE name = 'processed'") >=
           60;
}

static bool all_done(void)
{
    return sql_int("SELECT count(*) FROM rb_jobs") == 0;
}

/* --- what the checks read --- */

/* The jobs A's workers hold now ("fa-" wids), as a SQL array literal. */
static char *held_by_a(int *n)
{
    char *v = sql("SELECT coalesce(string_agg(jid, ','), '') FROM rb_jobs"
                  " WHERE state = 3 AND wid LIKE 'fa-%'");
    cr_assert_not_null(v);
    *n = *v ? 1 : 0;
    for (const char *p = v; *p; p++)
        *n += *p == ',';
    size_t len = strlen(v) + 3;
    char *arr = malloc(len);
    snprintf(arr, len, "{%s}", v);
    free(v);
    return arr;
}

/* Milliseconds from t0 until none of the jobs of arr is still working for
 * one of A's workers (reaped on B), or -1 after timeout_ms. */
static int64_t wait_reaped(const char *arr, int64_t t0, int64_t timeout_ms)
{
    size_t len = strlen(arr) + 200;
    char *q = malloc(len);
    snprintf(q, len,
             "SELECT count(*) FROM rb_jobs WHERE jid = ANY('%s'::text[]) AND state = 3"
             " AND wid LIKE 'fa-%%'",
             arr);
    int64_t took = -1;
    for (int64_t end = rbh_now_ms() + timeout_ms; rbh_now_ms() < end; rbh_sleep_ms(20)) {
        if (sql_int(q) == 0) {
            took = rbh_now_ms() - t0;
            break;
        }
    }
    free(q);
    return took;
}

/* A job fetched on A by a worker that then never answers ("fa-hold"), so
 * that A's workers hold at least one when the fault begins. */
static void hold_one_on_a(void)
{
    rbh_conn *c = connect_node(A, "fa-hold");
    cr_assert_not_null(c);
    char *jid = NULL;
    for (int64_t end = rbh_now_ms() + 10000; !jid && rbh_now_ms() < end;)
        jid = rbh_fetch_jid(c, "fq");
    cr_assert_not_null(jid, "nothing to fetch on A");
    held_id = atoi(jid + 2);
    free(jid);
    rbh_close(c); /* the job stays reserved for fa-hold until its lease ends */
}

static int count_lines(const char *path, const char *text)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "grep -c '%s' '%s'", text, path);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

static int healthz(int i)
{
    rbh_resp *r = rbh_http(http_port[i], "GET", "/healthz", NULL, NULL);
    int st = r ? r->status : -1;
    rbh_resp_free(r);
    return st;
}

static bool a_healthy(void)
{
    return healthz(A) == 200;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The outage's figures (monotonic ms). */
typedef struct outage {
    const char *name;
    int64_t first_error, reaped, b_ack_max, b_ack_p99, recovery;
    int held;
} outage;

static void begin_fault(void)
{
    atomic_store(&t_heal, 0);
    atomic_store(&t_healing, 0);
    atomic_store(&a_first_error, 0);
    atomic_store(&a_recovered, 0);
    atomic_store(&t_fault, rbh_now_ms());
}

/* Stops the load once every job is done; the checks every case makes. */
static void finish(outage *o)
{
    atomic_store(&stop_push, true);
    for (int i = 0; i < 2; i++)
        pthread_join(producers[i], NULL);
    cr_assert(wait_for(all_done, 90000), "jobs left after 90 s: %lld",
              sql_int("SELECT count(*) FROM rb_jobs"));
    atomic_store(&stop_work, true);
    for (int i = 0; i < 2 * WORKERS; i++)
        pthread_join(workers[i], NULL);

    int pushed = atomic_load(&next_job), lost = 0;
    if (pushed > MAX_JOBS)
        pushed = MAX_JOBS;
    int ran = 0, doubt = 0;
    for (int id = 0; id < pushed; id++) {
        if ((atomic_load(&jobs[id]) & PUSHED) && atomic_load(&runs[id]) == 0)
            lost++;
        ran += atomic_load(&runs[id]) > 0 || id == held_id;
        doubt += (atomic_load(&jobs[id]) & DOUBT) != 0;
    }
    cr_assert_eq(lost, 0, "%d acknowledged pushes never ran", lost);
    cr_assert_eq(atomic_load(&violations), 0, "jobs run again after their ACK was answered +OK");
    cr_assert_eq(atomic_load(&unexpected), 0, "unexpected replies (above)");
    long long processed =
        sql_int("SELECT coalesce(sum(value), 0) FROM rb_counters WHERE name = 'processed'");
    /* every stored job ran and was done once: those pushed, and those in
     * doubt that were stored after all */
    cr_assert_eq(processed, ran, "processed counter %lld, jobs done %d", processed, ran);
    rbh_conn *c = connect_node(B, NULL);
    cr_assert_not_null(c);
    cr_assert_eq(rbh_info_int(c, "faktory.total_processed"), ran);
    cr_assert_eq(rbh_info_int(c, "faktory.tasks.Dead.size"), 0);
    rbh_close(c);
    cr_assert_eq(atomic_load(&a_ok_in_outage), 0,
                 "node A answered +OK to changes it could not commit");

    pthread_mutex_lock(&lat_mu);
    qsort(b_ack_ms, n_b_ack, sizeof *b_ack_ms, cmp64);
    o->b_ack_max = n_b_ack ? b_ack_ms[n_b_ack - 1] : 0;
    o->b_ack_p99 = n_b_ack ? b_ack_ms[(n_b_ack * 99) / 100] : 0;
    size_t nb = n_b_ack;
    pthread_mutex_unlock(&lat_mu);
    fprintf(stderr,
            "faults: %s: jobs %d (in doubt %d), first_error_ms %lld, reaped_ms %lld (held %d),"
            " b_ack_max_ms %lld, b_ack_p99_ms %lld (%zu acks), recovery_ms %lld,"
            " a_worst_write_ms %lld, a_worst_fetch_ms %lld\n",
            o->name, ran, doubt, (long long)o->first_error, (long long)o->reaped, o->held,
            (long long)o->b_ack_max, (long long)o->b_ack_p99, nb, (long long)o->recovery,
            (long long)atomic_load(&a_worst_write), (long long)atomic_load(&a_worst_fetch));
    /* the healthy node's ACKs: a lock A's frozen transaction held is
     * released by the idle timeout; nothing else makes them wait */
    cr_assert_leq(o->b_ack_p99, REQUEST_TIMEOUT_MS, "B's ACK p99 %lld ms", (long long)o->b_ack_p99);
    cr_assert_leq(o->b_ack_max, IDLE_TX_MS + REQUEST_TIMEOUT_MS + SLACK_MS,
                  "B's slowest ACK %lld ms", (long long)o->b_ack_max);
}

/* A's clients answered within the bound during the outage, errors first:
 * a request sent after the fault began within first_ms of it. */
static void check_a_answers(outage *o, int64_t first_ms)
{
    int64_t ww = atomic_load(&a_worst_write), wf = atomic_load(&a_worst_fetch);
    cr_assert_leq(ww, REQUEST_TIMEOUT_MS + SLACK_MS, "a request to A waited %lld ms", (long long)ww);
    cr_assert_leq(wf, FETCH_WAIT_MS + REQUEST_TIMEOUT_MS + SLACK_MS, "a FETCH on A waited %lld ms",
                  (long long)wf);
    cr_assert_gt(atomic_load(&a_first_error), 0, "A answered no storage error in the outage");
    o->first_error = atomic_load(&a_first_error) - atomic_load(&t_fault);
    cr_assert_leq(o->first_error, first_ms, "A's first storage error came %lld ms into the outage",
                  (long long)o->first_error);
}

/* After the heal: A commits again, without a restart, and says so. */
static void check_recovery(outage *o)
{
    int64_t heal = atomic_load(&t_heal);
    int64_t bound = BACKOFF_MAX_MS + REQUEST_TIMEOUT_MS + SLACK_MS;
    for (int64_t end = heal + bound + 5000; !atomic_load(&a_recovered) && rbh_now_ms() < end;)
        rbh_sleep_ms(20);
    cr_assert_gt(atomic_load(&a_recovered), 0, "A answered nothing but errors after the heal");
    o->recovery = atomic_load(&a_recovered) - heal;
    cr_assert_leq(o->recovery, bound, "A took %lld ms to recover", (long long)o->recovery);
    cr_assert(wait_for(a_healthy, bound), "GET /healthz on A still fails after the heal");
    rbh_resp *m = rbh_http(http_port[A], "GET", "/metrics", NULL, NULL);
    cr_assert(m && m->status == 200 && strstr(m->body, "\nrebound_database_up 1\n") &&
                  strstr(m->body, "\nrebound_jobs{"),
              "GET /metrics on A after the heal");
    rbh_resp_free(m);
    rbh_conn *c = connect_node(A, NULL);
    cr_assert_not_null(c);
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    cr_assert_str_eq(json_string_value(rbh_get(v, "rebound.database.state")), "up");
    cr_assert(json_is_string(rbh_get(v, "rebound.database.last_commit")));
    json_decref(v);
    rbh_close(c);
}

/* The outage was logged once when it began and once when it ended. */
static void check_logged_once(int i)
{
    int down = count_lines(node[i].log, "database unreachable"),
        up = count_lines(node[i].log, "database reachable again after");
    cr_assert_eq(down, 1, "node %s logged the outage's start %d times", node_name[i], down);
    cr_assert_eq(up, 1, "node %s logged the outage's end %d times", node_name[i], up);
}

/* While A is cut off: its /healthz fails, B's does not; the jobs A's
 * workers held are reaped by B once their leases end. */
static void during_blackhole(outage *o, const char *held, int64_t blackhole_ms)
{
    for (int64_t end = rbh_now_ms() + REQUEST_TIMEOUT_MS + SLACK_MS;
         !atomic_load(&a_first_error) && rbh_now_ms() < end;)
        rbh_sleep_ms(20);
    rbh_sleep_ms(TICK_MS); /* the link's state follows the first error */
    cr_assert_eq(healthz(A), 503, "GET /healthz on A during the outage");
    cr_assert_eq(healthz(B), 200, "GET /healthz on B during the outage");
    /* leases end LEASE_S after their FETCH; a lock A's open transaction
     * holds ends with its session (idle_in_transaction_timeout) */
    o->reaped = wait_reaped(held, atomic_load(&t_fault),
                            LEASE_S * 1000 + IDLE_TX_MS + 2 * TICK_MS + SLACK_MS);
    cr_assert_geq(o->reaped, 0, "A's held jobs were not reaped by B in time");
    /* /metrics answers (within request_timeout) with the link down and the
     * node's own figures, without the cluster's */
    rbh_resp *m = rbh_http(http_port[A], "GET", "/metrics", NULL, NULL);
    cr_assert(m && m->status == 200, "GET /metrics on A during the outage: %d", m ? m->status : -1);
    cr_assert(strstr(m->body, "\nrebound_database_up 0\n"), "%s", m->body);
    cr_assert(strstr(m->body, "rebound_database_last_commit_timestamp_seconds "));
    cr_assert(strstr(m->body, "\nrebound_connections "));
    cr_assert_null(strstr(m->body, "\nrebound_jobs{"), "job gauges while the database is away");
    rbh_resp_free(m);
    int64_t left = atomic_load(&t_fault) + blackhole_ms - rbh_now_ms();
    if (left > 0)
        rbh_sleep_ms((int)left);
}

static void heal_with(const char *cmd)
{
    atomic_store(&t_healing, rbh_now_ms());
    proxy_ok(cmd);
    atomic_store(&t_heal, rbh_now_ms());
}

/* --- the cases --- */

static void blackhole_case(const char *name, const char *end_cmd)
{
    check_clients = true;
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = name};
    hold_one_on_a();
    char *held = held_by_a(&o.held);
    proxy_ok("blackhole both");
    begin_fault();
    during_blackhole(&o, held, 6000);
    heal_with(end_cmd);
    check_a_answers(&o, REQUEST_TIMEOUT_MS + SLACK_MS);
    check_recovery(&o);
    finish(&o);
    check_logged_once(A);
    cr_assert_eq(count_lines(node[B].log, "database unreachable"), 0);
    free(held);
}

Test(faults, blackhole_then_heal)
{
    blackhole_case("blackhole_then_heal", "heal");
}

Test(faults, blackhole_ending_in_a_reset)
{
    blackhole_case("blackhole_ending_in_a_reset", "reset");
}

/* pg_locks of A's backends, as "pid:locks" counts; the number of A's
 * backends idle in a transaction into *idle. */
static long long a_locks(long long *idle)
{
    *idle = sql_int("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rebound-a'"
                    " AND state = 'idle in transaction'");
    return sql_int("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                   " WHERE a.application_name = 'rebound-a'");
}

/* Working rows locked now by another transaction (taken and rolled back). */
static long long locked_working_rows(void)
{
    char *v = sql("SELECT (SELECT count(*) FROM rb_jobs WHERE state = 3) -"
                  " (SELECT count(*) FROM (SELECT 1 FROM rb_jobs WHERE state = 3"
                  " FOR UPDATE SKIP LOCKED) s)");
    long long n = v && *v ? atoll(v) : -1;
    free(v);
    return n;
}

/* The outage begins right after A sent an ACK batch's transaction (BEGIN
 * and the ACK statement, pipelined: statement rb_s3; its COMMIT not yet
 * sent, as in a batch with FAILs): A's backend is left idle
 * in that transaction, its rows locked, until the server's
 * idle_in_transaction_session_timeout ends the session; then no lock of
 * A's remains, and B's ACKs, FETCHes and reaper go on. */
Test(faults, outage_inside_an_ack_transaction)
{
    check_clients = true;
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "outage_inside_an_ack_transaction"};
    /* a batch whose COMMIT is still to come: one with FAILs (jobs whose
     * id is a multiple of 7 fail once) sends BEGIN and its ACKs first,
     * the COMMIT in a second round trip; a batch of one round trip sends
     * its COMMIT with them and is not inside its transaction when cut */
    proxy_ok("arm BEGIN rb_s3 !COMMIT");
    int64_t armed = rbh_now_ms();
    char *st = NULL;
    while (rbh_now_ms() - armed < 20000) {
        free(st);
        st = proxy("status");
        if (st && strstr(st, "triggered=1"))
            break;
        rbh_sleep_ms(5);
    }
    cr_assert(st && strstr(st, "triggered=1"), "no ACK transaction went through: %s", st);
    free(st);
    begin_fault();
    char *held = held_by_a(&o.held);
    /* the frozen transaction: a backend of A idle in it, holding locks,
     * rows locked for B */
    long long idle = 0, locks = 0;
    for (int64_t end = rbh_now_ms() + 1000; rbh_now_ms() < end && idle < 1; rbh_sleep_ms(10))
        locks = a_locks(&idle);
    long long rows = locked_working_rows();
    fprintf(stderr, "faults: frozen: %lld of A's backends idle in a transaction, %lld locks,"
                    " %lld working rows locked\n", idle, locks, rows);
    cr_assert_geq(idle, 1, "no backend of A was left in its transaction");
    cr_assert_gt(locks, 0);
    /* the server ends it after idle_in_transaction_timeout: no lock left */
    int64_t released = -1;
    for (int64_t end = rbh_now_ms() + IDLE_TX_MS + SLACK_MS + 1000; rbh_now_ms() < end;
         rbh_sleep_ms(20)) {
        if (a_locks(&idle) == 0 && idle == 0) {
            released = rbh_now_ms() - atomic_load(&t_fault);
            break;
        }
    }
    fprintf(stderr, "faults: A's locks released %lld ms after the outage began\n",
            (long long)released);
    cr_assert_geq(released, 0, "A's backends still hold locks past the idle timeout");
    cr_assert_leq(released, IDLE_TX_MS + SLACK_MS);
    during_blackhole(&o, held, 6000);
    heal_with("heal");
    check_a_answers(&o, REQUEST_TIMEOUT_MS + SLACK_MS);
    check_recovery(&o);
    finish(&o);
    check_logged_once(A);
    free(held);
}

/* Arms the proxy with patterns and waits up to ms for a chunk holding
 * them all to go through (then A is cut off); whether one did. */
static bool cut_after(const char *patterns, int64_t ms)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "arm %s", patterns);
    proxy_ok(cmd);
    char *st = NULL;
    bool hit = false;
    for (int64_t end = rbh_now_ms() + ms; !hit && rbh_now_ms() < end; rbh_sleep_ms(5)) {
        free(st);
        st = proxy("status");
        hit = st && strstr(st, "triggered=1");
    }
    free(st);
    if (!hit)
        proxy_ok("heal"); /* disarmed */
    return hit;
}

/* The most of A's backends seen, for half a second after A was cut off,
 * left in a transaction whose last statement was like `like` (printed with
 * what was seen: another connection of A may be cut off between the round
 * trips of a transaction of its own, which the idle timeout ends); and
 * whether none was after a claim. */
static long long left_open(const char *what, const char *after, const char *like)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
                          " 'rebound-a' AND state = 'idle in transaction' AND query LIKE '%s'",
             like);
    long long idle = 0, worst_idle = 0, open = 0;
    for (int64_t end = rbh_now_ms() + 500; rbh_now_ms() < end; rbh_sleep_ms(10)) {
        a_locks(&idle);
        worst_idle = idle > worst_idle ? idle : worst_idle;
        long long n = sql_int(q);
        open = n > open ? n : open;
    }
    fprintf(stderr, "faults: cut after %s: %lld of A's backends idle in a transaction, %lld of"
                    " them after %s\n", what, worst_idle, open, after);
    return open;
}

static bool no_claim_left_open(const char *what)
{
    return left_open(what, "a claim", "%rb_claim_unexpired%") == 0;
}

/* The outage begins right after a claim statement of A's was sent (a
 * FETCH's rb_claim_unexpired, statement rb_s2, or its one-queue form
 * rb_s23: the proxy's patterns match substrings). SKIP LOCKED leaves rows it
 * re-checked and did not take locked until the transaction ends, and a
 * node cut off before its COMMIT kept them: B's ACK of its own job waited
 * on A's idle claim transaction (issue 27). A claim now goes out alone or
 * with the COMMIT of its batch: first, for 3 s, a cut after a chunk that
 * holds a BEGIN and a claim (a batch's claim sent ahead of its COMMIT, as
 * before) must find no transaction left open (it does not happen any
 * more: the earlier ordering fails here at once); then a cut after any
 * claim leaves no backend of A in a transaction after it. */
Test(faults, outage_right_after_a_claim)
{
    check_clients = true;
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "outage_right_after_a_claim"};
    if (cut_after("BEGIN rb_s2", 3000)) {
        begin_fault();
        cr_assert(no_claim_left_open("a batch's claim"),
                  "a claim's transaction stayed open when A was cut off");
        heal_with("heal");
        check_recovery(&o);
    }
    cr_assert(cut_after("rb_s2", 20000), "no claim went through");
    begin_fault();
    cr_assert(no_claim_left_open("a claim"), "a claim's transaction stayed open when A was cut off");
    heal_with("heal");
    check_recovery(&o);
    finish(&o);
}

/* The outage begins right after A sent a whole batch in one round trip
 * (BEGIN, the ACK statement rb_s3 and the COMMIT in one chunk:
 * db_thread.c's run_wrapped): PostgreSQL commits it and A never hears.
 * A answers those requests with an error (in doubt: the clients send them
 * again after the heal, and an ACK sent again finds its job done); its
 * batch connection is not left in a transaction (nothing of it waits for
 * the idle timeout), and nothing is lost or run again after an +OK. */
Test(faults, outage_after_a_whole_batch)
{
    check_clients = true;
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "outage_after_a_whole_batch"};
    cr_assert(cut_after("BEGIN rb_s3 COMMIT", 20000), "no batch went through in one round trip");
    begin_fault();
    cr_assert_eq(left_open("a whole batch", "an ACK", "%rb_ack%"), 0,
                 "a batch sent whole was left open");
    /* the batch cut off holds requests sent before the fault (not
     * counted), answered "outcome unknown" at their deadline; A's clients
     * mostly wait on it, so the requests sent after the fault are their
     * next ones, sent then: one fails at once when A already took the link
     * for down, else within its own request timeout. The first storage
     * error comes within two request timeouts (CI saw more than one). */
    for (int64_t end = rbh_now_ms() + 2 * REQUEST_TIMEOUT_MS + SLACK_MS;
         !atomic_load(&a_first_error) && rbh_now_ms() < end;)
        rbh_sleep_ms(20);
    heal_with("heal");
    check_a_answers(&o, 2 * REQUEST_TIMEOUT_MS + SLACK_MS);
    check_recovery(&o);
    finish(&o);
}

/* Blackholes of random lengths (shorter and longer than request_timeout)
 * at random moments; the seed is printed. */
Test(faults, outages_at_random_moments)
{
    check_clients = true;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "faults: outages_at_random_moments: seed %u\n", seed);
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "outages_at_random_moments"};
    int64_t worst_first = 0;
    for (int round = 0; round < 4; round++) {
        rbh_sleep_ms(300 + (int)(rand_r(&seed) % 1200));
        int len = 500 + (int)(rand_r(&seed) % 4000);
        proxy_ok("blackhole both");
        begin_fault();
        rbh_sleep_ms(len);
        heal_with("heal");
        int64_t ww = atomic_load(&a_worst_write), wf = atomic_load(&a_worst_fetch);
        cr_assert_leq(ww, REQUEST_TIMEOUT_MS + SLACK_MS, "round %d: a request waited %lld ms",
                      round, (long long)ww);
        cr_assert_leq(wf, FETCH_WAIT_MS + REQUEST_TIMEOUT_MS + SLACK_MS);
        if (atomic_load(&a_first_error) && atomic_load(&a_first_error) - atomic_load(&t_fault) >
                                              worst_first)
            worst_first = atomic_load(&a_first_error) - atomic_load(&t_fault);
        check_recovery(&o);
        fprintf(stderr, "faults: round %d: blackhole %d ms, recovery_ms %lld\n", round, len,
                (long long)o.recovery);
    }
    o.first_error = worst_first;
    finish(&o);
    /* as many ends as starts: an outage shorter than request_timeout may
     * go unnoticed (its requests just took longer) */
    int down = count_lines(node[A].log, "database unreachable"),
        up = count_lines(node[A].log, "database reachable again after");
    cr_assert_eq(down, up, "%d outage starts logged, %d ends", down, up);
    cr_assert_leq(down, 4);
}

/* Node A paused (SIGSTOP) for longer than its workers' leases and the
 * idle timeout: B reaps what A's workers held; when A resumes, its stale
 * ACKs and FAILs change nothing (a job another node completed is not
 * found, one another worker holds is refused) and it serves again. */
Test(faults, sigstop_past_the_lease)
{
    check_clients = false; /* a stopped process answers nobody */
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "sigstop_past_the_lease"};
    hold_one_on_a();
    char *held = held_by_a(&o.held);
    kill(node[A].pid, SIGSTOP);
    begin_fault();
    o.reaped = wait_reaped(held, atomic_load(&t_fault),
                           LEASE_S * 1000 + IDLE_TX_MS + 2 * TICK_MS + SLACK_MS);
    cr_assert_geq(o.reaped, 0, "A's held jobs were not reaped by B in time");
    long long idle = 0, locks = 1;
    for (int64_t end = rbh_now_ms() + IDLE_TX_MS + SLACK_MS; rbh_now_ms() < end && locks;
         rbh_sleep_ms(20))
        locks = a_locks(&idle);
    cr_assert_eq(idle, 0, "a paused node's transaction outlived the idle timeout");
    int64_t left = atomic_load(&t_fault) + LEASE_S * 1000 + IDLE_TX_MS + 2000 - rbh_now_ms();
    if (left > 0)
        rbh_sleep_ms((int)left);
    kill(node[A].pid, SIGCONT);
    atomic_store(&t_heal, rbh_now_ms());
    check_recovery(&o);
    finish(&o);
    free(held);
}

/* PostgreSQL restarted under load: both nodes answer errors meanwhile,
 * log the outage once each, and serve again by themselves. */
Test(faults, database_restart)
{
    check_clients = true;
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    outage o = {.name = "database_restart"};
    cr_assert(rbpg_stop(&pgc), "cannot stop PostgreSQL");
    begin_fault(); /* from here nothing can commit until the restart */
    rbh_sleep_ms(500);
    atomic_store(&t_healing, rbh_now_ms());
    cr_assert(rbpg_restart(&pgc), "cannot start PostgreSQL again");
    atomic_store(&t_heal, rbh_now_ms());
    o.first_error = atomic_load(&a_first_error) ? atomic_load(&a_first_error) -
                                                      atomic_load(&t_fault)
                                                : -1;
    check_recovery(&o);
    finish(&o);
    check_logged_once(A);
    check_logged_once(B);
}

/* --- forwarding (storage.forward, docs/distributed.md "Forwarding to a
 * leader") --- */

#define FWD_LEASE_MS 3000 /* the leader lease here (fault pg.leader_lease_ms) */

/* Whether a new connection to node i is answered by a node that leads
 * (INFO rebound.forward.leader). */
static bool answered_by_leader(int i)
{
    rbh_conn *c = rbh_connect(&node[i], NULL);
    if (!c)
        return false;
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    bool yes = json_is_true(rbh_get(v, "rebound.forward.leader"));
    json_decref(v);
    rbh_close(c);
    return yes;
}

static bool b_relays(void)
{
    return answered_by_leader(B) && rbh_metric(http_port[B], "rebound_forward_leader ") == 0;
}

static bool b_leads(void)
{
    return rbh_metric(http_port[B], "rebound_forward_leader ") == 1;
}

static bool a_relays(void)
{
    return answered_by_leader(A) && rbh_metric(http_port[A], "rebound_forward_leader ") == 0;
}

/* Both nodes restarted with storage.forward on: A first, so it leads, and
 * B relays its clients to A. */
static void restart_forwarding(void)
{
    rbh_fault_set("pg.leader_lease_ms", "3000");
    forwarding = true;
    char url[2][1024];
    for (int i = 0; i < 2; i++) {
        snprintf(url[i], sizeof url[i], "%s", node[i].db);
        cr_assert_eq(rbh_stop(&node[i]), 0);
    }
    start_node(A, url[A]);
    for (int64_t end = rbh_now_ms() + 10000;
         rbh_metric(http_port[A], "rebound_forward_leader ") < 1 && rbh_now_ms() < end;)
        rbh_sleep_ms(20);
    cr_assert_eq(rbh_metric(http_port[A], "rebound_forward_leader "), 1, "A does not lead");
    start_node(B, url[B]);
    cr_assert(wait_for(b_relays, 10000), "B does not relay its clients to A");
}

/* Forwarding on, under load with producers and workers on both nodes (B's
 * relayed to A), the leader A killed with SIGKILL: B's relayed clients
 * see their connections break and reconnect, B serves them itself and
 * takes the lease once A's ends; A, started again, relays to B. Nothing
 * acknowledged is lost, no job runs again after its ACK was answered +OK,
 * and the processed counter equals the jobs done. */
Test(faults, leader_killed_with_forwarding)
{
    check_clients = false; /* a killed node answers nobody */
    restart_forwarding();
    start_load();
    cr_assert(wait_for(some_jobs_done, 30000), "no job done before the fault");
    cr_assert_geq(rbh_metric(http_port[B], "rebound_forward_relayed_total "), 1,
                  "B relayed no connection");
    outage o = {.name = "leader_killed_with_forwarding"};
    rbh_kill(&node[A], SIGKILL);
    begin_fault();
    cr_assert(wait_for(b_leads, FWD_LEASE_MS + 1000 + SLACK_MS), "B did not take the lease");
    atomic_store(&t_heal, rbh_now_ms());
    o.recovery = atomic_load(&t_heal) - atomic_load(&t_fault);
    cr_assert_eq(rbh_relaunch_http(&node[A], &http_port[A]), 0, "A did not start again");
    cr_assert(wait_for(a_relays, 10000), "A, started again, does not relay its clients to B");
    finish(&o);
    rbh_fault_set("pg.leader_lease_ms", NULL);
}
