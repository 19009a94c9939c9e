/* registry: sharded chained hash tables; see registry.h. */
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
}
