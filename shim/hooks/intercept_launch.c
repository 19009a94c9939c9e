/* intercept_launch: kernel launches → access.h; see intercept_launch.h. */
#include "intercept_launch.h"

#include "access.h"
#include "intercept_cublas.h"
#include "launch_memo.h"
#include "launch_scan.h"
#include "arena.h"
#include "classify.h"
#include "registry.h"
#include "rules.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#define RT_FN(name) (real_runtime_ready() ? REAL(name) : NULL)

/* Words of parameters scanned per function (8 KiB of parameters; the rest is not scanned). */
#define LAUNCH_MAX_WORDS 1024
/* Functions whose layout is remembered (open addressing, never removed). */
#define LAUNCH_SLOTS 65536u
#define LAUNCH_PROBE 64u
/* Allocations recorded per launch. */
#define LAUNCH_MAX_HITS 64

enum launch_api { LAUNCH_RT = 0, LAUNCH_DRV = 1 };

/* A parameter's 8-byte-aligned words, scanned one after another: the pointers of a by-value
 * struct sit among its sizes and strides, so every word of it is read. */
struct launch_run {
    uint16_t param;
    uint16_t off;     /* byte offset of its first word inside the parameter */
    uint16_t count;   /* words */
    uint8_t readonly; /* 1: the parameter is declared read-only by a `readonly` rule; else 0 */
};

/* What a launch needs to know of its function, learnt at its first launch. */
struct launch_fn {
    uintptr_t key;
    uint8_t api;
    /* Its words do not cover every parameter: the layout query failed (or is missing), or the
     * layout went past what is scanned. A launch with a parameter array then takes the blind
     * path (launch_blind). */
    uint8_t blind;
    uint16_t nruns;
    const char *name;
    struct launch_run runs[];
};

static _Atomic(struct launch_fn *) launch_table[LAUNCH_SLOTS];

static inline uint32_t launch_hash(uintptr_t key, int api)
{
    return (uint32_t)(((key ^ (uint64_t)api) * 0x9e3779b97f4a7c15ull) >> 44);
}

/* Parameter layout → the words worth scanning: the 8-byte-aligned words of parameters of at
 * least 8 bytes (a smaller one cannot hold a pointer), one run per parameter, LAUNCH_MAX_WORDS
 * in all (*words: so far). A word left out sets *blind. */
static size_t launch_add_words(struct launch_run *w, size_t n, size_t *words, size_t param,
                               size_t offset, size_t size, uint8_t *blind)
{
    size_t at = (offset + 7) & ~(size_t)7;
    size_t count = at + 8 <= offset + size ? (offset + size - at) / 8 : 0;
    if (count == 0)
        return n;
    if (param > UINT16_MAX || at - offset > UINT16_MAX || *words == LAUNCH_MAX_WORDS) {
        *blind = 1;
        return n;
    }
    if (count > LAUNCH_MAX_WORDS - *words) {
        count = LAUNCH_MAX_WORDS - *words;
        *blind = 1;
    }
    *words += count;
    w[n++] = (struct launch_run){(uint16_t)param, (uint16_t)(at - offset), (uint16_t)count, 0};
    return n;
}

static const char *launch_host_symbol(const void *fn)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_sname && info.dli_saddr == fn ? info.dli_sname : NULL;
}

/* Ask the runtime for a function's layout and name. A query past the last parameter fails and
 * the runtime remembers that failure as its last error: clear it again unless the program
 * already had one pending.
 *
 * *blind when the layout is not known in full. A failing first query is taken as "unknown",
 * not as "no parameters": the error for an index past the last parameter is not documented as
 * distinct from the error of a function without parameter information, and mistaking a kernel
 * that writes through its parameters for one without any would let a GEMM be replayed from
 * changed inputs. A parameterless kernel pays for that only when it is launched with a
 * parameter array (launch_note). */
