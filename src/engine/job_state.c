/* Job state names (job_state.h). */
#include "engine/job_state.h"

#include <string.h>

static const char *const state_names[] = {"pending", "scheduled", "enqueued",
                                          "working", "retries",   "dead",
                                          "waiting", "blocked"};

const char *rb_job_state_name(rb_job_state st)
{
    return (unsigned)st < sizeof state_names / sizeof *state_names ? state_names[st] : "unknown";
}

int rb_job_state_parse(const char *s)
{
    for (int i = 1; i < (int)(sizeof state_names / sizeof *state_names); i++)
        if (!strcmp(s, state_names[i]))
            return i;
    return -1;
}

bool rb_job_state_mutable(int st)
{
    return st == RB_JOB_SCHEDULED || st == RB_JOB_RETRIES || st == RB_JOB_DEAD;
}

rb_job_status rb_job_outcome(rb_job_verb verb, bool exists, rb_job_state state, int flags,
                             const char *holder, const char *wid)
{
    if (!exists || state == RB_JOB_PENDING)
        return RB_JOB_MISSING;
    bool working = state == RB_JOB_WORKING;
    if (working && holder && wid && strcmp(holder, wid) != 0)
        return RB_JOB_OTHER_HOLDER;
    if (working)
        return RB_JOB_DONE;
    bool expired = (flags & RB_JOB_EXPIRED) != 0;
    switch (verb) {
    case RB_VERB_ACK:
        return expired ? RB_JOB_DONE : RB_JOB_NOOP;
    case RB_VERB_FAIL:
        return expired ? RB_JOB_NOOP : RB_JOB_NOT_WORKING;
    case RB_VERB_SNOOZE:
    case RB_VERB_EXTEND:
        break;
    }
    return RB_JOB_NOT_WORKING;
}
