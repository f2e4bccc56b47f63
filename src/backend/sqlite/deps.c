/* Job dependencies on a single node (deps.h): the side table, the push's
 * check and edges, the parents' events, the succeeded records and their
 * reload. The rules are engine/depend.h's. */
#include "backend/sqlite/deps.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/timeutil.h"
#include "common/log.h"
#include "backend/sqlite/debounce.h"
#include "backend/sqlite/sq.h"
#include "engine/debounce.h"
#include "engine/engine.h"

#define DONE_PREFIX RB_DEPS_DONE_KEY

static const char *node_key(const void *e)
{
    return ((const rb_dep_node *)e)->jid;
}

static const char *done_key(const void *e)
{
    return ((const rb_dep_done *)e)->jid;
}

static const char *named_key(const void *e)
{
    return ((const rb_dep_named *)e)->jid;
}

void rb_deps_init(rb_deps *d)
{
    memset(d, 0, sizeof *d);
    rb_table_init(&d->nodes, offsetof(rb_dep_node, hnext), node_key);
    rb_table_init(&d->done, offsetof(rb_dep_done, hnext), done_key);
    rb_table_init(&d->named, offsetof(rb_dep_named, hnext), named_key);
}

static void free_parents(rb_dep_node *n)
{
    for (uint32_t i = 0; i < n->n_parents; i++)
        free(n->parents[i]);
    free(n->parents);
    n->parents = NULL;
    n->n_parents = 0;
}

static void free_node(void *e, void *arg)
{
    (void)arg;
    rb_dep_node *n = e;
    free_parents(n);
    for (uint32_t i = 0; i < n->n_children; i++)
        free(n->children[i]);
    free(n->children);
    free(n);
}

static void free_done(void *e, void *arg)
{
    (void)arg;
    free(((rb_dep_done *)e)->parents);
    free(e);
}

static void free_named(void *e, void *arg)
{
    (void)arg;
    rb_dep_named *m = e;
    for (uint32_t i = 0; i < m->n; i++)
        free(m->kids[i]);
    free(m->kids);
    free(m);
}

void rb_deps_release(rb_deps *d)
{
    rb_table_each(&d->nodes, free_node, NULL);
    rb_table_each(&d->done, free_done, NULL);
    rb_table_each(&d->named, free_named, NULL);
    rb_table_release(&d->nodes);
    rb_table_release(&d->done);
    rb_table_release(&d->named);
    for (size_t i = 0; i < d->n_dying; i++)
        free(d->dying[i]);
    free(d->dying);
    memset(d, 0, sizeof *d);
}

static rb_dep_node *node_get(const rb_sq *sq, const char *jid)
{
    return sq->deps.nodes.size ? rb_table_get(&sq->deps.nodes, jid) : NULL;
}

/* A job held by its parents (WAITING or BLOCKED) has a node with parents
 * left to hear from (remaining > 0), no more of them dead than left, and
 * is BLOCKED exactly when one is dead (rb_dep_state_of). Checked each
 * time a job is put under its parents. */
static void check_held(const rb_job *j, const rb_dep_node *n)
{
    rb_dep_counts c = n ? n->counts : (rb_dep_counts){0, 0};
    rb_assert(c.remaining > 0 && c.dead <= c.remaining,
              "job %s (state %s) is held with %u parents left, %u of them dead", j->jid,
              rb_job_state_name(j->state), c.remaining, c.dead);
    rb_assert((j->state == RB_JOB_BLOCKED) == (c.dead > 0),
              "job %s is %s with %u dead parents", j->jid, rb_job_state_name(j->state), c.dead);
}

static rb_dep_node *node_make(rb_sq *sq, const char *jid)
{
    rb_dep_node *n = node_get(sq, jid);
    if (n)
        return n;
    size_t len = strlen(jid) + 1;
    n = rb_xcalloc(1, sizeof *n + len);
    memcpy(n->jid, jid, len);
    rb_table_put(&sq->deps.nodes, n);
    return n;
}

