/* A small seedable random source (splitmix64) so that jitter and Sidekiq's
 * random term are reproducible in tests and `policy simulate --seed`. */
#ifndef RB_POLICY_RNG_H
#define RB_POLICY_RNG_H

#include <stdint.h>

typedef struct rb_rng {
    uint64_t state;
} rb_rng;

/* Seeds r; the same seed always gives the same sequence. */
void rb_rng_seed(rb_rng *r, uint64_t seed);
/* Seeds r from the OS (getrandom), falling back to time and pid. */
void rb_rng_seed_os(rb_rng *r);
uint64_t rb_rng_next(rb_rng *r);
/* Uniform integer in [lo, hi] (inclusive); lo when hi <= lo. No modulo bias. */
int64_t rb_rng_range(rb_rng *r, int64_t lo, int64_t hi);

#endif
