/* The soak test (bench/soak.sh): `rebound serve` under mixed load for N
 * minutes — producers (immediate and scheduled jobs), workers that ACK,
 * FAIL, abandon jobs and drop connections, hostile clients (half lines,
 * garbage, clients that never read), injected commit failures
 * (the fault sqlite.fault_file) and random SIGKILL/SIGTERM with restarts — then a
 * drain and an account of every job:
 *   - every job whose PUSH got +OK was ACKed (or its ACK was sent when the
 *     server died), or, for jobs made to die, is dead;
 *   - no job is fetched again after its ACK got +OK;
 *   - after the drain nothing is left waiting, and that survives kill -9.
 * Prints a summary; exit 0 when every check holds, 1 otherwise.
 * Usage: soak --bin PATH [--minutes N] [--rate R] [--seed S] [--keep] */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../tests/server/harness.h"

#define MAX_JOBS 4000000

enum { PUSH_SENT = 1, PUSH_OK = 2, ACK_SENT = 4, ACK_OK = 8, FAILED = 16, PUSH_ERR = 32 };

static rbh_server S;
static _Atomic unsigned char flags[MAX_JOBS];
static atomic_int next_id, g_port;
static atomic_long violations, pushes_err, fetches, acks, fails, abandons, drops, hostile,
    kills, terms, faults;
static atomic_bool stop_load, stop_workers;
static double rate = 200;
static char fault_path[400];

/* Jobs with id % 10 == 9 are made to die: retry 1, always failed. */
static bool is_die(int id)
{
    return id % 10 == 9;
}

/* A thread's own random numbers. */
static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

/* Connects to the current server, retrying while it restarts; NULL once
 * the given flag is set. */
static rbh_conn *connect_retry(const char *wid, atomic_bool *give_up)
{
    while (!atomic_load(give_up)) {
        rbh_server tmp = {0};
        tmp.port = atomic_load(&g_port);
        rbh_conn *c = rbh_connect(&tmp, wid);
        if (c)
            return c;
        rbh_sleep_ms(20);
    }
    return NULL;
}

static void utc_in(int64_t ms_ahead, char *out, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms_ahead;
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%03dZ", base, (int)(ms % 1000));
}

