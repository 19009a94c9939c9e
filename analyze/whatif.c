/* `whatif`: replay a trace's allocations and accesses under hypothetical ceilings. See whatif.h
 * and the README ("memshim-analyze whatif") for the cost model. */
#include "whatif.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../shim/costs_parse.h" /* --costs: the syntax of MEMSHIM_COSTS */
#include "cli.h"
#include "reader.h"
#include "svg.h"
#include "table.h"
#include "whatif_svg_marks.h"

#ifdef WHATIF_HAVE_VICTIM
#include "../shim/backing.h" /* the sub-allocator's block classes (constants only) */
#include "../shim/victim.h"
#endif

typedef unsigned long long ull;

#define NONE           UINT32_MAX
#define NEVER          UINT64_MAX
#define DEFAULT_LINK   50.0  /* GB/s each way */
#define DEFAULT_TFLOPS 400.0 /* dense GEMM rate when the trace measured none */
#define DEFAULT_SWEEP  16
#define MAX_SWEEP      1000
#define MAX_LIMITS     64
#define OP_MAX_TOUCHED 4096 /* distinct allocations one op can name (kernel params) */

/* ---- the loaded trace ---------------------------------------------------------------------- */

enum { EV_ALLOC, EV_FREE, EV_OP };

struct ev {
    uint32_t id;   /* buffer (ALLOC, FREE) or op index */
    uint32_t slot; /* step slot */
    uint8_t kind;
};

/* One allocation, from its ALLOC to its FREE: an address reused later is a new buffer. */
struct buf {
    uint64_t addr, size;
    uint64_t requested; /* what the program asked for (the shim's charge derives from it) */
    uint32_t first_use; /* use index of its first use, NONE if never used */
    uint32_t last_use;  /* while loading */
    uint32_t producer;  /* while loading: op whose GEMM wrote it last, NONE if none */
    uint64_t producer_flops;
    uint64_t last_write; /* while loading: event index + 1 of the last write, 0 never */
    uint8_t device;
    uint8_t kind;  /* enum mst_alloc_kind */
    uint8_t alive; /* while loading */
};

struct op {
    uint32_t first, n; /* its distinct buffers: uses[first .. first + n) */
    uint32_t ev;       /* event index */
    uint64_t seq;      /* 1-based number of its OP record in the trace */
};

/* One buffer touched by one op. */
struct use {
    uint32_t buf;
    uint32_t next;  /* use index of the buffer's next use, NONE if none before its free */
    uint64_t flops; /* reloading it here by replaying its GEMM costs this; 0 = must be moved */
    uint8_t mode;   /* MST_ACCESS_* of all the op's ranges in it */
};

struct whatif_trace {
    struct ev *ev;
    size_t nev, cap_ev;
    struct buf *buf;
    size_t nbuf, cap_buf;
    struct op *op;
    size_t nop, cap_op;
    struct use *use;
    size_t nuse, cap_use;
    int64_t *slot_step;
    size_t nslot, cap_slot;
    uint64_t *slot_peak; /* for the chosen device */
    uint64_t device_peak[256];
    uint64_t spill_min, granule;
    uint64_t measure[256][3]; /* each device's latest MEASURE record: h2d, d2h, gemm */
    uint64_t costs[3];        /* whatif_set_costs: h2d, d2h, gemm; 0 = measured or default */
    struct whatif_info info;
    char path[1024];
    char error[512];
};

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

#define PUSH(t, arr, n, cap) grow((void **)&(t)->arr, &(t)->cap, (t)->n, sizeof *(t)->arr)

/* Live addresses -> buffer: open addressing, linear probing, backward-shift deletion. */
struct addrmap {
    uint64_t *key; /* 0 = empty (address 0 is never a live allocation) */
    uint32_t *val;
    size_t cap, n;
};

static size_t slot_of(const struct addrmap *m, uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (m->cap - 1);
}

static int map_put(struct addrmap *m, uint64_t k, uint32_t v);

static int map_rehash(struct addrmap *m)
{
    struct addrmap old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->n = 0;
    m->key = calloc(m->cap, sizeof *m->key);
    m->val = calloc(m->cap, sizeof *m->val);
    if (!m->key || !m->val) {
        free(m->key);
        free(m->val);
        *m = old;
        return -1;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i])
            map_put(m, old.key[i], old.val[i]);
    free(old.key);
    free(old.val);
    return 0;
}

static int map_put(struct addrmap *m, uint64_t k, uint32_t v)
{
    if ((m->n + 1) * 2 > m->cap && map_rehash(m) != 0)
        return -1;
    size_t i = slot_of(m, k);
    while (m->key[i] && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->key[i])
        m->n++;
    m->key[i] = k;
    m->val[i] = v;
    return 0;
}

static uint32_t map_get(const struct addrmap *m, uint64_t k)
{
    if (!m->cap || !k)
        return NONE;
    for (size_t i = slot_of(m, k); m->key[i]; i = (i + 1) & (m->cap - 1))
        if (m->key[i] == k)
            return m->val[i];
    return NONE;
}

static void map_del(struct addrmap *m, uint64_t k)
{
    if (!m->cap || !k)
        return;
    size_t i = slot_of(m, k);
    while (m->key[i] && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->key[i])
        return;
    m->key[i] = 0;
    m->n--;
    /* shift back the entries that probed past the hole */
    for (size_t j = (i + 1) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m, m->key[j]);
        int between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (between)
            continue;
        m->key[i] = m->key[j];
        m->val[i] = m->val[j];
        m->key[j] = 0;
        i = j;
    }
}

/* State of the loading pass. */
struct loader {
    struct whatif_trace *t;
    struct addrmap live;
    uint64_t device_resident[256];
    /* the op being assembled from its ACCESS records */
    int in_op;
    uint32_t remaining;
    struct mst_rec_op op;
    uint32_t touched[OP_MAX_TOUCHED];
    uint8_t mode[OP_MAX_TOUCHED];
    uint32_t ntouched;
    int failed;
};

static int push_event(struct loader *L, uint8_t kind, uint32_t id)
{
    struct whatif_trace *t = L->t;
    if (PUSH(t, ev, nev, cap_ev) != 0)
        return -1;
    t->ev[t->nev++] = (struct ev){.id = id, .slot = (uint32_t)(t->nslot - 1), .kind = kind};
    return 0;
}

static void kill_buffer(struct loader *L, uint32_t b)
{
    struct buf *x = &L->t->buf[b];
    x->alive = 0;
    L->device_resident[x->device] -= x->size;
    map_del(&L->live, x->addr);
    if (push_event(L, EV_FREE, b) != 0)
        L->failed = 1;
}

static void on_alloc(struct loader *L, const struct mst_rec_alloc *a)
{
    struct whatif_trace *t = L->t;
    if ((a->flags & MST_ALLOC_F_HOST) || a->addr == 0)
        return; /* not charged against the device */
    uint32_t old = map_get(&L->live, a->addr);
    if (old != NONE)
        kill_buffer(L, old); /* a missed free: the address was given out again */
    if (PUSH(t, buf, nbuf, cap_buf) != 0 || t->nbuf >= NONE - 1) {
        L->failed = 1;
        return;
    }
    uint32_t b = (uint32_t)t->nbuf++;
    t->buf[b] = (struct buf){.addr = a->addr,
                             .size = a->size,
                             .requested = a->requested ? a->requested : a->size,
                             .first_use = NONE,
                             .last_use = NONE,
                             .producer = NONE,
                             .device = a->device,
                             .kind = a->kind,
                             .alive = 1};
    if (map_put(&L->live, a->addr, b) != 0 || push_event(L, EV_ALLOC, b) != 0) {
        L->failed = 1;
        return;
    }
    uint64_t r = L->device_resident[a->device] += a->size;
    if (r > t->device_peak[a->device])
        t->device_peak[a->device] = r;
}

static void on_free(struct loader *L, const struct mst_rec_free *f)
{
    uint32_t b = map_get(&L->live, f->addr);
    if (b != NONE && L->t->buf[b].device == f->device)
        kill_buffer(L, b);
}

/* FLOPs to recompute buffer b by replaying the GEMM that wrote it, if that is still valid now:
 * the GEMM wrote it last (write only: beta = 0), and every buffer the GEMM only read (A, B) is
 * still allocated and has not been written since. A buffer the GEMM read and wrote besides its
 * output is its workspace, scratch whose old content does not matter. 0: it must be moved. */
