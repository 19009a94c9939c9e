/* report: see report.h. */
#include "report.h"

#include "arena.h"
#include "budget.h"
#include "callsite.h"
#include "file_claim.h"
#include "log.h"
#include "options.h"
#include "registry.h"
#include "rules.h"
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const report_kinds[MST_KIND_MAX] = MST_KIND_NAMES;
static _Atomic unsigned report_ooms_shown;

struct report_buf {
    char *p;
    size_t size, n;
};

static void rb_add(struct report_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rb_add(struct report_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(b->p + (b->n < b->size ? b->n : b->size), b->n < b->size ? b->size - b->n : 0,
                      fmt, ap);
    va_end(ap);
    if (m > 0)
        b->n += (size_t)m;
}

const char *report_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}

static void rb_categories(struct report_buf *b, const struct budget_snapshot *s)
{
    char x[32];
    uint64_t committed = 0;
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        committed += s->by_category[c];
    /* Resident also counts bytes in no category: the free blocks of the shim's spill chunks
     * (charged whole) and reservations of calls in flight. Shown as a row, so that the rows
     * add up to the resident figure above them. */
    uint64_t held = s->resident > committed ? s->resident - committed : 0;
    double whole = (double)(committed + held);
    for (int c = 0; c < MST_CATEGORY_MAX; c++) {
        if (!s->by_category[c])
            continue;
        rb_add(b, "    %-16s %12s  %5.1f%%\n", rules_category_name(c),
               report_bytes(x, sizeof x, s->by_category[c]),
               100.0 * (double)s->by_category[c] / whole);
    }
    if (held)
        rb_add(b, "    %-16s %12s  %5.1f%%  (free space in spill chunks, calls in flight)\n",
               "(none)", report_bytes(x, sizeof x, held), 100.0 * (double)held / whole);
    if (!committed && !held)
        rb_add(b, "    (nothing)\n");
}

struct report_top {
    uint32_t site[REPORT_TOP_SITES];
    uint64_t bytes[REPORT_TOP_SITES];
    uint64_t count[REPORT_TOP_SITES];
};

/* Per-site sums over the live allocations of one budget slot, in arrays indexed by site. */
struct report_sums {
    int slot;
    uint32_t nsites;
    uint64_t *bytes, *count;
};

static void report_sum_entry(const struct registry_entry *e, void *ctx)
{
    struct report_sums *s = ctx;
    int slot = (e->flags & MST_ALLOC_F_HOST) ? BUDGET_HOST : e->device;
    if (slot != s->slot || e->site >= s->nsites)
        return;
    s->bytes[e->site] += e->size;
    s->count[e->site]++;
}

static void report_top_add(struct report_top *t, uint32_t site, uint64_t bytes, uint64_t count)
{
    int i = REPORT_TOP_SITES;
    while (i > 0 && bytes > t->bytes[i - 1])
        i--;
    if (i == REPORT_TOP_SITES)
        return;
    size_t tail = REPORT_TOP_SITES - 1 - (size_t)i;
    memmove(&t->site[i + 1], &t->site[i], tail * sizeof t->site[0]);
    memmove(&t->bytes[i + 1], &t->bytes[i], tail * sizeof t->bytes[0]);
    memmove(&t->count[i + 1], &t->count[i], tail * sizeof t->count[0]);
    t->site[i] = site;
    t->bytes[i] = bytes;
    t->count[i] = count;
}

/* Sites are summed only here, on the cold path, from the registry: the hot path keeps no
 * per-site counters (shared cache lines that every thread allocating there would bounce). */
static int report_top_sites(int slot, struct report_top *top)
{
    struct report_sums s = {.slot = slot, .nsites = callsite_count()};
    size_t size = (size_t)s.nsites * 2 * sizeof(uint64_t);
    uint64_t *mem = arena_map(size);
    if (!mem)
        return -1;
    s.bytes = mem;
    s.count = mem + s.nsites;
    registry_foreach(REGISTRY_ADDR, report_sum_entry, &s);
    registry_foreach(REGISTRY_HANDLE, report_sum_entry, &s);
    for (uint32_t site = 1; site < s.nsites; site++) {
        if (s.bytes[site])
            report_top_add(top, site, s.bytes[site], s.count[site]);
    }
    arena_unmap(mem, size);
    return 0;
}

