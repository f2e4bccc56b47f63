/* GROUP SET, PAUSE, RESUME, GET and GROUPS (issue 30, docs/protocol.md),
 * one handler for both modes: the request parsed and checked by the
 * engine (engine/group_cmd.h), submitted as RB_ENG_GROUP, the reply in
 * group_done once the change is durable. */
#include "server/cmds.h"

#include "common/timeutil.h"

/* SET, PAUSE, RESUME: +OK after the commit (logged); GET and GROUPS: the
 * JSON. */
static void group_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    const rb_group_req *r = &op->u.group.req;
    if (r->verb == RB_GROUP_GET) {
        rb_reply_json(op->c, rb_group_view_json(&srv->cfg, &op->u.group.view));
    } else if (r->verb == RB_GROUP_LIST) {
        rb_reply_json(op->c, rb_groups_reply_json(&srv->cfg, r, op->u.group.sums,
                                                  op->u.group.n_sums, op->u.group.views,
                                                  op->u.group.n, op->u.group.total));
    } else {
        if (op->applied == RB_ENG_APPLIED)
            rb_group_log_change(r, "a client");
        rb_reply_ok(op->c);
    }
    rb_eng_op_finish(srv->eng, op);
}

/* The parsed request r submitted for c. */
static void submit(rb_conn *c, const rb_group_req *r)
{
    rb_eng_op *op = rb_eng_op_new(RB_ENG_GROUP, c, group_done);
    op->u.group.req = *r;
    rb_eng_submit(c->srv->eng, op);
}

void rb_cmd_group(rb_conn *c, char *arg)
{
    rb_group_req r;
    rb_err err = {0};
    if (rb_eng_group_check(c->srv->eng, "GROUP", &err) ||
        rb_group_cmd_parse(arg, rb_now_ms(), &r, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return;
    }
    submit(c, &r);
}

void rb_cmd_groups(rb_conn *c, char *arg)
{
    rb_group_req r;
    rb_err err = {0};
    if (rb_eng_group_check(c->srv->eng, "GROUPS", &err) || rb_groups_cmd_parse(arg, &r, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return;
    }
    submit(c, &r);
}
