/* Queue throttles' shared rules (engine/throttle.h). */
#include "engine/throttle.h"

bool rb_throttle_holds(int64_t fetched_ms, int64_t timeout_s, int64_t now)
{
    return rb_throttle_frees_at(fetched_ms, timeout_s) > now;
}

int64_t rb_throttle_frees_at(int64_t fetched_ms, int64_t timeout_s)
{
    return timeout_s > 0 ? fetched_ms + timeout_s * 1000 : INT64_MAX;
}
