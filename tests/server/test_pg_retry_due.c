/* tests/server/test_server_retry_due.c in distributed mode: the server runs
 * on a fresh schema of a throwaway PostgreSQL cluster (harness.h with
 * RBH_PG), where the maintenance thread promotes retries. */
#define RBH_PG 1
#include "test_server_retry_due.c"
