/* callsite: stack capture and the interned prefix tree; see callsite.h. */
#define UNW_LOCAL_ONLY
#include "callsite.h"

#include "arena.h"
#include "classify.h"
#include "compat.h"
#include "elfsym.h"
#include "elfsym_cache.h"
#include "log.h"
#include "options.h"
#include "pystack.h"
#include "stackmemo.h"
#include "strtab.h"
#include "trace.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uthash_arena.h"

#define CS_EXTRA           16 /* frames of the shim itself above the user's stack */
#define CS_SELF_GUESS      4  /* what a hook usually adds: itself, track, callsite_capture */
#define CS_FAST_SLOTS      (1u << 16) /* stack hash -> site; a full probe window just means slow */
#define CS_FAST_PROBES     8
#define CS_PAGE_SHIFT      12
#define CS_PAGES           1024 /* up to 4M nodes */
#define CS_MAX_MODULES     1024
#define CS_CAT_UNSET       (-2)
#define CS_DESCRIBE_FRAMES 3

struct cs_key {
    uint64_t parent_id;
    uint64_t ip;
};

struct cs_node {
    struct cs_key key;
    struct cs_node *parent;
    uint64_t path_hash; /* hash of the ips from the root down to this node */
    uint32_t id;
    uint32_t depth;
    const char *symbol;
    const char *module;
    uint64_t module_bias;
    uint64_t symbol_offset; /* ip - start of the symbol */
    UT_hash_handle hh;
};

struct cs_module {
    uint64_t bias, start, end;
    uint32_t id;
    char path[512];
};

static unsigned cs_depth;
static unsigned cs_static_skip;
/* The frames a capture asks for: the depth, and as many of the shim's own (libmemshim.so) as it
 * has above the caller, learned, so that a capture does not unwind CS_EXTRA frames it then
 * throws away. 0: no capture. */
static _Atomic int cs_want;
static int cs_static;                    /* the shim is linked into the program (tests) */
static uintptr_t cs_self_lo, cs_self_hi; /* libmemshim's own text, skipped */
static char cs_exe_path[512];

static pthread_mutex_t cs_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct cs_node *cs_table;
static _Atomic uint32_t cs_next_id = 1;
/* Nodes by id, a page of CS_PAGE_SHIFT bits of ids at a time; beside them, each node's
 * category (CS_CAT_UNSET until first asked), which every allocation reads: dense, so that the
 * categories of a step's few hundred sites share cache lines instead of each costing a miss
 * on its node. */
struct cs_page {
    struct cs_node *node[1u << CS_PAGE_SHIFT];
    _Atomic int16_t category[1u << CS_PAGE_SHIFT];
};
static struct cs_page *_Atomic cs_pages[CS_PAGES];
static _Atomic(struct cs_node *) *cs_fast;
static struct cs_module cs_modules[CS_MAX_MODULES];
static _Atomic unsigned cs_nmodules;
static uint32_t cs_next_module = 1; /* module ids: native objects and Python files */
static uint32_t *cs_py_modules;     /* pystack file id -> MODULE id, 0 until written */
static int cs_failed_logged;
/* Bumped by callsite_reset: a thread's remembered stacks (below) name ids of an older run. */
static _Atomic uint32_t cs_epoch = 1;

/* Per thread, the last few stacks interned and their sites. A program allocates from a few
 * places over and over (a training step repeats its calls): comparing the captured vector
 * with one remembered whole is cheaper than hashing it and walking its node chain. */
#define CS_MEMO_WAYS   2
#define CS_MEMO_FRAMES 32 /* deeper stacks always hash: initial-exec TLS is kept small */
struct cs_memo {
    uint32_t epoch;
    uint32_t next;
    uint32_t count[CS_MEMO_WAYS];
    uint32_t site[CS_MEMO_WAYS];
    void *ips[CS_MEMO_WAYS][CS_MEMO_FRAMES];
};
static MS_TLS struct cs_memo cs_memo;

/* Per thread, sites by the native stack as stackmemo remembers it (its chain number) and the
 * Python frames above it: a known stack under known Python frames is its site at once, without
 * dropping the shim's frames, cutting at the interpreter and hashing the vector again. Tables
 * come from the arena and are not reused after their thread exits, hence the limit. */
