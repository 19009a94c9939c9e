/* Trace writer: round trip through the format's own structs, many threads through buffer
 * swaps with nothing lost or reordered per thread, a file cut short (SIGKILL) reads cleanly,
 * the fork child gets its own file, and symlinks/FIFOs are refused. */
#include <criterion/criterion.h>

#include "clock.h"
#include "core_util.h"
#include "trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

/* write(2) counted per thread (the trace writer's calls bind to this one), so a test can
 * tell which thread wrote the file out. */
static __thread unsigned long writes_here;

ssize_t write(int fd, const void *p, size_t n)
{
    writes_here++;
    return syscall(SYS_write, fd, p, n);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-trace-XXXXXX");
    cr_assert(mkdtemp(dir));
    clock_init();
}

static void start_labelled(const char *name, const char *label)
{
    static char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "%s/%s", dir, name);
    struct trace_config cfg = {.path_template = tmpl,
                               .rank = MST_NO_RANK,
                               .stack_depth = 24,
                               .flush_ms = 50,
                               .flags = MST_FILE_F_STACKS,
                               .label = label};
    trace_init(&cfg);
}

static void start(const char *name)
{
    start_labelled(name, NULL);
}

static void teardown(void)
{
    core_rm_tree(dir);
}

TestSuite(trace, .init = setup, .fini = teardown);

static void log_alloc(uint32_t thread, uint64_t addr, uint64_t seq)
{
    struct mst_rec_alloc a = {
        .time_ns = seq, .addr = addr, .size = seq, .thread = thread, .kind = MST_KIND_CUDA_MALLOC};
    trace_record(MST_REC_ALLOC, &a, sizeof a, NULL, 0);
}

Test(trace, round_trip)
{
    start("rt.mst");
    trace_touch();
    struct mst_rec_string s = {.id = 1};
    trace_record(MST_REC_STRING, &s, sizeof s, "forward", 7);
    log_alloc(1, 0xabc000, 42);
    struct mst_rec_summary sum = {.allocations = 1};
    trace_finish(&sum);
    log_alloc(1, 0xdead, 1); /* after the summary: dropped */

    char path[128];
    snprintf(path, sizeof path, "%s/rt.mst", dir);
    cr_assert_str_eq(trace_path(), path);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf);
    const struct mst_file_header *h = (const void *)buf;
    /* the header, then the label extension (empty: MEMSHIM_LABEL unset) */
    cr_assert_eq(core_header_size(buf, len), sizeof *h + sizeof(struct mst_file_label));
    const struct mst_file_label *label = (const void *)(buf + sizeof *h);
    cr_assert_eq(label->label[0], '\0');
    cr_assert_eq(h->version, MST_VERSION);
    cr_assert_eq(h->pid, (uint32_t)getpid());
    cr_assert_eq(h->rank, MST_NO_RANK);
    cr_assert_eq(h->stack_depth, 24);
    cr_assert_eq(h->flags, MST_FILE_F_STACKS);
    size_t off = h->header_size;
    struct core_record r;
    cr_assert_eq(core_next_record(buf, len, &off, &r), 1);
    cr_assert_eq(r.kind, MST_REC_STRING);
    cr_assert_eq(r.length, sizeof s + 7);
    cr_assert_eq(memcmp(r.payload + sizeof s, "forward", 7), 0);
    cr_assert_eq(core_next_record(buf, len, &off, &r), 1);
    cr_assert_eq(r.kind, MST_REC_ALLOC);
    struct mst_rec_alloc a;
    memcpy(&a, r.payload, sizeof a);
    cr_assert_eq(a.addr, 0xabc000);
    cr_assert_eq(a.size, 42);
    cr_assert_eq(core_next_record(buf, len, &off, &r), 1);
    cr_assert_eq(r.kind, MST_REC_SUMMARY);
    cr_assert_eq(core_next_record(buf, len, &off, &r), 0, "clean end");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    free(buf);
}

Test(trace, no_file_without_a_cuda_event)
{
    start("none.mst");
    log_alloc(1, 1, 1);
    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    char path[128];
    snprintf(path, sizeof path, "%s/none.mst", dir);
    cr_assert_eq(access(path, F_OK), -1, "helper processes leave no file");
}

