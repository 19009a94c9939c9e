/* `whatif`: replay a trace's allocations and accesses under hypothetical ceilings, by policy:
 * MIN, LRU and the shim's own victim choice (spill, auto). See whatif.h and docs/analyzer.md
 * ("memshim-analyze whatif") for the cost model; the trace is loaded by whatif_load.c. */
#include "whatif.h"

#include <stdlib.h>
#include <string.h>

#include "buddy.h"
#include "costs_parse.h"
#include "nextuse.h"
#include "victim.h"
#include "whatif_trace.h"

/* ---- replay -------------------------------------------------------------------------------- */

/* What every policy's replay shares: the trace, the ceiling, bytes resident per buffer. */
struct sim {
    const struct whatif_trace *t;
    struct whatif_result *out;
    uint64_t limit, resident;
    uint64_t *res; /* bytes of each buffer on the device */
    int device;
};

static int mine(const struct sim *s, uint32_t b)
{
    return s->t->buf[b].device == s->device;
}

static int movable(const struct sim *s, uint32_t b)
{
    return s->t->buf[b].first_use != NONE;
}

static uint64_t shortfall(const struct sim *s, uint64_t incoming)
{
    uint64_t want = s->resident + incoming;
    return want > s->limit ? want - s->limit : 0;
}

/* The one replay loop: each policy sees the trace's events in order, through these, with the
 * allocations and frees of other devices left out (an op's buffers are filtered by the policy,
 * which still sees them all). */
struct policy {
    void (*alloc)(void *p, uint32_t b, uint32_t slot);
    void (*free)(void *p, uint32_t b);
    void (*op)(void *p, const struct op *o, uint32_t slot);
};

static void replay(const struct sim *s, const struct policy *pol, void *p)
{
    const struct whatif_trace *t = s->t;
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        if (ev_kind(v) == EV_OP)
            pol->op(p, &t->op[v->id], ev_slot(v));
        else if (!mine(s, v->id))
            continue;
        else if (ev_kind(v) == EV_ALLOC)
            pol->alloc(p, v->id, ev_slot(v));
        else
            pol->free(p, v->id);
    }
}

/* MIN and LRU bring a buffer back whole at its next use, after making room for all the bytes an
 * op misses at once; they differ only in the order of their victims, behind these. */
struct whole_ops {
    void (*make_room)(void *p, uint64_t need, uint32_t slot);
    void (*track)(void *p, uint32_t b, uint32_t next_use); /* now a victim candidate */
    void (*untrack)(void *p, uint32_t b);                  /* in use, or freed: not one */
    void (*loaded)(void *p, uint32_t u, uint64_t miss, uint32_t slot); /* miss bytes back */
};

struct whole {
    struct sim *s; /* the policy's own */
    const struct whole_ops *ops;
    void *p;
};

static void whole_alloc(void *w_, uint32_t b, uint32_t slot)
{
    struct whole *w = w_;
    const struct buf *x = &w->s->t->buf[b];
    w->ops->make_room(w->p, shortfall(w->s, x->size), slot);
    w->s->res[b] = x->size;
    w->s->resident += x->size;
    if (movable(w->s, b))
        w->ops->track(w->p, b, x->first_use);
}

static void whole_free(void *w_, uint32_t b)
{
    struct whole *w = w_;
    w->s->resident -= w->s->res[b];
    w->s->res[b] = 0;
    w->ops->untrack(w->p, b);
}

static void whole_op(void *w_, const struct op *o, uint32_t slot)
{
    struct whole *w = w_;
    const struct whatif_trace *t = w->s->t;
    uint64_t missing = 0;
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t b = t->use[o->first + k].buf;
        if (!mine(w->s, b))
            continue;
        w->ops->untrack(w->p, b); /* in use: not a victim now */
        missing += t->buf[b].size - w->s->res[b];
    }
    w->ops->make_room(w->p, shortfall(w->s, missing), slot);
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t u = o->first + k, b = t->use[u].buf;
        if (!mine(w->s, b))
            continue;
        uint64_t miss = t->buf[b].size - w->s->res[b];
        if (miss)
            w->ops->loaded(w->p, u, miss, slot);
        w->s->res[b] = t->buf[b].size;
        w->s->resident += miss;
        w->ops->track(w->p, b, t->use[u].next);
    }
}

static const struct policy whole_policy = {whole_alloc, whole_free, whole_op};

/* -- MIN: an indexed max-heap of partly or wholly resident buffers by next-use event -- */

struct min_state {
    struct sim s;
    uint32_t *heap, *pos, *next; /* next: use index of the buffer's next use, NONE: dead */
    uint32_t n;
};

static uint64_t min_key(const struct min_state *m, uint32_t b)
{
    uint32_t u = m->next[b];
    return u == NONE ? NEVER : (uint64_t)u;
}