static size_t launch_learn_rt(const void *func, struct launch_run *w, const char **name,
                              uint8_t *blind)
{
    cudaError_t (*info)(const void *, size_t, size_t *, size_t *) = REAL(cudaFuncGetParamInfo);
    cudaError_t (*get_name)(const char **, const void *) = REAL(cudaFuncGetName);
    cudaError_t (*peek)(void) = REAL(cudaPeekAtLastError);
    cudaError_t (*get_last)(void) = REAL(cudaGetLastError);
    cudaError_t pending = peek ? peek() : cudaSuccess;
    size_t n = 0, i = 0, words = 0, off, size;
    for (; info && !*blind && info(func, i, &off, &size) == cudaSuccess; i++)
        n = launch_add_words(w, n, &words, i, off, size, blind);
    *blind |= i == 0;
    *name = NULL;
    if (get_name && get_name(name, func) != cudaSuccess)
        *name = NULL;
    if (!*name)
        *name = launch_host_symbol(func);
    if (pending == cudaSuccess && get_last)
        get_last();
    return n;
}

/* The driver's answer, read like launch_learn_rt's. */
static size_t launch_learn_drv(CUfunction f, struct launch_run *w, const char **name,
                               uint8_t *blind)
{
    CUresult (*info)(CUfunction, size_t, size_t *, size_t *) = REAL(cuFuncGetParamInfo);
    CUresult (*get_name)(const char **, CUfunction) = REAL(cuFuncGetName);
    size_t n = 0, i = 0, words = 0, off, size;
    for (; info && !*blind && info(f, i, &off, &size) == CUDA_SUCCESS; i++)
        n = launch_add_words(w, n, &words, i, off, size, blind);
    *blind |= i == 0;
    *name = NULL;
    if (get_name && get_name(name, f) != CUDA_SUCCESS)
        *name = NULL;
    return n;
}

/* The user's `readonly` rules for this function, matched once here and kept in its runs. */
static void launch_mark_readonly(struct launch_run *w, size_t n, const char *name)
{
    uint64_t mask[RULES_READONLY_WORDS];
    if (!classify_readonly(name, mask))
        return;
    for (size_t i = 0; i < n; i++)
        if (w[i].param < RULES_READONLY_PARAMS)
            w[i].readonly = (mask[w[i].param / 64] >> (w[i].param % 64)) & 1;
}

/* Learn the function `key` and put it in the first free slot from probe p of its hash h on.
 * Apart from launch_fn_of: its layout buffer (8 KiB) stays out of every launch's frame. */
static MS_NOINLINE MS_COLD const struct launch_fn *launch_fn_learn(uintptr_t key, int api,
                                                                   uint32_t h, uint32_t p)
{
    struct launch_run w[LAUNCH_MAX_WORDS];
    const char *name;
    uint8_t blind = 0;
    size_t n = api == LAUNCH_RT ? launch_learn_rt((const void *)key, w, &name, &blind)
                                : launch_learn_drv((CUfunction)key, w, &name, &blind);
    launch_mark_readonly(w, n, name);
    struct launch_fn *mine = arena_alloc(sizeof *mine + n * sizeof w[0]);
    if (!mine)
        return NULL;
    *mine = (struct launch_fn){.key = key,
                               .api = (uint8_t)api,
                               .blind = blind,
                               .nruns = (uint16_t)n,
                               .name = name ? name : "kernel"};
    memcpy(mine->runs, w, n * sizeof w[0]);
    /* Losing the race to another thread learning the same function is harmless: the loser's
     * copy stays unused in the arena. */
    for (; p < LAUNCH_PROBE; p++) {
        _Atomic(struct launch_fn *) *slot = &launch_table[(h + p) % LAUNCH_SLOTS];
        struct launch_fn *expect = NULL;
        if (atomic_compare_exchange_strong(slot, &expect, mine))
            return mine;
        if (expect->key == key && expect->api == api)
            return expect;
    }
    return mine;
}

/* The cached description of a function, learnt on first sight. NULL only when out of memory
 * or the table is full (the launch then takes the blind path when it has a parameter array). */
static inline const struct launch_fn *launch_fn_of(uintptr_t key, int api)
{
    /* The function the launch memory expects next skips the table (a miss a launch). */
    const struct launch_fn *guess = launch_memo_predicted();
    if (guess && guess->key == key && guess->api == api)
        return guess;
    uint32_t h = launch_hash(key, api);
    for (uint32_t p = 0; p < LAUNCH_PROBE; p++) {
        _Atomic(struct launch_fn *) *slot = &launch_table[(h + p) % LAUNCH_SLOTS];
        struct launch_fn *f = atomic_load_explicit(slot, memory_order_acquire);
        if (f && f->key == key && f->api == api)
            return f;
        if (!f)
            return launch_fn_learn(key, api, h, p);
    }
    return NULL;
}

