/* The error codes' messages and the rb_err helpers. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *rb_strerror(int code)
{
    switch (code) {
    case RB_OK: return "success";
#define RB__ERR_CASE(name, msg) case RB_##name: return msg;
    RB_ERRNO_MAP(RB__ERR_CASE)
#undef RB__ERR_CASE
    default: return "unknown error";
    }
}

int rb_err_set(rb_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void rb_err_prefix(rb_err *err, const char *fmt, ...)
{
    char head[256], old[sizeof err->msg];
    va_list ap;
    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", head, old);
}

const char *rb_err_msg(const rb_err *err)
{
    if (!err)
        return "unknown error";
    return err->msg[0] ? err->msg : rb_strerror(err->code);
}