/* Use indices grow with time (uses are numbered in op order), so they order next uses as
 * event indices would. */
static int above(const struct min_state *m, uint32_t a, uint32_t b)
{
    uint64_t ka = min_key(m, a), kb = min_key(m, b);
    /* equal keys: the same next op, or both dead; any order is optimal, the index is stable */
    return ka != kb ? ka > kb : a > b;
}

static void heap_set(struct min_state *m, uint32_t i, uint32_t b)
{
    m->heap[i] = b;
    m->pos[b] = i;
}

static void heap_up(struct min_state *m, uint32_t i)
{
    uint32_t b = m->heap[i];
    while (i > 0 && above(m, b, m->heap[(i - 1) / 2])) {
        heap_set(m, i, m->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(m, i, b);
}

static void heap_down(struct min_state *m, uint32_t i)
{
    uint32_t b = m->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= m->n)
            break;
        if (c + 1 < m->n && above(m, m->heap[c + 1], m->heap[c]))
            c++;
        if (!above(m, m->heap[c], b))
            break;
        heap_set(m, i, m->heap[c]);
        i = c;
    }
    heap_set(m, i, b);
}

static void heap_push(struct min_state *m, uint32_t b)
{
    heap_set(m, m->n++, b);
    heap_up(m, m->n - 1);
}

static void heap_remove(struct min_state *m, uint32_t b)
{
    uint32_t i = m->pos[b];
    if (i == NONE)
        return;
    m->pos[b] = NONE;
    uint32_t last = m->heap[--m->n];
    if (i == m->n)
        return;
    heap_set(m, i, last);
    heap_up(m, i);
    heap_down(m, m->pos[last]);
}

static void min_evict(struct min_state *m, uint64_t need, struct whatif_step *st)
{
    struct sim *s = &m->s;
    while (need > 0 && m->n > 0) {
        uint32_t b = m->heap[0];
        uint64_t x = s->res[b] < need ? s->res[b] : need;
        s->res[b] -= x;
        s->resident -= x;
        need -= x;
        uint32_t u = m->next[b];
        if (u != NONE) { /* still needed: copy out now, back in at its next use */
            st->t[WHATIF_MIN].d2h += x;
            st->t[WHATIF_MIN].evictions++;
            if (s->t->use[u].flops == 0)
                st->r.moved_bytes += x;
        } /* else dead: nobody reads it again, dropping it is free */
        if (s->res[b] == 0)
            heap_remove(m, b);
    }
}

static void min_room(void *p, uint64_t need, uint32_t slot)
{
    struct min_state *m = p;
    min_evict(m, need, &m->s.out->steps[slot]);
}

static void min_track(void *p, uint32_t b, uint32_t next_use)
{
    struct min_state *m = p;
    m->next[b] = next_use;
    heap_push(m, b);
}

static void min_untrack(void *p, uint32_t b)
{
    heap_remove(p, b);
}

static void min_loaded(void *p, uint32_t u, uint64_t miss, uint32_t slot)
{
    struct min_state *m = p;
    struct whatif_step *st = &m->s.out->steps[slot];
    st->t[WHATIF_MIN].h2d += miss;
    st->t[WHATIF_MIN].loads++;
    if (m->s.t->use[u].flops) {
        st->r.flops += m->s.t->use[u].flops;
        st->r.recomputes++;
    } else {
        st->r.moved_bytes += miss;
    }
}

static const struct whole_ops min_ops = {min_room, min_track, min_untrack, min_loaded};

static void run_min(struct sim *s)
{
    const struct whatif_trace *t = s->t;
    struct min_state m = {.s = *s};
    m.heap = malloc((t->nbuf + 1) * sizeof *m.heap);
    m.pos = malloc((t->nbuf + 1) * sizeof *m.pos);
    m.next = malloc((t->nbuf + 1) * sizeof *m.next);
    if (m.heap && m.pos && m.next) {
        memset(m.pos, 0xff, (t->nbuf + 1) * sizeof *m.pos);
        struct whole w = {&m.s, &min_ops, &m};
        replay(s, &whole_policy, &w);
    }
    free(m.heap);
    free(m.pos);
    free(m.next);
}

/* -- LRU: whole buffers in a list, least recently used at the head -- */

struct lru_state {
    struct sim s;
    uint32_t *prev, *next, head, tail;
    uint8_t *in;
};

static void lru_unlink(struct lru_state *l, uint32_t b)
{
    if (!l->in[b])
        return;
    l->in[b] = 0;
    if (l->prev[b] != NONE)
        l->next[l->prev[b]] = l->next[b];
    else
        l->head = l->next[b];
    if (l->next[b] != NONE)
        l->prev[l->next[b]] = l->prev[b];
    else
        l->tail = l->prev[b];
}

