/* Cron against the real server (issue 16 item 3, docs/enterprise.md
 * "Cron"), on a single node and (test_pg_server_cron.c, RBH_PG) in
 * distributed mode: a tick enqueues exactly one job with the entry's
 * jobtype, args, queue and custom; kill -9 after a tick (pending or
 * acknowledged) never enqueues it again; after downtime missed ticks are
 * skipped, or one catch-up job is enqueued with missed = "run_once" (also
 * after kill -9); `rebound cron` reads a configuration naming PostgreSQL.
 * Distributed mode only: two nodes on one database with the same entry
 * enqueue each tick exactly once, none twice and none missed. The cron
 * clock is moved with the documented test-only fault cron.clock_offset_ms
 * (and sped up with cron.clock_rate; $REBOUND_FAULTS, common/fault.h) so
 * that a minute's tick comes within a second. */
#include <criterion/criterion.h>

#include "common_helpers.h"
#include "test_http_harness.h"

/* Each test starts S itself (with its clock offset); the suite only stops it. */
TestSuite(cron, .fini = rbh_suite_stop, .timeout = 60);
static void (*const unused_start)(const char *) __attribute__((unused)) = rbh_suite_start;

#define MIN_MS 60000LL

/* The offset putting the cron clock lead_ms before a minute boundary plus
 * shift_ms; *tick_s is that boundary's tick (seconds). */
static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long offset_before_tick(long long lead_ms, long long shift_ms, long long *tick_s)
{
    long long now = wall_ms();
    long long boundary = (now / MIN_MS + 1) * MIN_MS + shift_ms;
    if (tick_s)
        *tick_s = boundary / 1000;
    return boundary - lead_ms - now;
}

static long long clock_offset; /* as set_offset last set it */

static void set_offset(long long ms)
{
    char v[32];
    snprintf(v, sizeof v, "%lld", ms);
    rbh_fault_set("cron.clock_offset_ms", v);
    clock_offset = ms;
}

/* More of the entry's [cron.job.custom] section, appended by config() (a
 * test that sets it resets it). */
static const char *custom_more = "";

static char *config(const char *missed)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "[[cron]]\n"
             "name = \"minutely\"\n"
             "schedule = \"* * * * *\"\n"
             "missed = \"%s\"\n"
             "[cron.job]\n"
             "type = \"Tick\"\n"
             "queue = \"cq\"\n"
             "args = [1, \"a\"]\n"
             "retry = 3\n"
             "[cron.job.custom]\n"
             "k = \"v\"\n"
             "%s",
             missed, custom_more);
    return text;
}

static long long queue_size(rbh_conn *c)
{
    long long n = rbh_info_int(c, "faktory.queues.cq");
    return n < 0 ? 0 : n;
}

/* Waits up to ms for queue cq to hold want jobs. */
static bool wait_size(rbh_conn *c, long long want, int ms)
{
    for (int64_t end = rbh_now_ms() + ms; rbh_now_ms() < end; rbh_sleep_ms(20))
        if (queue_size(c) == want)
            return true;
    return queue_size(c) == want;
}

static bool log_has(const rbh_server *s, const char *text)
{
    FILE *f = fopen(s->log, "r");
    if (!f)
        return false;
    char line[2048];
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f))
        hit = strstr(line, text) != NULL;
    fclose(f);
    return hit;
}

/* Starts S with the config and the cron clock LEAD_MS before a tick (the
 * offset computed after rbh_init, which in distributed mode makes and
 * migrates a schema; LEAD_MS covers a sanitized server's start at a load of
 * 20+: a server that starts after the tick skips it), and the HTTP API when http_port is not NULL. *tick
 * receives the tick (seconds); the offset is left in the environment. */
#define LEAD_MS 4000
/* how long a test waits for the tick's job */
#define TICK_WAIT_MS (LEAD_MS + 5000)

static void launch_before_tick(const char *missed, long long *tick, int *http_port)
{
    rbh_init(&S);
    rbh_write_file(&S, "rebound.toml", config(missed), S.config, sizeof S.config);
    static char hpf[320];
    snprintf(hpf, sizeof hpf, "%s/http-port", S.dir);
    const char *extra[] = {"--http-listen", "127.0.0.1:0", "--http-port-file", hpf, NULL};
    set_offset(offset_before_tick(LEAD_MS, 0, tick));
    cr_assert_eq(rbh_launch(&S, http_port ? extra : NULL), 0, "server did not start (see %s)",
                 S.log);
    if (http_port) {
        FILE *f = fopen(hpf, "r");
        cr_assert(f && fscanf(f, "%d", http_port) == 1, "no HTTP port");
        fclose(f);
    }
}

