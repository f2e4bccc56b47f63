/* Queue throttles in distributed mode: test_server_throttle.c's cases,
 * each server running on a PostgreSQL schema of its own (pg_harness.h),
 * plus the cases that start a second node on the same database. */
#define RBH_PG 1
#include "test_server_throttle.c"
