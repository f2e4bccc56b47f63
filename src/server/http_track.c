/* GET /api/track/JID: a tracked job's progress record for the dashboard's
 * job page, TRACK GET's JSON through the same op (RB_ENG_TRACK,
 * engine/track.h; docs/http.md). An untracked or unknown job answers the
 * "unknown" record with 200, as TRACK GET does; a backend without tracking
 * would refuse it (RB_TRACK_UNSUPPORTED; both backends keep it). */
#include "server/http_impl.h"

#include <stdlib.h>

#include "common/buf.h"

static void track_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_api_failed(srv, op))
        return;
    rb_http_reply_json(rb_api_call_of(op)->req, 200, json_incref(op->u.track.reply));
    rb_eng_op_finish(srv->eng, op);
}

void rb_api_track(rb_http_req *r)
{
    rb_eng_op *op = rb_api_op(r, RB_ENG_TRACK, track_done);
    op->u.track.get = true;
    op->u.track.jid = rb_api_call_of(op)->strs[0] = rb_xstrdup(r->seg[1]);
    rb_eng_submit(r->h->srv->eng, op);
}