Test(trace, expand_path)
{
    char out[64];
    cr_assert_eq(trace_expand_path(out, sizeof out, "run-%p-%r.mst", 123, 7), 0);
    cr_assert_str_eq(out, "run-123-7.mst");
    cr_assert_eq(trace_expand_path(out, sizeof out, "%r%%%x", 1, MST_NO_RANK), 0);
    cr_assert_str_eq(out, "0%%x");
    cr_assert_eq(trace_expand_path(out, 8, "abcdefgh", 1, 0), -1);
}

#define THREADS 8
#define PER     40000

static void *writer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER; i++)
        log_alloc(id, id, i);
    return NULL;
}

static _Atomic int writers_done;

/* The label extension of a trace written with MEMSHIM_LABEL = `label`. */
static struct mst_file_label written_label(const char *label)
{
    start_labelled("label.mst", label);
    trace_touch();
    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    char path[128];
    snprintf(path, sizeof path, "%s/label.mst", dir);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf && len >= sizeof(struct mst_file_header) + sizeof(struct mst_file_label));
    cr_assert_eq(core_header_size(buf, len),
                 sizeof(struct mst_file_header) + sizeof(struct mst_file_label));
    struct mst_file_label l;
    memcpy(&l, buf + sizeof(struct mst_file_header), sizeof l);
    free(buf);
    return l;
}

Test(trace, label_in_header)
{
    struct mst_file_label l = written_label("micro_batch=8,seq_len=1024");
    cr_expect_str_eq(l.label, "micro_batch=8,seq_len=1024");
}