#define CS_SITES_SETS   128
#define CS_SITES_WAYS   4
#define CS_SITES_PY     16 /* deeper Python stacks are interned every time */
#define CS_SITES_TABLES 64
struct cs_site_slot {
    uint64_t chain; /* 0: empty */
    uint32_t epoch, site;
    uint32_t npy;
    /* The capture that came after this one last time: its slot (NULL none) and its remembered
     * stack (stackmemo_backtrace's frames), fetched ahead (cs_sites_follow). */
    struct cs_site_slot *next;
    void *const *next_frames;
    uint64_t py_token;    /* pystack_capture_ref's for py, 0 unknown */
    const void *py_chain; /* the own Python chain met here last: the hint when guessed */
    uint64_t py[CS_SITES_PY];
};
struct cs_site_table {
    struct cs_site_slot slot[CS_SITES_SETS * CS_SITES_WAYS];
    uint8_t next[CS_SITES_SETS];
};
static _Atomic unsigned cs_site_tables;
static MS_TLS struct cs_site_table *cs_sites;
static MS_TLS uint8_t cs_sites_denied;
static MS_TLS struct cs_site_slot *cs_sites_prev; /* the thread's last capture's slot */

/* ---- hashing ---- */

static inline uint64_t cs_mix(uint64_t h, uint64_t ip)
{
    h = (h ^ ip) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

#define CS_SEED 0x6d656d7368696dull

/* ---- modules ---- */

/* A loaded object as dl_iterate_phdr describes it (`name` belongs to the loader). */
struct cs_object {
    uintptr_t bias, start, end;
    const char *name;
};

/* What the dynamic linker says about one frame, gathered without cs_mutex held. */
struct cs_frame_info {
    const char *sname; /* dli_sname: the loader's string, valid while the object is loaded */
    uintptr_t saddr;
    struct cs_object object; /* end == 0 when unknown */
    const char *py_file;     /* a Python frame: its file (sname is the function) */
    uint32_t py_file_id;
};

struct cs_phdr_query {
    uintptr_t addr;
    struct cs_object *out;
};

static int cs_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct cs_phdr_query *q = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        lo = s < lo ? s : lo;
        hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
    }
    if (q->addr < lo || q->addr >= hi)
        return 0;
    q->out->bias = info->dlpi_addr;
    q->out->start = lo;
    q->out->end = hi;
    q->out->name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : cs_exe_path;
    return 1;
}

static int cs_find_object(uintptr_t addr, struct cs_object *out)
{
    struct cs_phdr_query q = {addr, out};
    *out = (struct cs_object){0};
    return dl_iterate_phdr(cs_phdr_cb, &q) ? 0 : -1;
}

/* Modules are appended under cs_mutex and published by the count, so this reads without it. */
static struct cs_module *cs_module_cached(uintptr_t ip)
{
    unsigned n = atomic_load_explicit(&cs_nmodules, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
        if (ip >= cs_modules[i].start && ip < cs_modules[i].end)
            return &cs_modules[i];
    }
    return NULL;
}

/* dladdr and dl_iterate_phdr take the dynamic linker's lock, so they run before cs_mutex is
 * taken: a thread inside dlopen (holding that lock) may be allocating through the shim. The
 * exported symbol is dladdr's answer, read from the module file's indexed .dynsym
 * (elfsym_cache_exported): dladdr itself reads the whole table per call. dladdr answers where
 * the file cannot be read (the vDSO, a deleted file). */
static void cs_symbolize(uintptr_t ip, struct cs_frame_info *fi)
{
    *fi = (struct cs_frame_info){0};
    if (pystack_is_key(ip)) {
        uint32_t line;
        if (pystack_describe(ip, &fi->py_file, &fi->py_file_id, &fi->sname, &line) < 0)
            fi->py_file = NULL;
        return;
    }
    const struct cs_module *m = cs_module_cached(ip);
    if (!m)
        cs_find_object(ip, &fi->object);
    const char *path = m ? m->path : fi->object.end ? fi->object.name : NULL;
    uintptr_t bias = m ? m->bias : fi->object.bias;
    const char *name = NULL;
    uint64_t start = 0;
    /* ip is a return address: ip - 1 lies inside the calling function. */
    int found = path ? elfsym_cache_exported(path, ip - 1 - bias, &name, &start) : -1;
    if (found > 0) {
        fi->sname = name;
        fi->saddr = bias + start;
        return;
    }
    Dl_info info;
    if (found < 0 && dladdr((void *)(ip - 1), &info) && info.dli_sname) {
        fi->sname = info.dli_sname;
        fi->saddr = (uintptr_t)info.dli_saddr;
    }
}

