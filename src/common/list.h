/* An intrusive doubly-linked list: O(1) append and removal of an element
 * that embeds an rb_link. Used for the ready queues and the per-state sets. */
#ifndef RB_COMMON_LIST_H
#define RB_COMMON_LIST_H

#include <stddef.h>

typedef struct rb_link {
    struct rb_link *prev, *next;
} rb_link;

/* A list head. Invariant: size counts the linked elements. */
typedef struct rb_list {
    rb_link *head, *tail;
    size_t size;
} rb_list;

static inline void rb_list_append(rb_list *l, rb_link *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
    l->size++;
}

/* e must be in l. */
static inline void rb_list_remove(rb_list *l, rb_link *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
    l->size--;
}

#define rb_container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

#endif
