/* Administration tests against the real server: MUTATE (every command,
 * target and filter, and its errors), QUEUE PAUSE/RESUME/REMOVE/LATENCY,
 * JOBS listings, WORKERS and FLUSH, and INFO's version and paused queues
 * as `rebound info` prints them. */
#include <criterion/criterion.h>

#include "common/version.h"
#include "common_helpers.h"

/* C connects as worker adm. */
static void start(void)
{
    rbh_suite_start("adm");
}

TestSuite(admin, .init = start, .fini = rbh_suite_stop, .timeout = 90);

#define SERVER_TEST(name) RBH_SERVER_TEST(admin, name)

/* Pushes n jobs "<prefix>-NNNN" of jobtype jt, scheduled an hour ahead. */
static void push_scheduled(const char *prefix, const char *jt, int n)
{
    char at[64];
    time_t t = time(NULL) + 3600;
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    for (int i = 0; i < n; i++)
        cr_assert(rbh_expect(C, "+OK",
                             "PUSH {\"jid\":\"%s-%04d\",\"jobtype\":\"%s\",\"args\":[],\"at\":\"%s\"}",
                             prefix, i, jt, at));
}

/* Pushes, fetches and fails a job with retry -1 so it is dead. */
static void make_dead(const char *jid, const char *jt)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"%s\",\"jobtype\":\"%s\",\"args\":[],\"retry\":-1,\"queue\":\"dq\"}", jid, jt));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH dq"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), jid);
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"%s\",\"errtype\":\"Err%s\"}", jid, jt));
}

SERVER_TEST(mutate_errors)
{
    cr_assert(rbh_expect(C, "-ERR MUTATE: cmd must be kill, requeue, discard or clear",
                         "MUTATE {\"cmd\":\"explode\",\"target\":\"dead\"}"));
    cr_assert(rbh_expect(C, "-ERR MUTATE: target must be scheduled, retries or dead",
                         "MUTATE {\"cmd\":\"kill\",\"target\":\"working\"}"));
    cr_assert(rbh_expect(C, "-ERR MUTATE: target must be scheduled, retries or dead",
                         "MUTATE {\"cmd\":\"kill\"}"));
    cr_assert(rbh_expect(C, "-ERR MUTATE: filter must be an object",
                         "MUTATE {\"cmd\":\"kill\",\"target\":\"dead\",\"filter\":[]}"));
    cr_assert(rbh_expect(C, "-ERR MUTATE: filter has jids (array), regexp (string), jobtype (string)",
                         "MUTATE {\"cmd\":\"kill\",\"target\":\"dead\",\"filter\":{\"jids\":\"x\"}}"));
    cr_assert(rbh_expect(C, "-ERR MUTATE: argument must be a JSON object", "MUTATE 3"));
}

SERVER_TEST(mutate_kill_requeue_discard_with_filters)
{
    push_scheduled("alpha", "A", 3);
    push_scheduled("beta", "B", 2);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 5);
    /* kill by jobtype */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":{\"jobtype\":\"B\"}}"));
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 2);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 3);
    /* requeue by jids */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"scheduled\",\"filter\":{\"jids\":[\"alpha-0001\",\"nope\"]}}"));
    char *st = rbh_job_state(C, "alpha-0001");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    /* discard by pattern (glob over the job JSON) */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":{\"regexp\":\"*alpha-0002*\"}}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"alpha-0002\"}"));
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 1);
    /* a jid filter on the wrong target changes nothing */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"jids\":[\"alpha-0000\"]}}"));
    st = rbh_job_state(C, "alpha-0000");
    cr_assert_str_eq(st, "scheduled");
    free(st);
    /* a jids filter whose entries name no job selects nothing (it is not
     * "no filter": once, distributed mode discarded every scheduled job) */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":{\"jids\":[1,null]}}"));
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 1);
    /* requeue from dead */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"beta-0000\"]}}"));
    st = rbh_job_state(C, "beta-0000");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    /* clear ignores the filter */
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"clear\",\"target\":\"dead\",\"filter\":{\"jobtype\":\"nothing\"}}"));
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 0);
}

SERVER_TEST(mutate_on_retries_and_dead)
{
    make_dead("dead-0001", "X");
    make_dead("dead-0002", "Y");
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 2);
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"jobtype\":\"X\"}}"));
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"dead-0001\"}"));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"retr-0001\",\"jobtype\":\"R\",\"args\":[],\"queue\":\"rq\"}"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH rq"));
    json_decref(j);
    cr_assert(rbh_expect(C, "+OK", "FAIL {\"jid\":\"retr-0001\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(C, "+OK", "MUTATE {\"cmd\":\"kill\",\"target\":\"retries\"}"));
    char *st = rbh_job_state(C, "retr-0001");
    cr_assert_str_eq(st, "dead");
    free(st);
}