/* The module holding ip, written to the trace the first time it is seen. Under cs_mutex. */
static struct cs_module *cs_module_of(uintptr_t ip, const struct cs_object *found)
{
    struct cs_module *m = cs_module_cached(ip);
    unsigned n = atomic_load_explicit(&cs_nmodules, memory_order_relaxed);
    if (m || !found->end || n == CS_MAX_MODULES)
        return m;
    m = &cs_modules[n];
    m->bias = found->bias;
    m->start = found->start;
    m->end = found->end;
    snprintf(m->path, sizeof m->path, "%s", found->name);
    m->id = cs_next_module++;
    atomic_store_explicit(&cs_nmodules, n + 1, memory_order_release);
    struct mst_rec_module rec = {.id = m->id, .base = m->bias, .size = m->end - m->bias};
    trace_record(MST_REC_MODULE, &rec, sizeof rec, m->path, strlen(m->path));
    return m;
}

/* A Python file as a MODULE flagged MST_MODULE_F_PYTHON, written once. Under cs_mutex. */
static uint32_t cs_py_module(const struct cs_frame_info *fi)
{
    if (!fi->py_file || !fi->py_file_id || fi->py_file_id >= PYSTACK_MAX_FILES)
        return 0;
    if (!cs_py_modules && !(cs_py_modules = arena_map(PYSTACK_MAX_FILES * sizeof *cs_py_modules)))
        return 0;
    uint32_t *id = &cs_py_modules[fi->py_file_id];
    if (!*id) {
        *id = cs_next_module++;
        struct mst_rec_module rec = {.id = *id, .flags = MST_MODULE_F_PYTHON};
        trace_record(MST_REC_MODULE, &rec, sizeof rec, fi->py_file, strlen(fi->py_file));
    }
    return *id;
}

/* ---- nodes ---- */

#define CS_IN_PAGE(id) ((id) & ((1u << CS_PAGE_SHIFT) - 1))

static inline struct cs_page *cs_page_of(uint32_t id)
{
    return id >> CS_PAGE_SHIFT < CS_PAGES
               ? atomic_load_explicit(&cs_pages[id >> CS_PAGE_SHIFT], memory_order_acquire)
               : NULL;
}

static struct cs_node *cs_by_id(uint32_t id)
{
    struct cs_page *page = cs_page_of(id);
    return page ? page->node[CS_IN_PAGE(id)] : NULL;
}

static int cs_register_id(struct cs_node *n)
{
    uint32_t id = atomic_load(&cs_next_id);
    if ((id >> CS_PAGE_SHIFT) >= CS_PAGES)
        return -1;
    struct cs_page *page = atomic_load(&cs_pages[id >> CS_PAGE_SHIFT]);
    if (!page) {
        page = arena_alloc(sizeof *page);
        if (!page)
            return -1;
        atomic_store_explicit(&cs_pages[id >> CS_PAGE_SHIFT], page, memory_order_release);
    }
    n->id = id;
    page->node[CS_IN_PAGE(id)] = n;
    atomic_store_explicit(&page->category[CS_IN_PAGE(id)], CS_CAT_UNSET, memory_order_relaxed);
    atomic_store_explicit(&cs_next_id, id + 1, memory_order_release);
    return 0;
}

static struct cs_node *cs_add_node(struct cs_node *n, const struct mst_rec_frame *rec)
{
    trace_record(MST_REC_FRAME, rec, sizeof *rec, NULL, 0);
    int failed = 0;
    HASH_ADD_OOM(hh, cs_table, key, sizeof n->key, n, failed);
    return failed ? NULL : n;
}

/* A Python frame: module = the file, symbol = the function, module_offset = the line (the
 * low half of its key). */
