/* tensors: see tensors.h. Two passes over memory, one over the file: the first collects the
 * tensors, their births and deaths against the backward bursts, and the events that change
 * the pool and the other allocations; the second replays those events in trace order with
 * every tensor's final category and keeps the moment the live tensors peaked. */
#include "tensors.h"

#include "pycaller.h"
#include "reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TN_NONE       UINT32_MAX
#define TN_AUTOGRAD   "pt_autograd"
#define TN_HANDLE_BIT (1ull << 63) /* handles and addresses in one table */

struct tn_tensor {
    uint64_t addr, size;
    uint32_t born_ev, dead_ev;     /* event indices; dead_ev TN_NONE: never freed */
    uint32_t born_pass, dead_pass; /* backward bursts begun by then */
    uint8_t born_in, dead_in;      /* inside a burst */
    uint8_t after_gemm;            /* born after the first GEMM of the trace */
    uint8_t autograd;              /* born on an autograd thread */
    uint8_t category;              /* recorded (kept) or 0 until classified */
    uint32_t site;
    uint32_t fwd_site; /* the forward tensor's site of its backward node's operation; 0: none */
    uint64_t node;     /* tn_node_key of the backward node that allocated it; 0: none */
};

enum tn_ev_kind { TN_T_ALLOC, TN_T_FREE, TN_POOL, TN_OUTSIDE };

struct tn_event {
    uint8_t kind;
    uint8_t category; /* TN_OUTSIDE */
    int64_t bytes;    /* signed change for TN_POOL/TN_OUTSIDE */
    uint32_t tensor;  /* TN_T_* */
    uint64_t time_ns;
};

/* addr -> value, open addressing with backward-shift deletion. */
struct tn_map {
    uint64_t *keys; /* 0: empty */
    uint64_t *vals;
    size_t cap, n;
};

struct tn_alloc_val {
    uint64_t size;
    uint8_t pool, category;
};

struct tn_state {
    struct tn_tensor *t;
    size_t nt, capt;
    struct tn_event *ev;
    size_t nev, capev;
    struct tn_map live_t; /* addr -> tensor index */
    struct tn_map live_a; /* key -> index into vals_a */
    struct tn_alloc_val *vals_a;
    size_t na, capa;
    struct tensor_lines calls; /* autograd threads' tensors, by backward() line */
    struct tensor_lines lines; /* the others, by the program's innermost line */
    struct tn_map fwd_sites;   /* tn_node_key -> site of the node's first forward tensor */
    uint64_t links;            /* AUTOGRAD records */
    uint32_t passes;
    int in_pass;
    int gemm_seen;
};

static size_t tn_slot(const struct tn_map *m, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (m->cap - 1);
}

static int tn_map_put(struct tn_map *m, uint64_t key, uint64_t val);

static int tn_map_grow(struct tn_map *m)
{
    struct tn_map old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->n = 0;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->vals)
        return -1;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i])
            tn_map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
    return 0;
}

static int tn_map_put(struct tn_map *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap && tn_map_grow(m) != 0)
        return -1;
    size_t i = tn_slot(m, key);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    m->n += !m->keys[i];
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

/* Removes key; 1 with its value, 0 when absent. */
static int tn_map_take(struct tn_map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    size_t i = tn_slot(m, key);
    while (m->keys[i] != key) {
        if (!m->keys[i])
            return 0;
        i = (i + 1) & (m->cap - 1);
    }
    *val = m->vals[i];
    m->keys[i] = 0;
    m->n--;
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        uint64_t k = m->keys[j], v = m->vals[j];
        m->keys[j] = 0;
        m->n--;
        tn_map_put(m, k, v);
    }
    return 1;
}