static uint64_t lineage_flops(const struct whatif_trace *t, uint32_t b)
{
    const struct buf *x = &t->buf[b];
    if (x->producer == NONE)
        return 0;
    const struct op *p = &t->op[x->producer];
    for (uint32_t k = 0; k < p->n; k++) {
        const struct use *u = &t->use[p->first + k];
        const struct buf *in = &t->buf[u->buf];
        if (in == x || u->mode != MST_ACCESS_READ)
            continue;
        if (!in->alive || in->last_write > p->ev)
            return 0;
    }
    return x->producer_flops;
}

static void flush_op(struct loader *L)
{
    struct whatif_trace *t = L->t;
    if (!L->in_op)
        return;
    L->in_op = 0;
    t->info.ops++;
    if (L->ntouched == 0)
        return;
    if (PUSH(t, op, nop, cap_op) != 0 || t->nop >= NONE - 1) {
        L->failed = 1;
        return;
    }
    uint32_t o = (uint32_t)t->nop++;
    uint32_t e = (uint32_t)t->nev;
    t->op[o] =
        (struct op){.first = (uint32_t)t->nuse, .n = L->ntouched, .ev = e, .seq = t->info.ops};
    for (uint32_t i = 0; i < L->ntouched; i++) {
        uint32_t b = L->touched[i];
        if (PUSH(t, use, nuse, cap_use) != 0 || t->nuse >= NONE - 1) {
            L->failed = 1;
            return;
        }
        uint32_t u = (uint32_t)t->nuse++;
        t->use[u] =
            (struct use){.buf = b, .next = NONE, .flops = lineage_flops(t, b), .mode = L->mode[i]};
        struct buf *x = &t->buf[b];
        if (x->last_use == NONE)
            x->first_use = u;
        else
            t->use[x->last_use].next = u;
        x->last_use = u;
    }
    /* writes take effect after the op read what it read */
    int gemm = L->op.kind == MST_OP_GEMM && L->op.flops > 0;
    for (uint32_t i = 0; i < L->ntouched; i++) {
        struct buf *x = &t->buf[L->touched[i]];
        if (!(L->mode[i] & (MST_ACCESS_WRITE | MST_ACCESS_MAYBE)))
            continue;
        x->last_write = (uint64_t)e + 1;
        /* beta != 0 reads C too (READ|WRITE): replaying it would need the old C */
        int pure = gemm && L->mode[i] == MST_ACCESS_WRITE;
        x->producer = pure ? o : NONE;
        x->producer_flops = pure ? L->op.flops : 0;
    }
    if (push_event(L, EV_OP, o) != 0)
        L->failed = 1;
}

static void on_access(struct loader *L, const struct mst_rec_access *a)
{
    struct whatif_trace *t = L->t;
    t->info.accesses++;
    uint32_t b = a->alloc_addr ? map_get(&L->live, a->alloc_addr) : NONE;
    if (b == NONE) {
        t->info.untracked_accesses++;
        return;
    }
    for (uint32_t i = 0; i < L->ntouched; i++)
        if (L->touched[i] == b) {
            L->mode[i] |= a->mode;
            return;
        }
    if (L->ntouched == OP_MAX_TOUCHED) {
        t->info.untracked_accesses++;
        return;
    }
    L->touched[L->ntouched] = b;
    L->mode[L->ntouched++] = a->mode;
}

static int new_slot(struct whatif_trace *t, int64_t step)
{
    if (PUSH(t, slot_step, nslot, cap_slot) != 0)
        return -1;
    t->slot_step[t->nslot++] = step;
    return 0;
}

static void load_record(struct loader *L, const struct reader_record *rec)
{
    if (L->in_op && rec->kind != MST_REC_ACCESS)
        flush_op(L); /* fewer ACCESS records than announced: use what came */
    switch (rec->kind) {
    case MST_REC_ALLOC:
        on_alloc(L, &rec->u.alloc);
        break;
    case MST_REC_FREE:
        on_free(L, &rec->u.free);
        break;
    case MST_REC_STEP:
        if (new_slot(L->t, (int64_t)rec->u.step.step) != 0)
            L->failed = 1;
        break;
    case MST_REC_OP:
        L->in_op = 1;
        L->op = rec->u.op;
        L->remaining = rec->u.op.naccess;
        L->ntouched = 0;
        if (L->remaining == 0)
            flush_op(L);
        break;
    case MST_REC_ACCESS:
        if (!L->in_op)
            break; /* stray: no OP announced it */
        on_access(L, &rec->u.access);
        if (--L->remaining == 0)
            flush_op(L);
        break;
    case MST_REC_MEASURE: {
        const struct mst_rec_measure *m = &rec->u.measure;
        if ((double)m->gemm_flops_per_s > L->t->info.gemm_flops_per_s)
            L->t->info.gemm_flops_per_s = (double)m->gemm_flops_per_s;
        /* a later record of the device knows at least as much (measure.h) */
        uint64_t *d = L->t->measure[m->device];
        d[0] = m->h2d_bytes_per_s ? m->h2d_bytes_per_s : d[0];
        d[1] = m->d2h_bytes_per_s ? m->d2h_bytes_per_s : d[1];
        d[2] = m->gemm_flops_per_s ? m->gemm_flops_per_s : d[2];
        break;
    }
    default:
        break;
    }
}

/* Per-device facts: recorded peaks per step slot, the smallest workable ceiling, unobserved
 * buffers (never used by any op: nothing says when they are needed, so they stay resident). */
/* The auto policy's rates: the option, else the device's measurement, else the default. */
static void apply_costs(struct whatif_trace *t)
{
    struct whatif_info *in = &t->info;
    const uint64_t *m = t->measure[in->device & 255];
    in->measured_h2d = m[0];
    in->measured_d2h = m[1];
    in->measured_gemm = m[2];
    static const uint64_t def[3] = {WHATIF_AUTO_LINK, WHATIF_AUTO_LINK, WHATIF_AUTO_GEMM};
    uint64_t *rate[3] = {&in->auto_h2d, &in->auto_d2h, &in->auto_gemm};
    for (int i = 0; i < 3; i++) {
        in->auto_from[i] = t->costs[i] ? 2 : m[i] ? 1 : 0;
        *rate[i] = t->costs[i] ? t->costs[i] : m[i] ? m[i] : def[i];
    }
}

void whatif_set_costs(struct whatif_trace *t, uint64_t h2d, uint64_t d2h, uint64_t gemm)
{
    t->costs[0] = h2d;
    t->costs[1] = d2h;
    t->costs[2] = gemm;
    apply_costs(t);
}

static int select_device(struct whatif_trace *t, int device)
{
    struct whatif_info *in = &t->info;
    in->device = device;
    apply_costs(t);
    in->peak = in->min_ceiling = in->min_ceiling_op = 0;
    in->buffers = in->unobserved = in->unobserved_max = in->recomputable_uses = 0;
    free(t->slot_peak);
    t->slot_peak = calloc(t->nslot, sizeof *t->slot_peak);
    if (!t->slot_peak)
        return -1;
    uint64_t resident = 0, pinned = 0;
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        uint64_t need = 0;
        if (v->kind == EV_OP) {
            const struct op *o = &t->op[v->id];
            for (uint32_t k = 0; k < o->n; k++) {
                const struct use *u = &t->use[o->first + k];
                if (t->buf[u->buf].device != device)
                    continue;
                need += t->buf[u->buf].size;
                in->recomputable_uses += u->flops > 0;
            }
            if (pinned + need > in->min_ceiling) {
                in->min_ceiling = pinned + need;
                in->min_ceiling_op = o->seq;
            }
            continue;
        }
        const struct buf *x = &t->buf[v->id];
        if (x->device != device)
            continue;
        int unobserved = x->first_use == NONE;
        if (v->kind == EV_FREE) {
            resident -= x->size;
            pinned -= unobserved ? x->size : 0;
            continue;
        }
        in->buffers++;
        resident += x->size;
        if (unobserved) {
            in->unobserved++;
            pinned += x->size;
            if (pinned > in->unobserved_max)
                in->unobserved_max = pinned;
        }
        need = pinned + (unobserved ? 0 : x->size);
        if (need > in->min_ceiling) {
            in->min_ceiling = need;
            in->min_ceiling_op = 0;
        }
        if (resident > t->slot_peak[v->slot])
            t->slot_peak[v->slot] = resident;
        if (resident > in->peak)
            in->peak = resident;
    }
    return 0;
}

