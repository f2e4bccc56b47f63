/* The single-node backend's batches: the table by bid, their rows in the
 * store's meta table, BATCH's op, and the hooks PUSH, ACK and FAIL call.
 * The rules themselves are engine/batch.c's. */
#include "backend/sqlite/batch.h"
#include "backend/sqlite/groups.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/log.h"
#include "common/json.h"
#include "engine/jobdef.h"
#include "engine/metrics.h"
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

/* How often the expiry sweep runs. */
#define SWEEP_MS 10000
/* The deepest chain of parents followed (cycles cannot be made: a parent
 * exists before its child; this only bounds the walk). */
#define MAX_DEPTH 64

static const char *batch_key(const void *e)
{
    return ((const rb_batch *)e)->bid;
}

/* The jids pushed into one batch (sq->batch_members). Invariant: every
 * stored member of the batch is in jids (duplicates and jids no longer a
 * member allowed: a page read checks and prunes them). */
typedef struct member_list {
    void *hnext;
    char **jids; /* owned */
    size_t n, cap;
    char bid[];
} member_list;

static const char *members_key(const void *e)
{
    return ((const member_list *)e)->bid;
}

void rb_sq_batches_init(rb_sq *sq)
{
    rb_table_init(&sq->batches, offsetof(rb_batch, hnext), batch_key);
    rb_table_init(&sq->batch_members, offsetof(member_list, hnext), members_key);
}

static void free_batch(void *e, void *arg)
{
    (void)arg;
    rb_batch_free(e);
}

static void free_members(void *e, void *arg)
{
    (void)arg;
    member_list *m = e;
    for (size_t i = 0; i < m->n; i++)
        free(m->jids[i]);
    free(m->jids);
    free(m);
}

static void members_release(rb_sq *sq)
{
    rb_table_each(&sq->batch_members, free_members, NULL);
    rb_table_release(&sq->batch_members);
}

/* Forgets the member list of bid (its batch is gone). */
static void members_drop(rb_sq *sq, const char *bid)
{
    member_list *m = rb_table_get(&sq->batch_members, bid);
    if (m) {
        rb_table_del(&sq->batch_members, m);
        free_members(m, NULL);
    }
}

/* Drops the jids of m that are no stored job (members ACKed or deleted). */
static void members_prune(rb_sq *sq, member_list *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (rb_jobs_find(&sq->jobs, m->jids[i]))
            m->jids[k++] = m->jids[i];
        else
            free(m->jids[i]);
    }
    m->n = k;
}

/* Notes jid as pushed into bid. When the list is full the jids of deleted
 * jobs go first, so it grows only with the members still stored
 * (amortized O(1) a push). */
static void members_add(rb_sq *sq, const char *bid, const char *jid)
{
    member_list *m = rb_table_get(&sq->batch_members, bid);
    if (!m) {
        size_t len = strlen(bid) + 1;
        m = rb_xcalloc(1, sizeof *m + len);
        memcpy(m->bid, bid, len);
        rb_table_put(&sq->batch_members, m);
    }
    if (m->n == m->cap) {
        members_prune(sq, m);
        if (m->n >= m->cap / 2) { /* still over half full: grow */
            m->cap = m->cap ? 2 * m->cap : 8;
            m->jids = rb_xrealloc(m->jids, m->cap * sizeof *m->jids);
        }
    }
    m->jids[m->n++] = rb_xstrdup(jid);
}

void rb_sq_batches_release(rb_sq *sq)
{
    if (sq->batch_ev) {
        event_free(sq->batch_ev);
        sq->batch_ev = NULL;
    }
    rb_table_each(&sq->batches, free_batch, NULL);
    rb_table_release(&sq->batches);
    members_release(sq);
}

void rb_sq_batches_flush(rb_sq *sq)
{
    rb_table_each(&sq->batches, free_batch, NULL);
    rb_table_release(&sq->batches);
    members_release(sq);
    rb_sq_batches_init(sq);
    sq->batch_callbacks = 0;
}

/* b's row into the current commit (NULL text: deleted). */
static void save(rb_sq *sq, const rb_batch *b, bool gone)
{
    rb_buf key;
    rb_buf_init(&key);
    rb_buf_printf(&key, RB_MEM_BATCH_KEY "%s", b->bid);
    char *text = gone ? NULL : rb_batch_dump(b);
    rb_writer_meta(sq->writer, rb_buf_str(&key), text);
    free(text);
    rb_buf_release(&key);
}

