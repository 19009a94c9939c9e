/* track.h end to end, without CUDA: what a hook would call, checked in the written trace and
 * on stderr. Categories from tags, phases and rules; the ceiling and its OOM screen; steps;
 * call-site interning; unknown frees; memory info; a fork child's fresh state. */
#include <criterion/criterion.h>

#include "core_util.h"
#include "residency.h"
#include "track.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

static char dir[64];
static char trace_file[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-track-XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(trace_file, sizeof trace_file, "%s/t.mst", dir);
    setenv("MEMSHIM_TRACE", trace_file, 1);
    char rules[128];
    snprintf(rules, sizeof rules, "%s/r.rules", dir);
    FILE *f = fopen(rules, "w");
    fputs("kv_cache symbol:kv_alloc_helper\n", f);
    fclose(f);
    setenv("MEMSHIM_RULES", rules, 1);
}

static void teardown(void)
{
    core_rm_tree(dir);
}

TestSuite(track, .init = setup, .fini = teardown);

static int alloc(uint64_t addr, uint64_t bytes)
{
    struct track_ticket t;
    if (track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC, bytes, bytes) < 0)
        return -1;
    track_alloc_end(&t, 1, 0, addr, 0);
    return 0;
}

/* Exported (ENABLE_EXPORTS) so dladdr names it and the rules file can match it. */
__attribute__((noinline)) int kv_alloc_helper(uint64_t addr, uint64_t bytes);
__attribute__((noinline)) int kv_alloc_helper(uint64_t addr, uint64_t bytes)
{
    struct track_ticket t;
    int r = track_alloc_begin(&t, 0, MST_KIND_CU_MEM_ALLOC, bytes, bytes);
    if (r == 0)
        track_alloc_end(&t, 1, 0, addr, 0);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return r;
}

struct parsed {
    char *buf;
    size_t len;
    int n;
    struct core_record rec[256];
};

static void parse(struct parsed *p)
{
    track_flush();
    p->buf = core_read_file(trace_file, &p->len);
    cr_assert(p->buf, "no trace written");
    size_t off = core_header_size(p->buf, p->len);
    cr_assert_gt(off, 0);
    p->n = 0;
    while (p->n < 256 && core_next_record(p->buf, p->len, &off, &p->rec[p->n]) == 1)
        p->n++;
}

static int find(const struct parsed *p, uint16_t kind, int from)
{
    for (int i = from; i < p->n; i++) {
        if (p->rec[i].kind == kind)
            return i;
    }
    return -1;
}

static struct mst_rec_alloc alloc_at(const struct parsed *p, int i)
{
    return core_alloc_record(&p->rec[i]);
}

/* Definition records precede their uses. */
static int string_defined_before(const struct parsed *p, uint32_t id, int before)
{
    for (int i = 0; i < before; i++) {
        struct mst_rec_string s;
        memcpy(&s, p->rec[i].payload, sizeof s);
        if (p->rec[i].kind == MST_REC_STRING && s.id == id)
            return 1;
    }
    return 0;
}

