/* The bad-input table: every command with malformed forms (missing, extra
 * and garbage arguments, wrong JSON types per field, huge and negative
 * numbers, invalid UTF-8, NUL bytes, duplicate jids, lines over the size
 * limit) against a real server holding one job in each state. Each line must
 * get its error (or documented) reply, and the server's state, seen through
 * INFO and the JOBS listings, must be what it was before. */
#include <criterion/criterion.h>

#include "harness.h"

/* The jobs that make up the state every case must leave alone. */
#define JID_ENQ "enqueued-0001"
#define JID_SCH "scheduled-001"
#define JID_WRK "working-00001"
#define JID_RET "retries-00001"
#define JID_DED "dead-00000001"
#define MAX_LINE 2048 /* server.max_job_bytes in this test's config */

static rbh_server S;
static rbh_conn *C;      /* the connection the cases go through (no wid) */
static rbh_conn *HOLDER; /* worker "holder", which has JID_WRK reserved */

/* --- the state --- */

static const char *last_line = "(none)"; /* the case sent last, for messages */

static const char *const states[] = {"scheduled", "enqueued", "working", "retries", "dead"};

/* INFO's job counts and every JOBS listing, as one canonical text (caller
 * frees). Time-dependent and per-connection figures (now, uptime,
 * command_count, connections, memory) are left out. */