static struct cs_node *cs_new_py_node(struct cs_node *n, const struct cs_frame_info *fi)
{
    uint32_t module_id = cs_py_module(fi);
    const struct strtab_entry *sym = fi->sname ? strtab_intern(fi->sname, strlen(fi->sname)) : NULL;
    n->module = module_id ? fi->py_file : NULL;
    n->symbol = sym ? sym->str : NULL;
    struct mst_rec_frame rec = {.id = n->id,
                                .parent = (uint32_t)n->key.parent_id,
                                .module_id = module_id,
                                .symbol_id = sym ? sym->id : 0,
                                .ip = n->key.ip,
                                .module_offset = (uint32_t)n->key.ip};
    return cs_add_node(n, &rec);
}

/* Create and write a node from what cs_symbolize found; called with cs_mutex held. */
static struct cs_node *cs_new_node(struct cs_node *parent, uintptr_t ip,
                                   const struct cs_frame_info *fi)
{
    struct cs_node *n = arena_alloc(sizeof *n);
    if (!n || cs_register_id(n) < 0)
        return NULL;
    n->key.parent_id = parent ? parent->id : 0;
    n->key.ip = ip;
    n->parent = parent;
    n->depth = parent ? parent->depth + 1 : 1;
    n->path_hash = cs_mix(parent ? parent->path_hash : CS_SEED, ip);
    if (pystack_is_key(ip))
        return cs_new_py_node(n, fi);
    struct cs_module *m = cs_module_of(ip, &fi->object);
    n->module = m ? m->path : NULL;
    n->module_bias = m ? m->bias : 0;
    const struct strtab_entry *sym = fi->sname ? strtab_intern(fi->sname, strlen(fi->sname)) : NULL;
    n->symbol = sym ? sym->str : NULL;
    n->symbol_offset = sym ? ip - fi->saddr : 0;
    struct mst_rec_frame rec = {.id = n->id,
                                .parent = (uint32_t)n->key.parent_id,
                                .module_id = m ? m->id : 0,
                                .symbol_id = sym ? sym->id : 0,
                                .ip = ip,
                                .module_offset = m ? ip - m->bias : 0};
    return cs_add_node(n, &rec);
}

static int cs_matches(const struct cs_node *n, void *const *ips, int count, uint64_t hash)
{
    if (n->path_hash != hash || n->depth != (uint32_t)count)
        return 0;
    for (int i = 0; i < count; i++, n = n->parent) {
        if (n->key.ip != (uintptr_t)ips[i])
            return 0;
    }
    return 1;
}

static void cs_fast_insert(struct cs_node *leaf)
{
    for (unsigned p = 0; p < CS_FAST_PROBES; p++) {
        _Atomic(struct cs_node *) *slot = &cs_fast[(leaf->path_hash + p) & (CS_FAST_SLOTS - 1)];
        struct cs_node *expect = NULL;
        if (atomic_compare_exchange_strong_explicit(slot, &expect, leaf, memory_order_release,
                                                    memory_order_relaxed) ||
            expect == leaf)
            return;
    }
}

/* Follow the stack down the tree from its outermost frame. Returns the deepest node that
 * exists; ips[0 .. *missing) have none yet. Called with cs_mutex held. */
static struct cs_node *cs_walk(void *const *ips, int count, int *missing)
{
    struct cs_node *n = NULL;
    int i = count - 1;
    for (; i >= 0; i--) {
        struct cs_key key = {n ? n->id : 0, (uintptr_t)ips[i]};
        struct cs_node *child;
        HASH_FIND(hh, cs_table, &key, sizeof key, child);
        if (!child)
            break;
        n = child;
    }
    *missing = i + 1;
    return n;
}

static MS_NOINLINE MS_COLD uint32_t cs_intern_slow(void *const *ips, int count)
{
    struct cs_frame_info info[OPT_MAX_STACK_DEPTH];
    int missing;
    callsite_lock();
    struct cs_node *n = cs_walk(ips, count, &missing);
    callsite_unlock();
    for (int i = 0; i < missing; i++)
        cs_symbolize((uintptr_t)ips[i], &info[i]);
    callsite_lock();
    /* Another thread may have added some of the nodes meanwhile: `missing` only shrinks. */
    n = cs_walk(ips, count, &missing);
    for (int i = missing - 1; i >= 0; i--) {
        n = cs_new_node(n, (uintptr_t)ips[i], &info[i]);
        if (!n)
            break;
    }
    if (n && cs_fast)
        cs_fast_insert(n);
    callsite_unlock();
    if (!n && !cs_failed_logged++)
        log_error("out of memory for call sites; new sites are recorded as site 0");
    return n ? n->id : 0;
}

