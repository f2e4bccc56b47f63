/* The pure rules of cron (issue 16 item 3): the five-field schedule syntax
 * and the next tick after a time in an IANA time zone. No I/O besides the
 * C library's time zone database; used by the config loader, the server's
 * timer and `rebound cron`. */
#ifndef RB_ENGINE_CRON_H
#define RB_ENGINE_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* The meta key prefix of a [[cron]] entry's last fired tick (a stored
 * row "cron:NAME" = decimal Unix seconds, in either backend). */
#define RB_CRON_META_KEY "cron:"

/* A parsed schedule: one bit per allowed value of each field. */
typedef struct rb_cron_spec {
    uint64_t minute; /* bits 0..59 */
    uint32_t hour;   /* bits 0..23 */
    uint32_t dom;    /* bits 1..31 */
    uint16_t month;  /* bits 1..12 */
    uint8_t dow;     /* bits 0..6, 0 = Sunday (7 is read as 0) */
    /* The field was written starting with '*' ("*", "*\/2"): Vixie's rule
     * looks at these. When both day fields are restricted a day matches
     * when either matches; otherwise both must. */
    bool dom_star, dow_star;
    bool hour_star; /* every hour: such a schedule also fires in a repeated hour */
} rb_cron_spec;

/* Parses a schedule: five fields "minute hour day-of-month month
 * day-of-week" separated by spaces or tabs, each a comma list of "*",
 * "N", "N-M", with an optional "/STEP", months jan-dec and days sun-sat by
 * name (any case), day-of-week 7 = Sunday; or one of @yearly, @annually,
 * @monthly, @weekly, @daily, @midnight, @hourly. Returns 0 with *out
 * filled, or RB_EPARSE with err "column C: what" (C 1-based, in text). */
int rb_cron_parse(const char *text, rb_cron_spec *out, rb_err *err);

/* Whether tz is a time zone name this system's tz database holds
 * ("UTC", "Europe/Berlin"): a relative path without "..", found as a file
 * under $TZDIR or /usr/share/zoneinfo. */
bool rb_cron_zone_valid(const char *tz);

/* The first tick of s strictly after after_s (Unix seconds), evaluated on
 * the wall clock of zone tz (NULL or "" = UTC), within ten years. Returns 0
 * with *next_s set, or RB_ENOENT when none (e.g. "0 0 31 2 *"), or
 * RB_EINVAL for an unknown zone.
 *
 * Daylight saving time: wall times a spring-forward skips fire once, at the
 * first minute after the gap (02:30 in New York on that day fires at
 * 03:00 EDT); wall times a fall-back repeats fire once, the first time,
 * unless the hour field is '*' (then each real minute that matches fires,
 * as Vixie cron does for wildcard jobs).
 *
 * Thread-safety: the C library reads the zone from the process-wide TZ
 * variable, so this sets TZ under a mutex for the computation and puts the
 * old value back; other threads that call localtime() meanwhile may see tz.
 * Rebound's own code formats times in UTC only (gmtime_r). */
int rb_cron_next(const rb_cron_spec *s, const char *tz, int64_t after_s, int64_t *next_s);

/* The rule for ticks missed while no server ran (docs/enterprise.md,
 * "downtime"), the same on a single node and in distributed mode: given
 * the entry's last fired tick last_s (0 = none stored: a new entry, which
 * starts with its next tick) and the time now_s, *missed is whether a tick
 * in (last_s, now_s] was not fired. Returns the tick to fire at start:
 * with run_once the latest missed tick (one catch-up job), else 0 (the
 * missed ticks are skipped; 0 too when none was missed). */
int64_t rb_cron_catch_up(const rb_cron_spec *s, const char *tz, bool run_once, int64_t last_s,
                         int64_t now_s, bool *missed);

#endif
