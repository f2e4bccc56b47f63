/* The server under systemd's notify protocol (src/server/sdnotify.c): the
 * test binds the datagram socket systemd would, starts `rebound serve` with
 * $NOTIFY_SOCKET (a file, or an abstract '@' name) pointing at it, and reads
 * what arrives: READY=1 once the port accepts and the stored jobs are
 * recovered, WATCHDOG=1 again and again when $WATCHDOG_USEC asks for it
 * (never when it does not, or when $WATCHDOG_PID names another process),
 * STOPPING=1 on SIGTERM. A malformed $NOTIFY_SOCKET is logged and the
 * server runs as without one. The last tests call rb_sdnotify and
 * rb_sdnotify_watchdog_usec in this process. */
#include <criterion/criterion.h>

#include <sys/un.h>

#include "harness.h"

/* The notify socket systemd would bind: a datagram socket at dir/notify,
 * or at an abstract name. addr gets what $NOTIFY_SOCKET should say. */
static int notify_bind(const rbh_server *s, bool abstract, char *addr, size_t n)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    socklen_t len;
    if (abstract) {
        snprintf(addr, n, "@rebound-test-notify-%d-%lld", (int)getpid(),
                 (long long)(rbh_now_ms() % 1000000));
        memcpy(sun.sun_path, addr, strlen(addr));
        sun.sun_path[0] = '\0';
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(addr));
    } else {
        snprintf(addr, n, "%s/notify", s->dir);
        snprintf(sun.sun_path, sizeof sun.sun_path, "%s", addr);
        len = sizeof sun;
    }
    cr_assert(bind(fd, (struct sockaddr *)&sun, len) == 0, "bind %s: %s", addr, strerror(errno));
    /* a guard against a hang, not a timed assertion: messages come in order */
    struct timeval tv = {rbh_valgrind() ? 120 : 60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* The next datagram (NUL-terminated) into buf; false on timeout. */
static bool notify_next(int fd, char *buf, size_t n)
{
    ssize_t r = recv(fd, buf, n - 1, 0);
    if (r < 0)
        return false;
    buf[r] = '\0';
    return true;
}

/* Whether a message holds the assignment line (e.g. "READY=1"). */
static bool has_line(const char *msg, const char *line)
{
    size_t l = strlen(line);
    for (const char *p = msg; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (!strncmp(p, line, l) && (p[l] == '\n' || p[l] == '\0'))
            return true;
    }
    return false;
}

/* Starts `rebound serve` in s->dir with the environment given (NAME=VALUE
 * strings, NULL-terminated) and returns at once, without waiting for the
 * port: the test learns of readiness from the notify socket alone. */
static void launch_env(rbh_server *s, const char *const *env)
{
    char portfile[320];
    snprintf(portfile, sizeof portfile, "%s/port", s->dir);
    unlink(portfile);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execl(rbh_bin(), rbh_bin(), "serve", "--listen", "127.0.0.1:0", "--http-listen", "off",
              "--db", s->db, "--port-file", portfile, (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    s->port = 0;
}

/* Reads the port file the server wrote before it said READY. */
static int read_port(const rbh_server *s)
{
    char path[320];
    snprintf(path, sizeof path, "%s/port", s->dir);
    FILE *f = fopen(path, "r");
    int port = 0;
    if (f) {
        if (fscanf(f, "%d", &port) != 1)
            port = 0;
        fclose(f);
    }
    return port;
}

/* A datagram after READY and before STOPPING: what the test skips while it
 * waits for something else. */
static void expect_next(int fd, const char *want, int *watchdogs)
{
    char msg[1024];
    for (;;) {
        cr_assert(notify_next(fd, msg, sizeof msg), "no '%s' arrived", want);
        if (has_line(msg, want))
            return;
        if (watchdogs && has_line(msg, "WATCHDOG=1")) {
            (*watchdogs)++;
            continue;
        }
        cr_assert_fail("expected '%s', got '%s'", want, msg);
    }
}

static char env_socket[400], env_usec[64], env_pid[64];

Test(sdnotify, ready_after_recovery_and_listening_watchdog_and_stopping)
{
    rbh_server s;
    /* a stored job first, so READY can be checked against recovery */
    const char *const no_http[] = {"--http-listen", "off", NULL};
    cr_assert(rbh_start(&s, NULL, no_http) == 0);
    rbh_conn *c = rbh_connect(&s, "w1");
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"sdnotify-1\",\"jobtype\":\"t\",\"args\":[]}"));
    rbh_close(c);
    int st = rbh_kill(&s, SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    char addr[300];
    int fd = notify_bind(&s, false, addr, sizeof addr);
    snprintf(env_socket, sizeof env_socket, "NOTIFY_SOCKET=%s", addr);
    /* 200 ms: a keep-alive every 100 ms, so several arrive during the test */
    const char *env[] = {env_socket, "WATCHDOG_USEC=200000", NULL};
    launch_env(&s, env);

    char msg[1024];
    cr_assert(notify_next(fd, msg, sizeof msg), "nothing arrived on the notify socket");
    cr_assert(has_line(msg, "READY=1"), "first message is not READY=1: '%s'", msg);
    /* at READY the port is bound and accepting, and the job is recovered */
    s.port = read_port(&s);
    cr_assert(s.port > 0, "READY=1 came before the port file was written");
    c = rbh_connect(&s, "w2");
    cr_assert(c, "READY=1 came but the port does not accept");
    char *state = rbh_job_state(c, "sdnotify-1");
    cr_assert(state && !strcmp(state, "enqueued"), "job after recovery: %s", state ? state : "-");
    free(state);
    rbh_close(c);

    /* keep-alives keep coming from the loop */
    for (int i = 0; i < 3; i++) {
        cr_assert(notify_next(fd, msg, sizeof msg), "keep-alive %d did not arrive", i + 1);
        cr_assert(has_line(msg, "WATCHDOG=1"), "expected WATCHDOG=1, got '%s'", msg);
    }

    kill(s.pid, SIGTERM);
    int watchdogs = 0;
    expect_next(fd, "STOPPING=1", &watchdogs);
    close(fd);
    cr_assert(rbh_stop(&s) == 0);
}

Test(sdnotify, abstract_socket_without_watchdog)
{
    rbh_server s;
    rbh_init(&s);
    char addr[300];
    int fd = notify_bind(&s, true, addr, sizeof addr);
    snprintf(env_socket, sizeof env_socket, "NOTIFY_SOCKET=%s", addr);
    const char *env[] = {env_socket, NULL};
    launch_env(&s, env);
    char msg[1024];
    cr_assert(notify_next(fd, msg, sizeof msg), "nothing arrived on %s", addr);
    cr_assert(has_line(msg, "READY=1"), "got '%s'", msg);
    s.port = read_port(&s);
    rbh_conn *c = rbh_connect(&s, "w1");
    cr_assert(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"sdnotify-2\",\"jobtype\":\"t\",\"args\":[]}"));
    rbh_close(c);
    kill(s.pid, SIGTERM);
    /* no WATCHDOG_USEC: the next message is STOPPING, no keep-alive before it */
    expect_next(fd, "STOPPING=1", NULL);
    close(fd);
    cr_assert(rbh_stop(&s) == 0);
}

Test(sdnotify, watchdog_for_another_pid_is_not_ours)
{
    rbh_server s;
    rbh_init(&s);
    char addr[300];
    int fd = notify_bind(&s, false, addr, sizeof addr);
    snprintf(env_socket, sizeof env_socket, "NOTIFY_SOCKET=%s", addr);
    snprintf(env_usec, sizeof env_usec, "WATCHDOG_USEC=20000");
    snprintf(env_pid, sizeof env_pid, "WATCHDOG_PID=%d", (int)getpid()); /* the test, not the server */
    const char *env[] = {env_socket, env_usec, env_pid, NULL};
    launch_env(&s, env);
    char msg[1024];
    cr_assert(notify_next(fd, msg, sizeof msg));
    cr_assert(has_line(msg, "READY=1"), "got '%s'", msg);
    s.port = read_port(&s);
    rbh_conn *c = rbh_connect(&s, "w1"); /* a round trip through the loop */
    cr_assert(c);
    rbh_close(c);
    kill(s.pid, SIGTERM);
    expect_next(fd, "STOPPING=1", NULL);
    close(fd);
    cr_assert(rbh_stop(&s) == 0);
}

Test(sdnotify, malformed_socket_is_logged_and_ignored)
{
    rbh_server s;
    rbh_init(&s);
    const char *env[] = {"NOTIFY_SOCKET=relative/notify", "WATCHDOG_USEC=50000", NULL};
    launch_env(&s, env);
    int64_t deadline = rbh_now_ms() + (rbh_valgrind() ? 60000 : 20000);
    while (!(s.port = read_port(&s)) && rbh_now_ms() < deadline)
        rbh_sleep_ms(10);
    cr_assert(s.port > 0, "the server did not start");
    rbh_conn *c = rbh_connect(&s, "w1");
    cr_assert(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"sdnotify-3\",\"jobtype\":\"t\",\"args\":[]}"));
    rbh_close(c);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -q \"systemd notification: NOTIFY_SOCKET is not a socket "
                              "path or @name: 'relative/notify'\" '%s'", s.log);
    cr_assert(system(cmd) == 0, "no warning in the log");
    snprintf(cmd, sizeof cmd, "test $(grep -c 'systemd notification' '%s') -eq 1", s.log);
    cr_assert(system(cmd) == 0, "the warning is not logged exactly once");
    cr_assert(rbh_stop(&s) == 0);
}

