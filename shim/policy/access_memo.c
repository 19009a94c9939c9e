/* access_memo: per-thread memory of recorded operations, by their ranges or by their hook's
 * words; see access_memo.h. */
#include "access_memo.h"

#include "access.h"

#include "arena.h"
#include "compat.h"
#include "options.h"
#include "registry.h"

#include <stdatomic.h>
#include <string.h>

/* A step's GEMMs, copies and sets (about a hundred, over two threads) fit with room to spare;
 * set-associative so that two of them taking turns in one place do not both miss. */
#define MEMO_SET_BITS 6
#define MEMO_WAYS     4
#define MEMO_SETS     (1u << MEMO_SET_BITS)
/* Threads given a table: later ones record every operation in full (tables are never freed). */
#define MEMO_MAX_TABLES 64u

struct memo_entry {
    uint64_t version;
    struct access_shape shape;
    uint32_t nwords;
    uint64_t w[ACCESS_MEMO_WORDS];
};

struct memo_table {
    /* Of each way, its key's hash (0: empty): a set's tags in a row, read before any entry. */
    uint32_t tag[MEMO_SETS][MEMO_WAYS];
    uint8_t next[MEMO_SETS]; /* per set, the way to replace next */
    struct memo_entry e[MEMO_SETS][MEMO_WAYS];
};

static int memo_on;
static _Atomic unsigned memo_tables;
static MS_TLS struct memo_table *memo_tls;
static MS_TLS uint8_t memo_denied; /* no table for this thread: over the limit, or OOM */

void access_memo_init(void)
{
    memo_on = options_uint(OPT_TRACE_COMPACT) == OPT_ON;
}

static MS_NOINLINE MS_COLD struct memo_table *memo_new(void)
{
    memo_denied = 1;
    memo_tls = arena_alloc_counted(&memo_tables, MEMO_MAX_TABLES, sizeof *memo_tls,
                                   _Alignof(struct memo_table));
    memo_denied = memo_tls == NULL;
    return memo_tls;
}

int access_memo_key(struct access_memo_key *k, const struct access_op *op,
                    const struct access_range *r, size_t n)
{
    if (!memo_on || n > ACCESS_MEMO_RANGES)
        return 0;
    k->version = registry_version();
    if (!REGISTRY_VERSION_STEADY(k->version))
        return 0;
    uint64_t modes = 0, *w = k->w;
    w[0] = (uint64_t)(uintptr_t)op->name;
    w[1] = op->stream;
    w[2] = op->m;
    w[3] = op->n;
    w[4] = op->k;
    w[5] = op->batch;
    w[6] = op->flops;
    w[7] = (uint64_t)op->kind | (uint64_t)op->dtype_a << 8 | (uint64_t)op->dtype_b << 16 |
           (uint64_t)op->dtype_c << 24 | (uint64_t)n << 32;
    /* The words that tell operations apart choose the set; equality is the whole key's. */
    uint64_t h = (w[0] ^ w[1] ^ w[2] ^ w[4]) * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        modes |= (uint64_t)r[i].mode << (8 * i);
        w[ACCESS_MEMO_HEAD + 2 * i] = r[i].addr;
        w[ACCESS_MEMO_HEAD + 2 * i + 1] = r[i].size;
        h = (h ^ r[i].addr) * 0x9e3779b97f4a7c15ull;
    }
    w[8] = modes;
    k->nwords = (uint32_t)(ACCESS_MEMO_HEAD + 2 * n);
    k->hash = h ^ h >> 29;
    return 1;
}

int access_memo_words(struct access_memo_key *k, const uint64_t *w, size_t n)
{
    if (!memo_on || n == 0 || n > ACCESS_MEMO_WORDS - 1)
        return 0;
    k->version = registry_version();
    if (!REGISTRY_VERSION_STEADY(k->version))
        return 0;
    /* No name of an operation is at the top of the address space: these never equal the words
     * access_memo_key writes. */
    k->w[0] = ~0ull;
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        k->w[i + 1] = w[i];
        h = (h ^ w[i]) * 0x9e3779b97f4a7c15ull;
    }
    k->nwords = (uint32_t)n + 1;
    k->hash = h ^ h >> 29;
    return 1;
}

static uint32_t memo_set(const struct access_memo_key *k)
{
    return (uint32_t)(k->hash >> (64 - MEMO_SET_BITS));
}

static uint32_t memo_tag(const struct access_memo_key *k)
{
    return (uint32_t)k->hash | 1u;
}

/* The way of k's set holding k's words, whatever its version; -1 when none. */
static int memo_way(const struct memo_table *t, const struct access_memo_key *k)
{
    uint32_t set = memo_set(k), tag = memo_tag(k);
    for (int i = 0; i < (int)MEMO_WAYS; i++) {
        const struct memo_entry *e = &t->e[set][i];
        if (t->tag[set][i] == tag && e->nwords == k->nwords &&
            memcmp(e->w, k->w, k->nwords * sizeof *k->w) == 0)
            return i;
    }
    return -1;
}

int access_memo_find(const struct access_memo_key *k, struct access_shape *shape)
{
    const struct memo_table *t = memo_tls;
    int way = t ? memo_way(t, k) : -1;
    if (way < 0)
        return 0;
    const struct memo_entry *e = &t->e[memo_set(k)][way];
    /* Another version may have moved an allocation under the same ranges. */
    if (e->version != k->version)
        return 0;
    *shape = e->shape;
    return 1;
}

void access_memo_keep(const struct access_memo_key *k, const struct access_shape *shape)
{
    struct memo_table *t = memo_tls;
    if (shape->slot == 0 || (!t && (memo_denied || !(t = memo_new()))))
        return;
    uint32_t set = memo_set(k);
    int way = memo_way(t, k);
    if (way < 0)
        way = t->next[set]++ % MEMO_WAYS;
    struct memo_entry *e = &t->e[set][way];
    t->tag[set][way] = memo_tag(k);
    e->version = k->version;
    e->shape = *shape;
    e->nwords = k->nwords;
    memcpy(e->w, k->w, k->nwords * sizeof *k->w);
}
