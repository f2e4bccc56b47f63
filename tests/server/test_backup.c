/* `rebound backup` and `rebound restore` against a real server: a copy
 * taken while several clients push, fetch and ack holds exactly what it
 * must (every job pushed before the backup started and not acked before
 * it ended, no job pushed after it ended, nothing half-written), restores
 * into a fresh directory where a server serves it; restore refuses a
 * running server's database, an existing one without --force, and files
 * that are not sound Rebound databases. In distributed mode
 * (test_pg_backup.c includes this file) BACKUP points at pg_dump. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include <sqlite3.h>

#include "harness.h"

/* Runs `rebound ARGS` against s (FAKTORY_URL) with output into out (a file
 * in s->dir); returns its exit status. */
static int run_cli(const rbh_server *s, const char *args, char *out, size_t n)
{
    char url[64], cmd[2048];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", s->port);
    setenv("FAKTORY_URL", url, 1);
    snprintf(out, n, "%s/cli.out", s->dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", rbh_bin(), args, out);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether the file at path contains text. */
static bool file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    bool yes = strstr(buf, text) != NULL;
    if (!yes)
        fprintf(stderr, "'%s' not in: %s\n", text, buf);
    return yes;
}

#ifndef RBH_PG

/* --- consistency under load --- */

#define THREADS 4
#define MAX_JOBS 100000

/* One job a loader pushed, with the sequence numbers of its events (0:
 * not done). A sequence number is taken from one counter shared by every
 * thread: a reply received before a number was taken was received before
 * whatever took a larger number. */
typedef struct tracked {
    char jid[32];
    long push_sent, push_ok;
    long fetch_sent, fetch_ok; /* the odd ones are fetched */
    long ack_sent, ack_ok;     /* and one of two of those acked */
} tracked;

static atomic_long seq = 1;
static atomic_bool stop_load;

typedef struct loader {
    const rbh_server *s;
    int id;
    tracked *jobs;
    size_t n;
} loader;

static long tick(void)
{
    return atomic_fetch_add(&seq, 1);
}

static void *load(void *arg)
{
    loader *l = arg;
    rbh_conn *c = rbh_connect(l->s, NULL);
    if (!c)
        return NULL;
    char wq[16], eq[16];
    snprintf(wq, sizeof wq, "w%d", l->id);
    snprintf(eq, sizeof eq, "e%d", l->id);
    while (!atomic_load(&stop_load) && l->n < MAX_JOBS) {
        tracked *t = &l->jobs[l->n];
        size_t i = l->n++;
        snprintf(t->jid, sizeof t->jid, "load-%d-%06zu", l->id, i);
        bool work = i % 2 == 1;
        t->push_sent = tick();
        char *r = rbh_cmd(c, "PUSH {\"jid\":\"%s\",\"jobtype\":\"L\",\"queue\":\"%s\",\"args\":[%zu]}",
                          t->jid, work ? wq : eq, i);
        bool ok = r && !strcmp(r, "+OK");
        free(r);
        if (!ok)
            break;
        t->push_ok = tick();
        if (!work)
            continue;
        t->fetch_sent = tick();
        r = rbh_cmd(c, "FETCH %s", wq);
        ok = r && strstr(r, t->jid);
        free(r);
        if (!ok)
            break;
        t->fetch_ok = tick();
        if (i % 4 != 1)
            continue;
        t->ack_sent = tick();
        r = rbh_cmd(c, "ACK {\"jid\":\"%s\"}", t->jid);
        ok = r && !strcmp(r, "+OK");
        free(r);
        if (!ok)
            break;
        t->ack_ok = tick();
    }
    rbh_close(c);
    return NULL;
}

/* The jobs of the database file at path: jid -> attempts, as a JSON
 * object (read directly, before any server opens it). */
static json_t *stored_jobs(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    json_t *out = json_object();
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT jid, attempts FROM jobs", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        json_object_set_new(out, (const char *)sqlite3_column_text(st, 0),
                            json_integer(sqlite3_column_int(st, 1)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

Test(backup, consistent_copy_under_load, .timeout = 300)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&s, NULL);
    cr_assert_not_null(c);
    /* a few megabytes first, so that the copy takes many steps */
    char pad[301];
    memset(pad, 'p', 300);
    pad[300] = '\0';
    for (int b = 0; b < 20; b++) {
        size_t cap = 1000 * 400 + 16, len = 0;
        char *line = malloc(cap);
        len += (size_t)snprintf(line + len, cap - len, "PUSHB [");
        for (int i = 0; i < 1000; i++)
            len += (size_t)snprintf(line + len, cap - len,
                                    "%s{\"jid\":\"pre-%02d-%04d\",\"jobtype\":\"P\",\"queue\":\"pre\","
                                    "\"args\":[\"%s\"]}", i ? "," : "", b, i, pad);
        snprintf(line + len, cap - len, "]");
        char *r = rbh_cmd(c, "%s", line);
        cr_assert(r && r[0] != '-', "PUSHB: %s", r ? r : "(closed)");
        free(r);
        free(line);
    }

    static loader loaders[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        loaders[t] = (loader){.s = &s, .id = t, .jobs = calloc(MAX_JOBS, sizeof(tracked))};
        cr_assert_eq(pthread_create(&th[t], NULL, load, &loaders[t]), 0);
    }
    /* the load is running: each loader has answers back */
    for (int t = 0; t < THREADS; t++)
        while (loaders[t].n < 50 && !atomic_load(&stop_load))
            rbh_sleep_ms(5);

    rbh_server r; /* the server of the copy, later; the copy goes into its directory */
    rbh_init(&r);
    char out[300], path[400], args[600];
    snprintf(path, sizeof path, "%s/copy.db", r.dir);
    snprintf(args, sizeof args, "backup '%s'", path);
    long begin = tick();
    int rc = run_cli(&s, args, out, sizeof out);
    long end = tick();
    /* some more load after it, then stop */
    long after = tick();
    for (int t = 0; t < THREADS; t++)
        while (loaders[t].n > 0 && loaders[t].jobs[loaders[t].n - 1].push_sent < after &&
               loaders[t].n < MAX_JOBS)
            rbh_sleep_ms(5);
    atomic_store(&stop_load, true);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    cr_assert_eq(rc, 0, "rebound backup failed");
    cr_assert(file_has(out, "integrity ok"));

    /* what the copy holds, read from the file */
    json_t *stored = stored_jobs(path);
    size_t during = 0, checked = 0;
    for (int b = 0; b < 20; b++)
        for (int i = 0; i < 1000; i++) {
            char jid[32];
            snprintf(jid, sizeof jid, "pre-%02d-%04d", b, i);
            cr_assert_not_null(json_object_get(stored, jid), "%s missing", jid);
        }
    for (int t = 0; t < THREADS; t++)
        for (size_t i = 0; i < loaders[t].n; i++) {
            tracked *j = &loaders[t].jobs[i];
            json_t *a = json_object_get(stored, j->jid);
            if (j->push_sent > end) { /* pushed after the copy was done */
                cr_assert_null(a, "%s pushed after the backup is in it", j->jid);
                continue;
            }
            if (j->push_ok && j->push_ok < begin) {
                bool acked_before = j->ack_ok && j->ack_ok < begin;
                bool acked_after = !j->ack_sent || j->ack_sent > end;
                if (acked_before)
                    cr_assert_null(a, "%s acked before the backup is in it", j->jid);
                else if (acked_after)
                    cr_assert_not_null(a, "%s pushed before the backup is missing", j->jid);
                /* attempts: 1 once fetched, 0 before */
                if (a && j->fetch_ok && j->fetch_ok < begin)
                    cr_assert_eq(json_integer_value(a), 1, "%s", j->jid);
                if (a && (!j->fetch_sent || j->fetch_sent > end))
                    cr_assert_eq(json_integer_value(a), 0, "%s", j->jid);
                checked++;
            } else {
                during++;
            }
            if (a) /* whatever its timing, a whole job */
                cr_assert(json_integer_value(a) == 0 || json_integer_value(a) == 1, "%s", j->jid);
        }
    fprintf(stderr, "backup under load: %zu jobs checked, %zu pushed while it ran\n", checked,
            during);
    cr_assert_gt(checked, 0);
    rbh_close(c);
    cr_assert_eq(rbh_stop(&s), 0);

    /* restored into a fresh directory, a server serves exactly that */
    snprintf(args, sizeof args, "restore '%s' --db '%s'", path, r.db);
    rc = run_cli(&r, args, out, sizeof out);
    cr_assert(file_has(out, "restored"));
    cr_assert_eq(rc, 0);
    cr_assert_eq(rbh_launch(&r, NULL), 0);
    c = rbh_connect(&r, NULL);
    cr_assert_not_null(c);
    /* the counters come from the same instant as the rows */
    long long held = rbh_info_int(c, "faktory.total_enqueued") +
                     rbh_info_int(c, "faktory.tasks.Busy.size");
    cr_assert_eq(held, (long long)json_object_size(stored));
    long long processed = rbh_info_int(c, "faktory.total_processed");
    long acked_before = 0, acked_by_end = 0;
    for (int t = 0; t < THREADS; t++)
        for (size_t i = 0; i < loaders[t].n; i++) {
            acked_before += loaders[t].jobs[i].ack_ok && loaders[t].jobs[i].ack_ok < begin;
            acked_by_end += loaders[t].jobs[i].ack_sent && loaders[t].jobs[i].ack_sent < end;
        }
    cr_assert(processed >= acked_before && processed <= acked_by_end,
              "processed %lld, acked before the backup %ld, by its end %ld", processed,
              acked_before, acked_by_end);
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(stored, k, v) {
        if (n++ % 7) /* every seventh, to keep the test short */
            continue;
        json_t *job = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", k));
        cr_assert_not_null(job, "%s not served after restore", k);
        cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), json_integer_value(v),
                     "%s", k);
        json_decref(job);
    }
    for (int t = 0; t < THREADS; t++)
        for (size_t i = 0; i < loaders[t].n; i += 11) {
            tracked *j = &loaders[t].jobs[i];
            if (json_object_get(stored, j->jid))
                continue;
            char *st = rbh_job_state(c, j->jid);
            cr_assert_null(st, "%s is served but was not in the copy", j->jid);
        }
    rbh_close(c);
    json_decref(stored);
    for (int t = 0; t < THREADS; t++)
        free(loaders[t].jobs);
    cr_assert_eq(rbh_stop(&r), 0);
}
#endif