SERVER_TEST(queue_commands)
{
    cr_assert(rbh_expect(C, "-ERR no such QUEUE subcommand: FREEZE (PAUSE, RESUME, REMOVE or LATENCY)", "QUEUE FREEZE q"));
    cr_assert(rbh_expect(C, "-ERR QUEUE PAUSE: name at least one queue (or *)", "QUEUE PAUSE"));
    for (int i = 0; i < 3; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"que-%05d\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"%s\"}",
                             i, i < 2 ? "q1" : "q2"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE *"));
    cr_assert(rbh_expect(C, "$-1", "FETCH q1 q2"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME q2 unknown-queue"));
    json_t *j = rbh_json(rbh_cmd(C, "FETCH q1 q2"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "que-00002");
    json_decref(j);
    json_t *lat = rbh_json(rbh_cmd(C, "QUEUE LATENCY q1 none"));
    cr_assert(json_is_number(json_object_get(lat, "q1")));
    cr_assert(json_number_value(json_object_get(lat, "q1")) >= 0);
    cr_assert(json_number_value(json_object_get(lat, "none")) == 0);
    json_decref(lat);
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE q1"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"que-00000\"}"));
    cr_assert(rbh_expect(C, "+OK", "queue resume *"));
}

SERVER_TEST(jobs_listing_with_filters)
{
    cr_assert(rbh_expect(C, "-ERR JOBS: state must be scheduled, enqueued, working, retries, dead, waiting or blocked", "JOBS {}"));
    cr_assert(rbh_expect(C, "-ERR JOBS: offset must be >= 0 and limit from 0 to 10000",
                         "JOBS {\"state\":\"dead\",\"limit\":-1}"));
    for (int i = 0; i < 5; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"lst-%05d\",\"jobtype\":\"%s\",\"args\":[],\"queue\":\"%s\"}",
                             i, i % 2 ? "odd" : "even", i < 3 ? "la" : "lb"));
    json_t *v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 5);
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"queue\":\"la\",\"jobtype\":\"even\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 2);
    cr_assert_str_eq(json_string_value(rbh_get(v, "jobs.0.job.jid")), "lst-00000");
    cr_assert_str_eq(json_string_value(rbh_get(v, "jobs.1.job.jid")), "lst-00002");
    cr_assert_str_eq(json_string_value(rbh_get(v, "jobs.0.state")), "enqueued");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"queue\":\"la\",\"offset\":1,\"limit\":1}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 3);
    cr_assert_eq(json_array_size(json_object_get(v, "jobs")), 1);
    cr_assert_str_eq(json_string_value(rbh_get(v, "jobs.0.job.jid")), "lst-00001");
    json_decref(v);
    make_dead("lst-dead1", "Z");
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"dead\",\"errtype\":\"ErrZ\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 1);
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"dead\",\"errtype\":\"Other\"}"));
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 0);
    json_decref(v);
}

SERVER_TEST(flush_deletes_everything)
{
    push_scheduled("flush", "A", 2);
    make_dead("fl-dead01", "D");
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"fl-enq001\",\"jobtype\":\"a\",\"args\":[]}"));
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Scheduled.size"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_failures"), 0);
    cr_assert(rbh_expect(C, "$-1", "JOB {\"jid\":\"fl-enq001\"}"));
    /* and it stays flushed after a restart */
    rbh_close(C);
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0);
    C = rbh_connect(&S, "adm");
    cr_assert_eq(rbh_info_int(C, "faktory.tasks.Dead.size"), 0);
    cr_assert_eq(rbh_info_int(C, "faktory.total_enqueued"), 0);
}

/* The text `rebound info` prints for S (the binary under test as the CLI),
 * NUL-terminated in out. */
static void cli_info(char *out, size_t n)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' info --url tcp://127.0.0.1:%d", rbh_bin(), S.port);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    cr_assert_eq(pclose(p), 0, "%s failed: %s", cmd, out);
}