static void lru_append(struct lru_state *l, uint32_t b)
{
    l->in[b] = 1;
    l->prev[b] = l->tail;
    l->next[b] = NONE;
    if (l->tail != NONE)
        l->next[l->tail] = b;
    else
        l->head = b;
    l->tail = b;
}

/* An online policy cannot know a buffer is dead: every eviction is copied out. */
static void evict_whole(struct sim *s, uint32_t b, struct whatif_traffic *tr)
{
    tr->d2h += s->res[b];
    tr->evictions++;
    s->resident -= s->res[b];
    s->res[b] = 0;
}

static void lru_room(void *p, uint64_t need, uint32_t slot)
{
    struct lru_state *l = p;
    struct whatif_traffic *tr = &l->s.out->steps[slot].t[WHATIF_LRU];
    while (need > 0 && l->head != NONE) {
        uint32_t x = l->head;
        need -= l->s.res[x] < need ? l->s.res[x] : need;
        lru_unlink(l, x);
        evict_whole(&l->s, x, tr);
    }
}

static void lru_track(void *p, uint32_t b, uint32_t next_use)
{
    (void)next_use; /* LRU does not look ahead */
    lru_append(p, b);
}

static void lru_untrack(void *p, uint32_t b)
{
    lru_unlink(p, b);
}

static void lru_loaded(void *p, uint32_t u, uint64_t miss, uint32_t slot)
{
    struct lru_state *l = p;
    (void)u;
    l->s.out->steps[slot].t[WHATIF_LRU].h2d += miss;
    l->s.out->steps[slot].t[WHATIF_LRU].loads++;
}

static const struct whole_ops lru_ops = {lru_room, lru_track, lru_untrack, lru_loaded};

static void run_lru(struct sim *s)
{
    const struct whatif_trace *t = s->t;
    struct lru_state l = {.s = *s, .head = NONE, .tail = NONE};
    l.prev = malloc((t->nbuf + 1) * sizeof *l.prev);
    l.next = malloc((t->nbuf + 1) * sizeof *l.next);
    l.in = calloc(t->nbuf + 1, 1);
    if (l.prev && l.next && l.in) {
        struct whole w = {&l.s, &lru_ops, &l};
        replay(s, &whole_policy, &w);
    }
    free(l.prev);
    free(l.next);
    free(l.in);
}

/* -- the shim's own victim_choose() over the resident set -- */

/* A chunk of small allocations (residency.c res_serve_small): the shim's own buddy system
 * (buddy.h), so that the replay sees the holes the real allocator leaves. */
struct wchunk {
    struct buddy b;    /* b.free_bits NULL: the slot is empty */
    uint64_t used;     /* bytes in live blocks */
    uint64_t last;     /* tick: its blocks' latest access, or its latest new block */
    uint32_t observed; /* live blocks some op touches (a chunk of none stays, as a buffer) */
    uint8_t away, in_use;
    uint64_t key, pred; /* its forecast (nextuse.h), as the shim's chunk range has */
};

struct shim_state {
    struct sim s;
    int dtr;                /* the auto policy: victim_choose_dtr, spill or drop */
    uint32_t *lastuse;      /* dtr: use index of the buffer's latest use, NONE before the first */
    uint8_t *dropped;       /* dtr: off the device to be recomputed, not copied */
    uint32_t *set, *idx, n; /* resident movable buffers */
    uint64_t *last, tick;
    uint8_t *in_use;
    struct victim_candidate *cand;
    uint64_t *charge;            /* bytes the shim charges for each buffer; 0: not replayed */
    uint64_t *block;             /* > 0: a buddy block of this size in a shared chunk */
    uint32_t *chunk_of, *off_of; /* a block's chunk (slot) and unit offset in it */
    uint64_t chunk;              /* bytes of one chunk */
    uint64_t unit;               /* its smallest block */
    uint32_t nwords;             /* words of one chunk's free bitmaps */
    struct wchunk *ch;           /* by slot: the address order (below) */
    size_t nch, cap_ch;
    struct nextuse nu;    /* the shim's forecasts: step boundaries, uses, ranges born */
    uint64_t *key, *pred; /* of each own range */
    uint32_t step_slot;   /* the step slot the forecasts have reached */
};

static int chunk_init(struct shim_state *h, struct wchunk *c)
{
    uint64_t *bits = malloc(h->nwords * sizeof *bits);
    if (!bits)
        return -1;
    buddy_init(&c->b, bits, (uint32_t)(h->chunk / h->unit));
    c->used = 0;
    c->observed = 0;
    c->away = c->in_use = 0;
    return 0;
}

