/* A full disk under the real server: the database lives on a 4 MB tmpfs
 * (when this process may mount one, i.e. as root, and $RBH_DISKFAULT_FSIZE
 * is not 1) that a filler file then
 * fills; otherwise the running server's file size limit (RLIMIT_FSIZE, set
 * with prlimit) is lowered to the database's current size, so its files
 * cannot grow. Either way writes that need space fail in the kernel, and:
 * the server answers them with errors and never +OK, keeps serving reads,
 * recovers when space returns, and after kill -9 every job whose PUSH got
 * +OK is there while no refused one is. */
#include <criterion/criterion.h>

#include <sys/mount.h>
#include <sys/resource.h>

#include "harness.h"

static rbh_server S;
static char mnt[300];  /* the tmpfs mount point, "" when not mounted */
static bool use_tmpfs; /* else RLIMIT_FSIZE */

static void unmount(void)
{
    if (mnt[0] && umount2(mnt, MNT_DETACH) == 0)
        mnt[0] = '\0';
}

static void stop(void)
{
    if (S.pid > 0)
        rbh_kill(&S, SIGKILL); /* a failed test: no clean exit to check */
    unmount();
    rbh_stop(&S);
}

TestSuite(diskfault, .fini = stop, .timeout = 90);

/* Starts the server; its database on a fresh tmpfs when one can be mounted. */
static void start(void)
{
    rbh_init(&S);
    snprintf(mnt, sizeof mnt, "%s/disk", S.dir);
    cr_assert_eq(mkdir(mnt, 0700), 0);
    /* $RBH_DISKFAULT_FSIZE=1 forces the RLIMIT_FSIZE way (to test it as root) */
    const char *force = getenv("RBH_DISKFAULT_FSIZE");
    use_tmpfs = !(force && !strcmp(force, "1")) && mount("tmpfs", mnt, "tmpfs", 0, "size=4m") == 0;
    if (use_tmpfs)
        snprintf(S.db, sizeof S.db, "%s/rebound.db", mnt);
    else
        mnt[0] = '\0';
    fprintf(stderr, "diskfault: %s\n",
            use_tmpfs ? "database on a 4 MB tmpfs" : "file size limit (RLIMIT_FSIZE)");
    cr_assert_eq(rbh_launch(&S, NULL), 0, "server did not start (see %s)", S.log);
}

static char filler[400];

/* Takes the remaining space away. */
static void disk_fill(void)
{
    if (use_tmpfs) {
        snprintf(filler, sizeof filler, "%s/filler", mnt);
        int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        cr_assert_geq(fd, 0);
        static char block[65536];
        while (write(fd, block, sizeof block) > 0)
            ;
        cr_assert_eq(errno, ENOSPC, "filling the tmpfs: %s", strerror(errno));
        close(fd);
        return;
    }
    /* No file of the server may grow past what the database holds now. */
    char wal[400];
    snprintf(wal, sizeof wal, "%s-wal", S.db);
    struct stat a = {0}, b = {0};
    stat(S.db, &a);
    stat(wal, &b);
    rlim_t cap = (rlim_t)(a.st_size > b.st_size ? a.st_size : b.st_size);
    struct rlimit rl;
    cr_assert_eq(prlimit(S.pid, RLIMIT_FSIZE, NULL, &rl), 0);
    rl.rlim_cur = cap;
    cr_assert_eq(prlimit(S.pid, RLIMIT_FSIZE, &rl, NULL), 0, "prlimit: %s", strerror(errno));
}

