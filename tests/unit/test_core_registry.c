/* Registry: exact-address lookups, namespaces, displacement, and 8 threads inserting and
 * removing their own keys concurrently with nothing lost or duplicated; the ordered index that
 * holds REGISTRY_ADDR and REGISTRY_MAP (exact calls, counts and foreach over many chunks), and
 * its lock-free readers racing writers that split and empty chunks. */
#include <criterion/criterion.h>

#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 8
#define PER     50000

static void reset(void)
{
    registry_reset();
}

TestSuite(registry, .init = reset);

Test(registry, insert_lookup_remove)
{
    struct registry_entry e = {.addr = 0x7f0000001000, .size = 4096, .site = 3, .category = 4};
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &e, NULL), 0);
    struct registry_entry out;
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, e.addr, &out), 1);
    cr_assert_eq(out.size, 4096);
    cr_assert_eq(out.site, 3);
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, e.addr + 1, &out), 0, "exact addresses only");
    cr_assert_eq(registry_lookup(REGISTRY_HANDLE, e.addr, &out), 0, "namespaces are apart");
    cr_assert_eq(registry_count(REGISTRY_ADDR), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, e.addr, &out), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, e.addr, &out), 0, "unknown after removal");
    cr_assert_eq(registry_count(REGISTRY_ADDR), 0);
}

Test(registry, displaced_entry_is_returned)
{
    struct registry_entry a = {.addr = 0x1000, .size = 10}, b = {.addr = 0x1000, .size = 20};
    struct registry_entry old;
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &a, &old), 0);
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &b, &old), 1);
    cr_assert_eq(old.size, 10);
    cr_assert_eq(registry_count(REGISTRY_ADDR), 1);
}

static void sum_sizes(const struct registry_entry *e, void *ctx)
{
    *(uint64_t *)ctx += e->size;
}

static void *churn(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    for (uint64_t i = 0; i < PER; i++) {
        /* Device-like addresses: 512-byte aligned, threads interleaved. */
        uint64_t addr = 0x700000000000ull + ((i * THREADS + id) << 9);
        struct registry_entry e = {.addr = addr, .size = i + 1, .device = (uint8_t)id};
        if (registry_insert(REGISTRY_ADDR, &e, NULL) != 0)
            return (void *)1;
        if (i % 2 == 1) {
            struct registry_entry out;
            uint64_t prev = addr - (THREADS << 9);
            if (registry_remove(REGISTRY_ADDR, prev, &out) != 1 || out.size != i ||
                out.device != id)
                return (void *)2;
        }
    }
    return NULL;
}

Test(registry, eight_threads)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_null(r, "thread %d failed (%p)", i, r);
    }
    cr_assert_eq(registry_count(REGISTRY_ADDR), THREADS * PER / 2);
    uint64_t sum = 0, want = 0;
    registry_foreach(REGISTRY_ADDR, sum_sizes, &sum);
    for (uint64_t i = 1; i < PER; i += 2)
        want += i + 1; /* odd i survive, size i + 1 */
    cr_assert_eq(sum, want * THREADS);
}

/* Through the index: every exact call of a namespace agrees with a plain array, across chunk
 * splits and emptied chunks, and foreach returns each live entry once, in address order. */
struct walk {
    uint64_t n, last, sum, bad;
};

static void walk_entry(const struct registry_entry *e, void *ctx)
{
    struct walk *w = ctx;
    if (w->n && e->addr <= w->last)
        w->bad++;
    /* foreach hands out copies: calling back into the registry is allowed for the index. */
    struct registry_entry again;
    if (registry_lookup(REGISTRY_MAP, e->addr, &again) != 1 || again.size != e->size)
        w->bad++;
    w->n++;
    w->last = e->addr;
    w->sum += e->size;
}