/* The bounds a word must fall in to be a candidate, read once per launch. */
static void launch_bounds(struct launch_bounds *b)
{
    uint64_t lo, hi, map_lo, map_hi;
    registry_bounds(REGISTRY_ADDR, &lo, &hi);
    registry_bounds(REGISTRY_MAP, &map_lo, &map_hi);
    launch_bounds_of(b, lo, hi, map_lo, map_hi);
}

/* launch_hit past the hits it has: the registry's allocation (else mapping) holding `v`, looked
 * up into hits[n] itself (hits has a spare slot past LAUNCH_MAX_HITS), not into a frame. */
static MS_NOINLINE size_t launch_hit_lookup(uint64_t v, uint8_t mode, struct access_use *hits,
                                            uint8_t *modes, size_t n, uint8_t *blind)
{
    struct access_use *u = &hits[n];
    u->ns = REGISTRY_ADDR;
    if (!registry_containing(REGISTRY_ADDR, v, &u->e)) {
        if (!registry_containing(REGISTRY_MAP, v, &u->e))
            return n;
        u->ns = REGISTRY_MAP;
    }
    for (size_t i = 0; i < n; i++)
        if (hits[i].e.addr == u->e.addr && hits[i].ns == u->ns) {
            if (mode != modes[i])
                modes[i] = MST_ACCESS_MAYBE;
            return n;
        }
    if (n < LAUNCH_MAX_HITS) {
        modes[n] = mode;
        return n + 1;
    }
    *blind = 1;
    return n;
}

/* The allocation holding `v`, added to hits once, with `mode` (READ or MAYBE). An allocation
 * reached through a read-only parameter and through another one may be written: MAYBE. One
 * that does not fit sets *blind: it goes unrecorded. Inline: most candidates fall inside an
 * allocation the launch already names (a caching allocator's segment holds most of a kernel's
 * tensors), and then there is no lookup to call. Allocations come first in the lookup, so one of
 * them that holds v is what the registry would answer. */
static inline size_t launch_hit(uint64_t v, uint8_t mode, struct access_use *hits, uint8_t *modes,
                                size_t n, uint8_t *blind)
{
    for (size_t i = 0; i < n; i++)
        if (hits[i].ns == REGISTRY_ADDR && v - hits[i].e.addr < hits[i].e.size) {
            if (mode != modes[i])
                modes[i] = MST_ACCESS_MAYBE;
            return n;
        }
    return launch_hit_lookup(v, mode, hits, modes, n, blind);
}

/* What a launch's parameters name. The words that may be addresses (candidates) are kept, up to
 * LAUNCH_CANDS, unresolved: a launch with the same words as one before, on an unchanged
 * registry, names the same allocations, and then none of them need be looked up (launch_memo).
 * Past LAUNCH_CANDS they are resolved as they come.
 *
 * Each thread has one, not a frame's: what a launch leaves in its frame stays on the stack
 * below the framework's, and the framework builds a later kernel's by-value parameter struct
 * there without filling its padding and unused slots. Candidates and allocations left there
 * would be read back as words of that struct, naming allocations the kernel is not given. One
 * at a time per thread: a launch is recorded only inside the thread's guard. */
struct launch_found {
    size_t n; /* hits so far */
    uint8_t blind;
    uint8_t resolved; /* the candidates were resolved: cand[] is no longer kept */
    uint8_t ncand;
    uint32_t reads; /* bit i: cand[i] came from a read-only parameter (MST_ACCESS_READ) */
    uint64_t cand[LAUNCH_CANDS];
    uint8_t modes[LAUNCH_MAX_HITS];
    struct access_use hits[LAUNCH_MAX_HITS + 1];
};

static MS_TLS struct launch_found launch_found_tls;