SERVER_TEST(info_names_the_version_and_the_paused_queues)
{
    for (int i = 0; i < 3; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"pau-%05d\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"%s\"}",
                             i, i < 2 ? "busy" : "idle"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE busy empty"));
    json_t *v = rbh_json(rbh_cmd(C, "INFO"));
    /* stock clients read faktory_version: it stays Faktory's, beside ours */
    cr_assert_str_eq(json_string_value(rbh_get(v, "server.faktory_version")), RB_FAKTORY_VERSION);
    cr_assert_str_eq(json_string_value(rbh_get(v, "rebound.version")), RB_VERSION);
    cr_assert_str_eq(json_string_value(rbh_get(v, "rebound.faktory_protocol_version")),
                     RB_FAKTORY_VERSION);
    json_t *paused = rbh_get(v, "rebound.paused_queues");
    cr_assert(json_is_array(paused));
    cr_assert_eq(json_array_size(paused), 2);
    cr_assert_str_eq(json_string_value(json_array_get(paused, 0)), "busy");
    cr_assert_str_eq(json_string_value(json_array_get(paused, 1)), "empty");
    cr_assert_eq(json_integer_value(rbh_get(v, "faktory.queues.busy")), 2);
    cr_assert_eq(json_integer_value(rbh_get(v, "faktory.queues.empty")), 0);
    json_decref(v);

    char out[4096], want[128];
    cli_info(out, sizeof out);
    snprintf(want, sizeof want, "server     Rebound %s at 127.0.0.1:%d", RB_VERSION, S.port);
    cr_assert(strstr(out, want), "no '%s' in:\n%s", want, out);
    cr_assert(strstr(out, "\nprotocol   Faktory " RB_FAKTORY_VERSION "\n"),
              "%s", out);
    cr_assert(strstr(out, "\n  busy   2  paused\n"), "%s", out);
    cr_assert(strstr(out, "\n  empty  0  paused\n"), "%s", out);
    cr_assert(strstr(out, "\n  idle   1\n"), "%s", out);

    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME busy"));
    v = rbh_json(rbh_cmd(C, "INFO"));
    paused = rbh_get(v, "rebound.paused_queues");
    cr_assert_eq(json_array_size(paused), 1);
    cr_assert_str_eq(json_string_value(json_array_get(paused, 0)), "empty");
    json_decref(v);
    cli_info(out, sizeof out);
    cr_assert(strstr(out, "\n  busy   2\n"), "%s", out);
}

/* The jids of JOBS's listing v, comma-separated, into out. */
static void listed_jids(json_t *v, char *out, size_t n)
{
    out[0] = '\0';
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(v, "jobs"), i, e) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", i ? "," : "",
                 json_string_value(rbh_get(e, "job.jid")));
    }
}

/* Both modes list in one order (docs/http.md, "GET /api/jobs"): enqueued
 * jobs by queue name, then priority (high first), then FIFO; the other
 * states by deadline, earliest first. Once, a single node listed the
 * queues in its hash table's order and timed jobs in the order they
 * entered the state (deadline order only after a restart). */
SERVER_TEST(jobs_listing_order_is_the_same_in_both_modes)
{
    const char *queues[] = {"zeta", "alpha", "mu", "beta", "omega", "kappa", "delta", "pi"};
    for (int i = 0; i < 8; i++)
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"order-%03d\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"%s\"}",
                             i, queues[i]));
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"order-high\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"mu\",\"priority\":9}"));
    char got[512];
    json_t *v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\"}"));
    listed_jids(v, got, sizeof got);
    cr_assert_str_eq(got, "order-001,order-003,order-006,order-005,order-high,order-002,order-004,order-007,order-000");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"offset\":4,\"limit\":2}"));
    listed_jids(v, got, sizeof got);
    cr_assert_str_eq(got, "order-high,order-002");
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 9);
    json_decref(v);

    /* scheduled: pushed latest-first, listed earliest-first */
    char at[64];
    time_t base = time(NULL) + 3600;
    for (int i = 0; i < 4; i++) {
        time_t t = base + (4 - i) * 60;
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"sched-%03d\",\"jobtype\":\"a\",\"args\":[],\"at\":\"%s\"}",
                             i, at));
    }
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"scheduled\"}"));
    listed_jids(v, got, sizeof got);
    cr_assert_str_eq(got, "sched-003,sched-002,sched-001,sched-000");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"scheduled\",\"offset\":1,\"limit\":2}"));
    listed_jids(v, got, sizeof got);
    cr_assert_str_eq(got, "sched-002,sched-001");
    cr_assert_eq(json_integer_value(json_object_get(v, "total")), 4);
    json_decref(v);
}

/* QUEUE RESUME of a queue nobody pushed to or paused leaves it unknown:
 * a later PAUSE * does not pause it, and INFO does not list it. Once,
 * distributed mode recorded it on RESUME. */
SERVER_TEST(queue_resume_of_an_unknown_queue_creates_nothing)
{
    cr_assert(rbh_expect(C, "+OK", "PUSH {\"jid\":\"res-00001\",\"jobtype\":\"a\",\"args\":[],\"queue\":\"real\"}"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME ghost"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE PAUSE *"));
    json_t *v = rbh_json(rbh_cmd(C, "INFO"));
    json_t *paused = rbh_get(v, "rebound.paused_queues");
    cr_assert_eq(json_array_size(paused), 1);
    cr_assert_str_eq(json_string_value(json_array_get(paused, 0)), "real");
    cr_assert_null(rbh_get(v, "faktory.queues.ghost"));
    json_decref(v);
    cr_assert(rbh_expect(C, "+OK", "QUEUE RESUME *"));
}
