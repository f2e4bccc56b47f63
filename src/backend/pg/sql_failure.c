/* One failed execution through the job's policy, for the PostgreSQL engine:
 * the decision, then the attempt history entry, Faktory's `failure` hash and
 * the catch job (built by policy/failrec.c, shared with the single-node
 * server's backend/sqlite/fail.c) as texts to write into the locked row. */
#include "backend/pg/sql_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "engine/jobdef.h"
#include "policy/failrec.h"
#include "policy/policy.h"

static void make_catch(rb_pg *pg, const locked_row *row, const json_t *job, const rb_policy *pol,
                       const rb_failrec *rec, int64_t now, fail_out *out)
{
    out->catch_jid = rb_jid_random(&pg->rng);
    json_t *cj = rb_failrec_catch_job(rec, job, row->jid, out->catch_jid, row->queue,
                                      row->priority, pol, now);
    out->catch_json = json_dumps(cj, JSON_COMPACT);
    json_decref(cj);
}

int fail_decide(rb_pg *pg, const locked_row *row, const rb_pg_failure *pf, int64_t now,
                fail_out *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *job = json_loads(row->json, 0, NULL);
    if (!job)
        return rb_err_set(err, RB_ESTATE, "job %s has unreadable JSON", row->jid);
    const char *jobtype = json_string_value(json_object_get(job, "jobtype"));
    snprintf(out->jobtype, sizeof out->jobtype, "%s", jobtype ? jobtype : "");
    const rb_fail_input *in = &pf->in;
    rb_policy pol;
    /* a policy that no longer resolves (a config change) falls back to the
     * default, as on a single node */
    rb_fail_decide(sql_cfg(pg), job, in, row->attempts, row->first_ms, now, &pg->rng, &pol,
                   &out->d, NULL);
    const rb_decision *d = &out->d;

    rb_failrec_input fin = {.attempt = row->attempts, .history = row->history,
                            .errtype = in->errtype, .message = in->message,
                            .backtrace = in->backtrace, .now = now,
                            .now_us = rb_now_us_from(now)};
    rb_failrec rec;
    rb_failrec_build(job, &fin, &pol, d, &rec);

    if (d->outcome != RB_OUTCOME_DISCARD) {
        out->json = json_dumps(job, JSON_COMPACT);
        out->history = json_dumps(rec.history, JSON_COMPACT);
        if (d->outcome == RB_OUTCOME_CATCH && pol.catch_jobtype)
            make_catch(pg, row, job, &pol, &rec, now, out);
    }
    rb_failrec_release(&rec);
    json_decref(job);
    rb_policy_release(&pol);
    return 0;
}

void fail_out_release(fail_out *o)
{
    free(o->json);
    free(o->history);
    free(o->catch_jid);
    free(o->catch_json);
    memset(o, 0, sizeof *o);
}

int fail_dependency(rb_pg *pg, const locked_row *row, const char *parent, int64_t now,
                    fail_out *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *job = json_loads(row->json, 0, NULL);
    if (!job)
        return rb_err_set(err, RB_ESTATE, "job %s has unreadable JSON", row->jid);
    const char *jobtype = json_string_value(json_object_get(job, "jobtype"));
    snprintf(out->jobtype, sizeof out->jobtype, "%s", jobtype ? jobtype : "");
    rb_policy pol;
    rb_failrec rec;
    rb_fail_dependency(sql_cfg(pg), job, parent, row->attempts, row->history, now, &pol, &out->d,
                       &rec);
    out->json = json_dumps(job, JSON_COMPACT);
    out->history = json_dumps(rec.history, JSON_COMPACT);
    if (out->d.outcome == RB_OUTCOME_CATCH)
        make_catch(pg, row, job, &pol, &rec, now, out);
    rb_failrec_release(&rec);
    json_decref(job);
    rb_policy_release(&pol);
    return 0;
}