static unsigned chunk_order(const struct shim_state *h, uint64_t bytes)
{
    unsigned k = 0;
    while ((h->unit << k) < bytes)
        k++;
    return k;
}

/* A free block of `bytes` (unit << k) taken from c: its unit offset, or NONE when none fits. */
static uint32_t chunk_take(struct shim_state *h, struct wchunk *c, uint64_t bytes)
{
    int64_t at = buddy_take(&c->b, chunk_order(h, bytes));
    if (at < 0)
        return NONE;
    c->used += bytes;
    return (uint32_t)at;
}

static void chunk_give(struct shim_state *h, struct wchunk *c, uint32_t off, uint64_t bytes)
{
    c->used -= bytes;
    buddy_give(&c->b, off, chunk_order(h, bytes));
}

static void set_add(struct shim_state *h, uint32_t b)
{
    if (h->idx[b] != NONE)
        return;
    h->idx[b] = h->n;
    h->set[h->n++] = b;
}

static void set_del(struct shim_state *h, uint32_t b)
{
    uint32_t i = h->idx[b];
    if (i == NONE)
        return;
    h->idx[b] = NONE;
    uint32_t last = h->set[--h->n];
    if (i != h->n) {
        h->set[i] = last;
        h->idx[last] = i;
    }
}

/* As the shim does at a shortfall (residency.c, res_make_room_locked): every resident range it
 * may spill is a candidate, the current op's marked in use; a chunk is one candidate (its
 * size, its blocks' latest access, in use while any block is). When victim_choose cannot cover
 * the need the shim moves nothing and the call fails: counted, and the replay goes on over the
 * ceiling as if it had fit. */
/* residency.c res_make_room: the victims' forecast next uses (0: none yet). */
static uint64_t forecast(const struct shim_state *h, uint64_t key, uint64_t pred)
{
    uint64_t f = nextuse_predict(&h->nu, key, pred, h->tick);
    return f == NEXTUSE_UNKNOWN ? 0 : f;
}

/* Step boundaries up to the event's slot (residency_step, called by track_step): frees tick
 * nothing, so catching up at the next allocation or op starts the step at the same tick. */
static void shim_steps(struct shim_state *h, uint32_t slot)
{
    for (; h->step_slot < slot; h->step_slot++)
        nextuse_step(&h->nu);
}

/* The auto policy's price of evicting b now: spilling it (out and back at the link rates), or,
 * when its next use could replay the GEMM that wrote it, recomputing it, whichever is less. */
static struct victim_candidate dtr_candidate(const struct shim_state *h, uint32_t b)
{
    const struct whatif_trace *t = h->s.t;
    const struct whatif_info *in = &t->info;
    uint32_t nu = h->lastuse[b] == NONE ? t->buf[b].first_use : t->use[h->lastuse[b]].next;
    uint64_t flops = nu != NONE ? t->use[nu].flops : 0;
    struct victim_candidate c = {.id = b,
                                 .bytes = h->s.res[b],
                                 .last_access = h->last[b],
                                 .in_use = h->in_use[b],
                                 .next_use = forecast(h, h->key[b], h->pred[b]),
                                 .action = VICTIM_SPILL,
                                 .cost = costs_spill_ns(h->s.res[b], in->auto_d2h, in->auto_h2d)};
    uint64_t rec = flops ? costs_ns_at(flops, in->auto_gemm) : COSTS_UNKNOWN_NS;
    if (rec < c.cost) {
        c.cost = rec;
        c.action = VICTIM_RECOMPUTE;
    }
    return c;
}

/* Candidate ids: a buffer's index, or past every buffer, nbuf + 1 + a chunk's slot. */
static uint64_t chunk_id(const struct shim_state *h, uint32_t slot)
{
    return (uint64_t)h->s.t->nbuf + 1 + slot;
}