/* Starts S with the config and the cron clock just before a tick; waits
 * for the tick's job. Returns the tick (seconds). */
static long long start_and_tick(const char *missed)
{
    long long tick;
    launch_before_tick(missed, &tick, NULL);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    cr_assert(wait_size(C, 1, TICK_WAIT_MS), "the tick enqueued %lld jobs", queue_size(C));
    return tick;
}

static void restart(long long offset_ms, int sig)
{
    rbh_close(C);
    C = NULL;
    if (sig == SIGTERM)
        cr_assert(WIFEXITED(rbh_kill(&S, SIGTERM)));
    else
        rbh_kill(&S, sig);
    set_offset(offset_ms);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not restart (see %s)", S.log);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
}

static void expected_jid(const char *name, long long tick_s, char *out)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(out, 48, "cron-%016llx-%lld", (unsigned long long)h, tick_s);
}

/* `rebound cron --db` on S's store: entry 0's "last" (NULL: none stored;
 * the caller frees). */
static char *cli_last(void)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "%s cron --json --db '%s' '%s'", rbh_bin(), S.db, S.config);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    json_error_t jerr;
    json_t *out = json_loadf(p, 0, &jerr);
    cr_assert_eq(pclose(p), 0, "%s failed", cmd);
    cr_assert_not_null(out, "%s", jerr.text);
    json_t *last = rbh_get(out, "entries.0.last");
    cr_assert_not_null(last, "no \"last\" with --db");
    char *v = json_is_string(last) ? strdup(json_string_value(last)) : NULL;
    json_decref(out);
    return v;
}

RBH_SERVER_TEST(cron, a_tick_enqueues_exactly_one_job)
{
    long long tick;
    int http_port = 0;
    launch_before_tick("skip", &tick, &http_port);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    cr_assert(wait_size(C, 1, TICK_WAIT_MS), "the tick enqueued %lld jobs", queue_size(C));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH cq"));
    cr_assert_not_null(j);
    cr_assert_str_eq(json_string_value(json_object_get(j, "jobtype")), "Tick");
    cr_assert_str_eq(json_string_value(json_object_get(j, "queue")), "cq");
    cr_assert_eq(json_integer_value(rbh_get(j, "args.0")), 1);
    cr_assert_str_eq(json_string_value(rbh_get(j, "args.1")), "a");
    cr_assert_eq(json_array_size(json_object_get(j, "args")), 2);
    cr_assert_str_eq(json_string_value(rbh_get(j, "custom.k")), "v");
    cr_assert_eq(json_integer_value(json_object_get(j, "retry")), 3);
    char want[48];
    expected_jid("minutely", tick, want);
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), want);
    json_decref(j);
    /* one job per tick: nothing more within the same minute */
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.entries"), 1);
    rbh_resp *r = rbh_http(http_port, "GET", "/metrics", NULL, NULL);
    cr_assert(r && r->status == 200);
    cr_assert(strstr(r->body, "\nrebound_cron_fired_total 1\n"), "%s", r->body);
    rbh_resp_free(r);
    /* the stored tick, as `rebound cron --db` reads it from the store (a
     * single node's SQLite file once its server is stopped: the server
     * holds it exclusively) */
    rbh_close(C);
    C = NULL;
    int st = rbh_kill(&S, SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exited with %d", st);
    char *last = cli_last(), ts[40];
    time_t tt = (time_t)tick;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    cr_assert(last && !strcmp(last, ts), "last %s, want %s", last ? last : "null", ts);
    free(last);
}

RBH_SERVER_TEST(cron, kill_9_right_after_a_tick_does_not_enqueue_it_twice)
{
    long long tick;
    launch_before_tick("run_once", &tick, NULL);
    long long offset = clock_offset;
    C = rbh_connect(&S, "w1");
    cr_assert(wait_size(C, 1, TICK_WAIT_MS));
    /* killed with the tick's job pending: the restart finds the tick fired */
    restart(offset, SIGKILL);
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 1);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 0);
    /* ACKed, then killed: the job is gone, and still not pushed again */
    json_t *j = rbh_json(rbh_cmd(C, "FETCH cq"));
    cr_assert_not_null(j);
    cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}",
                         json_string_value(json_object_get(j, "jid"))));
    json_decref(j);
    restart(offset, SIGKILL);
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 0);
    (void)tick;
}

