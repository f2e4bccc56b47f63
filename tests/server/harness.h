/* Test harness for anything that talks to a real `rebound serve`: start the
 * binary on port 0 in a fresh temporary directory, find its port, speak the
 * wire protocol line by line, kill or restart it, clean up.
 *
 * Header-only (every function static) so any tests/server/test_*.c or CLI
 * test can include it. The binary comes from $REBOUND_BIN, else
 * build/rebound. Nothing here sleeps blindly: waits poll observable state
 * with a deadline. With $REBOUND_VALGRIND set (to anything but "" or "0")
 * the server runs under `valgrind --leak-check=full --error-exitcode=99`,
 * so rbh_stop() fails on any memory error or leak (use the normal build's
 * binary: ASan binaries do not run under valgrind).
 *
 *   rbh_server s;
 *   rbh_start(&s, NULL, NULL);             // temp dir, fresh database
 *   rbh_conn *c = rbh_connect(&s, "w1");   // greeting read, HELLO sent (wid w1)
 *   char *r = rbh_cmd(c, "PUSH %s", job);  // "+OK", "-ERR ...", bulk text, or "$-1"
 *   free(r);
 *   rbh_close(c);
 *   rbh_stop(&s);                          // SIGTERM, wait, remove the directory
 *
 * With RBH_PG defined before including it, every server runs in distributed
 * mode: the binary gets PRE_ALL/POST_ALL hooks that start a throwaway
 * PostgreSQL cluster (pg_harness.h), and rbh_init() gives each server a
 * fresh schema in it, migrated with `rebound migrate`, as its --db url
 * (s->db). A restart with rbh_launch() keeps the schema, like the file.
 */
#ifndef RB_TESTS_SERVER_HARNESS_H
#define RB_TESTS_SERVER_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "common/timeutil.h"

#ifdef RBH_PG
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <libpq-fe.h>

#include "pg_harness.h"
#endif

/* A running server. dir holds rebound.db, port (the port file), log
 * (its stderr) and any file a test puts there (config). */
typedef struct rbh_server {
    pid_t pid;
    int port;
    char dir[256];
    char db[1024]; /* the database file, or (RBH_PG) its postgres url */
    char log[320];
    char config[320]; /* "" = no --config */
    char *env_fault;  /* the fault sqlite.fault_file (rbh_fault_set), or NULL */
} rbh_server;

/* One connection. */
typedef struct rbh_conn {
    int fd;
    char buf[65536];
    size_t len;
    char greeting[512];
} rbh_conn;

static inline int64_t rbh_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void rbh_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Asks the servers started from now on for fault name with value (an
 * entry of $REBOUND_FAULTS, the one fault-injection seam: src/common/
 * fault.h), or no longer when value is NULL; other entries are kept. */
static inline void rbh_fault_set(const char *name, const char *value)
{
    const char *old = getenv("REBOUND_FAULTS");
    char out[4096] = "";
    size_t n = strlen(name), len = 0;
    for (const char *p = old; p && *p && len < sizeof out;) {
        size_t e = strcspn(p, ",");
        if (!(e > n && !strncmp(p, name, n) && p[n] == '='))
            len += (size_t)snprintf(out + len, sizeof out - len, "%s%.*s", len ? "," : "",
                                    (int)e, p);
        p += e;
        if (*p == ',')
            p++;
    }
    if (value && len < sizeof out)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s=%s", len ? "," : "", name,
                                value);
    if (len)
        setenv("REBOUND_FAULTS", out, 1);
    else
        unsetenv("REBOUND_FAULTS");
}

