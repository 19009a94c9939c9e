/* access_repeat: per-thread tables of operation shapes; see access_repeat.h. */
#include "access_repeat.h"

#include "arena.h"
#include "compat.h"
#include "options.h"
#include "trace.h"

#include <stdatomic.h>
#include <string.h>

/* Set-associative: the shapes of a training step (a hundred or two) would collide in a table
 * indexed directly, and two shapes taking turns in one slot are both written in full. */
#define REPEAT_SET_BITS 6
#define REPEAT_WAY_BITS 3
#define REPEAT_BITS     (REPEAT_SET_BITS + REPEAT_WAY_BITS)
#define REPEAT_WAYS     (1u << REPEAT_WAY_BITS)
#define REPEAT_SLOTS    (1u << REPEAT_BITS)
/* ACCESS records of a shape this table keeps (the format allows more). */
#define REPEAT_MAX_ACCESS 8
/* Threads given a table: a program that launches from ever new threads stops compacting there
 * rather than taking memory without bound (tables are never freed). */
#define REPEAT_MAX_TABLES 64u

_Static_assert(REPEAT_MAX_ACCESS <= MST_SHAPE_MAX_ACCESS, "the reader keeps at most that many");

#define REPEAT_FRAME (sizeof(struct mst_record_header) + sizeof(struct mst_rec_access))
/* The shape: the OP record from its stream on (all but its time), then the ACCESS records. */
#define REPEAT_KEY_OFF offsetof(struct mst_rec_op, stream)
#define REPEAT_KEY_MAX                                                                             \
    (sizeof(struct mst_rec_op) - REPEAT_KEY_OFF + REPEAT_MAX_ACCESS * REPEAT_FRAME)

struct repeat_slot {
    uint32_t len;   /* bytes of key; 0: empty */
    uint32_t shape; /* the id its OP_DEFINE gave it */
    unsigned char key[REPEAT_KEY_MAX];
};

/* What a repeat by name (access_repeat_again) reads and writes of a slot, apart from the slots
 * in a dense array: a step's launches come back a step later, when the framework has pushed a
 * slot's lines out of the core's caches, while an array of 8 KiB touched by every launch stays
 * close. */
struct repeat_state {
    uint64_t last_ns; /* time of its last OP, which the next repeat counts from */
    uint32_t epoch;   /* the trace it was defined in (trace_epoch_now) */
    uint32_t gen;     /* definitions made in this slot: an access_shape names one of them */
};

struct repeat_table {
    struct repeat_slot slot[REPEAT_SLOTS];   /* set s holds slots s * REPEAT_WAYS ... */
    struct repeat_state state[REPEAT_SLOTS]; /* of slot[i] */
    /* Of slot[i], its key's hash (most mismatches end here), a set's in one line: a slot is
     * lines of its own, cold a step later, and reading each way's would cost a miss a way. */
    _Alignas(32) uint32_t tag[REPEAT_SLOTS];
    uint8_t next[REPEAT_SLOTS / REPEAT_WAYS]; /* per set, the way to replace next */
};

static int repeat_on;
static _Atomic unsigned repeat_tables;
static MS_TLS struct repeat_table *repeat_tls;
static MS_TLS uint8_t repeat_tls_denied; /* no table for this thread: over the limit, or OOM */

void access_repeat_init(void)
{
    repeat_on = options_uint(OPT_TRACE_COMPACT) == OPT_ON;
}

static struct repeat_table *repeat_table(void)
{
    if (ms_likely(repeat_tls != NULL) || repeat_tls_denied)
        return repeat_tls;
    /* aligned: a set's tags in one line */
    repeat_tls = arena_alloc_counted(&repeat_tables, REPEAT_MAX_TABLES, sizeof *repeat_tls,
                                     _Alignof(struct repeat_table));
    repeat_tls_denied = repeat_tls == NULL;
    return repeat_tls;
}

/* The hash of a shape, from the words that tell operations apart (entry point, stream, the
 * allocations touched): its top bits choose the set. Equality is decided by the whole key. */
static uint64_t repeat_hash(const struct access_repeat_group *g, size_t naccess)
{
    const unsigned char *acc = (const unsigned char *)(g + 1) + sizeof(struct mst_record_header);
    uint64_t h = ((uint64_t)g->op.name_id << 8 | g->op.kind) ^ g->op.stream ^ g->op.m;
    for (size_t i = 0; i < naccess; i++) {
        uint64_t addr;
        memcpy(&addr, acc + i * REPEAT_FRAME, sizeof addr);
        h = (h ^ addr) * 0x9e3779b97f4a7c15ull;
    }
    return h * 0x9e3779b97f4a7c15ull;
}

static void repeat_full(struct access_repeat_group *g, size_t naccess)
{
    trace_record_group(&g->op_h, sizeof g->op_h + sizeof g->op + naccess * REPEAT_FRAME);
}