RBH_SERVER_TEST(cron, missed_ticks_are_skipped_after_downtime)
{
    long long tick = start_and_tick("skip");
    /* an hour later (half a minute before the next tick) */
    long long later = offset_before_tick(30000, 3600 * 1000LL, NULL);
    restart(later, SIGTERM);
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 1, "a missed tick fired");
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 0);
    cr_assert(log_has(&S, "ticks missed while down are skipped"));
    (void)tick;
}

RBH_SERVER_TEST(cron, run_once_enqueues_one_catch_up_job_after_downtime)
{
    start_and_tick("run_once");
    /* an hour later: 60 ticks missed, half a minute before the next */
    long long next;
    long long later = offset_before_tick(30000, 3600 * 1000LL, &next);
    restart(later, SIGTERM);
    cr_assert(wait_size(C, 2, 5000), "queue holds %lld", queue_size(C));
    rbh_sleep_ms(1000);
    cr_assert_eq(queue_size(C), 2, "more than one catch-up job");
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 1);
    /* the catch-up job is the latest missed tick's */
    char want[48];
    expected_jid("minutely", next - 60, want);
    char *st = rbh_job_state(C, want);
    cr_assert_not_null(st, "no job %s", want);
    free(st);
    /* another restart at the same time: no second catch-up */
    restart(later, SIGKILL);
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 2);
}

RBH_SERVER_TEST(cron, kill_9_then_downtime_run_once_enqueues_exactly_one_catch_up)
{
    long long first = start_and_tick("run_once");
    /* killed right after the tick; back an hour later */
    long long next;
    long long later = offset_before_tick(30000, 3600 * 1000LL, &next);
    restart(later, SIGKILL);
    cr_assert(wait_size(C, 2, 5000), "queue holds %lld", queue_size(C));
    rbh_sleep_ms(1000);
    cr_assert_eq(queue_size(C), 2, "more than one catch-up job");
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 1);
    char want[48];
    expected_jid("minutely", first, want); /* the tick before the kill, once */
    char *st = rbh_job_state(C, want);
    cr_assert_not_null(st, "no job %s", want);
    free(st);
    expected_jid("minutely", next - 60, want); /* the catch-up: the latest missed tick */
    st = rbh_job_state(C, want);
    cr_assert_not_null(st, "no job %s", want);
    free(st);
    /* killed again right after the catch-up: it is not enqueued again */
    restart(later, SIGKILL);
    rbh_sleep_ms(1500);
    cr_assert_eq(queue_size(C), 2);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 0);
}

/* A tick's job goes through debounce like any push (docs/flow-control.md
 * "Debounce"), in both modes: it is stored as its key's pending job,
 * scheduled "for" seconds on, and a later PUSH of the key merges into it
 * (the tick's jid runs, with the last push's args; the pusher's jid is an
 * alias). */
RBH_SERVER_TEST(cron, a_tick_job_is_debounced)
{
    custom_more = "[cron.job.custom.debounce]\nkey = \"ck\"\nfor = 600\n";
    long long tick;
    launch_before_tick("skip", &tick, NULL);
    custom_more = "";
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    for (int64_t end = rbh_now_ms() + 5000;
         rbh_now_ms() < end && rbh_info_int(C, "rebound.cron.fired") < 1;)
        rbh_sleep_ms(20);
    cr_assert_eq(rbh_info_int(C, "rebound.cron.fired"), 1, "the tick did not fire");
    char want[48];
    expected_jid("minutely", tick, want);
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", want));
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "scheduled",
                     "the tick's job was not debounced");
    cr_assert_str_eq(json_string_value(rbh_get(v, "debounce.key")), "ck");
    json_decref(v);
    cr_assert_eq(queue_size(C), 0);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"later-0001\",\"jobtype\":\"Tick\",\"queue\":\"cq\","
                         "\"args\":[2],\"custom\":{\"debounce\":{\"key\":\"ck\",\"for\":600}}}"));
    v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"later-0001\"}"));
    cr_assert_str_eq(json_string_value(json_object_get(v, "state")), "debounced");
    cr_assert_str_eq(json_string_value(json_object_get(v, "debounced_into")), want);
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", want));
    cr_assert_eq(json_integer_value(rbh_get(v, "job.args.0")), 2);
    cr_assert_eq(json_integer_value(rbh_get(v, "debounce.merged")), 1);
    json_decref(v);
    cr_assert_eq(rbh_info_int(C, "rebound.debounce.pending"), 1);
}

