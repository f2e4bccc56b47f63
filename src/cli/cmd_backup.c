/* `rebound backup FILE` and `rebound restore FILE`: a consistent copy of a
 * running single node's SQLite database (the server writes it: BACKUP,
 * server/cmd_backup.c), and putting such a copy in place of a stopped
 * server's database. docs/operations.md, "Backup and restore". */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "backend/sqlite/store.h"
#include "cli/cli.h"
#include "cli/cmd_client.h"
#include "common/buf.h"
#include "config/config.h"

static const char backup_usage[] =
    "usage: rebound backup FILE [--url URL] [--json]\n"
    "  asks the running server (single node, SQLite) for a consistent copy of its\n"
    "  database, written to FILE (a new file; relative to the current directory) while\n"
    "  it goes on serving, then checks the copy. The server writes the file itself, so\n"
    "  FILE must be on a file system the server can write (the same machine).\n"
    "  Distributed mode: back up PostgreSQL with pg_dump (docs/operations.md).\n"
    "exit: 0 written and checked, 1 the server or the check failed, 2 bad usage, FILE exists\n"
    "or distributed mode\n";

static const char restore_usage[] =
    "usage: rebound restore FILE [--db PATH] [--config F] [--env NAME] [--force]\n"
    "  checks FILE (SQLite integrity check, a Rebound database) and installs it as the\n"
    "  database of a stopped server: --db PATH, else storage.url of the configuration.\n"
    "  --force  replace an existing database, kept as PATH.bak\n"
    "exit: 0 restored, 1 failed (a server is running on the database, I/O), 2 bad\n"
    "usage or a bad FILE\n";

/* PostgreSQL URLs and conninfo strings, as `rebound migrate` tells them. */
static int is_postgres(const char *url)
{
    return !strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13) ||
           strchr(url, '=') != NULL;
}

/* path made absolute against the current directory (caller frees). */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return rb_xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    rb_buf b = RB_BUF_INIT;
    rb_buf_printf(&b, "%s/%s", cwd, path);
    return rb_buf_detach(&b, NULL);
}

int cmd_backup(int argc, char **argv)
{
    cli_common co = {0};
    int prc = cli_parse_common_only("backup", backup_usage, argc, argv, &co);
    if (prc >= 0)
        return prc;
    if (optind != argc - 1)
        return cli_error(CLI_USAGE, "backup: want one FILE (see 'rebound backup --help')");
    char *path = absolute(argv[optind]);
    if (!path)
        return cli_error(CLI_FAIL, "backup: cannot read the current directory: %s",
                         strerror(errno));
    if (access(path, F_OK) == 0) {
        int code = cli_error(CLI_USAGE, "backup: '%s' already exists (choose a new file)", path);
        free(path);
        return code;
    }
    co.timeout_ms = 24 * 3600 * 1000; /* a large database takes a while */
    rb_client *c;
    int code = cli_connect(&co, &c);
    if (code != CLI_OK) {
        free(path);
        return code;
    }
    json_t *req = json_pack("{s:s}", "path", path);
    char *line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    rb_err err = {0};
    rb_reply r;
    int rc = rb_client_callf(c, &r, &err, "BACKUP %s", line);
    free(line);
    json_t *reply = rc == 0 && r.type == RB_REPLY_BULK ? json_loads(r.str, 0, NULL) : NULL;
    rb_client_close(c);
    long long jobs = 0;
    if (rc == RB_EPROTO && !strncmp(rb_err_msg(&err), "storage error: ", 15)) {
        code = cli_error(CLI_FAIL, "backup: %s", rb_err_msg(&err)); /* the server failed */
    } else if (rc) {
        code = cli_call_error("backup", rc, &err, 1);
    } else if (!reply) {
        code = cli_error(CLI_FAIL, "backup: unexpected reply from the server");
    } else if ((rc = rb_store_sqlite_check(path, &jobs, &err))) {
        code = cli_error(CLI_FAIL, "backup: the copy does not check: %s", rb_err_msg(&err));
    } else if (co.json) {
        json_object_set_new(reply, "jobs", json_integer(jobs));
        cli_print_json(reply);
    } else {
        printf("backup written to %s (%lld bytes, %lld jobs, integrity ok)\n", path,
               (long long)json_integer_value(json_object_get(reply, "bytes")), jobs);
    }
    json_decref(reply);
    free(path);
    return code;
}

