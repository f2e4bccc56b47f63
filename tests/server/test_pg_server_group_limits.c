/* tests/server/test_server_group_limits.c in distributed mode: [groups]
 * concurrency and rate and [throttles] rate applied by rb_claim_groups
 * (schema 16) under the group's row lock, buckets in rb_groups and
 * rb_queues (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_server_group_limits.c"