/* Fields one by one: the arrays are written only as entries come, never cleared first. */
static inline struct launch_found *launch_found_init(void)
{
    struct launch_found *s = &launch_found_tls;
    s->n = 0;
    s->blind = s->resolved = s->ncand = 0;
    s->reads = 0;
    return s;
}

static inline uint8_t launch_cand_mode(const struct launch_found *s, unsigned i)
{
    return (s->reads >> i) & 1 ? MST_ACCESS_READ : MST_ACCESS_MAYBE;
}

/* Resolve the kept candidates, in the order they came. */
static void launch_resolve(struct launch_found *s)
{
    if (s->resolved)
        return;
    s->resolved = 1;
    for (uint8_t i = 0; i < s->ncand; i++)
        s->n = launch_hit(s->cand[i], launch_cand_mode(s, i), s->hits, s->modes, s->n, &s->blind);
}

/* `readonly`: 0 or 1, as kept in a run; the access mode is made of it only for a hit. */
static inline void launch_take(struct launch_found *s, uint64_t v, uint32_t readonly)
{
    if (!s->resolved) {
        if (s->ncand < LAUNCH_CANDS) {
            s->reads |= readonly << s->ncand;
            s->cand[s->ncand++] = v;
            return;
        }
        launch_resolve(s);
    }
    s->n = launch_hit(v, readonly ? MST_ACCESS_READ : MST_ACCESS_MAYBE, s->hits, s->modes, s->n,
                      &s->blind);
}

/* The `count` words at p, one at a time. */
static inline void launch_scan_words(const struct launch_bounds *b, const char *p, size_t count,
                                     uint32_t readonly, struct launch_found *s)
{
    for (size_t k = 0; k < count; k++) {
        uint64_t v;
        memcpy(&v, p + 8u * k, sizeof v);
        if (launch_may_hit(b, v, 0))
            launch_take(s, v, readonly);
    }
}

/* The candidates among f's parameters, one at a time. */
static void launch_scan(const struct launch_fn *f, void **params, const struct launch_bounds *b,
                        struct launch_found *s)
{
    for (uint16_t r = 0; r < f->nruns; r++) {
        const char *p = params[f->runs[r].param];
        if (p)
            launch_scan_words(b, p + f->runs[r].off, f->runs[r].count, f->runs[r].readonly, s);
    }
}

#if defined(__x86_64__)
/* The words of p whose bits m holds (bit i: word i), in order. */
static inline void launch_take_bits(struct launch_found *s, const char *p, uint64_t m,
                                    uint32_t readonly)
{
    for (; m; m &= m - 1) {
        uint64_t w;
        memcpy(&w, p + 8u * (unsigned)__builtin_ctzll(m), sizeof w);
        launch_take(s, w, readonly);
    }
}

/* A run of one word (a pointer parameter, most of them), tested alone: the vector scan's
 * bookkeeping costs more than the compare. */
static inline void launch_take_one(struct launch_found *s, const struct launch_bounds *b,
                                   const char *p, uint32_t readonly, int one)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    if (launch_may_hit(b, v, one))
        launch_take(s, v, readonly);
}

/* A run by 64 words at a time: one bitmap word of candidates each, taken in order. */
__attribute__((target("avx2"))) static MS_HOT void
launch_scan_runs_avx2(const struct launch_fn *f, void **params, const struct launch_bounds *b,
                      struct launch_found *s, int one)
{
    struct launch_vbounds vb;
    launch_vbounds_of(&vb, b);
    for (uint16_t r = 0; r < f->nruns; r++) {
        const struct launch_run *run = &f->runs[r];
        const char *p = params[run->param];
        if (!p)
            continue;
        p += run->off;
        if (run->count == 1) {
            launch_take_one(s, b, p, run->readonly, one);
            continue;
        }
        for (unsigned k = 0; k < run->count; k += 64) {
            unsigned n = run->count - k < 64 ? run->count - k : 64;
            launch_take_bits(s, p + 8u * k, launch_scan64_avx2(&vb, b, p + 8u * k, n, one),
                             run->readonly);
        }
    }
}

/* Two copies: one test where the bounds are one range (no mapping is tracked, most often, or
 * the mappings lie beside the allocations), two where they are not. */
