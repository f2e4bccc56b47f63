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