Test(track, categories_from_tag_phase_and_rules)
{
    track_init();
    track_device_info(0, "simulated", 16ull << 30, 9, 0);
    cr_assert_eq(track_tag_push("weights"), -1, "unknown category");
    cr_assert_eq(track_tag_push("parameter"), 0);
    track_phase_push("forward");
    cr_assert_eq(alloc(0x1000, 4096), 0);
    track_tag_pop();
    cr_assert_eq(alloc(0x2000, 8192), 0);
    track_phase_pop();
    cr_assert_eq(kv_alloc_helper(0x3000, 100), 0);
    cr_assert_eq(alloc(0x4000, 1), 0);

    struct parsed p;
    parse(&p);
    int d = find(&p, MST_REC_DEVICE, 0);
    cr_assert_geq(d, 0);
    int i = find(&p, MST_REC_ALLOC, 0);
    struct mst_rec_alloc a = alloc_at(&p, i);
    cr_assert_eq(a.category, MST_CAT_PARAMETER);
    cr_assert_eq(a.flags & MST_ALLOC_F_CAT_TAGGED, MST_ALLOC_F_CAT_TAGGED);
    cr_assert_neq(a.phase, 0);
    cr_assert(string_defined_before(&p, a.phase, i));
    cr_assert_gt(find(&p, MST_REC_THREAD, 0), -1);
    cr_assert_lt(find(&p, MST_REC_THREAD, 0), i, "THREAD precedes its first use");

    a = alloc_at(&p, i = find(&p, MST_REC_ALLOC, i + 1));
    cr_assert_eq(a.category, MST_CAT_ACTIVATION, "built-in rule phase:*forward*");
    cr_assert_eq(a.flags & MST_ALLOC_F_CAT_TAGGED, MST_ALLOC_F_CAT_TAGGED);

    a = alloc_at(&p, i = find(&p, MST_REC_ALLOC, i + 1));
    cr_assert_eq(a.category, MST_CAT_KV_CACHE, "user rule on the frame's symbol");
    cr_assert_eq(a.flags, MST_ALLOC_F_CAT_RULE);
    cr_assert_eq(a.kind, MST_KIND_CU_MEM_ALLOC);
    cr_assert_neq(a.site, 0);

    a = alloc_at(&p, i = find(&p, MST_REC_ALLOC, i + 1));
    cr_assert_eq(a.category, MST_CAT_UNKNOWN);
    cr_assert_eq(a.flags, 0);
    cr_assert_eq(a.phase, 0);
    free(p.buf);
}

Test(track, frees_known_and_unknown)
{
    track_init();
    cr_assert_eq(alloc(0x1000, 4096), 0);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC, 0), 1);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC, 0), 0, "already freed");
    cr_assert_eq(track_free(0x9999, MST_KIND_CUDA_MALLOC, 0), 0, "never seen");
    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, 0, MST_KIND_CU_MEM_CREATE, 2u << 20, 2u << 20), 0);
    track_alloc_end(&t, 1, 0, 0x1000 /* a handle may equal an address */, 0);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC, 0), 0, "handles are apart");
    cr_assert_eq(track_free(0x1000, MST_KIND_CU_MEM_CREATE, 0), 1);
    struct parsed p;
    parse(&p);
    int f = find(&p, MST_REC_FREE, 0);
    cr_assert_geq(f, 0);
    struct mst_rec_free_short fr;
    cr_assert_eq(p.rec[f].length, sizeof fr, "a synchronous free takes the short FREE");
    memcpy(&fr, p.rec[f].payload, sizeof fr);
    cr_assert_eq(fr.addr, 0x1000);
    cr_assert_eq(fr.kind, MST_KIND_CUDA_MALLOC);
    f = find(&p, MST_REC_FREE, f + 1);
    memcpy(&fr, p.rec[f].payload, sizeof fr);
    cr_assert_eq(fr.flags & MST_ALLOC_F_HANDLE, MST_ALLOC_F_HANDLE);
    cr_assert_eq(find(&p, MST_REC_FREE, f + 1), -1);
    free(p.buf);
}

Test(track, free_on_a_stream_takes_the_long_form)
{
    track_init();
    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC_ASYNC, 4096, 4096), 0);
    track_alloc_end(&t, 1, 0, 0x1000, 0x77);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC_ASYNC, 0x77), 1);
    struct parsed p;
    parse(&p);
    int f = find(&p, MST_REC_FREE, 0);
    cr_assert_geq(f, 0);
    struct mst_rec_free fr;
    cr_assert_eq(p.rec[f].length, sizeof fr);
    memcpy(&fr, p.rec[f].payload, sizeof fr);
    cr_assert_eq(fr.addr, 0x1000);
    cr_assert_eq(fr.stream, 0x77);
    cr_assert_eq(fr.size, 4096, "the bytes charged at the allocation");
    cr_assert_eq(fr.kind, MST_KIND_CUDA_MALLOC_ASYNC);
    free(p.buf);
}