/* Each form copied at its own fixed length: one store or two, where a copy of either length
 * would be a loop. */
static void repeat_emit(uint32_t shape, uint64_t delta)
{
    struct trace_slot slot;
    void *p;
    if (ms_likely(delta <= UINT32_MAX)) {
        struct mst_rec_op_repeat rec = {.shape = shape, .delta_ns = (uint32_t)delta};
        if (!(p = trace_reserve(MST_REC_OP_REPEAT, sizeof rec, &slot)))
            return;
        memcpy(p, &rec, sizeof rec);
    } else {
        struct mst_rec_op_repeat_long rec = {.op_repeat.shape = shape, .delta_ns = delta};
        if (!(p = trace_reserve(MST_REC_OP_REPEAT, sizeof rec, &slot)))
            return;
        memcpy(p, &rec, sizeof rec);
    }
    trace_commit(&slot);
}

/* The slot holding this shape, or NULL. */
static struct repeat_slot *repeat_find(struct repeat_table *t, uint32_t set, uint32_t tag,
                                       uint32_t epoch, const unsigned char *key, uint32_t len)
{
    for (uint32_t i = set * REPEAT_WAYS; i < (set + 1) * REPEAT_WAYS; i++)
        if (t->tag[i] == tag && t->slot[i].len == len && t->state[i].epoch == epoch &&
            memcmp(t->slot[i].key, key, len) == 0)
            return &t->slot[i];
    return NULL;
}

/* The shape the slot holds now, for access_repeat_again. */
static void repeat_name(const struct repeat_table *t, const struct repeat_slot *s,
                        struct access_shape *out)
{
    if (out)
        *out = (struct access_shape){
            .slot = (uint32_t)(s - t->slot) + 1, .gen = t->state[s - t->slot].gen, .id = s->shape};
}

void access_repeat_write(struct access_repeat_group *g, size_t naccess, struct access_shape *out)
{
    struct repeat_table *t = repeat_on && naccess <= REPEAT_MAX_ACCESS ? repeat_table() : NULL;
    if (out)
        out->slot = 0;
    if (!t || g->op.thread >= MST_SHAPE_ID_MAX >> REPEAT_BITS) {
        repeat_full(g, naccess);
        return;
    }
    uint64_t h = repeat_hash(g, naccess);
    uint32_t set = (uint32_t)(h >> (64 - REPEAT_SET_BITS)), tag = (uint32_t)h;
    const unsigned char *key = (const unsigned char *)&g->op + REPEAT_KEY_OFF;
    uint32_t len = (uint32_t)(sizeof g->op - REPEAT_KEY_OFF + naccess * REPEAT_FRAME);
    uint32_t epoch = trace_epoch_now();
    uint64_t now = g->op.time_ns;
    struct repeat_slot *s = repeat_find(t, set, tag, epoch, key, len);
    struct repeat_state *st = s ? &t->state[s - t->slot] : NULL;
    if (s && now >= st->last_ns) {
        repeat_emit(s->shape, now - st->last_ns);
        st->last_ns = now;
        repeat_name(t, s, out);
        return;
    }
    if (!s) {
        s = &t->slot[set * REPEAT_WAYS + t->next[set]++ % REPEAT_WAYS];
        st = &t->state[s - t->slot];
    }
    g->define_h = (struct mst_record_header){.kind = MST_REC_OP_DEFINE, .length = sizeof g->define};
    g->define =
        (struct mst_rec_op_define){.shape = g->op.thread << REPEAT_BITS | (uint32_t)(s - t->slot)};
    trace_record_group(&g->define_h, sizeof g->define_h + sizeof g->define + sizeof g->op_h +
                                         sizeof g->op + naccess * REPEAT_FRAME);
    memcpy(s->key, key, len);
    s->len = len;
    t->tag[s - t->slot] = tag;
    s->shape = g->define.shape;
    st->epoch = epoch;
    st->gen++;
    st->last_ns = now;
    repeat_name(t, s, out);
}

int access_repeat_again(const struct access_shape *shape, uint64_t now)
{
    struct repeat_table *t = repeat_tls;
    if (!t || shape->slot == 0 || shape->slot > REPEAT_SLOTS)
        return 0;
    struct repeat_state *st = &t->state[shape->slot - 1];
    if (st->gen != shape->gen || st->epoch != trace_epoch_now() || now < st->last_ns)
        return 0;
    repeat_emit(shape->id, now - st->last_ns);
    st->last_ns = now;
    return 1;
}

void access_repeat_prefetch(uint32_t slot)
{
    struct repeat_table *t = repeat_tls;
    if (t && slot && slot <= REPEAT_SLOTS)
        __builtin_prefetch(&t->state[slot - 1]);
    MS_PREFETCH_ONLY();
}
