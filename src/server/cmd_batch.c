/* BATCH NEW, OPEN, COMMIT and STATUS (Faktory Enterprise batches), one
 * handler for both modes: the subcommand and its argument checked here,
 * the op submitted to the job engine (RB_ENG_BATCH), the reply in
 * batch_done. The rules are engine/batch.c's; docs/protocol.md and
 * docs/workflows.md describe them. */
#include "server/cmds.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/json.h"

/* The longest bid OPEN, COMMIT and STATUS accept (Rebound's are 16 bytes). */
#define BID_MAX 256

/* NEW and OPEN answer the bid as a bulk string (never +OK: the Go client
 * would take "OK" for the bid), COMMIT +OK, STATUS the JSON. */
static void batch_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.batch.verb == RB_ENG_BATCH_COMMIT)
        rb_reply_ok(op->c);
    else
        rb_reply_bulk(op->c, op->u.batch.out, strlen(op->u.batch.out));
    rb_eng_op_finish(srv->eng, op);
}

/* BATCH NEW's argument checked, its callbacks as PUSH's jobs; NULL after
 * replying the error. */
static json_t *new_arg(rb_conn *c, const char *arg, rb_batch_def *def)
{
    if (!*arg) {
        rb_reply_err(c, "BATCH NEW requires a JSON object");
        return NULL;
    }
    json_t *o = rb_cmd_json_arg(c, "BATCH NEW", arg, JSON_OBJECT);
    if (!o)
        return NULL;
    rb_err err = {0};
    if (rb_batch_parse_new(o, def, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        json_decref(o);
        return NULL;
    }
    static const char *const names[RB_BATCH_CBS] = {"complete", "success", "death"};
    for (int k = 0; k < RB_BATCH_CBS; k++) {
        const char *jid = def->cb[k] ? json_string_value(json_object_get(def->cb[k], "jid")) : NULL;
        if (def->cb[k] && (!jid || strlen(jid) < 8)) { /* PUSH's rule, said for a callback */
            rb_reply_err(c, "BATCH NEW: %s: a callback job needs its own jid, a string of at "
                            "least 8 characters (as any pushed job; docs/workflows.md)",
                         names[k]);
            json_decref(o);
            return NULL;
        }
        if (def->cb[k] && rb_job_validate(c->srv, def->cb[k], &err)) {
            rb_reply_err(c, "BATCH NEW: %s: %s", names[k], rb_err_msg(&err));
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

void rb_cmd_batch(rb_conn *c, char *arg)
{
    rb_err err = {0};
    if (rb_eng_batch_check(c->srv->eng, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return;
    }
    char *sub = arg;
    char *rest = rb_cmd_subcommand(arg);
    rb_eng_batch_verb verb;
    if (!strcasecmp(sub, "NEW"))
        verb = RB_ENG_BATCH_NEW;
    else if (!strcasecmp(sub, "OPEN"))
        verb = RB_ENG_BATCH_OPEN;
    else if (!strcasecmp(sub, "COMMIT"))
        verb = RB_ENG_BATCH_COMMIT;
    else if (!strcasecmp(sub, "STATUS"))
        verb = RB_ENG_BATCH_STATUS;
    else {
        rb_reply_err(c, "unknown batch command %.60s", sub);
        return;
    }
    rb_eng_op *op;
    if (verb == RB_ENG_BATCH_NEW) {
        rb_batch_def def;
        json_t *o = new_arg(c, rest, &def);
        if (!o)
            return;
        op = rb_eng_op_new(RB_ENG_BATCH, c, batch_done);
        op->json = o;
        op->u.batch.def = def;
    } else {
        size_t n = strcspn(rest, " \t");
        if (n == 0 || rest[n] != '\0' || n > BID_MAX) {
            rb_reply_err(c, "BATCH %s requires one bid", sub);
            return;
        }
        op = rb_eng_op_new(RB_ENG_BATCH, c, batch_done);
        op->arg = rb_xstrdup(rest);
        op->arg_free = free;
        op->u.batch.bid = op->arg;
    }
    op->u.batch.verb = verb;
    rb_eng_submit(c->srv->eng, op);
}

/* --- BATCHES: Rebound's batch reads --- */

static void batches_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    if (op->u.batch.verb == RB_ENG_BATCH_LIST)
        rb_reply_json(op->c, rb_batch_list_json(op->u.batch.all, op->u.batch.total,
                                                op->u.batch.offset, op->u.batch.limit,
                                                op->u.batch.list, op->u.batch.n));
    else if (op->u.batch.found)
        rb_reply_json(op->c, rb_batch_view_json(&op->u.batch.view));
    else
        rb_reply_null(op->c);
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_batches(rb_conn *c, char *arg)
{
    rb_err err = {0};
    if (rb_eng_batch_check(c->srv->eng, &err)) {
        rb_reply_err(c, "%s", rb_err_msg(&err));
        return;
    }
    json_t *o = rb_cmd_json_arg(c, "BATCHES", arg, JSON_OBJECT);
    if (!o)
        return;
    json_t *bid = json_object_get(o, "bid");
    if (bid) {
        const char *s = json_string_value(bid);
        if (!s || !*s || strlen(s) > BID_MAX) {
            rb_reply_err(c, "BATCHES: bid must be a non-empty string");
            json_decref(o);
            return;
        }
        rb_eng_op *op = rb_eng_op_new(RB_ENG_BATCH, c, batches_done);
        op->json = o; /* the bid's */
        op->u.batch.verb = RB_ENG_BATCH_VIEW;
        op->u.batch.bid = s;
        rb_eng_submit(c->srv->eng, op);
        return;
    }
    const char *state = rb_json_str(o, "state");
    json_t *off = json_object_get(o, "offset"), *lim = json_object_get(o, "limit");
    int64_t offset = off ? json_integer_value(off) : 0;
    int64_t limit = lim ? json_integer_value(lim) : RB_BATCH_LIST_LIMIT;
    if ((json_object_get(o, "state") && !state) ||
        (state && strcmp(state, "open") && strcmp(state, "all"))) {
        rb_reply_err(c, "BATCHES: state must be open or all");
    } else if ((off && !json_is_integer(off)) || offset < 0 || (lim && !json_is_integer(lim)) ||
               limit < 0 || limit > RB_BATCH_LIST_MAX) {
        rb_reply_err(c, "BATCHES: offset must be >= 0 and limit from 0 to %d",
                     RB_BATCH_LIST_MAX);
    } else {
        rb_eng_op *op = rb_eng_op_new(RB_ENG_BATCH, c, batches_done);
        op->u.batch.verb = RB_ENG_BATCH_LIST;
        op->u.batch.all = state && !strcmp(state, "all");
        op->u.batch.offset = offset;
        op->u.batch.limit = limit;
        rb_eng_submit(c->srv->eng, op);
    }
    json_decref(o);
}
