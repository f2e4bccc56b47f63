/* An intrusive chained hash table keyed by strings: each element embeds the
 * chain pointer, so the table costs one bucket pointer per element and no
 * allocation per insert. Grows by doubling; lookups are O(1) on average. */
#ifndef RB_COMMON_TABLE_H
#define RB_COMMON_TABLE_H

#include <stddef.h>

typedef struct rb_table {
    void **buckets;
    size_t nbuckets, size;
    size_t next_off;                   /* offset of the element's `void *next` */
    const char *(*key)(const void *e); /* the element's key (stable while inserted) */
} rb_table;

void rb_table_init(rb_table *t, size_t next_off, const char *(*key)(const void *e));
void rb_table_release(rb_table *t); /* frees the buckets, not the elements */
/* The element with key k, or NULL. */
void *rb_table_get(const rb_table *t, const char *k);
/* Inserts e; its key must not be present. */
void rb_table_put(rb_table *t, void *e);
/* Removes e if present. */
void rb_table_del(rb_table *t, void *e);
/* Calls fn on every element. fn may free the element it is given (for
 * teardown) but must not otherwise change the table. */
void rb_table_each(const rb_table *t, void (*fn)(void *e, void *arg), void *arg);

#endif