/* The protocol functions themselves, in this process. */
#include "server/sdnotify.h"

Test(sdnotify, send_returns_what_happened)
{
    rbh_server s;
    rbh_init(&s);
    char addr[300], msg[256];
    unsetenv("NOTIFY_SOCKET");
    cr_assert_eq(rb_sdnotify("READY=1"), 0, "no NOTIFY_SOCKET: nothing to do");
    setenv("NOTIFY_SOCKET", "", 1);
    cr_assert_eq(rb_sdnotify("READY=1"), 0, "an empty NOTIFY_SOCKET is unset");
    for (int abstract = 0; abstract <= 1; abstract++) {
        int fd = notify_bind(&s, abstract, addr, sizeof addr);
        setenv("NOTIFY_SOCKET", addr, 1);
        cr_assert_eq(rb_sdnotify("STATUS=x\nREADY=1"), 1, "%s", addr);
        cr_assert(notify_next(fd, msg, sizeof msg));
        cr_assert_str_eq(msg, "STATUS=x\nREADY=1");
        close(fd);
        if (!abstract)
            unlink(addr);
    }
    setenv("NOTIFY_SOCKET", "relative", 1);
    cr_assert_eq(rb_sdnotify("READY=1"), -1);
    setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
    cr_assert_eq(rb_sdnotify("READY=1"), -1, "nobody listens there");
    rbh_stop(&s);
}

Test(sdnotify, watchdog_usec_parsing)
{
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    unsetenv("WATCHDOG_PID");
    unsetenv("WATCHDOG_USEC");
    cr_assert_eq(rb_sdnotify_watchdog_usec(), 0);
    setenv("WATCHDOG_USEC", "30000000", 1);
    cr_assert_eq(rb_sdnotify_watchdog_usec(), 30000000);
    setenv("WATCHDOG_PID", pid, 1);
    cr_assert_eq(rb_sdnotify_watchdog_usec(), 30000000, "the watchdog is ours");
    setenv("WATCHDOG_PID", "1", 1);
    cr_assert_eq(rb_sdnotify_watchdog_usec(), 0, "the watchdog is pid 1's");
    unsetenv("WATCHDOG_PID");
    const char *bad[] = {"0", "-5", "12x", "abc", "99999999999999999999999", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("WATCHDOG_USEC", bad[i], 1);
        cr_assert_eq(rb_sdnotify_watchdog_usec(), 0, "WATCHDOG_USEC='%s'", bad[i]);
    }
}