__attribute__((target("avx2"))) static void launch_scan_avx2(const struct launch_fn *f,
                                                             void **params,
                                                             const struct launch_bounds *b,
                                                             struct launch_found *s)
{
    if (b->one)
        launch_scan_runs_avx2(f, params, b, s, 1);
    else
        launch_scan_runs_avx2(f, params, b, s, 0);
}

/* A run by 64 words at a time: one bitmap word of candidates each, taken in order. */
__attribute__((target("avx512f"))) static MS_HOT void
launch_scan_runs_avx512(const struct launch_fn *f, void **params, const struct launch_bounds *b,
                        struct launch_found *s, int one)
{
    struct launch_zbounds zb;
    launch_zbounds_of(&zb, b);
    for (uint16_t r = 0; r < f->nruns; r++) {
        const struct launch_run *run = &f->runs[r];
        const char *p = params[run->param];
        if (!p)
            continue;
        p += run->off;
        if (run->count == 1) {
            launch_take_one(s, b, p, run->readonly, one);
            continue;
        }
        for (unsigned k = 0; k < run->count; k += 64) {
            unsigned n = run->count - k < 64 ? run->count - k : 64;
            launch_take_bits(s, p + 8u * k, launch_scan64_avx512(&zb, p + 8u * k, n, one),
                             run->readonly);
        }
    }
}

/* One copy for one range, one for two, as launch_scan_avx2. */
__attribute__((target("avx512f"))) static void launch_scan_avx512(const struct launch_fn *f,
                                                                  void **params,
                                                                  const struct launch_bounds *b,
                                                                  struct launch_found *s)
{
    if (b->one)
        launch_scan_runs_avx512(f, params, b, s, 1);
    else
        launch_scan_runs_avx512(f, params, b, s, 0);
}
#endif

enum launch_isa { LAUNCH_ISA_UNKNOWN = -1, LAUNCH_ISA_SCALAR, LAUNCH_ISA_AVX2, LAUNCH_ISA_AVX512 };

/* The widest scan this processor runs, decided at the first launch; threads racing to decide it
 * write the same value. */
static _Atomic int launch_isa = LAUNCH_ISA_UNKNOWN;

static MS_COLD int launch_isa_of(void)
{
    int isa = LAUNCH_ISA_SCALAR;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
        isa = LAUNCH_ISA_AVX512;
    else if (__builtin_cpu_supports("avx2"))
        isa = LAUNCH_ISA_AVX2;
#endif
    atomic_store_explicit(&launch_isa, isa, memory_order_relaxed);
    return isa;
}

static void launch_scan_params(const struct launch_fn *f, void **params, struct launch_found *s)
{
    struct launch_bounds b;
    launch_bounds(&b);
    int isa = atomic_load_explicit(&launch_isa, memory_order_relaxed);
    if (__builtin_expect(isa == LAUNCH_ISA_UNKNOWN, 0))
        isa = launch_isa_of();
#if defined(__x86_64__)
    if (isa == LAUNCH_ISA_AVX512) {
        launch_scan_avx512(f, params, &b, s);
        return;
    }
    if (isa == LAUNCH_ISA_AVX2) {
        launch_scan_avx2(f, params, &b, s);
        return;
    }
#endif
    launch_scan(f, params, &b, s);
}

/* The `extra` form: one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER/_SIZE). Parameters sit
 * at their natural alignment in it, so a pointer is one of its 8-byte-aligned words, and every
 * word is taken as a parameter that may be written: safe without the layout. *blind when part
 * of it goes unscanned: a list without its end in reach, a buffer without its size, or one
 * longer than the words scanned. */
static void launch_scan_extra(void **extra, struct launch_found *s)
{
    const char *buf = NULL;
    size_t size = 0, i = 0;
    int sized = 0;
    for (; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            buf = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
            size = *(const size_t *)extra[i + 1];
            sized = 1;
        }
    }
    if (extra[i] != CU_LAUNCH_PARAM_END || (buf && !sized) || size > 8u * LAUNCH_MAX_WORDS)
        s->blind = 1;
    if (!buf)
        return;
    struct launch_bounds b;
    launch_bounds(&b);
    size_t words = size / 8 < LAUNCH_MAX_WORDS ? size / 8 : LAUNCH_MAX_WORDS;
    launch_scan_words(&b, buf, words, 0, s); /* no rule names a word of it */
}

