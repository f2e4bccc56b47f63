/* GET /api/groups (every queue's summary), /api/groups/Q (a queue's
 * groups: ?state=&offset=&limit=), /api/groups/Q/G (one group), and POST
 * /api/groups/Q/G/set|pause|resume (docs/http.md, "Groups"): GROUP and
 * GROUPS through the same engine op and checks (engine/group_cmd.h); 400
 * for bad input with GROUP's message, 404 for an unknown queue, 500 for a
 * storage error; actions answer after their commit. */
#include "server/http_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

static void groups_done(rb_srv *srv, rb_eng_op *op)
{
    struct evhttp_request *req = rb_api_call_of(op)->req;
    if (op->rc == RB_ENOENT) {
        rb_http_reply_error(req, 404, "%s", rb_err_msg(&op->err));
        rb_eng_op_finish(srv->eng, op);
        return;
    }
    if (rb_api_failed(srv, op))
        return;
    const rb_group_req *g = &op->u.group.req;
    json_t *out;
    if (g->verb == RB_GROUP_GET) {
        out = rb_group_view_json(&srv->cfg, &op->u.group.view);
    } else if (g->verb == RB_GROUP_LIST) {
        out = rb_groups_reply_json(&srv->cfg, g, op->u.group.sums, op->u.group.n_sums,
                                   op->u.group.views, op->u.group.n, op->u.group.total);
    } else {
        if (op->applied == RB_ENG_APPLIED)
            rb_group_log_change(g, "the HTTP API");
        out = json_pack("{s:s, s:s, s:s}", "queue", g->queue, "group", g->group, "action",
                        rb_api_call_of(op)->action);
    }
    rb_http_reply_json(req, 200, out);
    rb_eng_op_finish(srv->eng, op);
}

/* r submitted as RB_ENG_GROUP for req (taken over). */
static void submit(rb_http_req *r, rb_group_req *g, const char *action)
{
    rb_eng_op *op = rb_api_op(r, RB_ENG_GROUP, groups_done);
    snprintf(rb_api_call_of(op)->action, sizeof rb_api_call_of(op)->action, "%s", action);
    op->u.group.req = *g;
    rb_eng_submit(r->h->srv->eng, op);
}

/* False after answering 400 where the backend keeps no groups. */
static bool supported(rb_http_req *r, const char *cmd)
{
    rb_err err = {0};
    if (!rb_eng_group_check(r->h->srv->eng, cmd, &err))
        return true;
    rb_http_reply_error(r->req, 400, "%s", rb_err_msg(&err));
    return false;
}

void rb_api_groups(rb_http_req *r)
{
    if (!supported(r, "GROUPS"))
        return;
    json_t *q = json_object();
    if (r->nseg > 1)
        json_object_set_new(q, "queue", json_string(r->seg[1]));
    static const char *const keys[] = {"state", "offset", "limit"};
    for (size_t i = 0; i < 3; i++) {
        char *v = rb_http_query(r->req, keys[i]);
        if (v)
            json_object_set_new(q, keys[i], json_string(v));
        free(v);
    }
    rb_group_req g;
    rb_err err = {0};
    int rc = rb_groups_req_from_json(q, &g, &err);
    json_decref(q);
    if (rc) {
        rb_http_reply_error(r->req, 400, "%s", rb_err_msg(&err));
        return;
    }
    submit(r, &g, "list");
}

void rb_api_group(rb_http_req *r)
{
    if (!supported(r, "GROUP"))
        return;
    rb_group_req g;
    rb_err err = {0};
    if (rb_group_req_from_json(RB_GROUP_GET, r->seg[1], r->seg[2], NULL, rb_now_ms(), &g, &err)) {
        rb_http_reply_error(r->req, 400, "%s", rb_err_msg(&err));
        return;
    }
    submit(r, &g, "get");
}

void rb_api_group_action(rb_http_req *r)
{
    static const struct {
        const char *name;
        rb_group_verb verb;
    } actions[] = {{"set", RB_GROUP_SET}, {"pause", RB_GROUP_PAUSE}, {"resume", RB_GROUP_RESUME}};
    size_t i;
    for (i = 0; i < 3 && strcmp(actions[i].name, r->seg[3]); i++)
        ;
    if (i == 3) {
        rb_http_reply_error(r->req, 404, "no such group action '%s' (set, pause or resume)",
                            r->seg[3]);
        return;
    }
    if (!supported(r, "GROUP"))
        return;
    json_t *body = rb_http_body_json(r->req);
    if (!body)
        return;
    rb_group_req g;
    rb_err err = {0};
    int rc = rb_group_req_from_json(actions[i].verb, r->seg[1], r->seg[2], body, rb_now_ms(), &g,
                                    &err);
    json_decref(body);
    if (rc) {
        rb_http_reply_error(r->req, 400, "%s", rb_err_msg(&err));
        return;
    }
    submit(r, &g, actions[i].name);
}
