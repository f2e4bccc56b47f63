/* Test harness for the PostgreSQL engine: throwaway PostgreSQL clusters.
 *
 * The server binaries come from Debian's postgresql package
 * (/usr/lib/postgresql/VERSION/bin, the highest version found). A cluster
 * lives in a fresh temporary directory: its data directory, its Unix socket,
 * its log; it also listens on a free 127.0.0.1 port. When the tests run as
 * root, initdb and postgres run as the `postgres` user through runuser (they
 * refuse to run as root), and the directory is handed to that user.
 *
 * initdb takes seconds, so a test binary calls rbpg_suite_init() from a
 * PRE_ALL hook: it makes one template cluster (the `rebound` superuser and
 * database; path in $RBPG_TEMPLATE) and starts one shared cluster from it —
 * unless scripts/run-tests.sh made both for the whole run and said so in
 * $RBPG_RUN_OWNED (then the binary neither makes nor removes them).
 * Most tests work in a schema of their own in the shared cluster
 * (rbpg_schema_url); a test that stops or restarts PostgreSQL gets a
 * cluster of its own with rbpg_start(), which copies the template (a
 * fraction of a second), or runs initdb when there is none.
 *
 *   rbpg_cluster c;
 *   cr_assert(rbpg_start(&c));     // running; c.url is a libpq URL
 *   ...rbpg_stop(&c); rbpg_restart(&c);   // kill -9 style stop, start again
 *   rbpg_destroy(&c);              // stop and remove the directory
 *
 * Header-only (every function static). Nothing sleeps blindly: pg_ctl -w
 * waits for the server to accept connections. */
#ifndef RB_TESTS_SERVER_PG_HARNESS_H
#define RB_TESTS_SERVER_PG_HARNESS_H

#include <glob.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

typedef struct rbpg_cluster {
    char dir[256];  /* the temporary directory (socket, log) */
    char data[300]; /* dir/data */
    char log[300];  /* dir/pg.log: the server's log (written by postgres) */
    char setup[300]; /* dir/setup.log: initdb's, pg_ctl's and psql's output */
    char bin[256];  /* PostgreSQL's bin directory */
    int port;
    char url[700];  /* postgresql://rebound@/rebound?host=DIR&port=PORT */
    bool running;
} rbpg_cluster;

/* The newest /usr/lib/postgresql/VERSION/bin holding initdb, into out. */
static inline bool rbpg_find_bin(char *out, size_t n)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0)
        return false;
    int best = -1;
    long best_v = -1;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        long v = strtol(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"), NULL, 10);
        if (v > best_v) {
            best_v = v;
            best = (int)i;
        }
    }
    if (best >= 0) {
        snprintf(out, n, "%s", g.gl_pathv[best]);
        *strrchr(out, '/') = '\0';
    }
    globfree(&g);
    return best >= 0;
}

/* Runs argv (as the postgres user when we are root), output to log (or
 * /dev/null). Returns the exit status, -1 when it could not run. */
static inline int rbpg_run(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        FILE *f = fopen(log ? log : "/dev/null", "a");
        if (f) {
            dup2(fileno(f), 1);
            dup2(fileno(f), 2);
        }
        if (geteuid() == 0) {
            char *args[32] = {"runuser", "-u", "postgres", "--"};
            int k = 4;
            for (int i = 0; argv[i] && k < 31; i++)
                args[k++] = argv[i];
            args[k] = NULL;
            execvp("runuser", args);
        } else {
            execvp(argv[0], argv);
        }
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Hands path to the postgres user (when we are root). */
static inline void rbpg_give(const char *path)
{
    if (geteuid() != 0)
        return;
    struct passwd *pw = getpwnam("postgres");
    if (pw && chown(path, pw->pw_uid, pw->pw_gid) != 0)
        perror("chown");
}

static inline void rbpg_rm_rf(const char *path)
{
    if (!path || !*path)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", path, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid > 0)
        waitpid(pid, &st, 0);
}

static inline int rbpg_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Starts the cluster's postmaster (pg_ctl -w: returns once it accepts
 * connections). */
