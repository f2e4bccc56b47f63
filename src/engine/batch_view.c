/* A batch's page and the batches' listing as both backends answer them
 * (engine/batch_view.h). */
#include "engine/batch_view.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/job_state.h"

void rb_batch_view_add_member(rb_batch_view *v, const char *jid, const char *jobtype,
                              const char *queue, int state, int attempts)
{
    if ((v->n_members & (v->n_members - 1)) == 0) /* 0, 1, 2, 4, ...: grow */
        v->members = rb_xrealloc(v->members, (v->n_members ? 2 * v->n_members : 1) *
                                                 sizeof *v->members);
    v->members[v->n_members++] = (rb_batch_member){
        .jid = rb_xstrdup(jid),
        .jobtype = jobtype ? rb_xstrdup(jobtype) : NULL,
        .queue = rb_xstrdup(queue ? queue : "default"),
        .state = state,
        .attempts = attempts,
    };
}

void rb_batch_view_add_child(rb_batch_view *v, const char *bid)
{
    if ((v->n_children & (v->n_children - 1)) == 0)
        v->children = rb_xrealloc(v->children, (v->n_children ? 2 * v->n_children : 1) *
                                                   sizeof *v->children);
    v->children[v->n_children++] = rb_xstrdup(bid);
}

static void member_release(rb_batch_member *m)
{
    free(m->jid);
    free(m->jobtype);
    free(m->queue);
}

static int by_jid(const void *a, const void *b)
{
    return strcmp(((const rb_batch_member *)a)->jid, ((const rb_batch_member *)b)->jid);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void rb_batch_view_finish(rb_batch_view *v, bool more_stored)
{
    if (!v->max_members)
        v->max_members = RB_BATCH_VIEW_MAX_MEMBERS;
    if (v->n_members)
        qsort(v->members, v->n_members, sizeof *v->members, by_jid);
    if (v->n_children)
        qsort(v->children, v->n_children, sizeof *v->children, by_str);
    v->truncated = more_stored;
    while (v->n_members > v->max_members) {
        member_release(&v->members[--v->n_members]);
        v->truncated = true;
    }
}

void rb_batch_view_release(rb_batch_view *v)
{
    rb_batch_free(v->b);
    for (size_t i = 0; i < v->n_members; i++)
        member_release(&v->members[i]);
    free(v->members);
    for (size_t i = 0; i < v->n_children; i++)
        free(v->children[i]);
    free(v->children);
    memset(v, 0, sizeof *v);
}

static json_t *time_or_null(int64_t ms)
{
    char at[RB_TIME_STRLEN];
    return ms ? json_string(rb_time_format(ms, at)) : json_null();
}

json_t *rb_batch_list_entry_json(const rb_batch *b)
{
    json_t *o = rb_batch_status_json(b);
    json_object_set_new(o, "committed", json_boolean(b->committed));
    json_object_set_new(o, "finished_at", time_or_null(b->finished_ms));
    return o;
}

json_t *rb_batch_view_json(const rb_batch_view *v)
{
    static const char *const kinds[RB_BATCH_CBS] = {"complete", "success", "death"};
    static const char *const sts[] = {"", "1", "2"};
    const rb_batch *b = v->b;
    json_t *o = rb_batch_list_entry_json(b);
    json_object_set_new(o, "executed", json_integer(b->executed));
    json_object_set_new(o, "dead", json_integer(b->dead));
    json_t *cbs = json_array();
    for (int k = 0; k < RB_BATCH_CBS; k++) {
        if (!b->cb[k])
            continue;
        int st = b->st[k] >= 0 && b->st[k] <= 2 ? b->st[k] : 0;
        json_array_append_new(cbs, json_pack("{s:s, s:o, s:s}", "kind", kinds[k], "jid",
                                             b->cb_jid[k] ? json_string(b->cb_jid[k])
                                                          : json_null(),
                                             "st", sts[st]));
    }
    json_object_set_new(o, "callbacks", cbs);
    json_t *kids = json_array();
    for (size_t i = 0; i < v->n_children; i++)
        json_array_append_new(kids, json_string(v->children[i]));
    json_object_set_new(o, "children", kids);
    json_t *ms = json_array();
    for (size_t i = 0; i < v->n_members; i++) {
        const rb_batch_member *m = &v->members[i];
        json_array_append_new(
            ms, json_pack("{s:s, s:o, s:s, s:s, s:i}", "jid", m->jid, "jobtype",
                          m->jobtype ? json_string(m->jobtype) : json_null(), "queue", m->queue,
                          "state", rb_job_state_name((rb_job_state)m->state), "attempts",
                          m->attempts));
    }
    json_object_set_new(o, "members", ms);
    json_object_set_new(o, "truncated", json_boolean(v->truncated));
    json_object_set_new(o, "max_members", json_integer((json_int_t)v->max_members));
    return o;
}

int rb_batch_list_cmp(const void *a, const void *b)
{
    const rb_batch *x = *(rb_batch *const *)a, *y = *(rb_batch *const *)b;
    bool xf = x->finished_ms != 0, yf = y->finished_ms != 0;
    if (xf != yf)
        return xf ? 1 : -1;
    int64_t kx = xf ? x->finished_ms : x->created_ms, ky = yf ? y->finished_ms : y->created_ms;
    if (kx != ky)
        return kx > ky ? -1 : 1; /* newest first */
    return strcmp(x->bid, y->bid);
}

json_t *rb_batch_list_json(bool all, int64_t total, int64_t offset, int64_t limit,
                           rb_batch *const *list, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, rb_batch_list_entry_json(list[i]));
    return json_pack("{s:s, s:I, s:I, s:I, s:o}", "state", all ? "all" : "open", "total",
                     (json_int_t)total, "offset", (json_int_t)offset, "limit", (json_int_t)limit,
                     "batches", arr);
}
