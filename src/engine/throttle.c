/* Queue throttles' shared rules (engine/throttle.h). */
#include "engine/throttle.h"

#include <stdlib.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "config/config.h"
#include "engine/gcra.h"
#include "engine/reads.h"

bool rb_throttle_holds(int64_t fetched_ms, int64_t timeout_s, int64_t now)
{
    return rb_throttle_frees_at(fetched_ms, timeout_s) > now;
}

int64_t rb_throttle_frees_at(int64_t fetched_ms, int64_t timeout_s)
{
    return timeout_s > 0 ? fetched_ms + timeout_s * 1000 : INT64_MAX;
}

int64_t rb_throttle_fetched_from_lease(int64_t lease_end_ms, int64_t reserve_s)
{
    return lease_end_ms - reserve_s * 1000;
}

void rb_throttle_info_set(json_t *o, const rb_throttle *t, int64_t in_use)
{
    json_t *e = json_pack("{s:I, s:I, s:I}", "concurrency", (json_int_t)t->concurrency, "timeout",
                          (json_int_t)t->timeout_s, "in_use", (json_int_t)in_use);
    if (t->rate) {
        json_object_set_new(e, "rate", json_integer(t->rate));
        json_object_set_new(e, "period", json_real((double)t->period_ms / 1000.0));
        json_object_set_new(e, "burst", json_integer(t->burst));
    }
    json_object_set_new(o, t->queue, e);
}

bool rb_throttle_job_hold(const char *queue, bool paused, const rb_throttle *t, int64_t held,
                          int64_t frees_ms, int64_t tat_us, int64_t now, rb_job_view *v)
{
    rb_buf d = RB_BUF_INIT;
    int64_t until = 0;
    const char *hold;
    rb_gcra b = {0};
    if (t && t->rate)
        rb_gcra_init(&b, t->rate, t->period_ms, t->burst);
    if (paused) {
        hold = "paused";
        rb_buf_printf(&d, "queue %s is paused (QUEUE RESUME %s)", queue, queue);
    } else if (t && t->concurrency && held >= t->concurrency) {
        hold = "concurrency";
        until = frees_ms != INT64_MAX ? frees_ms : 0;
        rb_buf_printf(&d, "queue %s runs %lld of %lld ([throttles.%s] concurrency)", queue,
                      (long long)held, (long long)t->concurrency, queue);
    } else if (t && t->rate && !rb_gcra_conforms(&b, tat_us, now * 1000)) {
        char ts[RB_TIME_STRLEN];
        hold = "rate";
        until = (rb_gcra_next_us(&b, tat_us) + 999) / 1000;
        rb_buf_printf(&d, "queue %s is over its rate ([throttles.%s]): next start at %s", queue,
                      queue, rb_time_format(until, ts));
    } else {
        return false;
    }
    v->hold_by = "queue";
    v->hold = hold;
    v->hold_until_ms = until;
    free(v->hold_detail);
    v->hold_detail = rb_buf_detach(&d, NULL);
    return true;
}
