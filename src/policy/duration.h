/* Durations as people write them ("250ms", "5s", "1m30s", "2h", "1d", or a
 * plain number of seconds), parsed to whole milliseconds. Shared by every
 * policy dialect and by the configuration; FTL's stricter grammar has its own
 * entry point. */
#ifndef RB_POLICY_DURATION_H
#define RB_POLICY_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/error.h"

/* Longest text rb_duration_format() writes, NUL included. */
#define RB_DURATION_STRLEN 48

/* The general grammar: an optional leading '-', then either a plain number of
 * seconds ("5", "0.25") or one or more components NUMBER UNIT with units
 * d, h, m, s, ms, each at most once and from largest to smallest ("1m30s";
 * "30s1m" is rejected). A component may exceed its natural range ("90s") and
 * may have a fraction ("1.5s") as long as the total is a whole number of
 * milliseconds. No whitespace. On success returns 0 and sets *ms; otherwise
 * returns RB_EPARSE (bad text) or RB_ERANGE (does not fit in int64 ms) with
 * err saying "invalid duration '<s>': <why>", and *ms untouched. */
int rb_duration_parse(const char *s, int64_t *ms, rb_err *err);

/* FTL's grammar (semantics.md §4): one or more components NON-NEGATIVE-INTEGER
 * UNIT with units d, h, m, s only, each at most once, from largest to
 * smallest; no sign, no fraction, no plain numbers, no "ms". Same returns. */
int rb_duration_parse_ftl(const char *s, int64_t *ms, rb_err *err);

/* A duration held in JSON: a string in the general grammar, or a number of
 * seconds (integer or real; the result must be whole milliseconds). Any other
 * JSON type is RB_EINVAL ("must be a duration ..."). Same returns otherwise. */
int rb_duration_from_json(const json_t *v, int64_t *ms, rb_err *err);

/* Writes ms in the shortest component form ("1m30s", "250ms", "1d2h", "0s",
 * "-5s") into out (n bytes, RB_DURATION_STRLEN is always enough); returns
 * out. The text parses back to ms with rb_duration_parse(). */
char *rb_duration_format(int64_t ms, char *out, size_t n);

#endif
