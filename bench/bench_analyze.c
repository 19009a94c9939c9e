/* Analyzer throughput: events per second of `summary` (replay + report) on a synthetic trace
 * of N events (default 10 million), streamed from a file in the page cache, on one core; the
 * reader alone beside it (its share bounds any faster replay); peak memory beside the file
 * size shows the replay keeps live state, not the trace. `whatif` (loading the trace and one
 * replay under a ceiling below the peak, as `whatif --limit`) runs in a child process, so that
 * its CPU time and peak memory are its own. With the
 * memory-viz export available (memshim-analyze export --format memory-viz), also times
 * `python3 -c 'pickle.load(...)'` of the same trace, which is what users do today.
 *
 * The trace is written as the shim writes it, in write-outs of 1 MiB each after its CHECKSUM
 * record, which the reader verifies; --no-checksums leaves them out.
 *
 *   bench_analyze [--events N] [--keep PATH] [--analyze PATH-TO-memshim-analyze] [--no-checksums]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "reader.h"
#include "summary.h"
#include "tracegen.h"
#include "whatif.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* Events per step of tracegen_training_run with t temporaries: 7 + layers * (4 + 4t). */
static void generate(const char *path, uint64_t events, int checksums)
{
    struct tracegen_training t = {
        .layers = 1000, .layer_bytes = 4 << 20, .activation_bytes = 1 << 20, .temporaries = 1};
    t.steps = (uint32_t)(events / (7 + t.layers * 8) + 1);
    struct tracegen_header h = {.pid = 1,
                                .rank = MST_NO_RANK,
                                .stack_depth = 24,
                                .flags = MST_FILE_F_STACKS,
                                .checksums = checksums};
    struct tracegen *g = tracegen_new_file(path, &h);
    if (!g) {
        perror(path);
        exit(1);
    }
    tracegen_training_run(g, &t);
    struct mst_rec_summary s = {0};
    tracegen_summary(g, &s);
    if (tracegen_finish(g) != 0) {
        fprintf(stderr, "writing %s failed\n", path);
        exit(1);
    }
    tracegen_free(g);
}

/* Reads the file once so every timed run starts from the page cache. */
static void warm(const char *path)
{
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    while (f && fread(buf, 1, sizeof buf, f) == sizeof buf)
        ;
    if (f)
        fclose(f);
}

/* Wall time of one summary; *cpu gets the CPU time this process spent on it, which is what
 * one core's throughput means on a shared machine. */
