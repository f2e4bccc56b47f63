/* The SQLite backend of the store: one table of job rows, one of counters,
 * one of keys (paused queues). WAL with synchronous=FULL: a commit returns
 * only once it is on disk. */
#include "backend/sqlite/store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/buf.h"
#include "common/fault.h"

enum { ST_PUT, ST_DEL, ST_COUNTER, ST_META_SET, ST_META_DEL, ST_BEGIN, ST_COMMIT, ST_N };

typedef struct sqlite_store {
    rb_store base;
    sqlite3 *db;
    sqlite3_stmt *st[ST_N];
    char *path;
    /* Test seam (common/fault.h): while the file named by the fault
     * sqlite.fault_file exists, every commit fails as a full disk would. */
    const char *fault_file;
    int wal_pages;  /* WAL size after the last commit (writer thread only) */
} sqlite_store;

/* Pages a backup copies per step (256 KiB with 4 KiB pages): the writer
 * commits the batch waiting, if any, between two steps. */
#define BACKUP_STEP_PAGES 64

/* WAL pages after which sq_maintain checkpoints (SQLite's own threshold). */
#define CKPT_PAGES 1000

static const char *const stmt_sql[ST_N] = {
    [ST_PUT] = "INSERT OR REPLACE INTO jobs(id,jid,state,queue,priority,seq,due_ms,first_ms,"
               "attempts,wid,json,history,reserve_s,due_us,grp)"
               " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_DEL] = "DELETE FROM jobs WHERE id=?",
    [ST_COUNTER] = "INSERT OR REPLACE INTO counters(name,value) VALUES(?,?)",
    [ST_META_SET] = "INSERT OR REPLACE INTO meta(key,value) VALUES(?,?)",
    [ST_META_DEL] = "DELETE FROM meta WHERE key=?",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
};

/* Jobs are keyed by the server's row id (the rowid itself: no index).
 * The server keeps jids unique; the table needs no index on them since it
 * is read only once, at start. New rows are appended at the end of the
 * table and a FETCH/ACK rewrites or deletes the row where it is, so a
 * commit touches few pages however many jobs wait. */
static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, jid TEXT NOT NULL,"
    " state INTEGER NOT NULL,"
    " queue TEXT NOT NULL, priority INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " due_ms INTEGER NOT NULL, first_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,"
    " wid TEXT, json TEXT NOT NULL, history TEXT, reserve_s INTEGER NOT NULL,"
    " due_us INTEGER NOT NULL DEFAULT 0, grp TEXT);"
    "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/* Databases written before the row id (jobs keyed by jid) are converted
 * once, in one transaction, keeping the rows' order. */
static const char migrate_v1[] =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE jobs RENAME TO jobs_v1;"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, jid TEXT NOT NULL, state INTEGER NOT NULL,"
    " queue TEXT NOT NULL, priority INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " due_ms INTEGER NOT NULL, first_ms INTEGER NOT NULL, attempts INTEGER NOT NULL,"
    " wid TEXT, json TEXT NOT NULL, history TEXT, reserve_s INTEGER NOT NULL);"
    "INSERT INTO jobs SELECT row_number() OVER (), jid, state, queue, priority, seq, due_ms,"
    " first_ms, attempts, wid, json, history, reserve_s FROM jobs_v1;"
    "DROP TABLE jobs_v1;"
    "COMMIT;";

/* Counters were a rowid table with an index on name: every ACK's counter
 * write dirtied two pages (table and index) besides the jobs page. Keyed
 * by name WITHOUT ROWID they are one B-tree, one page per commit. */
static const char migrate_counters[] =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE counters_v2(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO counters_v2 SELECT name, value FROM counters;"
    "DROP TABLE counters;"
    "ALTER TABLE counters_v2 RENAME TO counters;"
    "COMMIT;";

static int db_error(sqlite_store *s, rb_err *err, const char *what)
{
    return rb_err_set(err, RB_ESTORE, "%s '%s': %s", what, s->path, sqlite3_errmsg(s->db));
}

static int exec(sqlite_store *s, const char *sql, rb_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        rb_err_set(err, RB_ESTORE, "sqlite '%s': %s", s->path, msg ? msg : "error");
        sqlite3_free(msg);
        return RB_ESTORE;
    }
    return 0;
}