Test(track, ceiling_oom_screen_and_record)
{
    setenv("MEMSHIM_LIMIT", "1m", 1);
    track_init();
    track_device_info(0, "simulated", 16ull << 30, 9, 0);
    cr_assert_eq(track_tag_push("optimizer_state"), 0);
    cr_assert_eq(kv_alloc_helper(0x1000, 700 << 10), 0);
    track_tag_pop();
    core_stderr_begin();
    int r = kv_alloc_helper(0x2000, 400 << 10);
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "memshim: out of memory under the ceiling on device 0\n"), "%s", out);
    cr_assert(strstr(out, "request   400.00 KiB (409600 bytes) by cuMemAlloc as kv_cache, "
                          "from kv_alloc_helper"),
              "%s", out);
    cr_assert(strstr(out, "ceiling   1.00 MiB; resident 700.00 KiB; room 324.00 KiB\n"), "%s", out);
    cr_assert(strstr(out, "    optimizer_state    700.00 KiB  100.0%\n"), "%s", out);
    cr_assert(strstr(out, "700.00 KiB in      1 allocation   kv_alloc_helper"), "%s", out);

    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC, 300 << 10, 300 << 10), 0,
                 "what fits still fits");
    track_alloc_end(&t, 0, 1, 0, 0); /* the real call failed: reservation released */
    cr_assert_eq(alloc(0x3000, 324 << 10), 0, "exactly up to the ceiling");
    size_t free_b = 15ull << 30, total = 16ull << 30;
    track_mem_info(0, &free_b, &total);
    cr_assert_eq(total, 1u << 20);
    cr_assert_eq(free_b, 0);

    struct parsed p;
    parse(&p);
    int c = find(&p, MST_REC_CEILING, 0);
    cr_assert_geq(c, 0);
    int o = find(&p, MST_REC_OOM, 0);
    cr_assert_geq(o, 0);
    struct mst_rec_oom oom;
    memcpy(&oom, p.rec[o].payload, sizeof oom);
    cr_assert_eq(oom.request, 400 << 10);
    cr_assert_eq(oom.ceiling, 1 << 20);
    cr_assert_eq(oom.resident, 700 << 10);
    cr_assert_eq(oom.by_category[MST_CAT_OPTIMIZER_STATE], 700 << 10);
    cr_assert_neq(oom.site, 0);
    o = find(&p, MST_REC_OOM, o + 1);
    cr_assert_geq(o, 0, "the real stack's OOM is recorded too");
    free(p.buf);
}

Test(track, percent_ceiling_resolves_with_the_device)
{
    setenv("MEMSHIM_LIMIT", "50%", 1);
    setenv("MEMSHIM_LIMIT_1", "1k", 1);
    track_init();
    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, 1, MST_KIND_CUDA_MALLOC, 2048, 2048), -1,
                 "absolute per-device ceilings apply at once");
    cr_assert_eq(track_device_known(0), 0);
    track_device_info(0, "simulated", 4 << 20, 9, 0);
    cr_assert_eq(track_device_known(0), 1);
    cr_assert_eq(alloc(0x1000, 2 << 20), 0);
    cr_assert_eq(alloc(0x2000, 1), -1);
}

Test(track, steps_from_phases)
{
    track_init();
    track_phase_push("step_7");
    track_phase_pop();
    track_phase_push("step");
    track_phase_pop();
    track_phase_push("forward 3"); /* not a step range */
    track_phase_pop();
    track_phase_push(""); /* unnamed NVTX ranges arrive as "" */
    track_phase_pop();
    track_phase_pop(); /* one pop too many is ignored */
    track_step(42);
    alloc(0x1000, 1); /* a CUDA event creates the file */
    struct parsed p;
    parse(&p);
    uint64_t steps[4];
    int n = 0;
    for (int i = find(&p, MST_REC_STEP, 0); i >= 0 && n < 4; i = find(&p, MST_REC_STEP, i + 1)) {
        struct mst_rec_step s;
        memcpy(&s, p.rec[i].payload, sizeof s);
        steps[n++] = s.step;
    }
    cr_assert_eq(n, 3);
    cr_assert_eq(steps[0], 7);
    cr_assert_eq(steps[1], 1, "no number: counted");
    cr_assert_eq(steps[2], 42);
    int push = find(&p, MST_REC_PHASE_PUSH, 0), pop = find(&p, MST_REC_PHASE_POP, 0);
    struct mst_rec_phase a, b;
    memcpy(&a, p.rec[push].payload, sizeof a);
    memcpy(&b, p.rec[pop].payload, sizeof b);
    cr_assert_eq(a.name_id, b.name_id);
    free(p.buf);
}