static int tn_map_get(const struct tn_map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    for (size_t i = tn_slot(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
    return 0;
}

static int tn_grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 4096;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int tn_event(struct tn_state *s, struct tn_event e)
{
    if (tn_grow((void **)&s->ev, &s->capev, s->nev, sizeof *s->ev) != 0)
        return -1;
    s->ev[s->nev++] = e;
    return 0;
}

static int tn_is_autograd(const struct reader *r, uint32_t thread)
{
    const struct reader_thread *t = reader_thread(r, thread);
    return t && t->name && strncmp(t->name, TN_AUTOGRAD, strlen(TN_AUTOGRAD)) == 0;
}

/* Tensor traffic on an autograd thread opens (or continues) a backward burst; a tensor born
 * on another thread ends it. */
static void tn_burst(struct tn_state *s, int autograd, int birth)
{
    if (autograd && !s->in_pass) {
        s->in_pass = 1;
        s->passes++;
    } else if (!autograd && birth) {
        s->in_pass = 0;
    }
}

static int tn_tensor_alloc(struct tn_state *s, const struct reader *r,
                           const struct mst_rec_tensor_alloc *a)
{
    int ag = tn_is_autograd(r, a->thread);
    tn_burst(s, ag, 1);
    if (ag ? tensor_lines_add(&s->calls, r, a->site, a->size, pycaller_describe, NULL)
           : tensor_lines_add(&s->lines, r, a->site, a->size, pycaller_innermost, NULL))
        return -1;
    if (tn_grow((void **)&s->t, &s->capt, s->nt, sizeof *s->t) != 0)
        return -1;
    int keep = a->category && !(a->flags & MST_ALLOC_F_CAT_PHASE);
    s->t[s->nt] = (struct tn_tensor){.addr = a->addr,
                                     .size = a->size,
                                     .born_ev = (uint32_t)s->nev,
                                     .dead_ev = TN_NONE,
                                     .born_pass = s->passes,
                                     .born_in = (uint8_t)s->in_pass,
                                     .autograd = (uint8_t)ag,
                                     .after_gemm = (uint8_t)s->gemm_seen,
                                     .category = keep ? a->category : 0,
                                     .site = a->site};
    uint64_t old;
    if (tn_map_take(&s->live_t, a->addr, &old)) { /* a free we never saw */
        s->t[old].dead_ev = (uint32_t)s->nev;
        s->t[old].dead_pass = s->passes;
        if (tn_event(s, (struct tn_event){.kind = TN_T_FREE,
                                          .tensor = (uint32_t)old,
                                          .time_ns = a->time_ns}) != 0)
            return -1;
        s->t[s->nt].born_ev = (uint32_t)s->nev;
    }
    if (tn_map_put(&s->live_t, a->addr, s->nt) != 0)
        return -1;
    return tn_event(s, (struct tn_event){
                           .kind = TN_T_ALLOC, .tensor = (uint32_t)s->nt++, .time_ns = a->time_ns});
}

static int tn_tensor_free(struct tn_state *s, const struct reader *r,
                          const struct mst_rec_tensor_free *f)
{
    uint64_t i;
    if (!tn_map_take(&s->live_t, f->addr, &i))
        return 0;
    tn_burst(s, tn_is_autograd(r, f->thread), 0);
    struct tn_tensor *t = &s->t[i];
    t->dead_ev = (uint32_t)s->nev;
    t->dead_pass = s->passes;
    t->dead_in = (uint8_t)s->in_pass;
    return tn_event(
        s, (struct tn_event){.kind = TN_T_FREE, .tensor = (uint32_t)i, .time_ns = f->time_ns});
}

/* A node as PyTorch names it, as a key of fwd_sites (never 0; thread ids stay far below 2^20,
 * node numbers below 2^44). */
static uint64_t tn_node_key(uint64_t seq, uint64_t fwd_thread)
{
    return fwd_thread << 44 ^ ((seq + 1) & ((1ull << 44) - 1));
}

/* The node of the tensor just born at g->addr: a forward node's first tensor names the node's
 * site, a backward one is kept to be named once every forward node is known. */
static int tn_autograd(struct tn_state *s, const struct mst_rec_autograd *g)
{
    uint64_t i, site, key = tn_node_key(g->seq, g->fwd_thread);
    if (!tn_map_get(&s->live_t, g->addr, &i))
        return 0;
    s->links++;
    if (g->kind == MST_AUTOGRAD_BACKWARD) {
        s->t[i].node = key;
        return 0;
    }
    return tn_map_get(&s->fwd_sites, key, &site) ? 0 : tn_map_put(&s->fwd_sites, key, s->t[i].site);
}

static uint64_t tn_key(uint64_t addr, uint8_t flags)
{
    return (flags & MST_ALLOC_F_HANDLE) ? addr | TN_HANDLE_BIT : addr;
}

static int tn_change(struct tn_state *s, const struct tn_alloc_val *v, int sign, uint64_t t)
{
    return tn_event(s, (struct tn_event){.kind = v->pool ? TN_POOL : TN_OUTSIDE,
                                         .category = v->category,
                                         .bytes = sign * (int64_t)v->size,
                                         .time_ns = t});
}

static int tn_alloc(struct tn_state *s, const struct mst_rec_alloc *a)
{
    if (a->flags & MST_ALLOC_F_HOST)
        return 0;
    if (tn_grow((void **)&s->vals_a, &s->capa, s->na, sizeof *s->vals_a) != 0)
        return -1;
    struct tn_alloc_val v = {a->size, (a->flags & MST_ALLOC_F_POOL) != 0,
                             a->category < MST_CATEGORY_MAX ? a->category : 0};
    s->vals_a[s->na] = v;
    if (tn_map_put(&s->live_a, tn_key(a->addr, a->flags), s->na++) != 0)
        return -1;
    return tn_change(s, &v, 1, a->time_ns);
}

static int tn_free(struct tn_state *s, const struct mst_rec_free *f)
{
    uint64_t i;
    if (!tn_map_take(&s->live_a, tn_key(f->addr, f->flags), &i))
        return 0;
    return tn_change(s, &s->vals_a[i], -1, f->time_ns);
}

static int tn_retag(struct tn_state *s, const struct mst_rec_retag *g)
{
    uint64_t i;
    if (!tn_map_get(&s->live_a, g->addr, &i) || s->vals_a[i].pool)
        return 0;
    struct tn_alloc_val *v = &s->vals_a[i];
    if (tn_change(s, v, -1, g->time_ns) != 0)
        return -1;
    v->category = g->category;
    return tn_change(s, v, 1, g->time_ns);
}

static int tn_record(struct tn_state *s, const struct reader *r, const struct reader_record *rec)
{
    switch (rec->kind) {
    case MST_REC_TENSOR_ALLOC:
        return tn_tensor_alloc(s, r, &rec->u.tensor);
    case MST_REC_TENSOR_FREE:
        return tn_tensor_free(s, r, &rec->u.tensor_free);
    case MST_REC_ALLOC:
        return tn_alloc(s, &rec->u.alloc);
    case MST_REC_FREE:
        return tn_free(s, &rec->u.free);
    case MST_REC_RETAG:
        return tn_retag(s, &rec->u.retag);
    case MST_REC_AUTOGRAD:
        return tn_autograd(s, &rec->u.autograd);
    case MST_REC_OP:
        s->gemm_seen |= rec->u.op.kind == MST_OP_GEMM;
        return 0;
    default:
        return 0;
    }
}

static uint8_t tn_classify(const struct tn_tensor *t, uint32_t last_birth, uint32_t passes)
{
    int to_end = t->dead_ev == TN_NONE || t->dead_ev > last_birth;
    if (!passes && to_end && t->after_gemm)
        return MST_CAT_KV_CACHE;
    if (t->autograd)
        return !to_end && t->dead_in && t->dead_pass == t->born_pass ? MST_CAT_ACTIVATION
                                                                     : MST_CAT_GRADIENT;
    if (t->born_in)
        return MST_CAT_TEMPORARY;
    if (to_end)
        return t->born_pass == 0 ? MST_CAT_PARAMETER : MST_CAT_OPTIMIZER_STATE;
    if (t->dead_in)
        return MST_CAT_ACTIVATION;
    return t->dead_pass == t->born_pass ? MST_CAT_TEMPORARY : MST_CAT_INPUT;
}

/* The tensors alive just after event `at`. */
static int tn_alive_at(const struct tn_tensor *t, size_t at)
{
    return t->born_ev <= at && (t->dead_ev == TN_NONE || t->dead_ev > at);
}

/* The tensors alive at event `at`, each with its line (and, for one a backward node made, the
 * forward line in `fwd`), and those lines. */
static int tn_live_at(const struct tn_state *s, const struct reader *r, size_t at,
                      struct tensor_lines *fwd, struct tensors_peak *out)
{
    int failed = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->nt; i++)
        n += tn_alive_at(&s->t[i], at);
    out->live = calloc(n ? n : 1, sizeof *out->live);
    if (!out->live)
        return -1;
    struct tensor_lines lines = {0};
    for (size_t i = 0; i < s->nt; i++) {
        const struct tn_tensor *t = &s->t[i];
        if (!tn_alive_at(t, at))
            continue;
        struct tensors_live *l = &out->live[out->nlive++];
        *l = (struct tensors_live){t->addr, t->size, t->category, t->autograd, NULL, NULL};
        if (t->fwd_site)
            l->forward = tensor_lines_name(fwd, r, t->fwd_site, pycaller_innermost, &failed);
        if (failed ||
            tensor_lines_add(&lines, r, t->site, t->size, pycaller_innermost, &l->frame) != 0) {
            tensor_lines_free(&lines);
            return -1;
        }
    }
    tensor_lines_take(&lines, &out->peak_lines, &out->npeak_lines);
    tensor_lines_free(&lines);
    return 0;
}

static size_t tn_peak(const struct tn_state *s, struct tensors_peak *out)
{
    size_t at = 0;
    uint64_t by[MST_CATEGORY_MAX] = {0}, outside[MST_CATEGORY_MAX] = {0};
    uint64_t live = 0, pool = 0;
    for (size_t i = 0; i < s->nev; i++) {
        const struct tn_event *e = &s->ev[i];
        const struct tn_tensor *t = e->kind <= TN_T_FREE ? &s->t[e->tensor] : NULL;
        if (e->kind == TN_T_ALLOC) {
            live += t->size;
            by[t->category] += t->size;
        } else if (t) {
            live -= t->size;
            by[t->category] -= t->size;
        } else if (e->kind == TN_POOL) {
            pool += (uint64_t)e->bytes;
        } else {
            outside[e->category] += (uint64_t)e->bytes;
        }
        if (live > out->peak_bytes) {
            at = i;
            out->peak_bytes = live;
            out->time_ns = e->time_ns;
            memcpy(out->by_category, by, sizeof by);
            memcpy(out->outside, outside, sizeof outside);
            out->pool = pool;
            out->cached = pool > live ? pool - live : 0;
        }
    }
    return at;
}

static void tn_release(struct tn_state *s)
{
    tensor_lines_free(&s->calls);
    tensor_lines_free(&s->lines);
    free(s->t);
    free(s->ev);
    free(s->vals_a);
    free(s->live_t.keys);
    free(s->live_t.vals);
    free(s->live_a.keys);
    free(s->live_a.vals);
    free(s->fwd_sites.keys);
    free(s->fwd_sites.vals);
}

/* Backward tensors by the forward line of their node (when the trace links any), into fwd. */
static int tn_forward_lines(struct tn_state *s, const struct reader *r, struct tensor_lines *fwd,
                            struct tensors_peak *out)
{
    for (size_t i = 0; i < s->nt; i++) {
        struct tn_tensor *t = &s->t[i];
        uint64_t site;
        if (!t->autograd)
            continue;
        out->backward++;
        if (t->node && tn_map_get(&s->fwd_sites, t->node, &site))
            t->fwd_site = (uint32_t)site;
        out->linked += t->fwd_site != 0;
        if (s->links && tensor_lines_add(fwd, r, t->fwd_site, t->size, pycaller_innermost, NULL))
            return -1;
    }
    return 0;
}

int tensors_analyze(const char *path, struct tensors_peak *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct reader *r = reader_open(path, err, errlen);
    if (!r)
        return -1;
    struct tn_state s = {0};
    struct reader_record rec;
    int rc = 0;
    while (rc == 0 && reader_next(r, &rec) == READER_RECORD)
        rc = tn_record(&s, r, &rec);
    if (rc != 0) {
        snprintf(err, errlen, "%s: out of memory for the tensor view", path);
        reader_close(r);
        tn_release(&s);
        return -1;
    }
    uint32_t last_birth = 0;
    for (size_t i = 0; i < s.nt; i++)
        last_birth = s.t[i].born_ev;
    for (size_t i = 0; i < s.nt; i++)
        if (!s.t[i].category)
            s.t[i].category = tn_classify(&s.t[i], last_birth, s.passes);
    out->tensors = s.nt;
    out->backward_passes = s.passes;
    size_t at = tn_peak(&s, out);
    struct tensor_lines fwd = {0};
    rc = tn_forward_lines(&s, r, &fwd, out);
    if (rc == 0 && s.nt)
        rc = tn_live_at(&s, r, at, &fwd, out); /* the reader names the sites */
    reader_close(r);
    tensor_lines_take(&fwd, &out->forward_lines, &out->nforward_lines);
    tensor_lines_free(&fwd);
    tensor_lines_take(&s.calls, &out->backward_calls, &out->ncalls);
    tensor_lines_take(&s.lines, &out->program_lines, &out->nlines);
    tn_release(&s);
    if (rc != 0)
        snprintf(err, errlen, "%s: out of memory for the tensor view", path);
    return rc;
}

void tensors_peak_free(struct tensors_peak *p)
{
    free(p->live);
    p->live = NULL;
    p->nlive = 0;
    tensor_lines_free_rows(p->backward_calls, p->ncalls);
    p->backward_calls = NULL;
    p->ncalls = 0;
    tensor_lines_free_rows(p->program_lines, p->nlines);
    p->program_lines = NULL;
    p->nlines = 0;
    tensor_lines_free_rows(p->peak_lines, p->npeak_lines);
    p->peak_lines = NULL;
    p->npeak_lines = 0;
    tensor_lines_free_rows(p->forward_lines, p->nforward_lines);
    p->forward_lines = NULL;
    p->nforward_lines = 0;
}