/* True when servers are started under valgrind ($REBOUND_VALGRIND). */
static inline bool rbh_valgrind(void)
{
    const char *v = getenv("REBOUND_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

static inline const char *rbh_bin(void)
{
    const char *b = getenv("REBOUND_BIN");
    return b && *b ? b : "build/rebound";
}

/* Writes text to dir/name (e.g. a config file); returns the path in out. */
static inline void rbh_write_file(const rbh_server *s, const char *name, const char *text,
                                  char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", s->dir, name);
    FILE *f = fopen(out, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

#ifdef RBH_PG
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!rbpg_suite_init())
        fprintf(stderr, "harness: cannot start the shared PostgreSQL cluster\n");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    rbpg_suite_free();
}

/* Creates a new schema in the shared cluster, migrates it with the binary
 * (`rebound migrate --url`) and writes its url into out. */
static inline bool rbh_pg_schema(char *out, size_t n)
{
    char base[600], name[64], sql[128];
    rbpg_schema_name(name, sizeof name, "t");
    if (!rbpg_shared_url(base, sizeof base) || !rbpg_schema_url(out, n, name, ""))
        return false;
    PGconn *pc = PQconnectdb(base);
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", name);
    PGresult *r = PQstatus(pc) == CONNECTION_OK ? PQexec(pc, sql) : NULL;
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    PQfinish(pc);
    if (!ok)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(rbh_bin(), rbh_bin(), "migrate", "--url", out, (char *)NULL);
        _exit(127);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Runs one SQL statement on the database (schema) at url; the first value
 * of its first row (caller frees), "" for none, NULL on an error (printed). */
static inline char *rbh_pg_value(const char *url, const char *sql)
{
    PGconn *pc = PQconnectdb(url);
    PGresult *r = PQstatus(pc) == CONNECTION_OK ? PQexec(pc, sql) : NULL;
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    char *v = NULL;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        v = strdup(st == PGRES_TUPLES_OK && PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    else
        fprintf(stderr, "harness: %s: %s\n", sql, r ? PQresultErrorMessage(r) : PQerrorMessage(pc));
    PQclear(r);
    PQfinish(pc);
    return v;
}
#endif

/* Prepares s with a new temporary directory (no process yet). */
static inline void rbh_init(rbh_server *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/rebound-test-XXXXXX");
    if (!mkdtemp(s->dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(s->db, sizeof s->db, "%s/rebound.db", s->dir);
    snprintf(s->log, sizeof s->log, "%s/log", s->dir);
#ifdef RBH_PG
    if (!rbh_pg_schema(s->db, sizeof s->db)) {
        fprintf(stderr, "harness: no PostgreSQL schema for the server\n");
        abort();
    }
#endif
}

/* Starts the server in s->dir (s prepared by rbh_init, or stopped by
 * rbh_kill for a restart on the same database). extra: NULL-terminated extra
 * arguments or NULL. Returns 0 once the port file names the bound port, -1
 * when the process exits or 10 s pass first. */
static inline int rbh_launch(rbh_server *s, const char *const *extra)
{
    char portfile[320];
    snprintf(portfile, sizeof portfile, "%s/port", s->dir);
    unlink(portfile);
    const char *argv[40];
    int n = 0;
    if (rbh_valgrind()) {
        argv[n++] = "/usr/bin/valgrind";
        argv[n++] = "-q";
        argv[n++] = "--leak-check=full";
        argv[n++] = "--errors-for-leak-kinds=definite,indirect";
        argv[n++] = "--error-exitcode=99";
    }
    argv[n++] = rbh_bin();
    argv[n++] = "serve";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--db";
    argv[n++] = s->db;
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    if (s->config[0]) {
        argv[n++] = "--config";
        argv[n++] = s->config;
    }
    for (int i = 0; extra && extra[i] && n < 38; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        if (s->env_fault)
            rbh_fault_set("sqlite.fault_file", s->env_fault);
        execv(argv[0], (char *const *)argv);
        perror("execv");
        _exit(127);
    }
    s->pid = pid;
    int64_t deadline = rbh_now_ms() + (rbh_valgrind() ? 60000 : 10000);
    while (rbh_now_ms() < deadline) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int port = 0;
            int ok = fscanf(f, "%d", &port) == 1 && port > 0;
            fclose(f);
            if (ok) {
                s->port = port;
                return 0;
            }
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            return -1;
        }
        rbh_sleep_ms(5);
    }
    return -1;
}

/* rbh_init + rbh_launch; config (TOML text) is written to dir/rebound.toml
 * when non-NULL. */
static inline int rbh_start(rbh_server *s, const char *config, const char *const *extra)
{
    rbh_init(s);
    if (config)
        rbh_write_file(s, "rebound.toml", config, s->config, sizeof s->config);
    return rbh_launch(s, extra);
}

/* Sends sig and waits for the process; returns its wait status (-1 if none). */
static inline int rbh_kill(rbh_server *s, int sig)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, sig);
    int st = -1;
    waitpid(s->pid, &st, 0);
    s->pid = 0;
    return st;
}

/* Stops the server (SIGTERM) if running and removes its directory (kept
 * when $RBH_KEEP is set). Returns 0 when the server exited with status 0 and
 * its log shows no sanitizer report (a leak or a bad access under ASan),
 * -1 otherwise (the log is printed to stderr, the directory kept). */
static inline int rbh_stop(rbh_server *s)
{
    int rc = 0;
    if (s->pid > 0) {
        int st = rbh_kill(s, SIGTERM);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = -1;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' '%s' 2>/dev/null",
             s->log);
    if (s->log[0] && system(cmd) == 0)
        rc = -1;
    if (rc) {
        fprintf(stderr, "harness: the server in %s did not exit cleanly; its log:\n", s->dir);
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", s->log);
        if (system(cmd) != 0)
            fprintf(stderr, "(no log)\n");
        return rc;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    if (getenv("RBH_KEEP") == NULL && system(cmd) != 0)
        fprintf(stderr, "harness: cannot remove %s\n", s->dir);
    return 0;
}

/* Reads one line (without CRLF) into out; -1 on EOF/error/10 s timeout. */
static inline int rbh_readline(rbh_conn *c, char **out)
{
    int64_t deadline = rbh_now_ms() + 10000;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            *out = strndup(c->buf, n && c->buf[n - 1] == '\r' ? n - 1 : n);
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            return 0;
        }
        if (c->len == sizeof c->buf)
            return -1;
        struct pollfd p = {c->fd, POLLIN, 0};
        int left = (int)(deadline - rbh_now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return -1;
        ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
}

/* Reads one RESP reply: "+OK" / "+..." and "-ERR ..." as the line, a bulk
 * string as its contents, a null as "$-1". NULL when the connection closed.
 * Caller frees. Bulk strings larger than the buffer are not supported. */
static inline char *rbh_reply(rbh_conn *c)
{
    char *line;
    if (rbh_readline(c, &line))
        return NULL;
    if (line[0] != '$' || !strcmp(line, "$-1"))
        return line;
    long n = atol(line + 1);
    free(line);
    char *data = malloc((size_t)n + 1);
    size_t got = 0;
    while (got < (size_t)n + 2) {
        if (c->len == 0) {
            struct pollfd p = {c->fd, POLLIN, 0};
            if (poll(&p, 1, 10000) <= 0)
                break;
            ssize_t r = read(c->fd, c->buf, sizeof c->buf);
            if (r <= 0)
                break;
            c->len = (size_t)r;
        }
        size_t take = (size_t)n + 2 - got < c->len ? (size_t)n + 2 - got : c->len;
        if (got < (size_t)n)
            memcpy(data + got, c->buf, take > (size_t)n - got ? (size_t)n - got : take);
        got += take;
        memmove(c->buf, c->buf + take, c->len - take);
        c->len -= take;
    }
    if (got < (size_t)n + 2) {
        free(data);
        return NULL;
    }
    data[n] = '\0';
    return data;
}

/* Sends raw bytes; 0 or -1. */
static inline int rbh_send(rbh_conn *c, const char *data, size_t n)
{
    while (n) {
        ssize_t w = send(c->fd, data, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends one printf-formatted command line (CRLF added) and returns the
 * reply (see rbh_reply); NULL when the connection failed. Caller frees. */
static inline char *rbh_cmd(rbh_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline char *rbh_cmd(rbh_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *full = malloc((size_t)n + 3);
    memcpy(full, line, (size_t)n);
    memcpy(full + n, "\r\n", 3);
    free(line);
    int rc = rbh_send(c, full, (size_t)n + 2);
    free(full);
    return rc ? NULL : rbh_reply(c);
}

/* Connects and reads the greeting, without HELLO. NULL on failure. */
static inline rbh_conn *rbh_connect_raw(const rbh_server *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rbh_conn *c = calloc(1, sizeof *c);
    c->fd = fd;
    char *g;
    if (rbh_readline(c, &g)) {
        close(fd);
        free(c);
        return NULL;
    }
    snprintf(c->greeting, sizeof c->greeting, "%s", g);
    free(g);
    return c;
}

static inline void rbh_close(rbh_conn *c)
{
    if (c) {
        close(c->fd);
        free(c);
    }
}

/* Faktory's HELLO pwdhash: SHA-256 of password then salt, hashed iters
 * times in all, as 64 hex digits (and a NUL) in out. */
static inline void rbh_pwdhash(const char *pw, const char *salt, long iters, char out[65])
{
    unsigned char h[32];
    unsigned int n;
    size_t lp = strlen(pw), ls = strlen(salt);
    char *buf = malloc(lp + ls + 1);
    memcpy(buf, pw, lp);
    memcpy(buf + lp, salt, ls + 1);
    EVP_Digest(buf, lp + ls, h, &n, EVP_sha256(), NULL);
    free(buf);
    for (long i = 1; i < iters; i++)
        EVP_Digest(h, 32, h, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", h[i]);
}

/* Connects, reads the greeting and says HELLO (with wid when non-NULL, and
 * the pwdhash of password when the greeting asks for one). NULL when any
 * step fails. */
static inline rbh_conn *rbh_connect_pw(const rbh_server *s, const char *wid, const char *password)
{
    rbh_conn *c = rbh_connect_raw(s);
    if (!c)
        return NULL;
    char pw[80] = "";
    json_t *hi = json_loads(c->greeting + 4, 0, NULL); /* "+HI {...}" */
    const char *salt = json_string_value(json_object_get(hi, "s"));
    if (password && salt) {
        char h[65];
        rbh_pwdhash(password, salt, (long)json_integer_value(json_object_get(hi, "i")), h);
        snprintf(pw, sizeof pw, ",\"pwdhash\":\"%s\"", h);
    }
    json_decref(hi);
    char *r = wid ? rbh_cmd(c, "HELLO {\"v\":2,\"wid\":\"%s\",\"hostname\":\"test\",\"pid\":1%s}",
                            wid, pw)
                  : rbh_cmd(c, "HELLO {\"v\":2%s}", pw);
    bool ok = r && !strcmp(r, "+OK");
    free(r);
    if (!ok) {
        rbh_close(c);
        return NULL;
    }
    return c;
}

/* Connects, reads the greeting and says HELLO (with wid when non-NULL, no
 * password). NULL when any step fails. */
static inline rbh_conn *rbh_connect(const rbh_server *s, const char *wid)
{
    return rbh_connect_pw(s, wid, NULL);
}

/* True when the server has closed c (reads EOF within 5 s). */
static inline bool rbh_closed(rbh_conn *c)
{
    char *line;
    while (rbh_readline(c, &line) == 0)
        free(line);
    return true;
}

/* Parses a reply as JSON (NULL when it is not JSON); frees reply. */
static inline json_t *rbh_json(char *reply)
{
    json_t *v = reply ? json_loads(reply, JSON_DECODE_ANY, NULL) : NULL;
    free(reply);
    return v;
}

/* A JSON path lookup: rbh_get(v, "faktory.tasks.Dead.size"). Borrowed. */
static inline json_t *rbh_get(json_t *v, const char *path)
{
    char key[128];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

/* INFO's value at path as an integer (-1 when absent). */
static inline long long rbh_info_int(rbh_conn *c, const char *path)
{
    json_t *v = rbh_json(rbh_cmd(c, "INFO"));
    json_t *x = rbh_get(v, path);
    long long n = x ? (long long)json_integer_value(x) : -1;
    json_decref(v);
    return n;
}

/* Polls INFO until its value at path equals want or timeout_ms passes;
 * returns the last value read. For a count another transaction of the
 * server may still be committing (distributed mode's maintenance sweep). */
static inline long long rbh_wait_info_int(rbh_conn *c, const char *path, long long want,
                                          int timeout_ms)
{
    int64_t deadline = rbh_now_ms() + timeout_ms;
    long long n;
    while ((n = rbh_info_int(c, path)) != want && rbh_now_ms() < deadline)
        rbh_sleep_ms(10);
    return n;
}

/* Sends data on c — commands ending in a FETCH that finds nothing and
 * waits — and returns once s's INFO shows one more waiting FETCH
 * (rebound.fetches_waiting), asked over a connection of its own: the
 * server has read the FETCH and parked it. False after 10 s. */
static inline bool rbh_send_parked(const rbh_server *s, rbh_conn *c, const char *data)
{
    rbh_conn *i = rbh_connect(s, NULL);
    long long before = rbh_info_int(i, "rebound.fetches_waiting");
    bool ok = rbh_send(c, data, strlen(data)) == 0;
    int64_t end = rbh_now_ms() + 10000;
    while (ok && rbh_info_int(i, "rebound.fetches_waiting") <= before && (ok = rbh_now_ms() < end))
        rbh_sleep_ms(5);
    rbh_close(i);
    return ok;
}

/* FETCH queues on c: the jid of the job fetched (caller frees), or NULL
 * for none. */
static inline char *rbh_fetch_jid(rbh_conn *c, const char *queues)
{
    json_t *j = rbh_json(rbh_cmd(c, "FETCH %s", queues));
    const char *jid = json_string_value(json_object_get(j, "jid"));
    char *out = jid ? strdup(jid) : NULL;
    json_decref(j);
    return out;
}

/* The number a FETCH reply's jid holds after its first skip characters
 * ("n-0000042", skip 2: 42), or -1 when the reply is no job. Frees reply. */
static inline int rbh_jid_number(char *reply, size_t skip)
{
    json_t *j = rbh_json(reply);
    const char *jid = json_string_value(json_object_get(j, "jid"));
    int n = jid && strlen(jid) > skip ? atoi(jid + skip) : -1;
    json_decref(j);
    return n;
}

/* JOB {"jid":J}'s "state" (caller frees) or NULL when there is no such job. */
static inline char *rbh_job_state(rbh_conn *c, const char *jid)
{
    json_t *v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jid));
    const char *st = json_string_value(json_object_get(v, "state"));
    char *out = st ? strdup(st) : NULL;
    json_decref(v);
    return out;
}

/* A working job's lease end on the server's clock (wall ms), from JOB's
 * "reserved_until"; 0 when jid is not working. */
static inline int64_t rbh_lease_end_ms(rbh_conn *c, const char *jid)
{
    json_t *v = rbh_json(rbh_cmd(c, "JOB {\"jid\":\"%s\"}", jid));
    const char *until = json_string_value(json_object_get(v, "reserved_until"));
    int64_t ms = 0;
    if (!until || rb_time_parse_rfc3339(until, &ms))
        ms = 0;
    json_decref(v);
    return ms;
}

#ifdef RBH_PG
/* Starts s2, a second node on s's database with config (its own schema
 * left unused); the test fails when it does not start. */
static inline void rbh_launch_second(rbh_server *s2, const rbh_server *s, const char *config)
{
    rbh_init(s2);
    snprintf(s2->db, sizeof s2->db, "%s", s->db);
    rbh_write_file(s2, "rebound.toml", config, s2->config, sizeof s2->config);
    cr_assert_eq(rbh_launch(s2, NULL), 0, "the second node did not start (see %s)", s2->log);
}
#endif

/* Polls until the job's state equals want (NULL = gone) or timeout_ms
 * passes. Returns true when reached. */
static inline bool rbh_wait_state(rbh_conn *c, const char *jid, const char *want, int timeout_ms)
{
    int64_t deadline = rbh_now_ms() + timeout_ms;
    do {
        char *st = rbh_job_state(c, jid);
        bool ok = want ? st && !strcmp(st, want) : !st;
        free(st);
        if (ok)
            return true;
        rbh_sleep_ms(10);
    } while (rbh_now_ms() < deadline);
    return false;
}

/* Sends a command and returns whether its reply equals want exactly. */
static inline bool rbh_expect(rbh_conn *c, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline bool rbh_expect(rbh_conn *c, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    char *r = rbh_cmd(c, "%s", line);
    bool ok = r && !strcmp(r, want);
    if (!ok)
        fprintf(stderr, "expected '%s' for '%.80s', got '%s'\n", want, line, r ? r : "(closed)");
    free(line);
    free(r);
    return ok;
}

#endif
