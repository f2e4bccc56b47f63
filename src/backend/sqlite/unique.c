/* The single-node backend's unique locks and expiring jobs
 * (backend/sqlite/unique.h). */
#include "backend/sqlite/unique.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sqlite/batch.h"
#include "common/buf.h"
#include "common/timeutil.h"
#include "engine/depend.h"
#include "engine/unique.h"
#include "common/log.h"
#include "engine/metrics.h"
#include "backend/sqlite/sq.h"
#include "engine/engine.h"

/* One lock. Invariant: in both tables, or in neither (freed); while it is
 * in them its holder is a live job (not dead), and its meta row says so. */
typedef struct lock {
    void *knext, *jnext; /* by_key, by_jid chains */
    char *jid;           /* the holder; owned */
    int64_t until_ms;    /* free from then on, whoever holds it */
    bool start;          /* unique_until "start" */
    char key[RB_UNIQUE_KEY_LEN];
} lock;

typedef struct expiry {
    void *hnext;
    int64_t ms;
    char jid[];
} expiry;

struct rb_sq_unique {
    rb_table by_key, by_jid; /* lock */
    rb_table expiring;       /* expiry, by jid */
    int64_t expired;         /* jobs dropped expired, all time (counter "total_expired") */
    int64_t rejected;        /* NOTUNIQUE pushes since start */
};

static const char *lock_key(const void *e)
{
    return ((const lock *)e)->key;
}

static const char *lock_jid(const void *e)
{
    return ((const lock *)e)->jid;
}

static const char *expiry_jid(const void *e)
{
    return ((const expiry *)e)->jid;
}

static void tables_init(rb_sq_unique *u)
{
    rb_table_init(&u->by_key, offsetof(lock, knext), lock_key);
    rb_table_init(&u->by_jid, offsetof(lock, jnext), lock_jid);
    rb_table_init(&u->expiring, offsetof(expiry, hnext), expiry_jid);
}

static void free_lock(void *e, void *arg)
{
    (void)arg;
    lock *l = e;
    free(l->jid);
    free(l);
}

static void free_expiry(void *e, void *arg)
{
    (void)arg;
    free(e);
}

static void tables_release(rb_sq_unique *u)
{
    rb_table_each(&u->by_key, free_lock, NULL);
    rb_table_each(&u->expiring, free_expiry, NULL);
    rb_table_release(&u->by_key);
    rb_table_release(&u->by_jid);
    rb_table_release(&u->expiring);
}

void rb_sq_unique_init(rb_sq *sq)
{
    sq->unique = rb_xcalloc(1, sizeof *sq->unique);
    tables_init(sq->unique);
}

void rb_sq_unique_release(rb_sq *sq)
{
    if (!sq->unique)
        return;
    tables_release(sq->unique);
    free(sq->unique);
    sq->unique = NULL;
}

void rb_sq_unique_flush(rb_sq *sq)
{
    rb_sq_unique *u = sq->unique;
    tables_release(u);
    tables_init(u);
    u->expired = 0;
}

/* Writes l's meta row, or deletes it (gone). */
static void save(rb_sq *sq, const lock *l, bool gone)
{
    char key[sizeof RB_MEM_UNIQUE_KEY + RB_UNIQUE_KEY_LEN];
    snprintf(key, sizeof key, RB_MEM_UNIQUE_KEY "%s", l->key);
    if (gone) {
        rb_writer_meta(sq->writer, key, NULL);
        return;
    }
    rb_buf v = RB_BUF_INIT;
    rb_buf_printf(&v, "%lld %c %s", (long long)l->until_ms, l->start ? 's' : 'u', l->jid);
    rb_writer_meta(sq->writer, key, rb_buf_str(&v));
    rb_buf_release(&v);
}

/* Takes l out of the tables and frees it; its row deleted when save. */
static void drop(rb_sq *sq, lock *l, bool save_it)
{
    rb_table_del(&sq->unique->by_key, l);
    rb_table_del(&sq->unique->by_jid, l);
    if (save_it)
        save(sq, l, true);
    free_lock(l, NULL);
}

static void add(rb_sq_unique *u, lock *l)
{
    rb_table_put(&u->by_key, l);
    rb_table_put(&u->by_jid, l);
}

/* --- start-up --- */