static void *producer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    rbh_conn *c = NULL;
    int64_t start = rbh_now_ms();
    long sent = 0;
    while (!atomic_load(&stop_load)) {
        /* pace: rate/2 per producer */
        int64_t due = start + (int64_t)((double)sent * 2000.0 / rate);
        int64_t now = rbh_now_ms();
        if (due > now)
            rbh_sleep_ms((int)(due - now));
        if (!c && !(c = connect_retry(NULL, &stop_load)))
            break;
        int id = atomic_fetch_add(&next_id, 1);
        if (id >= MAX_JOBS)
            break;
        char at[64] = "";
        if (next_rand(&seed) % 10 == 0) {
            char when[40];
            utc_in(next_rand(&seed) % 3000, when, sizeof when);
            snprintf(at, sizeof at, ",\"at\":\"%s\"", when);
        }
        atomic_fetch_or(&flags[id], PUSH_SENT);
        char *r;
        if (is_die(id))
            r = rbh_cmd(c, "PUSH {\"jid\":\"soak-%07d\",\"jobtype\":\"die\",\"args\":[%d],"
                           "\"queue\":\"soak\",\"reserve_for\":1,\"retry\":1%s}", id, id, at);
        else
            r = rbh_cmd(c, "PUSH {\"jid\":\"soak-%07d\",\"jobtype\":\"work\",\"args\":[%d],"
                           "\"queue\":\"soak\",\"reserve_for\":1,\"retry_policy\":{\"dialect\":"
                           "\"temporal\",\"initial_interval\":\"50ms\",\"maximum_attempts\":0}%s}",
                        id, id, at);
        sent++;
        if (!r) {
            rbh_close(c);
            c = NULL;
            continue;
        }
        if (!strcmp(r, "+OK"))
            atomic_fetch_or(&flags[id], PUSH_OK);
        else {
            atomic_fetch_or(&flags[id], PUSH_ERR);
            atomic_fetch_add(&pushes_err, 1);
        }
        free(r);
    }
    rbh_close(c);
    return NULL;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    char wid[32];
    snprintf(wid, sizeof wid, "soak-w%u", seed % 1000);
    rbh_conn *c = NULL;
    while (!atomic_load(&stop_workers)) {
        if (!c && !(c = connect_retry(wid, &stop_workers)))
            break;
        json_t *j = rbh_json(rbh_cmd(c, "FETCH soak"));
        const char *jid = json_string_value(json_object_get(j, "jid"));
        if (!jid) {
            bool dead = !j; /* NULL: the connection broke (or an error reply) */
            json_decref(j);
            if (dead) {
                rbh_close(c);
                c = NULL;
            }
            continue;
        }
        int id = atoi(jid + 5);
        json_decref(j);
        if (id < 0 || id >= MAX_JOBS)
            continue;
        atomic_fetch_add(&fetches, 1);
        if (atomic_load(&flags[id]) & ACK_OK)
            atomic_fetch_add(&violations, 1); /* ran again after its ACK */
        unsigned roll = next_rand(&seed) % 100;
        bool draining = atomic_load(&stop_load);
        char *r = NULL;
        if (!draining && roll < 3) { /* abandon: the reservation runs out */
            atomic_fetch_add(&abandons, 1);
            continue;
        }
        if (!draining && roll < 5) { /* crash with the job */
            atomic_fetch_add(&drops, 1);
            rbh_close(c);
            c = NULL;
            continue;
        }
        if (is_die(id) || (!draining && roll < 20)) {
            r = rbh_cmd(c, "FAIL {\"jid\":\"soak-%07d\",\"errtype\":\"Soak\",\"message\":\"m\","
                           "\"next_retry_delay\":0.05}", id);
            if (r && !strcmp(r, "+OK")) {
                atomic_fetch_or(&flags[id], FAILED);
                atomic_fetch_add(&fails, 1);
            }
        } else {
            atomic_fetch_or(&flags[id], ACK_SENT);
            r = rbh_cmd(c, "ACK {\"jid\":\"soak-%07d\"}", id);
            if (r && !strcmp(r, "+OK")) {
                atomic_fetch_or(&flags[id], ACK_OK);
                atomic_fetch_add(&acks, 1);
            }
        }
        if (!r) {
            rbh_close(c);
            c = NULL;
        }
        free(r);
    }
    rbh_close(c);
    return NULL;
}

/* Clients that misbehave, one at a time. */
static void *hostile_client(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop_load)) {
        rbh_sleep_ms(50 + (int)(next_rand(&seed) % 200));
        rbh_server tmp = {0};
        tmp.port = atomic_load(&g_port);
        rbh_conn *c = rbh_connect_raw(&tmp);
        if (!c)
            continue;
        atomic_fetch_add(&hostile, 1);
        switch (next_rand(&seed) % 4) {
        case 0: /* half a command, then gone */
            rbh_send(c, "HELLO {\"v\":2}\r\nPUSH {\"jid\":\"x", 29);
            break;
        case 1: { /* garbage */
            char junk[256];
            for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char)(next_rand(&seed) & 0xff);
            rbh_send(c, junk, sizeof junk);
            break;
        }
        case 2: /* many requests, no reads, then a reset */
            rbh_send(c, "HELLO {\"v\":2}\r\n", 15);
            for (int i = 0; i < 200; i++)
                rbh_send(c, "INFO\r\n", 6);
            {
                struct linger lg = {1, 0};
                setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            }
            break;
        default: /* a command the server refuses */
            free(rbh_cmd(c, "HELLO {\"v\":2}"));
            free(rbh_cmd(c, "ACK {\"jid\":\"no-such-job-soak\"}"));
            break;
        }
        rbh_close(c);
    }
    return NULL;
}

/* INFO sum of everything still waiting, or -1 when the server is down. */
static long long waiting(rbh_conn *c)
{
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    if (!v)
        return -1;
    long long n = 0;
    const char *paths[] = {"faktory.total_enqueued", "faktory.tasks.Busy.size",
                           "faktory.tasks.Retries.size", "faktory.tasks.Scheduled.size"};
    for (int i = 0; i < 4; i++)
        n += (long long)json_integer_value(rbh_get(v, paths[i]));
    json_decref(v);
    return n;
}

enum { NW = 4 };
static pthread_t work[NW];

