/* The timer heap (see heap.h). */
#include "backend/sqlite/heap.h"

#include <stdlib.h>

#include "common/buf.h"

void rb_heap_init(rb_heap *h)
{
    h->v = NULL;
    h->n = h->cap = 0;
    h->next_seq = 0;
}

void rb_heap_release(rb_heap *h)
{
    free(h->v);
    rb_heap_init(h);
}

static int less(const rb_heap_node *a, const rb_heap_node *b)
{
    return a->at_ms < b->at_ms || (a->at_ms == b->at_ms && a->seq < b->seq);
}

static void set(rb_heap *h, size_t i, rb_heap_node *n)
{
    h->v[i] = n;
    n->idx = i;
}

static void sift_up(rb_heap *h, size_t i)
{
    rb_heap_node *n = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!less(n, h->v[p]))
            break;
        set(h, i, h->v[p]);
        i = p;
    }
    set(h, i, n);
}

static void sift_down(rb_heap *h, size_t i)
{
    rb_heap_node *n = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && less(h->v[c + 1], h->v[c]))
            c++;
        if (!less(h->v[c], n))
            break;
        set(h, i, h->v[c]);
        i = c;
    }
    set(h, i, n);
}

void rb_heap_push(rb_heap *h, rb_heap_node *n, int64_t at_ms)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = rb_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    n->at_ms = at_ms;
    n->seq = h->next_seq++;
    set(h, h->n++, n);
    sift_up(h, n->idx);
}

void rb_heap_remove(rb_heap *h, rb_heap_node *n)
{
    size_t i = n->idx;
    if (i == RB_HEAP_NONE || i >= h->n || h->v[i] != n)
        return;
    n->idx = RB_HEAP_NONE;
    rb_heap_node *last = h->v[--h->n];
    if (i == h->n)
        return;
    set(h, i, last);
    if (i > 0 && less(last, h->v[(i - 1) / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

rb_heap_node *rb_heap_top(const rb_heap *h)
{
    return h->n ? h->v[0] : NULL;
}
