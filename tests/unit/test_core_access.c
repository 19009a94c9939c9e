/* Access tracking without CUDA: the registry's containment index (bounds, namespaces,
 * replacement, removal, and readers racing writers), and access_record's OP and ACCESS records
 * in a written trace, including MEMSHIM_ACCESS=off. */
#include <criterion/criterion.h>

#include "access.h"
#include "access_repeat.h"
#include "core_util.h"
#include "registry.h"
#include "track.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- containment index ---- */

TestSuite(containing, .init = registry_reset);

static void put(enum registry_ns ns, uint64_t addr, uint64_t size)
{
    struct registry_entry e = {.addr = addr, .size = size, .category = 4};
    cr_assert_geq(registry_insert(ns, &e, NULL), 0);
}

Test(containing, bounds_of_each_range)
{
    put(REGISTRY_ADDR, 0x10000, 0x1000);
    put(REGISTRY_ADDR, 0x11000, 0x100); /* adjacent: the first byte belongs to the second */
    put(REGISTRY_ADDR, 0x20000, 0x200);
    struct registry_entry out;
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0xffff, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10000, &out), 1);
    cr_assert_eq(out.addr, 0x10000);
    cr_assert_eq(out.category, 4, "the whole entry is copied");
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10fff, &out), 1);
    cr_assert_eq(out.addr, 0x10000);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x11000, &out), 1);
    cr_assert_eq(out.addr, 0x11000);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x110ff, &out), 1);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x11100, &out), 0, "gap after a range");
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x201ff, &out), 1);
    cr_assert_eq(out.addr, 0x20000);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x20200, &out), 0, "past the last range");
    cr_assert_eq(registry_containing(REGISTRY_ADDR, UINT64_MAX, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x20000, NULL), 1, "out may be NULL");
}

Test(containing, namespaces_and_empty_ranges)
{
    put(REGISTRY_HANDLE, 0x5000, 0x1000); /* handles have no address range */
    put(REGISTRY_MAP, 0x40000, 0x20000);
    put(REGISTRY_ADDR, 0x90000, 0);
    struct registry_entry out;
    cr_assert_eq(registry_containing(REGISTRY_HANDLE, 0x5000, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x5000, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x40010, &out), 0, "maps are their own ns");
    cr_assert_eq(registry_containing(REGISTRY_MAP, 0x5ffff, &out), 1);
    cr_assert_eq(out.addr, 0x40000);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x90000, &out), 0, "size 0 holds nothing");
}

Test(containing, replace_and_remove)
{
    put(REGISTRY_ADDR, 0x10000, 0x100);
    struct registry_entry out;
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10800, &out), 0);
    put(REGISTRY_ADDR, 0x10000, 0x1000); /* a missed free, then a larger block at the address */
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10800, &out), 1);
    cr_assert_eq(out.size, 0x1000);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, 0x10000, NULL), 1);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10000, &out), 0);
    put(REGISTRY_ADDR, 0x30000, 0x100);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x30080, &out), 1, "index refills after empty");
    registry_reset();
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x30080, &out), 0, "reset empties the index");
}

Test(containing, many_entries_grow_the_index)
{
    /* Inserted out of order, past several growths of the sorted array. */
    const uint64_t n = 20000;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = (i * 7919) % n;
        put(REGISTRY_ADDR, 0x100000000ull + k * 0x1000, 0x800 + (k % 8) * 0x100);
    }
    for (uint64_t k = 0; k < n; k += 37) {
        uint64_t base = 0x100000000ull + k * 0x1000, size = 0x800 + (k % 8) * 0x100;
        struct registry_entry out;
        cr_assert_eq(registry_containing(REGISTRY_ADDR, base + size - 1, &out), 1);
        cr_assert_eq(out.addr, base);
        cr_assert_eq(registry_containing(REGISTRY_ADDR, base + size, &out), 0);
    }
    for (uint64_t k = 0; k < n; k += 2)
        cr_assert_eq(registry_remove(REGISTRY_ADDR, 0x100000000ull + k * 0x1000, NULL), 1);
    struct registry_entry out;
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x100000000ull + 10 * 0x1000 + 4, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x100000000ull + 11 * 0x1000 + 4, &out), 1);
    cr_assert_eq(out.addr, 0x100000000ull + 11 * 0x1000);
}