/* A launch the shim cannot see into: a parameter array without a known layout, or more
 * allocations than one launch records. Any allocation may be written, so no lineage can be
 * trusted afterwards: every dropped output is recomputed now, while its inputs are intact,
 * and every lineage is forgotten (residency.h). Cold: a launch of a fully learnt layout that
 * names at most LAUNCH_MAX_HITS allocations never comes here. */
static MS_COLD int launch_blind(void)
{
    return track_forget_lineages();
}

/* Record the launch as a repeat when this thread made one like it before (launch_memo.h): 1
 * when done; else 0, with where to keep it in *at once it is recorded in full. */
static int launch_repeat(const struct launch_found *s, struct launch_key *k,
                         struct launch_memo_place *at, struct access_shape *shape)
{
    k->version = registry_version();
    k->reads = s->reads;
    k->ncand = s->ncand;
    k->cand = s->cand;
    return REGISTRY_VERSION_STEADY(k->version) && launch_memo_find(k, at, shape) &&
           access_repeat_shape(shape);
}

/* Record one launch of the function `key`. -1: do not launch (residency failed). */
static int launch_note(uintptr_t key, int api, uint64_t stream, void **params, void **extra)
{
    const struct launch_fn *f = launch_fn_of(key, api);
    struct launch_found *s = launch_found_init();
    if (f && params) {
        launch_scan_params(f, params, s);
        s->blind |= f->blind;
    } else if (params) {
        s->blind = 1; /* no description: the array cannot be read */
    } else if (extra) {
        launch_scan_extra(extra, s);
    }
    /* A launch the shim cannot read in full may write any allocation, repeat or not. */
    uint8_t blind = s->blind;
    if (__builtin_expect(blind, 0) && launch_blind() < 0)
        return -1;
    /* A launch told apart by its kept words alone may repeat one made before: a blind one too,
     * as its record is made of the words read. */
    struct launch_key k = {.fn = key, .stream = stream, .api = (uint8_t)api};
    struct launch_memo_place at = {0};
    struct access_shape shape;
    if (f && params && !s->resolved && launch_repeat(s, &k, &at, &shape)) {
        launch_memo_follow(&at, f, &shape);
        return 0;
    }
    launch_resolve(s);
    /* More allocations than a record holds: blind only now. (Without a parameter array nor a
     * buffer the kernel is given nothing to write through.) */
    if (__builtin_expect(s->blind && !blind, 0) && launch_blind() < 0)
        return -1;
    struct access_op op = {.kind = MST_OP_KERNEL,
                           .dtype_a = 0xff,
                           .dtype_b = 0xff,
                           .dtype_c = 0xff,
                           .stream = stream,
                           .name = f ? f->name : "kernel"};
    int r = access_record_allocations_shape(&op, s->hits, s->modes, s->n, at.entry ? &shape : NULL);
    if (at.entry && shape.slot) {
        launch_memo_keep(&at, &k, &shape);
        launch_memo_follow(&at, f, &shape);
    }
    return r;
}

/* Whether a launch is recorded. Read without taking anything, so that a driver launch passed
 * through (the runtime's launch calls the driver's, inside the one being recorded) is a jump to
 * the real function, without the recording path's frame and its saved registers. */
static inline int launch_wanted(void)
{
    /* Work cuBLAS issues inside a GEMM belongs to the GEMM's record (its operands and
     * workspace are already resident and pinned): recording it again would count it twice. */
    return !guard_held() && access_level() == ACCESS_ALL && access_recording() && !guard_in_blas();
}

static inline int launch_enter(void)
{
    return launch_wanted() && track_guard_enter();
}

#define U(p) ((uint64_t)(uintptr_t)(p))

/* ---- runtime ---- */

#define RT_LAUNCH_WRAP(real_fn, note, call)                                                        \
    do {                                                                                           \
        if (!(real_fn))                                                                            \
            return cudaErrorInitializationError;                                                   \
        if (!launch_enter())                                                                       \
            return call;                                                                           \
        cudaError_t r_ = (note) < 0 ? cudaErrorMemoryAllocation : call;                            \
        access_done();                                                                             \
        track_guard_leave();                                                                       \
        return r_;                                                                                 \
    } while (0)

