/* A new job's defaults and jid (jobdef.h). */
#include "engine/jobdef.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"

void rb_job_fields_read(json_t *job, int64_t now_ms, int default_reserve_s, rb_job_fields *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_string(json_object_get(job, "queue")))
        json_object_set_new(job, "queue", json_string(RB_DEFAULT_QUEUE));
    out->jid = json_string_value(json_object_get(job, "jid"));
    out->queue = json_string_value(json_object_get(job, "queue"));
    json_t *p = json_object_get(job, "priority");
    json_int_t prio = json_is_integer(p) ? json_integer_value(p) : 0;
    out->priority = prio >= 1 && prio <= 9 ? (int)prio : RB_DEFAULT_PRIORITY;
    json_t *rs = json_object_get(job, "reserve_for");
    out->reserve_s = json_is_integer(rs) && json_integer_value(rs) > 0
                         ? (int)json_integer_value(rs) : default_reserve_s;
    out->at_ms = now_ms;
    const char *at = json_string_value(json_object_get(job, "at"));
    if (at && *at)
        rb_time_parse_rfc3339(at, &out->at_ms);
    json_object_del(job, "enqueued_at");
    const char *created = json_string_value(json_object_get(job, "created_at"));
    out->made_created = !created || !*created;
    if (out->made_created)
        json_object_del(job, "created_at");
}

char *rb_jid_random(rb_rng *rng)
{
    char *s = rb_xmalloc(25);
    uint64_t a = rb_rng_next(rng), b = rb_rng_next(rng);
    snprintf(s, 25, "%016llx%08llx", (unsigned long long)a, (unsigned long long)(b & 0xffffffffULL));
    return s;
}
