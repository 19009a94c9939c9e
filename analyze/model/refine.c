/* Category inference by lifetime. See refine.h. */
#include "refine.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <memshim/trace_format.h>

struct key_votes {
    uint32_t site;
    uint8_t used;
    int8_t decided; /* category, or -1 */
    uint64_t size;
    uint64_t bytes[MST_CATEGORY_MAX]; /* bytes voting for each category */
    int64_t until_step;               /* REFINE_UNTIL_STEP lifetimes: latest death step */
    uint64_t until_bytes;             /* ... and the bytes that died in it */
};

struct refine {
    struct key_votes *slots;
    uint64_t cap, count, inferred;
};

static int contains(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0)
            return 1;
    return 0;
}

enum refine_phase refine_phase_class(const char *name)
{
    if (!name || !*name)
        return REFINE_PHASE_OTHER;
    if (contains(name, "backward") || contains(name, "bwd"))
        return REFINE_PHASE_BACKWARD;
    if (contains(name, "forward") || contains(name, "fwd"))
        return REFINE_PHASE_FORWARD;
    if (contains(name, "optim") || contains(name, "adam") || contains(name, "sgd"))
        return REFINE_PHASE_OPTIMIZER;
    return REFINE_PHASE_OTHER;
}

/* Born and dead in one step, across a phase change: what forward made and backward did not
 * consume, and what backward made for itself, served the step alone; what the step made
 * before its phases and backward (or the step's end) released is the step's input. */
static int refine_within_step(const struct refine_life *l)
{
    if (l->birth_phase == REFINE_PHASE_FORWARD && l->death_phase != REFINE_PHASE_BACKWARD)
        return MST_CAT_TEMPORARY;
    if (l->birth_phase == REFINE_PHASE_BACKWARD && l->death_phase == REFINE_PHASE_BACKWARD)
        return MST_CAT_TEMPORARY;
    if (l->birth_phase == REFINE_PHASE_OTHER &&
        (l->death_phase == REFINE_PHASE_BACKWARD || l->death_phase == REFINE_PHASE_OTHER))
        return MST_CAT_INPUT;
    return MST_CAT_UNKNOWN;
}

int refine_classify(const struct refine_life *l)
{
    if (l->birth_step < 0 && (l->alive_at_exit || l->death_step >= 0))
        return REFINE_UNTIL_STEP;
    if (l->alive_at_exit || l->death_step > l->birth_step) {
        if (l->birth_phase == REFINE_PHASE_OPTIMIZER)
            return MST_CAT_OPTIMIZER_STATE;
    }
    if (l->alive_at_exit)
        return REFINE_NO_EVIDENCE;
    if (l->birth_phase == REFINE_PHASE_FORWARD && l->death_phase == REFINE_PHASE_BACKWARD)
        return MST_CAT_ACTIVATION;
    if (l->birth_phase == REFINE_PHASE_BACKWARD && l->optimizer_since_birth)
        return MST_CAT_GRADIENT;
    if (l->birth_seq == l->death_seq && l->birth_step == l->death_step)
        return MST_CAT_TEMPORARY;
    if (l->birth_step < 0 || l->birth_step != l->death_step)
        return MST_CAT_UNKNOWN;
    return refine_within_step(l);
}

static uint64_t hash(uint32_t site, uint64_t size)
{
    uint64_t h = (size ^ ((uint64_t)site << 40)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static struct key_votes *find(const struct refine *r, uint32_t site, uint64_t size)
{
    if (!r->cap)
        return NULL;
    for (uint64_t i = hash(site, size) & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
        struct key_votes *k = &r->slots[i];
        if (!k->used || (k->site == site && k->size == size))
            return k;
    }
}

static int grow(struct refine *r)
{
    uint64_t cap = r->cap ? r->cap * 2 : 1024;
    struct refine old = *r;
    r->slots = calloc(cap, sizeof *r->slots);
    if (!r->slots) {
        *r = old;
        return -1;
    }
    r->cap = cap;
    for (uint64_t i = 0; i < old.cap; i++)
        if (old.slots[i].used)
            *find(r, old.slots[i].site, old.slots[i].size) = old.slots[i];
    free(old.slots);
    return 0;
}

/* Keeps the bytes that died latest; those that died earlier did not live to the end. */
static void note_until_step(struct key_votes *k, int64_t death_step, uint64_t w)
{
    if (death_step > k->until_step) {
        k->bytes[MST_CAT_UNKNOWN] += k->until_bytes;
        k->until_step = death_step;
        k->until_bytes = w;
    } else if (death_step == k->until_step) {
        k->until_bytes += w;
    } else {
        k->bytes[MST_CAT_UNKNOWN] += w;
    }
}

struct refine *refine_new(void)
{
    return calloc(1, sizeof(struct refine));
}

void refine_free(struct refine *r)
{
    if (r)
        free(r->slots);
    free(r);
}

int refine_observe(struct refine *r, const struct refine_life *l)
{
    if ((r->count + 1) * 2 > r->cap && grow(r) != 0)
        return -1;
    struct key_votes *k = find(r, l->site, l->size);
    if (!k->used) {
        k->used = 1;
        k->site = l->site;
        k->size = l->size;
        k->decided = -1;
        k->until_step = -1;
        r->count++;
    }
    int c = refine_classify(l);
    /* weight by size, and at least 1 so zero-byte allocations still vote */
    uint64_t w = l->size ? l->size : 1;
    if (c == REFINE_UNTIL_STEP)
        note_until_step(k, l->alive_at_exit ? INT64_MAX : l->death_step, w);
    else if (c != REFINE_NO_EVIDENCE)
        k->bytes[c] += w;
    return 0;
}

void refine_decide(struct refine *r, int64_t last_step)
{
    r->inferred = 0;
    for (uint64_t i = 0; i < r->cap; i++) {
        struct key_votes *k = &r->slots[i];
        if (!k->used)
            continue;
        int lived_on = last_step >= 0 && k->until_step >= last_step;
        k->bytes[lived_on ? MST_CAT_PARAMETER : MST_CAT_UNKNOWN] += k->until_bytes;
        k->until_bytes = 0;
        int best = MST_CAT_UNKNOWN;
        for (int c = 1; c < MST_CATEGORY_MAX; c++)
            if (k->bytes[c] > k->bytes[best])
                best = c;
        k->decided = best == MST_CAT_UNKNOWN ? -1 : best;
        r->inferred += k->decided >= 0;
    }
}

int refine_lookup(const struct refine *r, uint32_t site, uint64_t size)
{
    const struct key_votes *k = find(r, site, size);
    return k && k->used ? k->decided : -1;
}

uint64_t refine_inferred_keys(const struct refine *r)
{
    return r->inferred;
}
