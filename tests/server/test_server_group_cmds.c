/* GROUP SET, PAUSE, RESUME, GET and GROUPS against the real server
 * (docs/protocol.md "GROUP", issue 30): an override changes a group's
 * limits for the next FETCH and {} removes it; a paused group's jobs stay
 * enqueued without an attempt while other groups run, and a FETCH parked
 * on the queue gets them at the pause's end, not before; RESUME ends it
 * early; a group paused before its first job holds that job; every error
 * of the design's table changes nothing; FLUSH clears overrides and
 * pauses; overrides and pauses survive kill -9 (a pause resumes at its
 * time after the restart, one that ended while the server was down is
 * gone). One source for both backends: test_pg_server_group_cmds.c
 * includes it with RBH_PG (overrides and pauses on rb_groups' rows; kill -9
 * is the node's, the database stays). */
#include <criterion/criterion.h>

#include "common/timeutil.h"
#include "common_helpers.h"

#define CONFIG "[groups.cfgq]\nconcurrency = 5\n"

static void start(void)
{
    (void)rbh_suite_start; /* this suite's server has a config */
    cr_assert_eq(rbh_start(&S, CONFIG, NULL), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
}

TestSuite(group_cmds, .init = start, .fini = rbh_suite_stop, .timeout = 90);

#define SERVER_TEST(name) RBH_SERVER_TEST(group_cmds, name)

/* PUSH of job jid into queue q, group g (NULL: none). */
static void push(const char *q, const char *jid, const char *g)
{
    char custom[300] = "";
    if (g)
        snprintf(custom, sizeof custom, ",\"custom\":{\"group\":\"%s\"}", g);
    cr_assert(rbh_expect(C, "+OK",
                         "PUSH {\"jid\":\"%s\",\"jobtype\":\"T\",\"queue\":\"%s\",\"args\":[],"
                         "\"reserve_for\":600%s}",
                         jid, q, custom));
}

/* GROUP GET q g as JSON (caller decrefs). */
static json_t *get(const char *q, const char *g)
{
    json_t *v = rbh_json(rbh_cmd(C, "GROUP GET %s %s", q, g));
    cr_assert_not_null(v, "GROUP GET %s %s answered no JSON", q, g);
    return v;
}

static const char *str(json_t *v, const char *path)
{
    return json_string_value(rbh_get(v, path));
}

static long long num(json_t *v, const char *path)
{
    return (long long)json_integer_value(rbh_get(v, path));
}

/* The fetched job's start on the server's clock: its reservation's end
 * minus its reserve_for (600 s). */
static int64_t started_ms(const char *jid)
{
    json_t *v = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"%s\"}", jid));
    int64_t ms = 0;
    cr_assert_eq(rb_time_parse_rfc3339(str(v, "reserved_until"), &ms), 0);
    json_decref(v);
    return ms - 600000;
}

static int64_t time_of(json_t *v, const char *path)
{
    int64_t ms = 0;
    cr_assert_eq(rb_time_parse_rfc3339(str(v, path), &ms), 0, "%s is no time", path);
    return ms;
}

/* An override takes effect at the next FETCH: concurrency 1 holds the
 * group after one start (another group's job comes instead); raised to 2
 * a FETCH waiting on the queue gets the held group's job at once; {}
 * removes it. */
SERVER_TEST(set_changes_limits_at_once)
{
    push("sq", "a-1------", "a");
    push("sq", "a-2------", "a");
    push("sq", "b-1------", "b");
    cr_assert(rbh_expect(C, "+OK", "GROUP SET sq a {\"concurrency\": 1}"));
    json_t *v = get("sq", "a");
    cr_assert_eq(num(v, "limits.concurrency"), 1);
    cr_assert_str_eq(str(v, "limits.from.concurrency"), "override");
    cr_assert_eq(num(v, "override.concurrency"), 1);
    cr_assert(rbh_get(v, "known") == json_true());
    cr_assert_eq(num(v, "ready"), 2);
    json_decref(v);
    char *j1 = rbh_fetch_jid(C, "sq"), *j2 = rbh_fetch_jid(C, "sq");
    cr_assert_str_eq(j1, "a-1------");
    cr_assert_str_eq(j2, "b-1------", "the group at its override's concurrency was not passed over");
    v = get("sq", "a");
    cr_assert_str_eq(str(v, "held"), "concurrency");
    cr_assert_eq(num(v, "working"), 1);
    json_decref(v);
    json_t *job = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"a-2------\"}"));
    cr_assert_str_eq(str(job, "group"), "a");
    cr_assert_str_eq(str(job, "held.by"), "group");
    cr_assert_str_eq(str(job, "held.reason"), "concurrency");
    cr_assert_str_eq(str(job, "held.detail"), "group a runs 1 of 1");
    json_decref(job);
    cr_assert_eq(rbh_info_int(C, "rebound.groups.held.concurrency"), 1);
    rbh_conn *w = rbh_connect(&S, "w1");
    cr_assert(rbh_send_parked(&S, w, "FETCH sq\r\n"));
    cr_assert(rbh_expect(C, "+OK", "GROUP SET sq a {\"concurrency\": 2}"));
    json_t *got = rbh_json(rbh_reply(w));
    cr_assert_str_eq(str(got, "jid"), "a-2------", "the raised limit did not release the group");
    json_decref(got);
    cr_assert(rbh_expect(C, "+OK", "GROUP SET sq a {}"));
    v = get("sq", "a");
    cr_assert(rbh_get(v, "override") == json_null());
    cr_assert_str_eq(str(v, "limits.from.concurrency"), "none");
    json_decref(v);
    rbh_close(w);
    free(j1);
    free(j2);
}

