/*
 * Speed of the sweep and of `spsim query` (doc/sweep.md reports the figures):
 *   1. evaluation alone (--top 10, nothing written) of the GPT-3 175B spaces of
 *      examples/sweeps/ and of llama3-70b-fresh.json (every point a layer evaluation of its
 *      own), on 1 thread and on every core: points/s and valid configurations/s;
 *   2. CSV rows written to a file on 1 thread, in memory (/dev/shm) and on disk ($TMPDIR or
 *      /tmp): rows/s while streaming, and with the final fsync (the first 327,680 points of
 *      the dense space, about 250,000 rows and 270 MB, so as not to flood a shared disk);
 *   3. `spsim query` end to end (spawn to exit), beside `spsim --version` and /bin/true.
 * Each figure is the median of several runs; timing on a shared machine is noisy, so check
 * `uptime` first. Usage: bench_sweep SPSIM SOURCE_DIR [REPEATS]
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "spsim/spsim.h"

extern char **environ;

static double
now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int
compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static struct spsim_sweep *
load(const char *source, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/sweeps/%s", source, name);
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    if (spsim_sweep_spec_create(&spec, &err) || spsim_sweep_spec_load(spec, path, &err) ||
        spsim_sweep_create(spec, &sw, &err)) {
        fprintf(stderr, "bench_sweep: %s\n", err.message);
        exit(1);
    }
    spsim_sweep_spec_destroy(spec);
    return sw;
}

static int
write_fd(void *cookie, const char *text, size_t len)
{
    int fd = *(int *)cookie;
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n <= 0)
            return -1;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

#define CSV_POINTS 327680

/* Run once; *seconds gets the run's wall time (plus fsync when fd >= 0). */
static struct spsim_sweep_stats
run(const struct spsim_sweep *sw, unsigned threads, int fd, double *seconds, double *with_sync)
{
    struct spsim_sweep_options opt;
    struct spsim_sweep_stats stats;
    struct spsim_error err = {0};
    spsim_sweep_options_defaults(&opt);
    opt.threads = threads;
    if (fd >= 0 && spsim_sweep_size(sw) > CSV_POINTS)
        opt.end = CSV_POINTS;
    if (fd < 0) {
        opt.format = SPSIM_ROW_NONE;
        opt.top_k = 10;
    } else {
        opt.write = write_fd;
        opt.cookie = &fd;
    }
    double t0 = now();
    if (spsim_sweep_run(sw, &opt, &stats, &err) != SPSIM_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err.message);
        exit(1);
    }
    *seconds = now() - t0;
    if (fd >= 0 && fsync(fd) != 0) {
        perror("bench_sweep: fsync");
        exit(1);
    }
    *with_sync = now() - t0;
    return stats;
}

static void
bench_evaluation(const char *source, const char *name, unsigned threads, int repeats)
{
    struct spsim_sweep *sw = load(source, name);
    double t[64], unused;
    struct spsim_sweep_stats s = {0};
    for (int i = 0; i < repeats; i++)
        s = run(sw, threads, -1, &t[i], &unused);
    double m = median(t, repeats);
    printf("evaluation  %-22s %u thread%s  %9llu points %8llu valid  %7.4f s  %6.2f M points/s  "
           "%5.2f M valid configs/s\n",
           name, threads, threads == 1 ? " " : "s", (unsigned long long)s.evaluated,
           (unsigned long long)s.valid, m, (double)s.evaluated / m / 1e6,
           (double)s.valid / m / 1e6);
    spsim_sweep_destroy(sw);
}

static void
bench_csv(const char *source, const char *name, const char *dir, int repeats)
{
    struct spsim_sweep *sw = load(source, name);
    char path[4096];
    snprintf(path, sizeof(path), "%s/bench-sweep-XXXXXX", dir);
    double t[64], ts[64];
    struct spsim_sweep_stats s = {0};
    off_t bytes = 0;
    for (int i = 0; i < repeats; i++) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s", path);
        int fd = mkstemp(tmp);
        if (fd < 0) {
            perror("bench_sweep: mkstemp");
            exit(1);
        }
        s = run(sw, 1, fd, &t[i], &ts[i]);
        bytes = lseek(fd, 0, SEEK_END);
        close(fd);
        unlink(tmp);
    }
    double m = median(t, repeats), ms = median(ts, repeats);
    printf("csv to file %-22s 1 thread   %9llu rows (%.0f MB) in %s  %7.4f s  %6.3f M rows/s  "
           "(%.3f M rows/s with fsync, %.2f s)\n",
           name, (unsigned long long)s.written, (double)bytes / 1e6, dir, m,
           (double)s.written / m / 1e6, (double)s.written / ms / 1e6, ms);
    spsim_sweep_destroy(sw);
}

/* Wall time of one spawn-to-exit of argv, output to /dev/null. */
static double
spawn_once(char *const *argv)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    double t0 = now();
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_sweep: cannot run %s\n", argv[0]);
        exit(1);
    }
    int status;
    waitpid(pid, &status, 0);
    double t = now() - t0;
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_sweep: %s failed\n", argv[0]);
        exit(1);
    }
    return t;
}

static void
bench_spawn(const char *label, char *const *argv, int repeats)
{
    double t[512];
    spawn_once(argv); /* warm the page cache */
    for (int i = 0; i < repeats; i++)
        t[i] = spawn_once(argv);
    double m = median(t, repeats); /* sorts t */
    printf("end to end  %-36s %7.3f ms (median of %d, min %.3f ms)\n", label, 1e3 * m, repeats,
           1e3 * t[0]);
}

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_sweep SPSIM SOURCE_DIR [REPEATS]\n");
        return 2;
    }
    gsl_set_error_handler_off();
    char *spsim = argv[1];
    const char *source = argv[2];
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (repeats < 1 || repeats > 64)
        repeats = 5;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    printf("spsim %s, %ld cores, median of %d runs\n", spsim_version(), cores, repeats);
    static const char *const spaces[] = {"gpt3-175b.json", "gpt3-175b-dense.json",
                                         "llama3-70b-fresh.json"};
    for (int i = 0; i < 3; i++) {
        bench_evaluation(source, spaces[i], 1, repeats);
        if (cores > 1)
            bench_evaluation(source, spaces[i], (unsigned)cores, repeats);
    }
    if (access("/dev/shm", W_OK) == 0)
        bench_csv(source, "gpt3-175b-dense.json", "/dev/shm", repeats);
    bench_csv(source, "gpt3-175b-dense.json", dir, repeats);
    char *query[] = {spsim, "query", "--format", "json", NULL};
    char *version[] = {spsim, "--version", NULL};
    char *truth[] = {"/bin/true", NULL};
    bench_spawn("spsim query --format json", query, 10 * repeats);
    bench_spawn("spsim --version", version, 10 * repeats);
    bench_spawn("/bin/true", truth, 10 * repeats);
    return 0;
}
