/* The group-commit writer thread (see writer.h). Invariant: a batch's
 * completions run only after the batch's transaction has returned. */
#include "backend/sqlite/writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"

/* The collection window: at most this share of the average commit time,
 * and never more than COLLECT_MAX_US. */
#define COLLECT_PCT 50
#define COLLECT_MAX_US 2000

enum op_kind { OP_PUT, OP_DEL, OP_COUNTER, OP_META, OP_CLEAR };

typedef struct op {
    enum op_kind kind;
    rb_job_row row;  /* OP_PUT: strings point into blob */
    char *blob;      /* owned copy of the strings */
    const char *key; /* OP_DEL jid, OP_COUNTER name, OP_META key (into blob) */
    const char *val; /* OP_META value or NULL */
    int64_t num;     /* OP_DEL row id, OP_COUNTER value */
    int skip;        /* a later op of the batch makes this one useless */
} op;

typedef struct done {
    rb_writer_done_fn fn;
    void *arg;
} done;

typedef struct batch {
    op *ops;
    size_t n_ops, cap_ops;
    done *dones;
    size_t n_dones, cap_dones;
    int status;
    rb_err err;
    int64_t commit_us; /* time of the COMMIT, for rb_writer_stats_fn */
    struct batch *next;
} batch;

struct rb_writer {
    rb_store *store;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch *open;                /* being filled by the loop; loop-only, no lock */
    batch *cur;                 /* sealed, waiting for the thread; guarded by mu */
    batch *done_head, *done_tail; /* finished batches; guarded by mu */
    int stop;
    int efd;
    uint64_t commits;
    int64_t commit_avg_us; /* thread-only: moving average of the COMMIT time */
    rb_writer_stats_fn stats_fn; /* loop-only */
    void *stats_arg;
    rb_writer_stats stats;       /* loop-only (updated by reap) */
    void (*defer_fn)(void *);    /* loop-only: see rb_writer_defer */
    void *defer_arg;
    int deferred;                /* defer_fn ran for the open batch */
    /* The backup asked for (rb_writer_backup), until the thread takes it;
     * guarded by mu. backup_running: taken and not finished yet. */
    char *backup_path;
    rb_writer_done_fn backup_fn;
    void *backup_arg;
    int backup_running;
};

static batch *batch_new(void)
{
    return rb_xcalloc(1, sizeof(batch));
}

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n_ops; i++)
        free(b->ops[i].blob);
    free(b->ops);
    free(b->dones);
    free(b);
}

/* Whether o is a write only the last of its key in a batch matters for:
 * a counter (ACK and FAIL write both counters each time), or a rate
 * bucket's row ("gcra:", backend/sqlite/groups.h: each start of a
 * rate-limited group writes it). */
static bool foldable(const op *o)
{
    return o->kind == OP_COUNTER || (o->kind == OP_META && !strncmp(o->key, "gcra:", 5));
}

/* Marks every foldable write that a later one of the same kind and key in
 * the same batch overwrites: one row per key per commit. One pass from the
 * end over a handful of distinct keys. */
static void mark_superseded(batch *b)
{
    const op *seen[16];
    int n = 0;
    for (size_t i = b->n_ops; i-- > 0;) {
        op *o = &b->ops[i];
        if (o->kind == OP_CLEAR) {
            n = 0;
            continue;
        }
        if (!foldable(o))
            continue;
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = seen[k]->kind == o->kind && !strcmp(seen[k]->key, o->key);
        if (dup)
            o->skip = 1;
        else if (n < 16)
            seen[n++] = o;
    }
}

static int apply(rb_store *s, batch *b, rb_err *err)
{
    int rc = s->ops->begin(s, err);
    if (rc)
        return rc;
    mark_superseded(b);
    for (size_t i = 0; i < b->n_ops && !rc; i++) {
        op *o = &b->ops[i];
        if (o->skip)
            continue;
        switch (o->kind) {
        case OP_PUT: rc = s->ops->put_job(s, &o->row, err); break;
        case OP_DEL: rc = s->ops->del_job(s, o->num, o->key, err); break;
        case OP_COUNTER: rc = s->ops->set_counter(s, o->key, o->num, err); break;
        case OP_META: rc = s->ops->set_meta(s, o->key, o->val, err); break;
        case OP_CLEAR: rc = s->ops->clear(s, err); break;
        }
    }
    if (!rc) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = s->ops->commit(s, err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        b->commit_us = (t1.tv_sec - t0.tv_sec) * 1000000LL + (t1.tv_nsec - t0.tv_nsec) / 1000;
    }
    if (rc)
        s->ops->rollback(s);
    return rc;
}