/* `rebound cron` lists entries and their next run times from the file alone. */
Test(cron, cli_lists_entries_with_next_runs)
{
    rbh_init(&S);
    rbh_write_file(&S, "rebound.toml",
                   "[[cron]]\nname = \"nightly-report\"\nschedule = \"30 2 * * mon-fri\"\n"
                   "timezone = \"Europe/Berlin\"\nmissed = \"run_once\"\n[cron.job]\n"
                   "type = \"NightlyReport\"\nargs = [\"daily\"]\n\n"
                   "[[cron]]\nschedule = \"0 0 31 2 *\"\n[cron.job]\njobtype = \"Never\"\n",
                   S.config, sizeof S.config);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s cron --json --now 2026-03-08T06:00:00Z --count 2 '%s'",
             rbh_bin(), S.config);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    json_error_t jerr;
    json_t *out = json_loadf(p, 0, &jerr);
    cr_assert_eq(pclose(p), 0);
    cr_assert_not_null(out, "%s", jerr.text);
    cr_assert_str_eq(json_string_value(json_object_get(out, "now")), "2026-03-08T06:00:00.000Z");
    json_t *a = rbh_get(out, "entries.0");
    cr_assert_str_eq(json_string_value(json_object_get(a, "name")), "nightly-report");
    cr_assert_str_eq(json_string_value(json_object_get(a, "timezone")), "Europe/Berlin");
    cr_assert_str_eq(json_string_value(json_object_get(a, "missed")), "run_once");
    cr_assert_str_eq(json_string_value(json_object_get(a, "queue")), "default");
    cr_assert_str_eq(json_string_value(rbh_get(a, "next.0")), "2026-03-09T01:30:00.000Z");
    cr_assert_str_eq(json_string_value(rbh_get(a, "next.1")), "2026-03-10T01:30:00.000Z");
    json_t *b = rbh_get(out, "entries.1");
    cr_assert_str_eq(json_string_value(json_object_get(b, "name")), "0 0 31 2 * Never");
    cr_assert_eq(json_array_size(json_object_get(b, "next")), 0);
    json_decref(out);
    /* a bad schedule: exit 2 with the line */
    rbh_write_file(&S, "bad.toml", "[[cron]]\nschedule = \"* * *\"\n[cron.job]\ntype = \"X\"\n",
                   S.config, sizeof S.config);
    snprintf(cmd, sizeof cmd, "%s cron '%s' 2>&1", rbh_bin(), S.config);
    p = popen(cmd, "r");
    char line[512] = "";
    cr_assert_not_null(fgets(line, sizeof line, p));
    int st = pclose(p);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
    cr_assert(strstr(line, "bad.toml:2: key 'cron[0].schedule': bad schedule"), "%s", line);
    /* a configuration naming PostgreSQL (distributed mode has cron too) */
    rbh_write_file(&S, "pg.toml",
                   "[storage]\nurl = \"postgres://127.0.0.1:1/none\"\n\n[[cron]]\n"
                   "schedule = \"@daily\"\n[cron.job]\ntype = \"Daily\"\n",
                   S.config, sizeof S.config);
    snprintf(cmd, sizeof cmd, "%s cron --json --now 2026-03-08T06:00:00Z '%s'", rbh_bin(),
             S.config);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    out = json_loadf(p, 0, &jerr);
    cr_assert_eq(pclose(p), 0);
    cr_assert_not_null(out, "%s", jerr.text);
    cr_assert_str_eq(json_string_value(rbh_get(out, "entries.0.name")), "@daily Daily");
    cr_assert_str_eq(json_string_value(rbh_get(out, "entries.0.next.0")),
                     "2026-03-09T00:00:00.000Z");
    json_decref(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", S.dir);
    cr_assert_eq(system(cmd), 0);
}

#ifdef RBH_PG
/* The jids node s logged as enqueued by entry "minutely", appended to v. */
static size_t logged_jids(const rbh_server *s, char v[][48], size_t n, size_t max)
{
    FILE *f = fopen(s->log, "r");
    cr_assert_not_null(f, "no log %s", s->log);
    char line[2048];
    const char *mark = "cron minutely: enqueued Tick/";
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, mark);
        if (!at || n == max)
            continue;
        at += strlen(mark);
        at[strcspn(at, " \r\n")] = '\0';
        snprintf(v[n++], 48, "%s", at);
    }
    fclose(f);
    return n;
}