static void node_free(rb_sq *sq, rb_dep_node *n)
{
    rb_table_del(&sq->deps.nodes, n);
    free_node(n, NULL);
}

static void add_child(rb_dep_node *parent, const char *child)
{
    if (parent->n_children == parent->cap_children) {
        parent->cap_children = parent->cap_children ? parent->cap_children * 2 : 4;
        parent->children =
            rb_xrealloc(parent->children, parent->cap_children * sizeof *parent->children);
    }
    parent->children[parent->n_children++] = rb_xstrdup(child);
}

static void add_parent(rb_dep_node *child, const char *parent)
{
    child->parents = rb_xrealloc(child->parents, (child->n_parents + 1) * sizeof *child->parents);
    child->parents[child->n_parents++] = rb_xstrdup(parent);
}

static bool live(const rb_job *j)
{
    return j && j->state != RB_JOB_PENDING && j->state != RB_JOB_DEAD;
}

/* --- who names whom (the workflow graph's) --- */

/* child named parent in its depends_on. */
static void named_add(rb_sq *sq, const char *parent, const char *child)
{
    rb_dep_named *m = rb_table_get(&sq->deps.named, parent);
    if (!m) {
        size_t len = strlen(parent) + 1;
        m = rb_xcalloc(1, sizeof *m + len);
        memcpy(m->jid, parent, len);
        rb_table_put(&sq->deps.named, m);
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 4;
        m->kids = rb_xrealloc(m->kids, m->cap * sizeof *m->kids);
    }
    m->kids[m->n++] = rb_xstrdup(child);
}

/* jid is neither stored nor recorded any more: who named it is no longer
 * asked (its children show it as unknown through their own depends_on). */
static void named_forget(rb_sq *sq, const char *jid)
{
    rb_dep_named *m = sq->deps.named.size ? rb_table_get(&sq->deps.named, jid) : NULL;
    if (m) {
        rb_table_del(&sq->deps.named, m);
        free_named(m, NULL);
    }
}

/* Each parent job (a JSON object) names in depends_on is named by jid. */
static void named_from(rb_sq *sq, const json_t *job, const char *jid)
{
    rb_dep_spec spec;
    if (rb_dep_parse(job, &spec, NULL))
        return;
    for (size_t i = 0; i < spec.n; i++)
        named_add(sq, spec.parents[i], jid);
    rb_dep_spec_release(&spec);
}

/* --- the push --- */

typedef struct lookup_arg {
    rb_sq *sq;
    int64_t now;
} lookup_arg;

static rb_dep_known lookup(void *arg, const char *jid, char **into)
{
    const lookup_arg *a = arg;
    rb_sq *sq = a->sq;
    const rb_job *j = rb_jobs_find(&sq->jobs, jid);
    if (live(j))
        return RB_DEP_LIVE;
    if (j && j->state == RB_JOB_DEAD)
        return RB_DEP_DEAD;
    rb_dep_done *d = sq->deps.done.size ? rb_table_get(&sq->deps.done, jid) : NULL;
    if (d)
        return RB_DEP_SUCCEEDED;
    rb_debounce_alias al;
    if (!rb_sq_debounce_alias(sq, jid, a->now, &al))
        return RB_DEP_UNKNOWN;
    *into = al.into;
    al.into = NULL;
    rb_debounce_alias_release(&al);
    return RB_DEP_DEBOUNCED;
}

int rb_deps_check_push(rb_sq *sq, json_t *const *jobs, size_t n, int64_t now, rb_err *err)
{
    bool any = false;
    for (size_t i = 0; i < n && !any; i++)
        any = rb_dep_has(jobs[i]);
    lookup_arg a = {sq, now};
    return any ? rb_dep_check_push(jobs, n, lookup, &a, err) : 0;
}