/* Random inserts and removals against a plain list, every answer checked: chunk splits,
 * emptied chunks, the first chunk's first address moving down. */
Test(containing, agrees_with_a_plain_list)
{
    enum { SLOTS = 3000, ROUNDS_ = 40000 };
    static uint8_t live[SLOTS];
    uint64_t x = 88172645463325252ull;
    for (int r = 0; r < ROUNDS_; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t slot = x % SLOTS, addr = 0x10000000ull + slot * 0x1000;
        if (live[slot]) {
            cr_assert_eq(registry_remove(REGISTRY_ADDR, addr, NULL), 1);
            live[slot] = 0;
        } else {
            put(REGISTRY_ADDR, addr, 0x100 + (slot % 15) * 0x100);
            live[slot] = 1;
        }
        uint64_t q = 0x10000000ull - 0x800 + (x >> 20) % ((SLOTS + 1) * 0x1000ull);
        uint64_t qs = (q - 0x10000000ull) / 0x1000;
        int want = q >= 0x10000000ull && qs < SLOTS && live[qs] &&
                   q - (0x10000000ull + qs * 0x1000) < 0x100 + (qs % 15) * 0x100;
        struct registry_entry out;
        int got = registry_containing(REGISTRY_ADDR, q, &out);
        cr_assert_eq(got, want, "round %d: %#lx", r, (unsigned long)q);
        if (got)
            cr_assert_eq(out.addr, 0x10000000ull + qs * 0x1000);
    }
    for (uint64_t slot = 0; slot < SLOTS; slot++)
        if (live[slot])
            cr_assert_eq(registry_remove(REGISTRY_ADDR, 0x10000000ull + slot * 0x1000, NULL), 1);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10000000ull, NULL), 0);
    put(REGISTRY_ADDR, 0x5000, 0x100);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x5080, NULL), 1, "usable again when empty");
}

/* Writers insert and remove their own ranges while readers look up both stable ranges (which
 * must always be found, with the right base) and churning ones (found only with a base that
 * really holds the address). */
#define WRITERS   4
#define READERS   4
#define ROUNDS    20000
#define STABLE    64
#define STABLE_AT 0x7000000000ull
#define CHURN_AT  0x7100000000ull

static atomic_int stop_readers;
static atomic_ulong reader_errors, reader_hits;

static void *writer(void *arg)
{
    uint64_t id = (uintptr_t)arg;
    for (uint64_t i = 0; i < ROUNDS; i++) {
        uint64_t addr = CHURN_AT + ((i % 512) * WRITERS + id) * 0x10000;
        struct registry_entry e = {.addr = addr, .size = 0x8000 + (i % 4) * 0x1000};
        registry_insert(REGISTRY_ADDR, &e, NULL);
        if (i % 3 != 2)
            registry_remove(REGISTRY_ADDR, addr, NULL);
    }
    return NULL;
}

static void *reader(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    while (!atomic_load(&stop_readers)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        struct registry_entry out;
        uint64_t s = x % STABLE, off = (x >> 20) % 0x4000;
        if (!registry_containing(REGISTRY_ADDR, STABLE_AT + s * 0x100000 + off, &out) ||
            out.addr != STABLE_AT + s * 0x100000 || out.size != 0x4000)
            atomic_fetch_add(&reader_errors, 1);
        uint64_t c = CHURN_AT + ((x >> 8) % (512 * WRITERS)) * 0x10000 + (x >> 40) % 0xc000;
        if (registry_containing(REGISTRY_ADDR, c, &out)) {
            atomic_fetch_add(&reader_hits, 1);
            if (c < out.addr || c - out.addr >= out.size || (out.addr - CHURN_AT) % 0x10000)
                atomic_fetch_add(&reader_errors, 1);
        }
    }
    return NULL;
}

