/* TRACK SET and TRACK GET (Faktory Enterprise's progress tracking), one
 * handler for both modes: the subcommand and its argument checked here
 * (engine/track.h), the op submitted to the job engine (RB_ENG_TRACK),
 * the reply in track_done. docs/protocol.md and docs/enterprise.md. */
#include "server/cmds.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The longest jid TRACK GET accepts. */
#define JID_MAX 256

/* SET: +OK; GET: the record's JSON. */
static void track_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.track.get)
        rb_reply_json(op->c, json_incref(op->u.track.reply));
    else
        rb_reply_ok(op->c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_track(rb_conn *c, char *arg)
{
    rb_err err = {0};
    if (rb_eng_track_check(c->srv->eng, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return;
    }
    char *sub = arg;
    char *rest = rb_cmd_subcommand(arg);
    rb_eng_op *op;
    if (!strcasecmp(sub, "GET")) {
        size_t n = strcspn(rest, " \t");
        if (n == 0 || rest[n] != '\0' || n > JID_MAX) {
            rb_reply_err(c, "TRACK GET requires one jid");
            return;
        }
        json_t *jid = json_stringn(rest, n);
        if (!jid) {
            rb_reply_err(c, "TRACK GET: jid must be valid UTF-8");
            return;
        }
        op = rb_eng_op_new(RB_ENG_TRACK, c, track_done);
        op->json = jid;
        op->u.track.get = true;
        op->u.track.jid = json_string_value(jid);
    } else if (!strcasecmp(sub, "SET")) {
        if (!*rest) {
            rb_reply_err(c, "TRACK SET requires a JSON object");
            return;
        }
        json_t *o = rb_cmd_json_arg(c, "TRACK SET", rest, JSON_OBJECT);
        if (!o)
            return;
        rb_track_set set;
        if (rb_track_parse_set(o, &set, &err)) {
            rb_reply_err(c, "%s", rb_err_msg(&err));
            json_decref(o);
            return;
        }
        op = rb_eng_op_new(RB_ENG_TRACK, c, track_done);
        op->json = o;
        op->u.track.set = set;
    } else {
        rb_reply_err(c, "unknown track command %.60s (TRACK GET jid or TRACK SET {json})", sub);
        return;
    }
    rb_eng_submit(c->srv->eng, op);
}
