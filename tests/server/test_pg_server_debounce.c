/* tests/server/test_server_debounce.c in distributed mode: every server of
 * the suite runs on a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_server_debounce.c"