static char *snapshot(rbh_conn *c)
{
    json_t *snap = json_object();
    char *r = rbh_cmd(c, "INFO");
    json_t *info = json_loads(r ? r : "", 0, NULL);
    cr_assert(json_is_object(info), "INFO did not answer JSON but '%.200s' (after '%.200s')",
              r ? r : "(closed)", last_line);
    free(r);
    json_object_set(snap, "faktory", json_object_get(info, "faktory"));
    json_decref(info);
    for (size_t i = 0; i < sizeof states / sizeof *states; i++) {
        json_t *l = rbh_json(rbh_cmd(c, "JOBS {\"state\":\"%s\",\"limit\":1000}", states[i]));
        cr_assert(json_is_object(l), "JOBS %s did not answer JSON", states[i]);
        json_object_set_new(snap, states[i], l);
    }
    char *s = json_dumps(snap, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(snap);
    return s;
}

static void push_ok(rbh_conn *c, const char *job)
{
    cr_assert(rbh_expect(c, "+OK", "PUSH %s", job));
}

/* One job in every state: enqueued, scheduled (far future), working (held
 * by HOLDER), retries (an hour away) and dead. */
static void make_state(void)
{
    push_ok(C, "{\"jid\":\"" JID_ENQ "\",\"jobtype\":\"t\",\"args\":[1,\"x\"],\"queue\":\"eq\"}");
    push_ok(C, "{\"jid\":\"" JID_SCH "\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"sq\","
               "\"at\":\"2099-01-01T00:00:00Z\"}");
    push_ok(C, "{\"jid\":\"" JID_WRK "\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"wq\"}");
    push_ok(C, "{\"jid\":\"" JID_RET "\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"rq\","
               "\"retry_policy\":\"ftl:5 1h\"}");
    push_ok(C, "{\"jid\":\"" JID_DED "\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"dq\","
               "\"retry_policy\":{\"dialect\":\"temporal\",\"maximum_attempts\":1}}");
    const char *fq[] = {"rq", "dq", "wq"};
    for (int i = 0; i < 3; i++) {
        json_t *j = rbh_json(rbh_cmd(HOLDER, "FETCH %s", fq[i]));
        cr_assert(json_is_object(j), "FETCH %s returned no job", fq[i]);
        json_decref(j);
    }
    cr_assert(rbh_expect(HOLDER, "+OK", "FAIL {\"jid\":\"" JID_RET "\",\"errtype\":\"E\"}"));
    cr_assert(rbh_expect(HOLDER, "+OK", "FAIL {\"jid\":\"" JID_DED "\",\"errtype\":\"E\"}"));
    const char *want[][2] = {{JID_ENQ, "enqueued"}, {JID_SCH, "scheduled"}, {JID_WRK, "working"},
                             {JID_RET, "retries"},  {JID_DED, "dead"}};
    for (int i = 0; i < 5; i++) {
        char *st = rbh_job_state(C, want[i][0]);
        cr_assert(st && !strcmp(st, want[i][1]), "%s is %s, not %s", want[i][0], st ? st : "gone",
                  want[i][1]);
        free(st);
    }
}

static void start(void)
{
    char cfg[128];
    snprintf(cfg, sizeof cfg, "[server]\nmax_job_bytes = %d\n", MAX_LINE);
    cr_assert_eq(rbh_start(&S, cfg, NULL), 0, "server did not start (see %s)", S.log);
    C = rbh_connect(&S, NULL);
    HOLDER = rbh_connect(&S, "holder");
    cr_assert(C && HOLDER);
    make_state();
}

static void stop(void)
{
    rbh_close(C);
    rbh_close(HOLDER);
    rbh_stop(&S);
}

TestSuite(badinput, .init = start, .fini = stop, .timeout = 120);

/* Criterion ignores .fini failures: each test ends by stopping the server and
 * asserting it exited cleanly (no sanitizer report). */
static void finish(void)
{
    rbh_close(C);
    rbh_close(HOLDER);
    C = HOLDER = NULL;
    cr_assert_eq(rbh_stop(&S), 0, "the server did not exit cleanly (log above)");
    S.pid = 0;
}

/* --- the table --- */

enum {
    EXACT = 1,     /* the reply must equal want (else: start with it) */
    CLOSES = 2,    /* the server closes the connection after replying */
    RAW = 4,       /* sent on a fresh connection before HELLO */
};

typedef struct bad_case {
    char *line; /* without CRLF; owned */
    size_t len;
    char *want; /* owned */
    int flags;
} bad_case;

static bad_case cases[2048];
static size_t n_cases;

static void add_bytes(const char *line, size_t len, const char *want, int flags)
{
    cr_assert(n_cases < sizeof cases / sizeof *cases);
    bad_case *b = &cases[n_cases++];
    b->line = malloc(len + 1);
    memcpy(b->line, line, len);
    b->line[len] = '\0';
    b->len = len;
    b->want = strdup(want);
    b->flags = flags;
}

static void add(const char *want, int flags, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(const char *want, int flags, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0);
    add_bytes(s, (size_t)n, want, flags);
    free(s);
}

/* Values of every JSON type and the troublesome numbers. */
static const char *const any_values[] = {
    "null", "true", "false", "0", "-1", "1.5", "1e308", "-1e308", "9223372036854775807",
    "-9223372036854775808", "\"\"", "\"x\"", "\"\\u00ff\"", "[]", "[1]", "{}", "{\"a\":1}",
};
#define N_ANY (sizeof any_values / sizeof *any_values)

/* Argument texts that are not valid JSON, or not what any command takes. */
static const char *const garbage[] = {
    "x", "{", "}", "{]", "[", "{\"jid\":", "{\"jid\" \"x\"}", "{'jid':'x'}", "{\"jid\":\"x\"} trailing",
    "{\"jid\":\"x\",}", "[1,]", "\"unterminated", "{\"a\":1e999}", "{\"a\":18446744073709551616}",
    "{\"a\":-18446744073709551616}", "{\"a\":nan}", "{\"a\":Infinity}", "{\"a\":0x10}",
    "{\"jid\":\"\\ud800\"}", "{\"jid\":\"\\u0000abc\"}", "{\"jid\":\"a\\qb\"}",
};

/* A valid job's JSON with one field replaced (value NULL: removed). */
static char *job_with(const char *jid, const char *field, const char *value)
{
    const char *keys[] = {"jid", "jobtype", "args", "queue"};
    char jidq[64];
    snprintf(jidq, sizeof jidq, "\"%s\"", jid);
    const char *vals[] = {jidq, "\"t\"", "[1]", "\"default\""};
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    fputc('{', f);
    int n = 0;
    bool replaced = false;
    for (int i = 0; i < 4; i++) {
        const char *v = vals[i];
        if (field && !strcmp(field, keys[i])) {
            replaced = true;
            if (!value)
                continue;
            v = value;
        }
        fprintf(f, "%s\"%s\":%s", n++ ? "," : "", keys[i], v);
    }
    if (field && !replaced && value)
        fprintf(f, "%s\"%s\":%s", n ? "," : "", field, value);
    fputc('}', f);
    fclose(f);
    return out;
}

/* PUSH with field set to value: the job must be rejected. */
static void bad_push(const char *field, const char *value)
{
    char *j = job_with("badjob-000001", field, value);
    add("-ERR", 0, "PUSH %s", j);
    /* The same job in a batch: rejected by name (or index), nothing pushed. */
    char key[64];
    const char *jidv = field && !strcmp(field, "jid") ? NULL : "badjob-000001";
    if (jidv)
        snprintf(key, sizeof key, "{\"%s\":\"", jidv);
    else
        snprintf(key, sizeof key, "{\"");
    add(key, 0, "PUSHB [%s]", j);
    free(j);
}

static void build_table(void)
{
    n_cases = 0;
    /* Arity: every verb without its argument, and argument-less verbs with one. */
    const char *need_arg[] = {"HELLO", "BEAT", "PUSH", "PUSHB", "ACK", "FAIL", "SNOOZE",
                              "EXTEND", "MUTATE", "QUEUE", "JOB", "JOBS", "WORKERS",
                              "WORKFLOW", "BATCHES", "TRACK", "GROUP"};
    for (size_t i = 0; i < sizeof need_arg / sizeof *need_arg; i++) {
        add("-ERR", 0, "%s", need_arg[i]);
        add("-ERR", 0, "%s   ", need_arg[i]);
        add("-ERR", 0, "%s\t", need_arg[i]); /* a tab is part of the verb: unknown */
    }
    add("-ERR", 0, "FETCH");
    add("-ERR", 0, "FETCH  ");
    const char *no_arg[] = {"INFO", "FLUSH", "END", "info", "flush", "Flush", "end"};
    for (size_t i = 0; i < sizeof no_arg / sizeof *no_arg; i++) {
        add("-ERR", 0, "%s x", no_arg[i]);
        add("-ERR", 0, "%s {}", no_arg[i]);
        add("-ERR", 0, "%s\txyz", no_arg[i]);
    }
    /* Unknown, empty and mangled verbs. */
    const char *verbs[] = {"", "   ", "FOO", "PUSHX {}", "FLUSHALL", "FLUSH_", "P USH {}",
                           "\xff\xfe", "PUSH\xff {}", "\xc3\x28 x", "HELL0 {}", "INFOINFO"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        add("-ERR", 0, "%s", verbs[i]);

    /* Garbage and wrong-typed arguments for every JSON-taking command. */
    const char *json_verbs[] = {"BEAT", "PUSH", "PUSHB", "ACK", "FAIL", "SNOOZE", "EXTEND",
                                "MUTATE", "JOB", "JOBS", "WORKERS", "WORKFLOW", "BATCHES"};
    for (size_t v = 0; v < sizeof json_verbs / sizeof *json_verbs; v++) {
        for (size_t g = 0; g < sizeof garbage / sizeof *garbage; g++)
            add("-ERR", 0, "%s %s", json_verbs[v], garbage[g]);
        for (size_t a = 0; a < N_ANY; a++) { /* right syntax, wrong type */
            bool is_obj = any_values[a][0] == '{', is_arr = any_values[a][0] == '[';
            if (!strcmp(json_verbs[v], "PUSHB") ? is_arr : is_obj)
                continue;
            add("-ERR", 0, "%s %s", json_verbs[v], any_values[a]);
        }
        add("-ERR", 0, "%s \xff{}", json_verbs[v]);
        add("-ERR", 0, "%s {\"jid\":\"\xff\xfe\"}", json_verbs[v]);        /* invalid UTF-8 */
        add("-ERR", 0, "%s {\"jid\":\"\xc0\xaf" "abcdefgh\"}", json_verbs[v]); /* overlong */
        add("-ERR", 0, "%s {\"jid\":\"\xed\xa0\x80" "abcdefgh\"}", json_verbs[v]); /* surrogate */
        char deep[2000]; /* nesting deeper than the JSON parser takes */
        memset(deep, '[', sizeof deep);
        add("-ERR", 0, "%s %.*s", json_verbs[v], (int)sizeof deep, deep);
    }

    /* PUSH: each field wrong in every way. */
    const char *bad_jid[] = {NULL, "1", "null", "\"\"", "\"short\"", "[]", "{}", "true", "1e308"};
    for (size_t i = 0; i < sizeof bad_jid / sizeof *bad_jid; i++)
        bad_push("jid", bad_jid[i]);
    const char *bad_jobtype[] = {NULL, "1", "null", "\"\"", "[]", "{}", "false"};
    for (size_t i = 0; i < sizeof bad_jobtype / sizeof *bad_jobtype; i++)
        bad_push("jobtype", bad_jobtype[i]);
    const char *bad_args[] = {NULL, "null", "{}", "\"x\"", "1", "true"};
    for (size_t i = 0; i < sizeof bad_args / sizeof *bad_args; i++)
        bad_push("args", bad_args[i]);
    static char long_queue[220];
    memset(long_queue, 'q', sizeof long_queue);
    long_queue[0] = '"';
    long_queue[sizeof long_queue - 2] = '"';
    long_queue[sizeof long_queue - 1] = '\0';
    const char *bad_queue[] = {"\"\"", "1", "[]", "{}", "\"a b\"", "\"tab\\tq\"", "\"nl\\nq\"",
                               "\"\\u007f\"", "true", long_queue};
    for (size_t i = 0; i < sizeof bad_queue / sizeof *bad_queue; i++)
        bad_push("queue", bad_queue[i]);
    const char *bad_at[] = {"1", "[]", "{}", "true", "\"yesterday\"", "\"2024-13-45T00:00:00Z\"",
                            "\"2024-02-30T00:00:00Z\"", "\"2024-01-01T25:00:00Z\"",
                            "\"99999-01-01T00:00:00Z\"", "\"2024-01-01\"", "1e308"};
    for (size_t i = 0; i < sizeof bad_at / sizeof *bad_at; i++)
        bad_push("at", bad_at[i]);
    const char *bad_reserve[] = {"-1", "86401", "1e308", "9223372036854775807",
                                 "-9223372036854775808", "\"60\"", "1.5", "true", "[]"};
    for (size_t i = 0; i < sizeof bad_reserve / sizeof *bad_reserve; i++)
        bad_push("reserve_for", bad_reserve[i]);
    const char *bad_priority[] = {"0", "10", "-1", "9223372036854775807", "-9223372036854775808",
                                  "\"5\"", "5.5", "1e308", "{}"};
    for (size_t i = 0; i < sizeof bad_priority / sizeof *bad_priority; i++)
        bad_push("priority", bad_priority[i]);
    const char *bad_retry[] = {"-2", "1000001", "\"3\"", "1.5", "9223372036854775807",
                               "-9223372036854775808", "1e308", "[]", "true"};
    for (size_t i = 0; i < sizeof bad_retry / sizeof *bad_retry; i++)
        bad_push("retry", bad_retry[i]);
    const char *bad_backtrace[] = {"-1", "1001", "\"x\"", "2.5", "9223372036854775807"};
    for (size_t i = 0; i < sizeof bad_backtrace / sizeof *bad_backtrace; i++)
        bad_push("backtrace", bad_backtrace[i]);
    const char *bad_custom[] = {"1", "\"x\"", "[]", "true",
                                "{\"retry_policy\":\"bogus\"}", "{\"retry_policy\":[]}"};
    for (size_t i = 0; i < sizeof bad_custom / sizeof *bad_custom; i++)
        bad_push("custom", bad_custom[i]);
    /* flow control (engine/group.h): a group that is no name, a debounce */
    static char long_group[230];
    snprintf(long_group, sizeof long_group, "{\"group\":\"%0201d\"}", 0);
    const char *bad_group[] = {"{\"group\":1}", "{\"group\":\"\"}", "{\"group\":\"a b\"}",
                               "{\"group\":\"tab\\tg\"}", "{\"group\":\"nl\\ng\"}",
                               "{\"group\":[]}", "{\"group\":{}}", "{\"group\":true}",
                               "{\"group\":\"\\u007f\"}", long_group,
                               "{\"debounce\":{\"key\":\"\",\"for\":1}}"};
    for (size_t i = 0; i < sizeof bad_group / sizeof *bad_group; i++)
        bad_push("custom", bad_group[i]);
    const char *bad_policy[] = {
        "\"bogus\"", "\"ftl:\"", "\"ftl:abc\"", "\"ftl:10 5s 1s\"", "\"ftl:5 -1s\"",
        "\"ftl:99999999999 1s\"", "\"faktory:x\"", "\"faktory:-5\"", "[]", "true", "1.5", "1e308",
        "{\"dialect\":\"nope\"}", "{\"dialect\":1}", "{\"maximum_attempts\":-1}",
        "{\"dialect\":\"temporal\",\"initial_interval\":\"-1s\"}",
        "{\"dialect\":\"temporal\",\"backoff_coefficient\":0.5}",
        "{\"dialect\":\"temporal\",\"maximum_interval\":\"1s\",\"initial_interval\":\"1m\"}",
        "{\"dialect\":\"temporal\",\"initial_interval\":1e308}",
        "{\"dialect\":\"temporal\",\"initial_interval\":\"9999999999999999999d\"}",
        "{\"dialect\":\"temporal\",\"maximum_attempts\":1e308}",
        "{\"dialect\":\"temporal\",\"non_retryable_error_types\":\"E\"}",
        "{\"dialect\":\"tasker\",\"max_attempts\":\"3\"}", "{\"unknown_key\":1}",
        "{\"initial_interval\":\"1s\",\"max_attempts\":3}"};
    for (size_t i = 0; i < sizeof bad_policy / sizeof *bad_policy; i++)
        bad_push("retry_policy", bad_policy[i]);

    /* PUSH of every existing jid (any state), also as a valid job; PUSHB of
     * all of them, and of one twice. */
    const char *existing[] = {JID_ENQ, JID_SCH, JID_WRK, JID_RET, JID_DED};
    char batch[2048] = "[";
    for (int i = 0; i < 5; i++) {
        char *j = job_with(existing[i], NULL, NULL);
        char want[64];
        snprintf(want, sizeof want, "-ERR job %s already exists", existing[i]);
        add(want, EXACT, "PUSH %s", j);
        snprintf(batch + strlen(batch), sizeof batch - strlen(batch), "%s%s,%s", i ? "," : "", j, j);
        free(j);
    }
    strcat(batch, "]");
    add("{\"", 0, "PUSHB %s", batch);
    add("{}", EXACT, "PUSHB []");

    /* ACK: malformed jids are errors; unknown and never-reserved jobs get
     * Faktory's +OK and change nothing. */
    /* (An empty jid, {"jid":""}, is left out: the server answers it twice;
     * see fuzz/pending/test_empty_jid.c.) */
    const char *jid_forms[] = {"{}", "{\"jid\":\"\"}", "{\"jid\":1}", "{\"jid\":null}",
                               "{\"jid\":[\"" JID_WRK "\"]}", "{\"jid\":{}}"};
    const char *jid_verbs[] = {"ACK", "FAIL", "SNOOZE", "EXTEND", "JOB", "WORKFLOW"};
    for (size_t v = 0; v < sizeof jid_verbs / sizeof *jid_verbs; v++)
        for (size_t i = 0; i < sizeof jid_forms / sizeof *jid_forms; i++)
            add("-ERR", 0, "%s %s", jid_verbs[v], jid_forms[i]);
    add("+OK", EXACT, "ACK {\"jid\":\"no-such-job-1\"}");
    add("+OK", EXACT, "ACK {\"jid\":\"" JID_ENQ "\"}");
    add("+OK", EXACT, "ACK {\"jid\":\"" JID_SCH "\"}");
    add("+OK", EXACT, "ACK {\"jid\":\"" JID_RET "\"}");
    add("+OK", EXACT, "ACK {\"jid\":\"" JID_DED "\"}");
    add("$-1", EXACT, "JOB {\"jid\":\"no-such-job-1\"}");
    add("$-1", EXACT, "WORKFLOW {\"jid\":\"no-such-job-1\"}");
    /* BATCHES (Rebound's batch reads): a bid of the wrong type or empty, a
     * state or page out of range; an unknown bid answers nil. */
    const char *batches_forms[] = {"{\"bid\":\"\"}", "{\"bid\":1}", "{\"bid\":null}",
                                   "{\"bid\":[\"b-1\"]}", "{\"bid\":{}}",
                                   "{\"state\":\"dead\"}", "{\"state\":null}",
                                   "{\"limit\":-1}", "{\"limit\":1001}", "{\"limit\":\"5\"}",
                                   "{\"offset\":-1}", "{\"offset\":1.5}"};
    for (size_t i = 0; i < sizeof batches_forms / sizeof *batches_forms; i++)
        add("-ERR", 0, "BATCHES %s", batches_forms[i]);
    add("$-1", EXACT, "BATCHES {\"bid\":\"b-nosuchbatch00\"}");
    /* TRACK (Faktory Enterprise's progress tracking): a missing or unknown
     * subcommand, GET without one jid, SET with garbage or bad fields. An
     * unknown jid answers Faktory's "unknown" record (both backends). */
    const char *track_forms[] = {"X", "GET", "GET a b", "SET", "SET {}", "SET []", "SET nope",
                                 "SET {\"jid\":\"\"}", "SET {\"jid\":1}",
                                 "SET {\"jid\":\"j\",\"percent\":\"5\"}",
                                 "SET {\"jid\":\"j\",\"desc\":[]}",
                                 "SET {\"jid\":\"j\",\"reserve_until\":5}",
                                 "SET {\"jid\":\"j\",\"reserve_until\":\"soon\"}",
                                 "SET \xff{}"};
    for (size_t i = 0; i < sizeof track_forms / sizeof *track_forms; i++)
        add("-ERR", 0, "TRACK %s", track_forms[i]);
    add("{\"jid\":\"no-such-job-1\",\"state\":\"unknown\",\"updated_at\":\"\"}", EXACT,
        "TRACK GET no-such-job-1");
    add("+OK", EXACT, "TRACK SET {\"jid\":\"no-such-job-1\",\"percent\":5}");
    /* GROUP and GROUPS (flow control's operator side): each refusal of
     * docs/protocol.md's table (the exact texts: test_server_group_cmds;
     * distributed mode refuses every GROUP for now, before reading it). */
    const char *group_forms[] = {
        "X", "SET", "SET eq", "SET eq g", "SET eq g [1]", "SET eq g nope",
        "SET eq g {\"concurrency\":-1}", "SET eq g {\"concurrency\":1.5}",
        "SET eq g {\"concurrency\":1000001}", "SET eq g {\"rate\":5}",
        "SET eq g {\"rate\":5,\"period\":\"1ms\"}", "SET eq g {\"burst\":\"1\"}",
        "SET eq g {\"concurency\":1}", "SET no-such-queue g {}", "PAUSE eq g",
        "PAUSE eq g soon", "PAUSE eq g -5", "PAUSE eq g 0",
        "PAUSE eq g 2020-01-01T00:00:00Z", "PAUSE eq g 99999999",
        "PAUSE no-such-queue g 60", "RESUME eq", "RESUME eq g x", "GET eq",
        "GET eq g h", "GET no-such-queue g", "SET eq g\x01 {}"};
    for (size_t i = 0; i < sizeof group_forms / sizeof *group_forms; i++)
        add("-ERR GROUP", 0, "GROUP %s", group_forms[i]);
    char long_reason[256];
    memset(long_reason, 'r', 201);
    long_reason[201] = '\0';
    add("-ERR GROUP", 0, "GROUP PAUSE eq g 60 %s", long_reason);
    const char *groups_forms[] = {"[]", "nope", "{\"state\":\"x\"}", "{\"limit\":0}",
                                  "{\"limit\":1001}", "{\"offset\":-1}", "{\"queue\":5}",
                                  "{\"queue\":\"a b\"}", "{\"x\":1}"};
    for (size_t i = 0; i < sizeof groups_forms / sizeof *groups_forms; i++)
        add("-ERR GROUPS", 0, "GROUPS %s", groups_forms[i]);

    /* FAIL: unknown or not working; bad fields on the working job. */
    add("-ERR Job not found no-such-job-1", EXACT, "FAIL {\"jid\":\"no-such-job-1\"}");
    const char *not_working[] = {JID_ENQ, JID_SCH, JID_RET, JID_DED};
    for (int i = 0; i < 4; i++) {
        add("-ERR Job not found", 0, "FAIL {\"jid\":\"%s\",\"errtype\":\"E\"}", not_working[i]);
        add("-ERR SNOOZE: job", 0, "SNOOZE {\"jid\":\"%s\",\"seconds\":5}", not_working[i]);
        add("-ERR EXTEND: job", 0, "EXTEND {\"jid\":\"%s\",\"reserve_for\":60}", not_working[i]);
    }
    const char *bad_fail[] = {
        "\"retryable\":\"no\"", "\"retryable\":0", "\"retryable\":[]", "\"retry_after\":{}",
        "\"retry_after\":[]", "\"retry_after\":true", "\"next_retry_delay\":\"5\"",
        "\"next_retry_delay\":1e13", "\"next_retry_delay\":1e308", "\"next_retry_delay\":true",
        "\"next_retry_delay\":{}", "\"next_retry_delay\":[1]"};
    for (size_t i = 0; i < sizeof bad_fail / sizeof *bad_fail; i++)
        add("-ERR FAIL: ", 0, "FAIL {\"jid\":\"" JID_WRK "\",\"errtype\":\"E\",%s}", bad_fail[i]);

    /* SNOOZE / EXTEND: bad numbers on the working job, unknown jobs. */
    const char *bad_secs[] = {NULL, "-1", "31536001", "\"5\"", "1.5", "1e308", "-1e308",
                              "9223372036854775807", "-9223372036854775808", "null", "[]"};
    const char *bad_res[] = {NULL, "0", "-1", "86401", "\"60\"", "60.5", "1e308",
                             "9223372036854775807", "-9223372036854775808", "false"};
    for (size_t i = 0; i < sizeof bad_secs / sizeof *bad_secs; i++) {
        if (bad_secs[i])
            add("-ERR SNOOZE: seconds", 0, "SNOOZE {\"jid\":\"" JID_WRK "\",\"seconds\":%s}", bad_secs[i]);
        else
            add("-ERR SNOOZE: seconds", 0, "SNOOZE {\"jid\":\"" JID_WRK "\"}");
    }
    for (size_t i = 0; i < sizeof bad_res / sizeof *bad_res; i++) {
        if (bad_res[i])
            add("-ERR EXTEND: reserve_for", 0, "EXTEND {\"jid\":\"" JID_WRK "\",\"reserve_for\":%s}", bad_res[i]);
        else
            add("-ERR EXTEND: reserve_for", 0, "EXTEND {\"jid\":\"" JID_WRK "\"}");
    }
    add("-ERR SNOOZE: job no-such-job-1 not found", EXACT,
        "SNOOZE {\"jid\":\"no-such-job-1\",\"seconds\":1}");
    add("-ERR EXTEND: job no-such-job-1 not found", EXACT,
        "EXTEND {\"jid\":\"no-such-job-1\",\"reserve_for\":60}");

    /* MUTATE: bad cmd, target, filter. */
    const char *bad_mutate[] = {
        "{}", "{\"cmd\":\"explode\",\"target\":\"dead\"}", "{\"cmd\":1,\"target\":\"dead\"}",
        "{\"cmd\":\"kill\"}", "{\"cmd\":\"kill\",\"target\":\"working\"}",
        "{\"cmd\":\"kill\",\"target\":\"enqueued\"}", "{\"cmd\":\"kill\",\"target\":1}",
        "{\"cmd\":\"KILL\",\"target\":\"dead\"}", "{\"cmd\":\"clear\",\"target\":\"Dead\"}",
        "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":\"x\"}",
        "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":[]}",
        "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"regexp\":1}}",
        "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"jids\":\"" JID_RET "\"}}",
        "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"jobtype\":[]}}",
        "{\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":7}"};
    for (size_t i = 0; i < sizeof bad_mutate / sizeof *bad_mutate; i++)
        add("-ERR MUTATE: ", 0, "MUTATE %s", bad_mutate[i]);

    /* QUEUE: bad subcommands, no names, too many names. */
    const char *bad_queue_cmd[] = {"x", "PAUSED q", "\xff q", "{} q"};
    for (size_t i = 0; i < sizeof bad_queue_cmd / sizeof *bad_queue_cmd; i++)
        add("-ERR no such QUEUE subcommand: ", 0, "QUEUE %s", bad_queue_cmd[i]); /* Faktory's */
    const char *no_queue_names[] = {"PAUSE", "RESUME", "REMOVE", "LATENCY", "pause   ", "REMOVE\t"};
    for (size_t i = 0; i < sizeof no_queue_names / sizeof *no_queue_names; i++)
        add("-ERR QUEUE ", 0, "QUEUE %s", no_queue_names[i]);
    char many[1200] = "REMOVE";
    for (int i = 0; i < 257; i++)
        strcat(many, i % 2 ? " eq" : " sq");
    add("-ERR QUEUE: at most 256 queue names", EXACT, "QUEUE %s", many);

    /* JOBS: bad state, offset, limit. */
    const char *bad_jobs[] = {
        "{}", "{\"state\":1}", "{\"state\":\"busy\"}", "{\"state\":\"pending\"}",
        "{\"state\":\"dead\",\"offset\":-1}", "{\"state\":\"dead\",\"limit\":-1}",
        "{\"state\":\"dead\",\"limit\":10001}", "{\"state\":\"dead\",\"offset\":\"1\"}",
        "{\"state\":\"dead\",\"limit\":1e308}", "{\"state\":\"dead\",\"limit\":2.5}",
        "{\"state\":\"dead\",\"offset\":-9223372036854775808}",
        "{\"state\":\"dead\",\"limit\":9223372036854775807}"};
    for (size_t i = 0; i < sizeof bad_jobs / sizeof *bad_jobs; i++)
        add("-ERR JOBS: ", 0, "JOBS %s", bad_jobs[i]);

    /* WORKERS, BEAT, a second HELLO. */
    const char *bad_workers[] = {"{}", "{\"cmd\":\"stop\"}", "{\"cmd\":1}",
                                 "{\"cmd\":\"quiet\",\"wid\":\"nobody\"}"};
    for (size_t i = 0; i < sizeof bad_workers / sizeof *bad_workers; i++)
        add("-ERR WORKERS: ", 0, "WORKERS %s", bad_workers[i]);
    const char *bad_beat[] = {"{}", "{\"wid\":1}", "{\"wid\":\"\"}", "{\"wid\":null}"};
    for (size_t i = 0; i < sizeof bad_beat / sizeof *bad_beat; i++)
        add("-ERR BEAT: ", 0, "BEAT %s", bad_beat[i]);
    add("-ERR unknown worker nobody", 0, "BEAT %s", "{\"wid\":\"nobody\"}"); /* Faktory's words */
    add("-ERR HELLO: already identified", EXACT, "HELLO {\"v\":2}");
    add("-ERR HELLO: already identified", EXACT, "HELLO garbage");

    /* NUL bytes inside a line: the whole line is refused, nothing runs. */
    const char *nul_lines[][2] = {{"FLUSH", ""}, {"FLUSH", "x"}, {"PUSH {\"jid\":\"x", "\"}"},
                                  {"", "FLUSH"}, {"MUTATE {\"cmd\":\"clear\",\"target\":\"dead\"}", ""},
                                  {"ACK {\"jid\":\"" JID_WRK "\"}", ""},
                                  {"QUEUE REMOVE eq", " sq"}};
    for (size_t i = 0; i < sizeof nul_lines / sizeof *nul_lines; i++) {
        char buf[256];
        size_t a = strlen(nul_lines[i][0]), b = strlen(nul_lines[i][1]);
        memcpy(buf, nul_lines[i][0], a);
        buf[a] = '\0';
        memcpy(buf + a + 1, nul_lines[i][1], b);
        add_bytes(buf, a + 1 + b, "-ERR command line contains a NUL byte", EXACT);
    }

    /* Lines over server.max_job_bytes: refused, then the connection closes. */
    char *big = malloc(MAX_LINE + 64);
    memset(big, 'a', MAX_LINE + 64);
    memcpy(big, "FLUSH ", 6);
    add_bytes(big, MAX_LINE + 1, "-ERR command line longer than", CLOSES);
    char *j = job_with("huge-job-0001", "args", NULL);
    size_t jl = strlen(j);
    memcpy(big, "PUSH ", 5);
    memcpy(big + 5, j, jl - 1);
    memcpy(big + 5 + jl - 1, ",\"x\":\"", 6);
    memset(big + 5 + jl + 5, 'x', MAX_LINE + 64 - (5 + jl + 5));
    add_bytes(big, MAX_LINE + 50, "-ERR command line longer than", CLOSES);
    free(j);
    free(big);

    /* Before HELLO: anything else, or a bad HELLO, is refused and closes. */
    add("-ERR expected HELLO", RAW | CLOSES, "PUSH %s", "{\"jid\":\"prehello-0001\",\"jobtype\":\"t\",\"args\":[]}");
    add("-ERR expected HELLO", RAW | CLOSES, "FLUSH");
    add("-ERR expected HELLO", RAW | CLOSES, "%s", "");
    add("-ERR expected HELLO", RAW | CLOSES, "hello {\"v\":2}");
    add("-ERR HELLO requires an argument", RAW | EXACT, "HELLO"); /* may try again */
    add("-ERR HELLO", RAW | CLOSES, "HELLO garbage");
    add("-ERR HELLO", RAW | CLOSES, "HELLO []");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":3}");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":\"2\"}");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":0}");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":9223372036854775807}");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":1e308}");
    add("-ERR HELLO", RAW | CLOSES, "HELLO {\"v\":2,\"wid\":\"\xff\"}");
}