bool rb_deps_add_child(rb_sq *sq, rb_job *j, const json_t *job)
{
    if (!rb_dep_has(job))
        return false;
    rb_dep_spec spec;
    if (rb_dep_parse(job, &spec, NULL) || !spec.n) { /* checked before: cannot fail */
        rb_dep_spec_release(&spec);
        return false;
    }
    rb_dep_node *c = node_make(sq, j->jid);
    c->mode = spec.mode;
    for (size_t i = 0; i < spec.n; i++) {
        named_add(sq, spec.parents[i], j->jid);
        rb_job *p = rb_jobs_find(&sq->jobs, spec.parents[i]);
        if (!p) /* succeeded (recorded): nothing to wait for */
            continue;
        add_child(node_make(sq, spec.parents[i]), j->jid);
        add_parent(c, spec.parents[i]);
        c->counts.remaining++;
    }
    rb_dep_spec_release(&spec);
    return c->counts.remaining > 0;
}

bool rb_deps_pending_waits(const rb_sq *sq, const rb_job *j)
{
    rb_dep_node *n = node_get(sq, j->jid);
    return n && rb_dep_state_of(&n->counts) != RB_DEP_NEXT_RELEASE;
}

void rb_deps_pending_commit(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_dep_node *n = node_get(sq, j->jid);
    bool doomed = n->counts.dead == UINT32_MAX;
    rb_dep_next next = rb_dep_state_of(&n->counts);
    rb_jobs_set_state(&sq->jobs, j, next == RB_DEP_NEXT_BLOCK && !doomed ? RB_JOB_BLOCKED
                                                                         : RB_JOB_WAITING,
                      j->timer.at_ms);
    if (doomed) {
        free_parents(n);
        n->counts = (rb_dep_counts){0, 0};
        rb_sq_dep_kill(sq, j, NULL, now);
    } else {
        check_held(j, n);
        if (next == RB_DEP_NEXT_BLOCK)
            rb_sq_persist(sq, j);
    }
}

void rb_deps_drop(rb_sq *sq, const char *jid)
{
    rb_dep_node *n = node_get(sq, jid);
    if (n)
        node_free(sq, n);
}

/* --- the succeeded records --- */

/* Drops record d; persist: its expiry, the meta row goes too, and who
 * named it is forgotten unless it is stored again. */
static void done_forget(rb_sq *sq, rb_dep_done *d, bool persist)
{
    if (persist) {
        char key[sizeof DONE_PREFIX + 256];
        snprintf(key, sizeof key, DONE_PREFIX "%s", d->jid);
        rb_writer_meta(sq->writer, key, NULL);
        if (!rb_jobs_find(&sq->jobs, d->jid))
            named_forget(sq, d->jid);
    }
    rb_list_remove(&sq->deps.done_fifo, &d->link);
    rb_table_del(&sq->deps.done, d);
    free_done(d, NULL);
}

/* parents: the job's depends_on as a JSON array text (copied), or NULL. */
static rb_dep_done *done_add(rb_sq *sq, const char *jid, int64_t expires_ms,
                             const char *parents)
{
    rb_dep_done *d = rb_table_get(&sq->deps.done, jid);
    if (d)
        done_forget(sq, d, false);
    size_t len = strlen(jid) + 1;
    d = rb_xcalloc(1, sizeof *d + len);
    memcpy(d->jid, jid, len);
    d->expires_ms = expires_ms;
    d->parents = parents && *parents ? rb_xstrdup(parents) : NULL;
    rb_table_put(&sq->deps.done, d);
    rb_list_append(&sq->deps.done_fifo, &d->link);
    return d;
}

static rb_dep_done *done_of(rb_link *l)
{
    return rb_container_of(l, rb_dep_done, link);
}

void rb_deps_expire(rb_sq *sq, int64_t now)
{
    rb_link *l;
    while ((l = sq->deps.done_fifo.head) && done_of(l)->expires_ms <= now)
        done_forget(sq, done_of(l), true);
}