Test(containing, readers_race_writers)
{
    for (uint64_t s = 0; s < STABLE; s++)
        put(REGISTRY_ADDR, STABLE_AT + s * 0x100000, 0x4000);
    pthread_t w[WRITERS], r[READERS];
    for (uintptr_t i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, (void *)(i + 1));
    for (uintptr_t i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, writer, (void *)i);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&stop_readers, 1);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(atomic_load(&reader_errors), 0, "%lu wrong answers", atomic_load(&reader_errors));
    /* What is left: exactly the ranges each writer kept (i % 3 == 2, last write per slot). */
    for (uint64_t id = 0; id < WRITERS; id++) {
        for (uint64_t slot = 0; slot < 512; slot++) {
            int kept = 0;
            uint64_t size = 0;
            for (uint64_t i = slot; i < ROUNDS; i += 512) {
                kept = i % 3 == 2;
                size = 0x8000 + (i % 4) * 0x1000;
            }
            uint64_t addr = CHURN_AT + (slot * WRITERS + id) * 0x10000;
            struct registry_entry out;
            cr_assert_eq(registry_containing(REGISTRY_ADDR, addr + 0x7fff, &out), kept);
            if (kept)
                cr_assert_eq(out.size, size);
        }
    }
}

/* ---- access_record ---- */

static char dir[64];
static char trace_file[128];

static void trace_setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-access-XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(trace_file, sizeof trace_file, "%s/t.mst", dir);
    setenv("MEMSHIM_TRACE", trace_file, 1);
    setenv("MEMSHIM_STACK_DEPTH", "0", 1);
}

static void trace_teardown(void)
{
    core_rm_tree(dir);
}

TestSuite(record, .init = trace_setup, .fini = trace_teardown);

static void alloc(uint64_t addr, uint64_t bytes)
{
    struct track_ticket t;
    cr_assert_eq(track_alloc_begin(&t, 0, MST_KIND_CUDA_MALLOC, bytes, bytes), 0);
    track_alloc_end(&t, 1, 0, addr, 0);
}

struct parsed {
    char *buf;
    size_t len;
    uint32_t flags;
    int n;
    struct core_record rec[64];
};

static void parse(struct parsed *p)
{
    track_flush();
    p->buf = core_read_file(trace_file, &p->len);
    cr_assert(p->buf, "no trace written");
    size_t off = core_header_size(p->buf, p->len);
    cr_assert_gt(off, 0);
    p->flags = ((const struct mst_file_header *)p->buf)->flags;
    p->n = 0;
    while (p->n < 64 && core_next_record(p->buf, p->len, &off, &p->rec[p->n]) == 1)
        p->n++;
}

static int find(const struct parsed *p, uint16_t kind)
{
    for (int i = 0; i < p->n; i++)
        if (p->rec[i].kind == kind)
            return i;
    return -1;
}

