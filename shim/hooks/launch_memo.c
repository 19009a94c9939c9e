/* launch_memo: see launch_memo.h. */
#include "launch_memo.h"

#include "arena.h"
#include "compat.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define MEMO_SET_BITS 9
#define MEMO_WAYS     2
#define MEMO_SETS     (1u << MEMO_SET_BITS)
#define MEMO_TABLES   64u /* threads given a table; later ones look every launch up */

/* Two lines, side by side with the other way of its set: a lookup reads one stretch of memory,
 * which the processor fetches as one. Tag 0: the way is empty. */
struct memo_entry {
    uint32_t tag;
    uint32_t reads;
    uintptr_t fn;
    uint64_t stream;
    uint64_t version;
    struct access_shape shape;
    uint8_t api, ncand;
    uint64_t cand[LAUNCH_CANDS];
    /* The launch that came after this one last time: its entry (index + 1, 0 none), its
     * shape's slot and the caller's hint for it (launch_memo_follow). */
    uint16_t next;
    uint16_t next_slot;
    const void *next_hint;
} __attribute__((aligned(128)));
_Static_assert(sizeof(struct memo_entry) == 128, "an entry is two lines");
_Static_assert(LAUNCH_CANDS <= 32, "one bit of `reads` per candidate");

struct memo_table {
    struct memo_entry way[MEMO_SETS][MEMO_WAYS];
    uint8_t next[MEMO_SETS]; /* per set, the way to replace next */
};

static _Atomic unsigned memo_tables;
static MS_TLS struct memo_table *memo_tls;
static MS_TLS struct memo_entry *memo_prev;       /* the thread's last launch's entry, if kept */
static MS_TLS const void *memo_predicted;         /* the hint its entry gave for this launch */
static MS_TLS const struct memo_entry *memo_next; /* the entry its entry gave for this launch */
static MS_TLS uint8_t memo_denied; /* no table for this thread: over the limit, or OOM */

static MS_NOINLINE MS_COLD struct memo_table *memo_new(void)
{
    memo_denied = 1;
    /* From the arena like the shim's other tables (a mapping of its own per thread would move
     * the program's later mappings by when each thread first launched), aligned as an entry
     * asks: its two lines its own. */
    memo_tls = arena_alloc_counted(&memo_tables, MEMO_TABLES, sizeof *memo_tls,
                                   _Alignof(struct memo_table));
    memo_denied = memo_tls == NULL;
    return memo_tls;
}

static uint64_t memo_hash(const struct launch_key *k)
{
    uint64_t h = (uint64_t)k->fn ^ k->api ^ k->reads ^ k->stream * 0xff51afd7ed558ccdull;
    for (uint8_t i = 0; i < k->ncand; i++)
        h = (h ^ k->cand[i]) * 0x9e3779b97f4a7c15ull;
    return h * 0x9e3779b97f4a7c15ull;
}

/* A loop, not memcmp: a launch has a few candidates, fewer words than the call costs. */
static int memo_holds(const struct memo_entry *e, const struct launch_key *k)
{
    if (e->fn != k->fn || e->version != k->version || e->stream != k->stream || e->api != k->api ||
        e->ncand != k->ncand || e->reads != k->reads)
        return 0;
    for (uint8_t i = 0; i < k->ncand; i++)
        if (e->cand[i] != k->cand[i])
            return 0;
    return 1;
}

int launch_memo_find(const struct launch_key *k, struct launch_memo_place *at,
                     struct access_shape *shape)
{
    struct memo_table *t = memo_tls;
    at->entry = NULL;
    if ((ms_unlikely(!t) && (memo_denied || !(t = memo_new()))) || k->ncand > LAUNCH_CANDS)
        return 0;
    /* The entry that followed last time, when it holds k, is where k is kept (a key has one
     * place, its hash's set): no hash to compute. */
    const struct memo_entry *n = memo_next;
    if (n && memo_holds(n, k)) {
        at->entry = (struct memo_entry *)n;
        at->hash = n->tag;
        *shape = n->shape;
        return 1;
    }
    uint64_t h = memo_hash(k);
    uint32_t set = (uint32_t)(h >> (64 - MEMO_SET_BITS));
    unsigned w = 0;
    at->hash = (uint32_t)h | 1;
    while (w < MEMO_WAYS && !(t->way[set][w].tag == at->hash && memo_holds(&t->way[set][w], k)))
        w++;
    int found = w < MEMO_WAYS;
    if (!found)
        w = t->next[set]++ % MEMO_WAYS;
    at->entry = &t->way[set][w];
    if (found)
        *shape = t->way[set][w].shape;
    return found;
}

void launch_memo_keep(const struct launch_memo_place *at, const struct launch_key *k,
                      const struct access_shape *shape)
{
    struct memo_entry *e = at->entry;
    *e = (struct memo_entry){.tag = at->hash,
                             .fn = k->fn,
                             .stream = k->stream,
                             .version = k->version,
                             .shape = *shape,
                             .reads = k->reads,
                             .api = k->api,
                             .ncand = k->ncand};
    memcpy(e->cand, k->cand, k->ncand * sizeof *k->cand);
}

const void *launch_memo_predicted(void)
{
    return memo_predicted;
}

void launch_memo_follow(const struct launch_memo_place *at, const void *hint,
                        const struct access_shape *shape)
{
    struct memo_entry *e = at->entry, *p = memo_prev;
    struct memo_table *t = memo_tls;
    memo_prev = e;
    memo_predicted = NULL;
    memo_next = NULL;
    if (!e || !t)
        return;
    uint16_t idx = (uint16_t)(e - &t->way[0][0] + 1);
    /* Written only when it changed: a step's launches come in the same order every step. */
    if (p && (p->next != idx || p->next_hint != hint || p->next_slot != shape->slot)) {
        p->next = idx;
        p->next_hint = hint;
        p->next_slot = (uint16_t)shape->slot;
    }
    if (!e->next)
        return;
    const struct memo_entry *n = &t->way[0][0] + (e->next - 1);
    __builtin_prefetch(n);
    __builtin_prefetch((const char *)n + 64);
    if (e->next_hint)
        __builtin_prefetch(e->next_hint);
    access_repeat_prefetch(e->next_slot);
    memo_predicted = e->next_hint;
    memo_next = n;
}
