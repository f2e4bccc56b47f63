/* systemd's notify-socket protocol: READY, STOPPING, STATUS and WATCHDOG
 * datagrams to $NOTIFY_SOCKET (sdnotify.h). */
#include "server/sdnotify.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <event2/event.h>

#include "common/log.h"

static bool warned; /* a broken $NOTIFY_SOCKET is reported once, not per keep-alive */

static int notify_failed(const char *what, const char *addr)
{
    if (!warned)
        rb_log(RB_LOG_WARN, "systemd notification: %s '%s'%s%s", what, addr, errno ? ": " : "",
               errno ? strerror(errno) : "");
    warned = true;
    return -1;
}

int rb_sdnotify(const char *state)
{
    const char *addr = getenv("NOTIFY_SOCKET");
    if (!addr || !*addr)
        return 0;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = strlen(addr);
    errno = 0;
    if ((addr[0] != '/' && addr[0] != '@') || len < 2 || len >= sizeof sun.sun_path)
        return notify_failed("NOTIFY_SOCKET is not a socket path or @name:", addr);
    memcpy(sun.sun_path, addr, len);
    if (addr[0] == '@')
        sun.sun_path[0] = '\0'; /* abstract: the name is the bytes after the NUL */
    /* An abstract address's length counts its bytes exactly; a path's its NUL. */
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len +
                                  (addr[0] == '/' ? 1 : 0));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return notify_failed("cannot make a socket for", addr);
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sun, salen);
    int e = errno;
    close(fd);
    errno = e;
    if (n < 0 || (size_t)n != strlen(state))
        return notify_failed("cannot send to", addr);
    return 1;
}

uint64_t rb_sdnotify_watchdog_usec(void)
{
    const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    if (!us || !*us)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(us, &end, 10);
    if (errno || *end || us[0] == '-' || v == 0)
        return 0;
    if (pid && *pid) {
        long long p = strtoll(pid, &end, 10);
        if (*end || p != (long long)getpid())
            return 0; /* the watchdog is meant for another process */
    }
    return (uint64_t)v;
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    rb_sdnotify("WATCHDOG=1");
}

struct event *rb_sdnotify_watchdog_start(struct event_base *base)
{
    uint64_t usec = rb_sdnotify_watchdog_usec();
    const char *addr = getenv("NOTIFY_SOCKET");
    if (!usec || !addr || !*addr)
        return NULL;
    uint64_t half = usec / 2 ? usec / 2 : 1; /* sd_watchdog_enabled(3): ping at half the period */
    struct timeval tv = {(time_t)(half / 1000000), (suseconds_t)(half % 1000000)};
    struct event *ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
    event_add(ev, &tv);
    rb_log(RB_LOG_INFO, "systemd watchdog: keep-alive every %llu ms",
           (unsigned long long)(half / 1000));
    rb_sdnotify("WATCHDOG=1");
    return ev;
}