Test(record, op_then_its_accesses)
{
    track_init();
    cr_assert_eq(access_level(), ACCESS_ALL, "all by default");
    alloc(0x200000, 0x10000);
    alloc(0x400000, 0x100);
    struct access_op op = {.kind = MST_OP_MEMCPY,
                           .stream = 7,
                           .name = "cudaMemcpy",
                           .dtype_a = 0xff,
                           .dtype_b = 0xff,
                           .dtype_c = 0xff};
    struct access_range r[] = {
        {.addr = 0x200100, .size = 0x80, .mode = MST_ACCESS_READ},
        {.addr = 0x400000, .size = 0x100, .mode = MST_ACCESS_WRITE},
        {.addr = 0x12345, .size = 8, .mode = MST_ACCESS_READ}, /* host memory */
    };
    track_guard_enter();
    cr_assert_eq(access_record(&op, r, 3), 0);
    cr_assert_eq(access_record(&op, r, 1), 0);
    track_guard_leave();
    struct parsed p;
    parse(&p);
    cr_assert(p.flags & MST_FILE_F_ACCESSES);
    int i = find(&p, MST_REC_OP);
    cr_assert_geq(i, 0);
    struct mst_rec_op o;
    memcpy(&o, p.rec[i].payload, sizeof o);
    cr_assert_eq(o.kind, MST_OP_MEMCPY);
    cr_assert_eq(o.naccess, 3);
    cr_assert_eq(o.stream, 7);
    int s = find(&p, MST_REC_STRING);
    cr_assert(s >= 0 && s < i, "the name is defined before the op");
    cr_assert_eq(p.rec[s].length - 4, strlen("cudaMemcpy"));
    cr_assert_eq(memcmp(p.rec[s].payload + 4, "cudaMemcpy", 10), 0);
    struct mst_rec_string str;
    memcpy(&str, p.rec[s].payload, sizeof str);
    cr_assert_eq(o.name_id, str.id);
    const uint64_t want_alloc[] = {0x200000, 0x400000, 0};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(p.rec[i + 1 + k].kind, MST_REC_ACCESS);
        struct mst_rec_access a;
        memcpy(&a, p.rec[i + 1 + k].payload, sizeof a);
        cr_assert_eq(a.addr, r[k].addr);
        cr_assert_eq(a.size, r[k].size);
        cr_assert_eq(a.mode, r[k].mode);
        cr_assert_eq(a.alloc_addr, want_alloc[k]);
    }
    /* Each op is new (a shape of its own): an OP_DEFINE comes before it. The second reuses the
     * name id: one STRING in all. */
    cr_assert_eq(p.rec[i - 1].kind, MST_REC_OP_DEFINE);
    cr_assert_eq(p.rec[i + 4].kind, MST_REC_OP_DEFINE);
    cr_assert_eq(p.rec[i + 5].kind, MST_REC_OP);
    memcpy(&o, p.rec[i + 5].payload, sizeof o);
    cr_assert_eq(o.name_id, str.id);
    cr_assert_eq(o.naccess, 1);
    int strings = 0;
    for (int k = 0; k < p.n; k++)
        strings += p.rec[k].kind == MST_REC_STRING;
    cr_assert_eq(strings, 1);
    free(p.buf);
}

Test(record, mapped_ranges_resolve_to_the_mapping)
{
    track_init();
    track_map(0, 0x800000, 0x200000, 0xabc);
    struct access_op op = {.kind = MST_OP_MEMSET, .name = "cuMemsetD8_v2"};
    struct access_range r = {.addr = 0x900000, .size = 16, .mode = MST_ACCESS_WRITE};
    track_guard_enter();
    access_record(&op, &r, 1);
    track_guard_leave();
    struct parsed p;
    parse(&p);
    int i = find(&p, MST_REC_OP);
    cr_assert_geq(i, 0);
    struct mst_rec_access a;
    memcpy(&a, p.rec[i + 1].payload, sizeof a);
    cr_assert_eq(a.alloc_addr, 0x800000);
    free(p.buf);
}

Test(record, allocations_found_by_the_hook)
{
    track_init();
    alloc(0x200000, 0x10000);
    struct access_use use[2] = {{.ns = REGISTRY_ADDR}, {.ns = REGISTRY_ADDR}};
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x200040, &use[0].e), 1);
    use[1].e = (struct registry_entry){.addr = 0x900000, .size = 0x300};
    struct access_op op = {.kind = MST_OP_KERNEL, .name = "my_kernel"};
    track_guard_enter();
    cr_assert_eq(access_record_allocations(&op, use, 2, MST_ACCESS_MAYBE), 0);
    track_guard_leave();
    struct parsed p;
    parse(&p);
    int i = find(&p, MST_REC_OP);
    cr_assert_geq(i, 0);
    struct mst_rec_op o;
    memcpy(&o, p.rec[i].payload, sizeof o);
    cr_assert_eq(o.kind, MST_OP_KERNEL);
    cr_assert_eq(o.naccess, 2);
    const uint64_t want[][2] = {{0x200000, 0x10000}, {0x900000, 0x300}};
    for (int k = 0; k < 2; k++) {
        struct mst_rec_access a;
        cr_assert_eq(p.rec[i + 1 + k].kind, MST_REC_ACCESS);
        memcpy(&a, p.rec[i + 1 + k].payload, sizeof a);
        cr_assert_eq(a.addr, want[k][0], "whole allocations, from their base");
        cr_assert_eq(a.size, want[k][1]);
        cr_assert_eq(a.alloc_addr, want[k][0]);
        cr_assert_eq(a.mode, MST_ACCESS_MAYBE);
    }
    free(p.buf);
}

