/* Helpers shared by the libFuzzer targets in fuzz/: a NUL-terminated copy of
 * the input, a reader that takes typed values off the front of the input, and
 * the invariant check that aborts (a crash libFuzzer reports) when a property
 * fails. Header-only; every target is one fuzz_NAME.c built by fuzz/run.sh. */
#ifndef RB_FUZZ_FUZZ_H
#define RB_FUZZ_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aborts with the failed property and where, so a broken invariant is a crash. */
#define FUZZ_CHECK(cond)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* A malloc'd copy of data with a NUL appended (embedded NULs stay). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Consumes fixed-size values from the front of the input; 0 past the end. */
typedef struct fuzz_reader {
    const uint8_t *p;
    size_t n;
} fuzz_reader;

static inline uint64_t fuzz_u64(fuzz_reader *r, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v <<= 8;
        if (r->n) {
            v |= *r->p++;
            r->n--;
        }
    }
    return v;
}

#endif