static uint32_t cs_intern_hashed(void *const *ips, int count)
{
    uint64_t h = CS_SEED;
    for (int i = count - 1; i >= 0; i--)
        h = cs_mix(h, (uintptr_t)ips[i]);
    if (ms_likely(cs_fast != NULL)) {
        for (unsigned p = 0; p < CS_FAST_PROBES; p++) {
            struct cs_node *n =
                atomic_load_explicit(&cs_fast[(h + p) & (CS_FAST_SLOTS - 1)], memory_order_acquire);
            if (!n)
                break;
            if (cs_matches(n, ips, count, h))
                return n->id;
        }
    }
    return cs_intern_slow(ips, count);
}

uint32_t callsite_intern(void *const *ips, int count)
{
    if (count <= 0)
        return 0;
    if (count > CS_MEMO_FRAMES)
        return cs_intern_hashed(ips, count);
    struct cs_memo *m = &cs_memo;
    uint32_t epoch = atomic_load_explicit(&cs_epoch, memory_order_relaxed);
    if (ms_unlikely(m->epoch != epoch)) {
        memset(m->count, 0, sizeof m->count);
        m->epoch = epoch;
    }
    for (unsigned w = 0; w < CS_MEMO_WAYS; w++) {
        if (m->count[w] == (uint32_t)count && m->ips[w][0] == ips[0] &&
            memcmp(m->ips[w], ips, (size_t)count * sizeof *ips) == 0)
            return m->site[w];
    }
    uint32_t site = cs_intern_hashed(ips, count);
    if (site) { /* 0: out of memory, tried again next time */
        unsigned w = m->next++ % CS_MEMO_WAYS;
        memcpy(m->ips[w], ips, (size_t)count * sizeof *ips);
        m->count[w] = (uint32_t)count;
        m->site[w] = site;
    }
    return site;
}

/* The native frames up to the interpreter, then the Python frames (innermost first) in place
 * of the interpreter's own frames. */
static uint32_t cs_intern_with_python(void *const *native, int count, const uint64_t *py, int npy)
{
    void *all[OPT_MAX_STACK_DEPTH];
    int n = 0;
    for (; n < count && !pystack_in_interpreter((uintptr_t)native[n]); n++)
        all[n] = native[n];
    for (int i = 0; i < npy && n < OPT_MAX_STACK_DEPTH; i++)
        all[n++] = (void *)(uintptr_t)py[i];
    return callsite_intern(all, n);
}

static MS_NOINLINE MS_COLD struct cs_site_table *cs_sites_new(void)
{
    cs_sites_denied = 1;
    if (atomic_fetch_add(&cs_site_tables, 1) < CS_SITES_TABLES)
        cs_sites = arena_alloc(sizeof *cs_sites);
    cs_sites_denied = cs_sites == NULL;
    return cs_sites;
}

static inline unsigned cs_sites_set(uint64_t chain, const uint64_t *py, int npy)
{
    uint64_t h = chain;
    for (int i = 0; i < npy; i++)
        h = (h ^ py[i]) * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h * 0x9e3779b97f4a7c15ull >> 57) & (CS_SITES_SETS - 1);
}

/* The token, where the slot and the capture both have it, stands for the Python keys; a slot
 * found equal by its keys takes the capture's token, so that the next time one word does. */
static inline int cs_sites_is(struct cs_site_slot *sl, uint64_t chain, const uint64_t *py, int npy,
                              uint64_t token)
{
    if (sl->chain != chain || sl->epoch != atomic_load_explicit(&cs_epoch, memory_order_relaxed))
        return 0;
    if (token && sl->py_token == token)
        return 1;
    if (sl->npy != (uint32_t)npy || memcmp(sl->py, py, (size_t)npy * sizeof *py) != 0)
        return 0;
    if (token)
        sl->py_token = token;
    return 1;
}

/* The slot of (chain, py) in its set, or NULL. */
static struct cs_site_slot *cs_sites_find(struct cs_site_table *t, unsigned set, uint64_t chain,
                                          const uint64_t *py, int npy, uint64_t token)
{
    struct cs_site_slot *sl = &t->slot[set * CS_SITES_WAYS];
    for (unsigned w = 0; w < CS_SITES_WAYS; w++, sl++)
        if (cs_sites_is(sl, chain, py, npy, token))
            return sl;
    return NULL;
}

