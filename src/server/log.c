/* The server's log (see log.h). */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"

static rb_log_level min_level = RB_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

int rb_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

void rb_log_set_level(rb_log_level l)
{
    min_level = l;
}

void rb_log(rb_log_level l, const char *fmt, ...)
{
    if (l < min_level)
        return;
    char ts[RB_TIME_STRLEN], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s %s\n", rb_time_format(rb_now_ms(), ts), names[l], line);
}
