/* Clocks, percentiles and /proc readings for the load generator. */
#ifndef RB_BENCH_LG_STATS_H
#define RB_BENCH_LG_STATS_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t lg_clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
static int64_t lg_mono_us(void) { return lg_clock_us(CLOCK_MONOTONIC); }
static int64_t lg_wall_us(void) { return lg_clock_us(CLOCK_REALTIME); }

/* Sleeps until the monotonic time t_us. */
static void lg_sleep_until(int64_t t_us)
{
    struct timespec ts = {.tv_sec = t_us / 1000000, .tv_nsec = (t_us % 1000000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

static int lg_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Summary of n samples (sorted in place): percentiles by nearest rank. */
typedef struct lg_summary {
    size_t n;
    int64_t min, p50, p99, max;
} lg_summary;

static lg_summary lg_summarize(int64_t *v, size_t n)
{
    lg_summary s = {n, 0, 0, 0, 0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, lg_cmp_i64);
    s.min = v[0];
    s.p50 = v[(n + 1) / 2 - 1];
    s.p99 = v[(n * 99 + 99) / 100 - 1];
    s.max = v[n - 1];
    return s;
}

/* VmRSS of process pid in bytes, or -1. */
static long long lg_rss_bytes(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* CPU time (user + system) of process pid in microseconds, or -1. */
static long long lg_cpu_us(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)((ut + st) * 1000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static long long lg_du_total;
static int lg_du_add(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_F)
        lg_du_total += st->st_size;
    return 0;
}

/* Apparent size in bytes of every file under dir (0 for NULL or missing). */
static long long lg_dir_bytes(const char *dir)
{
    lg_du_total = 0;
    if (dir && *dir)
        nftw(dir, lg_du_add, 16, FTW_PHYS);
    return lg_du_total;
}

#endif