/* True when the server closes c within 5 s (reads EOF, not a timeout). */
static bool closed_by_server(rbh_conn *c)
{
    int64_t deadline = rbh_now_ms() + 5000;
    char buf[4096];
    for (;;) {
        int left = (int)(deadline - rbh_now_ms());
        struct pollfd p = {c->fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return false;
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r <= 0)
            return true; /* EOF, or a reset */
    }
}

/* Sends one case and checks its reply; returns the connection to use next
 * (reconnected when the case closed it). */
static void run_case(const bad_case *b, size_t idx)
{
    rbh_conn *c = C;
    last_line = b->line;
    if (b->flags & RAW) {
        c = rbh_connect_raw(&S);
        cr_assert_not_null(c, "case %zu: cannot connect", idx);
    }
    char *wire = malloc(b->len + 2);
    memcpy(wire, b->line, b->len);
    memcpy(wire + b->len, "\r\n", 2);
    cr_assert_eq(rbh_send(c, wire, b->len + 2), 0, "case %zu: send failed", idx);
    free(wire);
    char *r = rbh_reply(c);
    cr_assert_not_null(r, "case %zu ('%.100s'): no reply, connection lost", idx, b->line);
    bool ok = (b->flags & EXACT) ? !strcmp(r, b->want) : !strncmp(r, b->want, strlen(b->want));
    cr_assert(ok, "case %zu ('%.200s'): expected %s'%s', got '%.300s'", idx, b->line,
              (b->flags & EXACT) ? "" : "a reply starting ", b->want, r);
    free(r);
    if (b->flags & CLOSES) {
        cr_assert(closed_by_server(c), "case %zu: the connection stayed open", idx);
        rbh_close(c);
        if (!(b->flags & RAW)) {
            C = rbh_connect(&S, NULL);
            cr_assert_not_null(C, "case %zu: cannot reconnect", idx);
        }
    } else if (b->flags & RAW) {
        rbh_close(c);
    }
}