/* The slot the thread's previous capture was followed by last time: most likely this one's
 * (a step allocates in the same order every step). Its stack's frames in the previous slot's
 * next_frames. */
static inline struct cs_site_slot *cs_sites_guess(void)
{
    const struct cs_site_slot *p = cs_sites_prev;
    return p ? p->next : NULL;
}

static struct cs_site_slot *cs_sites_keep(struct cs_site_table *t, unsigned set, uint64_t chain,
                                          const uint64_t *py, int npy, uint64_t token,
                                          uint32_t site)
{
    struct cs_site_slot *sl = &t->slot[set * CS_SITES_WAYS + t->next[set]];
    t->next[set] = (uint8_t)((t->next[set] + 1) % CS_SITES_WAYS);
    sl->chain = chain;
    sl->epoch = atomic_load_explicit(&cs_epoch, memory_order_relaxed);
    sl->site = site;
    sl->npy = (uint32_t)npy;
    sl->py_token = token;
    sl->py_chain = NULL;
    sl->next = NULL; /* what came after the key it held says nothing of this one's */
    memcpy(sl->py, py, (size_t)npy * sizeof *py);
    return sl;
}

/* A step allocates its tensors in the same order every step, and by the next allocation the
 * framework has pushed out of the core's caches what its capture will read: note slot `sl`
 * (whose stack came from `frames`) as the successor of the thread's previous capture, and start
 * fetching what its own successor read last time. NULL: the chain starts over. */
static void cs_sites_follow(struct cs_site_slot *sl, void *const *frames, const void *py_chain,
                            int want)
{
    struct cs_site_slot *p = cs_sites_prev;
    cs_sites_prev = sl;
    if (!sl)
        return;
    if (sl->py_chain != py_chain)
        sl->py_chain = py_chain;
    if (p && (p->next != sl || p->next_frames != frames)) {
        p->next = sl;
        p->next_frames = frames;
    }
    const struct cs_site_slot *n = sl->next;
    if (!n)
        return;
    __builtin_prefetch(n);
    __builtin_prefetch((const char *)n + 64); /* its Python keys, when the token does not tell */
    stackmemo_prefetch(sl->next_frames, want);
}

static inline int cs_is_self(void *ip)
{
    return (uintptr_t)ip >= cs_self_lo && (uintptr_t)ip < cs_self_hi;
}

/* The shim's frames further out: a hook the program's allocator calls back into (PyTorch's
 * allocate, shim/hooks/torch_alloc.c) sits between two of the program's frames. */
static int cs_drop_self(void **ips, int n)
{
    int k = 0;
    while (k < n && !cs_is_self(ips[k])) /* usually all of them: nothing to move */
        k++;
    for (int i = k; i < n; i++)
        if (!cs_is_self(ips[i]))
            ips[k++] = ips[i];
    return k;
}