static void rb_top_sites(struct report_buf *b, int slot)
{
    struct report_top top = {0};
    if (report_top_sites(slot, &top) < 0 || !top.bytes[0]) {
        rb_add(b, "    (no call sites%s)\n",
               callsite_depth()                ? ""
               : options_uint(OPT_STACK_DEPTH) ? ": recorded only with MEMSHIM_TRACE, "
                                                 "MEMSHIM_REPORT or a ceiling"
                                               : ": MEMSHIM_STACK_DEPTH=0");
        return;
    }
    for (int i = 0; i < REPORT_TOP_SITES && top.bytes[i]; i++) {
        char x[32], sym[256];
        rb_add(b, "    %12s in %6llu allocation%s  %s\n", report_bytes(x, sizeof x, top.bytes[i]),
               (unsigned long long)top.count[i], top.count[i] == 1 ? " " : "s",
               callsite_describe(top.site[i], sym, sizeof sym));
    }
}

size_t report_format_oom(char *buf, size_t size, const struct report_oom *o)
{
    struct report_buf b = {buf, size, 0};
    struct budget_snapshot s;
    budget_snapshot(o->device, &s);
    char req[32], ceil[32], res[32], sym[256];
    const char *kind = o->kind < MST_KIND_MAX ? report_kinds[o->kind] : "?";
    if (o->by_driver)
        rb_add(&b, "memshim: out of memory on %s %d: the driver refused the allocation\n",
               o->device == BUDGET_HOST ? "host" : "device",
               o->device == BUDGET_HOST ? 0 : o->device);
    else if (o->device == BUDGET_HOST)
        rb_add(&b, "memshim: out of memory under the host ceiling (MEMSHIM_HOST_LIMIT)\n");
    else
        rb_add(&b, "memshim: out of memory under the ceiling on device %d\n", o->device);
    if (o->access)
        rb_add(&b,
               "  request   %s (%llu bytes) of %s to bring back for a copy, set, launch or "
               "GEMM, refused\n",
               report_bytes(req, sizeof req, o->request), (unsigned long long)o->request,
               rules_category_name(o->category));
    else
        rb_add(&b, "  request   %s (%llu bytes) by %s as %s, from %s%s%s\n",
               report_bytes(req, sizeof req, o->request), (unsigned long long)o->request, kind,
               rules_category_name(o->category), callsite_describe(o->site, sym, sizeof sym),
               o->phase ? " in phase " : "", o->phase ? o->phase : "");
    if (s.ceiling)
        rb_add(&b, "  ceiling   %s; resident %s; room %s\n",
               report_bytes(ceil, sizeof ceil, s.ceiling),
               report_bytes(res, sizeof res, s.resident),
               report_bytes(req, sizeof req, s.resident < s.ceiling ? s.ceiling - s.resident : 0));
    else
        rb_add(&b, "  ceiling   none; resident %s\n", report_bytes(res, sizeof res, s.resident));
    rb_add(&b, "  resident by category:\n");
    rb_categories(&b, &s);
    rb_add(&b, "  top call sites by resident bytes:\n");
    rb_top_sites(&b, o->device);
    if (b.n >= size && size > 0)
        buf[size - 1] = '\n';
    return b.n;
}

void report_oom(const struct report_oom *o)
{
    unsigned shown = atomic_fetch_add(&report_ooms_shown, 1);
    if (shown >= REPORT_OOM_MAX) {
        if (shown == REPORT_OOM_MAX)
            log_error("further out-of-memory screens are not shown (see the trace or "
                      "MEMSHIM_REPORT)");
        return;
    }
    char buf[4096];
    size_t n = report_format_oom(buf, sizeof buf, o);
    log_write(buf, n < sizeof buf ? n : sizeof buf);
}