#ifndef RBH_PG
/* A new SQLite file at path made by sql. */
static void make_db(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

Test(backup, refusals_and_force, .timeout = 120)
{
    rbh_server s, r;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0);
    rbh_init(&r); /* a directory for the files of this test */
    rbh_conn *c = rbh_connect(&s, NULL);
    cr_assert_not_null(c);
    for (int i = 0; i < 3; i++)
        cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"keep-000%d\",\"jobtype\":\"K\",\"args\":[]}",
                             i));
    char out[300], copy[400], args[1200];
    snprintf(copy, sizeof copy, "%s/copy.db", r.dir);
    snprintf(args, sizeof args, "backup '%s'", copy);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 0);
    cr_assert(file_has(out, "3 jobs, integrity ok"));
    /* never over an existing file, whoever asks */
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 2);
    cr_assert(file_has(out, "already exists"));
    char *reply = rbh_cmd(c, "BACKUP {\"path\":\"%s\"}", copy);
    cr_assert(reply && strstr(reply, "-ERR") && strstr(reply, "already exists"), "%s", reply);
    free(reply);
    cr_assert(rbh_expect(c, "-ERR BACKUP: path must be an absolute file path (a string starting "
                            "with /)", "BACKUP {\"path\":\"rel.db\"}"));
    cr_assert(rbh_expect(c, "-ERR BACKUP: path must be an absolute file path (a string starting "
                            "with /)", "BACKUP {}"));
    cr_assert_eq(access(copy, F_OK), 0);
    /* a file the server cannot create: its failure, exit 1 */
    snprintf(args, sizeof args, "backup '%s/no-such-dir/copy.db'", r.dir);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 1);
    cr_assert(file_has(out, "storage error: cannot create"));
    snprintf(args, sizeof args, "backup --json '%s/copy2.db'", r.dir);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 0);
    cr_assert(file_has(out, "\"bytes\":") && file_has(out, "\"jobs\":3}"));

    /* restore over the running server's database: "in use" first, with
     * or without --force (once, without it said "exists (--force ...)",
     * and --force then said "in use"; issue 25) */
    snprintf(args, sizeof args, "restore '%s' --db '%s'", copy, s.db);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 1);
    cr_assert(file_has(out, "is in use: a server is running on it"));
    snprintf(args, sizeof args, "restore '%s' --db '%s' --force", copy, s.db);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 1);
    cr_assert(file_has(out, "is in use: a server is running on it"));

    /* files that are no sound Rebound database, refused before anything changes */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/garbage.db", r.dir);
    rbh_write_file(&r, "garbage.db", "this is not a database, not even close to one........", bad,
                   sizeof bad);
    snprintf(args, sizeof args, "restore '%s' --db '%s/x.db'", bad, r.dir);
    cr_assert_eq(run_cli(&r, args, out, sizeof out), 2);
    cr_assert(file_has(out, "is not a SQLite database"));
    snprintf(bad, sizeof bad, "%s/other.db", r.dir);
    make_db(bad, "PRAGMA application_id=42; CREATE TABLE t(x);");
    snprintf(args, sizeof args, "restore '%s' --db '%s/x.db'", bad, r.dir);
    cr_assert_eq(run_cli(&r, args, out, sizeof out), 2);
    cr_assert(file_has(out, "another application's SQLite database (application_id 42)"));
    snprintf(bad, sizeof bad, "%s/notables.db", r.dir);
    make_db(bad, "CREATE TABLE jobs(x);");
    snprintf(args, sizeof args, "restore '%s' --db '%s/x.db'", bad, r.dir);
    cr_assert_eq(run_cli(&r, args, out, sizeof out), 2);
    cr_assert(file_has(out, "is not a Rebound database"));
    /* a copy with a damaged page */
    snprintf(bad, sizeof bad, "%s/damaged.db", r.dir);
    snprintf(args, sizeof args, "cp '%s' '%s' && printf 'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' | "
             "dd of='%s' bs=1 seek=%d conv=notrunc 2>/dev/null", copy, bad, bad, 4096 + 8);
    cr_assert_eq(system(args), 0);
    snprintf(args, sizeof args, "restore '%s' --db '%s/x.db'", bad, r.dir);
    cr_assert_eq(run_cli(&r, args, out, sizeof out), 2);
    cr_assert(file_has(out, "damaged.db' fails SQLite's integrity check: "));
    char x[400];
    snprintf(x, sizeof x, "%s/x.db", r.dir);
    cr_assert_neq(access(x, F_OK), 0, "a refused restore left a file");

    /* stopped: --force installs the copy and keeps the old database */
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"late-0001\",\"jobtype\":\"K\",\"args\":[]}"));
    rbh_close(c);
    cr_assert(WIFEXITED(rbh_kill(&s, SIGTERM)));
    snprintf(args, sizeof args, "restore '%s' --db '%s' --force", copy, s.db);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 0);
    cr_assert(file_has(out, "the previous database is"));
    char bak[1100];
    snprintf(bak, sizeof bak, "%s.bak", s.db);
    cr_assert_eq(access(bak, F_OK), 0);
    cr_assert_eq(rbh_launch(&s, NULL), 0);
    c = rbh_connect(&s, NULL);
    cr_assert_not_null(c);
    for (int i = 0; i < 3; i++) {
        char jid[16], *st;
        snprintf(jid, sizeof jid, "keep-000%d", i);
        st = rbh_job_state(c, jid);
        cr_assert(st && !strcmp(st, "enqueued"), "%s: %s", jid, st ? st : "missing");
        free(st);
    }
    char *late = rbh_job_state(c, "late-0001");
    cr_assert_null(late, "a job pushed after the backup came back");
    rbh_close(c);
    cr_assert_eq(rbh_stop(&s), 0);
    cr_assert_eq(rbh_stop(&r), 0);
}
#endif

#ifdef RBH_PG
/* Distributed mode: the backup is PostgreSQL's (pg_dump), said clearly. */
Test(pg_backup, refused_with_pg_dump, .timeout = 60)
{
    rbh_server s;
    cr_assert_eq(rbh_start(&s, NULL, NULL), 0);
    rbh_conn *c = rbh_connect(&s, NULL);
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "-ERR BACKUP: distributed mode keeps its jobs in PostgreSQL: back it "
                            "up with pg_dump (docs/operations.md)", "BACKUP {\"path\":\"/tmp/x.db\"}"));
    rbh_close(c);
    char out[300], args[1400];
    snprintf(args, sizeof args, "backup '%s/copy.db'", s.dir);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 2);
    cr_assert(file_has(out, "pg_dump"));
    snprintf(args, sizeof args, "restore '%s/copy.db' --db '%s'", s.dir, s.db);
    cr_assert_eq(run_cli(&s, args, out, sizeof out), 2);
    cr_assert(file_has(out, "pg_restore"));
    cr_assert_eq(rbh_stop(&s), 0);
}
#endif
