/* stackmemo: see stackmemo.h. */
#define UNW_LOCAL_ONLY
#include "stackmemo.h"

#include <libunwind.h>
#include <pthread.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "compat.h"

#define SM_SETS       64
#define SM_WAYS       8
#define SM_MAX_TABLES 32 /* threads with a memory at once; later ones unwind every time */
#define SM_LEAD       4  /* frames of this module unw_backtrace may report before the caller */
#define SM_MAX_FRAMES 128

/* An entry: the key, then `sm_cap` return addresses and `sm_cap` slot addresses. */
struct sm_entry {
    uintptr_t ip, sp; /* the caller's return address into it, its stack pointer there */
    uint64_t chain;   /* stackmemo_backtrace's *chain: this learning of this stack */
    uint32_t want, n; /* frames asked for; found (fewer than asked: the stack ended there) */
    uintptr_t w[];
};

struct sm_table {
    struct sm_table *next_free; /* on the free list after its thread exited */
    uintptr_t lo, hi;           /* the thread's stack: only stacks inside it are remembered */
    uint8_t next[SM_SETS];      /* per set, the way to replace next */
    unsigned char entries[];
};

static unsigned sm_cap;
static size_t sm_entry_size;
static _Atomic unsigned sm_tables;
static _Atomic uint64_t sm_next_chain = 1;
static struct sm_table *sm_free;
static pthread_mutex_t sm_free_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t sm_exit_key;
static int sm_exit_key_ok;
static MS_TLS struct sm_table *sm_tls;
static MS_TLS uint8_t sm_denied; /* no table for this thread: over the limit, or OOM */
static int sm_avx2;              /* set before any table exists: sm_valid_avx2 may run */

static void sm_thread_exit(void *arg)
{
    struct sm_table *t = arg;
    /* Other threads' destructors may still allocate on this one: they unwind plainly. */
    sm_tls = NULL;
    sm_denied = 1;
    pthread_mutex_lock(&sm_free_lock);
    t->next_free = sm_free;
    sm_free = t;
    pthread_mutex_unlock(&sm_free_lock);
}

void stackmemo_init(unsigned max_frames)
{
    if (sm_entry_size) /* tables already made are laid out for the first size */
        return;
    sm_cap = max_frames > SM_MAX_FRAMES ? 0 : max_frames;
    sm_entry_size = sizeof(struct sm_entry) + 2 * sm_cap * sizeof(uintptr_t);
    if (sm_cap && !sm_exit_key_ok)
        sm_exit_key_ok = pthread_key_create(&sm_exit_key, sm_thread_exit) == 0;
#if defined(__x86_64__)
    sm_avx2 = __builtin_cpu_supports("avx2") != 0;
#endif
}

void stackmemo_atfork_child(void)
{
    pthread_mutex_init(&sm_free_lock, NULL);
}

/* The thread's own stack, where a slot above the stack pointer is always mapped. A program
 * that runs code on stacks of its own (fibers, coroutines) may free one and map a smaller one
 * at the same place: stacks outside this range are unwound every time. Once per thread, from
 * a capture (never inside a CUDA call): glibc may read /proc/self/maps and allocate. */
static int sm_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return -1;
    int r = pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_destroy(&a);
    if (r != 0)
        return -1;
    *lo = (uintptr_t)addr;
    *hi = *lo + size;
    return 0;
}

static MS_NOINLINE MS_COLD struct sm_table *sm_table_new(void)
{
    sm_denied = 1;
    if (!sm_exit_key_ok)
        return NULL;
    pthread_mutex_lock(&sm_free_lock);
    struct sm_table *t = sm_free;
    if (t)
        sm_free = t->next_free;
    pthread_mutex_unlock(&sm_free_lock);
    size_t size = sizeof *t + SM_SETS * SM_WAYS * sm_entry_size;
    if (t)
        memset(t, 0, size); /* a dead thread's stacks say nothing about this one */
    else if (atomic_fetch_add(&sm_tables, 1) < SM_MAX_TABLES)
        t = arena_alloc(size);
    if (!t)
        return NULL;
    if (sm_stack_bounds(&t->lo, &t->hi) != 0) {
        sm_thread_exit(t);
        return NULL;
    }
    if (pthread_setspecific(sm_exit_key, t) != 0) {
        sm_thread_exit(t);
        return NULL;
    }
    sm_denied = 0;
    return sm_tls = t;
}

static inline struct sm_entry *sm_entry_at(struct sm_table *t, unsigned i)
{
    return (struct sm_entry *)(t->entries + i * sm_entry_size);
}

static inline unsigned sm_set(uintptr_t ip, uintptr_t sp)
{
    uint64_t h = ((uint64_t)ip ^ (uint64_t)sp >> 4) * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 57) & (SM_SETS - 1);
}

/* Every remembered slot still holds its return address. The slots lie in frames further out
 * than the caller's, on this thread's stack, which stays mapped while those frames are live.
 * Checked from the outermost: stacks that share a key usually part there (one path of the
 * program, reached from two places). */