static long long tick_of(const char *jid)
{
    return atoll(strrchr(jid, '-') + 1);
}

static int by_tick(const void *a, const void *b)
{
    long long x = tick_of(a), y = tick_of(b);
    return x < y ? -1 : x > y;
}

/* Two nodes on one database with the same entry, their cron clocks 60
 * times the wall clock (a minute's tick each second) and the second node's
 * half a second behind the first: a worker acknowledges each job before the
 * second node's turn, so only the stored tick (not the jid) keeps it from
 * pushing the tick again. Each tick is enqueued by exactly one node, none
 * twice, none missed. */
RBH_SERVER_TEST(cron, two_nodes_enqueue_each_tick_exactly_once)
{
    enum { RATE = 60, TICKS = 8, MAX = 256 };
    rbh_init(&S);
    rbh_write_file(&S, "rebound.toml", config("skip"), S.config, sizeof S.config);
    rbh_server s2;
    rbh_init(&s2);
    snprintf(s2.db, sizeof s2.db, "%s", S.db); /* the same database */
    rbh_write_file(&s2, "rebound.toml", config("skip"), s2.config, sizeof s2.config);
    long long now = wall_ms();
    /* cron clock = wall * RATE + offset: 1.5 s before a minute boundary */
    long long boundary = (now / MIN_MS + 1) * MIN_MS;
    long long offset = boundary - 1500 * RATE - now * RATE;
    rbh_fault_set("cron.clock_rate", "60");
    set_offset(offset);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "node 1 did not start (see %s)", S.log);
    set_offset(offset - 500 * RATE); /* half a second behind */
    cr_assert_eq(rbh_launch(&s2, NULL), 0, "node 2 did not start (see %s)", s2.log);
    rbh_fault_set("cron.clock_rate", NULL);
    C = rbh_connect(&S, "w1");
    cr_assert_not_null(C);
    /* a worker on node 1 takes and acknowledges every job */
    static char fetched[MAX][48];
    size_t n_fetched = 0;
    int64_t end = rbh_now_ms() + 60000, quiet_until = 0;
    while (rbh_now_ms() < end && (n_fetched < TICKS || rbh_now_ms() < quiet_until)) {
        json_t *j = rbh_json(rbh_cmd(C, "FETCH cq"));
        if (!j)
            continue;
        const char *jid = json_string_value(json_object_get(j, "jid"));
        cr_assert_not_null(jid);
        cr_assert_lt(n_fetched, (size_t)MAX);
        snprintf(fetched[n_fetched++], 48, "%s", jid);
        cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", jid));
        json_decref(j);
        if (n_fetched == TICKS) /* then a second more: a late duplicate shows */
            quiet_until = rbh_now_ms() + 1500;
    }
    cr_assert_geq(n_fetched, (size_t)TICKS, "only %zu jobs in 60 s", n_fetched);
    /* both nodes stopped: their logs say who enqueued what */
    int st = rbh_kill(&s2, SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "node 2 exited with %d", st);
    rbh_close(C);
    C = NULL;
    st = rbh_kill(&S, SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "node 1 exited with %d", st);
    static char logged[MAX][48];
    size_t n1 = logged_jids(&S, logged, 0, MAX);
    size_t n = logged_jids(&s2, logged, n1, MAX);
    cr_assert_geq(n, (size_t)TICKS);
    cr_assert_eq(rbh_stop(&s2), 0, "node 2's log has a sanitizer report");
    qsort(logged, n, sizeof logged[0], by_tick);
    for (size_t i = 1; i < n; i++) {
        cr_assert_neq(tick_of(logged[i]), tick_of(logged[i - 1]), "tick %s enqueued twice",
                      logged[i]);
        cr_assert_eq(tick_of(logged[i]), tick_of(logged[i - 1]) + 60, "ticks missed between %s "
                     "and %s", logged[i - 1], logged[i]);
    }
    /* every job fetched once, and each is a logged tick */
    qsort(fetched, n_fetched, sizeof fetched[0], by_tick);
    for (size_t i = 0; i < n_fetched; i++) {
        cr_assert(i == 0 || strcmp(fetched[i], fetched[i - 1]), "%s fetched twice", fetched[i]);
        bool found = false;
        for (size_t k = 0; k < n && !found; k++)
            found = !strcmp(logged[k], fetched[i]);
        cr_assert(found, "%s fetched, never logged", fetched[i]);
    }
}
#endif
