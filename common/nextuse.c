/* nextuse: forecasts of the next use from the previous step's log (rules in nextuse.h). */
#include "nextuse.h"

#include <string.h>

#define NONE32 UINT32_MAX

void nextuse_init(struct nextuse *u, const struct nextuse_mem *mem)
{
    memset(u, 0, sizeof *u);
    u->mem = mem;
    u->keys = 1;
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

uint64_t nextuse_born(struct nextuse *u, uint64_t bytes, uint64_t *pred)
{
    uint64_t key = u->keys++;
    int c = u->cur;
    size_t ord = 0;
    for (size_t i = 0; i < u->nborn[c]; i++)
        ord += u->born[c][i].bytes == bytes;
    uint64_t twin = nth_birth(u->born[!c], u->nborn[!c], bytes, ord);
    *pred = twin ? twin : key;
    if (grow(u, (void **)&u->born[c], u->nborn[c], &u->capborn[c], sizeof *u->born[c]) == 0)
        u->born[c][u->nborn[c]++] = (struct nextuse_birth){key, bytes};
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
    u->log[c][u->n[c]++] =
        (struct nextuse_entry){.key = key, .at = u->pos, .next = NONE32, .end = 1};
}

static size_t hash(uint64_t key, size_t nslot)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (nslot - 1);
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
