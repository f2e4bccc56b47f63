/* A failed execution (FAIL, or an expired reservation) through the job's
 * policy: the attempt history, Faktory's `failure` hash, and the outcome:
 * retry, dead, discard, or catch (the original dead, a catch job enqueued). */
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/batch.h"
#include "backend/sqlite/groups.h"
#include "backend/sqlite/unique.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "policy/failrec.h"
#include "policy/policy.h"
#include "backend/sqlite/deps.h"
#include "common/log.h"
#include "common/json.h"
#include "engine/jobdef.h"
#include "engine/metrics.h"

/* Enqueues the catch job of j, whose retries are exhausted (r: the failure's
 * record). */
/* j keeps its failure's record: the job text with its `failure` hash, and
 * the attempt history. */
static void keep_record(rb_job *j, const json_t *job, const rb_failrec *rec)
{
    char *text = json_dumps(job, JSON_COMPACT);
    char *htext = json_dumps(rec->history, JSON_COMPACT);
    if (text) {
        free(j->json);
        j->json = text;
    }
    free(j->history);
    j->history = htext;
}

static void spawn_catch(rb_sq *sq, const rb_job *j, const json_t *job, const rb_policy *pol,
                        const rb_failrec *r, int64_t now)
{
    char *jid = rb_jid_random(&sq->rng);
    json_t *cj = rb_failrec_catch_job(r, job, j->jid, jid, rb_job_queue(j)->name, j->priority, pol, now);
    char *text = json_dumps(cj, JSON_COMPACT);
    rb_job *c = rb_job_new(jid, text, rb_job_queue(j), j->priority);
    rb_sq_group_of_json(sq, c, cj);
    json_decref(cj);
    c->reserve_s = (int32_t)sq->cfg->server.reserve_for_s;
    rb_jobs_add(&sq->jobs, c);
    rb_sq_enqueue(sq, c, now, now);
    rb_sq_persist(sq, c);
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name, "catch_jid", jid),
              "job %s exhausted its retries: catch job %s (%s) enqueued", j->jid, jid,
              pol->catch_jobtype);
    free(jid);
}

int rb_sq_fail_job(rb_sq *sq, rb_job *j, const rb_fail_input *in, int64_t now, rb_err *err)
{
    json_t *job = json_loads(j->json, 0, NULL);
    if (!job)
        return rb_err_set(err, RB_ESTATE, "job %s has unreadable JSON", j->jid);
    rb_policy pol;
    rb_err perr = {0};
    rb_decision d;
    if (rb_fail_decide(sq->cfg, job, in, j->attempts, j->first_ms, now, &sq->rng, &pol, &d,
                       &perr)) /* validated at PUSH, so only a config change gets here */
        rb_log_kv(RB_LOG_WARN, RB_LOG_KV("jid", j->jid), "job %s: %s; using the default policy",
                  j->jid, rb_err_msg(&perr));
    sq->total_failures++;
    rb_job_metric(sq->metrics, RB_M_FAILED, j);
    rb_job_metric(sq->metrics, d.outcome == RB_OUTCOME_RETRY ? RB_M_RETRIED
                                 : d.outcome == RB_OUTCOME_DISCARD ? RB_M_DISCARDED : RB_M_DEAD, j);
    if (d.outcome == RB_OUTCOME_RETRY)
        rb_metrics_retry_delay(sq->metrics, d.delay_ms);

    rb_failrec_input fin = {.attempt = j->attempts, .history = j->history,
                            .errtype = in->errtype, .message = in->message,
                            .backtrace = in->backtrace, .now = now,
                            .now_us = rb_now_us_from(now)};
    rb_failrec rec;
    rb_failrec_build(job, &fin, &pol, &d, &rec);

    rb_sq_batch_failed(sq, j, !j->history, d.outcome != RB_OUTCOME_RETRY, now);
    free(j->wid);
    j->wid = NULL;
    if (d.outcome == RB_OUTCOME_DISCARD) {
        rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name,
                                         "jobtype", rb_json_str(job, "jobtype")),
                  "job %s discarded after a failure", j->jid);
        rb_sq_forget(sq, j);
    } else {
        keep_record(j, job, &rec);
        if (d.outcome == RB_OUTCOME_RETRY) {
            rb_jobs_set_state(&sq->jobs, j, RB_JOB_RETRIES, d.retry_at_ms);
        } else {
            if (d.outcome == RB_OUTCOME_CATCH && pol.catch_jobtype)
                spawn_catch(sq, j, job, &pol, &rec, now);
            else
                rb_log_kv(RB_LOG_INFO,
                          RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name,
                                    "jobtype", rb_json_str(job, "jobtype")),
                          "job %s (%s) is dead: %s", j->jid, rb_json_str(job, "jobtype"),
                          rb_reason_name(d.reason));
            rb_jobs_set_state(&sq->jobs, j, RB_JOB_DEAD,
                              now + sq->cfg->server.dead_retention_s * 1000);
        }
        rb_sq_persist(sq, j);
        if (j->state == RB_JOB_DEAD) {
            rb_sq_unique_died(sq, j);
            rb_deps_died(sq, j, now);
        }
    }
    rb_sq_persist_counters(sq);
    rb_failrec_release(&rec);
    json_decref(job);
    rb_policy_release(&pol);
    return 0;
}

void rb_sq_dep_kill(rb_sq *sq, rb_job *j, const char *parent, int64_t now)
{
    rb_sq_batch_failed(sq, j, !j->history, true, now); /* a batch member's death */
    json_t *job = json_loads(j->json, 0, NULL);
    if (!job) { /* cannot happen: the text came from json_dumps */
        rb_jobs_set_state(&sq->jobs, j, RB_JOB_DEAD,
                          now + sq->cfg->server.dead_retention_s * 1000);
        rb_sq_persist(sq, j);
        return;
    }
    rb_policy pol;
    rb_decision d;
    rb_failrec rec;
    rb_fail_dependency(sq->cfg, job, parent, j->attempts, j->history, now, &pol, &d, &rec);
    keep_record(j, job, &rec);
    rb_job_metric(sq->metrics, RB_M_DEAD, j);
    if (d.outcome == RB_OUTCOME_CATCH)
        spawn_catch(sq, j, job, &pol, &rec, now);
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name, "parent", parent),
              "job %s is dead: dependency (job %s it depends on failed)", j->jid,
              parent ? parent : "?");
    rb_jobs_set_state(&sq->jobs, j, RB_JOB_DEAD, now + sq->cfg->server.dead_retention_s * 1000);
    rb_sq_persist(sq, j);
    rb_failrec_release(&rec);
    json_decref(job);
    rb_policy_release(&pol);
    rb_sq_unique_died(sq, j);
    rb_deps_died(sq, j, now);
}