void rb_sq_unique_load(rb_sq *sq, const char *key, const char *value)
{
    size_t n = strlen(RB_MEM_UNIQUE_KEY);
    if (strncmp(key, RB_MEM_UNIQUE_KEY, n) != 0)
        return;
    long long until;
    char mode;
    int used = 0;
    if (!value || strlen(key + n) != RB_UNIQUE_KEY_LEN - 1 ||
        sscanf(value, "%lld %c %n", &until, &mode, &used) != 2 || !used || !value[used]) {
        rb_log(RB_LOG_WARN, "skipping unreadable stored unique lock '%s'", key);
        return;
    }
    rb_sq_unique *u = sq->unique;
    if (rb_table_get(&u->by_key, key + n) || rb_table_get(&u->by_jid, value + used))
        return;
    lock *l = rb_xcalloc(1, sizeof *l);
    memcpy(l->key, key + n, RB_UNIQUE_KEY_LEN);
    l->jid = rb_xstrdup(value + used);
    l->until_ms = until;
    l->start = mode == 's';
    add(u, l);
}

void rb_sq_unique_load_counter(rb_sq *sq, const char *name, int64_t value)
{
    if (!strcmp(name, "total_expired"))
        sq->unique->expired = value;
}

static void add_expiry(rb_sq_unique *u, const char *jid, int64_t ms)
{
    size_t n = strlen(jid) + 1;
    expiry *e = rb_xmalloc(sizeof *e + n);
    e->hnext = NULL;
    e->ms = ms;
    memcpy(e->jid, jid, n);
    expiry *old = rb_table_get(&u->expiring, jid);
    if (old) {
        rb_table_del(&u->expiring, old);
        free(old);
    }
    rb_table_put(&u->expiring, e);
}

typedef struct rebuild {
    rb_sq *sq;
    lock **stale;
    size_t n;
} rebuild;

/* A loaded lock whose holder is gone, dead, or (for "start") already
 * started: collected to be dropped. */
static void check_lock(void *e, void *arg)
{
    lock *l = e;
    rebuild *r = arg;
    rb_job *j = rb_jobs_find(&r->sq->jobs, l->jid);
    if (!j || j->state == RB_JOB_DEAD || (l->start && j->attempts > 0))
        r->stale[r->n++] = l;
}

/* A loaded job with custom.expires_at: recorded. */
static void check_job(void *e, void *arg)
{
    rb_job *j = e;
    rebuild *r = arg;
    if (!strstr(j->json, "\"expires_at\""))
        return;
    json_t *job = json_loads(j->json, 0, NULL);
    int64_t ms = rb_expiry_of(job);
    json_decref(job);
    if (ms)
        add_expiry(r->sq->unique, j->jid, ms);
}

void rb_sq_unique_rebuild(rb_sq *sq)
{
    rb_sq_unique *u = sq->unique;
    rebuild r = {sq, rb_xcalloc(u->by_key.size + 1, sizeof *r.stale), 0};
    rb_table_each(&u->by_key, check_lock, &r);
    for (size_t i = 0; i < r.n; i++)
        drop(sq, r.stale[i], false); /* its row: overwritten or dropped at the next load */
    free(r.stale);
    rb_table_each(&sq->jobs.by_jid, check_job, &r);
    if (u->by_key.size || u->expiring.size)
        rb_log(RB_LOG_INFO, "recovered %zu unique locks and %zu expiring jobs", u->by_key.size,
               u->expiring.size);
}

/* --- PUSH --- */

int rb_sq_unique_check(rb_sq *sq, const json_t *job, int64_t now)
{
    rb_unique_spec s;
    if (!rb_unique_or_expiring(job) || rb_unique_parse(job, &s, NULL) || !s.on)
        return 0;
    char key[RB_UNIQUE_KEY_LEN];
    lock *l = rb_table_get(&sq->unique->by_key, rb_unique_key(job, key));
    if (!l || l->until_ms <= now)
        return 0;
    sq->unique->rejected++;
    const char *jid = json_string_value(json_object_get(job, "jid"));
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", jid, "holder", l->jid),
              "JID %s: " RB_NOTUNIQUE_CODE " " RB_NOTUNIQUE_MSG " (held by %s)", jid, l->jid);
    return RB_ENOTUNIQUE;
}

