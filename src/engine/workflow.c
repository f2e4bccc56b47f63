/* A workflow's graph, expanded through a backend's probe, and its JSON
 * (workflow.h). */
#include "engine/workflow.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/table.h"
#include "engine/depend.h"
#include "engine/failure.h"
#include "engine/job_state.h"

void rb_wf_probe_release(rb_wf_probe *p)
{
    rb_job_view_release(&p->view);
    for (size_t i = 0; i < p->n_children; i++)
        free(p->children[i]);
    free(p->children);
    for (size_t i = 0; i < p->n_parents; i++)
        free(p->parents[i]);
    free(p->parents);
    memset(p, 0, sizeof *p);
}

void rb_workflow_release(rb_workflow *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        rb_wf_probe_release(&g->nodes[i]->p);
        free(g->nodes[i]->killed_by);
        free(g->nodes[i]->retry);
        free(g->nodes[i]);
    }
    free(g->nodes);
    free(g->edges);
    memset(g, 0, sizeof *g);
}

static const char *node_key(const void *e)
{
    return ((const rb_wf_node *)e)->jid;
}

/* The expansion's state: the graph being filled, its jid index, the cap. */
typedef struct expand {
    rb_workflow *g;
    rb_table by_jid;
    size_t cap_nodes, cap_edges, max;
} expand;

/* jid's index, added when new; -1 when the cap leaves it out. */
static long node_add(expand *x, const char *jid)
{
    rb_wf_node *n = rb_table_get(&x->by_jid, jid);
    if (n)
        return (long)n->index;
    rb_workflow *g = x->g;
    if (g->n_nodes >= x->max) {
        g->truncated = true;
        return -1;
    }
    size_t len = strlen(jid) + 1;
    n = rb_xcalloc(1, sizeof *n + len);
    memcpy(n->jid, jid, len);
    n->index = g->n_nodes;
    if (g->n_nodes == x->cap_nodes) {
        x->cap_nodes = x->cap_nodes ? x->cap_nodes * 2 : 16;
        g->nodes = rb_xrealloc(g->nodes, x->cap_nodes * sizeof *g->nodes);
    }
    g->nodes[g->n_nodes++] = n;
    rb_table_put(&x->by_jid, n);
    return (long)n->index;
}

static void edge_add(expand *x, long parent, long child)
{
    if (parent < 0 || child < 0)
        return;
    rb_workflow *g = x->g;
    if (g->n_edges == x->cap_edges) {
        x->cap_edges = x->cap_edges ? x->cap_edges * 2 : 16;
        g->edges = rb_xrealloc(g->edges, x->cap_edges * sizeof *g->edges);
    }
    g->edges[g->n_edges++] = (rb_wf_edge){(size_t)parent, (size_t)child};
}

/* Node i's neighbours: its parents (a stored job's depends_on, a
 * succeeded one's record) and the children the backend knows. */
static void expand_node(expand *x, size_t i)
{
    rb_wf_node *n = x->g->nodes[i];
    if (n->p.known == RB_WF_UNKNOWN)
        return;
    json_t *job = n->p.view.json ? json_loads(n->p.view.json, 0, NULL) : NULL;
    rb_dep_spec spec;
    if (job && !rb_dep_parse(job, &spec, NULL)) {
        for (size_t k = 0; k < spec.n; k++)
            edge_add(x, node_add(x, spec.parents[k]), (long)i);
        rb_dep_spec_release(&spec);
    }
    json_decref(job);
    for (size_t k = 0; k < n->p.n_parents; k++)
        edge_add(x, node_add(x, n->p.parents[k]), (long)i);
    for (size_t k = 0; k < n->p.n_children; k++)
        edge_add(x, (long)i, node_add(x, n->p.children[k]));
}

/* Longest-path layers from the roots (Kahn's order over each node's
 * outgoing edges, O(V + E); a DAG by the push's checks, but a node left
 * on a cycle keeps layer 0). */