MS_NOINLINE uint32_t callsite_capture(void)
{
    int want = atomic_load_explicit(&cs_want, memory_order_relaxed);
    if (!want)
        return 0;
    void *ips[OPT_MAX_STACK_DEPTH + CS_EXTRA + 8];
    unsigned extra = (unsigned)want - cs_depth;
    uint64_t chain = 0;
    void *const *frames;
    struct cs_site_table *t = cs_sites;
    struct cs_site_slot *guess = cs_sites_guess();
    void *const *hint = guess ? cs_sites_prev->next_frames : NULL;
    const void *py_hint = guess ? guess->py_chain : NULL;
    /* One call site, not a copy of it per value of `guess`: its return address keys the stacks
     * stackmemo remembers, and two would hold every stack twice. */
    MS_OPAQUE(guess);
    int n = stackmemo_backtrace(ips, want, &chain, &frames, hint);
    void *const *remembered = frames != ips ? frames : NULL; /* for cs_sites_follow */
    uint64_t pybuf[OPT_MAX_STACK_DEPTH];
    struct pystack_keys pk;
    int npy = pystack_capture_ref(pybuf, (int)cs_depth, py_hint, &pk);
    const uint64_t *py = pk.keys;
    uint64_t token = pk.token;
    int keep = chain && npy <= CS_SITES_PY; /* its site is looked up, or kept after interning */
    if (keep && guess && cs_sites_is(guess, chain, py, npy, token)) {
        cs_sites_follow(guess, remembered, pk.chain, want);
        return guess->site;
    }
    unsigned set = keep ? cs_sites_set(chain, py, npy) : 0;
    if (keep && t) {
        struct cs_site_slot *sl = cs_sites_find(t, set, chain, py, npy, token);
        if (sl) {
            cs_sites_follow(sl, remembered, pk.chain, want);
            return sl->site;
        }
    }
    if (frames != ips) /* a remembered stack: its frames are needed after all */
        memcpy(ips, frames, (size_t)n * sizeof *ips);
    int skip = 0;
    if (cs_static)
        skip = (int)cs_static_skip;
    else
        while (skip < n && cs_is_self(ips[skip]))
            skip++;
    if (!cs_static && n == want && n - skip < (int)cs_depth && extra < CS_EXTRA + 8) {
        /* More of our own frames than expected cut the caller's stack short: unwind again
         * with room for them, and from now on. */
        unsigned more = (unsigned)skip + 2 > extra * 2 ? (unsigned)skip + 2 : extra * 2;
        more = more > CS_EXTRA + 8 ? CS_EXTRA + 8 : more;
        atomic_store_explicit(&cs_want, (int)(cs_depth + more), memory_order_relaxed);
        n = stackmemo_backtrace(ips, (int)(cs_depth + more), &chain, &frames, NULL);
        if (frames != ips)
            memcpy(ips, frames, (size_t)n * sizeof *ips);
        keep = 0; /* kept under the first unwind's number, this would skip the second */
        for (skip = 0; skip < n && cs_is_self(ips[skip]);)
            skip++;
    }
    int count = cs_static ? n - skip : cs_drop_self(ips + skip, n - skip);
    if (count > (int)cs_depth)
        count = (int)cs_depth;
    uint32_t site = npy > 0 ? cs_intern_with_python(ips + skip, count, py, npy)
                            : callsite_intern(ips + skip, count);
    if (keep && site && (t || (!cs_sites_denied && (t = cs_sites_new()))))
        cs_sites_follow(cs_sites_keep(t, set, chain, py, npy, token, site), remembered, pk.chain,
                        want);
    else
        cs_sites_prev = NULL;
    return site;
}

/* ---- categories and descriptions ---- */

/* The name rules see: dladdr's, else the module's .symtab (a static function of a program). */
static const char *cs_rule_symbol(const struct cs_node *f)
{
    if (f->symbol || !f->module || pystack_is_key(f->key.ip))
        return f->symbol;
    return elfsym_cache_name(f->module, f->key.ip - 1 - f->module_bias, NULL);
}

/* Once per site; two threads racing compute the same answer. */
static MS_NOINLINE MS_COLD int cs_classify(struct cs_page *page, uint32_t site)
{
    struct cs_node *n = page->node[CS_IN_PAGE(site)];
    struct classify_frame frames[OPT_MAX_STACK_DEPTH];
    int count = 0;
    for (struct cs_node *f = n; f && count < OPT_MAX_STACK_DEPTH; f = f->parent)
        frames[count++] = (struct classify_frame){cs_rule_symbol(f), f->module};
    int c = classify_site_from(frames, count);
    atomic_store_explicit(&page->category[CS_IN_PAGE(site)], (int16_t)c, memory_order_relaxed);
    return c;
}

MS_HOT int callsite_category(uint32_t site)
{
    struct cs_page *page = site && site < atomic_load_explicit(&cs_next_id, memory_order_acquire)
                               ? cs_page_of(site)
                               : NULL;
    if (!page)
        return -1;
    int c = atomic_load_explicit(&page->category[CS_IN_PAGE(site)], memory_order_relaxed);
    return ms_likely(c != CS_CAT_UNSET) ? c : cs_classify(page, site);
}

/* One frame: its symbol, else module+offset (the offset an offline symbolizer wants). Sets
 * *named when a name was found. */