/* 0 when `need` bytes are free (victims moved), -1 when no choice of victims frees them. */
static int shim_make_room(struct shim_state *h, uint64_t need, struct whatif_traffic *tr,
                          struct whatif_auto *au)
{
    if (need == 0)
        return 0;
    size_t n = 0;
    for (uint32_t i = 0; i < h->n; i++) {
        uint32_t b = h->set[i];
        /* id: the buffer index; ticks are unique, so the id tie-break is never reached */
        h->cand[n++] =
            h->dtr ? dtr_candidate(h, b)
                   : (struct victim_candidate){.id = b,
                                               .bytes = h->s.res[b],
                                               .last_access = h->last[b],
                                               .in_use = h->in_use[b],
                                               .next_use = forecast(h, h->key[b], h->pred[b])};
    }
    const struct whatif_info *in = &h->s.t->info;
    for (uint32_t i = 0; i < h->nch; i++) {
        const struct wchunk *c = &h->ch[i];
        if (!c->b.free_bits || c->away || !c->observed)
            continue;
        /* no lineage: a chunk is always spilled (residency.c res_action) */
        h->cand[n++] = (struct victim_candidate){
            .id = chunk_id(h, i),
            .bytes = h->chunk,
            .last_access = c->last,
            .in_use = c->in_use,
            .action = VICTIM_SPILL,
            .cost = h->dtr ? costs_spill_ns(h->chunk, in->auto_d2h, in->auto_h2d) : 0,
            .next_use = forecast(h, c->key, c->pred)};
    }
    uint64_t chosen = 0;
    size_t k = h->dtr                  ? victim_choose_dtr(h->cand, n, need, h->tick, &chosen)
               : nextuse_ready(&h->nu) ? victim_choose_next(h->cand, n, need, &chosen)
                                       : victim_choose(h->cand, n, need, &chosen);
    if (chosen < need)
        return -1;
    for (size_t i = 0; i < k; i++) {
        uint64_t id = h->cand[i].id;
        if (id > h->s.t->nbuf) { /* a chunk: out whole */
            h->ch[id - h->s.t->nbuf - 1].away = 1;
            h->s.resident -= h->chunk;
            tr->d2h += h->chunk;
            tr->evictions++;
            continue;
        }
        uint32_t b = (uint32_t)id;
        set_del(h, b);
        if (h->dtr && h->cand[i].action == VICTIM_RECOMPUTE) {
            au->drops++;
            au->dropped_bytes += h->s.res[b];
            h->s.resident -= h->s.res[b];
            h->s.res[b] = 0;
            h->dropped[b] = 1;
        } else {
            evict_whole(&h->s, b, tr);
        }
    }
    return 0;
}

/* How residency.c charges an allocation under MEMSHIM_POLICY=spill. It serves cudaMalloc and
 * cuMemAlloc, and their stream-ordered forms (except on a capturing stream, which the trace
 * does not say): below MEMSHIM_SPILL_MIN a buddy block (the power of two of at least 256 bytes
 * and a chunk / BUDDY_MAX_BLOCKS: buddy_class_bytes) in a shared chunk that moves
 * whole, else (or when the block would exceed half a chunk) its own range rounded up to the
 * granularity. Other allocations pass through at their recorded size. */
static int served(const struct buf *x)
{
    return x->kind == MST_KIND_CUDA_MALLOC || x->kind == MST_KIND_CU_MEM_ALLOC ||
           x->kind == MST_KIND_CUDA_MALLOC_ASYNC || x->kind == MST_KIND_CU_MEM_ALLOC_ASYNC ||
           x->kind == MST_KIND_SHIM_VMM;
}

void whatif_shim_charge(const struct whatif_trace *t, uint32_t b, uint64_t chunk, uint64_t *charge,
                        uint64_t *block)
{
    const struct buf *x = &t->buf[b];
    *block = 0;
    if (!served(x)) {
        *charge = x->size;
        return;
    }
    if (x->requested < t->spill_min) {
        /* a zero-byte request is charged the smallest block */
        uint64_t c = buddy_class_bytes(x->requested ? x->requested : 1, chunk);
        if (c) {
            *charge = *block = c;
            return;
        }
    }
    uint64_t g = t->granule;
    *charge = (x->requested + g - 1) / g * g;
}

/* residency.c chunk_bytes: MEMSHIM_SPILL_MIN rounded to the granularity, then to a power of two
 * (the shim only runs on a power-of-two granularity; another --granule gets the power of two
 * above). */
uint64_t whatif_chunk_bytes(const struct whatif_trace *t)
{
    uint64_t g = t->granule, c = t->spill_min ? (t->spill_min + g - 1) / g * g : g, chunk;
    for (chunk = 1; (chunk < g || chunk < c) && chunk <= UINT64_MAX / 2;)
        chunk <<= 1;
    return chunk;
}

static uint64_t whole_chunks(uint64_t bytes, uint64_t chunk)
{
    return (bytes + chunk - 1) / chunk * chunk;
}

/* The smallest ceiling under which the shim can serve the trace, as whatif_load's smallest
 * workable ceiling but at the shim's charges: an own range counts its granules and the blocks
 * of one moment count the whole chunks they need at least (however they are placed). What the
 * shim does not serve, and what no op ever touches, stays on the device. A range is mapped in
 * whole granules, so below this no placement of the recorded requests works. */