#define RT_LAUNCH(name, fn_type)                                                                   \
    cudaError_t name(fn_type func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,     \
                     cudaStream_t stream)                                                          \
    {                                                                                              \
        cudaError_t (*fn)(fn_type, dim3, dim3, void **, size_t, cudaStream_t) = RT_FN(name);       \
        RT_LAUNCH_WRAP(fn, launch_note(U(func), LAUNCH_RT, U(stream), args, NULL),                 \
                       fn(func, gridDim, blockDim, args, sharedMem, stream));                      \
    }
RT_LAUNCH(cudaLaunchKernel, const void *)
RT_LAUNCH(cudaLaunchKernel_ptsz, const void *)
/* A cudaKernel_t is accepted wherever the runtime takes a function as `const void *`. */
RT_LAUNCH(__cudaLaunchKernel, cudaKernel_t)
RT_LAUNCH(__cudaLaunchKernel_ptsz, cudaKernel_t)

#define RT_LAUNCH_EX(name)                                                                         \
    cudaError_t name(const cudaLaunchConfig_t *config, const void *func, void **args)              \
    {                                                                                              \
        cudaError_t (*fn)(const cudaLaunchConfig_t *, const void *, void **) = RT_FN(name);        \
        RT_LAUNCH_WRAP(                                                                            \
            fn, launch_note(U(func), LAUNCH_RT, config ? U(config->stream) : 0, args, NULL),       \
            fn(config, func, args));                                                               \
    }
RT_LAUNCH_EX(cudaLaunchKernelExC)
RT_LAUNCH_EX(cudaLaunchKernelExC_ptsz)

/* ---- driver ---- */

/* The driver hook `name` (parameters `params`, passed on as `args`): a launch that is not
 * recorded goes straight to the real function once the driver is resolved; name##_recorded
 * resolves it where it is not, and records the others with `note`. */
#define DRV_LAUNCH_HOOK(name, params, args, note)                                                  \
    static MS_NOINLINE CUresult name##_recorded params                                             \
    {                                                                                              \
        __typeof__(REAL(name)) fn = REAL(name);                                                    \
        if (!(real_driver_resolved() && fn)) { /* else the hook found the launch wanted */         \
            fn = real_driver_ready() ? REAL(name) : NULL;                                          \
            if (!fn)                                                                               \
                return CUDA_ERROR_NOT_INITIALIZED;                                                 \
            if (!launch_wanted())                                                                  \
                return fn args;                                                                    \
        }                                                                                          \
        if (!track_guard_enter())                                                                  \
            return fn args;                                                                        \
        CUresult r_ = (note) < 0 ? CUDA_ERROR_OUT_OF_MEMORY : fn args;                             \
        access_done();                                                                             \
        track_guard_leave();                                                                       \
        return r_;                                                                                 \
    }                                                                                              \
    CUresult name params                                                                           \
    {                                                                                              \
        __typeof__(REAL(name)) fn = REAL(name);                                                    \
        if (real_driver_resolved() && fn && !launch_wanted())                                      \
            return fn args;                                                                        \
        return name##_recorded args;                                                               \
    }

#define DRV_LAUNCH(name)                                                                           \
    DRV_LAUNCH_HOOK(name,                                                                          \
                    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,                   \
                     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,        \
                     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,        \
                     void **kernelParams, void **extra),                                           \
                    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,             \
                     sharedMemBytes, hStream, kernelParams, extra),                                \
                    launch_note(U(f), LAUNCH_DRV, U(hStream), kernelParams, extra))
DRV_LAUNCH(cuLaunchKernel)
DRV_LAUNCH(cuLaunchKernel_ptsz)

#define DRV_LAUNCH_EX(name)                                                                        \
    DRV_LAUNCH_HOOK(                                                                               \
        name, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),     \
        (config, f, kernelParams, extra),                                                          \
        launch_note(U(f), LAUNCH_DRV, config ? U(config->hStream) : 0, kernelParams, extra))
DRV_LAUNCH_EX(cuLaunchKernelEx)
DRV_LAUNCH_EX(cuLaunchKernelEx_ptsz)