static uint32_t shape_of(const struct parsed *p, int i)
{
    uint32_t shape;
    memcpy(&shape, p->rec[i].payload, sizeof shape); /* first field of both records */
    return shape;
}

/* The same op again is an OP_REPEAT naming the shape its first record defined, with the time
 * since that one; another op in between is defined on its own. */
/* The trace read back, and where its first OP_DEFINE is (there must be one). */
static int parse_first_define(struct parsed *p)
{
    parse(p);
    int d = find(p, MST_REC_OP_DEFINE);
    cr_assert_geq(d, 0, "an operation was defined");
    return d;
}

static void repeat_ops(void)
{
    alloc(0x200000, 0x10000);
    struct access_op op = {.kind = MST_OP_KERNEL, .stream = 3, .name = "k", .dtype_a = 0xff};
    struct access_op other = op;
    other.stream = 4;
    struct access_range r = {.addr = 0x200100, .size = 0x80, .mode = MST_ACCESS_MAYBE};
    track_guard_enter();
    cr_assert_eq(access_record(&op, &r, 1), 0);
    cr_assert_eq(access_record(&other, &r, 1), 0);
    cr_assert_eq(access_record(&op, &r, 1), 0);
    track_guard_leave();
}

Test(record, repeat_is_compact)
{
    track_init();
    repeat_ops();
    struct parsed p;
    int d = parse_first_define(&p);
    cr_assert_eq(p.rec[d + 1].kind, MST_REC_OP);
    cr_assert_eq(p.rec[d + 2].kind, MST_REC_ACCESS);
    cr_assert_eq(p.rec[d + 3].kind, MST_REC_OP_DEFINE);
    cr_assert_neq(shape_of(&p, d + 3), shape_of(&p, d), "the other op is another shape");
    cr_assert_eq(p.rec[d + 4].kind, MST_REC_OP);
    cr_assert_eq(p.rec[d + 5].kind, MST_REC_ACCESS);
    cr_assert_eq(p.rec[d + 6].kind, MST_REC_OP_REPEAT);
    cr_assert_eq(p.rec[d + 6].length, sizeof(struct mst_rec_op_repeat));
    cr_assert_eq(shape_of(&p, d + 6), shape_of(&p, d));
    struct mst_rec_op first, between;
    memcpy(&first, p.rec[d + 1].payload, sizeof first);
    memcpy(&between, p.rec[d + 4].payload, sizeof between);
    struct mst_rec_op_repeat rep;
    memcpy(&rep, p.rec[d + 6].payload, sizeof rep);
    cr_assert_geq(first.time_ns + rep.delta_ns, between.time_ns, "the repeat's time is its own");
    cr_assert_eq(find(&p, MST_REC_OP_REPEAT), d + 6, "one repeat only");
    free(p.buf);
}

/* A repeat more than 4.3 s after the shape's last OP (a large model's step) is still a repeat,
 * in the long form; the next one, close behind, is short again and counts from it. */
Test(record, repeat_after_a_long_step)
{
    track_init();
    alloc(0x200000, 0x10000); /* the trace begins with the first allocation */
    struct access_repeat_group g = {.op_h = {.kind = MST_REC_OP, .length = sizeof g.op},
                                    .op = {.time_ns = 1000, .kind = MST_OP_KERNEL, .stream = 5}};
    const uint64_t times[] = {1000, 1000 + 6000000000ull, 1000 + 6000000007ull};
    track_guard_enter();
    for (int i = 0; i < 3; i++) {
        g.op.time_ns = times[i];
        access_repeat_write(&g, 0, NULL);
    }
    track_guard_leave();
    struct parsed p;
    int d = parse_first_define(&p);
    cr_assert_eq(p.rec[d + 2].kind, MST_REC_OP_REPEAT);
    cr_assert_eq(p.rec[d + 2].length, sizeof(struct mst_rec_op_repeat_long));
    struct mst_rec_op_repeat_long rep;
    memcpy(&rep, p.rec[d + 2].payload, sizeof rep);
    cr_assert_eq(rep.op_repeat.shape, shape_of(&p, d));
    cr_assert_eq(rep.op_repeat.delta_ns + rep.delta_ns, 6000000000ull);
    cr_assert_eq(p.rec[d + 3].kind, MST_REC_OP_REPEAT);
    cr_assert_eq(p.rec[d + 3].length, sizeof(struct mst_rec_op_repeat));
    memcpy(&rep.op_repeat, p.rec[d + 3].payload, sizeof rep.op_repeat);
    cr_assert_eq(rep.op_repeat.delta_ns, 7);
    free(p.buf);
}

