/* Faktory Enterprise batches: the definition's checks, the counters and
 * callback rules, STATUS's JSON and the stored form (engine/batch.h). */
#include "engine/batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"

static const char *const cb_key[RB_BATCH_CBS] = {"complete", "success", "death"};

/* --- BATCH NEW --- */

int rb_batch_parse_new(json_t *o, rb_batch_def *def, rb_err *err)
{
    memset(def, 0, sizeof *def);
    if (!json_is_object(o))
        return rb_err_set(err, RB_EINVAL, "BATCH NEW: argument must be a JSON object");
    json_t *bid = json_object_get(o, "bid");
    if (bid && !json_is_null(bid) &&
        (!json_is_string(bid) || json_string_length(bid) != 0))
        return rb_err_set(err, RB_EINVAL, "BATCH NEW: bid must be empty (the server assigns it)");
    json_t *desc = json_object_get(o, "description");
    if (desc && !json_is_null(desc)) {
        if (!json_is_string(desc))
            return rb_err_set(err, RB_EINVAL, "BATCH NEW: description must be a string");
        if (json_string_length(desc) > RB_BATCH_DESC_MAX)
            return rb_err_set(err, RB_EINVAL, "BATCH NEW: description is longer than %d bytes",
                              RB_BATCH_DESC_MAX);
        def->description = json_string_value(desc);
    }
    json_t *pbid = json_object_get(o, "parent_bid");
    if (pbid && !json_is_null(pbid)) {
        if (!json_is_string(pbid) || json_string_length(pbid) == 0)
            return rb_err_set(err, RB_EINVAL, "BATCH NEW: parent_bid must be a non-empty string");
        def->parent_bid = json_string_value(pbid);
    }
    for (int k = 0; k < RB_BATCH_CBS; k++) {
        json_t *cb = json_object_get(o, cb_key[k]);
        if (!cb || json_is_null(cb))
            continue;
        if (!json_is_object(cb))
            return rb_err_set(err, RB_EINVAL, "BATCH NEW: %s must be a job object", cb_key[k]);
        def->cb[k] = cb;
    }
    if (!def->cb[RB_BATCH_COMPLETE] && !def->cb[RB_BATCH_SUCCESS])
        return rb_err_set(err, RB_EINVAL,
                          "BATCH NEW: a success or complete callback is required");
    return 0;
}

/* A callback job's text: custom._bid (and _pbid) set, custom.bid gone (a
 * callback is not a member), queue defaulted. */
