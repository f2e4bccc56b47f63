/* A TOML 1.0 parser: text in, a tree of tables, arrays and typed scalars out,
 * with the line and column of every key and value kept for error messages. */
#ifndef RB_CONFIG_TOML_H
#define RB_CONFIG_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum rb_toml_type {
    RB_TOML_TABLE,
    RB_TOML_ARRAY,
    RB_TOML_STRING,
    RB_TOML_INTEGER,
    RB_TOML_FLOAT,
    RB_TOML_BOOL,
    RB_TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00Z */
    RB_TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
    RB_TOML_DATE_LOCAL,     /* 1979-05-27 */
    RB_TOML_TIME_LOCAL,     /* 07:32:00 */
} rb_toml_type;

/* The parts of a date, time or date-time. Fields of parts the kind lacks are 0. */
typedef struct rb_toml_datetime {
    int year, month, day;
    int hour, minute, second;
    char frac[16];     /* fractional-second digits as written, at most 15, "" = none */
    int offset_min;    /* RB_TOML_DATETIME: minutes east of UTC ("Z" = 0) */
} rb_toml_datetime;

typedef struct rb_toml_value rb_toml_value;

/* One key of a table, in document order. */
typedef struct rb_toml_kv {
    char *key;     /* owned, NUL-terminated; may hold NULs ("\u0000") */
    size_t keylen; /* bytes in key */
    int line, col; /* where the key was written (1-based; column in characters) */
    rb_toml_value *val; /* owned */
} rb_toml_kv;

struct rb_toml_value {
    rb_toml_type type;
    int line, col; /* where the value (or the table's header) starts; 0 = implicit */
    int origin;    /* caller's tag (rb_toml_set_origin), e.g. which file; 0 by default */
    union {
        struct { char *s; size_t len; } str; /* owned, NUL-terminated, may hold NULs */
        int64_t i;
        double f;
        bool b;
        rb_toml_datetime dt;
        struct { rb_toml_kv *items; size_t n, cap; } table;
        struct { rb_toml_value **items; size_t n, cap; } array;
    } u;
    /* Parser bookkeeping (how a table or array came to be). */
    unsigned defined : 1;  /* table opened by a [header] or [[header]] */
    unsigned implicit : 1; /* table created as a prefix of a header */
    unsigned dotted : 1;   /* table created by a dotted key */
    unsigned frozen : 1;   /* inline table or literal array: closed to additions */
    unsigned aot : 1;      /* array made by [[header]] */
};

/* Parses len bytes of text. Returns the root table (free it with
 * rb_toml_free()), or NULL with err set to RB_EPARSE and a message
 * "line L, column C: <what>" for the first error. */
rb_toml_value *rb_toml_parse(const char *text, size_t len, rb_err *err);

/* Frees v and everything under it; NULL is a no-op. */
void rb_toml_free(rb_toml_value *v);

/* The value of key in table t (borrowed), NULL when absent or t is not a table. */
rb_toml_value *rb_toml_get(const rb_toml_value *t, const char *key);
/* The entry of key in table t (borrowed), NULL when absent. */
rb_toml_kv *rb_toml_get_kv(const rb_toml_value *t, const char *key);

/* Sets the origin tag of v and everything under it. */
void rb_toml_set_origin(rb_toml_value *v, int origin);

/* Merges overlay into base key by key: tables merge recursively, anything
 * else (scalars, arrays, a table meeting a non-table) replaces base's value
 * whole. Takes ownership of overlay (it is freed). */
void rb_toml_merge(rb_toml_value *base, rb_toml_value *overlay);

/* "string", "integer", "float", "bool", "datetime", "datetime-local",
 * "date-local", "time-local", "table", "array" (toml-test's tags). */
const char *rb_toml_type_name(rb_toml_type t);

/* Parses a TOML date, time or date-time (RFC 3339 with TOML's relaxations:
 * ' ' or 't' for 'T', 'z' for 'Z') that spans exactly n bytes of s. Returns
 * its kind, or -1 when s is not one or names an impossible date or time. */
int rb_toml_parse_datetime(const char *s, size_t n, rb_toml_datetime *out);

/* Writes dt of the given kind in canonical form ("1979-05-27T07:32:00.5-07:00",
 * 'T' and 'Z' upper case) into out (at least 64 bytes); returns out. */
char *rb_toml_format_datetime(rb_toml_type kind, const rb_toml_datetime *dt, char *out);

#endif