void whatif_shim_bound(struct whatif_trace *t)
{
    struct whatif_info *in = &t->info;
    uint64_t chunk = whatif_chunk_bytes(t), pinned = 0, pinned_blocks = 0;
    in->shim_min_ceiling = in->shim_min_ceiling_op = 0;
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        uint64_t charge, block, own = 0, blocks = 0, seq = 0;
        if (ev_kind(v) == EV_OP) {
            const struct op *o = &t->op[v->id];
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                if (t->buf[b].device != in->device || !served(&t->buf[b]))
                    continue; /* not served: pinned already */
                whatif_shim_charge(t, b, chunk, &charge, &block);
                own += block ? 0 : charge;
                blocks += block;
            }
            seq = o->seq;
        } else {
            const struct buf *x = &t->buf[v->id];
            if (x->device != in->device)
                continue;
            whatif_shim_charge(t, v->id, chunk, &charge, &block);
            int stays = !served(x) || x->first_use == NONE;
            uint64_t *to = block ? &pinned_blocks : &pinned;
            if (ev_kind(v) == EV_FREE) {
                *to -= stays ? charge : 0;
                continue;
            }
            if (stays)
                *to += charge;
            else if (block)
                blocks = block;
            else
                own = charge;
        }
        uint64_t need = pinned + own + whole_chunks(pinned_blocks + blocks, chunk);
        if (need > in->shim_min_ceiling) {
            in->shim_min_ceiling = need;
            in->shim_min_ceiling_op = seq;
        }
    }
}

/* residency.c res_serve_small: the block goes into the first chunk, in address order, that is
 * on the device and has the block free (never into one that is away), else into a new chunk,
 * which takes the lowest free slot. Slots stand for addresses: the driver hands out the lowest
 * free range that fits (simcuda does, first fit), and all chunks are one size, so a new chunk
 * takes the place of the lowest one freed (an own range that took the hole meanwhile is not
 * modelled). The shim's ticket has already reserved the block's bytes (and made room for them);
 * a new chunk makes room for the rest. */
static void shim_place_block(struct shim_state *h, uint32_t b, struct whatif_traffic *tr,
                             struct whatif_auto *au)
{
    uint64_t bytes = h->block[b];
    uint32_t free_slot = NONE;
    for (uint32_t i = 0; i < h->nch; i++) {
        struct wchunk *c = &h->ch[i];
        if (!c->b.free_bits) {
            free_slot = free_slot == NONE ? i : free_slot;
            continue;
        }
        if (c->away || h->chunk - c->used < bytes)
            continue;
        uint32_t off = chunk_take(h, c, bytes);
        if (off == NONE)
            continue;
        h->s.resident -= bytes; /* part of the chunk's reservation all along */
        h->chunk_of[b] = i;
        h->off_of[b] = off;
        c->last = ++h->tick;
        c->observed += movable(&h->s, b);
        return;
    }
    if (shim_make_room(h, shortfall(&h->s, h->chunk - bytes), tr, au) < 0)
        tr->failures++;
    if (free_slot == NONE) {
        if (PUSH(h, ch, nch, cap_ch) != 0) {
            h->chunk_of[b] = NONE;
            return;
        }
        free_slot = (uint32_t)h->nch++;
        h->ch[free_slot].b.free_bits = NULL;
    }
    struct wchunk *c = &h->ch[free_slot];
    if (chunk_init(h, c) != 0) {
        h->chunk_of[b] = NONE;
        return;
    }
    h->s.resident += h->chunk - bytes;
    c->last = ++h->tick;
    c->key = nextuse_born(&h->nu, h->chunk, &c->pred);
    h->chunk_of[b] = free_slot;
    h->off_of[b] = chunk_take(h, c, bytes);
    c->observed += movable(&h->s, b);
}

/* residency_free of a block: its bytes stay in the chunk's charge; the chunk's last block frees
 * the chunk, on the device, or on the host when it is away (nothing to bring back). */
static void shim_free_block(struct shim_state *h, uint32_t b)
{
    uint32_t slot = h->chunk_of[b];
    if (slot == NONE)
        return;
    struct wchunk *c = &h->ch[slot];
    chunk_give(h, c, h->off_of[b], h->block[b]);
    c->observed -= movable(&h->s, b);
    h->chunk_of[b] = NONE;
    if (c->used > 0)
        return;
    if (!c->away)
        h->s.resident -= h->chunk;
    nextuse_end(&h->nu, c->key);
    free(c->b.free_bits);
    c->b.free_bits = NULL;
}

/* dtr 0: the `shim` policy (victim_choose, spill only); 1: `auto`. */
/* The traffic of the step slot: the auto policy's own, or the shim column's. */
static struct whatif_traffic *shim_traffic(struct shim_state *h, uint32_t slot,
                                           struct whatif_auto **au)
{
    *au = &h->s.out->steps[slot].a;
    return h->dtr ? &(*au)->t : &h->s.out->steps[slot].t[WHATIF_SHIM];
}

