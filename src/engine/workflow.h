/* A workflow's graph as both backends read it (RB_ENG_WORKFLOW, GET
 * /api/workflow/JID, WORKFLOW, docs/workflows.md "Seeing it"): the
 * connected component over dependency edges of any member job, expanded
 * here once through a backend's probe (what it knows of one jid), and its
 * JSON, built once for both. Pure: no I/O but the probe's. */
#ifndef RB_ENGINE_WORKFLOW_H
#define RB_ENGINE_WORKFLOW_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/error.h"
#include "engine/reads.h"

/* The most nodes a graph holds; a bigger workflow is cut there with
 * "truncated": true. */
#define RB_WORKFLOW_MAX_NODES 2000

/* What a backend knows of one jid. */
typedef enum rb_wf_known {
    RB_WF_UNKNOWN = 0,   /* no such job, nor a succeeded record (expired, discarded) */
    RB_WF_STORED = 1,    /* a stored job (any state but PENDING): view filled */
    RB_WF_SUCCEEDED = 2, /* ACKed, known by its succeeded record only */
} rb_wf_known;

/* A probe's answer for one jid. The backend fills known, view (STORED:
 * as JOB reads it, waits_for and blocked_by set for a waiting or blocked
 * job), the children it knows for the jid (STORED or SUCCEEDED: every job
 * that named it in depends_on and is itself still stored or recorded as
 * succeeded, whether its edge is used up or not: the single node's index
 * of who names whom, PostgreSQL's rb_edges and rb_edges_used), and for a
 * SUCCEEDED jid its own parents as its record keeps them (the job's
 * depends_on when it was ACKed; known or not). A STORED job's parents come
 * from the view's depends_on (rb_dep_parse), here. Strings owned. */
typedef struct rb_wf_probe {
    rb_wf_known known;
    rb_job_view view;
    char **children;
    size_t n_children;
    char **parents; /* SUCCEEDED only */
    size_t n_parents;
} rb_wf_probe;

/* Fills *out[i] for jids[i], i < n (each zeroed first); 0, or a negative
 * RB_E* code with err set (a store error; the graph then stops there).
 * Called once per breadth-first level with the whole level, so a backend
 * that asks a database asks a few statements per level, not per job. */
typedef int (*rb_wf_probe_fn)(void *arg, const char *const *jids, size_t n, rb_wf_probe *const *out,
                              rb_err *err);

typedef struct rb_wf_node {
    void *hnext;
    rb_wf_probe p;
    size_t index;     /* in rb_workflow.nodes until sorted */
    int layer;        /* longest path from a root (a node without parents here) */
    bool blocking;    /* a dead parent that some child here is blocked by */
    char *killed_by;  /* dead of a dependency: the parent whose death killed it (owned) */
    size_t *retry;    /* the dead jobs to retry for it to run, by node index, root
                         causes first (owned; n_retry entries) */
    size_t n_retry;
    char jid[];
} rb_wf_node;

typedef struct rb_wf_edge {
    size_t parent, child; /* indexes into rb_workflow.nodes */
} rb_wf_edge;

/* A workflow's graph: nodes in layer order then jid (deterministic),
 * edges parent -> child by the nodes' order, each once. Owned. */
typedef struct rb_workflow {
    rb_wf_node **nodes;
    size_t n_nodes;
    rb_wf_edge *edges;
    size_t n_edges;
    size_t max_nodes; /* the cap it was built with */
    bool truncated;   /* max_nodes reached: some members left out */
} rb_workflow;

/* Expands the component of jid (max_nodes 0: RB_WORKFLOW_MAX_NODES) into
 * *g through probe, breadth first from jid: each stored or succeeded
 * node's parents and children, so that the same jobs and edges come
 * whichever member is named. An unknown node (neither stored nor
 * recorded) is shown but not expanded. Returns 0, RB_ENOENT when jid is
 * not a stored job (err "no job 'J'"; *g empty), or the probe's error. *g
 * is always safe to rb_workflow_release. */
int rb_workflow_build(const char *jid, size_t max_nodes, rb_wf_probe_fn probe, void *arg,
                      rb_workflow *g, rb_err *err);
void rb_workflow_release(rb_workflow *g);
void rb_wf_probe_release(rb_wf_probe *p);

/* The graph's JSON (docs/http.md, GET /api/workflow/JID):
 * {"jid", "truncated", "max_nodes", "nodes": [{"jid", "jobtype", "queue",
 * "state", "attempts", "waits_for", "blocked_by", "blocking", "layer",
 * "killed_by", "retry"}], "edges": [{"parent", "child"}]}. state is the
 * job's state name, "succeeded" or "unknown" (then jobtype, queue and
 * attempts are null). killed_by: a dead job's parent whose death killed it
 * (null: it did not die of a dependency). retry: the dead jobs of the graph
 * that must be retried for this job to run (docs/workflows.md, "Retrying a
 * job killed by its dependency"), root causes first, the job itself last
 * when it is dead: a blocked or waiting job's come from its parents that
 * hold it, a dead job's are its parents' and itself; empty when nothing
 * dead stands in its way. The caller owns the result. */
json_t *rb_workflow_json(const char *jid, const rb_workflow *g);

#endif