static struct whatif_trace *load(struct reader *r, int device, char *err, size_t errlen)
{
    struct whatif_trace *t = calloc(1, sizeof *t);
    struct loader *L = calloc(1, sizeof *L);
    if (!t || !L || new_slot(t, -1) != 0) {
        snprintf(err, errlen, "out of memory");
        free(L);
        whatif_free(t);
        reader_close(r);
        return NULL;
    }
    L->t = t;
    snprintf(t->path, sizeof t->path, "%s", reader_path(r));
    struct reader_record rec;
    while (!L->failed && reader_next(r, &rec) == READER_RECORD)
        load_record(L, &rec);
    flush_op(L);
    t->info.status = reader_status(r);
    snprintf(t->error, sizeof t->error, "%s", reader_error(r));
    t->info.has_accesses = (reader_header(r)->flags & MST_FILE_F_ACCESSES) != 0 || t->info.ops > 0;
    reader_close(r);
    free(L->live.key);
    free(L->live.val);
    int failed = L->failed;
    free(L);
    if (device < 0) {
        device = 0;
        for (int d = 1; d < 256; d++)
            if (t->device_peak[d] > t->device_peak[device])
                device = d;
    }
    if (failed || device > 255 || select_device(t, device) != 0) {
        snprintf(err, errlen, "%s", failed ? "out of memory loading the trace" : "bad device");
        whatif_free(t);
        return NULL;
    }
    t->info.path = t->path;
    t->info.error = t->error;
    whatif_set_shim(t, WHATIF_SPILL_MIN, WHATIF_GRANULE);
    return t;
}

struct whatif_trace *whatif_load(const char *path, int device, char *err, size_t errlen)
{
    struct reader *r = reader_open(path, err, errlen);
    return r ? load(r, device, err, errlen) : NULL;
}

struct whatif_trace *whatif_load_memory(const void *data, size_t size, const char *name, int device,
                                        char *err, size_t errlen)
{
    struct reader *r = reader_open_memory(data, size, name, err, errlen);
    return r ? load(r, device, err, errlen) : NULL;
}

void whatif_free(struct whatif_trace *t)
{
    if (!t)
        return;
    free(t->ev);
    free(t->buf);
    free(t->op);
    free(t->use);
    free(t->slot_step);
    free(t->slot_peak);
    free(t);
}

const struct whatif_info *whatif_info(const struct whatif_trace *t)
{
    return &t->info;
}

void whatif_set_shim(struct whatif_trace *t, uint64_t spill_min, uint64_t granule)
{
    t->spill_min = t->info.spill_min = spill_min;
    t->granule = t->info.granule = granule ? granule : 1;
}

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

static void run_min(struct sim *s)
{
    const struct whatif_trace *t = s->t;
    struct min_state m = {.s = *s};
    m.heap = malloc((t->nbuf + 1) * sizeof *m.heap);
    m.pos = malloc((t->nbuf + 1) * sizeof *m.pos);
    m.next = malloc((t->nbuf + 1) * sizeof *m.next);
    if (!m.heap || !m.pos || !m.next)
        goto out;
    memset(m.pos, 0xff, (t->nbuf + 1) * sizeof *m.pos);
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        struct whatif_step *st = &s->out->steps[v->slot];
        if (v->kind == EV_ALLOC) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            min_evict(&m, shortfall(&m.s, t->buf[b].size), st);
            m.s.res[b] = t->buf[b].size;
            m.s.resident += t->buf[b].size;
            if (movable(s, b)) {
                m.next[b] = t->buf[b].first_use;
                heap_push(&m, b);
            }
        } else if (v->kind == EV_FREE) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            m.s.resident -= m.s.res[b];
            m.s.res[b] = 0;
            heap_remove(&m, b);
        } else {
            const struct op *o = &t->op[v->id];
            uint64_t missing = 0;
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                if (!mine(s, b))
                    continue;
                heap_remove(&m, b); /* in use: not a victim now */
                missing += t->buf[b].size - m.s.res[b];
            }
            min_evict(&m, shortfall(&m.s, missing), st);
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t u = o->first + k, b = t->use[u].buf;
                if (!mine(s, b))
                    continue;
                uint64_t miss = t->buf[b].size - m.s.res[b];
                if (miss) {
                    st->t[WHATIF_MIN].h2d += miss;
                    st->t[WHATIF_MIN].loads++;
                    if (t->use[u].flops) {
                        st->r.flops += t->use[u].flops;
                        st->r.recomputes++;
                    } else {
                        st->r.moved_bytes += miss;
                    }
                }
                m.s.res[b] = t->buf[b].size;
                m.s.resident += miss;
                m.next[b] = t->use[u].next;
                heap_push(&m, b);
            }
        }
    }
out:
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

static void run_lru(struct sim *s)
{
    const struct whatif_trace *t = s->t;
    struct lru_state l = {.s = *s, .head = NONE, .tail = NONE};
    l.prev = malloc((t->nbuf + 1) * sizeof *l.prev);
    l.next = malloc((t->nbuf + 1) * sizeof *l.next);
    l.in = calloc(t->nbuf + 1, 1);
    if (!l.prev || !l.next || !l.in)
        goto out;
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        struct whatif_traffic *tr = &s->out->steps[v->slot].t[WHATIF_LRU];
        uint64_t need;
        if (v->kind == EV_ALLOC) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            need = shortfall(&l.s, t->buf[b].size);
            while (need > 0 && l.head != NONE) {
                uint32_t x = l.head;
                need -= l.s.res[x] < need ? l.s.res[x] : need;
                lru_unlink(&l, x);
                evict_whole(&l.s, x, tr);
            }
            l.s.res[b] = t->buf[b].size;
            l.s.resident += t->buf[b].size;
            if (movable(s, b))
                lru_append(&l, b);
        } else if (v->kind == EV_FREE) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            l.s.resident -= l.s.res[b];
            l.s.res[b] = 0;
            lru_unlink(&l, b);
        } else {
            const struct op *o = &t->op[v->id];
            uint64_t missing = 0;
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                if (!mine(s, b))
                    continue;
                lru_unlink(&l, b);
                missing += t->buf[b].size - l.s.res[b];
            }
            need = shortfall(&l.s, missing);
            while (need > 0 && l.head != NONE) {
                uint32_t x = l.head;
                need -= l.s.res[x] < need ? l.s.res[x] : need;
                lru_unlink(&l, x);
                evict_whole(&l.s, x, tr);
            }
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                if (!mine(s, b))
                    continue;
                uint64_t miss = t->buf[b].size - l.s.res[b];
                if (miss) {
                    tr->h2d += miss;
                    tr->loads++;
                }
                l.s.res[b] = t->buf[b].size;
                l.s.resident += miss;
                lru_append(&l, b);
            }
        }
    }
out:
    free(l.prev);
    free(l.next);
    free(l.in);
}

/* -- the shim's own victim_choose() over the resident set -- */

#ifdef WHATIF_HAVE_VICTIM
/* A chunk of small allocations (residency.c res_serve_small): a buddy system of blocks from
 * `unit` to the whole chunk, placed as backing_chunk_take places them (the lowest free block of
 * the smallest order that has one, split keeping the lower half; a freed block merges with its
 * free buddy), so that the replay sees the holes the real allocator leaves. Free blocks are one
 * bitmap per order, each order starting on a word. */
struct wchunk {
    uint64_t *free_bits; /* NULL: the slot is empty */
    uint32_t word[BACKING_MAX_ORDER + 2];
    uint32_t nfree[BACKING_MAX_ORDER + 2]; /* free blocks per order: a take that cannot succeed
                                              reads no bitmap */
    uint64_t used;                         /* bytes in live blocks */
    uint64_t last;     /* tick: its blocks' latest access, or its latest new block */
    uint32_t observed; /* live blocks some op touches (a chunk of none stays, as a buffer) */
    uint8_t away, in_use;
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
    unsigned orders;             /* block sizes unit << 0 .. unit << (orders - 1) */
    uint32_t nwords;             /* words of one chunk's free bitmaps */
    struct wchunk *ch;           /* by slot: the address order (below) */
    size_t nch, cap_ch;
};

static int bit_of(const struct wchunk *c, unsigned o, uint32_t i)
{
    return (int)((c->free_bits[c->word[o] + i / 64] >> (i % 64)) & 1);
}

static void bit_put(struct wchunk *c, unsigned o, uint32_t i, int v)
{
    uint64_t *w = &c->free_bits[c->word[o] + i / 64], bit = 1ull << (i % 64);
    if (!(*w & bit) != !v)
        c->nfree[o] = v ? c->nfree[o] + 1 : c->nfree[o] - 1;
    *w = v ? *w | bit : *w & ~bit;
}

