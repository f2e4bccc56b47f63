/* The intrusive string-keyed hash table (see table.h). */
#include "common/table.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#define NEXT(t, e) (*(void **)((char *)(e) + (t)->next_off))

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void rb_table_init(rb_table *t, size_t next_off, const char *(*key)(const void *e))
{
    t->nbuckets = 64;
    t->buckets = rb_xcalloc(t->nbuckets, sizeof *t->buckets);
    t->size = 0;
    t->next_off = next_off;
    t->key = key;
}

void rb_table_release(rb_table *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = t->size = 0;
}

void *rb_table_get(const rb_table *t, const char *k)
{
    for (void *e = t->buckets[hash(k) & (t->nbuckets - 1)]; e; e = NEXT(t, e))
        if (!strcmp(t->key(e), k))
            return e;
    return NULL;
}

static void grow(rb_table *t)
{
    size_t nb = t->nbuckets * 2;
    void **b = rb_xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < t->nbuckets; i++) {
        void *e = t->buckets[i];
        while (e) {
            void *next = NEXT(t, e);
            size_t j = hash(t->key(e)) & (nb - 1);
            NEXT(t, e) = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
}

void rb_table_put(rb_table *t, void *e)
{
    if (t->size >= t->nbuckets)
        grow(t);
    size_t i = hash(t->key(e)) & (t->nbuckets - 1);
    NEXT(t, e) = t->buckets[i];
    t->buckets[i] = e;
    t->size++;
}

void rb_table_del(rb_table *t, void *e)
{
    void **pp = &t->buckets[hash(t->key(e)) & (t->nbuckets - 1)];
    for (; *pp; pp = &NEXT(t, *pp))
        if (*pp == e) {
            *pp = NEXT(t, e);
            NEXT(t, e) = NULL;
            t->size--;
            return;
        }
}

void rb_table_each(const rb_table *t, void (*fn)(void *e, void *arg), void *arg)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (void *e = t->buckets[i], *next; e; e = next) {
            next = NEXT(t, e);
            fn(e, arg);
        }
}