static int64_t mono_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* The collection window (called with mu held, right after a commit that
 * answered `answered` requests, when requests are already waiting for the
 * next one: the server is under load). The requests just answered usually
 * come back within a round trip; waiting for them, up to a quarter of a
 * commit's time, lets one fsync carry them too instead of alternating two
 * half-size groups. It ends as soon as as many new requests have arrived. */
static void collect(rb_writer *w, size_t answered)
{
    int64_t window = w->commit_avg_us * COLLECT_PCT / 100;
    if (window > COLLECT_MAX_US)
        window = COLLECT_MAX_US;
    if (answered == 0 || window <= 0)
        return;
    size_t target = w->cur->n_dones + answered;
    int64_t until = mono_us() + window;
    struct timespec ts = {.tv_sec = until / 1000000, .tv_nsec = (until % 1000000) * 1000};
    while (!w->stop && w->cur->n_dones < target)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
            break;
}

static int idle(const rb_writer *w)
{
    return w->cur->n_ops == 0 && w->cur->n_dones == 0;
}

/* Hands a finished batch to the loop (mu held) and wakes it. */
static void hand_back(rb_writer *w, batch *b)
{
    if (w->done_tail)
        w->done_tail->next = b;
    else
        w->done_head = b;
    w->done_tail = b;
    uint64_t one = 1;
    ssize_t n = write(w->efd, &one, sizeof one);
    (void)n; /* the counter cannot overflow in practice; a failed wake is retried next batch */
}

/* Commits the sealed batch (mu held on entry and on return, released
 * meanwhile) and hands it to the loop. answered: the requests the previous
 * batch answered, for the collection window; set to this one's. */
static void run_batch(rb_writer *w, size_t *answered)
{
    if (*answered)
        collect(w, *answered);
    batch *b = w->cur;
    w->cur = batch_new();
    pthread_mutex_unlock(&w->mu);

    b->status = b->n_ops ? apply(w->store, b, &b->err) : 0;
    if (b->n_ops && !b->status)
        w->commit_avg_us += (b->commit_us - w->commit_avg_us) / 8;
    *answered = b->n_dones;

    pthread_mutex_lock(&w->mu);
    w->commits++;
    hand_back(w, b);
    if (w->store->ops->maintain) {
        pthread_mutex_unlock(&w->mu);
        rb_err merr = {0};
        if (w->store->ops->maintain(w->store, &merr))
            rb_log(RB_LOG_ERROR, "%s", rb_err_msg(&merr));
        pthread_mutex_lock(&w->mu);
    }
    if (idle(w))
        *answered = 0; /* idle: the next request does not wait */
}

/* Between two steps of a backup (the store's backup calls it): commits
 * the batch waiting, if any, so that requests are not held up for longer
 * than one step. */
static void backup_between(void *arg)
{
    rb_writer *w = arg;
    size_t answered = 0;
    pthread_mutex_lock(&w->mu);
    if (!idle(w))
        run_batch(w, &answered);
    pthread_mutex_unlock(&w->mu);
}

/* Runs the backup asked for (mu held on entry and on return) and hands
 * its completion to the loop as a batch without operations. */
static void run_backup(rb_writer *w)
{
    char *path = w->backup_path;
    batch *b = batch_new();
    b->dones = rb_xmalloc(sizeof *b->dones);
    b->dones[0] = (done){w->backup_fn, w->backup_arg};
    b->n_dones = b->cap_dones = 1;
    w->backup_path = NULL;
    w->backup_running = 1;
    pthread_mutex_unlock(&w->mu);
    b->status = w->store->ops->backup(w->store, path, backup_between, w, &b->err);
    free(path);
    pthread_mutex_lock(&w->mu);
    w->backup_running = 0;
    hand_back(w, b);
}