/* A shape named by access_repeat_write is repeated by name alone while the table holds that
 * definition: never after the table replaced it, never before its last OP. */
Test(record, repeat_by_name_until_replaced)
{
    track_init();
    alloc(0x200000, 0x10000);
    struct access_repeat_group g = {.op_h = {.kind = MST_REC_OP, .length = sizeof g.op},
                                    .op = {.time_ns = 1000, .kind = MST_OP_KERNEL, .stream = 5}};
    struct access_shape named, other;
    track_guard_enter();
    access_repeat_write(&g, 0, &named);
    cr_assert_neq(named.slot, 0, "a kept shape is named");
    cr_assert_eq(access_repeat_again(&named, 2000), 1);
    cr_assert_eq(access_repeat_again(&named, 1500), 0, "before the shape's last OP");
    g.op.time_ns = 3000;
    access_repeat_write(&g, 0, &other);
    cr_assert(other.slot == named.slot && other.gen == named.gen, "a repeat names it alike");
    /* Enough other shapes to take every way of every set. */
    for (uint64_t stream = 100; stream < 2100; stream++) {
        g.op.stream = stream;
        access_repeat_write(&g, 0, NULL);
    }
    cr_assert_eq(access_repeat_again(&named, 1000000), 0, "its slot holds another shape now");
    track_guard_leave();
    struct parsed p;
    int d = parse_first_define(&p);
    cr_assert_eq(p.rec[d + 2].kind, MST_REC_OP_REPEAT);
    cr_assert_eq(shape_of(&p, d + 2), shape_of(&p, d));
    struct mst_rec_op_repeat rep;
    memcpy(&rep, p.rec[d + 2].payload, sizeof rep);
    cr_assert_eq(rep.delta_ns, 1000);
    cr_assert_eq(p.rec[d + 3].kind, MST_REC_OP_REPEAT, "access_repeat_write's own repeat");
    free(p.buf);
}

/* The same ranges after the registry moved may lie in another allocation: the memo of repeated
 * operations (access_memo.h) must not name the shape recorded before, which holds the old one. */
Test(record, same_ranges_in_a_new_allocation_are_recorded_again)
{
    track_init();
    alloc(0x200000, 0x10000);
    struct access_op op = {.kind = MST_OP_GEMM, .stream = 3, .name = "cublasGemmEx", .m = 4};
    struct access_range r = {.addr = 0x200100, .size = 0x80, .mode = MST_ACCESS_READ};
    track_guard_enter();
    cr_assert_eq(access_record(&op, &r, 1), 0);
    cr_assert_eq(access_record(&op, &r, 1), 0);
    track_guard_leave();
    cr_assert_eq(track_free(0x200000, MST_KIND_CUDA_MALLOC, 0), 1);
    alloc(0x1f0000, 0x20000);
    track_guard_enter();
    cr_assert_eq(access_record(&op, &r, 1), 0);
    cr_assert_eq(access_record(&op, &r, 1), 0);
    track_guard_leave();
    struct parsed p;
    int d = parse_first_define(&p);
    cr_assert_eq(p.rec[d + 3].kind, MST_REC_OP_REPEAT, "the registry stood: a repeat");
    int again = -1;
    for (int k = d + 4; k < p.n && again < 0; k++)
        if (p.rec[k].kind == MST_REC_OP_DEFINE)
            again = k;
    cr_assert_gt(again, 0, "defined again in its new allocation");
    cr_assert_eq(p.rec[again + 2].kind, MST_REC_ACCESS);
    struct mst_rec_access a;
    memcpy(&a, p.rec[again + 2].payload, sizeof a);
    cr_assert_eq(a.alloc_addr, 0x1f0000);
    cr_assert_eq(p.rec[again + 3].kind, MST_REC_OP_REPEAT, "then repeated by that shape");
    cr_assert_eq(shape_of(&p, again + 3), shape_of(&p, again));
    free(p.buf);
}