int64_t rb_deps_next_expiry(const rb_sq *sq)
{
    rb_link *l = sq->deps.done_fifo.head;
    return l ? done_of(l)->expires_ms : INT64_MAX;
}

/* --- the parents' events --- */

/* A child leaves waiting: its policy counts from now (docs/workflows.md). */
static void release(rb_sq *sq, rb_job *c, rb_dep_node *n, int64_t now)
{
    free_parents(n);
    n->counts = (rb_dep_counts){0, 0};
    c->first_ms = 0;
    c->attempts = 0;
    int64_t at = c->timer.at_ms;
    rb_sq_enqueue(sq, c, at, now);
    rb_sq_persist(sq, c);
    rb_log_kv(RB_LOG_DEBUG, RB_LOG_KV("jid", c->jid), "job %s: every parent is done, released",
              c->jid);
}

static void apply(rb_sq *sq, rb_job *c, rb_dep_node *n, rb_dep_next next, const char *parent,
                  int64_t now)
{
    if (c->state == RB_JOB_PENDING) { /* its push's commit is not done: push_committed decides */
        if (next == RB_DEP_NEXT_DIE) {
            n->counts.dead = n->counts.remaining = UINT32_MAX; /* doomed */
        }
        rb_sq_persist(sq, c);
        return;
    }
    switch (next) {
    case RB_DEP_NEXT_WAIT:
    case RB_DEP_NEXT_BLOCK: {
        rb_job_state st = next == RB_DEP_NEXT_WAIT ? RB_JOB_WAITING : RB_JOB_BLOCKED;
        if (c->state != st) {
            rb_jobs_set_state(&sq->jobs, c, st, c->timer.at_ms);
            rb_sq_persist(sq, c);
        }
        check_held(c, n);
        break;
    }
    case RB_DEP_NEXT_RELEASE:
        release(sq, c, n, now);
        break;
    case RB_DEP_NEXT_DIE:
        free_parents(n);
        n->counts = (rb_dep_counts){0, 0};
        rb_sq_dep_kill(sq, c, parent, now);
        break;
    }
}

/* Event ev of parent p to each of its children still waiting or blocked. */
static void notify(rb_sq *sq, rb_dep_node *p, rb_dep_event ev, int64_t now)
{
    for (uint32_t i = 0; i < p->n_children; i++) {
        char *cj = p->children[i];
        if (!cj)
            continue;
        rb_job *c = rb_jobs_find(&sq->jobs, cj);
        rb_dep_node *n = node_get(sq, cj);
        bool gone = !c || !n || !n->n_parents ||
                    (c->state != RB_JOB_WAITING && c->state != RB_JOB_BLOCKED &&
                     c->state != RB_JOB_PENDING);
        bool consumed = gone;
        if (!gone) {
            rb_dep_next next = rb_dep_on_parent(n->mode, ev, &n->counts, &consumed);
            if (consumed) {
                free(cj);
                p->children[i] = cj = NULL;
            }
            apply(sq, c, n, next, p->jid, now);
        } else {
            free(cj);
            p->children[i] = NULL;
        }
    }
}

/* Runs the parent events of children that died of a dependency, in turn. */
static void drain_deaths(rb_sq *sq, int64_t now)
{
    rb_deps *d = &sq->deps;
    if (d->draining)
        return;
    d->draining = true;
    for (size_t i = 0; i < d->n_dying; i++) { /* n_dying grows while this runs */
        char *jid = d->dying[i];
        rb_dep_node *n = node_get(sq, jid);
        rb_job *j = rb_jobs_find(&sq->jobs, jid);
        if (n && j && j->state == RB_JOB_DEAD)
            notify(sq, n, RB_DEP_PARENT_DIED, now);
        free(d->dying[i]);
        d->dying[i] = NULL;
    }
    d->n_dying = 0;
    d->draining = false;
}

