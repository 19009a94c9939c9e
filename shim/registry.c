/* registry: sharded chained hash tables and the containment index beside them; see registry.h. */
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
    uint32_t total; /* all namespaces: the load factor */
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

#define REG_INDEX_INITIAL 1024u
#define REG_INDEXED(ns)   ((ns) == REGISTRY_ADDR || (ns) == REGISTRY_MAP)
#define REG_INDEX_OF(ns)  (&reg_index[(ns) == REGISTRY_MAP])

/* Sorted copies: addrs[i] == ents[i].addr, kept apart so the bisection reads dense memory. */
struct reg_span_array {
    uint32_t cap;
    uint64_t *addrs;
    struct registry_entry *ents;
};

struct reg_index {
    atomic_flag lock;
    _Atomic uint32_t seq; /* odd while a writer changes the array */
    _Atomic(struct reg_span_array *) arr;
    _Atomic uint32_t n;
    /* Bounds of every range ever indexed since the index was last empty: a cheap first test
     * for values that are no device address at all (kernel parameter words). */
    _Atomic uint64_t lo, hi;
    char pad[64];
} __attribute__((aligned(64)));

static struct reg_index reg_index[2];

/* Per thread, the device allocations it found last, valid while the index's seq is what it was
 * when they were found (no writer since). A training step launches the same kernels on the
 * same buffers over and over: most lookups end here, without the bisection. */
#define REG_TLS_WAYS 8
struct reg_tls_cache {
    uint32_t tag;                          /* seq + 1 of the entries; 0: empty */
    uint16_t next;                         /* the way to fill next */
    uint16_t hit;                          /* the way of the last hit */
    struct registry_entry e[REG_TLS_WAYS]; /* size 0: an empty way */
};
static MS_TLS struct reg_tls_cache reg_tls;

static void reg_tls_remember(uint32_t seq, const struct registry_entry *e)
{
    if (reg_tls.tag != seq + 1) {
        memset(reg_tls.e, 0, sizeof reg_tls.e);
        reg_tls.tag = seq + 1;
        reg_tls.next = 0;
    }
    reg_tls.hit = reg_tls.next;
    reg_tls.e[reg_tls.next++ % REG_TLS_WAYS] = *e;
}

static struct reg_span_array *reg_index_array(uint32_t cap)
{
    size_t bytes = sizeof(struct reg_span_array) + (size_t)cap * sizeof(uint64_t) +
                   (size_t)cap * sizeof(struct registry_entry);
    struct reg_span_array *a = arena_map(bytes);
    if (!a)
        return NULL;
    a->cap = cap;
    a->addrs = (uint64_t *)(a + 1);
    a->ents = (struct registry_entry *)(a->addrs + cap);
    return a;
}

/* First i in [0, n) with addrs[i] >= addr (n if none). Readers call it on an array a writer
 * may be changing: every read is an atomic load, and the answer is discarded on a seq change. */
