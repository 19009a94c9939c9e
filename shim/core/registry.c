/* registry: the ordered index of REGISTRY_ADDR and REGISTRY_MAP, sharded hash tables for
 * REGISTRY_HANDLE; see registry.h. */
#include "registry.h"

#include "arena.h"
#include "compat.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define REG_INITIAL_BUCKETS 256u

struct reg_node {
    struct reg_node *next;
    uint8_t ns;
    struct registry_entry e;
};

struct reg_shard {
    atomic_flag lock;
    struct reg_node **buckets;
    uint32_t nbuckets; /* power of two */
    uint32_t count[3];
    uint64_t inserted, removed; /* REGISTRY_HANDLE's, the one namespace kept here */
    uint32_t total;             /* all namespaces: the load factor */
    struct reg_node *free_nodes;
    char pad[64];
} __attribute__((aligned(64)));

static struct reg_shard reg_shards[REGISTRY_SHARDS];

static inline uint64_t reg_hash(enum registry_ns ns, uint64_t addr)
{
    uint64_t h = (addr ^ ((uint64_t)ns << 61)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static inline struct reg_shard *reg_shard_of(uint64_t h)
{
    return &reg_shards[h % REGISTRY_SHARDS];
}

static inline void reg_lock(struct reg_shard *s)
{
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
        sched_yield();
}

static inline void reg_unlock(struct reg_shard *s)
{
    atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

/* The bucket index uses the hash bits above those that chose the shard. */
static inline uint32_t reg_bucket(const struct reg_shard *s, uint64_t h)
{
    return (uint32_t)(h / REGISTRY_SHARDS) & (s->nbuckets - 1);
}

static int reg_grow(struct reg_shard *s)
{
    uint32_t n = s->nbuckets ? s->nbuckets * 2 : REG_INITIAL_BUCKETS;
    struct reg_node **b = arena_map(n * sizeof *b);
    if (!b)
        return -1;
    struct reg_node **old = s->buckets;
    uint32_t oldn = s->nbuckets;
    s->buckets = b;
    s->nbuckets = n;
    for (uint32_t i = 0; i < oldn; i++) {
        for (struct reg_node *x = old[i], *next; x; x = next) {
            next = x->next;
            uint32_t k = reg_bucket(s, reg_hash(x->ns, x->e.addr));
            x->next = b[k];
            b[k] = x;
        }
    }
    arena_unmap(old, oldn * sizeof *old);
    return 0;
}

static struct reg_node **reg_find(struct reg_shard *s, enum registry_ns ns, uint64_t addr,
                                  uint64_t h)
{
    if (!s->buckets)
        return NULL;
    struct reg_node **p = &s->buckets[reg_bucket(s, h)];
    while (*p && ((*p)->e.addr != addr || (*p)->ns != ns))
        p = &(*p)->next;
    return *p ? p : NULL;
}

static struct reg_node *reg_new_node(struct reg_shard *s)
{
    struct reg_node *n = s->free_nodes;
    if (n) {
        s->free_nodes = n->next;
        return n;
    }
    return arena_alloc(sizeof *n);
}

/* ---- containment index (REGISTRY_ADDR, REGISTRY_MAP) ---- */

#define REG_CHUNK        64u /* entries per chunk: an insert moves at most this many */
#define REG_TOP_INITIAL  64u
#define REG_INDEXED(ns)  ((ns) == REGISTRY_ADDR || (ns) == REGISTRY_MAP)
#define REG_INDEX_OF(ns) (&reg_index[(ns) == REGISTRY_MAP])

/* A run of consecutive entries in address order: addrs[i] is the address of the i-th, kept
 * apart so the bisection reads dense memory, and slot[i] says where in ents its entry is.
 * Entries stay where they were put: an insert or removal shifts 9 bytes per later entry, not
 * the whole entry. Chunks are never unmapped; an emptied one is recycled. */
struct reg_chunk {
    _Atomic uint32_t n;
    struct reg_chunk *next_free;
    uint64_t used; /* bit f: ents[f] holds an entry */
    uint64_t addrs[REG_CHUNK];
    uint8_t slot[REG_CHUNK];
    struct registry_entry ents[REG_CHUNK];
};
_Static_assert(REG_CHUNK == 64, "the used mask has one bit per slot");

/* The i-th entry. Readers may see a slot being rewritten: masked, it stays in the chunk, and
 * the seqlock discards the answer. */
static inline struct registry_entry *reg_ent(struct reg_chunk *c, uint32_t i)
{
    return &c->ents[c->slot[i] & (REG_CHUNK - 1)];
}

/* The chunks in address order, with the first address of each. Grown by copying into a new
 * pair of arrays; outgrown ones stay mapped, since a reader may still be in them. */
struct reg_top {
    uint32_t cap;
    _Atomic uint64_t *firsts;
    _Atomic(struct reg_chunk *) *chunks;
};

struct reg_index {
    /* Odd while a writer changes the index. Also the writers' lock, taken by moving it from
     * even to odd: an update costs one locked instruction. */
    _Atomic uint32_t seq;
    /* Written under the lock, read without. No count of live entries: inserted - removed -
     * replaced is one, so an update moves one counter, not two. */
    _Atomic uint64_t inserted, removed, replaced;
    _Atomic(struct reg_top *) top;
    /* Once the first entry came, never 0 again: the last chunk stays when it empties, so an
     * allocation freed right away (the common case of a temporary) maps nothing. */
    _Atomic uint32_t nchunks;
    struct reg_chunk *free_chunks;
    /* Bounds of every range indexed since the index was last empty: a cheap first test for
     * values that are no device address at all (kernel parameter words). */
    _Atomic uint64_t lo, hi;
    char pad[64];
} __attribute__((aligned(64)));

static struct reg_index reg_index[2];

/* Per thread, the device allocations it found last: one per 2 MiB page of the address looked
 * up (REG_TLS_SLOTS pages, direct-mapped), each valid while the index's seq is what it was when
 * it was found (no writer since). A training step launches the same kernels on the same
 * buffers, and a caching allocator's segment spans pages of its own: most lookups end here,
 * with one compare. */
#define REG_TLS_SLOTS      64
#define REG_TLS_PAGE_SHIFT 21
struct reg_tls_slot {
    uint32_t tag; /* seq + 1 of the entry; 0: empty */
    struct registry_entry e;
};
static MS_TLS struct reg_tls_slot reg_tls[REG_TLS_SLOTS];

static inline struct reg_tls_slot *reg_tls_slot(uint64_t addr)
{
    return &reg_tls[(addr >> REG_TLS_PAGE_SHIFT) % REG_TLS_SLOTS];
}

/* Index of the last of the n sorted values <= addr, or -1. Branch-free bisection: the searched
 * address is usually a fresh one (a kernel parameter), so every branch would be a coin toss.
 * Readers call it on arrays a writer may be changing: the answer is then discarded. */
static MS_HOT int64_t reg_last_at_or_below(_Atomic uint64_t *v, uint32_t n, uint64_t addr)
{
    if (n == 0)
        return -1;
    _Atomic uint64_t *base = v;
    uint32_t len = n;
    while (len > 1) {
        uint32_t half = len / 2;
        _Atomic uint64_t *mid = base + half;
        base = atomic_load_explicit(mid, memory_order_relaxed) <= addr ? mid : base; /* cmov */
        len -= half;
    }
    return atomic_load_explicit(base, memory_order_relaxed) <= addr ? base - v : -1;
}

static MS_NOINLINE void reg_index_lock_wait(struct reg_index *x)
{
    uint32_t s = atomic_load_explicit(&x->seq, memory_order_relaxed);
    for (;;) {
        if (!(s & 1) && atomic_compare_exchange_weak_explicit(
                            &x->seq, &s, s + 1, memory_order_acquire, memory_order_relaxed))
            break;
        if (s & 1) {
            sched_yield();
            s = atomic_load_explicit(&x->seq, memory_order_relaxed);
        }
    }
}

/* Uncontended, one try; the waiting out of line. */
static MS_HOT void reg_index_lock(struct reg_index *x)
{
    uint32_t s = atomic_load_explicit(&x->seq, memory_order_relaxed);
    if (ms_unlikely((s & 1) || !atomic_compare_exchange_weak_explicit(
                                   &x->seq, &s, s + 1, memory_order_acquire, memory_order_relaxed)))
        reg_index_lock_wait(x);
    /* The odd count is visible before any change to the index (the seqlock's writer side). */
    atomic_thread_fence(memory_order_release);
}

/* A counter only the lock holder writes: no locked instruction needed. Released, so that a
 * reader who sees it sees the updates before it (registry_count's order). */
static inline void reg_bump(_Atomic uint64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
                          memory_order_release);
}

static void reg_index_unlock(struct reg_index *x)
{
    /* Only the lock holder writes seq: a plain store makes it even again. */
    atomic_store_explicit(&x->seq, atomic_load_explicit(&x->seq, memory_order_relaxed) + 1,
                          memory_order_release);
}

static struct reg_chunk *reg_chunk_new(struct reg_index *x)
{
    struct reg_chunk *c = x->free_chunks;
    if (c)
        x->free_chunks = c->next_free;
    else
        c = arena_alloc(sizeof *c);
    if (c) {
        atomic_store_explicit(&c->n, 0, memory_order_relaxed);
        c->used = 0;
    }
    return c;
}

/* Make room for one more chunk in the top arrays. */
static struct reg_top *reg_top_reserve(struct reg_index *x, uint32_t nc)
{
    struct reg_top *t = atomic_load_explicit(&x->top, memory_order_relaxed);
    if (t && nc < t->cap)
        return t;
    uint32_t cap = t ? t->cap * 2 : REG_TOP_INITIAL;
    size_t bytes = sizeof *t + (size_t)cap * (sizeof *t->firsts + sizeof *t->chunks);
    struct reg_top *u = arena_map(bytes);
    if (!u)
        return NULL;
    u->cap = cap;
    u->firsts = (_Atomic uint64_t *)(u + 1);
    u->chunks = (_Atomic(struct reg_chunk *) *)(u->firsts + cap);
    for (uint32_t i = 0; i < nc; i++) {
        u->firsts[i] = atomic_load_explicit(&t->firsts[i], memory_order_relaxed);
        u->chunks[i] = atomic_load_explicit(&t->chunks[i], memory_order_relaxed);
    }
    atomic_store_explicit(&x->top, u, memory_order_release);
    return u;
}

/* Shift the top arrays one by one with atomic stores: a reader never sees a torn pointer. */
static void reg_top_insert(struct reg_index *x, struct reg_top *t, uint32_t pos, uint64_t first,
                           struct reg_chunk *c)
{
    uint32_t nc = atomic_load_explicit(&x->nchunks, memory_order_relaxed);
    for (uint32_t j = nc; j > pos; j--) {
        atomic_store_explicit(&t->firsts[j],
                              atomic_load_explicit(&t->firsts[j - 1], memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&t->chunks[j],
                              atomic_load_explicit(&t->chunks[j - 1], memory_order_relaxed),
                              memory_order_relaxed);
    }
    atomic_store_explicit(&t->firsts[pos], first, memory_order_relaxed);
    atomic_store_explicit(&t->chunks[pos], c, memory_order_relaxed);
    atomic_store_explicit(&x->nchunks, nc + 1, memory_order_relaxed);
}

static void reg_top_remove(struct reg_index *x, struct reg_top *t, uint32_t pos)
{
    uint32_t nc = atomic_load_explicit(&x->nchunks, memory_order_relaxed);
    for (uint32_t j = pos; j + 1 < nc; j++) {
        atomic_store_explicit(&t->firsts[j],
                              atomic_load_explicit(&t->firsts[j + 1], memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&t->chunks[j],
                              atomic_load_explicit(&t->chunks[j + 1], memory_order_relaxed),
                              memory_order_relaxed);
    }
    atomic_store_explicit(&x->nchunks, nc - 1, memory_order_relaxed);
}

/* Per thread, where its updates went last; only guesses, checked under the writers' lock.
 * - ci, i: the chunk (index into the top arrays) and position its last update found, tried
 *   first: a free usually follows its allocation closely, and allocations come in address
 *   runs, so the next update tends to fall in the same chunk.
 * - last, last_ci, last_i: where its last insert went: a temporary is freed right after its
 *   allocation, by the thread that made it, and the free then finds its slot without a search
 *   (valid while that chunk is still at that place in this index's top array, since chunks are
 *   never unmapped, and holds addr at that position).
 * One variable, so that a writer finds all of them from one thread-pointer offset. */
static MS_TLS struct {
    struct reg_chunk *last;
    uint32_t last_ci, last_i;
    uint32_t ci, i;
} reg_hint;

/* The bisections behind the hints, out of line: the hinted path stays short. */
static MS_NOINLINE uint32_t reg_chunk_search(struct reg_top *t, uint32_t nc, uint64_t addr)
{
    int64_t c = reg_last_at_or_below(t->firsts, nc, addr);
    return reg_hint.ci = c < 0 ? 0 : (uint32_t)c;
}

static MS_NOINLINE uint32_t reg_pos_search(struct reg_chunk *c, uint32_t n, uint64_t addr)
{
    int64_t i = reg_last_at_or_below((_Atomic uint64_t *)c->addrs, n, addr);
    return reg_hint.i = i >= 0 && c->addrs[i] == addr ? (uint32_t)i : (uint32_t)(i + 1);
}

/* The chunk that holds (or would hold) addr: the last whose first address is <= addr, else the
 * first. Writers only (under the index lock). */
static MS_HOT uint32_t reg_chunk_for(struct reg_top *t, uint32_t nc, uint64_t addr)
{
    uint32_t h = reg_hint.ci;
    if (h < nc && (h == 0 || atomic_load_explicit(&t->firsts[h], memory_order_relaxed) <= addr) &&
        (h + 1 == nc || addr < atomic_load_explicit(&t->firsts[h + 1], memory_order_relaxed)))
        return h;
    return reg_chunk_search(t, nc, addr);
}

/* Position of addr in a chunk (the first entry >= addr). Writers only. */
static MS_HOT uint32_t reg_chunk_pos(struct reg_chunk *c, uint32_t n, uint64_t addr)
{
    uint32_t h = reg_hint.i;
    if (h <= n && (h == 0 || c->addrs[h - 1] < addr) && (h == n || addr <= c->addrs[h]))
        return h;
    return reg_pos_search(c, n, addr);
}

/* Where addr is or would go: its chunk (index into the top arrays) and position in it. The
 * index holds at least one chunk. Writers only. */
struct reg_slot {
    struct reg_top *t;
    uint32_t ci, i, n;
    struct reg_chunk *c;
};

static MS_HOT int reg_last_find(struct reg_index *x, uint64_t addr, struct reg_slot *s)
{
    struct reg_chunk *c = reg_hint.last;
    uint32_t ci = reg_hint.last_ci, i = reg_hint.last_i;
    if (!c || ci >= atomic_load_explicit(&x->nchunks, memory_order_relaxed))
        return 0;
    struct reg_top *t = atomic_load_explicit(&x->top, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (atomic_load_explicit(&t->chunks[ci], memory_order_relaxed) != c || i >= n ||
        c->addrs[i] != addr)
        return 0;
    *s = (struct reg_slot){.t = t, .ci = ci, .i = i, .n = n, .c = c};
    return 1;
}

static MS_HOT int reg_index_find(struct reg_index *x, uint64_t addr, struct reg_slot *s)
{
    uint32_t nc = atomic_load_explicit(&x->nchunks, memory_order_relaxed);
    s->t = atomic_load_explicit(&x->top, memory_order_relaxed);
    s->ci = reg_chunk_for(s->t, nc, addr);
    s->c = atomic_load_explicit(&s->t->chunks[s->ci], memory_order_relaxed);
    s->n = atomic_load_explicit(&s->c->n, memory_order_relaxed);
    s->i = reg_chunk_pos(s->c, s->n, addr);
    return s->i < s->n && s->c->addrs[s->i] == addr;
}

/* Put e at position s->i of its chunk, which has room (s->n < REG_CHUNK), as a new key. */
static MS_HOT void reg_place(struct reg_index *x, const struct reg_slot *s,
                             const struct registry_entry *e)
{
    struct reg_chunk *c = s->c;
    uint32_t i = s->i, n = s->n;
    uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
    uint32_t f = (uint32_t)__builtin_ctzll(~c->used); /* n < REG_CHUNK: one is free */
    c->ents[f] = *e;
    c->used |= 1ull << f;
    if (i < n) { /* not at the end, where a fresh address usually goes */
        memmove(&c->addrs[i + 1], &c->addrs[i], (n - i) * sizeof *c->addrs);
        memmove(&c->slot[i + 1], &c->slot[i], (n - i) * sizeof *c->slot);
    }
    c->addrs[i] = e->addr;
    c->slot[i] = (uint8_t)f;
    atomic_store_explicit(&c->n, n + 1, memory_order_relaxed);
    reg_hint.last = c;
    reg_hint.last_ci = s->ci;
    reg_hint.last_i = i;
    if (i == 0)
        atomic_store_explicit(&s->t->firsts[s->ci], e->addr, memory_order_relaxed);
    /* The bounds start over when the index was empty, which an empty chunk says: only the
     * last chunk is kept when it empties. */
    if (n == 0 || e->addr < atomic_load_explicit(&x->lo, memory_order_relaxed))
        atomic_store_explicit(&x->lo, e->addr, memory_order_relaxed);
    if (n == 0 || end > atomic_load_explicit(&x->hi, memory_order_relaxed))
        atomic_store_explicit(&x->hi, end, memory_order_relaxed);
}

/* reg_index_put's other cases: the first chunk, a replaced key, a full chunk. */
static MS_NOINLINE int reg_index_put_slow(struct reg_index *x, const struct registry_entry *e,
                                          struct registry_entry *displaced)
{
    if (atomic_load_explicit(&x->nchunks, memory_order_relaxed) == 0) {
        struct reg_chunk *c = reg_chunk_new(x);
        struct reg_top *t = c ? reg_top_reserve(x, 0) : NULL;
        if (!t)
            return -1;
        reg_top_insert(x, t, 0, e->addr, c);
    }
    struct reg_slot s;
    if (reg_index_find(x, e->addr, &s)) {
        uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
        if (displaced)
            *displaced = *reg_ent(s.c, s.i);
        *reg_ent(s.c, s.i) = *e;
        if (end > atomic_load_explicit(&x->hi, memory_order_relaxed))
            atomic_store_explicit(&x->hi, end, memory_order_relaxed);
        reg_bump(&x->replaced);
        return 1;
    }
    if (s.n == REG_CHUNK) {
        /* Full: its upper half moves to a new chunk after it. */
        struct reg_chunk *c = s.c, *d = reg_chunk_new(x);
        struct reg_top *t =
            d ? reg_top_reserve(x, atomic_load_explicit(&x->nchunks, memory_order_relaxed)) : NULL;
        if (!t)
            return -1;
        uint32_t half = REG_CHUNK / 2;
        memcpy(d->addrs, &c->addrs[half], half * sizeof *c->addrs);
        for (uint32_t j = 0; j < half; j++) {
            d->ents[j] = *reg_ent(c, half + j);
            d->slot[j] = (uint8_t)j;
            c->used &= ~(1ull << c->slot[half + j]);
        }
        d->used = (1ull << half) - 1;
        atomic_store_explicit(&d->n, half, memory_order_relaxed);
        atomic_store_explicit(&c->n, half, memory_order_relaxed);
        reg_top_insert(x, t, s.ci + 1, d->addrs[0], d);
        s.t = t;
        if (s.i > half) {
            s.c = d, s.ci++, s.i -= half;
        }
        s.n = half;
    }
    reg_place(x, &s, e);
    return 0;
}

/* Insert or replace, under the index lock: 0 new, 1 replaced (the old entry in `displaced`,
 * may be NULL), -1 out of memory (nothing changed). A new key in a chunk with room (the common
 * case) is placed here; the rest goes out of line. */
static MS_HOT int reg_index_put(struct reg_index *x, const struct registry_entry *e,
                                struct registry_entry *displaced)
{
    struct reg_slot s;
    if (ms_likely(atomic_load_explicit(&x->nchunks, memory_order_relaxed) != 0) &&
        !reg_index_find(x, e->addr, &s) && s.n < REG_CHUNK) {
        reg_place(x, &s, e);
        return 0;
    }
    return reg_index_put_slow(x, e, displaced);
}

/* Remove the entry at s, under the index lock, its copy in `out` (may be NULL). */
static MS_HOT void reg_drop_at(struct reg_index *x, const struct reg_slot *s,
                               struct registry_entry *out)
{
    struct reg_chunk *c = s->c;
    uint32_t i = s->i, n = s->n;
    if (out)
        *out = *reg_ent(c, i);
    c->used &= ~(1ull << c->slot[i]);
    if (i + 1 < n) {
        memmove(&c->addrs[i], &c->addrs[i + 1], (n - i - 1) * sizeof *c->addrs);
        memmove(&c->slot[i], &c->slot[i + 1], (n - i - 1) * sizeof *c->slot);
    }
    atomic_store_explicit(&c->n, n - 1, memory_order_relaxed);
    if (n == 1 && atomic_load_explicit(&x->nchunks, memory_order_relaxed) > 1) {
        reg_top_remove(x, s->t, s->ci);
        c->next_free = x->free_chunks;
        x->free_chunks = c;
    } else if (i == 0 && n > 1) {
        atomic_store_explicit(&s->t->firsts[s->ci], c->addrs[0], memory_order_relaxed);
    }
}

/* reg_index_drop behind a guess that missed, out of line (its slot then lives in this frame,
 * not the caller's); 0 also when the index is empty. */
static MS_NOINLINE int reg_index_drop_any(struct reg_index *x, uint64_t addr,
                                          struct registry_entry *out)
{
    struct reg_slot s;
    if (!atomic_load_explicit(&x->nchunks, memory_order_relaxed) || !reg_index_find(x, addr, &s))
        return 0;
    reg_drop_at(x, &s, out);
    return 1;
}

/* Remove, under the index lock: 1 and the entry in `out` (may be NULL) when found. */
static MS_HOT int reg_index_drop(struct reg_index *x, uint64_t addr, struct registry_entry *out)
{
    struct reg_slot s;
    if (!reg_last_find(x, addr, &s))
        return reg_index_drop_any(x, addr, out);
    reg_drop_at(x, &s, out);
    return 1;
}

/* A lock-free read of the index (the seqlock's reader side). exact: the entry at addr, else
 * the last entry at or below addr. 1 and the entry in *e, and the seq it was read under in
 * *seq, when found. */
static int reg_index_read(struct reg_index *x, uint64_t addr, int exact, struct registry_entry *e,
                          uint32_t *seq)
{
    for (unsigned spins = 0;; spins++) {
        uint32_t s1 = atomic_load_explicit(&x->seq, memory_order_acquire);
        if (s1 & 1) {
            if (spins > 64)
                sched_yield();
            continue;
        }
        int found = 0;
        struct reg_top *t = atomic_load_explicit(&x->top, memory_order_acquire);
        uint32_t nc = atomic_load_explicit(&x->nchunks, memory_order_relaxed);
        if (t && nc > t->cap)
            nc = t->cap; /* read across a growth: the retry below discards it */
        if (t && nc && addr >= atomic_load_explicit(&x->lo, memory_order_relaxed) &&
            addr < atomic_load_explicit(&x->hi, memory_order_relaxed)) {
            int64_t ci = reg_last_at_or_below(t->firsts, nc, addr);
            struct reg_chunk *c =
                ci >= 0 ? atomic_load_explicit(&t->chunks[ci], memory_order_relaxed) : NULL;
            if (c) {
                uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
                int64_t i = reg_last_at_or_below((_Atomic uint64_t *)c->addrs,
                                                 n < REG_CHUNK ? n : REG_CHUNK, addr);
                if (i >= 0) {
                    memcpy(e, reg_ent(c, (uint32_t)i), sizeof *e);
                    found = 1;
                }
            }
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&x->seq, memory_order_relaxed) != s1)
            continue;
        *seq = s1;
        return found && (exact ? e->addr == addr : addr - e->addr < e->size);
    }
}

int registry_containing(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
{
    if (!REG_INDEXED(ns))
        return 0;
    struct reg_index *x = REG_INDEX_OF(ns);
    struct reg_tls_slot *s = reg_tls_slot(addr);
    /* The entry was read under this (even) seq, so it still holds. */
    if (ns == REGISTRY_ADDR && s->tag == atomic_load_explicit(&x->seq, memory_order_acquire) + 1 &&
        addr - s->e.addr < s->e.size) {
        if (out)
            *out = s->e;
        return 1;
    }
    struct registry_entry e;
    uint32_t seq;
    if (!reg_index_read(x, addr, 0, &e, &seq))
        return 0;
    if (ns == REGISTRY_ADDR)
        *s = (struct reg_tls_slot){.tag = seq + 1, .e = e};
    if (out)
        *out = e;
    return 1;
}

void registry_bounds(enum registry_ns ns, uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    if (!REG_INDEXED(ns))
        return;
    struct reg_index *x = REG_INDEX_OF(ns);
    if (atomic_load_explicit(&x->nchunks, memory_order_acquire) == 0)
        return;
    *lo = atomic_load_explicit(&x->lo, memory_order_relaxed);
    *hi = atomic_load_explicit(&x->hi, memory_order_relaxed);
}

uint64_t registry_version(void)
{
    return atomic_load_explicit(&reg_index[0].seq, memory_order_acquire) |
           (uint64_t)atomic_load_explicit(&reg_index[1].seq, memory_order_acquire) << 32;
}

/* ---- the public calls: the index for REGISTRY_ADDR and REGISTRY_MAP, shards for the rest ---- */

static MS_NOINLINE int reg_shard_insert(enum registry_ns ns, const struct registry_entry *e,
                                        struct registry_entry *displaced)
{
    uint64_t h = reg_hash(ns, e->addr);
    struct reg_shard *s = reg_shard_of(h);
    int ret = -1;
    reg_lock(s);
    struct reg_node **found = reg_find(s, ns, e->addr, h);
    if (found) {
        if (displaced)
            *displaced = (*found)->e;
        (*found)->e = *e;
        ret = 1;
    } else if (s->total < s->nbuckets || reg_grow(s) == 0) {
        struct reg_node *n = reg_new_node(s);
        if (n) {
            n->ns = (uint8_t)ns;
            n->e = *e;
            uint32_t k = reg_bucket(s, h);
            n->next = s->buckets[k];
            s->buckets[k] = n;
            s->count[ns]++;
            s->total++;
            ret = 0;
        }
    }
    if (ret >= 0)
        s->inserted++;
    reg_unlock(s);
    return ret;
}

/* Inlined into track's allocation path: the call's own frame cost as much as a third of it. */
MS_HOT int registry_insert(enum registry_ns ns, const struct registry_entry *e,
                           struct registry_entry *displaced)
{
    if (!REG_INDEXED(ns))
        return reg_shard_insert(ns, e, displaced);
    struct reg_index *x = REG_INDEX_OF(ns);
    reg_index_lock(x);
    int ret = reg_index_put(x, e, displaced);
    if (ret >= 0)
        reg_bump(&x->inserted);
    reg_index_unlock(x);
    return ret;
}

static MS_NOINLINE int reg_shard_remove(enum registry_ns ns, uint64_t addr,
                                        struct registry_entry *out)
{
    uint64_t h = reg_hash(ns, addr);
    struct reg_shard *s = reg_shard_of(h);
    reg_lock(s);
    struct reg_node **found = reg_find(s, ns, addr, h);
    if (found) {
        struct reg_node *n = *found;
        if (out)
            *out = n->e;
        *found = n->next;
        n->next = s->free_nodes;
        s->free_nodes = n;
        s->count[ns]--;
        s->total--;
        s->removed++;
    }
    reg_unlock(s);
    return found != NULL;
}

/* Inlined like registry_insert. */
MS_HOT int registry_remove(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
{
    if (!REG_INDEXED(ns))
        return reg_shard_remove(ns, addr, out);
    struct reg_index *x = REG_INDEX_OF(ns);
    reg_index_lock(x);
    int found = reg_index_drop(x, addr, out);
    if (found)
        reg_bump(&x->removed);
    reg_index_unlock(x);
    return found;
}

int registry_set_category(enum registry_ns ns, uint64_t addr, uint8_t category,
                          struct registry_entry *old)
{
    if (REG_INDEXED(ns)) {
        struct reg_index *x = REG_INDEX_OF(ns);
        struct reg_slot s;
        reg_index_lock(x);
        int found =
            atomic_load_explicit(&x->nchunks, memory_order_relaxed) && reg_index_find(x, addr, &s);
        if (found) {
            if (old)
                *old = *reg_ent(s.c, s.i);
            reg_ent(s.c, s.i)->category = category;
        }
        reg_index_unlock(x);
        return found;
    }
    uint64_t h = reg_hash(ns, addr);
    struct reg_shard *s = reg_shard_of(h);
    reg_lock(s);
    struct reg_node **found = reg_find(s, ns, addr, h);
    if (found) {
        if (old)
            *old = (*found)->e;
        (*found)->e.category = category;
    }
    reg_unlock(s);
    return found != NULL;
}

int registry_lookup(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
{
    if (REG_INDEXED(ns)) {
        struct registry_entry e;
        uint32_t seq;
        if (!reg_index_read(REG_INDEX_OF(ns), addr, 1, &e, &seq))
            return 0;
        if (out)
            *out = e;
        return 1;
    }
    uint64_t h = reg_hash(ns, addr);
    struct reg_shard *s = reg_shard_of(h);
    reg_lock(s);
    struct reg_node **found = reg_find(s, ns, addr, h);
    if (found && out)
        *out = (*found)->e;
    reg_unlock(s);
    return found != NULL;
}

size_t registry_count(enum registry_ns ns)
{
    if (REG_INDEXED(ns)) {
        /* inserted last: it never falls behind the other two, so a reading during updates
         * cannot wrap below 0. */
        struct reg_index *x = REG_INDEX_OF(ns);
        uint64_t gone = atomic_load_explicit(&x->removed, memory_order_acquire);
        gone += atomic_load_explicit(&x->replaced, memory_order_acquire);
        return (size_t)(atomic_load_explicit(&x->inserted, memory_order_relaxed) - gone);
    }
    size_t n = 0;
    for (unsigned i = 0; i < REGISTRY_SHARDS; i++)
        n += __atomic_load_n(&reg_shards[i].count[ns], __ATOMIC_RELAXED);
    return n;
}

void registry_totals(enum registry_ns ns, uint64_t *inserted, uint64_t *removed)
{
    uint64_t in = 0, out = 0;
    if (REG_INDEXED(ns)) {
        in = atomic_load_explicit(&REG_INDEX_OF(ns)->inserted, memory_order_relaxed);
        out = atomic_load_explicit(&REG_INDEX_OF(ns)->removed, memory_order_relaxed);
    } else {
        for (unsigned i = 0; i < REGISTRY_SHARDS; i++) {
            in += __atomic_load_n(&reg_shards[i].inserted, __ATOMIC_RELAXED);
            out += __atomic_load_n(&reg_shards[i].removed, __ATOMIC_RELAXED);
        }
    }
    if (inserted)
        *inserted = in;
    if (removed)
        *removed = out;
}

/* The index a chunk at a time: copied under the lock, handed to fn without it. */
static void reg_index_foreach(struct reg_index *x,
                              void (*fn)(const struct registry_entry *e, void *ctx), void *ctx)
{
    struct registry_entry copy[REG_CHUNK];
    uint64_t from = 0;
    for (;;) {
        uint32_t got = 0;
        reg_index_lock(x);
        struct reg_slot s;
        if (atomic_load_explicit(&x->nchunks, memory_order_relaxed)) {
            reg_index_find(x, from, &s);
            if (s.i == s.n && s.ci + 1 < atomic_load_explicit(&x->nchunks, memory_order_relaxed)) {
                s.c = atomic_load_explicit(&s.t->chunks[++s.ci], memory_order_relaxed);
                s.n = atomic_load_explicit(&s.c->n, memory_order_relaxed);
                s.i = 0;
            }
            got = s.i < s.n ? s.n - s.i : 0;
            for (uint32_t k = 0; k < got; k++)
                copy[k] = *reg_ent(s.c, s.i + k);
        }
        reg_index_unlock(x);
        for (uint32_t i = 0; i < got; i++)
            fn(&copy[i], ctx);
        if (!got || copy[got - 1].addr == UINT64_MAX)
            return;
        from = copy[got - 1].addr + 1;
    }
}

void registry_foreach(enum registry_ns ns, void (*fn)(const struct registry_entry *e, void *ctx),
                      void *ctx)
{
    if (REG_INDEXED(ns)) {
        reg_index_foreach(REG_INDEX_OF(ns), fn, ctx);
        return;
    }
    for (unsigned i = 0; i < REGISTRY_SHARDS; i++) {
        struct reg_shard *s = &reg_shards[i];
        reg_lock(s);
        for (uint32_t b = 0; b < s->nbuckets; b++) {
            for (struct reg_node *n = s->buckets[b]; n; n = n->next) {
                if (n->ns == ns)
                    fn(&n->e, ctx);
            }
        }
        reg_unlock(s);
    }
}

void registry_reset(void)
{
    /* Abandon the nodes (after fork another thread may have been inside a shard). */
    for (unsigned i = 0; i < REGISTRY_SHARDS; i++) {
        struct reg_shard *s = &reg_shards[i];
        s->buckets = NULL;
        s->nbuckets = 0;
        memset(s->count, 0, sizeof s->count);
        s->total = 0;
        s->inserted = s->removed = 0;
        s->free_nodes = NULL;
        atomic_flag_clear(&s->lock);
    }
    for (unsigned i = 0; i < MS_ARRAY_LEN(reg_index); i++) {
        struct reg_index *x = &reg_index[i];
        atomic_store(&x->top, NULL);
        atomic_store(&x->nchunks, 0);
        atomic_store(&x->inserted, 0);
        atomic_store(&x->removed, 0);
        atomic_store(&x->replaced, 0);
        x->free_chunks = NULL;
        /* seq moves on (and stays even, which also frees the lock): no thread's cached entries
         * may match again. */
        atomic_store(&x->seq, (atomic_load(&x->seq) + 2) & ~1u);
    }
}
