/* tests/server/test_server_groups.c in distributed mode: groups in turn
 * (rb_claim_groups, schema 16), every server of the suite on a fresh
 * schema of a throwaway PostgreSQL cluster (harness.h with RBH_PG). */
#define RBH_PG 1
#include "test_server_groups.c"
