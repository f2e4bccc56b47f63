/* MUTATE's request, once for every backend and front end: what the
 * argument means (parsed and checked here, with the protocol's error
 * texts), and which jobs it selects. The backends apply it (single node:
 * server/cmd_admin.c; PostgreSQL: rb_pg_mutate). Pure: any thread may call
 * these. */
#ifndef RB_ENGINE_MUTATION_H
#define RB_ENGINE_MUTATION_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"

typedef struct rb_mutation {
    const char *cmd;          /* "kill", "requeue", "discard" or "clear" */
    int target;               /* RB_JOB_SCHEDULED, RB_JOB_RETRIES or RB_JOB_DEAD */
    const char *const *jids;  /* filter: only these jids (NULL: any); may be
                                 empty, then nothing matches */
    size_t n_jids;
    const char *pattern;      /* filter: fnmatch glob over the job's JSON, or NULL */
    const char *jobtype;      /* filter: exact job type, or NULL */
    bool own_jids;            /* jids is an array rb_mutation_release frees */
} rb_mutation;

/* Fills m from MUTATE's argument o ({"cmd","target","filter"}), whose
 * strings m then borrows: o must outlive m. "clear" drops the filters; an
 * empty jids list means no jid filter; a non-string entry of jids names no
 * job. RB_EINVAL with err set to the reply text ("MUTATE: ...") when o is
 * not a valid request, m then holds nothing to release. */
int rb_mutation_parse(json_t *o, rb_mutation *m, rb_err *err);

/* 0 when m's cmd and target are ones MUTATE knows, else RB_EINVAL with err
 * set (the text without the "MUTATE: " prefix). */
int rb_mutation_check(const rb_mutation *m, rb_err *err);

/* Whether a job of the target state, with this JSON text, passes m's
 * pattern and job type filters (the jids filter is the backend's look-up). */
bool rb_mutation_matches(const rb_mutation *m, const char *json);

/* Frees what rb_mutation_parse allocated in m (not the borrowed strings). */
void rb_mutation_release(rb_mutation *m);

#endif
