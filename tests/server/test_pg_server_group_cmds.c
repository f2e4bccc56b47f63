/* tests/server/test_server_group_cmds.c in distributed mode: GROUP SET,
 * PAUSE, RESUME, GET and GROUPS on rb_groups' rows (sql_groups.c, schema
 * 15), every server of the suite on a fresh schema (harness.h with
 * RBH_PG). */
#define RBH_PG 1
#include "test_server_group_cmds.c"
