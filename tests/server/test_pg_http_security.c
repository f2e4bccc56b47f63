/* tests/server/test_http_security.c in distributed mode: the same refusals
 * and the same requests that still work, on a node whose jobs live in a
 * fresh schema of a throwaway PostgreSQL cluster (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_http_security.c"