/* Gives the space back. */
static void disk_free(void)
{
    if (use_tmpfs) {
        cr_assert_eq(unlink(filler), 0);
        return;
    }
    struct rlimit rl;
    cr_assert_eq(prlimit(S.pid, RLIMIT_FSIZE, NULL, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    cr_assert_eq(prlimit(S.pid, RLIMIT_FSIZE, &rl, NULL), 0);
}

/* PUSH of a job with a 100 kB argument; the reply (caller frees). */
static char *push_big(rbh_conn *c, const char *jid)
{
    static char pad[100001];
    if (!pad[0])
        memset(pad, 'd', sizeof pad - 1);
    return rbh_cmd(c, "PUSH {\"jid\":\"%s\",\"jobtype\":\"fill\",\"args\":[\"%s\"]}", jid, pad);
}

enum { MAX_PUSH = 80 };

Test(diskfault, full_disk_errors_reads_work_nothing_false_acknowledged)
{
    start();
    rbh_conn *c = rbh_connect(&S, "w1");
    cr_assert_not_null(c);
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"before-0001\",\"jobtype\":\"a\",\"args\":[1]}"));
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"before-0002\",\"jobtype\":\"a\",\"args\":[2],\"queue\":\"q2\"}"));
    json_t *j = rbh_json(rbh_cmd(c, "FETCH q2"));
    cr_assert_str_eq(json_string_value(json_object_get(j, "jid")), "before-0002");
    json_decref(j);

    disk_fill();
    /* Push until the disk refuses: a WAL with room left from earlier
     * commits may take a few first. */
    bool ok[MAX_PUSH] = {0};
    int first_err = -1, errors = 0;
    for (int i = 0; i < MAX_PUSH; i++) {
        char jid[32];
        snprintf(jid, sizeof jid, "full-%06d", i);
        char *r = push_big(c, jid);
        cr_assert_not_null(r, "the server died or hung up on a full disk (log %s)", S.log);
        if (!strcmp(r, "+OK")) {
            ok[i] = true;
        } else {
            cr_assert(strstr(r, "-ERR storage error") == r, "push %d got '%s'", i, r);
            if (first_err < 0)
                first_err = i;
            errors++;
        }
        free(r);
        /* keep going a little past the first error: every later one fails too */
        if (first_err >= 0 && i >= first_err + 5)
            break;
    }
    cr_assert_geq(first_err, 0, "the disk never filled up after %d pushes of 100 kB", MAX_PUSH);
    cr_assert_geq(errors, 5);
    fprintf(stderr, "diskfault: first refused push #%d, %d refused\n", first_err, errors);
    /* a refused push is not there */
    char jid[32];
    snprintf(jid, sizeof jid, "full-%06d", first_err);
    cr_assert(rbh_expect(c, "$-1", "JOB {\"jid\":\"%s\"}", jid));
    /* reads keep working */
    cr_assert_eq(rbh_info_int(c, "faktory.tasks.Busy.size"), 1);
    char *st = rbh_job_state(c, "before-0001");
    cr_assert(st && !strcmp(st, "enqueued"), "before-0001 is %s", st ? st : "gone");
    free(st);
    json_t *list = rbh_json(rbh_cmd(c, "JOBS {\"state\":\"working\"}"));
    cr_assert(json_is_object(list) || json_is_array(list), "JOBS failed on a full disk");
    json_decref(list);
    /* writes that need no new space may or may not get through, but none
     * is acknowledged without being stored: ACK's answer decides below */
    char *ack = rbh_cmd(c, "ACK {\"jid\":\"before-0002\"}");
    cr_assert_not_null(ack);
    bool ack_ok = !strcmp(ack, "+OK");
    cr_assert(ack_ok || strstr(ack, "-ERR storage error") == ack, "ACK got '%s'", ack);
    free(ack);

    /* space returns: writes work again on the same connection */
    disk_free();
    cr_assert(rbh_expect(c, "+OK", "PUSH {\"jid\":\"after-00001\",\"jobtype\":\"a\",\"args\":[3]}"));
    char *r = push_big(c, "after-00002");
    cr_assert(r && !strcmp(r, "+OK"), "push after freeing space got '%s'", r ? r : "(closed)");
    free(r);
    rbh_close(c);

    /* kill -9 and restart: exactly the acknowledged jobs are there */
    rbh_kill(&S, SIGKILL);
    cr_assert_eq(rbh_launch(&S, NULL), 0, "no restart after the full disk (log %s)", S.log);
    c = rbh_connect(&S, "w2");
    for (int i = 0; i < MAX_PUSH; i++) {
        snprintf(jid, sizeof jid, "full-%06d", i);
        st = rbh_job_state(c, jid);
        if (ok[i])
            cr_assert(st && !strcmp(st, "enqueued"), "acknowledged %s is %s", jid, st ? st : "gone");
        else
            cr_assert_null(st, "refused %s is there (%s)", jid, st);
        free(st);
    }
    const char *must[] = {"before-0001", "after-00001", "after-00002"};
    for (size_t i = 0; i < 3; i++) {
        st = rbh_job_state(c, must[i]);
        cr_assert(st && !strcmp(st, "enqueued"), "%s is %s", must[i], st ? st : "gone");
        free(st);
    }
    st = rbh_job_state(c, "before-0002");
    if (ack_ok)
        cr_assert_null(st, "before-0002 was acknowledged but came back (%s)", st);
    else
        cr_assert(st && !strcmp(st, "working"), "before-0002 is %s", st ? st : "gone");
    free(st);
    rbh_close(c);
    int wst = rbh_kill(&S, SIGTERM);
    unmount();
    cr_assert(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the server did not exit cleanly");
    cr_assert_eq(rbh_stop(&S), 0, "sanitizer report in the log (above)");
}
