/* The single node's flow control (docs/configuration.md "Groups"): which
 * job of a queue FETCH takes next, its groups in turn, and a job's group
 * from its JSON. The groups themselves and their turn order are the pure
 * indexes of jobs.h. Loop thread only. */
#ifndef RB_BACKEND_SQLITE_GROUPS_H
#define RB_BACKEND_SQLITE_GROUPS_H

#include <stdint.h>

#include <jansson.h>

#include "backend/sqlite/sq.h"

/* The job FETCH takes next from q: the first (priority, then FIFO) of the
 * group at the head of q's turns, that group moved to the back. Expired
 * jobs met at a group's head are dropped on the way (never handed out).
 * NULL when no group of q has a ready job. O(1) in groups. */
rb_job *rb_sq_group_take(rb_sq *sq, rb_queue *q, int64_t now);

/* Puts j (not ENQUEUED) into the group its job object names in
 * custom.group (engine/group.h's rule; ungrouped when absent or not a
 * group name). */
void rb_sq_group_of_json(rb_sq *sq, rb_job *j, const json_t *job);

/* As rb_sq_group_of_json from j's own text, for a row stored without its
 * group (written before the column, or by an import): parsed only when the
 * text names "group". */
void rb_sq_group_of_text(rb_sq *sq, rb_job *j);

#endif
