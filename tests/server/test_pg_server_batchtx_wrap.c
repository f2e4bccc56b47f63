/* tests/server/test_server_batch.c (Faktory Enterprise batches) in
 * distributed mode with even a lone request run inside a database thread's
 * batch transaction (REBOUND_TEST_PG_BATCH_FAULT set to never fail,
 * db_thread.c): the ACKs and FAILs of batch members, their callbacks and
 * the expired jobs' drops run as savepoint units inside it. */
#include <stdlib.h>

__attribute__((constructor)) static void wrap_every_request(void)
{
    setenv("REBOUND_TEST_PG_BATCH_FAULT", "1000000000", 1);
}

#define RBH_PG 1
#include "test_server_batch.c"
