/* launch_memo: see launch_memo.h. */
#include "launch_memo.h"

#include "arena.h"
#include "compat.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define MEMO_SET_BITS 8
#define MEMO_WAYS     4
#define MEMO_SETS     (1u << MEMO_SET_BITS)
#define MEMO_TABLES   64u /* threads given a table; later ones look every launch up */
#define MEMO_LINE     64u

/* Four lines: the key and the first candidate in the first, the other candidates after it, so
 * that a launch with few candidates reads one or two lines of its entry. */
struct memo_entry {
    uint32_t reads;
    uint8_t api, ncand;
    /* The launch that came after this one last time: its entry (index + 1, 0 none), its
     * candidates, its shape's slot and the caller's hint for it (launch_memo_follow). */
    uint16_t next;
    uintptr_t fn;
    uint64_t stream;
    uint64_t version;
    struct access_shape shape;
    uint16_t next_slot;
    uint8_t next_ncand;
    const void *next_hint;
    uint64_t cand[LAUNCH_CANDS];
} __attribute__((aligned(MEMO_LINE)));
_Static_assert(sizeof(struct memo_entry) == 4 * MEMO_LINE, "an entry is four lines");
_Static_assert(LAUNCH_CANDS <= 32, "one bit of `reads` per candidate");

/* Four ways a set: a step's few hundred launches per thread, hashed into sets, rarely put more
 * than four in one, where two ways pushed out a few launches of every step (each then recorded
 * in full, step after step). A set's tags sit in one line apart from the entries, so a launch
 * that is not there reads no entry of the set. Tag 0: the way is empty. */
struct memo_table {
    uint32_t tag[MEMO_SETS][MEMO_WAYS];
    uint8_t next[MEMO_SETS]; /* per set, the way to replace next */
    struct memo_entry way[MEMO_SETS][MEMO_WAYS];
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
     * asks: its lines its own. */
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
        at->hash = (&t->tag[0][0])[n - &t->way[0][0]];
        *shape = n->shape;
        return 1;
    }
    uint64_t h = memo_hash(k);
    uint32_t set = (uint32_t)(h >> (64 - MEMO_SET_BITS));
    unsigned w = 0;
    at->hash = (uint32_t)h | 1;
    while (w < MEMO_WAYS && !(t->tag[set][w] == at->hash && memo_holds(&t->way[set][w], k)))
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
    (&memo_tls->tag[0][0])[e - &memo_tls->way[0][0]] = at->hash;
    *e = (struct memo_entry){.fn = k->fn,
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
    if (p && (p->next != idx || p->next_hint != hint || p->next_slot != shape->slot ||
              p->next_ncand != e->ncand)) {
        p->next = idx;
        p->next_hint = hint;
        p->next_slot = (uint16_t)shape->slot;
        p->next_ncand = e->ncand;
    }
    if (!e->next)
        return;
    const struct memo_entry *n = &t->way[0][0] + (e->next - 1);
    /* The lines its key and candidates take, as many as it had last time. */
    size_t end = offsetof(struct memo_entry, cand) + e->next_ncand * sizeof n->cand[0];
    for (size_t off = 0; off < end; off += MEMO_LINE)
        __builtin_prefetch((const char *)n + off);
    if (e->next_hint)
        __builtin_prefetch(e->next_hint);
    access_repeat_prefetch(e->next_slot);
    memo_predicted = e->next_hint;
    memo_next = n;
}
