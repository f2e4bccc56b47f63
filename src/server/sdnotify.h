/* systemd's service notification protocol (sd_notify(3)), written here
 * rather than linked from libsystemd: one datagram per state change to the
 * AF_UNIX socket named by $NOTIFY_SOCKET, and watchdog keep-alives from the
 * event loop when $WATCHDOG_USEC asks for them. Without $NOTIFY_SOCKET every
 * call does nothing, so a server started by hand behaves as before. */
#ifndef RB_SERVER_SDNOTIFY_H
#define RB_SERVER_SDNOTIFY_H

#include <stdint.h>

struct event_base;
struct event;

/* Sends state (e.g. "READY=1\nSTATUS=...") to $NOTIFY_SOCKET. An address
 * starting with '/' is a socket file, one starting with '@' an abstract
 * socket (the '@' becomes a NUL byte). Returns 1 when the datagram went
 * out, 0 when $NOTIFY_SOCKET is unset or empty, -1 when it is malformed or
 * sending failed (logged once as a warning; the server carries on). */
int rb_sdnotify(const char *state);

/* The keep-alive interval systemd asked for, in microseconds: $WATCHDOG_USEC
 * when it is a positive integer and $WATCHDOG_PID is unset or this process's
 * pid, else 0. */
uint64_t rb_sdnotify_watchdog_usec(void);

/* With a watchdog interval (above) and $NOTIFY_SOCKET set, adds a timer to
 * base that sends "WATCHDOG=1" every half interval, so that a loop that
 * stops turning stops the keep-alives and systemd restarts the service.
 * Returns the timer (free it with event_free before base), or NULL when no
 * watchdog is asked for. */
struct event *rb_sdnotify_watchdog_start(struct event_base *base);

#endif