/* A paused group's jobs wait with no attempt while another group's run;
 * a FETCH parked on the queue gets the paused job at the pause's end (the
 * server's start time not before it), with its reason shown meanwhile. */
SERVER_TEST(pause_holds_then_resumes_at_its_time)
{
    push("pq", "p-1------", "slow");
    push("pq", "o-1------", "other");
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE pq slow 1.5 upstream said 429"));
    json_t *v = get("pq", "slow");
    cr_assert_str_eq(str(v, "held"), "paused");
    cr_assert_str_eq(str(v, "reason"), "upstream said 429");
    int64_t until = time_of(v, "paused_until");
    cr_assert_eq(time_of(v, "held_until"), until);
    json_decref(v);
    char *jid = rbh_fetch_jid(C, "pq");
    cr_assert_str_eq(jid, "o-1------", "the paused group's job was handed out");
    free(jid);
    json_t *job = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"p-1------\"}"));
    cr_assert_str_eq(str(job, "state"), "enqueued");
    cr_assert_eq(num(job, "attempts"), 0, "a paused job used an attempt");
    cr_assert_str_eq(str(job, "held.reason"), "paused");
    cr_assert_eq(time_of(job, "held.until"), until);
    cr_assert(strstr(str(job, "held.detail"), "upstream said 429"));
    cr_assert_eq(rbh_info_int(C, "rebound.groups.paused"), 1);
    json_decref(job);
    jid = rbh_fetch_jid(C, "pq"); /* parked until the pause ends (1.5 s < FETCH's 2 s) */
    cr_assert_str_eq(jid ? jid : "(none)", "p-1------", "the paused group did not resume");
    cr_assert_geq(started_ms(jid), until, "started before its pause ended");
    free(jid);
    v = get("pq", "slow");
    cr_assert(rbh_get(v, "paused_until") == json_null());
    cr_assert(rbh_get(v, "reason") == json_null());
    json_decref(v);
}

/* RESUME ends a pause early (a parked FETCH gets the job); RESUME of a
 * group not paused answers +OK; PAUSE replaces an earlier pause; the RFC
 * 3339 form of UNTIL is kept to the millisecond. */
SERVER_TEST(resume_ends_a_pause_early)
{
    push("rq", "r-1------", "g");
    char t[RB_TIME_STRLEN];
    rb_time_format(rb_now_ms() + 3600 * 1000 + 123, t);
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE rq g 60"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE rq g %s", t));
    json_t *v = get("rq", "g");
    cr_assert_str_eq(str(v, "paused_until"), t);
    cr_assert(rbh_get(v, "reason") == json_null());
    json_decref(v);
    rbh_conn *w = rbh_connect(&S, "w1");
    cr_assert(rbh_send_parked(&S, w, "FETCH rq\r\n"));
    cr_assert(rbh_expect(C, "+OK", "GROUP RESUME rq g"));
    json_t *got = rbh_json(rbh_reply(w));
    cr_assert_str_eq(str(got, "jid"), "r-1------", "RESUME did not release the group");
    json_decref(got);
    cr_assert(rbh_expect(C, "+OK", "GROUP RESUME rq g"));
    cr_assert(rbh_expect(C, "+OK", "GROUP RESUME rq nobody"));
    rbh_close(w);
}

/* A group paused before it has a job holds its first one; a queue named
 * in [groups] is known without jobs; a group never seen reads known
 * false with the configured limits. */