size_t report_format_summary(char *buf, size_t size, const struct report_totals *t)
{
    struct report_buf b = {buf, size, 0};
    rb_add(&b, "memshim summary (pid %d)\n", (int)getpid());
    rb_add(&b, "  allocations %llu, frees %llu, failed %llu (at the ceiling %llu)\n",
           (unsigned long long)t->allocations, (unsigned long long)t->frees,
           (unsigned long long)t->failed, (unsigned long long)t->ooms_at_ceiling);
    if (t->access_ooms)
        rb_add(&b, "  calls refused out of memory (spilled data could not be brought back): %llu\n",
               (unsigned long long)t->access_ooms);
    if (t->host_uses) {
        char hb[32];
        rb_add(&b,
               "  spilled ranges used in host memory (no room on the device beside the call's "
               "other ranges): %llu uses, %s\n",
               (unsigned long long)t->host_uses, report_bytes(hb, sizeof hb, t->host_use_bytes));
    }
    for (int d = 0; d < BUDGET_SLOTS; d++) {
        struct budget_snapshot s;
        budget_snapshot(d, &s);
        if (!s.peak)
            continue;
        char pk[32], res[32], ceil[32];
        rb_add(&b, "  %s %d: peak %s, resident at exit %s, ceiling %s\n",
               d == BUDGET_HOST ? "host" : "device", d == BUDGET_HOST ? 0 : d,
               report_bytes(pk, sizeof pk, s.peak), report_bytes(res, sizeof res, s.resident),
               s.ceiling ? report_bytes(ceil, sizeof ceil, s.ceiling) : "none");
        rb_add(&b, "  resident at exit by category:\n");
        rb_categories(&b, &s);
    }
    if (t->events_lost)
        rb_add(&b, "  trace records lost: %llu\n", (unsigned long long)t->events_lost);
    if (t->unused_rules)
        rb_add(&b, "  rules of MEMSHIM_RULES that matched no allocation: %u (named above)\n",
               t->unused_rules);
    if (trace_path()[0])
        rb_add(&b, "  trace: %s\n", trace_path());
    return b.n;
}

/* The pid in a report's first line: the process that wrote it. */
static int report_file_owner(int fd)
{
    char head[64] = {0};
    int pid = 0;
    if (pread(fd, head, sizeof head - 1, 0) > 0 &&
        sscanf(head, "memshim summary (pid %d)", &pid) != 1)
        pid = 0;
    return pid;
}

static void report_write_file(const char *path, const char *buf, size_t n)
{
    char used[1024];
    int fd = file_claim_open(path, report_file_owner, used, sizeof used);
    if (fd < 0) {
        log_write(buf, n); /* the summary is not lost: the line above says why it is here */
        return;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, buf + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (off < n || close(fd) < 0)
        log_error("%s: cannot write the summary (MEMSHIM_REPORT): %s", used,
                  off < n && errno == 0 ? "short write" : strerror(errno));
}

void report_exit(const char *dest, uint32_t rank, const struct report_totals *t)
{
    char buf[8192];
    size_t n = report_format_summary(buf, sizeof buf, t);
    if (n > sizeof buf)
        n = sizeof buf;
    if (strcmp(dest, "stderr") == 0) {
        log_write(buf, n);
        return;
    }
    char path[1024];
    if (trace_expand_path(path, sizeof path, dest, getpid(), rank) < 0) {
        log_error("MEMSHIM_REPORT=%.200s: the expanded file name is too long", dest);
        return;
    }
    if (strcmp(path, trace_path()) == 0) {
        log_error("MEMSHIM_REPORT and MEMSHIM_TRACE name the same file (%.200s); the summary goes "
                  "to stderr",
                  path);
        log_write(buf, n);
        return;
    }
    errno = 0;
    report_write_file(path, buf, n);
}