static int chunk_init(struct shim_state *h, struct wchunk *c)
{
    c->free_bits = calloc(h->nwords, sizeof *c->free_bits);
    if (!c->free_bits)
        return -1;
    uint32_t w = 0, units = (uint32_t)(h->chunk / h->unit);
    for (unsigned o = 0; o < h->orders; o++) {
        c->word[o] = w;
        w += ((units >> o) + 63) / 64;
    }
    memset(c->nfree, 0, sizeof c->nfree);
    c->used = 0;
    c->observed = 0;
    c->away = c->in_use = 0;
    bit_put(c, h->orders - 1, 0, 1); /* the whole chunk: one free block */
    return 0;
}

/* A free block of `bytes` (unit << k) taken from c: its unit offset, or NONE when none fits. */
static uint32_t chunk_take(struct shim_state *h, struct wchunk *c, uint64_t bytes)
{
    unsigned k = 0;
    while ((h->unit << k) < bytes)
        k++;
    uint32_t units = (uint32_t)(h->chunk / h->unit);
    for (unsigned j = k; j < h->orders; j++) {
        if (!c->nfree[j])
            continue;
        uint32_t n = units >> j, nw = (n + 63) / 64;
        for (uint32_t wi = 0; wi < nw; wi++) {
            uint64_t w = c->free_bits[c->word[j] + wi];
            if (!w)
                continue;
            uint32_t idx = wi * 64 + (uint32_t)__builtin_ctzll(w);
            bit_put(c, j, idx, 0);
            while (j > k) { /* split: keep the lower half, free the upper */
                j--;
                idx *= 2;
                bit_put(c, j, idx + 1, 1);
            }
            c->used += bytes;
            return idx << k;
        }
    }
    return NONE;
}

static void chunk_give(struct shim_state *h, struct wchunk *c, uint32_t off, uint64_t bytes)
{
    unsigned k = 0;
    while ((h->unit << k) < bytes)
        k++;
    uint32_t idx = off >> k;
    c->used -= bytes;
    while (k + 1 < h->orders && bit_of(c, k, idx ^ 1)) { /* merge with a free buddy */
        bit_put(c, k, idx ^ 1, 0);
        idx /= 2;
        k++;
    }
    bit_put(c, k, idx, 1);
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

static void shim_make_room(struct shim_state *h, uint64_t need, struct whatif_traffic *tr,
                           struct whatif_auto *au)
{
    if (need == 0)
        return;
    size_t n = 0;
    for (uint32_t i = 0; i < h->n; i++) {
        uint32_t b = h->set[i];
        /* id: the buffer index; ticks are unique, so the id tie-break is never reached */
        h->cand[n++] = h->dtr ? dtr_candidate(h, b)
                              : (struct victim_candidate){.id = b,
                                                          .bytes = h->s.res[b],
                                                          .last_access = h->last[b],
                                                          .in_use = h->in_use[b]};
    }
    const struct whatif_info *in = &h->s.t->info;
    for (uint32_t i = 0; i < h->nch; i++) {
        const struct wchunk *c = &h->ch[i];
        if (!c->free_bits || c->away || !c->observed)
            continue;
        /* no lineage: a chunk is always spilled (residency.c res_action) */
        h->cand[n++] = (struct victim_candidate){
            .id = chunk_id(h, i),
            .bytes = h->chunk,
            .last_access = c->last,
            .in_use = c->in_use,
            .action = VICTIM_SPILL,
            .cost = h->dtr ? costs_spill_ns(h->chunk, in->auto_d2h, in->auto_h2d) : 0};
    }
    uint64_t chosen = 0;
    size_t k = h->dtr ? victim_choose_dtr(h->cand, n, need, h->tick, &chosen)
                      : victim_choose(h->cand, n, need, &chosen);
    if (chosen < need) {
        tr->failures++;
        return;
    }
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
}

/* How residency.c charges an allocation under MEMSHIM_POLICY=spill. It serves cudaMalloc and
 * cuMemAlloc: below MEMSHIM_SPILL_MIN a buddy block (the power of two of at least 256 bytes
 * and a chunk / BACKING_MAX_BLOCKS, as backing_class_bytes) in a shared chunk that moves
 * whole, else (or when the block would exceed half a chunk) its own range rounded up to the
 * granularity. Other allocations pass through at their recorded size. */
static int served(const struct buf *x)
{
    return x->kind == MST_KIND_CUDA_MALLOC || x->kind == MST_KIND_CU_MEM_ALLOC ||
           x->kind == MST_KIND_SHIM_VMM;
}

static void shim_charge(const struct sim *s, uint32_t b, uint64_t chunk, uint64_t *charge,
                        uint64_t *block)
{
    const struct whatif_trace *t = s->t;
    const struct buf *x = &t->buf[b];
    *block = 0;
    if (!served(x)) {
        *charge = x->size;
        return;
    }
    if (x->requested < t->spill_min) {
        uint64_t c = 1ull << BACKING_MIN_CLASS_SHIFT;
        while (c < x->requested || c < chunk / BACKING_MAX_BLOCKS)
            c <<= 1;
        if (c <= chunk / 2) {
            *charge = *block = c;
            return;
        }
    }
    uint64_t g = t->granule;
    *charge = (x->requested + g - 1) / g * g;
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
        if (!c->free_bits) {
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
    shim_make_room(h, shortfall(&h->s, h->chunk - bytes), tr, au);
    if (free_slot == NONE) {
        if (PUSH(h, ch, nch, cap_ch) != 0) {
            h->chunk_of[b] = NONE;
            return;
        }
        free_slot = (uint32_t)h->nch++;
        h->ch[free_slot].free_bits = NULL;
    }
    struct wchunk *c = &h->ch[free_slot];
    if (chunk_init(h, c) != 0) {
        h->chunk_of[b] = NONE;
        return;
    }
    h->s.resident += h->chunk - bytes;
    c->last = ++h->tick;
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
    free(c->free_bits);
    c->free_bits = NULL;
}

/* dtr 0: the `shim` policy (victim_choose, spill only); 1: `auto`. */
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
    if (!h.set || !h.idx || !h.last || !h.in_use || !h.cand || !h.charge || !h.block ||
        !h.lastuse || !h.dropped || !h.chunk_of || !h.off_of)
        goto out;
    memset(h.idx, 0xff, n * sizeof *h.idx);
    memset(h.lastuse, 0xff, n * sizeof *h.lastuse);
    memset(h.chunk_of, 0xff, n * sizeof *h.chunk_of);
    /* residency.c chunk_bytes: MEMSHIM_SPILL_MIN rounded to the granularity, then to a power
     * of two (the shim only runs on a power-of-two granularity; another --granule gets the
     * power of two above); backing_chunk_init: the smallest block 256 bytes, or more, up to
     * BACKING_MAX_BLOCKS of them */
    uint64_t g = t->granule, c = t->spill_min ? (t->spill_min + g - 1) / g * g : g;
    for (h.chunk = 1; (h.chunk < g || h.chunk < c) && h.chunk <= UINT64_MAX / 2;)
        h.chunk <<= 1;
    for (h.unit = 1ull << BACKING_MIN_CLASS_SHIFT; h.chunk / h.unit > BACKING_MAX_BLOCKS;)
        h.unit <<= 1;
    for (h.orders = 1; (h.unit << (h.orders - 1)) < h.chunk;)
        h.orders++;
    for (unsigned o = 0; o < h.orders; o++)
        h.nwords += (uint32_t)((h.chunk / h.unit >> o) + 63) / 64;
    for (size_t e = 0; e < t->nev; e++) {
        const struct ev *v = &t->ev[e];
        struct whatif_auto *au = &s->out->steps[v->slot].a;
        struct whatif_traffic *tr = dtr ? &au->t : &s->out->steps[v->slot].t[WHATIF_SHIM];
        if (v->kind == EV_ALLOC) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            shim_charge(s, b, h.chunk, &h.charge[b], &h.block[b]);
            shim_make_room(&h, shortfall(&h.s, h.charge[b]), tr, au);
            h.s.resident += h.charge[b];
            if (h.block[b]) {
                shim_place_block(&h, b, tr, au);
                continue;
            }
            h.s.res[b] = h.charge[b];
            h.last[b] = ++h.tick;
            if (movable(s, b) && served(&t->buf[b]))
                set_add(&h, b);
        } else if (v->kind == EV_FREE) {
            uint32_t b = v->id;
            if (!mine(s, b))
                continue;
            if (h.block[b]) {
                shim_free_block(&h, b);
                continue;
            }
            h.s.resident -= h.s.res[b];
            h.s.res[b] = 0;
            h.dropped[b] = 0;
            set_del(&h, b);
        } else {
            /* residency_prepare: tick and mark the op's ranges (a chunk once, at its first
             * block), then restore them one by one, each making its own room */
            const struct op *o = &t->op[v->id];
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                if (!mine(s, b))
                    continue;
                if (h.block[b]) {
                    struct wchunk *ck = h.chunk_of[b] != NONE ? &h.ch[h.chunk_of[b]] : NULL;
                    if (ck && !ck->in_use) {
                        ck->in_use = 1;
                        ck->last = ++h.tick;
                    }
                    continue;
                }
                h.in_use[b] = 1;
                h.last[b] = ++h.tick;
            }
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t u = o->first + k, b = t->use[u].buf;
                h.lastuse[b] = u;
                if (!mine(s, b))
                    continue;
                if (h.block[b]) { /* a block brings its whole chunk */
                    struct wchunk *ck = h.chunk_of[b] != NONE ? &h.ch[h.chunk_of[b]] : NULL;
                    if (!ck || !ck->away)
                        continue;
                    shim_make_room(&h, shortfall(&h.s, h.chunk), tr, au);
                    tr->h2d += h.chunk;
                    tr->loads++;
                    ck->away = 0;
                    h.s.resident += h.chunk;
                    continue;
                }
                uint64_t miss = h.charge[b] - h.s.res[b];
                if (!miss)
                    continue;
                shim_make_room(&h, shortfall(&h.s, miss), tr, au);
                if (h.dropped[b] && t->use[u].flops) {
                    au->recomputes++;
                    au->flops += t->use[u].flops;
                } else {
                    tr->h2d += miss;
                    tr->loads++;
                }
                h.dropped[b] = 0;
                h.s.res[b] = h.charge[b];
                h.s.resident += miss;
                set_add(&h, b);
            }
            for (uint32_t k = 0; k < o->n; k++) {
                uint32_t b = t->use[o->first + k].buf;
                h.in_use[b] = 0;
                if (mine(s, b) && h.block[b] && h.chunk_of[b] != NONE)
                    h.ch[h.chunk_of[b]].in_use = 0;
            }
        }
    }
