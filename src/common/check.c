/* rb_assert's failure path (check.h). */
#include "common/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void rb_assert_fail(const char *cond, const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rebound: invariant broken at %s:%d: %s: %s\n", file, line, cond, msg);
    fflush(stderr);
    abort();
}
