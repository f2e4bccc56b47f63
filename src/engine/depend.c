/* Job dependencies' rules (depend.h): parsing, a push's check, and a
 * child's next state on a parent's event. */
#include "engine/depend.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "engine/job_state.h"

static bool has_parents(const json_t *v)
{
    return v && !json_is_null(v);
}

bool rb_dep_has(const json_t *job)
{
    return has_parents(json_object_get(job, "depends_on")) ||
           has_parents(json_object_get(json_object_get(job, "custom"), "depends_on"));
}

const char *rb_dep_mode_name(rb_dep_mode m)
{
    switch (m) {
    case RB_DEP_BLOCK: return "block";
    case RB_DEP_CANCEL: return "cancel";
    case RB_DEP_IGNORE: return "ignore";
    }
    return "?";
}

void rb_dep_spec_release(rb_dep_spec *s)
{
    free(s->parents);
    memset(s, 0, sizeof *s);
}

/* Appends v's strings to s (duplicates dropped); RB_EINVAL on a bad value. */
static int add_parents(rb_dep_spec *s, const json_t *v, const char *jid, rb_err *err)
{
    if (!has_parents(v))
        return 0;
    if (!json_is_array(v))
        return rb_err_set(err, RB_EINVAL, "depends_on must be an array of non-empty strings");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        const char *p = json_string_value(e);
        if (!p || !*p)
            return rb_err_set(err, RB_EINVAL, "depends_on must be an array of non-empty strings");
        if (jid && !strcmp(p, jid))
            return rb_err_set(err, RB_EINVAL, "depends_on: cycle through %s", p);
        bool dup = false;
        for (size_t k = 0; k < s->n && !dup; k++) /* n <= 1000: fine */
            dup = !strcmp(s->parents[k], p);
        if (dup)
            continue;
        if (s->n >= RB_DEP_MAX_PARENTS)
            return rb_err_set(err, RB_EINVAL, "depends_on must name at most %d parents",
                              RB_DEP_MAX_PARENTS);
        s->parents = rb_xrealloc(s->parents, (s->n + 1) * sizeof *s->parents);
        s->parents[s->n++] = p;
    }
    return 0;
}

int rb_dep_parse(const json_t *job, rb_dep_spec *out, rb_err *err)
{
    memset(out, 0, sizeof *out);
    const char *jid = json_string_value(json_object_get(job, "jid"));
    const json_t *custom = json_object_get(job, "custom");
    int rc;
    if ((rc = add_parents(out, json_object_get(custom, "depends_on"), jid, err)) ||
        (rc = add_parents(out, json_object_get(job, "depends_on"), jid, err))) {
        rb_dep_spec_release(out);
        return rc;
    }
    const json_t *m = json_object_get(custom, "on_dep_failure");
    if (has_parents(m)) {
        const char *s = json_string_value(m);
        if (s && !strcmp(s, "block"))
            out->mode = RB_DEP_BLOCK;
        else if (s && !strcmp(s, "cancel"))
            out->mode = RB_DEP_CANCEL;
        else if (s && !strcmp(s, "ignore"))
            out->mode = RB_DEP_IGNORE;
        else {
            rb_dep_spec_release(out);
            return rb_err_set(err, RB_EINVAL,
                              "on_dep_failure must be \"block\", \"cancel\" or \"ignore\"");
        }
    }
    return 0;
}

/* --- a push's check --- */

typedef struct node {
    const char *jid;
    size_t idx;
} node;

static int by_jid(const void *a, const void *b)
{
    return strcmp(((const node *)a)->jid, ((const node *)b)->jid);
}

/* The index in the push of the job jid, or -1. */
static long find(const node *v, size_t n, const char *jid)
{
    node key = {jid, 0};
    const node *f = bsearch(&key, v, n, sizeof *v, by_jid);
    return f ? (long)f->idx : -1;
}