out:
    for (uint32_t i = 0; i < h.nch; i++)
        free(h.ch[i].free_bits);
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
}
#endif

static void add_traffic(struct whatif_traffic *to, const struct whatif_traffic *from)
{
    to->d2h += from->d2h;
    to->h2d += from->h2d;
    to->evictions += from->evictions;
    to->loads += from->loads;
    to->failures += from->failures;
}

int whatif_simulate(const struct whatif_trace *t, uint64_t limit, struct whatif_result *out)
{
    memset(out, 0, sizeof *out);
    out->limit = limit;
    out->fits = t->info.peak <= limit;
    out->feasible = limit >= t->info.min_ceiling;
    out->nsteps = t->nslot;
    out->steps = calloc(t->nslot, sizeof *out->steps);
    if (!out->steps)
        return -1;
    for (size_t i = 0; i < t->nslot; i++) {
        out->steps[i].step = t->slot_step[i];
        out->steps[i].peak = t->slot_peak[i];
    }
#ifdef WHATIF_HAVE_VICTIM
    out->have_shim = 1;
#endif
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
#ifdef WHATIF_HAVE_VICTIM
    /* even when the recorded peak fits: the shim charges chunks and granules, not the sizes
     * recorded, and may have to spill where nothing else does */
    memset(res, 0, (t->nbuf + 1) * sizeof *res);
    run_shim(&s, 0);
    memset(res, 0, (t->nbuf + 1) * sizeof *res);
    run_shim(&s, 1);
#endif
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

/* ---- sizes --------------------------------------------------------------------------------- */

int whatif_parse_size(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    double v = strtod(s, &end);
    double unit = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k':
        unit = 1024.0, end++;
        break;
    case 'm':
        unit = 1048576.0, end++;
        break;
    case 'g':
        unit = 1073741824.0, end++;
        break;
    case 't':
        unit = 1099511627776.0, end++;
        break;
    default:
        break;
    }
    if (unit > 1 && tolower((unsigned char)*end) == 'i')
        end++;
    if (tolower((unsigned char)*end) == 'b')
        end++;
    double bytes = v * unit;
    if (*end != '\0' || !(bytes >= 0) || bytes >= 1.8e19)
        return -1;
    *out = (uint64_t)bytes;
    return 0;
}

/* ---- reports ------------------------------------------------------------------------------- */

struct options {
    uint64_t limits[MAX_LIMITS];
    size_t nlimits;
    int sweep; /* points, 0 = none */
    int json;
    int device;
    double link_gbps;
    double tflops;            /* 0 = measured or default */
    struct costs_rates costs; /* --costs; 0 = measured or default */
    uint64_t spill_min, granule;
    const char *svg;
};

struct rates {
    double link; /* bytes/s each way */
    double gemm; /* FLOP/s */
    const char *gemm_source;
    uint64_t auto_h2d, auto_d2h, auto_gemm; /* the auto policy's (whatif_info) */
};

static struct rates rates_for(const struct options *o, const struct whatif_info *in)
{
    struct rates r = {.link = o->link_gbps * 1e9,
                      .auto_h2d = in->auto_h2d,
                      .auto_d2h = in->auto_d2h,
                      .auto_gemm = in->auto_gemm};
    if (o->tflops > 0)
        r.gemm = o->tflops * 1e12, r.gemm_source = "option";
    else if (in->gemm_flops_per_s > 0)
        r.gemm = in->gemm_flops_per_s, r.gemm_source = "measured";
    else
        r.gemm = DEFAULT_TFLOPS * 1e12, r.gemm_source = "default";
    return r;
}

/* Copies are serialised and not overlapped with compute: the time the traffic adds at worst. */
static double move_seconds(const struct rates *r, uint64_t bytes)
{
    return (double)bytes / r->link;
}

static double recompute_seconds(const struct rates *r, const struct whatif_recompute *c)
{
    return (double)c->flops / r->gemm + (double)c->moved_bytes / r->link;
}

/* The auto policy at its own rates (those it chose by). */
static double auto_seconds(const struct rates *r, const struct whatif_auto *a)
{
    return (double)a->t.d2h / (double)r->auto_d2h + (double)a->t.h2d / (double)r->auto_h2d +
           (double)a->flops / (double)r->auto_gemm;
}

static const char *rate_source(int from)
{
    static const char *const k[] = {"default", "measured", "option"};
    return k[from >= 0 && from <= 2 ? from : 0];
}

static const char *flops_text(uint64_t f, char *buf, size_t len)
{
    if (f == 0)
        snprintf(buf, len, "0");
    else if (f >= 1000000000000ull)
        snprintf(buf, len, "%.3g TFLOP", (double)f / 1e12);
    else if (f >= 1000000000ull)
        snprintf(buf, len, "%.3g GFLOP", (double)f / 1e9);
    else
        snprintf(buf, len, "%.3g MFLOP", (double)f / 1e6);
    return buf;
}

static const char *seconds_text(double s, char *buf, size_t len)
{
    return table_duration((uint64_t)(s * 1e9 + 0.5), buf, len);
}

static const char *policy_key(int p)
{
    static const char *const k[] = {"min", "lru", "shim"};
    return k[p];
}