/* Copies the database at from into the new file part (SQLite's backup
 * API, so a copy in WAL mode comes whole) as one self-contained file,
 * fsynced. 0, or CLI_FAIL after reporting. */
static int copy_db(const char *from, const char *part)
{
    sqlite3 *src = NULL, *dst = NULL;
    int code = CLI_OK;
    int fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return cli_error(CLI_FAIL, "restore: cannot create '%s': %s", part, strerror(errno));
    close(fd);
    if (sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_open_v2(part, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        code = cli_error(CLI_FAIL, "restore: %s", sqlite3_errmsg(dst ? dst : src));
        goto out;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    int sr = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
    if (b)
        sqlite3_backup_finish(b);
    if (sr != SQLITE_DONE ||
        sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        code = cli_error(CLI_FAIL, "restore: copying '%s' into '%s': %s", from, part,
                         sqlite3_errmsg(dst));
        goto out;
    }
    sqlite3_close(dst);
    dst = NULL;
    if (rb_store_sync_path(part, O_RDONLY))
        code = cli_error(CLI_FAIL, "restore: cannot sync '%s': %s", part, strerror(errno));
out:
    sqlite3_close(src);
    sqlite3_close(dst);
    if (code)
        unlink(part);
    return code;
}

/* The exit code after reporting that a server runs on the database at
 * path (its lock is held: SQLITE_BUSY or SQLITE_LOCKED for a write
 * transaction begun and rolled back), else CLI_OK: checked before any
 * other complaint about the target, whatever --force says. Changes
 * nothing in the file. */
static int check_not_in_use(const char *path)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "BEGIN IMMEDIATE; ROLLBACK;", NULL, NULL, NULL);
    sqlite3_close(db);
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return cli_error(CLI_FAIL, "restore: '%s' is in use: a server is running on it "
                         "(stop it first)", path);
    return CLI_OK; /* any other trouble is lock_target's to report */
}

/* Takes the lock a server holds on the database at path, and keeps it
 * while *db stays open: the database leaves WAL mode (its WAL folded in,
 * so that the file alone is the whole database once renamed). CLI_OK, or
 * the exit code after reporting: a server running on it, or not a
 * database. */
