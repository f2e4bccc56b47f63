/* The command handlers, one per command (cmd_jobs.c: the work commands,
 * cmd_admin.c: inspection and administration), and the helpers they share.
 * Each handler either replies at once or marks the connection busy and
 * replies when its commit is done. */
#ifndef RB_SERVER_CMDS_H
#define RB_SERVER_CMDS_H

#include "server/srv.h"

void rb_cmd_push(rb_conn *c, char *arg);
void rb_cmd_pushb(rb_conn *c, char *arg);
void rb_cmd_fetch(rb_conn *c, char *arg);
void rb_cmd_ack(rb_conn *c, char *arg);
void rb_cmd_fail(rb_conn *c, char *arg);
void rb_cmd_snooze(rb_conn *c, char *arg);
void rb_cmd_extend(rb_conn *c, char *arg);
void rb_cmd_info(rb_conn *c, char *arg);
void rb_cmd_flush(rb_conn *c, char *arg);
void rb_cmd_mutate(rb_conn *c, char *arg);
void rb_cmd_queue(rb_conn *c, char *arg);
void rb_cmd_job(rb_conn *c, char *arg);
/* WORKFLOW {"jid": J}: the workflow graph's JSON (engine/workflow.h), nil
 * for an unknown jid (a Rebound extension, docs/protocol.md). */
void rb_cmd_workflow(rb_conn *c, char *arg);
void rb_cmd_jobs(rb_conn *c, char *arg);
void rb_cmd_workers(rb_conn *c, char *arg);
void rb_cmd_batch(rb_conn *c, char *arg);
/* BATCHES {"bid": B}: a batch's page (engine/batch_view.h), nil for an
 * unknown bid; BATCHES {"state": "open"|"all", "offset", "limit"}: the
 * listing (a Rebound extension, docs/protocol.md). */
void rb_cmd_batches(rb_conn *c, char *arg);
/* TRACK SET {json} and TRACK GET jid: Faktory Enterprise's progress
 * tracking (engine/track.h; docs/enterprise.md), one handler for both
 * modes; refused where the backend keeps none. */
void rb_cmd_track(rb_conn *c, char *arg);
/* cmd_group.c: GROUP SET|PAUSE|RESUME|GET QUEUE GROUP ... and GROUPS
 * [JSON] (engine/group_cmd.h; docs/protocol.md), one handler each for
 * both modes; refused where the backend keeps no groups. */
void rb_cmd_group(rb_conn *c, char *arg);
void rb_cmd_groups(rb_conn *c, char *arg);
/* cmd_backup.c */
void rb_cmd_backup(rb_conn *c, char *arg);

/* Parses arg as JSON of the given type (JSON_OBJECT, JSON_ARRAY, or -1 for
 * any). On failure replies an error naming verb and returns NULL. */
json_t *rb_cmd_json_arg(rb_conn *c, const char *verb, const char *arg, int want_type);
/* o's "jid" string, or NULL after replying an error. Borrowed from o. */
const char *rb_cmd_jid(rb_conn *c, const char *verb, const json_t *o);
/* A command with subcommands (BATCH NEW ..., TRACK GET ...): ends the first
 * word of arg in place and returns what follows it, blanks skipped. */
char *rb_cmd_subcommand(char *arg);
/* The size of the buffer rb_cmd_fail_fields writes a numeric retry_after
 * into (the longest is "9200000000000000000"). */
#define RB_CMD_RETRY_AFTER 32
/* FAIL's optional fields of o into in (strings borrowed from o; a numeric
 * retry_after is written into ra_buf). 0, or RB_EINVAL with the error reply's
 * text in err (nothing is replied). FAIL, SNOOZE and EXTEND check their
 * argument before the job. */
int rb_cmd_fail_fields(json_t *o, rb_fail_input *in, char *ra_buf, size_t ra_len, rb_err *err);
/* o's integer field key in [lo, hi] (SNOOZE's seconds, EXTEND's
 * reserve_for), or -1 with the error reply's text in err (nothing is
 * replied). */
int64_t rb_cmd_bounded(const char *verb, json_t *o, const char *key, int64_t lo, int64_t hi,
                       rb_err *err);
/* The size of the key buffer rb_cmd_pushb_key may write into. */
#define RB_CMD_PUSHB_KEY 32
/* The name of PUSHB's i-th job in its error object: the job's jid, or "#i"
 * written into key when it is not an object with a string jid. */
const char *rb_cmd_pushb_key(const json_t *job, size_t i, char key[RB_CMD_PUSHB_KEY]);
/* FETCH's queue names, split out of arg (owned: free each and the array)
 * into a new array of *n; NULL with *n == 0 after replying an error when
 * there is none. */
char **rb_cmd_fetch_queues(rb_conn *c, char *arg, int *n);
/* BEAT's reply for a worker with this signal (0, RB_WORKER_QUIET or
 * RB_WORKER_TERMINATE), or the server's own shutdown quiet when stronger. */
void rb_cmd_beat_reply(rb_conn *c, int signal);
/* The process's resident memory in MiB, or 0 when /proc cannot say. */
long rb_cmd_rss_mb(void);

#endif
