/* The single node's turns of groups at FETCH (backend/sqlite/groups.h). */
#include "backend/sqlite/groups.h"

#include <string.h>

#include "backend/sqlite/unique.h"
#include "engine/group.h"

rb_job *rb_sq_group_take(rb_sq *sq, rb_queue *q, int64_t now)
{
    rb_link *e;
    while ((e = q->turns.head)) {
        rb_group *g = rb_container_of(e, rb_group, turn);
        rb_job *j = rb_group_first(g);
        if (rb_sq_unique_expire(sq, j, now))
            continue; /* dropped (its group too, if that was its last job): look again */
        rb_group_next_turn(g);
        return j;
    }
    return NULL;
}

void rb_sq_group_of_json(rb_sq *sq, rb_job *j, const json_t *job)
{
    const char *name = NULL;
    if (rb_group_of_job(job, &name, NULL) == 0 && name)
        rb_jobs_set_group(&sq->jobs, j, name);
}

void rb_sq_group_of_text(rb_sq *sq, rb_job *j)
{
    if (!strstr(j->json, "\"group\""))
        return;
    json_t *o = json_loads(j->json, 0, NULL);
    rb_sq_group_of_json(sq, j, o);
    json_decref(o);
}