static int lock_target(const char *path, sqlite3 **db)
{
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        return cli_error(CLI_FAIL, "restore: cannot open '%s': %s", path, sqlite3_errmsg(*db));
    char *msg = NULL;
    int rc = sqlite3_exec(*db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=DELETE;"
                               " BEGIN EXCLUSIVE; COMMIT;", NULL, NULL, &msg);
    if (rc == SQLITE_OK) {
        sqlite3_free(msg);
        return CLI_OK;
    }
    int code = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED
                   ? cli_error(CLI_FAIL, "restore: '%s' is in use: a server is running on it "
                               "(stop it first)", path)
                   : cli_error(CLI_FAIL, "restore: '%s': %s (move it away first)", path,
                               msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return code;
}

int cmd_restore(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},    {"config", required_argument, NULL, 'c'},
        {"env", required_argument, NULL, 'e'},   {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *db = NULL, *file = NULL, *env = NULL;
    int force = 0, ch;
    cli_getopt_reset();
    while ((ch = getopt_long(argc, argv, ":d:c:e:fh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'd': db = optarg; break;
        case 'c': file = optarg; break;
        case 'e': env = optarg; break;
        case 'f': force = 1; break;
        case 'h': fputs(restore_usage, stdout); return CLI_OK;
        default: return cli_bad_option("restore", ch, argv);
        }
    }
    if (optind != argc - 1)
        return cli_error(CLI_USAGE, "restore: want one FILE (see 'rebound restore --help')");
    const char *from = argv[optind];
    rb_config cfg;
    int code = cli_load_config(&cfg, "restore", file, env);
    if (code != CLI_OK)
        return code;
    if (!db)
        db = cfg.storage.url;
    if (!strncmp(db, "sqlite:", 7))
        db += 7;
    rb_buf part = RB_BUF_INIT, bak = RB_BUF_INIT, wal = RB_BUF_INIT;
    sqlite3 *lock = NULL;
    rb_err err = {0};
    long long jobs = 0;
    struct stat sf, st;
    bool exists = stat(db, &st) == 0;
    if (is_postgres(db)) {
        code = cli_error(CLI_USAGE, "restore: storage url '%s' is PostgreSQL (distributed "
                         "mode): restore it with pg_restore or psql (docs/operations.md)", db);
        goto out;
    }
    int rc = rb_store_sqlite_check(from, &jobs, &err);
    if (rc) {
        code = cli_error(rc == RB_EIO ? CLI_FAIL : CLI_USAGE, "restore: %s", rb_err_msg(&err));
        goto out;
    }
    if (exists && stat(from, &sf) == 0 && sf.st_dev == st.st_dev && sf.st_ino == st.st_ino) {
        code = cli_error(CLI_USAGE, "restore: '%s' is the database itself", from);
        goto out;
    }
    rb_buf_printf(&part, "%s.restore-part", db);
    rb_buf_printf(&bak, "%s.bak", db);
    rb_buf_printf(&wal, "%s-wal", db);
    if (exists && (code = check_not_in_use(db)) != CLI_OK)
        goto out;
    if (exists && !force) {
        code = cli_error(CLI_USAGE, "restore: '%s' exists (--force replaces it, keeping it as "
                         "'%s')", db, rb_buf_str(&bak));
        goto out;
    }
    if (exists && (code = lock_target(db, &lock)) != CLI_OK)
        goto out;
    if (access(rb_buf_str(&wal), F_OK) == 0) {
        code = cli_error(CLI_FAIL, "restore: '%s' is left beside the database; a server may be "
                         "running on it (stop it first)", rb_buf_str(&wal));
        goto out;
    }
    unlink(rb_buf_str(&part)); /* a previous run's, interrupted */
    if ((code = copy_db(from, rb_buf_str(&part))) != CLI_OK)
        goto out;
    if (exists && rename(db, rb_buf_str(&bak)) != 0) {
        code = cli_error(CLI_FAIL, "restore: cannot rename '%s' to '%s': %s", db,
                         rb_buf_str(&bak), strerror(errno));
        unlink(rb_buf_str(&part));
        goto out;
    }
    if (rename(rb_buf_str(&part), db) != 0) {
        code = cli_error(CLI_FAIL, "restore: cannot rename '%s' to '%s': %s", rb_buf_str(&part),
                         db, strerror(errno));
        if (exists && rename(rb_buf_str(&bak), db) != 0)
            cli_error(CLI_FAIL, "restore: the previous database is now '%s'", rb_buf_str(&bak));
        unlink(rb_buf_str(&part));
        goto out;
    }
    char *dir = rb_xstrdup(db);
    rb_store_sync_path(dirname(dir), O_RDONLY | O_DIRECTORY);
    free(dir);
    printf("restored %s into %s (%lld jobs)", from, db, jobs);
    if (exists)
        printf("; the previous database is %s", rb_buf_str(&bak));
    printf("\n");
out:
    sqlite3_close(lock);
    rb_buf_release(&part);
    rb_buf_release(&bak);
    rb_buf_release(&wal);
    rb_config_release(&cfg);
    return code;
}