void rb_deps_died(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_deps *d = &sq->deps;
    rb_dep_node *n = node_get(sq, j->jid);
    if (!n || !n->n_children)
        return;
    if (d->n_dying == d->cap_dying) {
        d->cap_dying = d->cap_dying ? d->cap_dying * 2 : 8;
        d->dying = rb_xrealloc(d->dying, d->cap_dying * sizeof *d->dying);
    }
    d->dying[d->n_dying++] = rb_xstrdup(j->jid);
    drain_deaths(sq, now);
}

void rb_deps_requeued(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_dep_node *n = node_get(sq, j->jid);
    if (n)
        notify(sq, n, RB_DEP_PARENT_REQUEUED, now);
}

/* The parents job's JSON text names, as a JSON array text (new), or NULL
 * when it names none. */
static char *parents_text(const char *json)
{
    if (!strstr(json, "\"depends_on\""))
        return NULL;
    json_t *job = json_loads(json, 0, NULL);
    rb_dep_spec spec;
    char *out = NULL;
    if (job && !rb_dep_parse(job, &spec, NULL)) {
        json_t *a = json_array();
        for (size_t i = 0; i < spec.n; i++)
            json_array_append_new(a, json_string(spec.parents[i]));
        out = spec.n ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        rb_dep_spec_release(&spec);
    }
    json_decref(job);
    return out;
}

void rb_deps_succeeded(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_dep_node *n = node_get(sq, j->jid);
    if (!n)
        return;
    int64_t exp = now + sq->cfg->workflows.succeeded_ttl_s * 1000;
    char *parents = parents_text(j->json); /* its graph keeps them (rb_deps_record_parents) */
    done_add(sq, j->jid, exp, parents);
    char key[sizeof DONE_PREFIX + 256];
    snprintf(key, sizeof key, DONE_PREFIX "%s", j->jid);
    rb_buf val = RB_BUF_INIT;
    rb_buf_printf(&val, "%lld", (long long)exp);
    if (parents)
        rb_buf_printf(&val, " %s", parents);
    rb_writer_meta(sq->writer, key, rb_buf_str(&val));
    rb_buf_release(&val);
    free(parents);
    notify(sq, n, RB_DEP_PARENT_SUCCEEDED, now);
    node_free(sq, n);
    drain_deaths(sq, now);
}

void rb_deps_discarded(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_dep_node *n = node_get(sq, j->jid);
    if (!n)
        return;
    if (!rb_deps_is_done(sq, j->jid))
        named_forget(sq, j->jid);
    rb_table_del(&sq->deps.nodes, n); /* out first: the children's deaths do not see it */
    notify(sq, n, RB_DEP_PARENT_DISCARDED, now);
    free_node(n, NULL);
    drain_deaths(sq, now);
}

/* --- JOB --- */

json_t *rb_deps_waits_for(const rb_sq *sq, const char *jid)
{
    rb_dep_node *n = node_get(sq, jid);
    if (!n || !n->n_parents)
        return NULL;
    json_t *a = json_array();
    for (uint32_t i = 0; i < n->n_parents; i++) {
        const rb_job *p = rb_jobs_find(&sq->jobs, n->parents[i]);
        if (p && (p->state != RB_JOB_DEAD || n->mode != RB_DEP_IGNORE))
            json_array_append_new(a, json_string(n->parents[i]));
    }
    return a;
}

char *rb_deps_blocked_by(const rb_sq *sq, const char *jid)
{
    rb_dep_node *n = node_get(sq, jid);
    for (uint32_t i = 0; n && n->counts.dead && i < n->n_parents; i++) {
        const rb_job *p = rb_jobs_find(&sq->jobs, n->parents[i]);
        if (p && p->state == RB_JOB_DEAD)
            return rb_xstrdup(n->parents[i]);
    }
    return NULL;
}

bool rb_deps_is_done(const rb_sq *sq, const char *jid)
{
    return sq->deps.done.size && rb_table_get(&sq->deps.done, jid);
}

