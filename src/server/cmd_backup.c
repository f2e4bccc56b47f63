/* BACKUP {"path": "/abs/file"}: a consistent copy of a single node's
 * database written by the server into a new file, while it goes on
 * serving (the backend's backup, RB_ENG_BACKUP); `rebound backup` sends
 * it. Replies {"path", "bytes"} once the copy is complete and durable.
 * Distributed mode refuses it (pg_dump). docs/operations.md. */
#include "server/cmds.h"

#include <limits.h>
#include <string.h>

#include "common/log.h"

static void backup_done(rb_srv *srv, rb_eng_op *op)
{
    if (rb_reply_failed(srv, op))
        return;
    rb_log(RB_LOG_INFO, "backup written to %s (%lld bytes)", op->u.backup.path,
           (long long)op->u.backup.bytes);
    rb_reply_json(op->c, json_pack("{s:s, s:I}", "path", op->u.backup.path, "bytes",
                                   (json_int_t)op->u.backup.bytes));
    rb_eng_op_finish(srv->eng, op);
}

void rb_cmd_backup(rb_conn *c, char *arg)
{
    json_t *o = rb_cmd_json_arg(c, "BACKUP", arg, JSON_OBJECT);
    if (!o)
        return;
    json_t *p = json_object_get(o, "path");
    const char *path = json_string_value(p);
    if (!path || path[0] != '/' || strlen(path) != json_string_length(p) ||
        strlen(path) >= PATH_MAX - 8) {
        rb_reply_err(c, "BACKUP: path must be an absolute file path (a string starting with /)");
        json_decref(o);
        return;
    }
    rb_eng_op *op = rb_eng_op_new(RB_ENG_BACKUP, c, backup_done);
    op->json = o;
    op->u.backup.path = path;
    rb_eng_submit(c->srv->eng, op);
}