Test(trace, long_label_is_cut)
{
    char long_label[200];
    memset(long_label, 'x', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = '\0';
    struct mst_file_label l = written_label(long_label);
    cr_expect_eq(strnlen(l.label, MST_LABEL_LEN), MST_LABEL_LEN - 1, "cut and terminated");
}

/* Explicit flushes racing with the swaps of the threads that fill buffers. */
static void *flusher(void *arg)
{
    (void)arg;
    while (!atomic_load(&writers_done))
        trace_flush();
    return NULL;
}

Test(trace, threads_through_buffer_swaps)
{
    start("mt.mst");
    trace_touch();
    pthread_t t[THREADS], f;
    pthread_create(&f, NULL, flusher, NULL);
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, writer, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&writers_done, 1);
    pthread_join(f, NULL);
    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    cr_assert_eq(trace_events_lost(), 0);

    char path[128];
    snprintf(path, sizeof path, "%s/mt.mst", dir);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert_gt(len, 4u << 20, "several 1 MiB buffers were swapped");
    cr_assert_eq(len - core_checksum_bytes(buf, len, core_header_size(buf, len)),
                 sizeof(struct mst_file_header) + sizeof(struct mst_file_label) +
                     (size_t)THREADS * PER * (8 + sizeof(struct mst_rec_alloc)) + 8 +
                     sizeof(struct mst_rec_summary),
                 "nothing lost, nothing twice");
    size_t off = core_header_size(buf, len);
    uint64_t next[THREADS + 1] = {0};
    struct core_record r;
    int rc, summaries = 0;
    while ((rc = core_next_record(buf, len, &off, &r)) == 1) {
        if (r.kind == MST_REC_SUMMARY) {
            summaries++;
            continue;
        }
        cr_assert_eq(r.kind, MST_REC_ALLOC);
        struct mst_rec_alloc a;
        memcpy(&a, r.payload, sizeof a);
        cr_assert_eq(a.time_ns, next[a.thread], "thread %u: got %llu, want %llu", a.thread,
                     (unsigned long long)a.time_ns, (unsigned long long)next[a.thread]);
        next[a.thread]++;
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(summaries, 1);
    for (int i = 1; i <= THREADS; i++)
        cr_assert_eq(next[i], PER, "thread %d lost records", i);
    free(buf);
}

/* Read `name` and check it holds `n` ALLOC records of thread 1 numbered 0..n-1, in order. */
static void check_sequence(const char *name, uint64_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf);
    size_t off = core_header_size(buf, len);
    struct core_record r;
    uint64_t next = 0;
    int rc;
    while ((rc = core_next_record(buf, len, &off, &r)) == 1) {
        if (r.kind != MST_REC_ALLOC)
            continue;
        struct mst_rec_alloc a;
        memcpy(&a, r.payload, sizeof a);
        cr_assert_eq(a.time_ns, next, "got %llu, want %llu", (unsigned long long)a.time_ns,
                     (unsigned long long)next);
        next++;
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(next, n);
    free(buf);
}

#define REC_BYTES (sizeof(struct mst_record_header) + sizeof(struct mst_rec_alloc))

Test(trace, loggers_leave_the_writes_to_the_flusher)
{
    start("ring.mst");
    trace_touch(); /* header written here, flusher started */
    writes_here = 0;
    /* Crosses two buffer ends; the ring has room, so this thread makes no write(2). */
    uint64_t n = (5u << 20) / 2 / REC_BYTES;
    for (uint64_t i = 0; i < n; i++)
        log_alloc(1, 1, i);
    cr_assert_eq(writes_here, 0, "the flusher writes full buffers out");
    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    cr_assert_eq(trace_events_lost(), 0);
    check_sequence("ring.mst", n);
}

Test(trace, a_full_ring_is_written_out_by_the_logger)
{
    start("full.mst");
    writes_here = 0;
    /* No CUDA event yet: no file and no flusher, so when the ring is full the logger writes
     * it out itself (creating the file) rather than dropping records. */
    uint64_t n = (13u << 20) / 2 / REC_BYTES;
    for (uint64_t i = 0; i < n; i++)
        log_alloc(1, 1, i);
    cr_assert_gt(writes_here, 0);
    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    cr_assert_eq(trace_events_lost(), 0);
    check_sequence("full.mst", n);
}

Test(trace, killed_process_leaves_a_readable_file)
{
    pid_t pid = fork();
    if (pid == 0) {
        start("kill.mst");
        trace_touch();
        for (uint64_t i = 0; i < 30000; i++)
            log_alloc(1, 1, i); /* beyond one buffer: some written by swaps */
        trace_flush();
        log_alloc(1, 1, 30000); /* buffered only: lost with the process */
        raise(SIGKILL);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char path[128];
    snprintf(path, sizeof path, "%s/kill.mst", dir);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf);
    size_t off = core_header_size(buf, len);
    cr_assert_gt(off, 0);
    struct core_record r;
    uint64_t n = 0;
    int rc;
    while ((rc = core_next_record(buf, len, &off, &r)) == 1) {
        cr_assert_eq(r.kind, MST_REC_ALLOC, "no summary in a killed process's trace");
        n++;
    }
    cr_assert_eq(rc, 0, "ends at a record boundary");
    cr_assert_eq(n, 30000);
    /* A tail cut anywhere reads cleanly up to the cut. */
    const size_t rec = sizeof(struct mst_record_header) + sizeof(struct mst_rec_alloc);
    const size_t hdr = core_header_size(buf, len);
    for (size_t cut = len - 1; cut > len - 200; cut -= 7) {
        off = hdr;
        uint64_t m = 0;
        while ((rc = core_next_record(buf, cut, &off, &r)) == 1)
            m++;
        size_t data = cut - hdr - core_checksum_bytes(buf, cut, hdr);
        cr_assert_eq(rc, data % rec ? -1 : 0);
        cr_assert_eq(m, data / rec);
    }
    free(buf);
}

Test(trace, fork_child_gets_its_own_file)
{
    start("fork-%p.mst");
    trace_touch();
    log_alloc(1, 0x111, 1);
    trace_flush();
    log_alloc(1, 0x222, 2); /* buffered in the parent when it forks */
    pid_t pid = fork();
    if (pid == 0) {
        trace_atfork_child();
        log_alloc(1, 0x333, 3);
        trace_touch();
        struct mst_rec_summary sum = {0};
        trace_finish(&sum);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[128];
    snprintf(path, sizeof path, "%s/fork-%d.mst", dir, (int)pid);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf, "no file for the child");
    const struct mst_file_header *h = (const void *)buf;
    cr_assert_eq(h->pid, (uint32_t)pid);
    size_t off = h->header_size;
    struct core_record r;
    cr_assert_eq(core_next_record(buf, len, &off, &r), 1);
    struct mst_rec_alloc a;
    memcpy(&a, r.payload, sizeof a);
    cr_assert_eq(a.addr, 0x333, "the parent's buffered records stay with the parent");
    cr_assert_eq(core_next_record(buf, len, &off, &r), 1);
    cr_assert_eq(r.kind, MST_REC_SUMMARY);
    free(buf);

    struct mst_rec_summary sum = {0};
    trace_finish(&sum);
    snprintf(path, sizeof path, "%s/fork-%d.mst", dir, (int)getpid());
    buf = core_read_file(path, &len);
    off = core_header_size(buf, len);
    uint64_t addrs[3] = {0};
    int n = 0;
    while (core_next_record(buf, len, &off, &r) == 1 && r.kind == MST_REC_ALLOC) {
        memcpy(&a, r.payload, sizeof a);
        addrs[n++] = a.addr;
    }
    cr_assert_eq(n, 2);
    cr_assert_eq(addrs[0], 0x111);
    cr_assert_eq(addrs[1], 0x222);
    free(buf);
}

Test(trace, refuses_symlinks_and_fifos)
{
    char target[128], link[128], fifo[128];
    snprintf(target, sizeof target, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/link.mst", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo.mst", dir);
    FILE *f = fopen(target, "w");
    fputs("precious", f);
    fclose(f);
    cr_assert_eq(symlink(target, link), 0);
    core_stderr_begin();
    int fd = trace_open_private(link);
    const char *out = core_stderr_end();
    cr_assert_eq(fd, -1);
    cr_assert(strstr(out, "it is a symbolic link"), "%s", out);
    size_t len;
    char *buf = core_read_file(target, &len);
    cr_assert_str_eq(buf, "precious", "the symlink's target was touched");
    free(buf);

    cr_assert_eq(mkfifo(fifo, 0600), 0);
    core_stderr_begin();
    fd = trace_open_private(fifo);
    out = core_stderr_end();
    cr_assert_eq(fd, -1);
    /* Refused either at open (no reader: ENXIO) or by the regular-file check. */
    cr_assert(strstr(out, fifo), "%s", out);
}

Test(trace, truncates_an_existing_own_file)
{
    char path[128];
    snprintf(path, sizeof path, "%s/old.mst", dir);
    FILE *f = fopen(path, "w");
    fputs("an older, longer trace", f);
    fclose(f);
    int fd = trace_open_private(path);
    cr_assert_geq(fd, 0);
    struct stat st;
    fstat(fd, &st);
    cr_assert_eq(st.st_size, 0);
    close(fd);
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whichever source the clock chose (the TSC where trusted), its time is CLOCK_MONOTONIC's
 * since clock_base_ns, within the calibration's error (checked between two readings of
 * CLOCK_MONOTONIC, so a busy machine's preemption cannot fail it), and never goes back. */
Test(trace, clock_follows_clock_monotonic)
{
    cr_log_info("clock source: %s", clock_uses_tsc() ? "TSC" : "clock_gettime");
    uint64_t base = clock_base_ns();
    for (int k = 0; k < 5; k++) {
        uint64_t m0 = monotonic_ns();
        uint64_t c = clock_now_ns() + base;
        uint64_t m1 = monotonic_ns();
        uint64_t slack = (m1 - base) / 1000 + 2000; /* 0.1% rate error, 2 us offset */
        cr_assert(c + slack >= m0 && c <= m1 + slack, "clock %llu outside [%llu, %llu]",
                  (unsigned long long)c, (unsigned long long)m0, (unsigned long long)m1);
        usleep(20000);
    }
    uint64_t prev = clock_now_ns();
    for (int i = 0; i < 1000000; i++) {
        uint64_t c = clock_now_ns();
        cr_assert_geq(c, prev);
        prev = c;
    }
}