char **rb_deps_children(const rb_sq *sq, const char *jid, size_t *n)
{
    const rb_dep_named *m = sq->deps.named.size ? rb_table_get(&sq->deps.named, jid) : NULL;
    char **v = NULL;
    *n = 0;
    for (uint32_t i = 0; m && i < m->n; i++) {
        const rb_job *c = rb_jobs_find(&sq->jobs, m->kids[i]);
        if (c ? c->state == RB_JOB_PENDING : !rb_deps_is_done(sq, m->kids[i]))
            continue; /* not pushed yet, or gone */
        if (!v)
            v = rb_xcalloc(m->n, sizeof *v);
        v[(*n)++] = rb_xstrdup(m->kids[i]);
    }
    return v;
}

char **rb_deps_record_parents(const rb_sq *sq, const char *jid, size_t *n)
{
    const rb_dep_done *d = sq->deps.done.size ? rb_table_get(&sq->deps.done, jid) : NULL;
    json_t *a = d && d->parents ? json_loads(d->parents, 0, NULL) : NULL;
    char **v = NULL;
    *n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(a, i, p) {
        if (!json_is_string(p))
            continue;
        if (!v)
            v = rb_xcalloc(json_array_size(a), sizeof *v);
        v[(*n)++] = rb_xstrdup(json_string_value(p));
    }
    json_decref(a);
    return v;
}

/* --- start-up --- */

void rb_deps_load_meta(rb_sq *sq, const char *key, const char *value)
{
    if (strncmp(key, DONE_PREFIX, sizeof DONE_PREFIX - 1) || !value)
        return;
    char *rest;
    int64_t exp = strtoll(value, &rest, 10);
    while (*rest == ' ')
        rest++;
    done_add(sq, key + sizeof DONE_PREFIX - 1, exp, *rest == '[' ? rest : NULL);
}

static int by_expiry(const void *a, const void *b)
{
    int64_t x = (*(rb_dep_done *const *)a)->expires_ms, y = (*(rb_dep_done *const *)b)->expires_ms;
    return x < y ? -1 : x > y;
}

/* Jobs whose JSON names parents, already released (or never held): they
 * are in a workflow, so their ACK is recorded. Every job naming parents
 * is in the index of who names whom. */
static void mark_workflow(void *e, void *arg)
{
    rb_job *j = e;
    rb_sq *sq = arg;
    if (!strstr(j->json, "\"depends_on\""))
        return;
    if (j->state != RB_JOB_WAITING && j->state != RB_JOB_BLOCKED)
        node_make(sq, j->jid);
    json_t *job = json_loads(j->json, 0, NULL);
    if (job)
        named_from(sq, job, j->jid);
    json_decref(job);
}

/* A parent's state as rb_dep_parent_holds takes it: -1 when not stored. */
static int state_of(void *arg, const char *jid)
{
    const rb_job *p = rb_jobs_find(&((rb_sq *)arg)->jobs, jid);
    return p && p->state != RB_JOB_PENDING ? (int)p->state : -1;
}

/* Job c is held by the parents of spec that hold it now
 * (rb_dep_parent_holds): its edges and counts. */
static void hold(rb_sq *sq, rb_job *c, const rb_dep_spec *spec)
{
    rb_dep_node *n = node_make(sq, c->jid);
    free_parents(n);
    n->counts = (rb_dep_counts){0, 0};
    n->mode = spec->mode;
    for (size_t i = 0; i < spec->n; i++) {
        if (!rb_dep_parent_holds(state_of(sq, spec->parents[i]), spec->mode, &n->counts))
            continue; /* done with: succeeded, discarded or ignored */
        add_child(node_make(sq, spec->parents[i]), c->jid);
        add_parent(n, spec->parents[i]);
    }
}

/* A loaded waiting or blocked job's edges from its depends_on and its
 * parents' states now. */