static void print_header(FILE *out, const struct whatif_info *in, const struct rates *r)
{
    char b1[32], b2[32];
    fprintf(out, "Trace      %s\n", in->path);
    if (in->status != READER_OK)
        fprintf(out, "WARNING    %s; the replay covers what came before\n", in->error);
    fprintf(out, "Device     %d: peak %s as recorded; smallest workable ceiling %s", in->device,
            table_bytes(in->peak, b1, sizeof b1), table_bytes(in->min_ceiling, b2, sizeof b2));
    if (in->min_ceiling_op)
        fprintf(out, " (op #%llu)\n", (ull)in->min_ceiling_op);
    else
        fprintf(out, " (at an allocation)\n");
    fprintf(out, "Accesses   %llu ops, %llu accesses (%llu outside tracked allocations)\n",
            (ull)in->ops, (ull)in->accesses, (ull)in->untracked_accesses);
    if (!in->has_accesses)
        fprintf(out, "WARNING    no access records (run with MEMSHIM_ACCESS=all): nothing is "
                     "known to be movable\n");
    if (in->unobserved)
        fprintf(out,
                "Unobserved %llu of %llu allocations never touched by a recorded op stay "
                "resident (at most %s at once)\n",
                (ull)in->unobserved, (ull)in->buffers,
                table_bytes(in->unobserved_max, b1, sizeof b1));
    fprintf(out, "Rates      link %.4g GB/s each way, GEMM %.4g TFLOP/s (%s)\n", r->link / 1e9,
            r->gemm / 1e12, r->gemm_source);
    if (in->auto_h2d)
        fprintf(out, "Auto       h2d %.4g GB/s (%s), d2h %.4g GB/s (%s), GEMM %.4g TFLOP/s (%s)\n",
                (double)in->auto_h2d / 1e9, rate_source(in->auto_from[0]),
                (double)in->auto_d2h / 1e9, rate_source(in->auto_from[1]),
                (double)in->auto_gemm / 1e12, rate_source(in->auto_from[2]));
    fprintf(out,
            "Shim       spills cudaMalloc/cuMemAlloc ranges of %s or more, rounded to %s; "
            "smaller share chunks, spilled whole\n",
            table_bytes(in->spill_min, b1, sizeof b1), table_bytes(in->granule, b2, sizeof b2));
}

static void cell_traffic(struct table *tb, const struct whatif_result *res, int p)
{
    char b[32];
    if (!res->feasible)
        table_cell(tb, "-");
    else if (p == WHATIF_SHIM && !res->have_shim)
        table_cell(tb, "n/a");
    else if (res->t[p].failures)
        table_cell(tb, "%s, %llu OOM", table_bytes(whatif_bytes(&res->t[p]), b, sizeof b),
                   (ull)res->t[p].failures);
    else
        table_cell(tb, "%s", table_bytes(whatif_bytes(&res->t[p]), b, sizeof b));
}

static void print_totals(FILE *out, const struct whatif_result *res, size_t n,
                         const struct rates *r)
{
    struct table *tb = table_new(10);
    char b[32], b2[32];
    const char *head[] = {
        "ceiling",           "fits",      "MIN moved", "LRU moved",  "shim moved",
        "drop GEMM outputs", "+time MIN", "+time LRU", "+time shim", "+time drop"};
    for (size_t i = 0; i < 10; i++)
        table_cell(tb, "%s", head[i]);
    for (size_t i = 0; i < n; i++) {
        const struct whatif_result *x = &res[i];
        table_cell(tb, "%s", table_bytes(x->limit, b, sizeof b));
        table_cell(tb, "%s", x->fits ? "yes" : x->feasible ? "no" : "never");
        for (int p = 0; p < WHATIF_POLICIES; p++)
            cell_traffic(tb, x, p);
        if (!x->feasible)
            table_cell(tb, "-");
        else
            table_cell(tb, "%s + %s", flops_text(x->r.flops, b, sizeof b),
                       table_bytes(x->r.moved_bytes, b2, sizeof b2));
        for (int p = 0; p < WHATIF_POLICIES; p++) {
            if (!x->feasible || (p == WHATIF_SHIM && !x->have_shim))
                table_cell(tb, "-");
            else
                table_cell(tb, "%s",
                           seconds_text(move_seconds(r, whatif_bytes(&x->t[p])), b, sizeof b));
        }
        if (!x->feasible)
            table_cell(tb, "-");
        else
            table_cell(tb, "%s", seconds_text(recompute_seconds(r, &x->r), b, sizeof b));
    }
    table_print(tb, out, 2);
    table_free(tb);
    if (n == 0 || !res[0].have_shim)
        return;
    fprintf(out, "\nAuto policy (DTR victims, each spilled or recomputed, the cheaper):\n");
    tb = table_new(6);
    const char *ahead[] = {"ceiling",    "auto moved",    "spilled",
                           "recomputed", "GEMM replayed", "+time auto"};
    for (size_t i = 0; i < 6; i++)
        table_cell(tb, "%s", ahead[i]);
    for (size_t i = 0; i < n; i++) {
        const struct whatif_result *x = &res[i];
        const struct whatif_auto *a = &x->a;
        table_cell(tb, "%s", table_bytes(x->limit, b, sizeof b));
        if (!x->feasible) {
            for (int c = 0; c < 5; c++)
                table_cell(tb, "-");
            continue;
        }
        if (a->t.failures)
            table_cell(tb, "%s, %llu OOM", table_bytes(whatif_bytes(&a->t), b, sizeof b),
                       (ull)a->t.failures);
        else
            table_cell(tb, "%s", table_bytes(whatif_bytes(&a->t), b, sizeof b));
        table_cell(tb, "%llu", (ull)a->t.evictions);
        table_cell(tb, "%llu (%s)", (ull)a->drops, table_bytes(a->dropped_bytes, b, sizeof b));
        table_cell(tb, "%s", flops_text(a->flops, b, sizeof b));
        table_cell(tb, "%s", seconds_text(auto_seconds(r, a), b2, sizeof b2));
    }
    table_print(tb, out, 2);
    table_free(tb);
}

static void print_steps(FILE *out, const struct whatif_result *x)
{
    size_t first = x->steps[0].peak == 0 && x->nsteps > 1 ? 1 : 0; /* empty prologue */
    size_t n = x->nsteps - first;
    size_t stride = n > 40 ? n / 20 : 1;
    char b[32], b2[32];
    fprintf(out, "\nPer step at %s:\n", table_bytes(x->limit, b, sizeof b));
    struct table *tb = table_new(7);
    const char *head[] = {"step", "peak", "fits", "MIN", "LRU", "shim", "drop GEMM outputs"};
    for (size_t i = 0; i < 7; i++)
        table_cell(tb, "%s", head[i]);
    for (size_t k = 0; k < n; k++) {
        if (stride > 1 && k >= 5 && k + 5 < n && k % stride)
            continue;
        const struct whatif_step *s = &x->steps[first + k];
        if (s->step < 0)
            table_cell(tb, "before");
        else
            table_cell(tb, "%lld", (long long)s->step);
        table_cell(tb, "%s", table_bytes(s->peak, b, sizeof b));
        table_cell(tb, "%s", s->peak <= x->limit ? "yes" : "no");
        for (int p = 0; p < WHATIF_POLICIES; p++) {
            if (p == WHATIF_SHIM && !x->have_shim)
                table_cell(tb, "n/a");
            else
                table_cell(tb, "%s", table_bytes(whatif_bytes(&s->t[p]), b, sizeof b));
        }
        table_cell(tb, "%s + %s", flops_text(s->r.flops, b, sizeof b),
                   table_bytes(s->r.moved_bytes, b2, sizeof b2));
    }
    table_print(tb, out, 2);
    table_free(tb);
    if (stride > 1)
        fprintf(out, "  (%zu steps; every %zu-th shown)\n", n, stride);
}

static void json_traffic(struct json *j, const char *key, const struct whatif_traffic *t,
                         const struct rates *r)
{
    json_begin_object(j, key);
    json_uint(j, "d2h_bytes", t->d2h);
    json_uint(j, "h2d_bytes", t->h2d);
    json_uint(j, "moved_bytes", whatif_bytes(t));
    json_uint(j, "evictions", t->evictions);
    json_uint(j, "loads", t->loads);
    json_uint(j, "failures", t->failures);
    if (r)
        json_double(j, "added_s", move_seconds(r, whatif_bytes(t)));
    json_end_object(j);
}

static void json_recompute(struct json *j, const struct whatif_recompute *c, const struct rates *r)
{
    json_begin_object(j, "recompute");
    json_uint(j, "flops", c->flops);
    json_uint(j, "recomputes", c->recomputes);
    json_uint(j, "moved_bytes", c->moved_bytes);
    if (r)
        json_double(j, "added_s", recompute_seconds(r, c));
    json_end_object(j);
}

static void json_auto(struct json *j, const struct whatif_auto *a, const struct rates *r)
{
    json_begin_object(j, "auto");
    json_uint(j, "d2h_bytes", a->t.d2h);
    json_uint(j, "h2d_bytes", a->t.h2d);
    json_uint(j, "moved_bytes", whatif_bytes(&a->t));
    json_uint(j, "evictions", a->t.evictions);
    json_uint(j, "loads", a->t.loads);
    json_uint(j, "failures", a->t.failures);
    json_uint(j, "drops", a->drops);
    json_uint(j, "dropped_bytes", a->dropped_bytes);
    json_uint(j, "recomputes", a->recomputes);
    json_uint(j, "flops", a->flops);
    if (r)
        json_double(j, "added_s", auto_seconds(r, a));
    json_end_object(j);
}

