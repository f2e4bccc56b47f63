/* One line per notable event to stderr: "2026-11-21T10:00:00.000Z level msg". */
#ifndef RB_SERVER_LOG_H
#define RB_SERVER_LOG_H

typedef enum rb_log_level { RB_LOG_DEBUG, RB_LOG_INFO, RB_LOG_WARN, RB_LOG_ERROR } rb_log_level;

/* Parses "debug", "info", "warn", "error"; returns -1 when unknown. */
int rb_log_level_parse(const char *s);
void rb_log_set_level(rb_log_level l);
void rb_log(rb_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
