/* Invariant checks: rb_assert(cond, fmt, ...) states a property of a data
 * structure where it can break; when it does not hold the process prints
 * where and why on stderr and aborts (a core for the debugger, and the
 * durable store is recovered from disk on restart). Always on, in the
 * release binary too, as Redis's serverAssert: each check is a few
 * comparisons at a state transition (nothing walks a list), and a server
 * whose indexes disagree with themselves would go on to store and hand
 * out the wrong jobs. Any thread may call it. */
#ifndef RB_COMMON_CHECK_H
#define RB_COMMON_CHECK_H

/* Checks cond; when false, never returns. fmt (printf) says what was
 * expected, with the values that break it. */
#define rb_assert(cond, ...) \
    ((cond) ? (void)0 : rb_assert_fail(#cond, __FILE__, __LINE__, __VA_ARGS__))

/* Prints "rebound: invariant broken at FILE:LINE: COND: MESSAGE" to stderr
 * and aborts. */
_Noreturn void rb_assert_fail(const char *cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
