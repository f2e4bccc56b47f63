/* splitmix64, with rejection sampling for unbiased ranges. */
#include "policy/rng.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void rb_rng_seed(rb_rng *r, uint64_t seed)
{
    r->state = seed;
}

void rb_rng_seed_os(rb_rng *r)
{
    uint64_t s;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    }
    r->state = s;
}

uint64_t rb_rng_next(rb_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t rb_rng_range(rb_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return lo;
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (span == 0) /* the full 64-bit range */
        return (int64_t)rb_rng_next(r);
    uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x;
    do {
        x = rb_rng_next(r);
    } while (x >= limit);
    return lo + (int64_t)(x % span);
}