Test(badinput, every_malformed_command_is_refused_and_changes_nothing)
{
    build_table();
    cr_assert_gt(n_cases, 300, "the table has %zu cases", n_cases);
    char *before = snapshot(C);
    for (size_t i = 0; i < n_cases; i++) {
        run_case(&cases[i], i);
        char *after = snapshot(C);
        cr_assert_str_eq(after, before, "case %zu ('%.200s') changed the server's state",
                         i, cases[i].line);
        free(after);
        free(cases[i].line);
        free(cases[i].want);
    }
    free(before);
    /* Still serving: the working job can be acknowledged by its holder. */
    cr_assert(rbh_expect(HOLDER, "+OK", "ACK {\"jid\":\"" JID_WRK "\"}"));
    char *st = rbh_job_state(C, JID_WRK);
    cr_assert_null(st, "the acknowledged job is still there (%s)", st);
    printf("badinput: %zu malformed commands refused, state unchanged\n", n_cases);
    finish();
}

/* Pipelined: several bad lines in one write each get their own reply, in
 * order, and the good line after them still runs. */
Test(badinput, pipelined_bad_lines_each_get_a_reply)
{
    char *before = snapshot(C);
    static const char wire[] = "FLUSH now\r\nPUSH {\r\nINFO x\r\nBOGUS\r\n\r\nJOB {}\r\n"
                               "PUSH {\"jid\":\"" JID_ENQ "\",\"jobtype\":\"t\",\"args\":[]}\r\n"
                               "JOB {\"jid\":\"" JID_ENQ "\"}\r\n";
    cr_assert_eq(rbh_send(C, wire, sizeof wire - 1), 0);
    const char *want[] = {"-ERR FLUSH takes no argument", "-ERR PUSH: invalid JSON",
                          "-ERR INFO takes no argument", "-ERR unknown command BOGUS",
                          "-ERR empty command", "-ERR JOB: jid must be a non-empty string",
                          "-ERR job " JID_ENQ " already exists"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char *r = rbh_reply(C);
        cr_assert(r && !strncmp(r, want[i], strlen(want[i])), "reply %zu: '%s', expected '%s'",
                  i, r ? r : "(closed)", want[i]);
        free(r);
    }
    json_t *job = rbh_json(rbh_reply(C));
    cr_assert_str_eq(json_string_value(rbh_get(job, "state")), "enqueued");
    json_decref(job);
    char *after = snapshot(C);
    cr_assert_str_eq(after, before);
    free(after);
    free(before);
    finish();
}