Test(registry, index_exact_calls_count_and_foreach)
{
    enum { SLOTS = 5000, ROUNDS = 60000 };
    static uint8_t live[SLOTS];
    static uint64_t size[SLOTS];
    uint64_t x = 0x2545f4914f6cdd1dull, nlive = 0;
    for (int r = 0; r < ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t slot = x % SLOTS, addr = 0x40000000ull + slot * 0x200;
        struct registry_entry out;
        if (live[slot] && (x >> 40) % 4 == 0) { /* replace: a free the shim missed */
            struct registry_entry e = {.addr = addr, .size = (x >> 20) % 0x200 + 1};
            cr_assert_eq(registry_insert(REGISTRY_MAP, &e, &out), 1);
            cr_assert_eq(out.size, size[slot]);
            size[slot] = e.size;
        } else if (live[slot]) {
            cr_assert_eq(registry_remove(REGISTRY_MAP, addr, &out), 1, "round %d", r);
            cr_assert_eq(out.addr, addr);
            cr_assert_eq(out.size, size[slot]);
            live[slot] = 0;
            nlive--;
        } else {
            struct registry_entry e = {.addr = addr, .size = (x >> 20) % 0x200 + 1};
            cr_assert_eq(registry_insert(REGISTRY_MAP, &e, NULL), 0);
            size[slot] = e.size;
            live[slot] = 1;
            nlive++;
        }
        uint64_t q = (x >> 24) % SLOTS;
        int got = registry_lookup(REGISTRY_MAP, 0x40000000ull + q * 0x200, &out);
        cr_assert_eq(got, live[q], "round %d slot %lu", r, (unsigned long)q);
        if (got)
            cr_assert_eq(out.size, size[q]);
        cr_assert_eq(registry_lookup(REGISTRY_MAP, 0x40000000ull + q * 0x200 + 8, &out), 0,
                     "exact addresses only");
        cr_assert_eq(registry_count(REGISTRY_MAP), nlive);
    }
    cr_assert_eq(registry_count(REGISTRY_ADDR), 0, "namespaces are apart");
    struct walk w = {0};
    registry_foreach(REGISTRY_MAP, walk_entry, &w);
    uint64_t want = 0;
    for (int s = 0; s < SLOTS; s++)
        want += live[s] ? size[s] : 0;
    cr_assert_eq(w.bad, 0);
    cr_assert_eq(w.n, nlive);
    cr_assert_eq(w.sum, want);
    struct registry_entry out;
    cr_assert_eq(registry_set_category(REGISTRY_MAP, 0x3fffffff, 2, &out), 0);
    for (uint64_t s = 0; s < SLOTS; s++) {
        if (!live[s])
            continue;
        cr_assert_eq(registry_set_category(REGISTRY_MAP, 0x40000000ull + s * 0x200, 5, &out), 1);
        cr_assert_eq(registry_containing(REGISTRY_MAP, 0x40000000ull + s * 0x200, &out), 1);
        cr_assert_eq(out.category, 5, "the containment answer sees the new category");
        break;
    }
}

Test(registry, index_edges)
{
    struct registry_entry top = {.addr = UINT64_MAX - 0xff, .size = 0x100}, out;
    struct registry_entry zero = {.addr = 0, .size = 0x10};
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &top, NULL), 0);
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &zero, NULL), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, UINT64_MAX - 1, &out), 1);
    cr_assert_eq(out.addr, top.addr);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0xf, &out), 1);
    cr_assert_eq(registry_lookup(REGISTRY_ADDR, 0, &out), 1);
    uint64_t n = 0;
    registry_foreach(REGISTRY_ADDR, sum_sizes, &n);
    cr_assert_eq(n, 0x110, "foreach reaches the last address and stops");
    cr_assert_eq(registry_remove(REGISTRY_ADDR, 0, NULL), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, top.addr, NULL), 1);
    cr_assert_eq(registry_count(REGISTRY_ADDR), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, UINT64_MAX, &out), 0);
    /* An emptied index keeps its last chunk; a new entry far below still bounds the search. */
    struct registry_entry low = {.addr = 0x1000, .size = 0x100};
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &low, NULL), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, UINT64_MAX - 0x80, &out), 0);
    cr_assert_eq(registry_containing(REGISTRY_ADDR, 0x10ff, &out), 1);
}

/* Writers allocate and free on several threads, densely interleaved so that chunks split and
 * empty all the time, while readers ask for containment and exact lookups. Every entry carries
 * a check of its own address (in `requested` and `handle`): a reader that ever sees a torn or
 * stale copy, a range that does not hold the address, or misses a range that is live the whole
 * time, counts an error. */
#define STRESS_WRITERS 3
#define STRESS_READERS 3
#define STRESS_ROUNDS  200000
#define STRESS_SLOTS   4096 /* per writer */
#define STRESS_LANES   (STRESS_WRITERS + 1)
#define STRESS_AT      0x7000000000ull
/* Lane STRESS_WRITERS of every 64th slot: 64 ranges live throughout, amid the churn, so they
 * move between chunks as those split and empty. */
#define STRESS_STABLE(k) (STRESS_AT + ((uint64_t)(k)*64 * STRESS_LANES + STRESS_WRITERS) * 0x200)

static atomic_int stress_stop;
static atomic_ulong stress_errors, stress_hits, stress_reads;

static uint64_t stress_size(uint64_t addr)
{
    return 0x80 + (addr >> 9) % 7 * 0x20; /* at most 0x140: ranges never overlap */
}

