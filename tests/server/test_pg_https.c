/* tests/server/test_https.c in distributed mode: HTTPS, and the refusal of
 * a password over plain HTTP, for a node whose jobs live in a fresh schema
 * of a throwaway PostgreSQL cluster (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_https.c"
