/* A growable byte buffer, always NUL-terminated (git's strbuf, smaller). */
#ifndef RB_COMMON_BUF_H
#define RB_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct rb_buf {
    char *data; /* NUL-terminated; NULL only before the first append */
    size_t len;
    size_t cap;
} rb_buf;

#define RB_BUF_INIT {NULL, 0, 0}

void rb_buf_init(rb_buf *b);
/* Frees the storage; b is empty and reusable afterwards. */
void rb_buf_release(rb_buf *b);
/* Empties b, keeping its storage. */
void rb_buf_reset(rb_buf *b);
/* Makes room for n more bytes. Aborts on allocation failure (like git's
 * xmalloc): a job server out of memory cannot answer correctly anyway. */
void rb_buf_grow(rb_buf *b, size_t n);
void rb_buf_add(rb_buf *b, const void *p, size_t n);
void rb_buf_adds(rb_buf *b, const char *s);
void rb_buf_addc(rb_buf *b, char c);
void rb_buf_printf(rb_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rb_buf_vprintf(rb_buf *b, const char *fmt, va_list ap);
/* Removes the first n bytes. */
void rb_buf_consume(rb_buf *b, size_t n);
/* Returns the data and empties b: you now own the storage (free() it).
 * Never NULL: an empty buffer detaches as "". */
char *rb_buf_detach(rb_buf *b, size_t *len);
/* The contents as a C string ("" when empty); owned by b. */
const char *rb_buf_str(const rb_buf *b);

/* Allocation helpers that abort with a message on failure. */
void *rb_xmalloc(size_t n);
void *rb_xcalloc(size_t n, size_t size);
void *rb_xrealloc(void *p, size_t n);
char *rb_xstrdup(const char *s);
char *rb_xstrndup(const char *s, size_t n);

#endif
