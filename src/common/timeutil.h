/* Wall-clock and monotonic time in milliseconds, and the text forms of time
 * Rebound reads and writes: RFC 3339 (job fields) and HTTP-date (Retry-After). */
#ifndef RB_COMMON_TIMEUTIL_H
#define RB_COMMON_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t rb_now_ms(void);
/* Microseconds since the Unix epoch (CLOCK_REALTIME): the instants a job's
 * timestamps carry (created_at, enqueued_at, failed_at, a batch's
 * created_at), written with rb_time_format_us. */
int64_t rb_now_us(void);
/* rb_now_us, but never before the start of millisecond ms: the microsecond
 * instant of something decided at ms (an enqueue, a failure) read a moment
 * later, so that its text agrees with the decision's millisecond. */
int64_t rb_now_us_from(int64_t ms);
/* Milliseconds from an arbitrary origin that never goes backwards. */
int64_t rb_mono_ms(void);

#define RB_TIME_STRLEN 32
/* Writes ms as "2026-11-21T10:00:00.123Z" (UTC, millisecond precision) into
 * out (at least RB_TIME_STRLEN bytes) and returns out. */
char *rb_time_format(int64_t ms, char *out);
/* Writes us as "2026-11-21T10:00:00.123456Z" (UTC, microseconds, the
 * precision of a job's own timestamps: Faktory writes RFC 3339 with
 * fractions, and clients compare them with their clocks) into out (at
 * least RB_TIME_STRLEN bytes) and returns out. */
char *rb_time_format_us(int64_t us, char *out);

/* Parses an RFC 3339 date-time ("2026-11-21T10:00:00Z", fractional seconds
 * and numeric offsets allowed, 't'/'z'/' ' separators accepted).
 * Returns 0 and sets *ms, or RB_EPARSE and leaves *ms unchanged. */
int rb_time_parse_rfc3339(const char *s, int64_t *ms);
/* The same to the microsecond (further digits dropped) into *us. */
int rb_time_parse_rfc3339_us(const char *s, int64_t *us);

/* Parses an HTTP-date (RFC 9110 §5.6.7): IMF-fixdate
 * "Sun, 06 Nov 1994 08:49:37 GMT", and the obsolete RFC 850 and asctime forms.
 * Returns 0 and sets *ms, or RB_EPARSE. */
int rb_time_parse_http_date(const char *s, int64_t *ms);

/* Days since 1970-01-01 of a proleptic Gregorian date (no time zone, no libc). */
int64_t rb_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