int rb_sq_unique_check_push(rb_sq *sq, json_t *const *jobs, size_t n, int64_t now,
                             rb_err *err)
{
    if (n < 2)
        return 0;
    bool deps = false;
    for (size_t i = 0; i < n && !deps; i++)
        deps = rb_dep_has(jobs[i]);
    if (!deps)
        return 0;
    char (*keys)[RB_UNIQUE_KEY_LEN] = rb_xcalloc(n, sizeof *keys);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rb_unique_spec s;
        if (!rb_unique_or_expiring(jobs[i]) || rb_unique_parse(jobs[i], &s, NULL) || !s.on)
            continue;
        rb_unique_key(jobs[i], keys[i]);
        lock *l = rb_table_get(&sq->unique->by_key, keys[i]);
        bool held = l && l->until_ms > now;
        for (size_t k = 0; k < i && !held; k++)
            held = !strcmp(keys[k], keys[i]);
        if (held)
            rc = rb_err_set(err, RB_ENOTUNIQUE,
                            "job %s: " RB_NOTUNIQUE_CODE " " RB_NOTUNIQUE_MSG
                            " (a PUSHB naming parents is refused whole)",
                            json_string_value(json_object_get(jobs[i], "jid")));
    }
    free(keys);
    return rc;
}

void rb_sq_unique_pushed(rb_sq *sq, const rb_job *j, const json_t *job, int64_t now)
{
    if (!rb_unique_or_expiring(job))
        return;
    rb_sq_unique *u = sq->unique;
    int64_t exp = rb_expiry_of(job);
    if (exp)
        add_expiry(u, j->jid, exp);
    rb_unique_spec s;
    if (rb_unique_parse(job, &s, NULL) || !s.on)
        return;
    char key[RB_UNIQUE_KEY_LEN];
    rb_unique_key(job, key);
    lock *old = rb_table_get(&u->by_key, key);
    if (old) /* ran out (rb_sq_unique_check): the new holder takes it */
        drop(sq, old, false);
    int64_t at_ms = now;
    const char *at = json_string_value(json_object_get(job, "at"));
    if (at && *at)
        rb_time_parse_rfc3339(at, &at_ms);
    lock *l = rb_xcalloc(1, sizeof *l);
    memcpy(l->key, key, RB_UNIQUE_KEY_LEN);
    l->jid = rb_xstrdup(j->jid);
    l->until_ms = rb_unique_until_ms(&s, now, at_ms);
    l->start = s.until_start;
    add(u, l);
    save(sq, l, false);
}

/* --- release --- */

static void unlock(rb_sq *sq, const rb_job *j, bool only_start)
{
    rb_sq_unique *u = sq->unique;
    if (!u->by_jid.size)
        return;
    lock *l = rb_table_get(&u->by_jid, j->jid);
    if (l && (!only_start || l->start))
        drop(sq, l, true);
}

void rb_sq_unique_gone(rb_sq *sq, const rb_job *j)
{
    unlock(sq, j, false);
    rb_sq_unique *u = sq->unique;
    if (!u->expiring.size)
        return;
    expiry *e = rb_table_get(&u->expiring, j->jid);
    if (e) {
        rb_table_del(&u->expiring, e);
        free(e);
    }
}

void rb_sq_unique_died(rb_sq *sq, const rb_job *j)
{
    unlock(sq, j, false);
}

void rb_sq_unique_started(rb_sq *sq, const rb_job *j)
{
    unlock(sq, j, true);
}

/* --- expiry --- */

bool rb_sq_unique_expire(rb_sq *sq, rb_job *j, int64_t now)
{
    rb_sq_unique *u = sq->unique;
    if (!u->expiring.size)
        return false;
    expiry *e = rb_table_get(&u->expiring, j->jid);
    if (!e || e->ms > now)
        return false;
    rb_log_kv(RB_LOG_INFO, RB_LOG_KV("jid", j->jid, "queue", rb_job_queue(j)->name), "JID %s: Halt: job expired",
              j->jid);
    u->expired++;
    rb_writer_counter(sq->writer, "total_expired", u->expired);
    rb_job_metric(sq->metrics, RB_M_EXPIRED, j);
    rb_sq_batch_failed(sq, j, !j->history, true, now); /* a member's final failure */
    rb_sq_forget(sq, j); /* children told (discarded parent), lock and expiry gone */
    return true;
}

int64_t rb_sq_unique_lock_until(const rb_sq *sq, const char *jid)
{
    const lock *l = sq->unique ? rb_table_get(&sq->unique->by_jid, jid) : NULL;
    return l ? l->until_ms : 0;
}

void rb_sq_unique_info(rb_sq *sq, json_t *rebound)
{
    rb_sq_unique *u = sq->unique;
    json_object_set_new(rebound, "expired", json_integer(u->expired));
    json_object_set_new(rebound, "unique",
                        json_pack("{s:I, s:I}", "locks", (json_int_t)u->by_key.size, "rejected",
                                  (json_int_t)u->rejected));
}
