/* tests/server/test_server_batch.c (Faktory Enterprise batches) in
 * distributed mode with even a lone request run inside a database thread's
 * batch transaction (the fault pg.batch_fault set to never fail,
 * db_thread.c): the ACKs and FAILs of batch members, their callbacks and
 * the expired jobs' drops run as savepoint units inside it. */
#include <stdlib.h>

__attribute__((constructor)) static void wrap_every_request(void)
{
    setenv("REBOUND_FAULTS", "pg.batch_fault=1000000000", 1);
}

#define RBH_PG 1
#include "test_server_batch.c"
