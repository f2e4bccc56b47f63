/* The disk's fsync, measured the way the servers use it: each of N threads
 * writes 4 KiB into its own region of one file and fdatasyncs it, in a loop,
 * for a few seconds. Prints the rate, the wait per fsync and the CPU each
 * costs (user + system of the whole process, from getrusage), so a bench
 * report shows what the run's fsync-bound figures (beanstalkd -f 0, the
 * group commit) stood on.
 * Usage: fsync_probe [--dir D] [--threads N] [--secs S]. Prints
 * "fsync.tN.metric value" lines. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK = 4096, BLOCKS_PER_THREAD = 256, MAX_THREADS = 64 };

static int fd;
static atomic_int stop;

typedef struct probe {
    int index;
    long syncs;
    int err; /* errno of a failed write or fdatasync, 0 if none */
} probe;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *run(void *arg)
{
    probe *p = arg;
    char buf[BLOCK];
    memset(buf, 'r', sizeof buf);
    off_t base = (off_t)p->index * BLOCKS_PER_THREAD * BLOCK;
    while (!atomic_load(&stop)) {
        off_t off = base + (off_t)(p->syncs % BLOCKS_PER_THREAD) * BLOCK;
        if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf || fdatasync(fd) != 0) {
            p->err = errno ? errno : EIO;
            break;
        }
        p->syncs++;
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: fsync_probe [--dir D] [--threads N (1..%d)] [--secs S]\n",
            MAX_THREADS);
    return 2;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int threads = 1;
    double secs = 2;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--dir"))
            dir = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--secs"))
            secs = atof(argv[++i]);
        else
            return usage();
    }
    if (threads < 1 || threads > MAX_THREADS || !(secs > 0 && secs <= 600))
        return usage();
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync_probe.XXXXXX", dir);
    fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "fsync_probe: cannot create a file in %s: %s\n", dir, strerror(errno));
        return 1;
    }
    unlink(path);
    /* Blocks allocated and on disk first: the loop measures overwrites,
     * as a WAL that starts over does. */
    if (ftruncate(fd, (off_t)threads * BLOCKS_PER_THREAD * BLOCK) != 0 || fsync(fd) != 0) {
        fprintf(stderr, "fsync_probe: %s: %s\n", path, strerror(errno));
        return 1;
    }
    probe p[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    double c0 = cpu_s(), t0 = now_s();
    for (int i = 0; i < threads; i++) {
        p[i] = (probe){.index = i};
        if (pthread_create(&th[i], NULL, run, &p[i]) != 0) {
            fprintf(stderr, "fsync_probe: cannot start a thread\n");
            return 1;
        }
    }
    struct timespec nap = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&stop, 1);
    long total = 0;
    int err = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += p[i].syncs;
        if (p[i].err)
            err = p[i].err;
    }
    double dt = now_s() - t0, cpu = cpu_s() - c0;
    close(fd);
    if (err || total == 0) {
        fprintf(stderr, "fsync_probe: write or fdatasync failed: %s\n", strerror(err ? err : EIO));
        return 1;
    }
    printf("fsync.t%d.per_s %.0f\n", threads, (double)total / dt);
    printf("fsync.t%d.wait_us %.1f\n", threads, dt * 1e6 * threads / (double)total);
    printf("fsync.t%d.cpu_us_per_sync %.1f\n", threads, cpu * 1e6 / (double)total);
    return 0;
}