/* A call its hook names by words of its own (a GEMM by its arguments) is a repeat while the
 * registry stands, and recorded in full again, in its new allocation, once it moved. */
Test(record, call_named_by_its_words)
{
    track_init();
    alloc(0x200000, 0x10000);
    struct access_op op = {.kind = MST_OP_GEMM, .stream = 3, .name = "cublasGemmEx", .m = 4};
    struct access_range r = {.addr = 0x200100, .size = 0x80, .mode = MST_ACCESS_READ};
    const uint64_t w[] = {0x200100, 4, 0};
    struct access_memo_key key;
    track_guard_enter();
    cr_assert_eq(access_repeat_call(&key, w, 0), 0, "no words: nothing to know it by");
    cr_assert_eq(access_repeat_call(&key, w, 3), 0, "not recorded yet");
    cr_assert_eq(access_record_call(&key, &op, &r, 1), 0);
    cr_assert_eq(access_repeat_call(&key, w, 3), 1, "a repeat");
    track_guard_leave();
    cr_assert_eq(track_free(0x200000, MST_KIND_CUDA_MALLOC, 0), 1);
    alloc(0x1f0000, 0x20000);
    track_guard_enter();
    cr_assert_eq(access_repeat_call(&key, w, 3), 0, "the registry moved");
    cr_assert_eq(access_record_call(&key, &op, &r, 1), 0);
    cr_assert_eq(access_repeat_call(&key, w, 3), 1);
    track_guard_leave();
    struct parsed p;
    int d = parse_first_define(&p);
    cr_assert_eq(p.rec[d + 3].kind, MST_REC_OP_REPEAT);
    int again = -1;
    for (int k = d + 4; k < p.n && again < 0; k++)
        if (p.rec[k].kind == MST_REC_OP_DEFINE)
            again = k;
    cr_assert_gt(again, 0, "defined again in its new allocation");
    struct mst_rec_access a;
    memcpy(&a, p.rec[again + 2].payload, sizeof a);
    cr_assert_eq(a.alloc_addr, 0x1f0000);
    cr_assert_eq(p.rec[again + 3].kind, MST_REC_OP_REPEAT);
    cr_assert_eq(shape_of(&p, again + 3), shape_of(&p, again));
    free(p.buf);
}

Test(record, compact_off_writes_in_full)
{
    setenv("MEMSHIM_TRACE_COMPACT", "off", 1);
    track_init();
    repeat_ops();
    struct parsed p;
    parse(&p);
    cr_assert_eq(find(&p, MST_REC_OP_DEFINE), -1);
    cr_assert_eq(find(&p, MST_REC_OP_REPEAT), -1);
    int ops = 0;
    for (int k = 0; k < p.n; k++)
        ops += p.rec[k].kind == MST_REC_OP;
    cr_assert_eq(ops, 3);
    free(p.buf);
}

Test(record, off_records_nothing)
{
    setenv("MEMSHIM_ACCESS", "off", 1);
    track_init();
    cr_assert_eq(access_level(), ACCESS_OFF);
    alloc(0x200000, 0x100);
    struct access_op op = {.kind = MST_OP_KERNEL, .name = "k"};
    struct access_range r = {.addr = 0x200000, .size = 0x100, .mode = MST_ACCESS_MAYBE};
    cr_assert_eq(access_record(&op, &r, 1), 0);
    struct parsed p;
    parse(&p);
    cr_assert_eq(find(&p, MST_REC_OP), -1);
    cr_assert_eq(p.flags & MST_FILE_F_ACCESSES, 0);
    free(p.buf);
}

Test(record, gemm_level)
{
    setenv("MEMSHIM_ACCESS", "gemm", 1);
    track_init();
    cr_assert_eq(access_level(), ACCESS_GEMM);
}