static void shim_alloc(void *p, uint32_t b, uint32_t slot)
{
    struct shim_state *h = p;
    const struct whatif_trace *t = h->s.t;
    struct whatif_auto *au;
    struct whatif_traffic *tr = shim_traffic(h, slot, &au);
    shim_steps(h, slot);
    whatif_shim_charge(t, b, h->chunk, &h->charge[b], &h->block[b]);
    if (shim_make_room(h, shortfall(&h->s, h->charge[b]), tr, au) < 0)
        tr->failures++;
    h->s.resident += h->charge[b];
    if (h->block[b]) {
        shim_place_block(h, b, tr, au);
        return;
    }
    h->s.res[b] = h->charge[b];
    h->last[b] = ++h->tick;
    if (served(&t->buf[b]))
        h->key[b] = nextuse_born(&h->nu, h->charge[b], &h->pred[b]);
    if (movable(&h->s, b) && served(&t->buf[b]))
        set_add(h, b);
}

static void shim_free(void *p, uint32_t b)
{
    struct shim_state *h = p;
    if (h->block[b]) {
        shim_free_block(h, b);
        return;
    }
    h->s.resident -= h->s.res[b];
    h->s.res[b] = 0;
    h->dropped[b] = 0;
    set_del(h, b);
    if (served(&h->s.t->buf[b]))
        nextuse_end(&h->nu, h->key[b]);
}

/* A range an op needs back and has no room for: used where it is, in host memory (1: nothing
 * to load), or with host use off an out-of-memory failure, after which the replay goes on and
 * loads it anyway (0). */
static int shim_host_use(struct shim_state *h, struct whatif_traffic *tr)
{
    if (h->s.t->info.no_host_use) {
        tr->failures++;
        return 0;
    }
    tr->host_uses++;
    return 1;
}

static void shim_op(void *p, const struct op *o, uint32_t slot)
{
    struct shim_state *h = p;
    const struct whatif_trace *t = h->s.t;
    struct whatif_auto *au;
    struct whatif_traffic *tr = shim_traffic(h, slot, &au);
    shim_steps(h, slot);
    /* residency_prepare: tick and mark the op's ranges (a chunk once, at its first
     * block), then restore them one by one, each making its own room */
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t b = t->use[o->first + k].buf;
        if (!mine(&h->s, b))
            continue;
        if (h->block[b]) {
            struct wchunk *ck = h->chunk_of[b] != NONE ? &h->ch[h->chunk_of[b]] : NULL;
            if (ck && !ck->in_use) {
                ck->in_use = 1;
                ck->last = ++h->tick;
                nextuse_touch(&h->nu, ck->key);
            }
            continue;
        }
        h->in_use[b] = 1;
        h->last[b] = ++h->tick;
        nextuse_touch(&h->nu, h->key[b]);
    }
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t u = o->first + k, b = t->use[u].buf;
        h->lastuse[b] = u;
        if (!mine(&h->s, b))
            continue;
        if (h->block[b]) { /* a block brings its whole chunk */
            struct wchunk *ck = h->chunk_of[b] != NONE ? &h->ch[h->chunk_of[b]] : NULL;
            if (!ck || !ck->away)
                continue;
            if (shim_make_room(h, shortfall(&h->s, h->chunk), tr, au) < 0 && shim_host_use(h, tr))
                continue; /* used where it is, away */
            tr->h2d += h->chunk;
            tr->loads++;
            ck->away = 0;
            h->s.resident += h->chunk;
            continue;
        }
        uint64_t miss = h->charge[b] - h->s.res[b];
        if (!miss)
            continue;
        /* in host memory, it stays where it is (a dropped one is recomputed there) */
        int host = shim_make_room(h, shortfall(&h->s, miss), tr, au) < 0 && shim_host_use(h, tr);
        if (h->dropped[b] && t->use[u].flops) {
            au->recomputes++;
            au->flops += t->use[u].flops;
        } else if (!host) {
            tr->h2d += miss;
            tr->loads++;
        }
        h->dropped[b] = 0;
        if (host)
            continue;
        h->s.res[b] = h->charge[b];
        h->s.resident += miss;
        set_add(h, b);
    }
    for (uint32_t k = 0; k < o->n; k++) {
        uint32_t b = t->use[o->first + k].buf;
        h->in_use[b] = 0;
        if (mine(&h->s, b) && h->block[b] && h->chunk_of[b] != NONE)
            h->ch[h->chunk_of[b]].in_use = 0;
    }
}

static const struct policy shim_policy = {shim_alloc, shim_free, shim_op};

static void *nu_alloc(size_t bytes)
{
    return malloc(bytes);
}