static void json_policies(struct json *j, const struct whatif_result *x,
                          const struct whatif_traffic *t, const struct whatif_recompute *c,
                          const struct whatif_auto *a, const struct rates *r)
{
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        if (!x->feasible || (p == WHATIF_SHIM && !x->have_shim))
            json_null(j, policy_key(p));
        else
            json_traffic(j, policy_key(p), &t[p], r);
    }
    if (!x->feasible)
        json_null(j, "recompute");
    else
        json_recompute(j, c, r);
    if (!x->feasible || !x->have_shim)
        json_null(j, "auto");
    else
        json_auto(j, a, r);
}

static void json_result(struct json *j, const struct whatif_result *x, const struct rates *r,
                        int steps)
{
    json_begin_object(j, NULL);
    json_uint(j, "limit_bytes", x->limit);
    json_bool(j, "fits", x->fits);
    json_bool(j, "feasible", x->feasible);
    json_policies(j, x, x->t, &x->r, &x->a, r);
    if (steps) {
        json_begin_array(j, "steps");
        for (size_t i = 0; i < x->nsteps; i++) {
            const struct whatif_step *s = &x->steps[i];
            json_begin_object(j, NULL);
            if (s->step < 0)
                json_null(j, "step");
            else
                json_int(j, "step", s->step);
            json_uint(j, "peak_bytes", s->peak);
            json_bool(j, "fits", s->peak <= x->limit);
            json_policies(j, x, s->t, &s->r, &s->a, NULL);
            json_end_object(j);
        }
        json_end_array(j);
    }
    json_end_object(j);
}

static void json_info(struct json *j, const struct whatif_info *in, const struct rates *r)
{
    static const char *const status[] = {"ok", "truncated", "corrupt", "io-error"};
    json_string(j, "trace", in->path);
    json_string(j, "status", status[in->status & 3]);
    if (in->status != READER_OK)
        json_string(j, "error", in->error);
    json_uint(j, "device", (uint64_t)in->device);
    json_uint(j, "peak_bytes", in->peak);
    json_uint(j, "min_ceiling_bytes", in->min_ceiling);
    if (in->min_ceiling_op)
        json_uint(j, "min_ceiling_op", in->min_ceiling_op);
    else
        json_null(j, "min_ceiling_op");
    json_bool(j, "has_accesses", in->has_accesses);
    json_uint(j, "ops", in->ops);
    json_uint(j, "accesses", in->accesses);
    json_uint(j, "untracked_accesses", in->untracked_accesses);
    json_uint(j, "allocations", in->buffers);
    json_uint(j, "unobserved_allocations", in->unobserved);
    json_uint(j, "unobserved_max_bytes", in->unobserved_max);
    json_uint(j, "recomputable_uses", in->recomputable_uses);
    json_double(j, "link_bytes_per_s", r->link);
    json_double(j, "gemm_flops_per_s", r->gemm);
    json_string(j, "gemm_rate_source", r->gemm_source);
    json_begin_object(j, "auto_rates");
    json_uint(j, "h2d_bytes_per_s", in->auto_h2d);
    json_uint(j, "d2h_bytes_per_s", in->auto_d2h);
    json_uint(j, "gemm_flops_per_s", in->auto_gemm);
    json_string(j, "h2d_source", rate_source(in->auto_from[0]));
    json_string(j, "d2h_source", rate_source(in->auto_from[1]));
    json_string(j, "gemm_source", rate_source(in->auto_from[2]));
    json_uint(j, "measured_h2d_bytes_per_s", in->measured_h2d);
    json_uint(j, "measured_d2h_bytes_per_s", in->measured_d2h);
    json_uint(j, "measured_gemm_flops_per_s", in->measured_gemm);
    json_end_object(j);
    json_uint(j, "spill_min_bytes", in->spill_min);
    json_uint(j, "granule_bytes", in->granule);
}

/* ---- the sweep chart ----------------------------------------------------------------------- */

static void write_svg(FILE *out, const struct whatif_result *pts, size_t n,
                      const struct whatif_info *in)
{
    const double W = 900, H = 480, left = 90, right = 170, top = 40, bottom = 60;
    double pw = W - left - right, ph = H - top - bottom;
    uint64_t xmin = pts[n - 1].limit, xmax = pts[0].limit, ymax = 1;
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < WHATIF_POLICIES; p++)
            if (whatif_bytes(&pts[i].t[p]) > ymax)
                ymax = whatif_bytes(&pts[i].t[p]);
    if (whatif_svg_marks_max(pts, n) > ymax)
        ymax = whatif_svg_marks_max(pts, n);
    if (xmax == xmin)
        xmax = xmin + 1;
    const char *xu, *yu;
    double xunit = svg_byte_unit((double)xmax, &xu), yunit = svg_byte_unit((double)ymax, &yu);
    double ystep = svg_nice_step((double)ymax, 6, yunit);
    double ytop = ceil((double)ymax / ystep) * ystep;
    svg_open(out, W, H, 1);
    svg_rect(out, 0, 0, W, H, "fill=\"white\"");
    svg_text(out, left, 24, "font-size=\"15\" font-weight=\"bold\"",
             "Bytes moved against ceiling, device %d (%s)", in->device, in->path);
    char lb[32];
    for (double y = 0; y <= ytop + ystep / 2; y += ystep) {
        double py = top + ph - ph * y / ytop;
        svg_line(out, left, py, left + pw, py, "stroke=\"#ddd\"");
        svg_format_number(lb, sizeof lb, y / yunit);
        svg_text(out, left - 6, py + 4, "text-anchor=\"end\"", "%s %s", lb, yu);
    }
    for (int i = 0; i <= 5; i++) {
        double xv = (double)xmin + (double)(xmax - xmin) * i / 5.0;
        double px = left + pw * i / 5.0;
        svg_line(out, px, top + ph, px, top + ph + 5, "stroke=\"#333\"");
        svg_format_number(lb, sizeof lb, round(xv / xunit * 100) / 100);
        svg_text(out, px, top + ph + 20, "text-anchor=\"middle\"", "%s %s", lb, xu);
    }
    svg_line(out, left, top + ph, left + pw, top + ph, "stroke=\"#333\"");
    svg_line(out, left, top, left, top + ph, "stroke=\"#333\"");
    svg_text(out, left + pw / 2, H - 14, "text-anchor=\"middle\"",
             "ceiling (peak %s at the right, smallest workable at the left)",
             table_bytes(in->peak, lb, sizeof lb));
    static const char *const color[] = {"#59a14f", "#4e79a7", "#e15759"};
    static const char *const name[] = {"MIN (lower bound)", "LRU", "shim policy"};
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        if (p == WHATIF_SHIM && !pts[0].have_shim)
            continue;
        char attrs[96];
        snprintf(attrs, sizeof attrs, "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"", color[p]);
        svg_path_begin(out, attrs);
        for (size_t i = n; i-- > 0;) {
            double px = left + pw * (double)(pts[i].limit - xmin) / (double)(xmax - xmin);
            double py = top + ph - ph * (double)whatif_bytes(&pts[i].t[p]) / ytop;
            if (i == n - 1)
                svg_path_move(out, px, py);
            else
                svg_path_line(out, px, py);
        }
        svg_path_end(out);
        double ly = top + 10 + 20 * p;
        snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"3\"", color[p]);
        svg_line(out, left + pw + 12, ly, left + pw + 32, ly, attrs);
        svg_text(out, left + pw + 38, ly + 4, "", "%s", name[p]);
    }
    struct whatif_svg_frame frame = {
        left, top, pw, ph, xmin, xmax, ytop, left + pw + 12, top + 10 + 20 * WHATIF_POLICIES};
    whatif_svg_marks(out, pts, n, &frame);
    svg_close(out);
}

/* ---- command ------------------------------------------------------------------------------- */

static int parse_limits(const char *arg, struct options *o)
{
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return -1;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->nlimits == MAX_LIMITS) {
            fprintf(stderr, "whatif: --limit: at most %d ceilings\n", MAX_LIMITS);
            rc = -1;
            break;
        }
        if (whatif_parse_size(tok, &o->limits[o->nlimits]) != 0) {
            fprintf(stderr,
                    "whatif: --limit: bad value '%s' (accepted: bytes with k/m/g/t, binary, "
                    "e.g. 24g, 1.5GiB, 512m; several separated by commas)\n",
                    tok);
            rc = -1;
            break;
        }
        o->nlimits++;
    }
    free(copy);
    return rc;
}