static uint32_t reg_lower_bound(const struct reg_span_array *a, uint32_t n, uint64_t addr)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (__atomic_load_n(&a->addrs[mid], __ATOMIC_RELAXED) < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void reg_index_lock(struct reg_index *x)
{
    while (atomic_flag_test_and_set_explicit(&x->lock, memory_order_acquire))
        sched_yield();
    atomic_fetch_add_explicit(&x->seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void reg_index_unlock(struct reg_index *x)
{
    atomic_fetch_add_explicit(&x->seq, 1, memory_order_release);
    atomic_flag_clear_explicit(&x->lock, memory_order_release);
}

/* Called under the key's shard lock. A failed growth leaves the entry out of the index only. */
static void reg_index_put(enum registry_ns ns, const struct registry_entry *e)
{
    struct reg_index *x = REG_INDEX_OF(ns);
    reg_index_lock(x);
    struct reg_span_array *a = atomic_load_explicit(&x->arr, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&x->n, memory_order_relaxed);
    uint32_t i = a ? reg_lower_bound(a, n, e->addr) : 0;
    uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
    if (a && i < n && a->addrs[i] == e->addr) {
        a->ents[i] = *e;
        if (end > atomic_load_explicit(&x->hi, memory_order_relaxed))
            atomic_store_explicit(&x->hi, end, memory_order_relaxed);
    } else {
        if (!a || n == a->cap) {
            /* The outgrown array stays mapped: a reader may still be reading it. */
            struct reg_span_array *b = reg_index_array(a ? a->cap * 2 : REG_INDEX_INITIAL);
            if (!b)
                goto out;
            if (a) {
                memcpy(b->addrs, a->addrs, n * sizeof *a->addrs);
                memcpy(b->ents, a->ents, n * sizeof *a->ents);
            }
            atomic_store_explicit(&x->arr, b, memory_order_release);
            a = b;
        }
        memmove(&a->addrs[i + 1], &a->addrs[i], (n - i) * sizeof *a->addrs);
        memmove(&a->ents[i + 1], &a->ents[i], (n - i) * sizeof *a->ents);
        a->addrs[i] = e->addr;
        a->ents[i] = *e;
        if (n == 0 || e->addr < atomic_load_explicit(&x->lo, memory_order_relaxed))
            atomic_store_explicit(&x->lo, e->addr, memory_order_relaxed);
        if (n == 0 || end > atomic_load_explicit(&x->hi, memory_order_relaxed))
            atomic_store_explicit(&x->hi, end, memory_order_relaxed);
        atomic_store_explicit(&x->n, n + 1, memory_order_relaxed);
    }
out:
    reg_index_unlock(x);
}

static void reg_index_drop(enum registry_ns ns, uint64_t addr)
{
    struct reg_index *x = REG_INDEX_OF(ns);
    reg_index_lock(x);
    struct reg_span_array *a = atomic_load_explicit(&x->arr, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&x->n, memory_order_relaxed);
    uint32_t i = a ? reg_lower_bound(a, n, addr) : 0;
    if (a && i < n && a->addrs[i] == addr) {
        memmove(&a->addrs[i], &a->addrs[i + 1], (n - i - 1) * sizeof *a->addrs);
        memmove(&a->ents[i], &a->ents[i + 1], (n - i - 1) * sizeof *a->ents);
        atomic_store_explicit(&x->n, n - 1, memory_order_relaxed);
    }
    reg_index_unlock(x);
}

/* Index of the last entry with addrs[i] <= addr, or -1. Branch-free bisection: the searched
 * address is usually a fresh one (a kernel parameter), so every branch would be a coin toss. */
static int64_t reg_last_at_or_below(const struct reg_span_array *a, uint32_t n, uint64_t addr)
{
    const uint64_t *base = a->addrs;
    uint32_t len = n;
    while (len > 1) {
        uint32_t half = len / 2;
        base += (__atomic_load_n(&base[half], __ATOMIC_RELAXED) <= addr) * half;
        len -= half;
    }
    return __atomic_load_n(base, __ATOMIC_RELAXED) <= addr ? base - a->addrs : -1;
}

int registry_containing(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
{
    if (!REG_INDEXED(ns))
        return 0;
    struct reg_index *x = REG_INDEX_OF(ns);
    for (unsigned spins = 0;; spins++) {
        uint32_t s1 = atomic_load_explicit(&x->seq, memory_order_acquire);
        if (s1 & 1) {
            if (spins > 64)
                sched_yield();
            continue;
        }
        if (ns == REGISTRY_ADDR && reg_tls.tag == s1 + 1) {
            /* From the way after the last hit: a kernel's pointers come in the same order
             * launch after launch. */
            for (unsigned k = 0, w = reg_tls.hit + 1; k < REG_TLS_WAYS; k++, w++) {
                const struct registry_entry *c = &reg_tls.e[w % REG_TLS_WAYS];
                if (addr - c->addr < c->size) {
                    reg_tls.hit = w % REG_TLS_WAYS;
                    if (out)
                        *out = *c;
                    return 1;
                }
            }
        }
        int found = 0;
        struct registry_entry e;
        struct reg_span_array *a = atomic_load_explicit(&x->arr, memory_order_acquire);
        uint32_t n = atomic_load_explicit(&x->n, memory_order_relaxed);
        if (a && n > a->cap)
            n = a->cap; /* read across a growth: the retry below discards it */
        if (a && n && addr >= atomic_load_explicit(&x->lo, memory_order_relaxed) &&
            addr < atomic_load_explicit(&x->hi, memory_order_relaxed)) {
            int64_t i = reg_last_at_or_below(a, n, addr);
            if (i >= 0) {
                memcpy(&e, &a->ents[i], sizeof e);
                found = 1;
            }
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&x->seq, memory_order_relaxed) != s1)
            continue;
        if (!found || addr - e.addr >= e.size)
            return 0;
        if (ns == REGISTRY_ADDR)
            reg_tls_remember(s1, &e);
        if (out)
            *out = e;
        return 1;
    }
}

/* ---- the shards ---- */

int registry_insert(enum registry_ns ns, const struct registry_entry *e,
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
    if (ret >= 0 && REG_INDEXED(ns))
        reg_index_put(ns, e);
    reg_unlock(s);
    return ret;
}

int registry_remove(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
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
        if (REG_INDEXED(ns))
            reg_index_drop(ns, addr);
    }
    reg_unlock(s);
    return found != NULL;
}

int registry_set_category(enum registry_ns ns, uint64_t addr, uint8_t category,
                          struct registry_entry *old)
{
    uint64_t h = reg_hash(ns, addr);
    struct reg_shard *s = reg_shard_of(h);
    reg_lock(s);
    struct reg_node **found = reg_find(s, ns, addr, h);
    if (found) {
        if (old)
            *old = (*found)->e;
        (*found)->e.category = category;
        if (REG_INDEXED(ns))
            reg_index_put(ns, &(*found)->e); /* same key: overwrites the index's copy */
    }
    reg_unlock(s);
    return found != NULL;
}

int registry_lookup(enum registry_ns ns, uint64_t addr, struct registry_entry *out)
{
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
    size_t n = 0;
    for (unsigned i = 0; i < REGISTRY_SHARDS; i++)
        n += __atomic_load_n(&reg_shards[i].count[ns], __ATOMIC_RELAXED);
    return n;
}

void registry_foreach(enum registry_ns ns, void (*fn)(const struct registry_entry *e, void *ctx),
                      void *ctx)
{
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
        s->free_nodes = NULL;
        atomic_flag_clear(&s->lock);
    }
    for (unsigned i = 0; i < MS_ARRAY_LEN(reg_index); i++) {
        struct reg_index *x = &reg_index[i];
        atomic_store(&x->arr, NULL);
        atomic_store(&x->n, 0);
        /* seq moves on (and stays even): no thread's cached entries may match again. */
        atomic_store(&x->seq, (atomic_load(&x->seq) + 2) & ~1u);
        atomic_flag_clear(&x->lock);
    }
}