static uint32_t site_of_last_alloc(void)
{
    struct parsed p;
    parse(&p);
    uint32_t site = 0;
    for (int i = find(&p, MST_REC_ALLOC, 0); i >= 0; i = find(&p, MST_REC_ALLOC, i + 1))
        site = alloc_at(&p, i).site;
    free(p.buf);
    return site;
}

static int count_kind(uint16_t kind)
{
    struct parsed p;
    parse(&p);
    int n = 0;
    for (int i = find(&p, kind, 0); i >= 0; i = find(&p, kind, i + 1))
        n++;
    free(p.buf);
    return n;
}

/* One call site: the same return addresses every time. */
static __attribute__((noinline)) uint32_t alloc_from_one_place(uint64_t addr)
{
    kv_alloc_helper(addr, 1);
    return site_of_last_alloc();
}

Test(track, call_sites_are_interned)
{
    track_init();
    uint32_t sites[4];
    volatile int rounds = 4; /* an unrolled loop would call from four places */
    for (int i = 0; i < rounds; i++)
        sites[i] = alloc_from_one_place(0x1000 + (uint64_t)i * 16);
    int frames = count_kind(MST_REC_FRAME);
    cr_assert_gt(frames, 0);
    cr_assert_eq(count_kind(MST_REC_FRAME), frames, "known sites add no frames");
    cr_assert_eq(sites[0], sites[1], "%u %u %u %u", sites[0], sites[1], sites[2], sites[3]);
    cr_assert_eq(sites[1], sites[3]);
    alloc(0x9000, 1);
    cr_assert_neq(site_of_last_alloc(), sites[0], "another call site");
    cr_assert_gt(count_kind(MST_REC_FRAME), frames, "only the new site's nodes are added");
    cr_assert_gt(count_kind(MST_REC_MODULE), 0);
}

Test(track, stacks_off)
{
    setenv("MEMSHIM_STACK_DEPTH", "0", 1);
    track_init();
    kv_alloc_helper(0x1000, 1);
    cr_assert_eq(site_of_last_alloc(), 0);
    cr_assert_eq(count_kind(MST_REC_FRAME), 0);
}

Test(track, guard)
{
    cr_assert_eq(track_guard_enter(), 1);
    cr_assert_eq(track_guard_enter(), 0);
    track_guard_leave();
    cr_assert_eq(track_guard_enter(), 1);
    track_guard_leave();
}

Test(track, fork_child_starts_fresh)
{
    char tmpl[128];
    snprintf(tmpl, sizeof tmpl, "%s/f-%%p.mst", dir);
    setenv("MEMSHIM_TRACE", tmpl, 1);
    setenv("MEMSHIM_LIMIT", "1m", 1);
    track_init();
    cr_assert_eq(alloc(0x1000, 1 << 20), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* The parent's megabyte is not the child's: the child has the whole ceiling. */
        int ok = alloc(0x2000, 1 << 20) == 0 && track_free(0x1000, MST_KIND_CUDA_MALLOC, 0) == 0;
        track_flush();
        _exit(ok ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[128];
    snprintf(path, sizeof path, "%s/f-%d.mst", dir, (int)pid);
    size_t len;
    char *buf = core_read_file(path, &len);
    cr_assert(buf, "the child has its own trace");
    size_t off = core_header_size(buf, len);
    struct core_record r;
    int allocs = 0;
    while (core_next_record(buf, len, &off, &r) == 1) {
        if (r.kind == MST_REC_ALLOC) {
            struct mst_rec_alloc a = core_alloc_record(&r);
            cr_assert_eq(a.addr, 0x2000);
            allocs++;
        }
    }
    cr_assert_eq(allocs, 1);
    free(buf);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC, 0), 1, "the parent keeps its own");
}

