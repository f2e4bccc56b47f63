/* Queue throttles' shared rules (engine/throttle.h). */
#include "engine/throttle.h"

#include "config/config.h"

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