static struct registry_entry stress_entry(uint64_t addr)
{
    return (struct registry_entry){.addr = addr,
                                   .size = stress_size(addr),
                                   .requested = addr ^ 0x5a5a5a5a5a5a5a5aull,
                                   .handle = ~addr,
                                   .site = (uint32_t)(addr >> 9)};
}

static int stress_ok(const struct registry_entry *e, uint64_t q)
{
    return q - e->addr < e->size && e->size == stress_size(e->addr) &&
           e->requested == (e->addr ^ 0x5a5a5a5a5a5a5a5aull) && e->handle == ~e->addr &&
           e->site == (uint32_t)(e->addr >> 9);
}

static void *stress_writer(void *arg)
{
    uint64_t id = (uintptr_t)arg, x = id * 0x9e3779b97f4a7c15ull + 7;
    static _Thread_local uint8_t live[STRESS_SLOTS];
    /* On a busy machine the readers may start late: churn until they have read a while. */
    for (uint64_t i = 0; i < STRESS_ROUNDS || atomic_load(&stress_reads) < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t slot = x % STRESS_SLOTS;
        uint64_t addr = STRESS_AT + (slot * STRESS_LANES + id) * 0x200;
        if (live[slot]) {
            struct registry_entry out;
            if (registry_remove(REGISTRY_ADDR, addr, &out) != 1 || !stress_ok(&out, addr))
                atomic_fetch_add(&stress_errors, 1);
        } else {
            struct registry_entry e = stress_entry(addr);
            if (registry_insert(REGISTRY_ADDR, &e, NULL) != 0)
                atomic_fetch_add(&stress_errors, 1);
        }
        live[slot] ^= 1;
    }
    for (uint64_t slot = 0; slot < STRESS_SLOTS; slot++) /* leave nothing of the churn */
        if (live[slot] &&
            registry_remove(REGISTRY_ADDR, STRESS_AT + (slot * STRESS_LANES + id) * 0x200, NULL) !=
                1)
            atomic_fetch_add(&stress_errors, 1);
    return NULL;
}

static void *stress_reader(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0xbf58476d1ce4e5b9ull + 3;
    while (!atomic_load(&stress_stop)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        struct registry_entry out;
        uint64_t st = STRESS_STABLE(x % 64);
        uint64_t q = st + (x >> 20) % stress_size(st);
        if (registry_containing(REGISTRY_ADDR, q, &out) != 1 || out.addr != st ||
            !stress_ok(&out, q))
            atomic_fetch_add(&stress_errors, 1);
        if (registry_lookup(REGISTRY_ADDR, st, &out) != 1 || !stress_ok(&out, st))
            atomic_fetch_add(&stress_errors, 1);
        q = STRESS_AT + (x >> 8) % (STRESS_SLOTS * STRESS_LANES * 0x200ull);
        if (registry_containing(REGISTRY_ADDR, q, &out)) {
            atomic_fetch_add(&stress_hits, 1);
            if (!stress_ok(&out, q))
                atomic_fetch_add(&stress_errors, 1);
        }
        uint64_t a = q & ~0x1ffull;
        if (registry_lookup(REGISTRY_ADDR, a, &out) && (out.addr != a || !stress_ok(&out, a)))
            atomic_fetch_add(&stress_errors, 1);
        atomic_fetch_add(&stress_reads, 1);
    }
    return NULL;
}