static int count_in(const char *path, uint16_t kind, int *clean_end)
{
    size_t len;
    char *buf = core_read_file(path, &len);
    if (!buf)
        return -1;
    size_t off = core_header_size(buf, len);
    struct core_record r;
    int n = 0, rc;
    while ((rc = core_next_record(buf, len, &off, &r)) == 1)
        n += r.kind == kind;
    if (clean_end)
        *clean_end = rc == 0;
    free(buf);
    return n;
}

Test(track, sigterm_flushes_then_dies)
{
    pid_t pid = fork();
    if (pid == 0) {
        track_init();
        for (uint64_t i = 0; i < 100; i++)
            alloc(0x1000 + i * 512, 1);
        raise(SIGTERM); /* default action after the flush: the process ends */
        _exit(3);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
    int clean;
    cr_assert_eq(count_in(trace_file, MST_REC_ALLOC, &clean), 100);
    cr_assert(clean);
    cr_assert_eq(count_in(trace_file, MST_REC_SUMMARY, NULL), 0, "no clean end after a signal");
}

static volatile sig_atomic_t previous_ran;

static void previous_handler(int sig)
{
    (void)sig;
    previous_ran = 1;
}

Test(track, signal_chains_to_the_previous_handler)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, previous_handler); /* installed before the shim, as a program's own */
        track_init();
        alloc(0x1000, 1);
        raise(SIGTERM);
        _exit(previous_ran ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    cr_assert_eq(count_in(trace_file, MST_REC_ALLOC, NULL), 1);
}

Test(track, exit_writes_the_summary_and_report)
{
    char report[128];
    snprintf(report, sizeof report, "%s/report-%%p.txt", dir);
    setenv("MEMSHIM_REPORT", report, 1);
    pid_t pid = fork();
    if (pid == 0) {
        track_init();
        track_tag_push("activation");
        alloc(0x1000, 3 << 20);
        alloc(0x2000, 1 << 20);
        track_free(0x2000, MST_KIND_CUDA_MALLOC, 0);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int clean;
    cr_assert_eq(count_in(trace_file, MST_REC_SUMMARY, &clean), 1);
    cr_assert(clean);
    snprintf(report, sizeof report, "%s/report-%d.txt", dir, (int)pid);
    size_t len;
    char *text = core_read_file(report, &len);
    cr_assert(text, "no report at %s", report);
    cr_assert(strstr(text, "allocations 2, frees 1, failed 0"), "%s", text);
    cr_assert(strstr(text, "device 0: peak 4.00 MiB, resident at exit 3.00 MiB"), "%s", text);
    cr_assert(strstr(text, "activation           3.00 MiB  100.0%"), "%s", text);
    free(text);
}

Test(track, flusher_writes_without_being_asked)
{
    setenv("MEMSHIM_FLUSH_MS", "20", 1);
    track_init();
    alloc(0x1000, 1);
    /* Poll: the flusher runs every 20 ms; the bound only keeps a broken flusher from hanging. */
    int n = 0;
    for (int i = 0; i < 1000 && n < 1; i++) {
        usleep(10000);
        n = count_in(trace_file, MST_REC_ALLOC, NULL);
    }
    cr_assert_eq(n, 1);
}

#define THREADS 8
#define PAIRS   20000

static void *churn(void *arg)
{
    uint64_t base = 0x100000000000ull * (1 + (uintptr_t)arg);
    for (uint64_t i = 0; i < PAIRS; i++) {
        if (alloc(base + (i % 64) * 512, 100 + i % 7) < 0 ||
            track_free(base + (i % 64) * 512, MST_KIND_CUDA_MALLOC, 0) != 1)
            return (void *)1;
    }
    return NULL;
}

Test(track, threads_lose_and_duplicate_nothing)
{
    setenv("MEMSHIM_LIMIT", "1m", 1);
    track_init();
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_null(r);
    }
    track_flush();
    size_t len;
    char *buf = core_read_file(trace_file, &len);
    size_t off = core_header_size(buf, len);
    struct core_record r;
    uint64_t allocs = 0, frees = 0;
    int64_t bytes = 0;
    /* Per address, records alternate ALLOC, FREE: nothing lost, nothing twice. */
    static uint8_t live[THREADS + 1][64];
    static uint64_t size[THREADS + 1][64]; /* a short FREE's bytes are its ALLOC's */
    while (core_next_record(buf, len, &off, &r) == 1) {
        struct mst_rec_alloc a;
        struct mst_rec_free_short f;
        if (r.kind == MST_REC_ALLOC) {
            a = core_alloc_record(&r);
            uint8_t *l = &live[a.addr / 0x100000000000ull][(a.addr & 0xffffff) / 512];
            cr_assert_eq(*l, 0, "allocated twice");
            *l = 1;
            size[a.addr / 0x100000000000ull][(a.addr & 0xffffff) / 512] = a.size;
            allocs++;
            bytes += (int64_t)a.size;
        } else if (r.kind == MST_REC_FREE) {
            cr_assert_eq(r.length, sizeof f);
            memcpy(&f, r.payload, sizeof f);
            uint8_t *l = &live[f.addr / 0x100000000000ull][(f.addr & 0xffffff) / 512];
            cr_assert_eq(*l, 1, "freed while not allocated");
            *l = 0;
            frees++;
            bytes -= (int64_t)size[f.addr / 0x100000000000ull][(f.addr & 0xffffff) / 512];
        }
    }
    cr_assert_eq(allocs, THREADS * PAIRS);
    cr_assert_eq(frees, THREADS * PAIRS);
    cr_assert_eq(bytes, 0);
    free(buf);
}