/* custom.group's refusals say the rule and quote the value, for PUSH and
 * in PUSHB's per-job map (the other jobs of the batch pushed). */
Test(badinput, custom_group_errors_name_the_rule)
{
    cr_assert(rbh_expect(C, "-ERR job grp-bad-00001: custom.group must be a string (a tenant, "
                            "an account), got number",
                         "PUSH {\"jid\":\"grp-bad-00001\",\"jobtype\":\"t\",\"args\":[],"
                         "\"custom\":{\"group\":7}}"));
    cr_assert(rbh_expect(C, "-ERR job grp-bad-00001: custom.group must be 1 to 200 bytes without "
                            "spaces or control characters, got 'Acme Inc'",
                         "PUSH {\"jid\":\"grp-bad-00001\",\"jobtype\":\"t\",\"args\":[],"
                         "\"custom\":{\"group\":\"Acme Inc\"}}"));
    cr_assert(rbh_expect(C, "-ERR job grp-bad-00001: custom.debounce.for must be a number of "
                            "seconds from 0.001 to 604800, got -1",
                         "PUSH {\"jid\":\"grp-bad-00001\",\"jobtype\":\"t\",\"args\":[],"
                         "\"custom\":{\"debounce\":{\"key\":\"k\",\"for\":-1}}}"));
    json_t *errors = rbh_json(rbh_cmd(
        C, "PUSHB [{\"jid\":\"grp-bad-00002\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"grpq\","
           "\"custom\":{\"group\":\"\"}},{\"jid\":\"grp-ok-000003\",\"jobtype\":\"t\","
           "\"args\":[],\"queue\":\"grpq\"}]"));
    cr_assert(json_is_object(errors), "PUSHB did not answer its errors");
    cr_assert_eq(json_object_size(errors), 1);
    cr_assert_str_eq(json_string_value(json_object_get(errors, "grp-bad-00002")),
                     "job grp-bad-00002: custom.group must be 1 to 200 bytes without spaces or "
                     "control characters, got ''");
    json_decref(errors);
    char *st = rbh_job_state(C, "grp-bad-00002");
    cr_assert_null(st, "the refused job was stored (%s)", st);
    st = rbh_job_state(C, "grp-ok-000003");
    cr_assert_str_eq(st, "enqueued");
    free(st);
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE grpq"));
    finish();
}