int rb_dep_check_push(json_t *const *jobs, size_t n, rb_dep_lookup_fn lookup, void *arg,
                      rb_err *err)
{
    rb_dep_spec *specs = rb_xcalloc(n + 1, sizeof *specs);
    node *byjid = rb_xcalloc(n + 1, sizeof *byjid);
    size_t *indeg = rb_xcalloc(n + 1, sizeof *indeg);
    long **in_parents = rb_xcalloc(n + 1, sizeof *in_parents); /* in-push parents' indexes */
    size_t *queue = rb_xcalloc(n + 1, sizeof *queue);
    bool any = false;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        byjid[i] = (node){json_string_value(json_object_get(jobs[i], "jid")), i};
        if (!byjid[i].jid)
            byjid[i].jid = "";
        if ((rc = rb_dep_parse(jobs[i], &specs[i], err)))
            goto out;
        any = any || specs[i].n > 0;
    }
    if (!any)
        goto out;
    qsort(byjid, n, sizeof *byjid, by_jid);
    for (size_t i = 0; i < n; i++) {
        in_parents[i] = rb_xcalloc(specs[i].n + 1, sizeof **in_parents);
        for (size_t k = 0; k < specs[i].n; k++) {
            long p = find(byjid, n, specs[i].parents[k]);
            in_parents[i][k] = p;
            if (p >= 0) {
                indeg[i]++;
                continue;
            }
            char *into = NULL;
            rb_dep_known known =
                lookup ? lookup(arg, specs[i].parents[k], &into) : RB_DEP_UNKNOWN;
            const char *pj = specs[i].parents[k];
            if (known == RB_DEP_DEBOUNCED)
                rc = rb_err_set(err, RB_EINVAL, "depends_on: job %s was debounced into %s; name %s",
                                pj, into ? into : "?", into ? into : "it");
            else if (known == RB_DEP_DEAD)
                rc = rb_err_set(err, RB_EINVAL, RB_DEP_DEAD_FMT, pj, pj);
            else if (known == RB_DEP_UNKNOWN)
                rc = rb_err_set(err, RB_EINVAL, "depends_on: unknown job %s", pj);
            free(into);
            if (rc)
                goto out;
        }
    }
    /* Kahn's algorithm over the push's own edges: what is left has a cycle. */
    size_t head = 0, tail = 0, done = 0;
    for (size_t i = 0; i < n; i++)
        if (!indeg[i])
            queue[tail++] = i;
    /* children of each job in the push, by counting sort: kids[first[p]..first[p+1]) */
    size_t *first = rb_xcalloc(n + 2, sizeof *first), edges = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < specs[i].n; k++)
            if (in_parents[i][k] >= 0) {
                first[in_parents[i][k] + 2]++;
                edges++;
            }
    for (size_t p = 2; p < n + 2; p++)
        first[p] += first[p - 1];
    size_t *kids = rb_xcalloc(edges + 1, sizeof *kids);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < specs[i].n; k++)
            if (in_parents[i][k] >= 0)
                kids[first[in_parents[i][k] + 1]++] = i;
    while (head < tail) {
        size_t p = queue[head++];
        done++;
        for (size_t e = first[p]; e < first[p + 1]; e++)
            if (--indeg[kids[e]] == 0)
                queue[tail++] = kids[e];
    }
    free(first);
    free(kids);
    if (done < n) {
        /* Walk up from a job left over through parents also left over: after
         * n steps the walk is on the cycle. */
        size_t at = 0;
        while (!indeg[at])
            at++;
        for (size_t step = 0; step < n; step++)
            for (size_t k = 0; k < specs[at].n; k++) {
                long p = in_parents[at][k];
                if (p >= 0 && indeg[p]) {
                    at = (size_t)p;
                    break;
                }
            }
        rc = rb_err_set(err, RB_EINVAL, "depends_on: cycle through %s",
                        json_string_value(json_object_get(jobs[at], "jid")));
    }
out:
    for (size_t i = 0; i < n; i++) {
        rb_dep_spec_release(&specs[i]);
        free(in_parents[i]);
    }
    free(specs);
    free(byjid);
    free(indeg);
    free(in_parents);
    free(queue);
    return rc;
}

/* --- a child's next state --- */

rb_dep_next rb_dep_state_of(const rb_dep_counts *c)
{
    if (c->dead)
        return RB_DEP_NEXT_BLOCK;
    return c->remaining ? RB_DEP_NEXT_WAIT : RB_DEP_NEXT_RELEASE;
}

bool rb_dep_parent_holds(int st, rb_dep_mode mode, rb_dep_counts *c)
{
    if (st < 0 || (st == RB_JOB_DEAD && mode == RB_DEP_IGNORE))
        return false;
    c->remaining++;
    if (st == RB_JOB_DEAD)
        c->dead++;
    return true;
}

rb_dep_next rb_dep_on_retry(const rb_dep_spec *spec, int (*state_of)(void *arg, const char *jid),
                            void *arg, bool *holds, rb_dep_counts *c)
{
    *c = (rb_dep_counts){0, 0};
    for (size_t i = 0; i < spec->n; i++)
        holds[i] = rb_dep_parent_holds(state_of(arg, spec->parents[i]), spec->mode, c);
    return rb_dep_state_of(c);
}

rb_dep_next rb_dep_on_parent(rb_dep_mode mode, rb_dep_event ev, rb_dep_counts *c, bool *consumed)
{
    *consumed = false;
    switch (ev) {
    case RB_DEP_PARENT_SUCCEEDED:
        if (c->remaining)
            c->remaining--;
        /* dead <= remaining: when every parent left was dead, the one that
         * succeeded was one of them (a late ACK of a job whose lease ran out
         * on its last attempt); PostgreSQL's rb_dep_succeeded says the same */
        if (c->dead > c->remaining)
            c->dead = c->remaining;
        *consumed = true;
        break;
    case RB_DEP_PARENT_DIED:
        if (mode == RB_DEP_CANCEL) {
            *consumed = true;
            return RB_DEP_NEXT_DIE;
        }
        if (mode == RB_DEP_IGNORE) {
            if (c->remaining)
                c->remaining--;
            *consumed = true;
            break;
        }
        if (c->dead < c->remaining)
            c->dead++;
        break;
    case RB_DEP_PARENT_REQUEUED:
        if (c->dead) /* a "cancel" child held after its retry is blocked too */
            c->dead--;
        break;
    case RB_DEP_PARENT_DISCARDED:
        *consumed = true;
        if (mode == RB_DEP_IGNORE) {
            if (c->remaining)
                c->remaining--;
            break;
        }
        return RB_DEP_NEXT_DIE;
    }
    return rb_dep_state_of(c);
}
