/* tests/server/test_http_api.c in distributed mode: the HTTP API of a node
 * whose jobs live in a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_http_api.c"