static void rebuild_child(rb_sq *sq, rb_job *c, int64_t now)
{
    json_t *job = json_loads(c->json, 0, NULL);
    rb_dep_spec spec;
    if (!job || rb_dep_parse(job, &spec, NULL)) {
        rb_log_kv(RB_LOG_WARN, RB_LOG_KV("jid", c->jid), "job %s: unreadable depends_on, released",
                  c->jid);
        json_decref(job);
        rb_sq_enqueue(sq, c, c->timer.at_ms, now);
        rb_sq_persist(sq, c);
        return;
    }
    hold(sq, c, &spec);
    rb_dep_spec_release(&spec);
    json_decref(job);
    rb_dep_node *n = node_get(sq, c->jid);
    apply(sq, c, n, rb_dep_state_of(&n->counts), NULL, now);
}

bool rb_deps_retried(rb_sq *sq, rb_job *j, int64_t now)
{
    if (!strstr(j->json, "\"depends_on\""))
        return false;
    json_t *job = json_loads(j->json, 0, NULL);
    rb_dep_spec spec;
    if (!job || rb_dep_parse(job, &spec, NULL)) {
        json_decref(job);
        return false;
    }
    bool *holds = rb_xcalloc(spec.n + 1, sizeof *holds);
    rb_dep_counts c;
    rb_dep_next next = rb_dep_on_retry(&spec, state_of, sq, holds, &c);
    if (next != RB_DEP_NEXT_RELEASE) {
        hold(sq, j, &spec); /* the same rule: the edges rb_dep_on_retry counted */
        rb_jobs_set_state(&sq->jobs, j, next == RB_DEP_NEXT_BLOCK ? RB_JOB_BLOCKED
                                                                    : RB_JOB_WAITING, now);
        check_held(j, node_get(sq, j->jid));
        rb_sq_persist(sq, j);
        rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid),
                  "job %s retried: held by its parents again (%s)", j->jid,
                  next == RB_DEP_NEXT_BLOCK ? "blocked" : "waiting");
    }
    free(holds);
    rb_dep_spec_release(&spec);
    json_decref(job);
    return next != RB_DEP_NEXT_RELEASE;
}

void rb_deps_rebuild(rb_sq *sq)
{
    int64_t now = rb_now_ms();
    /* the records in expiry order (the store gives them by key) */
    size_t nd = sq->deps.done_fifo.size, k = 0;
    rb_dep_done **v = rb_xcalloc(nd + 1, sizeof *v);
    for (rb_link *l = sq->deps.done_fifo.head; l; l = l->next)
        v[k++] = done_of(l);
    qsort(v, nd, sizeof *v, by_expiry);
    sq->deps.done_fifo = (rb_list){0};
    for (size_t i = 0; i < nd; i++)
        rb_list_append(&sq->deps.done_fifo, &v[i]->link);
    free(v);
    for (rb_link *l = sq->deps.done_fifo.head; l; l = l->next) { /* records' parents */
        rb_dep_done *d = done_of(l);
        json_t *a = d->parents ? json_loads(d->parents, 0, NULL) : NULL;
        size_t i;
        json_t *p;
        json_array_foreach(a, i, p)
            if (json_is_string(p))
                named_add(sq, json_string_value(p), d->jid);
        json_decref(a);
    }
    rb_table_each(&sq->jobs.by_jid, mark_workflow, sq);
    rb_list *lists[] = {&sq->jobs.waiting, &sq->jobs.blocked};
    for (int li = 0; li < 2; li++) {
        size_t n = lists[li]->size; /* a job moved to the other list is not seen twice here */
        for (rb_link *e = lists[li]->head, *next; e && n > 0; e = next, n--) {
            next = e->next;
            rb_job *c = rb_job_of_link(e);
            if (!node_get(sq, c->jid) || !node_get(sq, c->jid)->n_parents)
                rebuild_child(sq, c, now);
        }
    }
    rb_deps_expire(sq, now);
}
