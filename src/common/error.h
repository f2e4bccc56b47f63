/* One error space for all of Rebound: 0 is success, every failure a negative
 * RB_E* code, with an optional human message carried in an rb_err. */
#ifndef RB_COMMON_ERROR_H
#define RB_COMMON_ERROR_H

#include <stddef.h>

/* X(name, message): the single list the codes and rb_strerror() come from. */
#define RB_ERRNO_MAP(X)                                   \
    X(EINVAL, "invalid argument")                         \
    X(ENOMEM, "out of memory")                            \
    X(ERANGE, "value out of range")                       \
    X(ENOENT, "not found")                                \
    X(EEXIST, "already exists")                           \
    X(EPARSE, "parse error")                              \
    X(ESTATE, "invalid state")                            \
    X(EAUTH, "authentication failed")                     \
    X(ELIMIT, "limit exceeded")                           \
    X(EIO, "i/o error")                                   \
    X(ESTORE, "storage error")                            \
    X(ECONN, "connection error")                          \
    X(EPROTO, "protocol error")                           \
    X(ETIMEDOUT, "timed out")                             \
    X(EDOUBT, "outcome unknown")                          \
    X(EVERSION, "unsupported version")                    \
    X(ENOTUNIQUE, "not unique")

enum rb_errno {
    RB_OK = 0,
#define RB__ERR_ENUM(name, msg) RB_##name,
    RB__ERR_FIRST = -100,
    RB_ERRNO_MAP(RB__ERR_ENUM)
#undef RB__ERR_ENUM
};

/* Static text for a code; never NULL ("unknown error" for foreign codes). */
const char *rb_strerror(int code);

/* An error with its message for people: lowercase, no trailing period, the
 * bad value quoted. Zero-initialise; rb_err_set() fills it. */
typedef struct rb_err {
    int code;
    char msg[512];
} rb_err;

/* Sets err (if non-NULL) to code and the printf-formatted message, and returns
 * code, so callers can write `return rb_err_set(err, RB_EINVAL, "...")`. */
int rb_err_set(rb_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err's message with the formatted text and ": " (for context such as
 * a field or file name). No-op when err is NULL. */
void rb_err_prefix(rb_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* err's message, or rb_strerror(code) when no message was set. */
const char *rb_err_msg(const rb_err *err);

#endif