static char *callback_text(const json_t *job, const char *bid, const char *pbid)
{
    json_t *j = json_deep_copy(job);
    json_t *custom = json_object_get(j, "custom");
    if (!json_is_object(custom)) {
        custom = json_object();
        json_object_set_new(j, "custom", custom);
    }
    json_object_del(custom, "bid");
    json_object_set_new(custom, "_bid", json_string(bid));
    if (pbid)
        json_object_set_new(custom, "_pbid", json_string(pbid));
    else
        json_object_del(custom, "_pbid");
    if (!json_is_string(json_object_get(j, "queue")))
        json_object_set_new(j, "queue", json_string("default"));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static char *dup_or_null(const char *s)
{
    return s ? rb_xstrdup(s) : NULL;
}

rb_batch *rb_batch_new(const char *bid, const rb_batch_def *def, int64_t now_us)
{
    rb_batch *b = rb_xcalloc(1, sizeof *b);
    b->bid = rb_xstrdup(bid);
    b->parent_bid = dup_or_null(def->parent_bid);
    b->description = dup_or_null(def->description);
    b->created_ms = now_us / 1000;
    b->created_us = now_us;
    for (int k = 0; k < RB_BATCH_CBS; k++)
        if (def->cb[k])
            b->cb[k] = callback_text(def->cb[k], bid, def->parent_bid);
    return b;
}

void rb_batch_free(rb_batch *b)
{
    if (!b)
        return;
    free(b->bid);
    free(b->parent_bid);
    free(b->description);
    for (int k = 0; k < RB_BATCH_CBS; k++) {
        free(b->cb[k]);
        free(b->cb_jid[k]);
    }
    free(b);
}

/* --- the rules --- */

/* Every member executed once and every child complete (after COMMIT). */
static bool complete_cond(const rb_batch *b)
{
    return b->committed && b->executed >= b->total && b->children_complete >= b->children;
}

bool rb_batch_complete_done(const rb_batch *b)
{
    if (b->cb[RB_BATCH_COMPLETE])
        return b->st[RB_BATCH_COMPLETE] == RB_BATCH_ST_DONE;
    return complete_cond(b);
}

/* Complete reached, every member ACKed, every child successful. */
static bool success_cond(const rb_batch *b)
{
    return b->committed && rb_batch_complete_done(b) && b->pending <= 0 &&
           b->children_success >= b->children;
}

bool rb_batch_success_done(const rb_batch *b)
{
    if (b->cb[RB_BATCH_SUCCESS])
        return b->st[RB_BATCH_SUCCESS] == RB_BATCH_ST_DONE;
    return success_cond(b);
}

bool rb_batch_finished(const rb_batch *b)
{
    if (!b->committed || !rb_batch_complete_done(b))
        return false;
    if (b->cb[RB_BATCH_DEATH] && b->dead > 0 && b->st[RB_BATCH_DEATH] != RB_BATCH_ST_DONE)
        return false;
    return rb_batch_success_done(b) || b->dead > 0;
}

static void dec(int64_t *v)
{
    if (*v > 0)
        (*v)--;
}

static void cb_acked(rb_batch *b, rb_batch_cb k)
{
    if (b->st[k] == RB_BATCH_ST_ENQUEUED)
        b->st[k] = RB_BATCH_ST_DONE;
}

/* Moves callback k to "1" when it is defined and not yet fired. */
static unsigned fire(rb_batch *b, rb_batch_cb k)
{
    if (!b->cb[k] || b->st[k] != RB_BATCH_ST_NONE)
        return 0;
    b->st[k] = RB_BATCH_ST_ENQUEUED;
    return 1u << k;
}

unsigned rb_batch_apply(rb_batch *b, rb_batch_event ev, int64_t now)
{
    switch (ev) {
    case RB_BATCH_EV_ADDED:
        b->total++;
        b->pending++;
        break;
    case RB_BATCH_EV_FIRST_FAIL:
        b->executed++;
        b->failed++;
        break;
    case RB_BATCH_EV_ACKED:
        b->executed++;
        dec(&b->pending);
        break;
    case RB_BATCH_EV_ACKED_AFTER_FAIL:
        dec(&b->pending);
        dec(&b->failed);
        break;
    case RB_BATCH_EV_DIED:
        b->dead++;
        break;
    case RB_BATCH_EV_COMMIT:
        b->committed = true;
        break;
    case RB_BATCH_EV_CB_COMPLETE_ACKED:
        cb_acked(b, RB_BATCH_COMPLETE);
        break;
    case RB_BATCH_EV_CB_SUCCESS_ACKED:
        cb_acked(b, RB_BATCH_SUCCESS);
        break;
    case RB_BATCH_EV_CB_DEATH_ACKED:
        cb_acked(b, RB_BATCH_DEATH);
        break;
    case RB_BATCH_EV_CHILD_ADDED:
        b->children++;
        break;
    case RB_BATCH_EV_CHILD_COMPLETE:
        b->children_complete++;
        break;
    case RB_BATCH_EV_CHILD_SUCCESS:
        b->children_success++;
        break;
    case RB_BATCH_EV_NONE:
        break;
    }
    if (b->executed > b->total)
        b->executed = b->total;
    if (!b->committed)
        return 0;
    unsigned act = 0;
    if (complete_cond(b))
        act |= fire(b, RB_BATCH_COMPLETE);
    if (b->dead > 0)
        act |= fire(b, RB_BATCH_DEATH);
    if (b->parent_bid && !b->told_complete && rb_batch_complete_done(b)) {
        b->told_complete = true;
        act |= RB_BATCH_TELL_COMPLETE;
    }
    if (success_cond(b))
        act |= fire(b, RB_BATCH_SUCCESS);
    if (b->parent_bid && !b->told_success && rb_batch_success_done(b)) {
        b->told_success = true;
        act |= RB_BATCH_TELL_SUCCESS;
    }
    if (!rb_batch_finished(b))
        b->finished_ms = 0;
    else if (!b->finished_ms)
        b->finished_ms = now;
    return act;
}

int rb_batch_callback_of(const rb_batch *b, const char *jid)
{
    for (int k = 0; k < RB_BATCH_CBS; k++)
        if (b->cb_jid[k] && !strcmp(b->cb_jid[k], jid))
            return k;
    return -1;
}

/* --- STATUS --- */

static const char *st_text(int st)
{
    return st == RB_BATCH_ST_DONE ? "2" : st == RB_BATCH_ST_ENQUEUED ? "1" : "";
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *rb_batch_status_json(const rb_batch *b)
{
    char at[RB_TIME_STRLEN];
    json_t *o = json_object();
    json_object_set_new(o, "bid", json_string(b->bid));
    json_object_set_new(o, "parent_bid", str_or_null(b->parent_bid));
    json_object_set_new(o, "description", str_or_null(b->description));
    json_object_set_new(o, "created_at", json_string(rb_time_format_us(b->created_us, at)));
    json_object_set_new(o, "total", json_integer(b->total));
    json_object_set_new(o, "pending", json_integer(b->pending));
    json_object_set_new(o, "failed", json_integer(b->failed));
    json_object_set_new(o, "complete_st", json_string(st_text(b->st[RB_BATCH_COMPLETE])));
    json_object_set_new(o, "success_st", json_string(st_text(b->st[RB_BATCH_SUCCESS])));
    return o;
}

/* --- the stored form --- */

/* Version 1: the field names below; a change of meaning takes a new "v". */
char *rb_batch_dump(const rb_batch *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "v", json_integer(1));
    json_object_set_new(o, "bid", json_string(b->bid));
    json_object_set_new(o, "parent_bid", str_or_null(b->parent_bid));
    json_object_set_new(o, "description", str_or_null(b->description));
    json_object_set_new(o, "created_ms", json_integer(b->created_ms));
    json_object_set_new(o, "created_us", json_integer(b->created_us)); /* optional: added later */
    json_object_set_new(o, "finished_ms", json_integer(b->finished_ms));
    json_object_set_new(o, "committed", json_boolean(b->committed));
    json_object_set_new(o, "told_complete", json_boolean(b->told_complete));
    json_object_set_new(o, "told_success", json_boolean(b->told_success));
    json_t *n = json_pack("[I,I,I,I,I,I,I,I]", (json_int_t)b->total, (json_int_t)b->pending,
                          (json_int_t)b->failed, (json_int_t)b->executed, (json_int_t)b->dead,
                          (json_int_t)b->children, (json_int_t)b->children_complete,
                          (json_int_t)b->children_success);
    json_object_set_new(o, "n", n);
    json_t *cbs = json_array();
    for (int k = 0; k < RB_BATCH_CBS; k++)
        json_array_append_new(cbs, json_pack("{s:o, s:o, s:i}", "job", str_or_null(b->cb[k]),
                                             "jid", str_or_null(b->cb_jid[k]), "st", b->st[k]));
    json_object_set_new(o, "cb", cbs);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static char *get_str(const json_t *o, const char *key)
{
    return dup_or_null(json_string_value(json_object_get(o, key)));
}

rb_batch *rb_batch_load(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    json_t *n = json_object_get(o, "n");
    json_t *cbs = json_object_get(o, "cb");
    if (json_integer_value(json_object_get(o, "v")) != 1 ||
        !json_is_string(json_object_get(o, "bid")) || json_array_size(n) != 8 ||
        json_array_size(cbs) != RB_BATCH_CBS) {
        json_decref(o);
        return NULL;
    }
    rb_batch *b = rb_xcalloc(1, sizeof *b);
    b->bid = get_str(o, "bid");
    b->parent_bid = get_str(o, "parent_bid");
    b->description = get_str(o, "description");
    b->created_ms = json_integer_value(json_object_get(o, "created_ms"));
    json_t *us = json_object_get(o, "created_us"); /* absent in a batch stored before */
    b->created_us = json_is_integer(us) ? json_integer_value(us) : b->created_ms * 1000;
    b->finished_ms = json_integer_value(json_object_get(o, "finished_ms"));
    b->committed = json_is_true(json_object_get(o, "committed"));
    b->told_complete = json_is_true(json_object_get(o, "told_complete"));
    b->told_success = json_is_true(json_object_get(o, "told_success"));
    int64_t *fields[] = {&b->total, &b->pending, &b->failed, &b->executed,
                         &b->dead, &b->children, &b->children_complete, &b->children_success};
    for (size_t i = 0; i < 8; i++)
        *fields[i] = json_integer_value(json_array_get(n, i));
    for (int k = 0; k < RB_BATCH_CBS; k++) {
        json_t *c = json_array_get(cbs, (size_t)k);
        b->cb[k] = get_str(c, "job");
        b->cb_jid[k] = get_str(c, "jid");
        int st = (int)json_integer_value(json_object_get(c, "st"));
        b->st[k] = b->cb[k] && st >= 0 && st <= RB_BATCH_ST_DONE ? st : RB_BATCH_ST_NONE;
    }
    json_decref(o);
    return b;
}

int rb_batch_member_bid(const json_t *job, const char **bid, rb_err *err)
{
    *bid = NULL;
    json_t *v = json_object_get(json_object_get(job, "custom"), "bid");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return rb_err_set(err, RB_EINVAL, "custom.bid must be a string");
    if (json_string_length(v) > 0)
        *bid = json_string_value(v);
    return 0;
}

bool rb_batch_expired(const rb_batch *b, int64_t now, int64_t uncommitted_ttl_ms,
                      int64_t retention_ms, bool ancestor_unfinished)
{
    if (!b->committed)
        return now - b->created_ms >= uncommitted_ttl_ms;
    return b->finished_ms && now - b->finished_ms >= retention_ms && !ancestor_unfinished;
}

void rb_batch_child_gone(rb_batch *parent, const rb_batch *child)
{
    if (parent->children > 0)
        parent->children--;
    if (child->told_complete && parent->children_complete > 0)
        parent->children_complete--;
    if (child->told_success && parent->children_success > 0)
        parent->children_success--;
}