static int parse_double(const char *flag, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (*end || !(v > 0) || !isfinite(v)) {
        fprintf(stderr, "whatif: %s: bad value '%s' (a positive number)\n", flag, arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
    static const struct option options[] = {
        {"limit", required_argument, NULL, 'l'},
        {"sweep", optional_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"device", required_argument, NULL, 'd'},
        {"link-gbps", required_argument, NULL, 'L'},
        {"tflops", required_argument, NULL, 'T'},
        {"costs", required_argument, NULL, 'C'},
        {"svg", required_argument, NULL, 'S'},
        {"spill-min", required_argument, NULL, 'M'},
        {"granule", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    *o = (struct options){.device = -1,
                          .link_gbps = DEFAULT_LINK,
                          .spill_min = WHATIF_SPILL_MIN,
                          .granule = WHATIF_GRANULE};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:j", options, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'l':
            if (parse_limits(optarg, o) != 0)
                return -1;
            break;
        case 's':
            o->sweep = optarg ? (int)strtol(optarg, &end, 10) : DEFAULT_SWEEP;
            if (optarg && (*end || o->sweep < 2 || o->sweep > MAX_SWEEP)) {
                fprintf(stderr, "whatif: --sweep: bad value '%s' (points, 2..%d)\n", optarg,
                        MAX_SWEEP);
                return -1;
            }
            break;
        case 'j':
            o->json = 1;
            break;
        case 'd':
            o->device = (int)strtol(optarg, &end, 10);
            if (*end || o->device < 0 || o->device > 255) {
                fprintf(stderr, "whatif: --device: bad value '%s' (0..255)\n", optarg);
                return -1;
            }
            break;
        case 'L':
            if (parse_double("--link-gbps", optarg, &o->link_gbps) != 0)
                return -1;
            break;
        case 'T':
            if (parse_double("--tflops", optarg, &o->tflops) != 0)
                return -1;
            break;
        case 'S':
            o->svg = optarg;
            break;
        case 'C':
            if (costs_parse(optarg, &o->costs) != 0) {
                fprintf(stderr, "whatif: --costs: bad value '%s' (accepted: %s)\n", optarg,
                        COSTS_FORMS);
                return -1;
            }
            break;
        case 'G':
            if (whatif_parse_size(optarg, &o->granule) != 0 || o->granule == 0) {
                fprintf(stderr, "whatif: --granule: bad value '%s' (bytes with k/m/g/t)\n", optarg);
                return -1;
            }
            break;
        case 'M':
            if (whatif_parse_size(optarg, &o->spill_min) != 0) {
                fprintf(stderr, "whatif: --spill-min: bad value '%s' (bytes with k/m/g/t)\n",
                        optarg);
                return -1;
            }
            break;
        case 'h':
            printf("usage: memshim-analyze whatif --limit SIZE[,SIZE...] | --sweep[=N] [--svg "
                   "FILE]\n"
                   "       [--device N] [--link-gbps GB/s] [--tflops T] [--spill-min SIZE] "
                   "[--granule SIZE] [--costs h2d=R,d2h=R,gemm=R] "
                   "[--json] TRACE|DIR...\n");
            return 1;
        case ':':
            fprintf(stderr, "whatif: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "whatif: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (o->nlimits == 0 && !o->sweep) {
        fprintf(stderr, "whatif: give --limit SIZE[,SIZE...] or --sweep\n");
        return -1;
    }
    if (o->svg && !o->sweep) {
        fprintf(stderr, "whatif: --svg draws the --sweep curve: add --sweep\n");
        return -1;
    }
    return 0;
}

/* Ceilings of the sweep: n points from the peak down to the smallest workable ceiling. */
static size_t sweep_points(const struct whatif_info *in, int n, uint64_t *out)
{
    if (in->peak <= in->min_ceiling) {
        out[0] = in->peak;
        return 1;
    }
    uint64_t span = in->peak - in->min_ceiling;
    for (int i = 0; i < n; i++)
        out[i] = in->peak - (uint64_t)((double)span * i / (n - 1));
    out[n - 1] = in->min_ceiling;
    return (size_t)n;
}

static int run_one(const char *path, const struct options *o, struct json *j, int many)
{
    char err[512];
    struct whatif_trace *t = whatif_load(path, o->device, err, sizeof err);
    if (!t) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        return 1;
    }
    whatif_set_shim(t, o->spill_min, o->granule);
    whatif_set_costs(t, o->costs.h2d_bytes_per_s, o->costs.d2h_bytes_per_s,
                     o->costs.gemm_flops_per_s);
    const struct whatif_info *in = whatif_info(t);
    if (in->status != READER_OK)
        fprintf(stderr, "memshim-analyze: %s: %s\n",
                in->status == READER_TRUNCATED ? "warning" : "error", in->error);
    struct rates r = rates_for(o, in);
    struct whatif_result res[MAX_LIMITS];
    uint64_t sweep[MAX_SWEEP];
    size_t nsweep = o->sweep ? sweep_points(in, o->sweep, sweep) : 0;
    struct whatif_result *pts = nsweep ? calloc(nsweep, sizeof *pts) : NULL;
    int rc = nsweep && !pts ? 1 : 0;
    size_t done = 0, swept = 0;
    for (; rc == 0 && done < o->nlimits; done++)
        if (whatif_simulate(t, o->limits[done], &res[done]) != 0)
            rc = 1;
    for (; rc == 0 && swept < nsweep; swept++)
        if (whatif_simulate(t, sweep[swept], &pts[swept]) != 0)
            rc = 1;
    if (rc) {
        fprintf(stderr, "memshim-analyze: %s: out of memory\n", path);
    } else if (o->json) {
        json_begin_object(j, NULL);
        json_info(j, in, &r);
        json_begin_array(j, "limits");
        for (size_t i = 0; i < done; i++)
            json_result(j, &res[i], &r, 1);
        json_end_array(j);
        if (nsweep) {
            json_begin_array(j, "sweep");
            for (size_t i = 0; i < swept; i++)
                json_result(j, &pts[i], &r, 0);
            json_end_array(j);
        }
        json_end_object(j);
    } else {
        if (many)
            fputc('\n', stdout);
        print_header(stdout, in, &r);
        if (done) {
            fputc('\n', stdout);
            print_totals(stdout, res, done, &r);
            for (size_t i = 0; i < done; i++)
                if (res[i].feasible && (!res[i].fits || whatif_bytes(&res[i].t[WHATIF_SHIM]) > 0))
                    print_steps(stdout, &res[i]);
        }
        if (nsweep) {
            fprintf(stdout, "\nSweep from the peak down to the smallest workable ceiling:\n");
            print_totals(stdout, pts, swept, &r);
        }
    }
    if (rc == 0 && o->svg && nsweep) {
        FILE *f = cli_output(o->svg);
        if (!f)
            rc = 1;
        else {
            write_svg(f, pts, swept, in);
            rc = cli_output_close(f, o->svg) ? 1 : 0;
        }
    }
    for (size_t i = 0; i < done; i++)
        whatif_result_free(&res[i]);
    for (size_t i = 0; i < swept; i++)
        whatif_result_free(&pts[i]);
    free(pts);
    int st = in->status;
    whatif_free(t);
    return rc ? rc : st == READER_OK || st == READER_TRUNCATED ? 0 : 1;
}

int whatif_command(int argc, char **argv)
{
    struct options o;
    int p = parse(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    if (o.svg && traces.count > 1) {
        fprintf(stderr, "whatif: --svg draws one trace; name one\n");
        cli_traces_free(&traces);
        return 2;
    }
    struct json j;
    json_init(&j, stdout, 1);
    if (o.json && traces.count > 1) {
        json_begin_object(&j, NULL);
        json_begin_array(&j, "traces");
    }
    int rc = 0;
    for (size_t i = 0; i < traces.count; i++) {
        int r = run_one(traces.paths[i], &o, &j, i > 0);
        rc = r > rc ? r : rc;
    }
    if (o.json && traces.count > 1) {
        json_end_array(&j);
        json_end_object(&j);
    }
    cli_traces_free(&traces);
    return fflush(stdout) == 0 ? rc : 1;
}
