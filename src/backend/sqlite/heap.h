/* A binary min-heap of deadlines with back-pointers: each node knows its
 * index, so any node is removed or moved in O(log n). Ties on the deadline
 * are broken by a sequence number, so equal deadlines come out FIFO. */
#ifndef RB_BACKEND_MEM_HEAP_H
#define RB_BACKEND_MEM_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in whatever is timed. Invariant: idx == RB_HEAP_NONE exactly when
 * the node is in no heap. */
typedef struct rb_heap_node {
    int64_t at_ms;
    uint64_t seq;
    size_t idx;
} rb_heap_node;

#define RB_HEAP_NONE ((size_t)-1)

typedef struct rb_heap {
    rb_heap_node **v;
    size_t n, cap;
    uint64_t next_seq;
} rb_heap;

void rb_heap_init(rb_heap *h);
void rb_heap_release(rb_heap *h); /* frees the array, not the nodes */
/* Inserts n (not in a heap) due at at_ms, after every node with the same
 * deadline. */
void rb_heap_push(rb_heap *h, rb_heap_node *n, int64_t at_ms);
/* Removes n if it is in h; no-op otherwise. */
void rb_heap_remove(rb_heap *h, rb_heap_node *n);
/* The earliest node, or NULL when empty. */
rb_heap_node *rb_heap_top(const rb_heap *h);

static inline void rb_heap_node_init(rb_heap_node *n)
{
    n->idx = RB_HEAP_NONE;
}

#endif