#define SM_SLOT_DIFF(k) (*(const uintptr_t *)slots[k] ^ ips[k])
__attribute__((no_sanitize("address"))) static int sm_valid(const struct sm_entry *e)
{
    const uintptr_t *ips = e->w, *slots = e->w + sm_cap;
    uint32_t k = e->n - 1;
    /* four slots a test: a stack that changed is the rare case */
    for (; k >= 4; k -= 4)
        if (SM_SLOT_DIFF(k) | SM_SLOT_DIFF(k - 1) | SM_SLOT_DIFF(k - 2) | SM_SLOT_DIFF(k - 3))
            return 0;
    for (; k >= 1; k--)
        if (SM_SLOT_DIFF(k))
            return 0;
    return 1;
}

#if defined(__x86_64__)
/* Slots [at, at + 8) against their return addresses: two gathers, the differences or-ed. */
__attribute__((target("avx2"), no_sanitize("address"))) static inline __m256i
sm_eight_diff(const uintptr_t *ips, const uintptr_t *slots)
{
    const __m256i *where = (const __m256i *)(const void *)slots;
    const __m256i *want = (const __m256i *)(const void *)ips;
    __m256i lo = _mm256_i64gather_epi64(NULL, _mm256_loadu_si256(where), 1);
    __m256i hi = _mm256_i64gather_epi64(NULL, _mm256_loadu_si256(where + 1), 1);
    return _mm256_or_si256(_mm256_xor_si256(lo, _mm256_loadu_si256(want)),
                           _mm256_xor_si256(hi, _mm256_loadu_si256(want + 1)));
}

__attribute__((target("avx2"), no_sanitize("address"))) static inline int
sm_eight_hold(const uintptr_t *ips, const uintptr_t *slots, uint32_t at)
{
    __m256i d = sm_eight_diff(ips + at, slots + at);
    return _mm256_testz_si256(d, d);
}

/* Slots [at, at + 16): one test and one branch for both halves. */
__attribute__((target("avx2"), no_sanitize("address"))) static inline int
sm_sixteen_hold(const uintptr_t *ips, const uintptr_t *slots, uint32_t at)
{
    ips += at; /* one address for both halves: the second is 64 bytes on */
    slots += at;
    __m256i d = _mm256_or_si256(sm_eight_diff(ips, slots), sm_eight_diff(ips + 8, slots + 8));
    return _mm256_testz_si256(d, d);
}

/* Four slots' words to a gather, in groups of sixteen from the outermost, then eight. The last
 * few go in one more group from slot 1 where the stack is deep enough, which checks some slots
 * twice rather than one at a time (as many words gathered as groups of eight would, in fewer
 * tests); shorter stacks as sm_valid. */
__attribute__((target("avx2"), no_sanitize("address"))) static int
sm_valid_avx2(const struct sm_entry *e)
{
    const uintptr_t *ips = e->w, *slots = e->w + sm_cap;
    uint32_t k = e->n; /* slots [1, k) are left to check */
    for (; k >= 17; k -= 16)
        if (!sm_sixteen_hold(ips, slots, k - 16))
            return 0;
    if (k >= 10) {
        if (e->n >= 17)
            return sm_sixteen_hold(ips, slots, 1);
        if (!sm_eight_hold(ips, slots, k - 8))
            return 0;
        k -= 8;
    }
    if (k >= 2 && e->n >= 9)
        return sm_eight_hold(ips, slots, 1);
    for (; k >= 2; k--)
        if (SM_SLOT_DIFF(k - 1))
            return 0;
    return 1;
}
#else
#define sm_valid_avx2 sm_valid
#endif

/* Step a cursor from here out to the caller's frame, then record where each frame further
 * out keeps its return address. 0 unless it finds exactly the `n` frames of `ips`, each slot
 * between the stack pointer and the top of the thread's stack (`hi`). */
static int sm_record_slots(uintptr_t ip, uintptr_t sp, uintptr_t hi, const uintptr_t *ips,
                           uint32_t n, uint32_t want, uintptr_t *slots)
{
    unw_context_t uc;
    unw_cursor_t c;
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return 0;
    for (int i = 0;; i++) {
        unw_word_t cip, csp;
        if (unw_get_reg(&c, UNW_REG_IP, &cip) || unw_get_reg(&c, UNW_REG_SP, &csp))
            return 0;
        if (cip == ip && csp == sp)
            break;
        if (i > SM_LEAD + 2 || unw_step(&c) <= 0)
            return 0;
    }
    for (uint32_t k = 1; k < n; k++) {
        unw_word_t cip;
        unw_save_loc_t loc;
        if (unw_step(&c) <= 0 || unw_get_reg(&c, UNW_REG_IP, &cip) || cip != ips[k] ||
            unw_get_save_loc(&c, UNW_REG_IP, &loc) || loc.type != UNW_SLT_MEMORY ||
            loc.u.addr < sp || loc.u.addr > hi - sizeof(uintptr_t) ||
            *(const uintptr_t *)loc.u.addr != ips[k])
            return 0;
        slots[k] = loc.u.addr;
    }
    /* A stack that ended early must end there again for the same frames. */
    return n == want || unw_step(&c) <= 0;
}