void rb_sq_batch_load(rb_sq *sq, const char *key, const char *value)
{
    if (strncmp(key, RB_MEM_BATCH_KEY, strlen(RB_MEM_BATCH_KEY)) != 0)
        return;
    rb_batch *b = value ? rb_batch_load(value) : NULL;
    if (!b || rb_table_get(&sq->batches, b->bid)) {
        rb_log(RB_LOG_WARN, "skipping unreadable stored batch '%s'", key);
        rb_batch_free(b);
        return;
    }
    rb_table_put(&sq->batches, b);
}

/* --- expiry --- */

/* Whether an ancestor of b is still unfinished (b is then kept). */
static bool ancestor_unfinished(rb_sq *sq, const rb_batch *b)
{
    for (int d = 0; b->parent_bid && d < MAX_DEPTH; d++) {
        b = rb_table_get(&sq->batches, b->parent_bid);
        if (!b)
            return false;
        if (!b->finished_ms)
            return true;
    }
    return false;
}

static bool expired(rb_sq *sq, const rb_batch *b, int64_t now)
{
    const rb_config *cfg = sq->cfg;
    return rb_batch_expired(b, now, cfg->workflows.batch_uncommitted_ttl_s * 1000,
                            cfg->workflows.batch_retention_s * 1000,
                            b->committed && b->finished_ms && ancestor_unfinished(sq, b));
}

static void update(rb_sq *sq, rb_batch *b, rb_batch_event ev, int64_t now, int depth);

/* Forgets b (freed): its row deleted, and its parent no longer waits for
 * it. */
static void drop(rb_sq *sq, rb_batch *b, int64_t now)
{
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("bid", b->bid), "batch %s expired (%s)", b->bid,
              b->committed ? "finished" : "never committed");
    rb_table_del(&sq->batches, b);
    members_drop(sq, b->bid);
    save(sq, b, true);
    rb_batch *p = b->parent_bid ? rb_table_get(&sq->batches, b->parent_bid) : NULL;
    if (p) {
        rb_batch_child_gone(p, b);
        update(sq, p, RB_BATCH_EV_NONE, now, 0);
    }
    rb_batch_free(b);
}

/* The batch bid while it lives (an expired one is dropped: NULL). */
static rb_batch *find_live(rb_sq *sq, const char *bid, int64_t now)
{
    rb_batch *b = rb_table_get(&sq->batches, bid);
    if (b && expired(sq, b, now)) {
        drop(sq, b, now);
        return NULL;
    }
    return b;
}

typedef struct sweep {
    rb_sq *sq;
    int64_t now;
    char **bids;
    size_t n, cap;
} sweep;

static void sweep_one(void *e, void *arg)
{
    rb_batch *b = e;
    sweep *s = arg;
    if (!expired(s->sq, b, s->now))
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->bids = rb_xrealloc(s->bids, s->cap * sizeof *s->bids);
    }
    s->bids[s->n++] = rb_xstrdup(b->bid);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rb_sq *sq = arg;
    sweep s = {.sq = sq, .now = rb_now_ms()};
    rb_table_each(&sq->batches, sweep_one, &s);
    for (size_t i = 0; i < s.n; i++) {
        find_live(sq, s.bids[i], s.now); /* drops it when still expired */
        free(s.bids[i]);
    }
    free(s.bids);
    if (s.n)
        rb_sq_commit_then_wake(sq);
}

/* Starts the periodic sweep once the loop exists. */
static void arm_sweep(rb_sq *sq)
{
    if (sq->batch_ev || !sq->base)
        return;
    sq->batch_ev = event_new(sq->base, -1, EV_PERSIST, on_sweep, sq);
    struct timeval tv = {SWEEP_MS / 1000, (SWEEP_MS % 1000) * 1000};
    event_add(sq->batch_ev, &tv);
}

/* --- callbacks and events --- */

/* Enqueues b's callback k (rb_batch_apply moved it to "1"), in the current
 * commit. A jid already taken by another job gets a fresh one. */
