/* nextuse: forecasts of the next use from the previous step's log (rules in nextuse.h). */
#include "nextuse.h"

#include <string.h>

#define NONE32 UINT32_MAX

void nextuse_init(struct nextuse *u, const struct nextuse_mem *mem)
{
    memset(u, 0, sizeof *u);
    u->mem = mem;
    u->keys = 1;
    u->sizes_ok = 1; /* no previous step: an empty hash serves */
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
    release(u, u->sizes, u->nsizes * sizeof *u->sizes);
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

/* The key of the (ord + 1)-th birth of `bytes` in a step's list, or 0. */
static uint64_t nth_birth(const struct nextuse_birth *b, size_t n, uint64_t bytes, size_t ord)
{
    for (size_t i = 0; i < n; i++)
        if (b[i].bytes == bytes && ord-- == 0)
            return b[i].key;
    return 0;
}

/* The counterpart of a birth of `bytes` by a scan of both steps' births: without the hash. */
static uint64_t scan_twin(const struct nextuse *u, uint64_t bytes)
{
    int c = u->cur;
    size_t ord = 0;
    for (size_t i = 0; i < u->nborn[c]; i++)
        ord += u->born[c][i].bytes == bytes;
    return nth_birth(u->born[!c], u->nborn[!c], bytes, ord);
}

static size_t hash(uint64_t key, size_t nslot)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (nslot - 1);
}

/* The slot of `bytes` in a sizes hash of n slots (n a power of two, never full). */
static struct nextuse_size *size_slot(struct nextuse_size *sizes, size_t n, uint64_t bytes)
{
    size_t h = hash(bytes, n);
    while (sizes[h].used && sizes[h].bytes != bytes)
        h = (h + 1) & (n - 1);
    return &sizes[h];
}

/* A sizes hash of at least `want` slots, emptied; -1 (the old one released) without memory. */
static int sizes_reset(struct nextuse *u, size_t want)
{
    if (want > u->nsizes) {
        struct nextuse_size *s = u->mem->alloc(want * sizeof *s);
        release(u, u->sizes, u->nsizes * sizeof *u->sizes);
        u->sizes = s;
        u->nsizes = s ? want : 0;
        if (!s)
            return -1;
    }
    memset(u->sizes, 0, u->nsizes * sizeof *u->sizes);
    u->sizes_used = 0;
    return 0;
}

/* Twice the slots, the entries carried over: 0, or -1 (nothing changed). */
static int sizes_grow(struct nextuse *u)
{
    size_t n = u->nsizes ? 2 * u->nsizes : 16;
    struct nextuse_size *s = u->mem->alloc(n * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0, n * sizeof *s);
    for (size_t i = 0; i < u->nsizes; i++)
        if (u->sizes[i].used)
            *size_slot(s, n, u->sizes[i].bytes) = u->sizes[i];
    release(u, u->sizes, u->nsizes * sizeof *u->sizes);
    u->sizes = s;
    u->nsizes = n;
    return 0;
}

/* The entry of `bytes`, added without counterparts when new (a size the previous step never
 * allocated has none); NULL when the hash cannot serve: the caller scans instead. */
static struct nextuse_size *size_entry(struct nextuse *u, uint64_t bytes)
{
    if (!u->sizes_ok)
        return NULL;
    struct nextuse_size *e = u->nsizes ? size_slot(u->sizes, u->nsizes, bytes) : NULL;
    if (e && e->used)
        return e;
    if (2 * (u->sizes_used + 1) > u->nsizes) {
        if (sizes_grow(u) != 0)
            return NULL;
        e = size_slot(u->sizes, u->nsizes, bytes);
    }
    *e = (struct nextuse_size){.bytes = bytes, .twin = NONE32, .used = 1};
    u->sizes_used++;
    return e;
}

/* At a step boundary: the births of the step that ended chained by size, each size's entry at
 * its first, so that this step's births take their counterparts in order. */
static void index_births(struct nextuse *u)
{
    int p = !u->cur;
    struct nextuse_birth *b = u->born[p];
    size_t want = 16;
    while (want < 2 * u->nborn[p])
        want *= 2;
    u->sizes_ok = sizes_reset(u, want) == 0;
    /* Backwards, so that each size's chain runs forwards in time. */
    for (size_t i = u->nborn[p]; u->sizes_ok && i-- > 0;) {
        struct nextuse_size *e = size_entry(u, b[i].bytes);
        if (!e) {
            u->sizes_ok = 0;
            break;
        }
        b[i].next = e->twin;
        e->twin = (uint32_t)i;
    }
}

uint64_t nextuse_born(struct nextuse *u, uint64_t bytes, uint64_t *pred)
{
    uint64_t key = u->keys++;
    int c = u->cur;
    struct nextuse_size *e = size_entry(u, bytes);
    uint32_t at = e ? e->twin : NONE32;
    uint64_t twin = !e ? scan_twin(u, bytes) : at != NONE32 ? u->born[!c][at].key : 0;
    *pred = twin ? twin : key;
    if (grow(u, (void **)&u->born[c], u->nborn[c], &u->capborn[c], sizeof *u->born[c]) == 0) {
        u->born[c][u->nborn[c]++] = (struct nextuse_birth){key, bytes, NONE32};
        if (at != NONE32) /* the next birth of this size takes the next counterpart */
            e->twin = u->born[!c][at].next;
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
    index_births(u);
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
