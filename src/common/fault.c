/* The fault-injection seam (fault.h): $REBOUND_FAULTS parsed once. */
#include "common/fault.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const char *const known[] = {"sqlite.fault_file",    "pg.batch_fault",
                                    "pg.tick_ms",           "pg.prefetch_hold_ms",
                                    "pg.claim_pause_ms",    "pg.leader_lease_ms",
                                    "cron.clock_offset_ms", "cron.clock_rate",
                                    "pg.prefetch_pause_ms", "server.stop_pause_ms"};
#define N_KNOWN (sizeof known / sizeof *known)

static char *values[N_KNOWN];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int index_of(const char *name, size_t len)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strlen(known[i]) == len && !strncmp(known[i], name, len))
            return (int)i;
    return -1;
}

static void parse(void)
{
    const char *env = getenv(RB_FAULTS_ENV);
    while (env && *env) {
        size_t len = strcspn(env, ",");
        const char *eq = memchr(env, '=', len);
        int i = eq ? index_of(env, (size_t)(eq - env)) : -1;
        if (!eq) {
            fprintf(stderr, "rebound: %s: entry '%.*s' is not name=value: ignored\n",
                    RB_FAULTS_ENV, (int)len, env);
        } else if (i < 0) {
            fprintf(stderr, "rebound: %s: unknown fault '%.*s' ignored\n", RB_FAULTS_ENV,
                    (int)(eq - env), env);
        } else {
            free(values[i]);
            values[i] = strndup(eq + 1, len - (size_t)(eq + 1 - env));
        }
        env += len;
        if (*env == ',')
            env++;
    }
}

const char *rb_fault_get(const char *name)
{
    pthread_once(&once, parse);
    int i = index_of(name, strlen(name));
    rb_assert(i >= 0, "fault '%s' is not in fault.c's list", name);
    return values[i] && *values[i] ? values[i] : NULL;
}

long long rb_fault_int(const char *name, long long dflt)
{
    const char *v = rb_fault_get(name);
    if (!v)
        return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    return end != v && !*end ? n : dflt;
}