/* unw_backtrace from the caller's frame out (ip: its return address into the caller); this
 * module's own frames before it are dropped. *found: 0 when the caller's frame was not among
 * the first few, the frames then as unw_backtrace gave them. */
static MS_NOINLINE int sm_unwind(uintptr_t ip, void **ips, int want, int *found)
{
    void *raw[SM_MAX_FRAMES + SM_LEAD];
    want = want > SM_MAX_FRAMES ? SM_MAX_FRAMES : want;
    int n = unw_backtrace(raw, want + SM_LEAD);
    int u = 0;
    while (u < n && u <= SM_LEAD && (uintptr_t)raw[u] != ip)
        u++;
    *found = u < n && u <= SM_LEAD;
    if (!*found)
        u = 0;
    n = n - u > want ? want : n - u;
    memcpy(ips, raw + u, (size_t)n * sizeof *ips);
    return n;
}

/* Unwind for real and, when the stack can be checked by its slots, remember it. */
static MS_NOINLINE int sm_learn(struct sm_table *t, unsigned set, uintptr_t ip, uintptr_t sp,
                                void **ips, int want, uint64_t *chain)
{
    int found;
    int n = sm_unwind(ip, ips, want, &found);
    if (!found)
        return n;
    struct sm_entry *e = sm_entry_at(t, set * SM_WAYS + t->next[set]);
    e->n = 0; /* invalid while it is rewritten */
    memcpy(e->w, ips, (size_t)n * sizeof *ips);
    if (!sm_record_slots(ip, sp, t->hi, e->w, (uint32_t)n, (uint32_t)want, e->w + sm_cap))
        return n;
    e->ip = ip;
    e->sp = sp;
    e->want = (uint32_t)want;
    e->n = (uint32_t)n;
    e->chain = *chain = atomic_fetch_add_explicit(&sm_next_chain, 1, memory_order_relaxed);
    t->next[set] = (uint8_t)((t->next[set] + 1) % SM_WAYS);
    return n;
}

/* The entry `hint` names (stackmemo_backtrace's contract: frames an earlier call of this thread
 * got from its table), or NULL when it names none of this table's entries. */
static inline const struct sm_entry *sm_hinted(const struct sm_table *t, void *const *hint)
{
    uintptr_t at = (uintptr_t)hint - offsetof(struct sm_entry, w);
    uintptr_t lo = (uintptr_t)t->entries;
    return hint && at - lo < SM_SETS * SM_WAYS * sm_entry_size ? (const struct sm_entry *)at : NULL;
}

static inline int sm_usable(const struct sm_entry *e, uintptr_t ip, uintptr_t sp, int want)
{
    return e->ip == ip && e->sp == sp && e->want == (uint32_t)want && e->n &&
           (sm_avx2 ? sm_valid_avx2(e) : sm_valid(e));
}

static inline int sm_use(const struct sm_entry *e, uint64_t *chain, void *const **frames)
{
    *frames = (void *const *)e->w;
    *chain = e->chain;
    return (int)e->n;
}

MS_NOINLINE int stackmemo_backtrace(void **ips, int want, uint64_t *chain, void *const **frames,
                                    void *const *hint)
{
    /* The caller's stack pointer at the call: this frame's call frame address. */
    uintptr_t ip = (uintptr_t)__builtin_return_address(0);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *);
    struct sm_table *t = sm_tls;
    /* A valid entry gives the stack's true frames, whichever of its set it is: the guess first
     * spares checking the set's other stacks with this key (one path reached from several). An
     * entry with this key and `want` was learnt inside this thread's stack with a want the
     * table holds, so the checks below cannot fail for it. */
    const struct sm_entry *h = t ? sm_hinted(t, hint) : NULL;
    if (h && sm_usable(h, ip, sp, want))
        return sm_use(h, chain, frames);
    int found;
    *chain = 0;
    *frames = ips;
    if (want <= 0)
        return 0;
    if ((ms_unlikely(!t) && (sm_denied || !sm_cap || !(t = sm_table_new()))) ||
        (unsigned)want > sm_cap || sp - t->lo >= t->hi - t->lo)
        return sm_unwind(ip, ips, want, &found); /* not remembered */
    unsigned set = sm_set(ip, sp);
    for (unsigned w = 0; w < SM_WAYS; w++) {
        const struct sm_entry *e = sm_entry_at(t, set * SM_WAYS + w);
        if (e != h && sm_usable(e, ip, sp, want))
            return sm_use(e, chain, frames);
    }
    return sm_learn(t, set, ip, sp, ips, want, chain);
}

void stackmemo_prefetch(void *const *frames, int want)
{
    if (!frames || want <= 0 || (unsigned)want > sm_cap)
        return;
    /* The key, then where sm_valid starts (the outermost frame and its slot). Fetching every
     * line of the entry measured slower: the prefetch instructions themselves waited. */
    __builtin_prefetch((const char *)frames - offsetof(struct sm_entry, w));
    __builtin_prefetch(frames + want - 1);
    __builtin_prefetch(frames + sm_cap + want - 1);
    MS_PREFETCH_ONLY();
}