Test(track, ceiling_without_a_trace)
{
    unsetenv("MEMSHIM_TRACE");
    setenv("MEMSHIM_LIMIT", "4k", 1);
    track_init();
    cr_assert_eq(alloc(0x1000, 4096), 0);
    core_stderr_begin();
    int r = alloc(0x2000, 1);
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "out of memory under the ceiling"), "%s", out);
    cr_assert_eq(track_free(0x1000, MST_KIND_CUDA_MALLOC, 0), 1);
    cr_assert_eq(alloc(0x2000, 4096), 0, "freed bytes are available again");
    track_flush();
    cr_assert_eq(access(trace_file, F_OK), -1, "no trace file");
}

Test(track, every_policy_is_enforced)
{
    static const char *const policies[] = {"spill", "recompute", "auto"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        setenv("MEMSHIM_POLICY", policies[i], 1);
        setenv("MEMSHIM_LOG", "info", 1);
        core_stderr_begin();
        track_init();
        const char *out = core_stderr_end();
        cr_assert(!strstr(out, "behaving as fail"), "%s: %s", policies[i], out);
        cr_assert_eq(residency_enabled(), 1, "%s serves allocations for moving them", policies[i]);
    }
}

Test(track, host_memory_has_its_own_ceiling)
{
    setenv("MEMSHIM_LIMIT", "1k", 1);
    setenv("MEMSHIM_HOST_LIMIT", "8k", 1);
    track_init();
    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, -1, MST_KIND_CU_MEM_CREATE, 4096, 4096), 0,
                 "host memory is not charged to the device");
    track_alloc_end(&t, 1, 0, 0x77, 0);
    cr_assert_eq(t.flags & MST_ALLOC_F_HOST, MST_ALLOC_F_HOST);
    core_stderr_begin();
    int r = track_alloc_begin(&t, -1, MST_KIND_CU_MEM_CREATE, 8192, 8192);
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert(strstr(out, "under the host ceiling (MEMSHIM_HOST_LIMIT)"), "%s", out);
    cr_assert_eq(track_free(0x77, MST_KIND_CU_MEM_CREATE, 0), 1);
    cr_assert_eq(track_alloc_begin(&t, -1, MST_KIND_CU_MEM_CREATE, 8192, 8192), 0);
    track_alloc_end(&t, 0, 0, 0, 0);
    struct parsed p;
    parse(&p);
    int i = find(&p, MST_REC_ALLOC, 0);
    cr_assert_eq(alloc_at(&p, i).flags & MST_ALLOC_F_HOST, MST_ALLOC_F_HOST);
    free(p.buf);
}