/* Runs a prepared statement to completion and resets it. */
static int step(sqlite_store *s, sqlite3_stmt *st, rb_err *err)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return db_error(s, err, "write to");
    return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static int sq_put_job(rb_store *base, const rb_job_row *r, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    sqlite3_stmt *st = s->st[ST_PUT];
    sqlite3_bind_int64(st, 1, r->id);
    bind_text(st, 2, r->jid);
    sqlite3_bind_int(st, 3, r->state);
    bind_text(st, 4, r->queue);
    sqlite3_bind_int(st, 5, r->priority);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)r->seq);
    sqlite3_bind_int64(st, 7, r->due_ms);
    sqlite3_bind_int64(st, 8, r->first_ms);
    sqlite3_bind_int(st, 9, r->attempts);
    bind_text(st, 10, r->wid);
    bind_text(st, 11, r->json);
    bind_text(st, 12, r->history);
    sqlite3_bind_int(st, 13, r->reserve_s);
    sqlite3_bind_int(st, 14, r->due_us);
    bind_text(st, 15, r->grp);
    return step(s, st, err);
}

static int sq_del_job(rb_store *base, int64_t id, const char *jid, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    (void)jid; /* the row id is the key */
    sqlite3_bind_int64(s->st[ST_DEL], 1, id);
    return step(s, s->st[ST_DEL], err);
}

static int sq_set_counter(rb_store *base, const char *name, int64_t value, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    bind_text(s->st[ST_COUNTER], 1, name);
    sqlite3_bind_int64(s->st[ST_COUNTER], 2, value);
    return step(s, s->st[ST_COUNTER], err);
}

static int sq_set_meta(rb_store *base, const char *key, const char *value, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    sqlite3_stmt *st = s->st[value ? ST_META_SET : ST_META_DEL];
    bind_text(st, 1, key);
    if (value)
        bind_text(st, 2, value);
    return step(s, st, err);
}

static int sq_clear(rb_store *base, rb_err *err)
{
    return exec((sqlite_store *)base, "DELETE FROM jobs; DELETE FROM counters; DELETE FROM meta;",
                err);
}

static int sq_begin(rb_store *base, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    return step(s, s->st[ST_BEGIN], err);
}

static int sq_commit(rb_store *base, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    if (s->fault_file && access(s->fault_file, F_OK) == 0)
        return rb_err_set(err, RB_ESTORE, "commit to '%s': injected fault (disk full)", s->path);
    return step(s, s->st[ST_COMMIT], err);
}

