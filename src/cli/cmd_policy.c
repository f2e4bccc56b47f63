/* placeholder replaced by the policy work */
#include "cli/cli.h"
int cmd_policy(int argc, char **argv) { (void)argc; (void)argv; return cli_error(CLI_USAGE, "policy: unavailable"); }
