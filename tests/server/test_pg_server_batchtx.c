/* tests/server/test_server_jobs.c in distributed mode with every database
 * thread's batch transaction failing before its COMMIT
 * (the fault pg.batch_fault=1, db_thread.c): each batch is rolled back
 * and run again a transaction per kind, and every reply must be as if the
 * batch transaction had never been tried. Without the fallback (or with a
 * reply sent from the rolled-back transaction) this suite fails. */
#include <stdlib.h>

__attribute__((constructor)) static void fail_every_batch_tx(void)
{
    setenv("REBOUND_FAULTS", "pg.batch_fault=1", 1);
}

#define RBH_PG 1
#include "test_server_jobs.c"
