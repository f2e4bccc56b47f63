/* The export format's rules (engine/export.c) over an in-memory port: the
 * lines written, every check of a line (with its line number), and the
 * import's decisions (identical, conflict, not carried, counters), the
 * dependency, succeeded-record and batch lines and a partial graph. The
 * backends' ports are tested through the binary (tests/server/test_export.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/batch.h"
#include "engine/export.h"
#include "engine/job_state.h"

/* A port holding jobs in an array. */
typedef struct mem_port {
    rb_port base;
    rb_job_view jobs[16];
    size_t n;
    int64_t processed, failures;
    int writes;
    char *paused[4];
    size_t n_paused;
    rb_port_graph g;
} mem_port;

static int mp_graph(rb_port *b, rb_port_graph *g, rb_err *err)
{
    (void)err;
    memset(g, 0, sizeof *g);
    rb_port_graph_append(g, &((mem_port *)b)->g);
    return 0;
}

static int mp_each(rb_port *b, rb_port_job_fn fn, void *arg, rb_err *err)
{
    (void)err;
    mem_port *p = (mem_port *)b;
    for (size_t i = 0; i < p->n; i++) {
        int rc = fn(arg, &p->jobs[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int mp_counters(rb_port *b, int64_t *pr, int64_t *fa, rb_err *err)
{
    (void)err;
    mem_port *p = (mem_port *)b;
    *pr = p->processed;
    *fa = p->failures;
    return 0;
}

static int mp_paused(rb_port *b, char ***names, size_t *n, rb_err *err)
{
    (void)err;
    mem_port *p = (mem_port *)b;
    *names = p->n_paused ? calloc(p->n_paused, sizeof **names) : NULL;
    for (size_t i = 0; i < p->n_paused; i++)
        (*names)[i] = strdup(p->paused[i]);
    *n = p->n_paused;
    return 0;
}

static char *dup0(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void copy_view(rb_job_view *d, const rb_job_view *s)
{
    *d = *s;
    d->jid = dup0(s->jid);
    d->queue = dup0(s->queue);
    d->json = dup0(s->json);
    d->history = dup0(s->history);
    d->wid = dup0(s->wid);
    d->waits_for = d->blocked_by = NULL;
}

static int mp_find(rb_port *b, const char *jid, rb_job_view *out, bool *found, rb_err *err)
{
    (void)err;
    mem_port *p = (mem_port *)b;
    *found = false;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->jobs[i].jid, jid)) {
            copy_view(out, &p->jobs[i]);
            *found = true;
        }
    return 0;
}

static int mp_write(rb_port *b, const rb_job_view *jobs, size_t n, const char *const *pause,
                    size_t n_pause, bool set_counters, int64_t processed, int64_t failures,
                    const rb_port_graph *g, rb_err *err)
{
    (void)err;
    mem_port *p = (mem_port *)b;
    p->writes++;
    rb_port_graph_append(&p->g, g);
    for (size_t i = 0; i < n_pause; i++)
        p->paused[p->n_paused++] = strdup(pause[i]);
    for (size_t i = 0; i < n; i++)
        copy_view(&p->jobs[p->n++], &jobs[i]);
    if (set_counters) {
        p->processed = processed;
        p->failures = failures;
    }
    return 0;
}

static void mp_close(rb_port *b)
{
    mem_port *p = (mem_port *)b;
    for (size_t i = 0; i < p->n; i++)
        rb_job_view_release(&p->jobs[i]);
    for (size_t i = 0; i < p->n_paused; i++)
        free(p->paused[i]);
    rb_port_graph_release(&p->g);
}

static const rb_port_ops mp_ops = {"memory", mp_each, mp_counters, mp_paused, mp_find, mp_write,
                                   mp_graph, mp_close};

/* A batch's stored form (caller frees). */
static char *batch_text(const char *bid, bool committed)
{
    json_t *cb = json_pack("{s:s, s:[]}", "jobtype", "done", "args");
    rb_batch_def def = {.description = "d", .cb = {[RB_BATCH_SUCCESS] = cb}};
    rb_batch *b = rb_batch_new(bid, &def, 1000000);
    b->committed = committed;
    char *text = rb_batch_dump(b);
    rb_batch_free(b);
    json_decref(cb);
    return text;
}

static void add(mem_port *p, const char *jid, int state, int attempts, const char *custom)
{
    char json[256];
    snprintf(json, sizeof json, "{\"jid\":\"%s\",\"jobtype\":\"t\",\"args\":[1]%s%s}", jid,
             custom ? ",\"custom\":" : "", custom ? custom : "");
    rb_job_view v = {.jid = (char *)jid, .queue = (char *)"default", .json = json,
                     .history = attempts ? (char *)"[{\"errtype\":\"E\"}]" : NULL,
                     .wid = state == RB_JOB_WORKING ? (char *)"w1" : NULL, .state = state,
                     .priority = 5, .attempts = attempts, .reserve_s = 1800,
                     .due_ms = 1000 + state, .first_ms = 500};
    copy_view(&p->jobs[p->n++], &v);
}

/* Exports p into a string (caller frees). */
static char *export_text(mem_port *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rb_export_stats st;
    rb_err err = {0};
    cr_assert_eq(rb_export_run(&p->base, f, &st, &err), 0, "%s", err.msg);
    fclose(f);
    return buf;
}

static int import_text(mem_port *p, const char *text, rb_import_report *rep, rb_err *err)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    int rc = rb_import_run(&p->base, f, "f.jsonl", rep, err);
    fclose(f);
    return rc;
}

static void source(mem_port *p)
{
    *p = (mem_port){.base = {&mp_ops}, .processed = 4, .failures = 3};
    add(p, "j-scheduled", RB_JOB_SCHEDULED, 0, NULL);
    add(p, "j-working", RB_JOB_WORKING, 1, NULL);
    add(p, "j-retries", RB_JOB_RETRIES, 2, NULL);
    add(p, "j-dead", RB_JOB_DEAD, 3, NULL);
    add(p, "j-waiting", RB_JOB_WAITING, 0, "{\"depends_on\":[\"j-scheduled\",\"j-old\"]}");
    add(p, "j-member", RB_JOB_ENQUEUED, 0, "{\"bid\":\"b1\"}");
    add(p, "j-unique", RB_JOB_ENQUEUED, 0, "{\"unique_for\":60}");
    p->paused[p->n_paused++] = strdup("slow");
    const char *parents[] = {"j-scheduled"};
    rb_port_graph_add_dep(&p->g, "j-waiting", parents, 1, 0, 1, 0);
    rb_port_graph_add_done(&p->g, "j-old", 5000);
    char *b1 = batch_text("b1", true);
    cr_assert(rb_port_graph_add_batch(&p->g, b1));
    free(b1);
}

Test(export, round_trip_then_identical)
{
    mem_port a, b = {.base = {&mp_ops}};
    source(&a);
    char *text = export_text(&a);
    cr_assert(strstr(text, "{\"format\":\"rebound-export\",\"version\":1,\"source\":\"memory\","));
    cr_assert(strstr(text, "\"jid\":\"j-working\",\"state\":\"working\""));
    cr_assert(strstr(text, "\"wid\":\"w1\",\"history\":[{\"errtype\":\"E\"}]"));
    cr_assert(strstr(text, "{\"type\":\"dep\",\"child\":\"j-waiting\",\"mode\":\"block\","
                           "\"parents\":[\"j-scheduled\"],\"remaining\":1,\"dead\":0}\n"
                           "{\"type\":\"done\",\"jid\":\"j-old\",\"until_ms\":5000}\n"
                           "{\"type\":\"batch\",\"bid\":\"b1\",\"batch\":{"));
    cr_assert(strstr(text, "{\"type\":\"queue\",\"name\":\"slow\",\"paused\":true}\n"
                           "{\"type\":\"counters\",\"processed\":4,\"failures\":3}\n"
                           "{\"type\":\"end\",\"jobs\":7}\n"));
    rb_import_report rep;
    rb_err err = {0};
    cr_assert_eq(import_text(&b, text, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.jobs, 7);
    cr_assert_eq(rep.imported, 7);
    cr_assert_eq(rep.by_state[RB_JOB_ENQUEUED], 2);
    cr_assert_eq(rep.by_state[RB_JOB_WAITING], 1);
    cr_assert_eq(rep.not_carried, 0);
    cr_assert_eq(rep.unique_dropped, 1);
    cr_assert_eq(rep.counters, 1);
    cr_assert(rep.deps == 1 && rep.done == 1 && rep.batches == 1);
    cr_assert(b.g.n_deps == 1 && !strcmp(b.g.deps[0].child, "j-waiting") &&
              b.g.deps[0].n == 1 && !strcmp(b.g.deps[0].parents[0], "j-scheduled") &&
              b.g.deps[0].remaining == 1);
    cr_assert(b.g.n_done == 1 && b.g.done[0].until_ms == 5000);
    cr_assert(b.g.n_batches == 1 && b.g.batches[0].committed &&
              !strcmp(b.g.batches[0].body, a.g.batches[0].body));
    cr_assert_eq(b.processed, 4);
    cr_assert_eq(rep.paused_set, 1);
    cr_assert_eq(b.n_paused, 1);
    cr_assert_str_eq(b.paused[0], "slow");
    rb_import_report_release(&rep);
    /* the jobs as written export as they were read */
    for (size_t i = 0; i < b.n; i++) {
        json_t *x = rb_export_job_json(&b.jobs[i]);
        int found = 0;
        for (size_t k = 0; k < a.n; k++)
            if (!strcmp(a.jobs[k].jid, b.jobs[i].jid)) {
                json_t *y = rb_export_job_json(&a.jobs[k]);
                cr_assert(json_equal(x, y), "%s", a.jobs[k].jid);
                json_decref(y);
                found = 1;
            }
        cr_assert(found);
        json_decref(x);
    }
    /* again: nothing written, everything skipped */
    int writes = b.writes;
    cr_assert_eq(import_text(&b, text, &rep, &err), 0);
    cr_assert_eq(rep.imported, 0);
    cr_assert_eq(rep.same, 7);
    cr_assert_eq(rep.graph_same, 2); /* the record and the batch; the dep compared with its job */
    cr_assert_eq(rep.conflicts, 0);
    cr_assert_eq(rep.counters, 0);
    cr_assert_eq(rep.paused_same, 1);
    cr_assert_eq(b.writes, writes, "a second import wrote");
    rb_import_report_release(&rep);
    free(text);
    mp_close(&a.base);
    mp_close(&b.base);
}

Test(export, conflicts_are_refused_and_named)
{
    mem_port a, b;
    source(&a);
    source(&b);
    rb_job_view_release(&b.jobs[2]);
    b.n--;
    b.jobs[2] = b.jobs[b.n]; /* j-retries goes, j-unique takes its place */
    add(&b, "j-retries", RB_JOB_DEAD, 5, NULL); /* the same jid, other content */
    b.processed = 9;
    char *text = export_text(&a);
    rb_import_report rep;
    rb_err err = {0};
    cr_assert_eq(import_text(&b, text, &rep, &err), 0);
    cr_assert_eq(rep.conflicts, 1);
    cr_assert_eq(rep.counters, -1);
    cr_assert_eq(rep.imported, 0);
    cr_assert_str_eq(rb_buf_str(&rep.conflict_text),
                     "jid j-retries: state: stored dead, file retries; attempts: stored 5, file 2;"
                     " due_ms: stored 1005, file 1004\n"
                     "counters: processed: stored 9, file 4; failures: stored 3, file 3\n");
    cr_assert_eq(b.processed, 9, "the counters changed");
    rb_import_report_release(&rep);
    free(text);
    mp_close(&a.base);
    mp_close(&b.base);
}

/* Each bad file: refused with its line named, nothing written. */
Test(export, bad_lines_name_their_line)
{
    static const char H[] = "{\"format\":\"rebound-export\",\"version\":1}\n";
    static const char C[] = "{\"type\":\"counters\",\"processed\":0,\"failures\":0}\n";
#define JOB(extra) "{\"type\":\"job\",\"jid\":\"j1\",\"state\":\"scheduled\",\"queue\":\"q\"," \
    "\"priority\":5,\"due_ms\":1,\"first_ms\":0,\"attempts\":0,\"reserve_for\":1,\"wid\":null," \
    "\"history\":null,\"job\":{\"jid\":\"j1\"}" extra "}\n"
    static const char E1[] = "{\"type\":\"end\",\"jobs\":1}\n";
    struct {
        const char *a, *b, *c, *d, *want;
    } cases[] = {
        {"", "", "", "", "f.jsonl: empty file, not a rebound export"},
        {"[1]\n", "", "", "", "f.jsonl:1: not a JSON object"},
        {"{\"format\":\"other\"}\n", "", "", "", "f.jsonl:1: not a rebound export"},
        {"{\"format\":\"rebound-export\",\"version\":2}\n", "", "", "",
         "f.jsonl:1: export format version 2 is not supported (this rebound reads version 1)"},
        {H, "\n", "", "", "f.jsonl:2: empty line"},
        {H, "{\"type\":\"job\"\n", "", "", "f.jsonl:2: not JSON: "},
        {H, JOB(",\"x\":1"), C, E1, "f.jsonl:2: unknown field 'x'"},
        {H, JOB(""), JOB(""), C, "f.jsonl:3: jid 'j1' appears twice (first on line 2)"},
        {H, "{\"type\":\"queues\"}\n", "", "", "f.jsonl:2: unknown line type 'queues'"},
        {H, "{\"type\":\"queue\",\"name\":\"q\",\"paused\":1}\n", C, E1,
         "f.jsonl:2: field 'paused' must be true or false"},
        {H, "{\"type\":\"queue\",\"paused\":true}\n", C, E1,
         "f.jsonl:2: field 'name' is missing"},
        {H, C, JOB(""), E1, "f.jsonl:3: a job line after the counters line"},
        {H, JOB(""), C, "{\"type\":\"end\",\"jobs\":2}\n",
         "f.jsonl:4: the end line counts 2 jobs, the file has 1"},
        {H, C, "{\"type\":\"end\",\"jobs\":0}\n", C, "f.jsonl:4: a line after the end line"},
        {H, JOB(""), C, "", "f.jsonl:3: the file ends without its end line (truncated?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s%s%s", cases[i].a, cases[i].b, cases[i].c, cases[i].d);
        mem_port p = {.base = {&mp_ops}};
        rb_import_report rep;
        rb_err err = {0};
        int rc = import_text(&p, text, &rep, &err);
        cr_assert(rc == RB_EINVAL || rc == RB_EVERSION, "case %zu: rc %d", i, rc);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s'", i, err.msg);
        cr_assert_eq(p.writes, 0, "case %zu wrote", i);
        rb_import_report_release(&rep);
    }
    /* the job line's own checks */
    static const struct {
        const char *line, *want;
    } fields[] = {
        {"\"jid\":\"\"", "field 'jid' must be a non-empty string"},
        {"\"state\":\"pending\"", "field 'state' is 'pending', not scheduled"},
        {"\"priority\":10", "field 'priority' is 10, not from 1 to 9"},
        {"\"attempts\":-1", "field 'attempts' is -1, not from 0"},
        {"\"reserve_for\":\"1\"", "field 'reserve_for' must be an integer"},
        {"\"wid\":3", "field 'wid' must be a non-empty string or null"},
        {"\"history\":{}", "field 'history' must be an array or null"},
        {"\"job\":[]", "field 'job' must be an object"},
        {"\"job\":{\"jid\":\"other\"}", "the job's own jid is not 'j1'"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        /* the field replaced: later keys win in jansson, so append it */
        char text[2048];
        snprintf(text, sizeof text, "%s{\"type\":\"job\",\"jid\":\"j1\",\"state\":\"scheduled\","
                 "\"queue\":\"q\",\"priority\":5,\"due_ms\":1,\"first_ms\":0,\"attempts\":0,"
                 "\"reserve_for\":1,\"wid\":null,\"history\":null,\"job\":{\"jid\":\"j1\"},%s}\n%s%s",
                 H, fields[i].line, C, E1);
        mem_port p = {.base = {&mp_ops}};
        rb_import_report rep;
        rb_err err = {0};
        cr_assert_eq(import_text(&p, text, &rep, &err), RB_EINVAL, "field %zu", i);
        cr_assert(strstr(err.msg, "f.jsonl:2: ") && strstr(err.msg, fields[i].want),
                  "field %zu: '%s'", i, err.msg);
        cr_assert_eq(p.writes, 0);
        rb_import_report_release(&rep);
    }
}

static const char HDR[] = "{\"format\":\"rebound-export\",\"version\":1}\n";
static const char CNT[] = "{\"type\":\"counters\",\"processed\":0,\"failures\":0}\n";
#define HELD(jid, state) "{\"type\":\"job\",\"jid\":\"" jid "\",\"state\":\"" state "\"," \
    "\"queue\":\"q\",\"priority\":5,\"due_ms\":1,\"first_ms\":0,\"attempts\":0,\"reserve_for\":1," \
    "\"wid\":null,\"history\":null,\"job\":{\"jid\":\"" jid "\"}}\n"
#define DEP(child, parents) "{\"type\":\"dep\",\"child\":\"" child "\",\"mode\":\"block\"," \
    "\"parents\":" parents ",\"remaining\":1,\"dead\":0}\n"

/* The dependency, record and batch lines' checks: the line named, nothing
 * written. */
Test(export, bad_graph_lines_name_their_line)
{
    char *b1 = batch_text("b1", false);
    char good_batch[2048], other_bid[2048];
    snprintf(good_batch, sizeof good_batch, "{\"type\":\"batch\",\"bid\":\"b1\",\"batch\":%s}\n",
             b1);
    snprintf(other_bid, sizeof other_bid, "{\"type\":\"batch\",\"bid\":\"b2\",\"batch\":%s}\n",
             b1);
    free(b1);
    static const char E1[] = "{\"type\":\"end\",\"jobs\":1}\n";
    const struct {
        const char *job, *line, *line2, *want;
    } cases[] = {
        {HELD("c1", "waiting"), "{\"type\":\"dep\",\"child\":\"c1\",\"mode\":\"drop\","
                                "\"parents\":[\"p\"],\"remaining\":1,\"dead\":0}\n", "",
         "f.jsonl:3: field 'mode' is 'drop', not block, cancel or ignore"},
        {HELD("c1", "waiting"), "{\"type\":\"dep\",\"child\":\"c1\",\"mode\":\"block\","
                                "\"parents\":[\"p\"],\"remaining\":0,\"dead\":0}\n", "",
         "f.jsonl:3: field 'remaining' is 0, not from 1 to 1000"},
        {HELD("c1", "waiting"), "{\"type\":\"dep\",\"child\":\"c1\",\"mode\":\"block\","
                                "\"parents\":[\"p\",\"q\"],\"remaining\":1,\"dead\":2}\n", "",
         "f.jsonl:3: field 'dead' is 2, more than 'remaining' (1)"},
        {HELD("c1", "waiting"), DEP("c1", "\"p\""), "",
         "f.jsonl:3: field 'parents' must be an array of 'remaining' (1) to 1000 jids"},
        {HELD("c1", "waiting"), DEP("c1", "[]"), "",
         "f.jsonl:3: field 'parents' must be an array of 'remaining' (1) to 1000 jids"},
        {HELD("c1", "waiting"), DEP("c1", "[\"p\",7]"), "",
         "f.jsonl:3: field 'parents' must hold non-empty strings"},
        {HELD("c1", "waiting"), DEP("c1", "[\"c1\"]"), "",
         "f.jsonl:3: job 'c1' names itself as its parent"},
        {HELD("c1", "waiting"), DEP("c1", "[\"p\",\"p\"]"), "",
         "f.jsonl:3: parent 'p' appears twice"},
        {HELD("c1", "waiting"), DEP("c1", "[\"p\"]"), DEP("c1", "[\"q\"]"),
         "f.jsonl:4: a second dep line for 'c1'"},
        {HELD("c1", "waiting"), "{\"type\":\"dep\",\"child\":\"c1\",\"mode\":\"block\","
                                "\"parents\":[\"p\"],\"remaining\":1,\"dead\":0,\"x\":1}\n", "",
         "f.jsonl:3: unknown field 'x'"},
        {HELD("c1", "scheduled"), DEP("c1", "[\"p\"]"), "",
         "f.jsonl: the dep line of 'c1' has no waiting or blocked job line"},
        {HELD("c1", "waiting"), DEP("c9", "[\"p\"]"), "",
         "f.jsonl: the dep line of 'c9' has no waiting or blocked job line"},
        {HELD("c1", "waiting"), "{\"type\":\"done\",\"jid\":\"p\"}\n", "",
         "f.jsonl:3: field 'until_ms' is missing"},
        {HELD("c1", "waiting"), "{\"type\":\"done\",\"jid\":\"p\",\"until_ms\":1}\n",
         "{\"type\":\"done\",\"jid\":\"p\",\"until_ms\":2}\n",
         "f.jsonl:4: a second done line for 'p'"},
        {HELD("c1", "waiting"), "{\"type\":\"batch\",\"bid\":\"b1\",\"batch\":[]}\n", "",
         "f.jsonl:3: field 'batch' must be an object"},
        {HELD("c1", "waiting"), "{\"type\":\"batch\",\"bid\":\"b1\",\"batch\":{\"bid\":\"b1\"}}\n",
         "", "f.jsonl:3: field 'batch' is not a stored batch of this version"},
        {HELD("c1", "waiting"), other_bid, "", "f.jsonl:3: the batch's own bid is not 'b2'"},
        {HELD("c1", "waiting"), good_batch, good_batch, "f.jsonl:4: a second batch line for 'b1'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[8192];
        snprintf(text, sizeof text, "%s%s%s%s%s%s", HDR, cases[i].job, cases[i].line,
                 cases[i].line2, CNT, E1);
        mem_port p = {.base = {&mp_ops}};
        rb_import_report rep;
        rb_err err = {0};
        cr_assert_eq(import_text(&p, text, &rep, &err), RB_EINVAL, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s'", i, err.msg);
        cr_assert_eq(p.writes, 0, "case %zu wrote", i);
        rb_import_report_release(&rep);
        mp_close(&p.base);
    }
    /* after the counters line */
    char text[8192];
    snprintf(text, sizeof text, "%s%s%s%s%s", HDR, HELD("c1", "waiting"), CNT, DEP("c1", "[\"p\"]"),
             E1);
    mem_port p = {.base = {&mp_ops}};
    rb_import_report rep;
    rb_err err = {0};
    cr_assert_eq(import_text(&p, text, &rep, &err), RB_EINVAL);
    cr_assert(strstr(err.msg, "f.jsonl:4: a dep line after the counters line"), "'%s'", err.msg);
    rb_import_report_release(&rep);
    mp_close(&p.base);
}

/* A child whose parent is neither in the file nor stored is left out, and
 * so is its own child; one whose parent is stored is imported; a held job
 * without its dep line (an earlier release's file) is left out. */
Test(export, partial_graph_is_refused_safely)
{
    mem_port p = {.base = {&mp_ops}};
    add(&p, "p-stored", RB_JOB_ENQUEUED, 0, NULL);
    const char *text = "{\"format\":\"rebound-export\",\"version\":1}\n"
        HELD("c-lost", "waiting") HELD("c-grand", "waiting") HELD("c-ok", "blocked")
        HELD("c-old", "waiting")
        DEP("c-lost", "[\"p-gone\"]") DEP("c-grand", "[\"c-lost\"]")
        "{\"type\":\"dep\",\"child\":\"c-ok\",\"mode\":\"ignore\",\"parents\":[\"p-stored\"],"
        "\"remaining\":1,\"dead\":1}\n"
        "{\"type\":\"counters\",\"processed\":0,\"failures\":0}\n"
        "{\"type\":\"end\",\"jobs\":4}\n";
    rb_import_report rep;
    rb_err err = {0};
    cr_assert_eq(import_text(&p, text, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.imported, 1);
    cr_assert_eq(rep.by_state[RB_JOB_BLOCKED], 1);
    cr_assert_eq(rep.by_state[RB_JOB_WAITING], 0);
    cr_assert_eq(rep.not_carried, 3);
    const char *sk = rb_buf_str(&rep.skipped_text);
    cr_assert(strstr(sk, "jid c-lost: waits on p-gone, which is neither imported nor stored"
                         " here\n"), "%s", sk);
    cr_assert(strstr(sk, "jid c-grand: waits on c-lost, which is neither imported nor stored"
                         " here\n"), "%s", sk);
    cr_assert(strstr(sk, "jid c-old: waiting has no dep line"), "%s", sk);
    cr_assert_eq(p.n, 2);
    cr_assert_str_eq(p.jobs[1].jid, "c-ok");
    cr_assert(p.g.n_deps == 1 && !strcmp(p.g.deps[0].child, "c-ok") && p.g.deps[0].mode == 2 &&
              p.g.deps[0].dead == 1);
    rb_import_report_release(&rep);
    mp_close(&p.base);
}

/* A stored record, batch or edge set with other content: refused, named. */
Test(export, graph_conflicts_are_refused)
{
    mem_port a, b;
    source(&a);
    source(&b);
    b.g.done[0].until_ms = 7000;
    b.g.deps[0].remaining = 2;
    const char *two[] = {"j-scheduled", "j-dead"};
    rb_port_graph_release(&b.g);
    rb_port_graph_add_dep(&b.g, "j-waiting", two, 2, 1, 2, 1);
    rb_port_graph_add_done(&b.g, "j-old", 7000);
    char *b1 = batch_text("b1", false);
    rb_port_graph_add_batch(&b.g, b1);
    free(b1);
    char *text = export_text(&a);
    rb_import_report rep;
    rb_err err = {0};
    int writes = b.writes;
    cr_assert_eq(import_text(&b, text, &rep, &err), 0);
    cr_assert_eq(rep.conflicts, 3);
    cr_assert_eq(rep.same, 6);
    cr_assert_eq(b.writes, writes);
    cr_assert_str_eq(rb_buf_str(&rep.conflict_text),
                     "jid j-waiting: on_dep_failure: stored cancel, file block; parents differ;"
                     " remaining/dead: stored 2/1, file 1/0\n"
                     "succeeded record j-old: until_ms: stored 7000, file 5000\n"
                     "batch b1: stored with other counts or callbacks\n");
    cr_assert_eq(b.g.done[0].until_ms, 7000, "the record changed");
    rb_import_report_release(&rep);
    free(text);
    mp_close(&a.base);
    mp_close(&b.base);
}
