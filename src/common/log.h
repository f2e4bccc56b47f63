/* One line per notable event to stderr, in one of two formats:
 * text "2026-11-21T10:00:00.000Z level msg", or json, one object per line:
 * {"time":"2026-11-21T10:00:00.000Z","level":"info","msg":"...","jid":"..."}
 * (docs/operations.md, "Logs"). Safe to call from any thread. */
#ifndef RB_COMMON_LOG_H
#define RB_COMMON_LOG_H

#include <stdbool.h>

typedef enum rb_log_level { RB_LOG_DEBUG, RB_LOG_INFO, RB_LOG_WARN, RB_LOG_ERROR } rb_log_level;

/* Parses "debug", "info", "warn", "error"; returns -1 when unknown. */
int rb_log_level_parse(const char *s);
void rb_log_set_level(rb_log_level l);
/* json false: text lines (the default); true: JSON lines. Set it before
 * other threads log. */
void rb_log_set_json(bool json);
void rb_log(rb_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* As rb_log, with structured fields for the JSON format: kv holds key,
 * value pairs and ends with a NULL key; a pair whose value is NULL is left
 * out. Text lines show the message alone (it names what matters). Keys
 * used: jid, queue, jobtype, wid, bid, cron. Build kv with RB_LOG_KV. */
void rb_log_kv(rb_log_level l, const char *const *kv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define RB_LOG_KV(...) ((const char *const[]){__VA_ARGS__, NULL})

#endif
