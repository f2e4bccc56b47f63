/* The engine's read results and JOB's and JOBS's JSON (reads.h). */
#include "engine/reads.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/group.h"
#include "engine/job_state.h"

void rb_job_view_release(rb_job_view *j)
{
    free(j->jid);
    free(j->queue);
    free(j->json);
    free(j->history);
    free(j->wid);
    free(j->waits_for);
    free(j->blocked_by);
    free(j->hold_detail);
    memset(j, 0, sizeof *j);
}

void rb_job_views_free(rb_job_view *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        rb_job_view_release(&v[i]);
    free(v);
}

json_t *rb_job_view_json(const rb_job_view *j)
{
    json_t *job = json_loads(j->json, 0, NULL);
    return json_pack("{s:s, s:o, s:I}", "state", rb_job_state_name((rb_job_state)j->state), "job",
                     job ? job : json_null(), "attempts", (json_int_t)j->attempts);
}

json_t *rb_job_view_detail(const rb_job_view *j)
{
    json_t *v = rb_job_view_json(j);
    json_t *h = j->history ? json_loads(j->history, 0, NULL) : NULL;
    json_object_set_new(v, "history", h ? h : json_array());
    char ts[RB_TIME_STRLEN];
    bool timed = j->state == RB_JOB_SCHEDULED || j->state == RB_JOB_RETRIES;
    json_object_set_new(v, "next_at",
                        timed ? json_string(rb_time_format(j->due_ms, ts)) : json_null());
    if (j->state == RB_JOB_WORKING) {
        json_object_set_new(v, "reserved_until", json_string(rb_time_format(j->due_ms, ts)));
        json_object_set_new(v, "wid", j->wid ? json_string(j->wid) : json_null());
    }
    if (j->state == RB_JOB_WAITING || j->state == RB_JOB_BLOCKED) {
        json_t *w = j->waits_for ? json_loads(j->waits_for, 0, NULL) : NULL;
        json_object_set_new(v, "waits_for", w ? w : json_array());
        json_object_set_new(v, "blocked_by",
                            j->blocked_by ? json_string(j->blocked_by) : json_null());
    }
    const char *group = NULL;
    json_t *job = json_object_get(v, "job");
    if (rb_group_of_job(job, &group, NULL))
        group = NULL;
    json_object_set_new(v, "group", group ? json_string(group) : json_null());
    json_object_set_new(
        v, "held",
        j->hold_by ? json_pack("{s:s, s:s, s:s, s:o}", "by", j->hold_by, "reason", j->hold,
                               "detail", j->hold_detail ? j->hold_detail : "", "until",
                               j->hold_until_ms > 0
                                   ? json_string(rb_time_format(j->hold_until_ms, ts))
                                   : json_null())
                   : json_null());
    return v;
}

bool rb_job_filter_matches(const rb_job_filter *f, const char *queue, const char *json)
{
    if (f->queue && strcmp(f->queue, queue))
        return false;
    if (!f->jobtype && !f->errtype && !f->group)
        return true;
    json_t *o = json_loads(json, 0, NULL);
    const char *jt = json_string_value(json_object_get(o, "jobtype"));
    const char *et = json_string_value(json_object_get(json_object_get(o, "failure"), "errtype"));
    const char *g = json_string_value(json_object_get(json_object_get(o, "custom"), "group"));
    bool ok = (!f->jobtype || (jt && !strcmp(jt, f->jobtype))) &&
              (!f->errtype || (et && !strcmp(et, f->errtype))) &&
              (!f->group || (g && !strcmp(g, f->group)));
    json_decref(o);
    return ok;
}
