/* tests/server/test_server_cron.c in distributed mode: every server of the
 * suite runs on a fresh schema of a throwaway PostgreSQL cluster
 * (harness.h with RBH_PG), and two nodes share one database in
 * two_nodes_enqueue_each_tick_exactly_once. */
#define RBH_PG 1
#include "test_server_cron.c"