SERVER_TEST(pause_before_the_first_job)
{
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE cfgq z 600 maintenance"));
    push("cfgq", "z-1------", "z");
    json_t *v = get("cfgq", "z");
    cr_assert_str_eq(str(v, "held"), "paused");
    cr_assert_eq(num(v, "ready"), 1);
    json_decref(v);
    json_t *job = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"z-1------\"}"));
    cr_assert_str_eq(str(job, "state"), "enqueued");
    json_decref(job);
    v = get("cfgq", "never");
    cr_assert(rbh_get(v, "known") == json_false());
    cr_assert_eq(num(v, "limits.concurrency"), 5);
    cr_assert_str_eq(str(v, "limits.from.concurrency"), "queue");
    json_decref(v);
}

/* GROUPS: every queue's summary, one queue's page by name, the state
 * filter, offset and limit. */
SERVER_TEST(groups_lists_and_counts)
{
    push("lq", "l-1------", "c");
    push("lq", "l-2------", "a");
    push("lq", "l-3------", "b");
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE lq b 600"));
    cr_assert(rbh_expect(C, "+OK", "GROUP SET lq d {\"concurrency\": 3}"));
    json_t *v = rbh_json(rbh_cmd(C, "GROUPS {\"queue\": \"lq\"}"));
    cr_assert_eq(num(v, "total"), 4);
    cr_assert_eq(num(v, "active"), 2);
    cr_assert_eq(num(v, "paused"), 1);
    const char *order[] = {"a", "b", "c", "d"};
    json_t *gs = json_object_get(v, "groups");
    cr_assert_eq(json_array_size(gs), 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(gs, i), "group")),
                         order[i]);
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "GROUPS {\"queue\": \"lq\", \"state\": \"paused\"}"));
    cr_assert_eq(num(v, "total"), 1);
    cr_assert_str_eq(json_string_value(rbh_get(json_array_get(json_object_get(v, "groups"), 0),
                                               "group")),
                     "b");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "GROUPS {\"queue\": \"lq\", \"offset\": 1, \"limit\": 2}"));
    gs = json_object_get(v, "groups");
    cr_assert_eq(json_array_size(gs), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(gs, 0), "group")), "b");
    json_decref(v);
    v = rbh_json(rbh_cmd(C, "GROUPS"));
    json_t *qs = json_object_get(v, "queues");
    bool lq = false, cfgq = false;
    for (size_t i = 0; i < json_array_size(qs); i++) {
        const char *q = json_string_value(json_object_get(json_array_get(qs, i), "queue"));
        lq |= !strcmp(q, "lq");
        cfgq |= !strcmp(q, "cfgq");
        if (!strcmp(q, "lq"))
            cr_assert_eq(json_integer_value(json_object_get(json_array_get(qs, i), "total")), 4);
    }
    cr_assert(lq && cfgq, "GROUPS' summary misses a queue");
    json_decref(v);
}

/* Every refusal of the design's table, word for word, and that none of
 * them changed anything (GROUP GET before and after). */