static inline bool rbpg_restart(rbpg_cluster *c)
{
    char pg_ctl[300], opts[600];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", c->bin);
    snprintf(opts, sizeof opts,
             "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
             " -c max_connections=40 -c shared_buffers=16MB",
             c->port, c->dir);
    char *argv[] = {pg_ctl, "-D", c->data, "-o", opts, "-l", c->log, "-w", "-t", "60", "start",
                    NULL};
    c->running = rbpg_run(argv, c->setup) == 0;
    return c->running;
}

/* Stops the postmaster in mode ("immediate", "fast"). */
static inline bool rbpg_stop_mode(rbpg_cluster *c, const char *mode)
{
    char pg_ctl[300];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", c->bin);
    char *argv[] = {pg_ctl, "-D", c->data, "-m", (char *)mode, "-w", "stop", NULL};
    bool ok = rbpg_run(argv, c->setup) == 0;
    if (ok)
        c->running = false;
    return ok;
}

/* Stops it at once (immediate mode: like a crash; the next start recovers). */
static inline bool rbpg_stop(rbpg_cluster *c)
{
    return rbpg_stop_mode(c, "immediate");
}

/* A fresh directory with an initdb'd data directory (user rebound, trust). */
static inline bool rbpg_initdb(rbpg_cluster *c)
{
    char initdb[300];
    snprintf(initdb, sizeof initdb, "%s/initdb", c->bin);
    char *argv[] = {initdb, "-D", c->data, "-A", "trust", "-U", "rebound", "-E", "UTF8",
                    "--no-sync", "--locale=C", NULL};
    return rbpg_run(argv, c->setup) == 0;
}

/* Prepares c's paths in a new temporary directory. */
static inline bool rbpg_prepare(rbpg_cluster *c)
{
    memset(c, 0, sizeof *c);
    if (!rbpg_find_bin(c->bin, sizeof c->bin))
        return false;
    snprintf(c->dir, sizeof c->dir, "/tmp/rbpg.XXXXXX");
    if (!mkdtemp(c->dir))
        return false;
    chmod(c->dir, 0755);
    rbpg_give(c->dir);
    snprintf(c->data, sizeof c->data, "%s/data", c->dir);
    snprintf(c->log, sizeof c->log, "%s/pg.log", c->dir);
    snprintf(c->setup, sizeof c->setup, "%s/setup.log", c->dir);
    c->port = rbpg_free_port();
    snprintf(c->url, sizeof c->url, "postgresql://rebound@/rebound?host=%s&port=%d", c->dir,
             c->port);
    return c->port > 0;
}

/* Runs SQL through psql against database db of a running cluster. */
static inline bool rbpg_psql(const rbpg_cluster *c, const char *db, const char *sql)
{
    char psql[300], port[16];
    snprintf(psql, sizeof psql, "%s/psql", c->bin);
    snprintf(port, sizeof port, "%d", c->port);
    char *argv[] = {psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", (char *)c->dir, "-p", port,
                    "-U", "rebound", "-d", (char *)db, "-c", (char *)sql, NULL};
    return rbpg_run(argv, c->setup) == 0;
}

/* Makes the template cluster (initdb, database `rebound`, cleanly stopped)
 * and exports $RBPG_TEMPLATE. */
static inline bool rbpg_template_init(void)
{
    rbpg_cluster t;
    if (!rbpg_prepare(&t) || !rbpg_initdb(&t) || !rbpg_restart(&t))
        return false;
    bool ok = rbpg_psql(&t, "postgres", "CREATE DATABASE rebound");
    ok = rbpg_stop_mode(&t, "fast") && ok;
    if (ok)
        setenv("RBPG_TEMPLATE", t.dir, 1);
    return ok;
}

static inline bool rbpg_start(rbpg_cluster *c);

/* For a test binary's PRE_ALL hook: the template, and one running cluster
 * shared by the tests ($RBPG_SHARED_DIR, $RBPG_SHARED_PORT), in which each
 * test works in a schema of its own (rbpg_schema_url). */