static void sq_rollback(rb_store *base)
{
    sqlite_store *s = (sqlite_store *)base;
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static int sq_load(rb_store *base, const rb_store_loader *l, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT jid,state,queue,priority,seq,due_ms,first_ms,attempts,wid,json,"
                           "history,reserve_s,id,due_us,grp FROM jobs ORDER BY due_ms, seq",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "read");
    int sr;
    while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        rb_job_row r = {
            .jid = col_text(st, 0),
            .state = sqlite3_column_int(st, 1),
            .queue = col_text(st, 2),
            .priority = sqlite3_column_int(st, 3),
            .seq = (uint64_t)sqlite3_column_int64(st, 4),
            .due_ms = sqlite3_column_int64(st, 5),
            .first_ms = sqlite3_column_int64(st, 6),
            .attempts = sqlite3_column_int(st, 7),
            .wid = col_text(st, 8),
            .json = col_text(st, 9),
            .history = col_text(st, 10),
            .reserve_s = sqlite3_column_int(st, 11),
            .id = sqlite3_column_int64(st, 12),
            .due_us = sqlite3_column_int(st, 13),
            .grp = col_text(st, 14),
        };
        rc = l->job(l->arg, &r);
    }
    if (rc == 0 && sr != SQLITE_DONE)
        rc = db_error(s, err, "read");
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT name,value FROM counters", -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "read");
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = l->counter(l->arg, col_text(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT key,value FROM meta", -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "read");
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        rc = l->meta(l->arg, col_text(st, 0), col_text(st, 1));
    sqlite3_finalize(st);
    return rc;
}

/* Runs script when probe, a query of one number, answers non-zero: an
 * older layout found and converted in place (rolled back on failure). */
static int migrate_if(sqlite_store *s, const char *probe, const char *script, rb_err *err)
{
    sqlite3_stmt *st = NULL;
    int old = 0;
    if (sqlite3_prepare_v2(s->db, probe, -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "read");
    if (sqlite3_step(st) == SQLITE_ROW)
        old = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (!old)
        return 0;
    int rc = exec(s, script, err);
    if (rc && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Converts a jobs table keyed by jid (written before row ids) in place. */
static int migrate(sqlite_store *s, rb_err *err)
{
    return migrate_if(s,
                      "SELECT (SELECT count(*) FROM pragma_table_info('jobs')) > 0 AND"
                      " (SELECT count(*) FROM pragma_table_info('jobs') WHERE name='id') = 0",
                      migrate_v1, err);
}

/* A waiting job's enqueue microseconds (issue 25): the column a database
 * written before lacks, added in place (no rows rewritten: 0 for each). */
static int add_due_us(sqlite_store *s, rb_err *err)
{
    return migrate_if(s, "SELECT count(*) = 0 FROM pragma_table_info('jobs') WHERE name='due_us'",
                      "ALTER TABLE jobs ADD COLUMN due_us INTEGER NOT NULL DEFAULT 0;", err);
}

/* A job's group (issue 30): the column a database written before lacks,
 * added in place (NULL for each row: its text is read at load). */
static int add_grp(sqlite_store *s, rb_err *err)
{
    return migrate_if(s, "SELECT count(*) = 0 FROM pragma_table_info('jobs') WHERE name='grp'",
                      "ALTER TABLE jobs ADD COLUMN grp TEXT;", err);
}

/* Converts a counters table with a rowid (written before) in place. */
static int migrate_counters_table(sqlite_store *s, rb_err *err)
{
    return migrate_if(s,
                      "SELECT count(*) FROM sqlite_master WHERE type='table' AND"
                      " name='counters' AND sql NOT LIKE '%WITHOUT ROWID%'",
                      migrate_counters, err);
}

/* Runs after every commit (it replaces SQLite's automatic checkpoint,
 * which would run inside COMMIT, before the batch's replies): notes the
 * WAL's size for sq_maintain. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    ((sqlite_store *)arg)->wal_pages = pages;
    return SQLITE_OK;
}

/* Between batches, once their replies are on their way: copies the WAL
 * into the database when it holds CKPT_PAGES pages. The connection holds
 * the database exclusively, so the checkpoint copies every frame (only the
 * last version of each page) and the next commit starts the WAL over. */
static int sq_maintain(rb_store *base, rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    if (s->wal_pages < CKPT_PAGES)
        return 0;
    s->wal_pages = 0;
    if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK)
        return db_error(s, err, "checkpoint");
    return 0;
}

int rb_store_sync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The backup (store.h): SQLite's online backup API from the store's own
 * connection into path.part, BACKUP_STEP_PAGES pages per step. Batches
 * committed between steps go through the same connection, so SQLite
 * writes their pages into the copy as well (pages already copied are
 * updated, the others are copied later): the copy is the database as it
 * stands after the last step, without restarting however busy the server
 * is. The copy then leaves WAL mode (one self-contained file), is
 * fsynced, and is linked to path, which fails rather than replace a file
 * that appeared meanwhile. */
static int sq_backup(rb_store *base, const char *path, void (*between)(void *), void *arg,
                     rb_err *err)
{
    sqlite_store *s = (sqlite_store *)base;
    rb_buf tmp = RB_BUF_INIT;
    rb_buf_printf(&tmp, "%s.part", path);
    const char *part = rb_buf_str(&tmp);
    sqlite3 *dst = NULL;
    int rc = 0;
    if (access(path, F_OK) == 0) {
        rc = rb_err_set(err, RB_EEXIST, "'%s' already exists", path);
        goto out;
    }
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = rb_err_set(err, RB_EIO, "cannot create '%s': %s", part, strerror(errno));
        goto out;
    }
    close(fd);
    if (sqlite3_open_v2(part, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = rb_err_set(err, RB_ESTORE, "cannot open '%s': %s", part, sqlite3_errmsg(dst));
        goto fail;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->db, "main");
    if (!b) {
        rc = rb_err_set(err, RB_ESTORE, "backup of '%s': %s", s->path, sqlite3_errmsg(dst));
        goto fail;
    }
    int sr;
    while ((sr = sqlite3_backup_step(b, BACKUP_STEP_PAGES)) == SQLITE_OK || sr == SQLITE_BUSY ||
           sr == SQLITE_LOCKED)
        between(arg);
    sqlite3_backup_finish(b);
    if (sr != SQLITE_DONE) {
        rc = rb_err_set(err, RB_ESTORE, "backup of '%s' into '%s': %s", s->path, part,
                        sqlite3_errstr(sr));
        goto fail;
    }
    char *msg = NULL;
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, &msg) != SQLITE_OK) {
        rc = rb_err_set(err, RB_ESTORE, "'%s': %s", part, msg ? msg : "error");
        sqlite3_free(msg);
        goto fail;
    }
    sqlite3_close(dst);
    dst = NULL;
    if (rb_store_sync_path(part, O_RDONLY) != 0) {
        rc = rb_err_set(err, RB_EIO, "cannot sync '%s': %s", part, strerror(errno));
        goto fail;
    }
    if (link(part, path) != 0) {
        rc = rb_err_set(err, errno == EEXIST ? RB_EEXIST : RB_EIO, "cannot create '%s': %s", path,
                        strerror(errno));
        goto fail;
    }
    unlink(part);
    char *dir = rb_xstrdup(path);
    rb_store_sync_path(dirname(dir), O_RDONLY | O_DIRECTORY); /* the new name, durable */
    free(dir);
    goto out;
fail:
    sqlite3_close(dst);
    unlink(part);
out:
    rb_buf_release(&tmp);
    return rc;
}

static void sq_close(rb_store *base)
{
    sqlite_store *s = (sqlite_store *)base;
    if (!s)
        return;
    for (int i = 0; i < ST_N; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

static const rb_store_ops sqlite_ops = {
    .name = "sqlite",
    .load = sq_load,
    .begin = sq_begin,
    .put_job = sq_put_job,
    .del_job = sq_del_job,
    .set_counter = sq_set_counter,
    .set_meta = sq_set_meta,
    .clear = sq_clear,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .close = sq_close,
    .maintain = sq_maintain,
    .backup = sq_backup,
};

/* Marks the file as Rebound's (RB_SQLITE_APPLICATION_ID), once. */
static int set_application_id(sqlite_store *s, rb_err *err)
{
    sqlite3_stmt *st = NULL;
    int id = 0;
    if (sqlite3_prepare_v2(s->db, "PRAGMA application_id", -1, &st, NULL) != SQLITE_OK)
        return db_error(s, err, "read");
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (id == (int)RB_SQLITE_APPLICATION_ID)
        return 0;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA application_id=%d", (int)RB_SQLITE_APPLICATION_ID);
    return exec(s, sql, err);
}

int rb_store_sqlite_open(const char *path, rb_store **out, rb_err *err)
{
    sqlite_store *s = rb_xcalloc(1, sizeof *s);
    s->base.ops = &sqlite_ops;
    s->path = rb_xstrdup(path);
    s->fault_file = rb_fault_get("sqlite.fault_file");
    int rc;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        rc = db_error(s, err, "cannot open database");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    /* EXCLUSIVE before WAL: one process owns the database, so SQLite keeps
     * the WAL index in memory and takes no file locks per transaction
     * (no -shm file, none of its fcntl calls); another process opening the
     * database while the server runs gets "database is locked". */
    if ((rc = exec(s, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;"
                      " PRAGMA synchronous=FULL; PRAGMA journal_size_limit=67108864;", err)) ||
        (rc = set_application_id(s, err)) ||
        (rc = migrate(s, err)) || (rc = migrate_counters_table(s, err)) ||
        (rc = exec(s, schema, err)) || (rc = add_due_us(s, err)) ||
        (rc = add_grp(s, err)))
        goto fail;
    for (int i = 0; i < ST_N; i++)
        if (sqlite3_prepare_v2(s->db, stmt_sql[i], -1, &s->st[i], NULL) != SQLITE_OK) {
            rc = db_error(s, err, "prepare");
            goto fail;
        }
    sqlite3_wal_hook(s->db, wal_hook, s);
    *out = &s->base;
    return 0;
fail:
    sq_close(&s->base);
    return rc;
}

/* One number a query answers into *out; SQLite's error otherwise. */
static int query_int(sqlite3 *db, const char *sql, long long *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int rb_store_sqlite_check(const char *path, long long *jobs, rb_err *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    long long id = 0, n = 0;
    if (access(path, R_OK) != 0) {
        rc = rb_err_set(err, RB_EIO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        query_int(db, "PRAGMA application_id", &id) != SQLITE_OK) {
        rc = rb_err_set(err, RB_EINVAL, "'%s' is not a SQLite database (%s)", path,
                        sqlite3_errmsg(db));
        goto out;
    }
    if (id != RB_SQLITE_APPLICATION_ID && id != 0) {
        rc = rb_err_set(err, RB_EINVAL, "'%s' is another application's SQLite database "
                        "(application_id %lld)", path, id);
        goto out;
    }
    /* the columns the server loads (sq_load) */
    static const char *const probes[] = {
        "SELECT jid,state,queue,priority,seq,due_ms,first_ms,attempts,wid,json,history,"
        "reserve_s,id FROM jobs LIMIT 0",
        "SELECT name,value FROM counters LIMIT 0",
        "SELECT key,value FROM meta LIMIT 0",
    };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        if (sqlite3_prepare_v2(db, probes[i], -1, &st, NULL) != SQLITE_OK) {
            rc = rb_err_set(err, RB_EINVAL, "'%s' is not a Rebound database: %s", path,
                            sqlite3_errmsg(db));
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
        rc = rb_err_set(err, RB_ESTORE, "'%s': %s", path, sqlite3_errmsg(db));
        goto out;
    }
    int sr = sqlite3_step(st);
    const char *first = sr == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!first || strcmp(first, "ok")) {
        /* its first finding, on one line */
        char what[160];
        snprintf(what, sizeof what, "%s", first ? first : sqlite3_errmsg(db));
        for (char *p = what; *p; p++)
            if (*p == '\n')
                *p = ' ';
        rc = rb_err_set(err, RB_EINVAL, "'%s' fails SQLite's integrity check: %s", path, what);
        goto out;
    }
    if (jobs) {
        if (query_int(db, "SELECT count(*) FROM jobs", &n) != SQLITE_OK) {
            rc = rb_err_set(err, RB_ESTORE, "'%s': %s", path, sqlite3_errmsg(db));
            goto out;
        }
        *jobs = n;
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

int rb_store_open(const char *url, rb_store **out, rb_err *err)
{
    if (!url || !*url)
        return rb_err_set(err, RB_EINVAL, "empty storage url");
    if (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13))
        return rb_err_set(err, RB_EINVAL, "storage '%s': postgresql is not supported yet", url);
    if (!strncmp(url, "sqlite:", 7))
        url += 7;
    return rb_store_sqlite_open(url, out, err);
}