static void enqueue_callback(rb_sq *sq, rb_batch *b, int k, int64_t now)
{
    json_t *job = b->cb[k] ? json_loads(b->cb[k], 0, NULL) : NULL;
    if (!job) { /* cannot happen: the text was made by json_dumps */
        rb_log_kv(RB_LOG_ERROR, RB_LOG_KV("bid", b->bid), "batch %s: unreadable callback", b->bid);
        return;
    }
    char *jid = rb_xstrdup(rb_json_str(job, "jid") ? rb_json_str(job, "jid") : "");
    if (!*jid || rb_jobs_find(&sq->jobs, jid)) {
        free(jid);
        jid = rb_jid_random(&sq->rng);
        json_object_set_new(job, "jid", json_string(jid));
    }
    rb_job_fields nj; /* the engine's defaults */
    rb_job_fields_read(job, now, (int)sq->cfg->server.reserve_for_s, &nj);
    if (nj.made_created) { /* a callback's is in its text from the start */
        char ts[RB_TIME_STRLEN];
        json_object_set_new(job, "created_at",
                            json_string(rb_time_format_us(rb_now_us_from(now), ts)));
    }
    rb_queue *q = rb_jobs_queue(&sq->jobs, nj.queue, true);
    rb_sq_queue_known(sq, q, true);
    rb_job *c = rb_job_new(jid, json_dumps(job, JSON_COMPACT), q, nj.priority);
    rb_sq_group_of_json(sq, c, job);
    c->reserve_s = nj.reserve_s;
    rb_jobs_add(&sq->jobs, c);
    rb_sq_enqueue(sq, c, now, now);
    rb_sq_persist(sq, c);
    rb_job_metric(sq->metrics, RB_M_PUSHED, c);
    free(b->cb_jid[k]);
    b->cb_jid[k] = jid;
    sq->batch_callbacks++;
    rb_writer_counter(sq->writer, "batch_callbacks", sq->batch_callbacks);
    static const char *const names[RB_BATCH_CBS] = {"complete", "success", "death"};
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("bid", b->bid, "jid", jid, "queue", q->name),
              "batch %s: %s callback %s enqueued", b->bid, names[k], jid);
    json_decref(job);
}

/* Applies ev to b, enqueues the callbacks it fires, stores b, and tells
 * its parent, in the current commit. */
static void update(rb_sq *sq, rb_batch *b, rb_batch_event ev, int64_t now, int depth)
{
    unsigned act = rb_batch_apply(b, ev, now);
    for (int k = 0; k < RB_BATCH_CBS; k++)
        if (act & (1u << k))
            enqueue_callback(sq, b, k, now);
    save(sq, b, false);
    if (!b->parent_bid || depth >= MAX_DEPTH)
        return;
    rb_batch *p = rb_table_get(&sq->batches, b->parent_bid);
    if (!p)
        return;
    if (act & RB_BATCH_TELL_COMPLETE)
        update(sq, p, RB_BATCH_EV_CHILD_COMPLETE, now, depth + 1);
    if (act & RB_BATCH_TELL_SUCCESS)
        update(sq, p, RB_BATCH_EV_CHILD_SUCCESS, now, depth + 1);
}

int rb_sq_batch_check_push(rb_sq *sq, const json_t *job, const char **bid)
{
    rb_err err = {0};
    if (rb_batch_member_bid(job, bid, &err) || !*bid) /* a bad type: refused by validation */
        return 0;
    arm_sweep(sq);
    if (!find_live(sq, *bid, rb_now_ms()))
        return RB_ENOENT;
    const char *jid = rb_json_str(job, "jid");
    if (jid && sq->batch_members_built) /* else the first page read finds it */
        members_add(sq, *bid, jid);
    return 0;
}

void rb_sq_batch_pushed(rb_sq *sq, const char *bid, int64_t now)
{
    rb_batch *b = rb_table_get(&sq->batches, bid);
    if (b)
        update(sq, b, RB_BATCH_EV_ADDED, now, 0);
}

/* The batch a job belongs to (custom.bid) or is a callback of (custom._bid),
 * read from its JSON only when the text mentions one. */
static rb_batch *batch_of(rb_sq *sq, const rb_job *j, bool *callback)
{
    if (!sq->batches.size || !strstr(j->json, "bid\""))
        return NULL;
    json_t *o = json_loads(j->json, 0, NULL);
    json_t *custom = json_object_get(o, "custom");
    const char *bid = json_string_value(json_object_get(custom, "bid"));
    *callback = !bid;
    if (!bid)
        bid = json_string_value(json_object_get(custom, "_bid"));
    rb_batch *b = bid ? rb_table_get(&sq->batches, bid) : NULL;
    json_decref(o);
    return b;
}

void rb_sq_batch_acked(rb_sq *sq, const rb_job *j, int64_t now)
{
    bool callback;
    rb_batch *b = batch_of(sq, j, &callback);
    if (!b)
        return;
    if (!callback) {
        update(sq, b, j->history ? RB_BATCH_EV_ACKED_AFTER_FAIL : RB_BATCH_EV_ACKED, now, 0);
        return;
    }
    static const rb_batch_event acked[RB_BATCH_CBS] = {
        RB_BATCH_EV_CB_COMPLETE_ACKED, RB_BATCH_EV_CB_SUCCESS_ACKED, RB_BATCH_EV_CB_DEATH_ACKED};
    int k = rb_batch_callback_of(b, j->jid);
    if (k >= 0)
        update(sq, b, acked[k], now, 0);
}