Test(registry, readers_race_writers_on_shared_chunks)
{
    for (uint64_t s = 0; s < 64; s++) {
        struct registry_entry e = stress_entry(STRESS_STABLE(s));
        cr_assert_eq(registry_insert(REGISTRY_ADDR, &e, NULL), 0);
    }
    pthread_t w[STRESS_WRITERS], r[STRESS_READERS];
    for (uintptr_t i = 0; i < STRESS_READERS; i++)
        pthread_create(&r[i], NULL, stress_reader, (void *)(i + 1));
    for (uintptr_t i = 0; i < STRESS_WRITERS; i++)
        pthread_create(&w[i], NULL, stress_writer, (void *)i);
    for (int i = 0; i < STRESS_WRITERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&stress_stop, 1);
    for (int i = 0; i < STRESS_READERS; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(atomic_load(&stress_errors), 0, "%lu wrong answers", atomic_load(&stress_errors));
    cr_assert_gt(atomic_load(&stress_hits), 0, "the readers met live churn");
    cr_assert_eq(registry_count(REGISTRY_ADDR), 64);
    uint64_t sum = 0, want = 0;
    registry_foreach(REGISTRY_ADDR, sum_sizes, &sum);
    for (uint64_t s = 0; s < 64; s++)
        want += stress_size(STRESS_STABLE(s));
    cr_assert_eq(sum, want);
}

Test(registry, totals_count_inserts_and_removals)
{
    uint64_t in, out;
    struct registry_entry a = {.addr = 0x1000, .size = 0x10}, h = {.addr = 0x1000, .size = 1};
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &a, NULL), 0);
    cr_assert_eq(registry_insert(REGISTRY_ADDR, &a, NULL), 1); /* a replacement counts */
    cr_assert_eq(registry_insert(REGISTRY_HANDLE, &h, NULL), 0);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, 0x1000, NULL), 1);
    cr_assert_eq(registry_remove(REGISTRY_ADDR, 0x1000, NULL), 0); /* unknown: not counted */
    registry_totals(REGISTRY_ADDR, &in, &out);
    cr_assert_eq(in, 2);
    cr_assert_eq(out, 1);
    registry_totals(REGISTRY_HANDLE, &in, &out);
    cr_assert_eq(in, 1);
    cr_assert_eq(out, 0);
    cr_assert_eq(registry_remove(REGISTRY_HANDLE, 0x1000, NULL), 1);
    registry_totals(REGISTRY_HANDLE, NULL, &out);
    cr_assert_eq(out, 1);
    registry_reset();
    registry_totals(REGISTRY_ADDR, &in, &out);
    cr_assert_eq(in + out, 0, "a reset starts the counts again");
}

/* Writers try the chunk and position of their last update first (a free right after its
 * allocation, allocations in address runs). Runs of ascending allocations freed in LIFO, FIFO
 * or random order, alloc/free pairs on one address, both indexed namespaces interleaved (they
 * share the guess), many chunks: every answer is checked against a model. */
Test(registry, writers_guess_from_their_last_update)
{
    enum { SLOTS = 3000 };
    static uint8_t live[2][SLOTS];
    const enum registry_ns nss[2] = {REGISTRY_ADDR, REGISTRY_MAP};
    uint64_t x = 0x9e3779b97f4a7c15ull, nlive[2] = {0, 0};
    for (int r = 0; r < 4000; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % 2);
        uint64_t base = (x >> 8) % (SLOTS - 40), run = 1 + (x >> 20) % 40, order = (x >> 30) % 3;
        uint64_t s[40], n = 0;
        for (uint64_t i = 0; i < run; i++) { /* a run upwards, skipping what is live */
            uint64_t slot = base + i;
            struct registry_entry e = {.addr = 0x7f0000000000ull + slot * 0x400, .size = 0x400};
            if (live[k][slot])
                continue;
            cr_assert_eq(registry_insert(nss[k], &e, NULL), 0, "round %d", r);
            live[k][slot] = 1, nlive[k]++, s[n++] = slot;
            if ((x >> (i % 60)) & 1) { /* a pair on one address in the other namespace */
                struct registry_entry t = {.addr = e.addr + 0x40, .size = 0x40}, out;
                cr_assert_eq(registry_insert(nss[!k], &t, NULL), 0);
                cr_assert_eq(registry_remove(nss[!k], t.addr, &out), 1);
                cr_assert_eq(out.size, 0x40);
            }
        }
        for (uint64_t j = 0; j < n && (x >> 40) % 4; j++) { /* freed in 3 of 4 rounds */
            uint64_t pick = order == 0 ? n - 1 - j : order == 1 ? j : (x >> (j % 50)) % n;
            if (!live[k][s[pick]])
                continue;
            struct registry_entry out;
            cr_assert_eq(registry_remove(nss[k], 0x7f0000000000ull + s[pick] * 0x400, &out), 1,
                         "round %d", r);
            cr_assert_eq(out.addr, 0x7f0000000000ull + s[pick] * 0x400);
            live[k][s[pick]] = 0, nlive[k]--;
        }
        for (int q = 0; q < 8; q++) {
            uint64_t slot = (x >> (q * 7)) % SLOTS;
            struct registry_entry out;
            cr_assert_eq(registry_lookup(nss[k], 0x7f0000000000ull + slot * 0x400, &out),
                         live[k][slot], "round %d slot %lu", r, (unsigned long)slot);
            cr_assert_eq(
                registry_containing(nss[k], 0x7f0000000000ull + slot * 0x400 + 0x3ff, &out),
                live[k][slot]);
        }
        cr_assert_eq(registry_count(nss[0]), nlive[0]);
        cr_assert_eq(registry_count(nss[1]), nlive[1]);
    }
    cr_assert_gt(nlive[0] + nlive[1], 500, "the index grew to many chunks");
}