static inline bool rbpg_suite_init(void)
{
    /* scripts/run-tests.sh started one for the whole run: use it */
    if (getenv("RBPG_RUN_OWNED") && getenv("RBPG_TEMPLATE") && getenv("RBPG_SHARED_DIR") &&
        getenv("RBPG_SHARED_PORT"))
        return true;
    rbpg_cluster s;
    if (!rbpg_template_init() || !rbpg_start(&s))
        return false;
    char port[16];
    snprintf(port, sizeof port, "%d", s.port);
    setenv("RBPG_SHARED_DIR", s.dir, 1);
    setenv("RBPG_SHARED_PORT", port, 1);
    return true;
}

/* For the POST_ALL hook: stops the shared cluster, removes both. */
static inline void rbpg_suite_free(void)
{
    if (getenv("RBPG_RUN_OWNED"))
        return; /* the run's, not ours */
    const char *d = getenv("RBPG_SHARED_DIR");
    if (d && !strncmp(d, "/tmp/rbpg.", 10)) {
        rbpg_cluster s;
        memset(&s, 0, sizeof s);
        if (rbpg_find_bin(s.bin, sizeof s.bin)) {
            snprintf(s.data, sizeof s.data, "%s/data", d);
            snprintf(s.setup, sizeof s.setup, "%s/setup.log", d);
            rbpg_stop(&s);
        }
        rbpg_rm_rf(d);
    }
    const char *t = getenv("RBPG_TEMPLATE");
    if (t && !strncmp(t, "/tmp/rbpg.", 10))
        rbpg_rm_rf(t);
}

/* A libpq URL into the shared cluster whose search_path is schema (which
 * the caller creates); extra ("&k=v...", may be "") is appended. False
 * when there is no shared cluster. */
static inline bool rbpg_schema_url(char *out, size_t n, const char *schema, const char *extra)
{
    const char *d = getenv("RBPG_SHARED_DIR"), *p = getenv("RBPG_SHARED_PORT");
    if (!d || !p)
        return false;
    snprintf(out, n, "postgresql://rebound@/rebound?host=%s&port=%s&options=-c%%20search_path%%3D%s%s",
             d, p, schema, extra);
    return true;
}

/* A schema name no other test of the run has used: prefix, the pid and the
 * time in microseconds (pids are reused within a run: pid_max may be 32768). */
static inline void rbpg_schema_name(char *out, size_t n, const char *prefix)
{
    static int counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, n, "%s_%d_%d_%lld", prefix, (int)getpid(), counter++,
             (long long)ts.tv_sec % 100000000 * 1000000 + ts.tv_nsec / 1000);
}

/* The base URL (no search_path) of the shared cluster. */
static inline bool rbpg_shared_url(char *out, size_t n)
{
    const char *d = getenv("RBPG_SHARED_DIR"), *p = getenv("RBPG_SHARED_PORT");
    if (!d || !p)
        return false;
    snprintf(out, n, "postgresql://rebound@/rebound?host=%s&port=%s", d, p);
    return true;
}

/* A running cluster of one's own, from the template when there is one. */
static inline bool rbpg_start(rbpg_cluster *c)
{
    if (!rbpg_prepare(c))
        return false;
    const char *t = getenv("RBPG_TEMPLATE");
    if (t && *t) {
        char from[300];
        snprintf(from, sizeof from, "%s/data", t);
        char *argv[] = {"cp", "-a", from, c->data, NULL};
        pid_t pid = fork();
        if (pid == 0) {
            execvp(argv[0], argv);
            _exit(127);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return false;
        return rbpg_restart(c);
    }
    if (!rbpg_initdb(c) || !rbpg_restart(c))
        return false;
    return rbpg_psql(c, "postgres", "CREATE DATABASE rebound");
}

static inline void rbpg_destroy(rbpg_cluster *c)
{
    if (c->running)
        rbpg_stop(c);
    if (!strncmp(c->dir, "/tmp/rbpg.", 10))
        rbpg_rm_rf(c->dir);
}

#endif