static double summarize(const char *path, uint64_t *records, double *cpu)
{
    FILE *null = fopen("/dev/null", "w");
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double t0 = now();
    char err[512];
    struct model_options o = {.refine = 1}; /* as `summary` runs */
    struct model *m = model_replay(path, &o, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    struct summary_options so = {.refine = 1, .top = 10, .frames = 6};
    summary_print_text(null, m, &so);
    double t = now() - t0;
    *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    *records = reader_records(model_reader(m));
    model_free(m);
    fclose(null);
    return t;
}

/* CPU seconds of reading and validating the trace alone (no replay): the share of the
 * reader in the summary's time, which is what bounds any faster replay. */
static double read_only(const char *path)
{
    /* as the replay reads: ALLOC and FREE records in place, the others one at a time */
    const struct mst_record_header *refs[64];
    struct reader_record rec;
    char err[512];
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    struct reader *r = reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    while (reader_next_refs(r, refs, 64) == 64 || reader_next(r, &rec) == READER_RECORD)
        ;
    reader_close(r);
    return clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
}

/* What `whatif --limit` does: load, then every policy under a ceiling of 3/4 of the peak. */
static void whatif_once(const char *path)
{
    char err[512];
    struct whatif_trace *t = whatif_load(path, -1, err, sizeof err);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    struct whatif_result res;
    if (whatif_simulate(t, whatif_info(t)->peak / 4 * 3, &res) != 0) {
        fprintf(stderr, "whatif: out of memory\n");
        exit(1);
    }
    whatif_result_free(&res);
    whatif_free(t);
}

/* CPU seconds and peak memory (KiB) of whatif_once in a child process. */
static double whatif_child(const char *path, long *maxrss_kib)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        whatif_once(path);
        _exit(0);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "whatif child failed\n");
        exit(1);
    }
    *maxrss_kib = ru.ru_maxrss;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void compare_pickle(const char *analyze, const char *trace, uint64_t records, double ours)
{
    char pickle[4200], cmd[9000];
    snprintf(pickle, sizeof pickle, "%s.pickle", trace);
    snprintf(cmd, sizeof cmd, "%s export --format memory-viz -o %s %s >/dev/null 2>&1", analyze,
             pickle, trace);
    if (system(cmd) != 0) {
        printf("memory-viz export not available (%s): no pickle comparison\n", analyze);
        return;
    }
    snprintf(cmd, sizeof cmd, "python3 -c 'import pickle; pickle.load(open(\"%s\", \"rb\"))'",
             pickle);
    double t0 = now();
    int rc = system(cmd);
    double t = now() - t0;
    unlink(pickle);
    if (rc != 0) {
        printf("python3 pickle.load failed\n");
        return;
    }
    printf("python3 pickle.load of the memory-viz export: %.3f s (%.2f M events/s); "
           "summary is %.1fx faster\n",
           t, (double)records / t / 1e6, t / ours);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {{"events", required_argument, NULL, 'n'},
                                            {"keep", required_argument, NULL, 'k'},
                                            {"analyze", required_argument, NULL, 'a'},
                                            {"no-checksums", no_argument, NULL, 'c'},
                                            {0, 0, 0, 0}};
    uint64_t events = 10000000;
    const char *keep = NULL, *analyze = NULL;
    int c, checksums = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (c == 'n')
            events = strtoull(optarg, NULL, 0);
        else if (c == 'k')
            keep = optarg;
        else if (c == 'a')
            analyze = optarg;
        else if (c == 'c')
            checksums = 0;
        else
            return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", keep ? keep : "/tmp/memshim-bench-analyze.mst");
    generate(path, events, checksums);
    struct stat st;
    stat(path, &st);
    warm(path);
    uint64_t records = 0;
    double best = 1e30, best_cpu = 1e30;
    for (int i = 0; i < 3; i++) { /* best of three: the machine may be shared */
        double cpu, t = summarize(path, &records, &cpu);
        best = t < best ? t : best;
        best_cpu = cpu < best_cpu ? cpu : best_cpu;
    }
    double read_cpu = 1e30;
    for (int i = 0; i < 3; i++) {
        double cpu = read_only(path);
        read_cpu = cpu < read_cpu ? cpu : read_cpu;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("summary: %llu events (%.0f MiB trace) in %.3f s wall, %.3f s CPU = %.1f M events/s "
           "wall, %.1f M events/s per CPU second, one core (goal 100)\n",
           (unsigned long long)records, (double)st.st_size / 1048576.0, best, best_cpu,
           (double)records / best / 1e6, (double)records / best_cpu / 1e6);
    printf("reader alone (validation, no replay): %.3f s CPU = %.1f M events/s per CPU second, "
           "%.0f%% of the summary's CPU time\n",
           read_cpu, (double)records / read_cpu / 1e6, 100.0 * read_cpu / best_cpu);
    printf("peak memory of this process: %.1f MiB (trace file %.0f MiB)\n",
           (double)ru.ru_maxrss / 1024.0, (double)st.st_size / 1048576.0);
    double whatif_cpu = 1e30;
    long whatif_rss = 0;
    for (int i = 0; i < 2; i++) {
        double cpu = whatif_child(path, &whatif_rss);
        whatif_cpu = cpu < whatif_cpu ? cpu : whatif_cpu;
    }
    printf("whatif (load + replays under 3/4 of the peak, a child process): %.3f s CPU = %.1f M "
           "events/s per CPU second, peak memory %.1f MiB\n",
           whatif_cpu, (double)records / whatif_cpu / 1e6, (double)whatif_rss / 1024.0);
    if (analyze)
        compare_pickle(analyze, path, records, best);
    if (!keep)
        unlink(path);
    return 0;
}
