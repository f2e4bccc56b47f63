/* test_backup.c in distributed mode: BACKUP and `rebound backup` point at
 * pg_dump, `rebound restore` at pg_restore. */
#define RBH_PG 1
#include "test_backup.c"
