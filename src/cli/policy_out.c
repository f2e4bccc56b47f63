/* `rebound policy` output: the policy in words or JSON, and the simulated
 * schedule as a table, a bar chart of the delays and the end, or JSON. */
#include "cli/policy_out.h"
#include "cli/cli.h"

#include <stdlib.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "policy/duration.h"

enum { BAR_WIDTH = 50 };

/* One line, as every --json (docs/cli.md). */
static void print_json(FILE *out, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    fprintf(out, "%s\n", s ? s : "null");
    free(s);
    json_decref(v);
}

void cli_print_policy(FILE *out, const rb_policy *p, bool json)
{
    if (json) {
        print_json(out, rb_policy_to_json(p));
        return;
    }
    rb_buf b = RB_BUF_INIT;
    rb_policy_describe(p, &b);
    fputs(rb_buf_str(&b), out);
    rb_buf_release(&b);
}

static void print_table(FILE *out, const rb_simulation *s)
{
    char a[RB_DURATION_STRLEN], b[RB_DURATION_STRLEN];
    fprintf(out, "%7s  %-8s  %-12s  %-14s  %s\n", "attempt", "outcome", "delay", "since first",
            "source");
    for (size_t i = 0; i < s->n; i++) {
        const rb_sim_step *st = &s->steps[i];
        if (st->d.outcome == RB_OUTCOME_RETRY)
            fprintf(out, "%7lld  %-8s  %-12s  %-14s  %s\n", (long long)st->attempt,
                    rb_outcome_name(st->d.outcome),
                    rb_duration_format(st->d.delay_ms, a, sizeof a),
                    rb_duration_format(st->at_ms, b, sizeof b), rb_source_name(st->d.source));
        else
            fprintf(out, "%7lld  %-8s  %-12s  %-14s  %s\n", (long long)st->attempt,
                    rb_outcome_name(st->d.outcome), "-",
                    rb_duration_format(st->at_ms, b, sizeof b), rb_reason_name(st->d.reason));
    }
}

/* One bar per retry, scaled so the longest delay fills BAR_WIDTH. */
static void print_bars(FILE *out, const rb_simulation *s)
{
    int64_t max = 0;
    size_t retries = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->steps[i].d.outcome == RB_OUTCOME_RETRY) {
            retries++;
            if (s->steps[i].d.delay_ms > max)
                max = s->steps[i].d.delay_ms;
        }
    if (!retries)
        return;
    char a[RB_DURATION_STRLEN];
    fprintf(out, "\ndelays (longest = %d columns):\n", BAR_WIDTH);
    for (size_t i = 0; i < s->n; i++) {
        const rb_sim_step *st = &s->steps[i];
        if (st->d.outcome != RB_OUTCOME_RETRY)
            continue;
        int len = max ? (int)(((__int128)st->d.delay_ms * BAR_WIDTH + max - 1) / max) : 0;
        fprintf(out, "%7lld |", (long long)st->attempt);
        for (int k = 0; k < len; k++)
            fputc('#', out);
        fprintf(out, "%*s %s\n", BAR_WIDTH - len, "", rb_duration_format(st->d.delay_ms, a, sizeof a));
    }
}

static void print_end(FILE *out, const rb_policy *p, const rb_simulation *s)
{
    long long n = s->n ? (long long)s->steps[s->n - 1].attempt : 0;
    const char *pl = n == 1 ? "" : "s";
    const char *why = rb_reason_name(s->reason);
    switch (s->end) {
    case RB_SIM_DEAD:
        fprintf(out, "\nend: dead after %lld attempt%s (%s)\n", n, pl, why);
        break;
    case RB_SIM_DISCARD:
        fprintf(out, "\nend: discarded after %lld attempt%s (%s)\n", n, pl, why);
        break;
    case RB_SIM_CATCH:
        fprintf(out, "\nend: catch job '%s' after %lld attempt%s (%s); the job ends dead\n",
                p->catch_jobtype, n, pl, why);
        break;
    case RB_SIM_UNLIMITED:
        fprintf(out, "\nend: unlimited (%s); shown up to %lld failures\n", rb_sim_reason_text(s),
                (long long)s->limit);
        break;
    case RB_SIM_TRUNCATED:
        fprintf(out, "\nend: not reached within %lld failures (raise --failures)\n",
                (long long)s->limit);
        break;
    }
}

int cli_simulate_policy(FILE *out, const rb_policy *p, const cli_sim_opts *o)
{
    rb_rng rng;
    uint64_t seed = o->seed;
    if (o->seeded) {
        rb_rng_seed(&rng, seed);
    } else {
        rb_rng_seed_os(&rng);
        seed = rng.state;
    }
    rb_failure f = {.errtype = o->errtype, .retry_after = o->retry_after};
    rb_simulation sim;
    rb_policy_simulate(p, &f, o->failures, rb_now_ms(), &rng, &sim);
    if (o->json) {
        json_t *root = rb_simulation_to_json(p, &sim);
        if (o->source)
            json_object_set_new(root, "policy_source", json_string(o->source));
        print_json(out, root);
    } else {
        if (o->source)
            fprintf(out, "policy from: %s\n", o->source);
        cli_print_policy(out, p, false);
        fprintf(out, "seed:        %llu\n\n", (unsigned long long)seed);
        print_table(out, &sim);
        print_bars(out, &sim);
        print_end(out, p, &sim);
    }
    rb_simulation_release(&sim);
    return CLI_OK;
}