void rb_sq_batch_failed(rb_sq *sq, const rb_job *j, bool first_failure, bool died,
                         int64_t now)
{
    bool callback;
    rb_batch *b = batch_of(sq, j, &callback);
    if (!b || callback) /* a failed callback stays "1" and retries by its policy */
        return;
    if (first_failure)
        update(sq, b, RB_BATCH_EV_FIRST_FAIL, now, 0);
    if (died)
        update(sq, b, RB_BATCH_EV_DIED, now, 0);
}

/* --- a batch's page and the listing (BATCHES) --- */

/* A deep copy of b, for an op that outlives this turn of the loop. */
static rb_batch *copy_of(const rb_batch *b)
{
    char *text = rb_batch_dump(b);
    rb_batch *c = rb_batch_load(text);
    free(text);
    return c;
}

/* The custom.bid of a stored job, parsed only when its text names a bid;
 * NULL when none. *o holds the parsed JSON (json_decref it; NULL too). */
static const char *member_bid(const rb_job *j, json_t **o)
{
    *o = NULL;
    if (j->state == RB_JOB_PENDING || !strstr(j->json, "\"bid\""))
        return NULL;
    *o = json_loads(j->json, 0, NULL);
    return json_string_value(json_object_get(json_object_get(*o, "custom"), "bid"));
}

static void index_one(void *e, void *arg)
{
    rb_sq *sq = arg;
    json_t *o;
    const char *bid = member_bid(e, &o);
    if (bid && rb_table_get(&sq->batches, bid))
        members_add(sq, bid, ((const rb_job *)e)->jid);
    json_decref(o);
}

/* The member lists, from one pass over the stored jobs: once, at the first
 * page read after start-up (PUSH keeps them up from then on). */
static void members_build(rb_sq *sq)
{
    if (sq->batch_members_built)
        return;
    sq->batch_members_built = true;
    rb_table_each(&sq->jobs.by_jid, index_one, sq);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct child_scan {
    const char *bid;
    rb_batch_view *v;
} child_scan;

static void scan_child(void *e, void *arg)
{
    const rb_batch *b = e;
    child_scan *c = arg;
    if (b->parent_bid && !strcmp(b->parent_bid, c->bid))
        rb_batch_view_add_child(c->v, b->bid);
}

/* The batch's members from its member list, each checked (a stored job
 * whose custom.bid is still this batch) and the list pruned to those:
 * O(the batch's members), plain jobs untouched. */
static void view_batch(rb_sq *sq, const rb_batch *b, rb_batch_view *v)
{
    v->b = copy_of(b);
    members_build(sq);
    member_list *m = rb_table_get(&sq->batch_members, b->bid);
    if (m && m->n)
        qsort(m->jids, m->n, sizeof *m->jids, by_str);
    size_t k = 0;
    for (size_t i = 0; m && i < m->n; i++) {
        const rb_job *j = rb_jobs_find(&sq->jobs, m->jids[i]);
        bool dup = k && !strcmp(m->jids[k - 1], m->jids[i]);
        if (!j || dup) {
            free(m->jids[i]);
            continue;
        }
        if (j->state == RB_JOB_PENDING) { /* its PUSH not committed yet: kept, not shown */
            m->jids[k++] = m->jids[i];
            continue;
        }
        json_t *o;
        const char *bid = member_bid(j, &o);
        if (bid && !strcmp(bid, b->bid)) {
            m->jids[k++] = m->jids[i];
            rb_batch_view_add_member(v, j->jid, json_string_value(json_object_get(o, "jobtype")),
                                     rb_job_queue(j)->name, (int)j->state, (int)j->attempts);
        } else { /* the jid is another job's now */
            free(m->jids[i]);
        }
        json_decref(o);
    }
    if (m)
        m->n = k;
    child_scan c = {b->bid, v};
    rb_table_each(&sq->batches, scan_child, &c);
    rb_batch_view_finish(v, false);
}

typedef struct list_scan {
    bool all;
    rb_batch **v;
    size_t n, cap;
} list_scan;

static void scan_list(void *e, void *arg)
{
    rb_batch *b = e;
    list_scan *l = arg;
    if (!l->all && b->finished_ms)
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = rb_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = b;
}

/* The listing's page, copies of the stored batches. As in distributed
 * mode, a batch past its expiry is listed until the sweep drops it (within
 * seconds); its page (VIEW) already says it is gone. */
static void list_batches(rb_sq *sq, rb_eng_op *op)
{
    list_scan l = {.all = op->u.batch.all};
    rb_table_each(&sq->batches, scan_list, &l);
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, rb_batch_list_cmp);
    op->u.batch.total = (int64_t)l.n;
    size_t from = op->u.batch.offset < (int64_t)l.n ? (size_t)op->u.batch.offset : l.n;
    size_t to = from + (size_t)op->u.batch.limit < l.n ? from + (size_t)op->u.batch.limit : l.n;
    op->u.batch.list = rb_xcalloc(to - from + 1, sizeof *op->u.batch.list);
    for (size_t i = from; i < to; i++)
        op->u.batch.list[op->u.batch.n++] = copy_of(l.v[i]);
    free(l.v);
}