static void *writer_main(void *arg)
{
    rb_writer *w = arg;
    size_t answered = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && idle(w) && !w->backup_path)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->backup_path)
            run_backup(w);
        else if (idle(w))
            break; /* stopping and drained */
        else
            run_batch(w, &answered);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rb_writer_backup(rb_writer *w, const char *path, rb_writer_done_fn fn, void *arg, rb_err *err)
{
    if (!w->store->ops->backup)
        return rb_err_set(err, RB_EINVAL, "the %s store cannot be backed up",
                          w->store->ops->name);
    pthread_mutex_lock(&w->mu);
    if (w->backup_path || w->backup_running) {
        pthread_mutex_unlock(&w->mu);
        return rb_err_set(err, RB_ESTATE, "a backup is already running");
    }
    w->backup_path = rb_xstrdup(path);
    w->backup_fn = fn;
    w->backup_arg = arg;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

rb_writer *rb_writer_start(rb_store *s, rb_err *err)
{
    rb_writer *w = rb_xcalloc(1, sizeof *w);
    w->store = s;
    w->cur = batch_new();
    w->open = batch_new();
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->efd < 0) {
        rb_err_set(err, RB_EIO, "eventfd: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        rb_err_set(err, RB_EIO, "cannot start the writer thread");
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        close(w->efd);
        goto fail;
    }
    return w;
fail:
    batch_free(w->cur);
    batch_free(w->open);
    free(w);
    return NULL;
}

int rb_writer_fd(const rb_writer *w)
{
    return w->efd;
}

int rb_writer_reap(rb_writer *w)
{
    uint64_t v;
    ssize_t nr = read(w->efd, &v, sizeof v); /* one read resets an eventfd's counter */
    (void)nr;
    pthread_mutex_lock(&w->mu);
    batch *b = w->done_head;
    w->done_head = w->done_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    int ran = 0;
    while (b) {
        batch *next = b->next;
        if (b->n_ops && !b->status) {
            w->stats.commits++;
            w->stats.rows += b->n_ops;
            w->stats.requests += b->n_dones;
            w->stats.commit_us += (uint64_t)b->commit_us;
            if ((uint64_t)b->commit_us > w->stats.commit_us_max)
                w->stats.commit_us_max = (uint64_t)b->commit_us;
        } else if (b->status) {
            w->stats.failed++;
        }
        if (w->stats_fn && b->n_ops && !b->status)
            w->stats_fn(w->stats_arg, b->n_ops, b->commit_us);
        for (size_t i = 0; i < b->n_dones; i++, ran++)
            b->dones[i].fn(b->dones[i].arg, b->status, b->status ? &b->err : NULL);
        batch_free(b);
        b = next;
    }
    return ran;
}

void rb_writer_free(rb_writer *w)
{
    if (!w)
        return;
    rb_writer_seal(w);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    rb_writer_reap(w);
    batch_free(w->cur);
    batch_free(w->open);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    close(w->efd);
    free(w);
}

void rb_writer_observe(rb_writer *w, rb_writer_stats_fn fn, void *arg)
{
    w->stats_fn = fn;
    w->stats_arg = arg;
}

uint64_t rb_writer_commits(const rb_writer *w)
{
    return w->commits; /* read racily: a statistic */
}

void rb_writer_get_stats(const rb_writer *w, rb_writer_stats *out)
{
    *out = w->stats;
}

void rb_writer_defer(rb_writer *w, void (*fn)(void *arg), void *arg)
{
    w->defer_fn = fn;
    w->defer_arg = arg;
}

/* The open batch got something: tell the loop once per batch. */
static void opened(rb_writer *w)
{
    if (w->defer_fn && !w->deferred) {
        w->deferred = 1;
        w->defer_fn(w->defer_arg);
    }
}

/* Appends o to the open batch (the thread does not see it until sealed). */
static void push_op(rb_writer *w, const op *o)
{
    batch *b = w->open;
    if (b->n_ops == b->cap_ops) {
        b->cap_ops = b->cap_ops ? b->cap_ops * 2 : 16;
        b->ops = rb_xrealloc(b->ops, b->cap_ops * sizeof *b->ops);
    }
    b->ops[b->n_ops++] = *o;
    opened(w);
}

void rb_writer_seal(rb_writer *w)
{
    batch *o = w->open;
    w->deferred = 0;
    if (o->n_ops == 0 && o->n_dones == 0)
        return;
    pthread_mutex_lock(&w->mu);
    batch *c = w->cur;
    if (c->n_ops == 0 && c->n_dones == 0) {
        w->cur = o; /* the common case: hand the whole batch over */
        w->open = c;
    } else {
        if (c->n_ops + o->n_ops > c->cap_ops) {
            c->cap_ops = c->n_ops + o->n_ops;
            c->ops = rb_xrealloc(c->ops, c->cap_ops * sizeof *c->ops);
        }
        if (o->n_ops)
            memcpy(c->ops + c->n_ops, o->ops, o->n_ops * sizeof *o->ops);
        c->n_ops += o->n_ops;
        if (c->n_dones + o->n_dones > c->cap_dones) {
            c->cap_dones = c->n_dones + o->n_dones;
            c->dones = rb_xrealloc(c->dones, c->cap_dones * sizeof *c->dones);
        }
        if (o->n_dones)
            memcpy(c->dones + c->n_dones, o->dones, o->n_dones * sizeof *o->dones);
        c->n_dones += o->n_dones;
        o->n_ops = o->n_dones = 0; /* the blobs moved with the ops */
    }
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Copies the strings in order into one blob; returns pointers into it. */
static char *pack(const char **in, const char **out, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += in[i] ? strlen(in[i]) + 1 : 0;
    char *blob = rb_xmalloc(total ? total : 1), *p = blob;
    for (int i = 0; i < n; i++) {
        if (!in[i]) {
            out[i] = NULL;
            continue;
        }
        size_t len = strlen(in[i]) + 1;
        memcpy(p, in[i], len);
        out[i] = p;
        p += len;
    }
    return blob;
}

void rb_writer_put(rb_writer *w, const rb_job_row *row)
{
    op o = {.kind = OP_PUT, .row = *row};
    const char *in[6] = {row->jid, row->queue, row->wid, row->json, row->history, row->grp},
               *out[6];
    o.blob = pack(in, out, 6);
    o.row.jid = out[0];
    o.row.queue = out[1];
    o.row.wid = out[2];
    o.row.json = out[3];
    o.row.history = out[4];
    o.row.grp = out[5];
    push_op(w, &o);
}

void rb_writer_del(rb_writer *w, int64_t id, const char *jid)
{
    op o = {.kind = OP_DEL, .num = id};
    const char *out[1];
    o.blob = pack(&jid, out, 1);
    o.key = out[0];
    push_op(w, &o);
}

void rb_writer_counter(rb_writer *w, const char *name, int64_t value)
{
    op o = {.kind = OP_COUNTER, .num = value};
    const char *out[1];
    o.blob = pack(&name, out, 1);
    o.key = out[0];
    push_op(w, &o);
}

void rb_writer_meta(rb_writer *w, const char *key, const char *value)
{
    op o = {.kind = OP_META};
    const char *in[2] = {key, value}, *out[2];
    o.blob = pack(in, out, 2);
    o.key = out[0];
    o.val = out[1];
    push_op(w, &o);
}

void rb_writer_clear(rb_writer *w)
{
    op o = {.kind = OP_CLEAR};
    push_op(w, &o);
}

void rb_writer_then(rb_writer *w, rb_writer_done_fn fn, void *arg)
{
    batch *b = w->open;
    if (b->n_dones == b->cap_dones) {
        b->cap_dones = b->cap_dones ? b->cap_dones * 2 : 16;
        b->dones = rb_xrealloc(b->dones, b->cap_dones * sizeof *b->dones);
    }
    b->dones[b->n_dones++] = (done){fn, arg};
    if (w->defer_fn)
        opened(w);
    else
        rb_writer_seal(w);
}
