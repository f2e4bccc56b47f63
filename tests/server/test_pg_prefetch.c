/* tests/server/test_server_prefetch.c in distributed mode: every server of
 * the suite runs on a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG), where prefetch holds jobs. */
#define RBH_PG 1
#include "test_server_prefetch.c"