static void start_workers(unsigned seed)
{
    atomic_store(&stop_workers, false);
    for (int i = 0; i < NW; i++)
        pthread_create(&work[i], NULL, worker, (void *)(uintptr_t)(seed + 7 * i + 3));
}

/* Lets the running workers empty the server (every job ACKed, die jobs
 * failed until dead), then stops them. Returns what is left (0 = all). */
static long long drain(void)
{
    rbh_conn *c = connect_retry(NULL, &stop_workers);
    int64_t deadline = rbh_now_ms() + 180000;
    long long left = -1;
    while (c && rbh_now_ms() < deadline && (left = waiting(c)) != 0)
        rbh_sleep_ms(100);
    atomic_store(&stop_workers, true);
    for (int i = 0; i < NW; i++)
        pthread_join(work[i], NULL);
    rbh_close(c);
    return left;
}

static int launch(void)
{
    unlink(fault_path);
    if (rbh_launch(&S, NULL) != 0) {
        fprintf(stderr, "soak: the server did not start; log %s\n", S.log);
        return -1;
    }
    atomic_store(&g_port, S.port);
    return 0;
}

int main(int argc, char **argv)
{
    double minutes = 60;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    bool keep = false;
    static const struct option longs[] = {
        {"bin", required_argument, NULL, 'b'},  {"minutes", required_argument, NULL, 'm'},
        {"rate", required_argument, NULL, 'r'}, {"seed", required_argument, NULL, 's'},
        {"keep", no_argument, NULL, 'k'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (ch) {
        case 'b': setenv("REBOUND_BIN", optarg, 1); break;
        case 'm': minutes = atof(optarg); break;
        case 'r': rate = atof(optarg); break;
        case 's': seed = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'k': keep = true; break;
        default:
            fprintf(stderr, "usage: soak --bin PATH [--minutes N (60)] [--rate PUSHES/S (200)]"
                            " [--seed S] [--keep]\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (minutes <= 0 || rate <= 0) {
        fprintf(stderr, "soak: --minutes and --rate must be positive\n");
        return 2;
    }
    if (keep)
        setenv("RBH_KEEP", "1", 1);
    srand(seed);
    rbh_init(&S);
    snprintf(fault_path, sizeof fault_path, "%s/fault", S.dir);
    S.env_fault = fault_path;
    fprintf(stderr, "soak: %.1f min, %.0f pushes/s, seed %u, dir %s\n", minutes, rate, seed, S.dir);
    if (launch())
        return 1;

    enum { NP = 2 };
    pthread_t prod[NP], host;
    for (int i = 0; i < NP; i++)
        pthread_create(&prod[i], NULL, producer, (void *)(uintptr_t)(seed + 11 * i + 1));
    start_workers(seed);
    pthread_create(&host, NULL, hostile_client, (void *)(uintptr_t)(seed + 5));

    int64_t end = rbh_now_ms() + (int64_t)(minutes * 60000);
    int64_t next_kill = rbh_now_ms() + 5000 + rand() % 15000;
    int64_t next_fault = rbh_now_ms() + 3000 + rand() % 7000;
    int64_t next_report = rbh_now_ms() + 60000;
    int rc = 0;
    while (rbh_now_ms() < end) {
        rbh_sleep_ms(50);
        int64_t now = rbh_now_ms();
        if (now >= next_fault) { /* commits fail for a moment */
            FILE *f = fopen(fault_path, "w");
            if (f)
                fclose(f);
            rbh_sleep_ms(100 + rand() % 300);
            unlink(fault_path);
            atomic_fetch_add(&faults, 1);
            next_fault = rbh_now_ms() + 3000 + rand() % 7000;
        }
        if (now >= next_kill) {
            bool term = rand() % 5 == 0;
            int st = rbh_kill(&S, term ? SIGTERM : SIGKILL);
            if (term && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
                fprintf(stderr, "soak: SIGTERM did not give a clean exit (status %d)\n", st);
                rc = 1;
            }
            atomic_fetch_add(term ? &terms : &kills, 1);
            if (launch()) {
                rc = 1;
                break;
            }
            next_kill = rbh_now_ms() + 5000 + rand() % 15000;
        }
        if (now >= next_report) {
            fprintf(stderr, "soak: %d pushed, %ld fetched, %ld acked, %ld kills+terms, %ld faults\n",
                    atomic_load(&next_id), atomic_load(&fetches), atomic_load(&acks),
                    atomic_load(&kills) + atomic_load(&terms), atomic_load(&faults));
            next_report = now + 60000;
        }
    }
    atomic_store(&stop_load, true);
    for (int i = 0; i < NP; i++)
        pthread_join(prod[i], NULL);
    pthread_join(host, NULL);

    /* Drain: workers ACK everything (die jobs still fail) until nothing
     * waits. A change whose commit failed during a fault (answered with an
     * error) is done in memory but not on disk, so such jobs come back
     * after a restart (at least once, never lost): restart and drain once
     * more, without faults. Then what was drained must stay drained across
     * kill -9. */
    long long left = drain(), came_back = -1;
    if (left != 0) {
        fprintf(stderr, "soak: %lld jobs still waiting after the drain\n", left);
        rc = 1;
    }
    rbh_kill(&S, SIGKILL);
    if (launch())
        return 1;
    rbh_conn *c = rbh_connect(&S, NULL);
    came_back = c ? waiting(c) : -1;
    rbh_close(c);
    start_workers(seed + 100);
    if ((left = drain()) != 0) {
        fprintf(stderr, "soak: %lld jobs still waiting after the second drain\n", left);
        rc = 1;
    }
    rbh_kill(&S, SIGKILL);
    if (launch())
        return 1;
    c = rbh_connect(&S, NULL);
    if (!c || waiting(c) != 0) {
        fprintf(stderr, "soak: jobs came back after the final restart\n");
        rc = 1;
    }
    long pushed_ok = 0, unknown = 0, lost = 0, die_ok = 0, not_dead = 0;
    int n = atomic_load(&next_id);
    for (int id = 0; id < n && id < MAX_JOBS && c; id++) {
        unsigned f = atomic_load(&flags[id]);
        if (!(f & PUSH_OK)) {
            unknown += (f & PUSH_SENT) && !(f & PUSH_ERR);
            continue;
        }
        pushed_ok++;
        if (is_die(id)) {
            die_ok++;
            char jid[32];
            snprintf(jid, sizeof jid, "soak-%07d", id);
            char *st = rbh_job_state(c, jid);
            if (!st || strcmp(st, "dead")) {
                not_dead++;
                fprintf(stderr, "soak: %s is %s, not dead\n", jid, st ? st : "gone");
            }
            free(st);
        } else if (!(f & (ACK_OK | ACK_SENT))) {
            lost++;
            fprintf(stderr, "soak: lost soak-%07d\n", id);
        }
    }
    long long dead = c ? rbh_info_int(c, "faktory.tasks.Dead.size") : -1;
    rbh_close(c);
    if (dead < die_ok) {
        fprintf(stderr, "soak: %lld dead jobs, fewer than the %ld made to die\n", dead, die_ok);
        rc = 1;
    }
    if (lost || not_dead || atomic_load(&violations))
        rc = 1;
    int st = rbh_kill(&S, SIGTERM);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        fprintf(stderr, "soak: the final SIGTERM did not give a clean exit\n");
        rc = 1;
    }
    printf("soak: %.1f min, seed %u: %ld jobs pushed with +OK (%ld more sent without a reply, "
           "%ld refused), %ld fetches, %ld acked, %ld failed, %ld abandoned, %ld dropped "
           "connections, %ld hostile clients, %ld kill -9, %ld SIGTERM, %ld commit faults; "
           "%ld dead as intended; %lld came back after a refused change; lost %ld, not dead %ld, "
           "re-run after ACK %ld: %s\n",
           minutes, seed, pushed_ok, unknown, atomic_load(&pushes_err), atomic_load(&fetches),
           atomic_load(&acks), atomic_load(&fails), atomic_load(&abandons), atomic_load(&drops),
           atomic_load(&hostile), atomic_load(&kills), atomic_load(&terms), atomic_load(&faults),
           die_ok, came_back, lost, not_dead, atomic_load(&violations), rc ? "FAIL" : "ok");
    S.pid = 0;
    if (rc == 0)
        rbh_stop(&S); /* removes the directory unless --keep */
    else
        fprintf(stderr, "soak: kept %s (server log: %s)\n", S.dir, S.log);
    return rc;
}
