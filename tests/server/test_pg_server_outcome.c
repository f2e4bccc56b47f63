/* tests/server/test_server_outcome.c in distributed mode: the server runs
 * on a fresh schema of a throwaway PostgreSQL cluster (harness.h with
 * RBH_PG), where the same rule is the SQL functions' and sql_fail.c's. */
#define RBH_PG 1
#include "test_server_outcome.c"