SERVER_TEST(bad_input_changes_nothing)
{
    push("eq", "e-1------", "g");
    cr_assert(rbh_expect(C, "+OK", "GROUP SET eq g {\"concurrency\": 3}"));
    char *before = rbh_cmd(C, "GROUP GET eq g");
    static const char *const cases[][2] = {
        {"GROUP FOO eq g", "-ERR GROUP: subcommand must be SET, PAUSE, RESUME or GET"},
        {"GROUP PAUSE eq g", "-ERR GROUP PAUSE: usage: GROUP PAUSE QUEUE GROUP UNTIL [REASON]"},
        {"GROUP SET eq g", "-ERR GROUP SET: usage: GROUP SET QUEUE GROUP JSON"},
        {"GROUP GET eq", "-ERR GROUP GET: usage: GROUP GET QUEUE GROUP"},
        {"GROUP RESUME eq g x", "-ERR GROUP RESUME: usage: GROUP RESUME QUEUE GROUP"},
        {"GROUP SET emials g {}", "-ERR GROUP SET: no queue 'emials'"},
        {"GROUP SET eq g [1]", "-ERR GROUP SET: limits must be a JSON object, got '[1]'"},
        {"GROUP SET eq g {\"concurrency\": -1}",
         "-ERR GROUP SET: concurrency must be an integer from 0 to 1000000 (0: no limit), "
         "got -1"},
        {"GROUP SET eq g {\"rate\": 5}", "-ERR GROUP SET: rate needs a period (\"1s\" to \"7d\")"},
        {"GROUP SET eq g {\"concurency\": 1}",
         "-ERR GROUP SET: unknown key 'concurency' (did you mean 'concurrency'?)"},
        {"GROUP PAUSE eq g soon",
         "-ERR GROUP PAUSE: until must be an RFC 3339 time or seconds from now, got 'soon'"},
        {"GROUP PAUSE eq g 2020-01-01T00:00:00Z",
         "-ERR GROUP PAUSE: until '2020-01-01T00:00:00Z' is in the past"},
        {"GROUP PAUSE eq g 2099-01-01T00:00:00Z",
         "-ERR GROUP PAUSE: until is more than a year away ('2099-01-01T00:00:00Z')"},
        {"GROUPS {\"state\": \"x\"}",
         "-ERR GROUPS: state must be all, active, held or paused, got 'x'"},
        {"GROUPS {\"queue\": \"eq\", \"limit\": 0}",
         "-ERR GROUPS: limit must be an integer from 1 to 1000, got 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert(rbh_expect(C, cases[i][1], "%s", cases[i][0]), "case %zu: %s", i, cases[i][0]);
    char reason[260];
    memset(reason, 'r', 201);
    reason[201] = '\0';
    cr_assert(rbh_expect(C, "-ERR GROUP PAUSE: reason is longer than 200 bytes",
                         "GROUP PAUSE eq g 60 %s", reason));
    char group[210];
    memset(group, 'x', 201);
    group[201] = '\0';
    cr_assert(rbh_expect(C,
                         "-ERR GROUP SET: group must be 1 to 200 bytes without spaces or "
                         "control characters (ungrouped jobs: use QUEUE PAUSE or "
                         "[throttles.eq])",
                         "GROUP SET eq %s {}", group));
    char *after = rbh_cmd(C, "GROUP GET eq g");
    cr_assert_str_eq(after, before, "a refused GROUP changed the group");
    free(before);
    free(after);
}

/* FLUSH forgets overrides and pauses. */
SERVER_TEST(flush_clears_overrides_and_pauses)
{
    push("fq", "f-1------", "g");
    cr_assert(rbh_expect(C, "+OK", "GROUP SET fq g {\"concurrency\": 1}"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE fq h 600"));
    cr_assert(rbh_expect(C, "+OK", "FLUSH"));
    cr_assert(rbh_expect(C, "-ERR GROUP GET: no queue 'fq'", "GROUP GET fq g"));
    push("fq", "f-2------", "g");
    json_t *v = get("fq", "h");
    cr_assert(rbh_get(v, "known") == json_false());
    json_decref(v);
    v = get("fq", "g");
    cr_assert(rbh_get(v, "override") == json_null());
    json_decref(v);
}

/* S killed with SIGKILL and started again on its store once the wall
 * clock passed down_until_ms (0: at once); C reconnected. */
static void kill_restart(int64_t down_until_ms)
{
    rbh_close(C);
    C = NULL;
    rbh_kill(&S, SIGKILL);
    while (rb_now_ms() <= down_until_ms)
        rbh_sleep_ms(20);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "restart failed (see %s)", S.log);
    C = rbh_connect(&S, "w0");
    cr_assert_not_null(C);
}

/* Overrides and pauses are durable: after kill -9 the override holds, the
 * pause holds with its reason and resumes at its time (the job's start on
 * the server's clock not before it), and a pause that ended while the
 * server was down is gone. In distributed mode the held-back starts the
 * pauses counted are the cluster's, stored with the holds (schema 18):
 * the same after kill -9 (a single node's count the process's own). */
SERVER_TEST(overrides_and_pauses_survive_kill_9)
{
    push("kq", "k-a1-----", "a");
    push("kq", "k-a2-----", "a");
    push("kq", "k-b1-----", "b");
    push("kq", "k-c1-----", "c");
    cr_assert(rbh_expect(C, "+OK", "GROUP SET kq a {\"concurrency\": 1}"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE kq b 6 retry-after"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE kq c 2"));
    json_t *v = get("kq", "b");
    int64_t until_b = time_of(v, "paused_until");
    json_decref(v);
    v = get("kq", "c");
    int64_t until_c = time_of(v, "paused_until");
    json_decref(v);
#ifdef RBH_PG
    cr_assert_eq(rbh_info_int(C, "rebound.groups.by_queue.kq.holds.paused"), 2,
                 "two pauses, two held-back starts");
#endif
    kill_restart(until_c + 20); /* c's pause ends while the server is down */
#ifdef RBH_PG
    cr_assert_eq(rbh_info_int(C, "rebound.groups.by_queue.kq.holds.paused"), 2,
                 "the held-back starts were lost with the node");
#endif
    v = get("kq", "a");
    cr_assert_eq(num(v, "override.concurrency"), 1, "the override was lost");
    json_decref(v);
    v = get("kq", "b");
    if (rb_now_ms() < until_b - 200) {
        cr_assert_str_eq(str(v, "held"), "paused", "the pause was lost");
        cr_assert_str_eq(str(v, "reason"), "retry-after");
    }
    cr_assert_eq(time_of(v, "paused_until"), until_b);
    json_decref(v);
    v = get("kq", "c");
    cr_assert(rbh_get(v, "paused_until") == json_null(), "an ended pause came back");
    cr_assert(rbh_get(v, "known") == json_true());
    json_decref(v);
    /* a's limit 1, c unpaused: a then c start; b waits for its time */
    char *seen[4] = {0};
    for (int i = 0; i < 4; i++) {
        for (int tries = 0; !seen[i] && tries < 5; tries++)
            seen[i] = rbh_fetch_jid(C, "kq");
        cr_assert_not_null(seen[i], "fetch %d never came", i);
        if (!strcmp(seen[i], "k-a1-----") || !strcmp(seen[i], "k-a2-----")) {
            cr_assert(rbh_expect(C, "+OK", "ACK {\"jid\":\"%s\"}", seen[i]));
            continue;
        }
        if (!strcmp(seen[i], "k-b1-----"))
            cr_assert_geq(started_ms(seen[i]), until_b, "b started before its pause ended");
    }
    bool b = false, c = false;
    for (int i = 0; i < 4; i++) {
        b |= !strcmp(seen[i], "k-b1-----");
        c |= !strcmp(seen[i], "k-c1-----");
        free(seen[i]);
    }
    cr_assert(b && c, "a job never started");
}

/* GROUP GET q g shows no override and no pause: q unknown (distributed
 * mode, once QUEUE REMOVE deleted its rows) or g without settings (a
 * single node keeps the queue while it has jobs in memory). */
static void no_settings(const char *q, const char *g)
{
    char *r = rbh_cmd(C, "GROUP GET %s %s", q, g);
    cr_assert_not_null(r);
    char want[128];
    snprintf(want, sizeof want, "-ERR GROUP GET: no queue '%s'", q);
    if (strcmp(r, want)) {
        json_t *v = rbh_json(r);
        r = NULL;
        cr_assert(json_is_object(v), "GROUP GET %s %s answered no view", q, g);
        cr_assert(rbh_get(v, "override") == json_null(), "%s %s kept its override", q, g);
        cr_assert(rbh_get(v, "paused_until") == json_null(), "%s %s kept its pause", q, g);
        json_decref(v);
    }
    free(r);
}

/* QUEUE REMOVE forgets the queue's group overrides and pauses with its
 * jobs (stored rows too: not back after kill -9); another queue's stay. A
 * new push to the queue's group is not paused and takes the configured
 * limits. */
SERVER_TEST(queue_remove_forgets_overrides_and_pauses)
{
    push("xq", "x-1------", "g");
    push("yq", "y-1------", "g");
    cr_assert(rbh_expect(C, "+OK", "GROUP SET xq g {\"concurrency\": 1}"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE xq g 600 upstream 429"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE xq h 600"));
    cr_assert(rbh_expect(C, "+OK", "GROUP PAUSE yq g 600 kept"));
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE xq"));
    json_t *v = rbh_json(rbh_cmd(C, "GROUPS"));
    json_t *qs = json_object_get(v, "queues");
    for (size_t i = 0; i < json_array_size(qs); i++)
        cr_assert_str_neq(json_string_value(json_object_get(json_array_get(qs, i), "queue")),
                          "xq", "GROUPS still lists the removed queue");
    json_decref(v);
    no_settings("xq", "g");
    no_settings("xq", "h");
    kill_restart(0);
    no_settings("xq", "g");
    no_settings("xq", "h");
    push("xq", "x-2------", "g");
    v = get("xq", "g");
    cr_assert(rbh_get(v, "override") == json_null(), "the override outlived QUEUE REMOVE");
    cr_assert(rbh_get(v, "paused_until") == json_null(), "the pause outlived QUEUE REMOVE");
    cr_assert(rbh_get(v, "held") == json_null());
    json_decref(v);
    v = get("xq", "h");
    cr_assert(rbh_get(v, "known") == json_false(), "a paused group without jobs stayed");
    json_decref(v);
    char *jid = rbh_fetch_jid(C, "xq");
    cr_assert_str_eq(jid ? jid : "(none)", "x-2------", "the new push was held");
    free(jid);
    v = get("yq", "g"); /* another queue's pause stays */
    cr_assert_str_eq(str(v, "held"), "paused");
    cr_assert_str_eq(str(v, "reason"), "kept");
    json_decref(v);
}
