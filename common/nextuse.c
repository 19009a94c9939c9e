/* nextuse: forecasts of the next use from the previous step's log (rules in nextuse.h). */
#include "nextuse.h"

#include <string.h>

#define NONE32 UINT32_MAX

void nextuse_init(struct nextuse *u, const struct nextuse_mem *mem)
{
    memset(u, 0, sizeof *u);
    u->mem = mem;
    u->keys = 1;
    u->count_ok = 1;
}

static void release(struct nextuse *u, void *p, size_t bytes)
{
    if (p)
        u->mem->release(p, bytes);
}

void nextuse_fini(struct nextuse *u)
{
    for (int i = 0; i < 2; i++) {
        release(u, u->log[i], u->cap[i] * sizeof *u->log[i]);
        release(u, u->born[i], u->capborn[i] * sizeof *u->born[i]);
    }
    release(u, u->slot, u->nslot * sizeof *u->slot);
    release(u, u->count, u->ncount * sizeof *u->count);
    release(u, u->twin, u->ntwin * sizeof *u->twin);
    memset(u, 0, sizeof *u);
}

/* Room for one more element of `size` bytes in *p (n used of *cap): 0, or -1 (nothing moved). */
static int grow(struct nextuse *u, void **p, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    if (c > NEXTUSE_MAX_LOG)
        return -1;
    void *q = u->mem->alloc(c * size);
    if (!q)
        return -1;
    if (n)
        memcpy(q, *p, n * size);
    release(u, *p, *cap * size);
    *p = q;
    *cap = c;
    return 0;
}

static size_t hash(uint64_t key, size_t nslot)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (nslot - 1);
}

static size_t hash_birth(uint64_t bytes, uint64_t ord, size_t nslot)
{
    return hash(bytes ^ (ord * 0xff51afd7ed558ccdull), nslot);
}

/* The slot of `bytes` in the count table (its count, or the empty slot it would take), with
 * room for one more size; -1 when the table cannot grow (counts are then taken from the list
 * for the rest of the step). */
static int count_slot(struct nextuse *u, uint64_t bytes, size_t *at)
{
    if (!u->count_ok)
        return -1;
    if (2 * (u->count_used + 1) > u->ncount) {
        size_t n = u->ncount ? u->ncount * 2 : 64;
        struct nextuse_count *t =
            n <= 2 * (size_t)NEXTUSE_MAX_LOG ? u->mem->alloc(n * sizeof *t) : NULL;
        if (!t) {
            u->count_ok = 0;
            return -1;
        }
        memset(t, 0, n * sizeof *t);
        for (size_t i = 0; i < u->ncount; i++) {
            if (!u->count[i].n)
                continue;
            size_t h = hash(u->count[i].bytes, n);
            while (t[h].n)
                h = (h + 1) & (n - 1);
            t[h] = u->count[i];
        }
        release(u, u->count, u->ncount * sizeof *u->count);
        u->count = t;
        u->ncount = n;
    }
    size_t h = hash(bytes, u->ncount);
    while (u->count[h].n && u->count[h].bytes != bytes)
        h = (h + 1) & (u->ncount - 1);
    *at = h;
    return 0;
}

/* The births of `bytes` recorded so far in this step, by scanning them. */
static uint64_t count_scan(const struct nextuse *u, uint64_t bytes)
{
    uint64_t ord = 0;
    for (size_t i = 0; i < u->nborn[u->cur]; i++)
        ord += u->born[u->cur][i].bytes == bytes;
    return ord;
}

/* The key of the previous step's birth of `bytes` with ordinal `ord`, or 0. */
static uint64_t twin_of(const struct nextuse *u, uint64_t bytes, uint64_t ord)
{
    const struct nextuse_birth *b = u->born[!u->cur];
    if (!u->twin_ok) {
        for (size_t i = 0; i < u->nborn[!u->cur]; i++)
            if (b[i].bytes == bytes && b[i].ord == ord)
                return b[i].key;
        return 0;
    }
    for (size_t h = hash_birth(bytes, ord, u->ntwin);; h = (h + 1) & (u->ntwin - 1)) {
        uint32_t i = u->twin[h];
        if (i == NONE32)
            return 0;
        if (b[i].bytes == bytes && b[i].ord == ord)
            return b[i].key;
    }
}

uint64_t nextuse_born(struct nextuse *u, uint64_t bytes, uint64_t *pred)
{
    uint64_t key = u->keys++;
    int c = u->cur;
    size_t at = 0;
    int counted = count_slot(u, bytes, &at) == 0;
    uint64_t ord = counted ? u->count[at].n : count_scan(u, bytes);
    uint64_t twin = twin_of(u, bytes, ord);
    *pred = twin ? twin : key;
    /* The ordinal counts the births in the list: one that cannot be listed does not count. */
    if (grow(u, (void **)&u->born[c], u->nborn[c], &u->capborn[c], sizeof *u->born[c]) == 0) {
        u->born[c][u->nborn[c]++] = (struct nextuse_birth){key, bytes, ord};
        if (counted) {
            u->count_used += u->count[at].n == 0;
            u->count[at].bytes = bytes;
            u->count[at].n++;
        }
    }
    return key;
}

