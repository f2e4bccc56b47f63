/* A [[cron]] entry as JSON (config/cron_json.h). */
#include "config/cron_json.h"

#include "common/timeutil.h"
#include "engine/cron.h"

/* The next n run times of e after now_s, as a JSON array of RFC 3339 texts. */
static json_t *next_runs(const rb_cron_entry *e, int64_t now_s, int n)
{
    json_t *a = json_array();
    int64_t t = now_s;
    for (int i = 0; i < n; i++) {
        int64_t next;
        if (rb_cron_next(&e->spec, e->timezone, t, &next))
            break;
        char buf[RB_TIME_STRLEN];
        json_array_append_new(a, json_string(rb_time_format(next * 1000, buf)));
        t = next;
    }
    return a;
}

json_t *rb_cron_entry_json(const rb_cron_entry *e, int64_t now_s, int n)
{
    if (n < 0)
        n = 0;
    if (n > RB_CRON_NEXT_MAX)
        n = RB_CRON_NEXT_MAX;
    return json_pack("{s:s, s:s, s:s, s:s, s:O, s:O, s:O, s:o}", "name", e->name, "schedule",
                     e->schedule, "timezone", e->timezone, "missed",
                     e->run_once ? "run_once" : "skip", "jobtype",
                     json_object_get(e->job, "jobtype"), "queue", json_object_get(e->job, "queue"),
                     "job", e->job, "next", next_runs(e, now_s, n));
}