static void layer(rb_workflow *g)
{
    size_t n = g->n_nodes;
    size_t *indeg = rb_xcalloc(n + 1, sizeof *indeg), *queue = rb_xcalloc(n + 1, sizeof *queue);
    size_t *first = rb_xcalloc(n + 2, sizeof *first); /* node i's edges: out[first[i]..first[i+1]) */
    size_t *out = rb_xcalloc(g->n_edges + 1, sizeof *out), *fill = rb_xcalloc(n + 1, sizeof *fill);
    for (size_t e = 0; e < g->n_edges; e++) {
        indeg[g->edges[e].child]++;
        first[g->edges[e].parent + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    for (size_t e = 0; e < g->n_edges; e++) {
        size_t p = g->edges[e].parent;
        out[first[p] + fill[p]++] = g->edges[e].child;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (!indeg[i])
            queue[tail++] = i;
    while (head < tail) {
        size_t p = queue[head++];
        for (size_t k = first[p]; k < first[p + 1]; k++) {
            size_t c = out[k];
            if (g->nodes[c]->layer < g->nodes[p]->layer + 1)
                g->nodes[c]->layer = g->nodes[p]->layer + 1;
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    free(indeg);
    free(queue);
    free(first);
    free(out);
    free(fill);
}

static int by_layer(const void *a, const void *b)
{
    const rb_wf_node *x = *(rb_wf_node *const *)a, *y = *(rb_wf_node *const *)b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return strcmp(x->jid, y->jid);
}

static int by_ends(const void *a, const void *b)
{
    const rb_wf_edge *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    return x->child < y->child ? -1 : x->child > y->child;
}

/* Sorts the nodes, renumbers and sorts the edges, drops repeated ones. */
static void order(rb_workflow *g)
{
    qsort(g->nodes, g->n_nodes, sizeof *g->nodes, by_layer);
    size_t *at = rb_xcalloc(g->n_nodes + 1, sizeof *at);
    for (size_t i = 0; i < g->n_nodes; i++)
        at[g->nodes[i]->index] = i;
    for (size_t i = 0; i < g->n_nodes; i++)
        g->nodes[i]->index = i;
    for (size_t e = 0; e < g->n_edges; e++)
        g->edges[e] = (rb_wf_edge){at[g->edges[e].parent], at[g->edges[e].child]};
    free(at);
    if (g->n_edges) /* edges is NULL without any */
        qsort(g->edges, g->n_edges, sizeof *g->edges, by_ends);
    size_t k = 0;
    for (size_t e = 0; e < g->n_edges; e++)
        if (!k || by_ends(&g->edges[k - 1], &g->edges[e]))
            g->edges[k++] = g->edges[e];
    g->n_edges = k;
}

/* A stored node's state, -1 for a succeeded or unknown one. */
static int state_of(const rb_wf_node *n)
{
    return n->p.known == RB_WF_STORED ? n->p.view.state : -1;
}

/* Adds the indexes of from (sorted) to n's retry list, kept sorted and
 * without repeats. */
static void retry_union(rb_wf_node *n, const size_t *from, size_t k)
{
    size_t *out = rb_xcalloc(n->n_retry + k + 1, sizeof *out), a = 0, b = 0, m = 0;
    while (a < n->n_retry || b < k) {
        if (b >= k || (a < n->n_retry && n->retry[a] <= from[b])) {
            if (b < k && from[b] == n->retry[a])
                b++; /* in both */
            out[m++] = n->retry[a++];
        } else {
            out[m++] = from[b++];
        }
    }
    free(n->retry);
    n->retry = out;
    n->n_retry = m;
}

/* Each node's killed_by and retry list (nodes sorted: parents come before
 * their children). A held or dead job needs what its parents that hold it
 * (rb_dep_parent_holds) need: a dead parent itself and what it needs, a
 * held parent what it needs; a dead job needs itself too. */
static void advise(rb_workflow *g)
{
    size_t n = g->n_nodes;
    size_t *first = rb_xcalloc(n + 2, sizeof *first); /* node i's parents: in[first[i]..) */
    size_t *in = rb_xcalloc(g->n_edges + 1, sizeof *in), *fill = rb_xcalloc(n + 1, sizeof *fill);
    for (size_t e = 0; e < g->n_edges; e++)
        first[g->edges[e].child + 1]++;
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    for (size_t e = 0; e < g->n_edges; e++)
        in[first[g->edges[e].child] + fill[g->edges[e].child]++] = g->edges[e].parent;
    for (size_t i = 0; i < n; i++) {
        rb_wf_node *c = g->nodes[i];
        int st = state_of(c);
        if (st == RB_JOB_DEAD && c->p.view.history) {
            json_t *h = json_loads(c->p.view.history, 0, NULL);
            c->killed_by = rb_fail_killed_by(h);
            json_decref(h);
        }
        if (st != RB_JOB_DEAD && st != RB_JOB_WAITING && st != RB_JOB_BLOCKED)
            continue;
        json_t *job = c->p.view.json ? json_loads(c->p.view.json, 0, NULL) : NULL;
        rb_dep_spec spec = {0};
        rb_dep_mode mode = job && !rb_dep_parse(job, &spec, NULL) ? spec.mode : RB_DEP_BLOCK;
        rb_dep_spec_release(&spec);
        json_decref(job);
        for (size_t k = first[i]; k < first[i + 1]; k++) {
            const rb_wf_node *p = g->nodes[in[k]];
            rb_dep_counts unused = {0, 0};
            if (p->index < i && rb_dep_parent_holds(state_of(p), mode, &unused))
                retry_union(c, p->retry, p->n_retry);
        }
        if (st == RB_JOB_DEAD)
            retry_union(c, &i, 1);
    }
    free(first);
    free(in);
    free(fill);
}

int rb_workflow_build(const char *jid, size_t max_nodes, rb_wf_probe_fn probe, void *arg,
                      rb_workflow *g, rb_err *err)
{
    memset(g, 0, sizeof *g);
    g->max_nodes = max_nodes ? max_nodes : RB_WORKFLOW_MAX_NODES;
    expand x = {.g = g, .max = g->max_nodes};
    rb_table_init(&x.by_jid, offsetof(rb_wf_node, hnext), node_key);
    int rc = 0;
    node_add(&x, jid);
    /* level by level: nodes [from, to) were found by the level before
     * (the same order as probing and expanding one node at a time) */
    for (size_t from = 0, to; from < g->n_nodes; from = to) {
        to = g->n_nodes;
        const char **jids = rb_xmalloc((to - from) * sizeof *jids);
        rb_wf_probe **out = rb_xmalloc((to - from) * sizeof *out);
        for (size_t i = from; i < to; i++) {
            jids[i - from] = g->nodes[i]->jid;
            out[i - from] = &g->nodes[i]->p;
        }
        rc = probe(arg, jids, to - from, out, err);
        free(jids);
        free(out);
        if (rc)
            break;
        if (from == 0 && g->nodes[0]->p.known != RB_WF_STORED) {
            rc = rb_err_set(err, RB_ENOENT, "no job '%s'", jid);
            break;
        }
        for (size_t i = from; i < to; i++)
            expand_node(&x, i);
    }
    if (rc) {
        rb_table_release(&x.by_jid);
        rb_workflow_release(g);
        return rc;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const char *b = g->nodes[i]->p.view.blocked_by;
        rb_wf_node *p = b ? rb_table_get(&x.by_jid, b) : NULL;
        if (p)
            p->blocking = true;
    }
    rb_table_release(&x.by_jid);
    layer(g);
    order(g);
    advise(g);
    return 0;
}

static json_t *node_json(const rb_workflow *g, const rb_wf_node *n)
{
    const rb_job_view *v = &n->p.view;
    json_t *retry = json_array();
    for (size_t k = 0; k < n->n_retry; k++)
        json_array_append_new(retry, json_string(g->nodes[n->retry[k]]->jid));
    json_t *o = json_pack("{s:s, s:i, s:b, s:o, s:o}", "jid", n->jid, "layer", n->layer,
                          "blocking", n->blocking, "killed_by",
                          n->killed_by ? json_string(n->killed_by) : json_null(), "retry", retry);
    if (n->p.known != RB_WF_STORED) {
        json_object_set_new(o, "state", json_string(n->p.known == RB_WF_SUCCEEDED ? "succeeded"
                                                                                : "unknown"));
        json_object_set_new(o, "jobtype", json_null());
        json_object_set_new(o, "queue", json_null());
        json_object_set_new(o, "attempts", json_null());
        json_object_set_new(o, "waits_for", json_array());
        json_object_set_new(o, "blocked_by", json_null());
        return o;
    }
    json_t *job = v->json ? json_loads(v->json, 0, NULL) : NULL;
    json_t *jt = json_object_get(job, "jobtype");
    json_object_set_new(o, "state", json_string(rb_job_state_name((rb_job_state)v->state)));
    json_object_set_new(o, "jobtype", json_is_string(jt) ? json_copy(jt) : json_null());
    json_object_set_new(o, "queue", json_string(v->queue ? v->queue : "default"));
    json_object_set_new(o, "attempts", json_integer(v->attempts));
    json_t *w = v->waits_for ? json_loads(v->waits_for, 0, NULL) : NULL;
    json_object_set_new(o, "waits_for", json_is_array(w) ? w : json_array());
    if (w && !json_is_array(w))
        json_decref(w);
    json_object_set_new(o, "blocked_by", v->blocked_by ? json_string(v->blocked_by) : json_null());
    json_decref(job);
    return o;
}

json_t *rb_workflow_json(const char *jid, const rb_workflow *g)
{
    json_t *nodes = json_array(), *edges = json_array();
    for (size_t i = 0; i < g->n_nodes; i++)
        json_array_append_new(nodes, node_json(g, g->nodes[i]));
    for (size_t e = 0; e < g->n_edges; e++)
        json_array_append_new(edges, json_pack("{s:s, s:s}", "parent",
                                               g->nodes[g->edges[e].parent]->jid, "child",
                                               g->nodes[g->edges[e].child]->jid));
    return json_pack("{s:s, s:b, s:i, s:o, s:o}", "jid", jid, "truncated", g->truncated,
                     "max_nodes", (int)g->max_nodes, "nodes", nodes, "edges", edges);
}