void nextuse_touch(struct nextuse *u, uint64_t key)
{
    int c = u->cur;
    uint64_t at = u->pos++;
    if (grow(u, (void **)&u->log[c], u->n[c], &u->cap[c], sizeof *u->log[c]) != 0)
        return;
    u->log[c][u->n[c]++] = (struct nextuse_entry){.key = key, .at = at, .next = NONE32};
}

void nextuse_end(struct nextuse *u, uint64_t key)
{
    int c = u->cur;
    if (grow(u, (void **)&u->log[c], u->n[c], &u->cap[c], sizeof *u->log[c]) != 0)
        return;
    /* Logged as a use at the current position, which it does not advance. */
    u->log[c][u->n[c]++] = (struct nextuse_entry){.key = key, .at = u->pos, .next = NONE32};
}

/* The previous log's index: first use per key in `slot`, later uses chained through next. */
static void index_log(struct nextuse *u)
{
    int p = !u->cur;
    struct nextuse_entry *l = u->log[p];
    size_t want = 16;
    while (want < 2 * u->n[p])
        want *= 2;
    if (want > u->nslot) {
        uint32_t *s = u->mem->alloc(want * sizeof *s);
        if (!s) {
            u->n[p] = 0; /* no index, no forecast: as if nothing was logged */
            return;
        }
        release(u, u->slot, u->nslot * sizeof *u->slot);
        u->slot = s;
        u->nslot = want;
    }
    memset(u->slot, 0xff, u->nslot * sizeof *u->slot);
    /* Backwards, so that each key's chain runs forwards in time. */
    for (size_t i = u->n[p]; i-- > 0;) {
        size_t h = hash(l[i].key, u->nslot);
        while (u->slot[h] != NONE32 && l[u->slot[h]].key != l[i].key)
            h = (h + 1) & (u->nslot - 1);
        l[i].next = u->slot[h];
        u->slot[h] = (uint32_t)i;
    }
}

/* The previous step's births by (size, ordinal); without memory for it, twin_of scans them. */
static void index_born(struct nextuse *u)
{
    int p = !u->cur;
    size_t want = 16;
    u->twin_ok = 0;
    while (want < 2 * u->nborn[p])
        want *= 2;
    if (want > u->ntwin) {
        uint32_t *t = u->mem->alloc(want * sizeof *t);
        if (!t)
            return;
        release(u, u->twin, u->ntwin * sizeof *u->twin);
        u->twin = t;
        u->ntwin = want;
    }
    memset(u->twin, 0xff, u->ntwin * sizeof *u->twin);
    const struct nextuse_birth *b = u->born[p];
    for (size_t i = 0; i < u->nborn[p]; i++) {
        size_t h = hash_birth(b[i].bytes, b[i].ord, u->ntwin);
        while (u->twin[h] != NONE32)
            h = (h + 1) & (u->ntwin - 1);
        u->twin[h] = (uint32_t)i;
    }
    u->twin_ok = 1;
}

void nextuse_step(struct nextuse *u)
{
    u->cur = !u->cur;
    u->n[u->cur] = 0;
    u->nborn[u->cur] = 0;
    u->prev_len = u->pos;
    u->pos = 0;
    u->first_key = u->keys;
    u->steps++;
    index_log(u);
    index_born(u);
    if (u->count)
        memset(u->count, 0, u->ncount * sizeof *u->count);
    u->count_used = 0;
    u->count_ok = 1;
}

int nextuse_ready(const struct nextuse *u)
{
    return u->steps >= 2;
}

static uint32_t first_use(const struct nextuse *u, uint64_t key)
{
    const struct nextuse_entry *l = u->log[!u->cur];
    if (!u->nslot)
        return NONE32;
    for (size_t h = hash(key, u->nslot);; h = (h + 1) & (u->nslot - 1)) {
        uint32_t i = u->slot[h];
        if (i == NONE32 || l[i].key == key)
            return i;
    }
}

uint64_t nextuse_predict(const struct nextuse *u, uint64_t key, uint64_t pred, uint64_t now)
{
    if (!nextuse_ready(u))
        return NEXTUSE_UNKNOWN;
    /* Born in this step: its counterpart's uses; else its own. */
    int fresh = key >= u->first_key;
    if (fresh && pred == key)
        return now; /* new, and like nothing before: presumed about to be used */
    uint32_t i = first_use(u, fresh ? pred : key);
    if (i == NONE32)
        return now + 2 * u->prev_len + 1;
    const struct nextuse_entry *l = u->log[!u->cur];
    /* The next use in this step is the one at position pos: the first logged there or later. */
    for (uint32_t j = i; j != NONE32; j = l[j].next)
        if (l[j].at >= u->pos)
            return now + (l[j].at - u->pos) + 1;
    return now + (u->prev_len > u->pos ? u->prev_len - u->pos : 0) + l[i].at + 1;
}