static size_t cs_describe_frame(const struct cs_node *n, char *buf, size_t size, int *named)
{
    if (pystack_is_key(n->key.ip)) {
        const char *base = n->module ? strrchr(n->module, '/') : NULL;
        *named = n->symbol != NULL;
        return (size_t)snprintf(buf, size, "%s:%u in %s",
                                base ? base + 1 : (n->module ? n->module : "?"),
                                (unsigned)(uint32_t)n->key.ip, n->symbol ? n->symbol : "?");
    }
    const char *sym = n->symbol;
    uint64_t off = n->symbol_offset;
    /* A return address: ip - 1 is inside the calling function. */
    if (!sym && n->module &&
        (sym = elfsym_cache_name(n->module, n->key.ip - 1 - n->module_bias, &off)) != NULL)
        off++;
    *named = sym != NULL;
    if (sym)
        return (size_t)snprintf(buf, size, "%s+0x%llx", sym, (unsigned long long)off);
    const char *base = n->module ? strrchr(n->module, '/') : NULL;
    return (size_t)snprintf(buf, size, "%s+0x%llx", base ? base + 1 : (n->module ? n->module : "?"),
                            (unsigned long long)(n->key.ip - n->module_bias));
}

const char *callsite_describe(uint32_t site, char *buf, unsigned size)
{
    struct cs_node *n = site ? cs_by_id(site) : NULL;
    if (!n) {
        snprintf(buf, size, "%s", cs_depth ? "?" : "? (MEMSHIM_STACK_DEPTH=0)");
        return buf;
    }
    /* The innermost frames up to the first named caller: helpers like `device_alloc` are
     * shared by many sites, their callers tell the sites apart. */
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; n && i < CS_DESCRIBE_FRAMES && len < size; i++, n = n->parent) {
        int named;
        if (i > 0)
            len += (size_t)snprintf(buf + len, size - len, " < ");
        if (len < size)
            len += cs_describe_frame(n, buf + len, size - len, &named);
        if (i > 0 && named)
            break;
    }
    return buf;
}

uint32_t callsite_count(void)
{
    return atomic_load_explicit(&cs_next_id, memory_order_acquire);
}

/* ---- lifecycle ---- */

static void cs_find_self(void)
{
    struct cs_object self;
    cs_static = 1;
    if (cs_find_object((uintptr_t)&callsite_capture, &self) < 0)
        return;
    /* The main program has an empty dlpi_name: then the shim is linked in, not preloaded. */
    cs_static = self.name == cs_exe_path;
    cs_self_lo = self.start;
    cs_self_hi = self.end;
}

void callsite_init(unsigned depth, unsigned static_skip)
{
    cs_depth = depth > OPT_MAX_STACK_DEPTH ? OPT_MAX_STACK_DEPTH : depth;
    cs_static_skip = static_skip;
    ssize_t n = readlink("/proc/self/exe", cs_exe_path, sizeof cs_exe_path - 1);
    cs_exe_path[n > 0 ? n : 0] = '\0';
    cs_find_self();
    unsigned extra = cs_static ? cs_static_skip : CS_SELF_GUESS;
    extra = extra > CS_EXTRA + 8 ? CS_EXTRA + 8 : extra;
    atomic_store(&cs_want, cs_depth ? (int)(cs_depth + extra) : 0);
    if (!cs_depth)
        return;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    stackmemo_init(cs_depth + CS_EXTRA + 8); /* the most frames a capture asks for */
    if (!cs_fast)
        cs_fast = arena_map(CS_FAST_SLOTS * sizeof *cs_fast);
}

unsigned callsite_depth(void)
{
    return cs_depth;
}

void callsite_lock(void)
{
    pthread_mutex_lock(&cs_mutex);
}

void callsite_unlock(void)
{
    pthread_mutex_unlock(&cs_mutex);
}

void callsite_reset(void)
{
    /* Old nodes are abandoned in the arena: ids restart at 1 in the child's new trace. */
    atomic_fetch_add(&cs_epoch, 1);
    cs_table = NULL;
    atomic_store(&cs_next_id, 1);
    for (unsigned i = 0; i < CS_PAGES; i++)
        atomic_store(&cs_pages[i], NULL);
    atomic_store(&cs_nmodules, 0);
    cs_next_module = 1;
    if (cs_py_modules)
        memset(cs_py_modules, 0, PYSTACK_MAX_FILES * sizeof *cs_py_modules);
    if (cs_fast)
        memset((void *)cs_fast, 0, CS_FAST_SLOTS * sizeof *cs_fast);
    pthread_mutex_init(&cs_mutex, NULL);
    stackmemo_atfork_child();
}