static void nu_release(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

static const struct nextuse_mem nu_mem = {nu_alloc, nu_release};

static void run_shim(struct sim *s, int dtr)
{
    const struct whatif_trace *t = s->t;
    struct shim_state h = {.s = *s, .dtr = dtr};
    size_t n = t->nbuf + 1;
    h.lastuse = malloc(n * sizeof *h.lastuse);
    h.dropped = calloc(n, 1);
    h.set = malloc(n * sizeof *h.set);
    h.idx = malloc(n * sizeof *h.idx);
    h.last = calloc(n, sizeof *h.last);
    h.in_use = calloc(n, 1);
    h.cand = malloc(2 * n * sizeof *h.cand); /* buffers, and at most one chunk per buffer */
    h.charge = calloc(n, sizeof *h.charge);
    h.block = calloc(n, sizeof *h.block);
    h.chunk_of = malloc(n * sizeof *h.chunk_of);
    h.off_of = calloc(n, sizeof *h.off_of);
    h.key = calloc(n, sizeof *h.key);
    h.pred = calloc(n, sizeof *h.pred);
    nextuse_init(&h.nu, &nu_mem);
    if (!h.key || !h.pred || !h.set || !h.idx || !h.last || !h.in_use || !h.cand || !h.charge ||
        !h.block || !h.lastuse || !h.dropped || !h.chunk_of || !h.off_of)
        goto out;
    memset(h.idx, 0xff, n * sizeof *h.idx);
    memset(h.lastuse, 0xff, n * sizeof *h.lastuse);
    memset(h.chunk_of, 0xff, n * sizeof *h.chunk_of);
    h.chunk = whatif_chunk_bytes(t);
    h.unit = buddy_unit(h.chunk);
    h.nwords = buddy_words((uint32_t)(h.chunk / h.unit));
    replay(s, &shim_policy, &h);
out:
    for (uint32_t i = 0; i < h.nch; i++)
        free(h.ch[i].b.free_bits);
    free(h.ch);
    free(h.set);
    free(h.idx);
    free(h.last);
    free(h.in_use);
    free(h.cand);
    free(h.charge);
    free(h.block);
    free(h.chunk_of);
    free(h.off_of);
    free(h.lastuse);
    free(h.dropped);
    free(h.key);
    free(h.pred);
    nextuse_fini(&h.nu);
}

static void add_traffic(struct whatif_traffic *to, const struct whatif_traffic *from)
{
    to->d2h += from->d2h;
    to->h2d += from->h2d;
    to->evictions += from->evictions;
    to->loads += from->loads;
    to->failures += from->failures;
    to->host_uses += from->host_uses;
}

int whatif_simulate(const struct whatif_trace *t, uint64_t limit, struct whatif_result *out)
{
    memset(out, 0, sizeof *out);
    out->limit = limit;
    out->fits = t->info.peak <= limit;
    out->feasible = limit >= t->info.min_ceiling;
    out->shim_feasible = limit >= t->info.shim_min_ceiling;
    out->nsteps = t->nslot;
    out->steps = calloc(t->nslot, sizeof *out->steps);
    if (!out->steps)
        return -1;
    for (size_t i = 0; i < t->nslot; i++) {
        out->steps[i].step = t->slot_step[i];
        out->steps[i].peak = t->slot_peak[i];
    }
    out->have_shim = 1;
    if (!out->feasible)
        return 0;
    uint64_t *res = calloc(t->nbuf + 1, sizeof *res);
    if (!res)
        return -1;
    struct sim s = {.t = t, .out = out, .limit = limit, .res = res, .device = t->info.device};
    if (!out->fits) {
        run_min(&s);
        memset(res, 0, (t->nbuf + 1) * sizeof *res);
        run_lru(&s);
    }
    /* even when the recorded peak fits: the shim charges chunks and granules, not the sizes
     * recorded, and may have to spill where nothing else does */
    memset(res, 0, (t->nbuf + 1) * sizeof *res);
    run_shim(&s, 0);
    memset(res, 0, (t->nbuf + 1) * sizeof *res);
    run_shim(&s, 1);
    free(res);
    for (size_t i = 0; i < out->nsteps; i++) {
        for (int p = 0; p < WHATIF_POLICIES; p++)
            add_traffic(&out->t[p], &out->steps[i].t[p]);
        out->r.flops += out->steps[i].r.flops;
        out->r.recomputes += out->steps[i].r.recomputes;
        out->r.moved_bytes += out->steps[i].r.moved_bytes;
        const struct whatif_auto *a = &out->steps[i].a;
        add_traffic(&out->a.t, &a->t);
        out->a.drops += a->drops;
        out->a.dropped_bytes += a->dropped_bytes;
        out->a.recomputes += a->recomputes;
        out->a.flops += a->flops;
    }
    return 0;
}

void whatif_result_free(struct whatif_result *r)
{
    free(r->steps);
    r->steps = NULL;
    r->nsteps = 0;
}