/* A batch that names one new jid twice: the first copy is pushed, the second
 * is refused by jid, and nothing else changes. */
Test(badinput, pushb_duplicate_jid_within_a_batch)
{
    char *before = snapshot(C);
    char *r = rbh_cmd(C, "PUSHB [{\"jid\":\"dup-jid-00001\",\"jobtype\":\"first\",\"args\":[1],"
                         "\"queue\":\"dupq\"},"
                         "{\"jid\":\"dup-jid-00001\",\"jobtype\":\"second\",\"args\":[2],"
                         "\"queue\":\"dupq\"}]");
    json_t *errors = rbh_json(r);
    cr_assert(json_is_object(errors), "PUSHB did not answer its errors");
    cr_assert_eq(json_object_size(errors), 1);
    cr_assert_str_eq(json_string_value(json_object_get(errors, "dup-jid-00001")),
                     "job dup-jid-00001 already exists");
    json_decref(errors);
    json_t *job = rbh_json(rbh_cmd(C, "JOB {\"jid\":\"dup-jid-00001\"}"));
    cr_assert_str_eq(json_string_value(rbh_get(job, "job.jobtype")), "first");
    cr_assert_eq(json_integer_value(rbh_get(job, "job.args.0")), 1);
    json_decref(job);
    json_t *listing = rbh_json(rbh_cmd(C, "JOBS {\"state\":\"enqueued\",\"queue\":\"dupq\"}"));
    cr_assert_eq(json_integer_value(json_object_get(listing, "total")), 1);
    json_decref(listing);
    /* Removing it brings back exactly the state before. */
    cr_assert(rbh_expect(C, "+OK", "QUEUE REMOVE dupq"));
    char *after = snapshot(C);
    cr_assert_str_eq(after, before);
    free(after);
    free(before);
    finish();
}