/* --- BATCH --- */

/* "b-" and 14 letters or digits, unused. */
static char *new_bid(rb_sq *sq)
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char *bid = rb_xmalloc(17);
    do {
        bid[0] = 'b';
        bid[1] = '-';
        for (int i = 2; i < 16; i++)
            bid[i] = alnum[rb_rng_next(&sq->rng) % (sizeof alnum - 1)];
        bid[16] = '\0';
    } while (rb_table_get(&sq->batches, bid));
    return bid;
}

static void no_such(rb_eng_op *op, const char *bid)
{
    op->rc = rb_err_set(&op->err, RB_ENOENT, "No such batch %s", bid);
    op->applied = RB_ENG_NOT_APPLIED;
}

void rb_sq_batch(rb_eng *eng, rb_eng_op *op)
{
    rb_sq *sq = rb_sq_of(eng);
    arm_sweep(sq);
    int64_t now = op->now;
    rb_batch *b = NULL;
    if (op->u.batch.verb == RB_ENG_BATCH_NEW) {
        const rb_batch_def *def = &op->u.batch.def;
        rb_batch *p = def->parent_bid ? find_live(sq, def->parent_bid, now) : NULL;
        if (def->parent_bid && !p) {
            no_such(op, def->parent_bid);
            rb_sq_commit_then_wake(sq); /* an expired parent's row goes */
            rb_eng_complete(sq->eng, op);
            return;
        }
        char *bid = new_bid(sq);
        b = rb_batch_new(bid, def, rb_now_us_from(now));
        rb_table_put(&sq->batches, b);
        save(sq, b, false);
        if (p)
            update(sq, p, RB_BATCH_EV_CHILD_ADDED, now, 0);
        op->u.batch.out = bid;
        rb_sq_after_commit(sq, op);
        return;
    }
    if (op->u.batch.verb == RB_ENG_BATCH_LIST) {
        list_batches(sq, op);
        rb_eng_complete(sq->eng, op);
        return;
    }
    b = find_live(sq, op->u.batch.bid, now);
    if (!b && op->u.batch.verb == RB_ENG_BATCH_VIEW) {
        op->u.batch.found = false;
        rb_eng_complete(sq->eng, op);
        return;
    }
    if (!b) {
        no_such(op, op->u.batch.bid);
        rb_eng_complete(sq->eng, op);
        return;
    }
    switch (op->u.batch.verb) {
    case RB_ENG_BATCH_OPEN:
        op->u.batch.out = rb_xstrdup(b->bid);
        rb_eng_complete(sq->eng, op);
        return;
    case RB_ENG_BATCH_STATUS: {
        json_t *st = rb_batch_status_json(b);
        op->u.batch.out = json_dumps(st, JSON_COMPACT);
        json_decref(st);
        rb_eng_complete(sq->eng, op);
        return;
    }
    case RB_ENG_BATCH_COMMIT:
        update(sq, b, RB_BATCH_EV_COMMIT, now, 0);
        rb_sq_after_commit(sq, op);
        return;
    case RB_ENG_BATCH_VIEW:
        view_batch(sq, b, &op->u.batch.view);
        op->u.batch.found = true;
        rb_eng_complete(sq->eng, op);
        return;
    case RB_ENG_BATCH_NEW:
    case RB_ENG_BATCH_LIST:
        break;
    }
}

typedef struct count {
    int64_t open;
} count;

static void count_open(void *e, void *arg)
{
    if (!((rb_batch *)e)->finished_ms)
        ((count *)arg)->open++;
}

json_t *rb_sq_batch_info(rb_sq *sq)
{
    count n = {0};
    rb_table_each(&sq->batches, count_open, &n);
    return json_pack("{s:I, s:I, s:I}", "open", (json_int_t)n.open, "stored",
                     (json_int_t)sq->batches.size, "callbacks",
                     (json_int_t)sq->batch_callbacks);
}
