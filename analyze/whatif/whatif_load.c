/* whatif_load: read a trace into the arrays the replays walk (whatif_trace.h): one event per
 * ALLOC, FREE and OP of the chosen device, each op's distinct buffers and the next use of each. */
#include "whatif_trace.h"

#include <stdlib.h>
#include <string.h>

#include "reader.h"

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

/* What the load needs of a live buffer besides struct buf: a freed one's entry is reused. */
struct live_buf {
    uint32_t last_use;       /* use index of its latest use, NONE before the first */
    uint32_t producer;       /* op whose GEMM wrote it last, NONE if none */
    uint64_t producer_flops; /* that GEMM's */
    uint64_t last_write;     /* event index + 1 of the last write, 0 never */
};

/* State of the loading pass. */
struct loader {
    struct whatif_trace *t;
    struct addrmap live;
    struct live_buf *lb; /* by struct buf.live */
    size_t nlb, cap_lb;
    uint32_t *lb_free; /* entries of freed buffers */
    size_t nlb_free, cap_lb_free;
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
    t->ev[t->nev++] = (struct ev){
        .id = id, .slot_kind = (uint32_t)(t->nslot - 1) | (uint32_t)kind << EV_KIND_SHIFT};
    return 0;
}

/* A live_buf entry for a new buffer, NONE when out of memory. */
static uint32_t live_take(struct loader *L)
{
    uint32_t i;
    if (L->nlb_free) {
        i = L->lb_free[--L->nlb_free];
    } else {
        if (PUSH(L, lb, nlb, cap_lb) != 0 || PUSH(L, lb_free, nlb, cap_lb_free) != 0 ||
            L->nlb >= NONE - 1)
            return NONE;
        i = (uint32_t)L->nlb++;
    }
    L->lb[i] = (struct live_buf){.last_use = NONE, .producer = NONE};
    return i;
}

/* Buffer b (at `addr`) is freed. */
static void kill_buffer(struct loader *L, uint32_t b, uint64_t addr)
{
    struct buf *x = &L->t->buf[b];
    L->lb_free[L->nlb_free++] = x->live; /* room: lb_free grew with lb */
    x->live = NONE;
    L->device_resident[x->device] -= x->size;
    map_del(&L->live, addr);
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
        kill_buffer(L, old, a->addr); /* a missed free: the address was given out again */
    if (PUSH(t, buf, nbuf, cap_buf) != 0 || t->nbuf >= NONE - 1) {
        L->failed = 1;
        return;
    }
    uint32_t live = live_take(L);
    if (live == NONE) {
        L->failed = 1;
        return;
    }
    uint32_t b = (uint32_t)t->nbuf++;
    t->buf[b] = (struct buf){.size = a->size,
                             .requested = a->requested ? a->requested : a->size,
                             .first_use = NONE,
                             .live = live,
                             .device = a->device,
                             .kind = a->kind};
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
        kill_buffer(L, b, f->addr);
}

/* FLOPs to recompute buffer b by replaying the GEMM that wrote it, if that is still valid now:
 * the GEMM wrote it last (write only: beta = 0), and every buffer the GEMM only read (A, B) is
 * still allocated and has not been written since. A buffer the GEMM read and wrote besides its
 * output is its workspace, scratch whose old content does not matter. 0: it must be moved. */
static uint64_t lineage_flops(const struct loader *L, uint32_t b)
{
    const struct whatif_trace *t = L->t;
    const struct live_buf *x = &L->lb[t->buf[b].live]; /* b is live: an op touched it */
    if (x->producer == NONE)
        return 0;
    const struct op *p = &t->op[x->producer];
    for (uint32_t k = 0; k < p->n; k++) {
        const struct use *u = &t->use[p->first + k];
        uint32_t in = t->buf[u->buf].live;
        if (u->buf == b || u->mode != MST_ACCESS_READ)
            continue;
        if (in == NONE || L->lb[in].last_write > p->ev)
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
            (struct use){.buf = b, .next = NONE, .flops = lineage_flops(L, b), .mode = L->mode[i]};
        struct live_buf *x = &L->lb[t->buf[b].live];
        if (x->last_use == NONE)
            t->buf[b].first_use = u;
        else
            t->use[x->last_use].next = u;
        x->last_use = u;
    }
    /* writes take effect after the op read what it read */
    int gemm = L->op.kind == MST_OP_GEMM && L->op.flops > 0;
    for (uint32_t i = 0; i < L->ntouched; i++) {
        struct live_buf *x = &L->lb[t->buf[L->touched[i]].live];
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
    if (t->nslot > SLOT_MAX || PUSH(t, slot_step, nslot, cap_slot) != 0)
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
        if (ev_kind(v) == EV_OP) {
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
        if (ev_kind(v) == EV_FREE) {
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
        if (resident > t->slot_peak[ev_slot(v)])
            t->slot_peak[ev_slot(v)] = resident;
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
    free(L->lb);
    free(L->lb_free);
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
    whatif_shim_bound(t);
}

void whatif_set_host_use(struct whatif_trace *t, int on)
{
    t->info.no_host_use = !on;
}
