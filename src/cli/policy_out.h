/* Output of `rebound policy`: a policy in words or JSON, and a simulated
 * schedule as a table with a bar chart, or as JSON. Shared by the SPEC path
 * and (later) the --config path of `policy simulate`. */
#ifndef RB_CLI_POLICY_OUT_H
#define RB_CLI_POLICY_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "policy/policy.h"
#include "policy/simulate.h"

/* What `policy simulate` does besides the policy itself. */
typedef struct cli_sim_opts {
    int64_t failures;        /* 0 = the default limit (see rb_policy_simulate) */
    const char *errtype;     /* NULL = none */
    const char *retry_after; /* NULL = none */
    bool seeded;             /* seed given: reproducible output */
    uint64_t seed;
    bool json;
    /* Where the policy came from (e.g. "[retry.jobtypes.email] in rebound.toml");
     * NULL = a SPEC on the command line. Printed as "source". */
    const char *source;
} cli_sim_opts;

/* `policy check`'s output for p. */
void cli_print_policy(FILE *out, const rb_policy *p, bool json);

/* Simulates p with o and prints the schedule to out; returns CLI_OK. */
int cli_simulate_policy(FILE *out, const rb_policy *p, const cli_sim_opts *o);

#endif
