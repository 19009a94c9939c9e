/* pystack: Python frames through CPython's exported C API; see pystack.h. */
#include "pystack.h"

#include "arena.h"
#include "compat.h"
#include "log.h"
#include "pyborrow.h"
#include "real.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "uthash_arena.h"

#define PS_CODE_SLOTS (1u << 18) /* code object address -> id, open addressing */
#define PS_MAX_CODES  (1u << 17) /* ids; past this, new code objects are left out of stacks */
#define PS_PROBES     64
/* (code id, instruction offset) -> line, packed in one word so a slot is claimed and filled by
 * one compare-and-swap: id 17 bits (PS_MAX_CODES), offset 25 bits, line 22 bits. */
#define PS_LINE_SLOTS  (1u << 18)
#define PS_LINE_PROBES 8
#define PS_LASTI_BITS  25
#define PS_LINE_BITS   22
_Static_assert(PS_MAX_CODES <= 1ull << (64 - PS_LASTI_BITS - PS_LINE_BITS),
               "code ids fit a line slot");

#define PS_NAME_MAX 1024

/* The C API, as plain pointers: PyObject and PyFrameObject are opaque here. */
struct ps_api {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    void *(*this_thread_state)(void);
    void *(*current_state)(void); /* optional: the attached thread state, unchecked */
    void *(*get_frame)(void);     /* borrowed */
    void *(*frame_code)(void *);  /* new reference */
    void *(*frame_back)(void *);  /* new reference or NULL */
    int (*frame_line)(void *);
    int (*frame_lasti)(void *); /* optional (3.11+): makes the line a table lookup */
    int (*gc_disable)(void);    /* optional (3.10+): returns whether it was enabled */
    int (*gc_enable)(void);
    void (*incref)(void *);
    void (*decref)(void *);
    void *(*getattr)(void *, const char *);
    const char *(*as_utf8)(void *);
    void (*err_clear)(void);
    /* The pending exception, saved around naming a code object: 3.12's pair, else the old. */
    void *(*err_get_raised)(void);
    void (*err_set_raised)(void *);
    void (*err_fetch)(void **, void **, void **);
    void (*err_restore)(void *, void *, void *);
};

struct ps_slot {
    _Atomic uintptr_t code;
    uint32_t id;
};

struct ps_code {
    const char *function;
    uint32_t file;
    /* Held by a reference (named through the API); a code object named from another thread's
     * frames, read raw, holds none until a thread holding the GIL meets it. */
    _Atomic uint8_t pinned;
};

struct ps_file {
    uint32_t id;
    const char *path;
    UT_hash_handle hh;
};

static int ps_mode = PYSTACK_OFF;
static pthread_once_t ps_once = PTHREAD_ONCE_INIT;
static _Atomic int ps_resolved; /* ps_once has run: the hot path skips pthread_once's call */
static int ps_ok;               /* written once under ps_once */
static struct ps_api api;
static uintptr_t ps_lo, ps_hi; /* the interpreter's object */

static pthread_mutex_t ps_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ps_slot *ps_slots;
static _Atomic uint64_t *ps_lines;
static struct ps_code *ps_codes;
static uint32_t ps_ncodes; /* under ps_mutex */
static struct ps_file *ps_files;
static const char **ps_file_paths;
static uint32_t ps_nfiles;
static int ps_full_logged;

/* ---- resolution ---- */

static void *ps_sym(const char *name)
{
    return real_dlsym(RTLD_DEFAULT, name);
}

#define PS_LOAD(field, name) (*(void **)&api.field = ps_sym(name))

static int ps_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t addr = *(uintptr_t *)arg, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        lo = s < lo ? s : lo;
        hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
    }
    if (addr < lo || addr >= hi)
        return 0;
    ps_lo = lo;
    ps_hi = hi;
    return 1;
}

static void ps_resolve(void)
{
    if (ps_mode == PYSTACK_OFF)
        return;
    int required =
        PS_LOAD(is_initialized, "Py_IsInitialized") && PS_LOAD(gil_check, "PyGILState_Check") &&
        PS_LOAD(this_thread_state, "PyGILState_GetThisThreadState") &&
        PS_LOAD(get_frame, "PyEval_GetFrame") && PS_LOAD(frame_code, "PyFrame_GetCode") &&
        PS_LOAD(frame_back, "PyFrame_GetBack") && PS_LOAD(frame_line, "PyFrame_GetLineNumber") &&
        PS_LOAD(incref, "Py_IncRef") && PS_LOAD(decref, "Py_DecRef") &&
        PS_LOAD(getattr, "PyObject_GetAttrString") && PS_LOAD(as_utf8, "PyUnicode_AsUTF8") &&
        PS_LOAD(err_clear, "PyErr_Clear");
    PS_LOAD(frame_lasti, "PyFrame_GetLasti");
    if (!PS_LOAD(gc_disable, "PyGC_Disable") || !PS_LOAD(gc_enable, "PyGC_Enable"))
        api.gc_disable = NULL;
    if (!PS_LOAD(current_state, "PyThreadState_GetUnchecked"))
        PS_LOAD(current_state, "_PyThreadState_UncheckedGet");
    int saved = (PS_LOAD(err_get_raised, "PyErr_GetRaisedException") &&
                 PS_LOAD(err_set_raised, "PyErr_SetRaisedException")) ||
                (PS_LOAD(err_fetch, "PyErr_Fetch") && PS_LOAD(err_restore, "PyErr_Restore"));
    if (!required || !saved) {
        /* PyFrame_GetCode and PyFrame_GetBack appeared in 3.9. */
        if (ps_mode == PYSTACK_ON)
            log_error("MEMSHIM_PY_STACKS=on: no Python 3.9+ C API in the process; "
                      "Python frames are not recorded");
        return;
    }
    uintptr_t at = (uintptr_t)api.get_frame;
    dl_iterate_phdr(ps_phdr_cb, &at);
    ps_slots = arena_map(PS_CODE_SLOTS * sizeof *ps_slots);
    ps_codes = arena_map(PS_MAX_CODES * sizeof *ps_codes);
    ps_file_paths = arena_map(PYSTACK_MAX_FILES * sizeof *ps_file_paths);
    ps_lines = api.frame_lasti ? arena_map(PS_LINE_SLOTS * sizeof *ps_lines) : NULL;
    if (!ps_slots || !ps_codes || !ps_file_paths || !ps_hi || (api.frame_lasti && !ps_lines)) {
        log_error("out of memory for Python frames; they are not recorded");
        return;
    }
    ps_ok = 1;
    if (api.frame_lasti)
        pyborrow_init(); /* raw reads of frames, for threads that released the GIL */
    log_debug("Python frames: recorded for threads running Python");
}

/* A fork child has only the forking thread: a lock another thread held is free again. The
 * code table is only published by its last store, so a half-done insert is never seen. */
static void ps_atfork_child(void)
{
    pthread_mutex_init(&ps_mutex, NULL);
}

void pystack_init(int mode)
{
    static int once;
    ps_mode = mode == PYSTACK_ON_1 ? PYSTACK_ON : mode == PYSTACK_OFF_0 ? PYSTACK_OFF : mode;
    if (!once++)
        pthread_atfork(NULL, NULL, ps_atfork_child);
}

int pystack_available(void)
{
    pthread_once(&ps_once, ps_resolve);
    return ps_ok;
}

int pystack_in_interpreter(uint64_t ip)
{
    return ip >= ps_lo && ip < ps_hi;
}

/* ---- code objects ---- */

static inline uint64_t ps_hash(uintptr_t p)
{
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

static uint32_t ps_code_find(uintptr_t code)
{
    uint64_t h = ps_hash(code);
    for (unsigned p = 0; p < PS_PROBES; p++) {
        struct ps_slot *s = &ps_slots[(h + p) & (PS_CODE_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->code, memory_order_acquire);
        if (k == code)
            return __atomic_load_n(&s->id, __ATOMIC_RELAXED);
        if (!k)
            return 0;
    }
    return 0;
}

/* `attr` of obj as UTF-8 into buf; 0 when it has none (the error is cleared). */
static int ps_attr(void *obj, const char *attr, char *buf, size_t size)
{
    void *v = api.getattr(obj, attr);
    const char *s = v ? api.as_utf8(v) : NULL;
    if (s)
        snprintf(buf, size, "%s", s);
    else
        api.err_clear();
    if (v)
        api.decref(v);
    return s != NULL;
}

/* co_filename and co_qualname (3.11+) or co_name, keeping any exception the program has
 * pending: the allocation may come from C code that runs while one is set. */
static void ps_names(void *code, char *file, char *function)
{
    void *exc = NULL, *type = NULL, *value = NULL, *tb = NULL;
    if (api.err_get_raised)
        exc = api.err_get_raised();
    else
        api.err_fetch(&type, &value, &tb);
    if (!ps_attr(code, "co_filename", file, PS_NAME_MAX))
        snprintf(file, PS_NAME_MAX, "?");
    if (!ps_attr(code, "co_qualname", function, PS_NAME_MAX) &&
        !ps_attr(code, "co_name", function, PS_NAME_MAX))
        snprintf(function, PS_NAME_MAX, "?");
    if (api.err_set_raised)
        api.err_set_raised(exc);
    else
        api.err_restore(type, value, tb);
}

static char *ps_copy(const char *s)
{
    size_t n = strlen(s);
    char *c = arena_alloc(n + 1);
    if (c)
        memcpy(c, s, n + 1);
    return c;
}

/* The file's id, under ps_mutex. 0 when out of room. */
static uint32_t ps_file_id(const char *path)
{
    struct ps_file *f;
    HASH_FIND_STR(ps_files, path, f);
    if (f)
        return f->id;
    if (ps_nfiles + 1 >= PYSTACK_MAX_FILES || !(f = arena_alloc(sizeof *f)) ||
        !(f->path = ps_copy(path)))
        return 0;
    f->id = ps_nfiles + 1;
    int failed;
    HASH_ADD_KEYPTR_OOM(hh, ps_files, f->path, strlen(f->path), f, failed);
    if (failed)
        return 0;
    ps_file_paths[f->id] = f->path;
    ps_nfiles = f->id;
    return f->id;
}

/* The id of a new code object, under ps_mutex: published for `code`'s address (replacing
 * an older id there when `replace`), and referenced when `pinned`. 0 when out of room. */
static uint32_t ps_code_publish(void *code, const char *file, const char *function, int pinned,
                                int replace)
{
    uint64_t h = ps_hash((uintptr_t)code);
    struct ps_slot *slot = NULL;
    for (unsigned p = 0; p < PS_PROBES && !slot; p++) {
        struct ps_slot *s = &ps_slots[(h + p) & (PS_CODE_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->code, memory_order_relaxed);
        if (!k || (replace && k == (uintptr_t)code))
            slot = s;
    }
    uint32_t fid = slot && ps_ncodes + 1 < PS_MAX_CODES ? ps_file_id(file) : 0;
    const char *fn = fid ? ps_copy(function) : NULL;
    if (!fn) {
        if (!ps_full_logged++)
            log_error("too many Python code objects; new ones are left out of call stacks");
        return 0;
    }
    uint32_t id = ++ps_ncodes;
    ps_codes[id].function = fn;
    ps_codes[id].file = fid;
    atomic_store_explicit(&ps_codes[id].pinned, (uint8_t)pinned, memory_order_relaxed);
    if (pinned)
        api.incref(code);
    __atomic_store_n(&slot->id, id, __ATOMIC_RELAXED);
    atomic_store_explicit(&slot->code, (uintptr_t)code, memory_order_release);
    return id;
}

/* First sight of a code object: name it and publish its id. The reference taken keeps it
 * alive, so its address stays its own for the life of the process. */
static MS_NOINLINE MS_COLD uint32_t ps_code_add(void *code)
{
    char file[PS_NAME_MAX], function[PS_NAME_MAX];
    ps_names(code, file, function);
    pthread_mutex_lock(&ps_mutex);
    uint32_t id = ps_code_find((uintptr_t)code);
    if (!id)
        id = ps_code_publish(code, file, function, 1, 0);
    pthread_mutex_unlock(&ps_mutex);
    return id;
}

/* A code object first named raw, met by a thread holding the GIL: the same one gets its
 * reference; another one at the same address (the first was freed) gets its own id. */
static MS_NOINLINE MS_COLD uint32_t ps_code_pin(void *code, uint32_t id)
{
    char file[PS_NAME_MAX], function[PS_NAME_MAX];
    ps_names(code, file, function);
    pthread_mutex_lock(&ps_mutex);
    if (!atomic_load_explicit(&ps_codes[id].pinned, memory_order_relaxed)) {
        if (strcmp(ps_codes[id].function, function) == 0 &&
            strcmp(ps_file_paths[ps_codes[id].file], file) == 0) {
            api.incref(code);
            atomic_store_explicit(&ps_codes[id].pinned, 1, memory_order_relaxed);
        } else {
            uint32_t fresh = ps_code_publish(code, file, function, 1, 1);
            id = fresh ? fresh : id;
        }
    }
    pthread_mutex_unlock(&ps_mutex);
    return id;
}

/* A code object of a borrowed frame, named raw: no reference (the GIL is not held). */
static MS_NOINLINE MS_COLD uint32_t ps_code_add_raw(uintptr_t code)
{
    char file[PS_NAME_MAX], function[PS_NAME_MAX];
    if (!pyborrow_names(code, file, sizeof file, function, sizeof function))
        return 0;
    pthread_mutex_lock(&ps_mutex);
    uint32_t id = ps_code_find(code);
    if (!id)
        id = ps_code_publish((void *)code, file, function, 0, 0);
    pthread_mutex_unlock(&ps_mutex);
    return id;
}

/* ---- lines ---- */

/* PyFrame_GetLineNumber scans the code object's location table from its start, which costs
 * microseconds in a long function; the line of one instruction never changes, so it is
 * computed once per (code object, instruction). */
static int ps_line_cached(uint64_t key, uint64_t h)
{
    for (unsigned p = 0; p < PS_LINE_PROBES; p++) {
        uint64_t e =
            atomic_load_explicit(&ps_lines[(h + p) & (PS_LINE_SLOTS - 1)], memory_order_relaxed);
        if (e >> PS_LINE_BITS == key)
            return (int)(e & ((1u << PS_LINE_BITS) - 1));
        if (!e)
            break;
    }
    return -1;
}

static void ps_line_keep(uint64_t key, uint64_t h, int line)
{
    if (line < 0 || (uint64_t)line >> PS_LINE_BITS)
        return;
    uint64_t entry = key << PS_LINE_BITS | (uint64_t)line;
    for (unsigned p = 0; p < PS_LINE_PROBES; p++) {
        uint64_t expect = 0;
        if (atomic_compare_exchange_strong_explicit(&ps_lines[(h + p) & (PS_LINE_SLOTS - 1)],
                                                    &expect, entry, memory_order_relaxed,
                                                    memory_order_relaxed) ||
            expect >> PS_LINE_BITS == key)
            break;
    }
}

static int ps_line(void *frame, uint32_t id)
{
    int lasti = api.frame_lasti ? api.frame_lasti(frame) : -1;
    if (lasti < 0 || (uint64_t)lasti >> PS_LASTI_BITS)
        return api.frame_line(frame);
    uint64_t key = (uint64_t)id << PS_LASTI_BITS | (uint64_t)lasti;
    uint64_t h = ps_hash((uintptr_t)key);
    int line = ps_line_cached(key, h);
    if (line < 0)
        ps_line_keep(key, h, line = api.frame_line(frame));
    return line;
}

/* The same for a borrowed frame (3.11+, so the table exists). */
static int ps_line_raw(uintptr_t code, int lasti, uint32_t id)
{
    if ((uint64_t)lasti >> PS_LASTI_BITS)
        return pyborrow_line(code, lasti);
    uint64_t key = (uint64_t)id << PS_LASTI_BITS | (uint64_t)lasti;
    uint64_t h = ps_hash((uintptr_t)key);
    int line = ps_line_cached(key, h);
    if (line < 0)
        ps_line_keep(key, h, line = pyborrow_line(code, lasti));
    return line;
}

/* ---- capture ---- */

/* This thread holds the GIL and its thread state is the one it runs Python with: the thread
 * state attached now (the unchecked getter: NULL while the GIL is released) is this thread's
 * own, which is PyGILState_Check's own test, and with sub-interpreters the only true one (there
 * it answers 1 for everyone). *own: this thread's thread state, NULL when it has none. */
static int ps_holds_gil(void **own)
{
    *own = NULL;
    if (!api.is_initialized())
        return 0;
    *own = api.this_thread_state();
    if (!api.current_state)
        return api.gil_check();
    return *own && api.current_state() == *own;
}

/* The layout pyborrow reads, against this thread's innermost frame as the API gives it. */
static MS_NOINLINE MS_COLD void ps_check_borrowing(void *frame, void *code, uint32_t id)
{
    int lasti = api.frame_lasti ? api.frame_lasti(frame) : -1;
    pyborrow_check(api.current_state ? api.current_state() : api.this_thread_state(),
                   (uintptr_t)code, lasti, ps_codes[id].function);
}

/* Keys a capture gives again (a chain of frames met before, a backward pass that goes on) come
 * with a token: the same token, the same keys, so a caller that kept them compares one word
 * instead of the keys. Tokens are this thread's and never given twice; past the last there are
 * none (0: compare the keys). */
static MS_TLS uint32_t ps_tokens;

static uint32_t ps_token_new(void)
{
    return ps_tokens < UINT32_MAX ? ++ps_tokens : 0;
}

struct ps_borrowed {
    uint64_t keys[PYBORROW_MAX_FRAMES];
    int n;
    uint32_t token;
};

/* The keys of frames read raw; a code object met for the first time is named raw. */
static int ps_raw_keys(const struct pyborrow_frame *frames, int nf, uint64_t *keys)
{
    int n = 0;
    for (int i = 0; i < nf; i++) {
        uint32_t id = ps_code_find(frames[i].code);
        if (ms_unlikely(!id))
            id = ps_code_add_raw(frames[i].code);
        if (!id)
            continue;
        int line = ps_line_raw(frames[i].code, frames[i].lasti, id);
        keys[n++] = PYSTACK_KEY_BIT | (uint64_t)id << 32 | (uint32_t)(line > 0 ? line : 0);
    }
    return n;
}

/* A borrowing thread: the lender's frames, as keys in this thread's own copy (*keys, until its
 * next capture), at most `max`. A chain read unchanged since this thread's last capture gives
 * the keys it gave then, and their token (0 when `max` cut them short). */
static int ps_capture_borrowed(int max, const uint64_t **keys, uint32_t *token)
{
    /* Not in static TLS itself: the shim is also linked into libraries loaded late. */
    static MS_TLS struct ps_borrowed *b;
    *token = 0;
    if (!b && !(b = arena_alloc(sizeof *b)))
        return 0;
    const struct pyborrow_frame *frames;
    int same;
    int nf = pyborrow_frames(&frames, &same);
    if (!nf)
        return 0;
    if (!same) {
        b->n = ps_raw_keys(frames, nf, b->keys);
        b->token = ps_token_new();
    }
    *keys = b->keys;
    if (b->n > max)
        return max;
    *token = b->token;
    return b->n;
}

/* The chains a thread met of its own, and the keys they gave: a training step allocates from
 * the same few dozen Python lines over and over. Set-associative by a hash of the chain. */
#define PS_OWN_LINKS 32 /* frames read, complete or not: the innermost are the ones kept */
/* A training step meets about fifty chains of its own (examples/pytorch/train.py: 48). */
#define PS_OWN_SET_BITS 5
#define PS_OWN_SETS     (1u << PS_OWN_SET_BITS)
#define PS_OWN_WAYS     4
#define PS_OWN_TABLES   64 /* threads with a table (about 100 KiB each); the others look up keys */
struct ps_own_chain {
    uint32_t nlinks, nkeys, max;
    uint32_t token;
    uint8_t api; /* the keys are the C API's: their code objects hold a reference */
    /* The chain the thread met after this one last time: a step allocates from the same
     * lines in the same order, so it is compared first, without hashing. */
    struct ps_own_chain *next;
    struct pyborrow_link links[PS_OWN_LINKS];
    uint64_t keys[PS_OWN_LINKS];
};
struct ps_own {
    struct ps_own_chain chain[PS_OWN_SETS][PS_OWN_WAYS];
    uint8_t next[PS_OWN_SETS];
    struct ps_own_chain *last; /* the thread's last chain */
};

static unsigned ps_own_set(const struct pyborrow_link *links, int n)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ links[i].at ^ links[i].instr << 17) * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> (64 - PS_OWN_SET_BITS));
}

/* The entry of a chain met before in its set, or NULL. */
static struct ps_own_chain *ps_own_find(struct ps_own_chain *set, const struct pyborrow_link *links,
                                        int n, int max)
{
    for (int w = 0; w < PS_OWN_WAYS; w++)
        if (set[w].nlinks == (uint32_t)n && set[w].max == (uint32_t)max &&
            memcmp(set[w].links, links, (size_t)n * sizeof *links) == 0)
            return &set[w];
    return NULL;
}

/* This thread's table of chains, while fewer than PS_OWN_TABLES threads have one. */
static MS_NOINLINE MS_COLD struct ps_own *ps_own_new(int8_t *denied)
{
    static _Atomic uint32_t tables;
    *denied = 1; /* a thread past the cap, or out of memory, asks once */
    return atomic_fetch_add(&tables, 1) < PS_OWN_TABLES ? arena_alloc(sizeof(struct ps_own)) : NULL;
}

static struct ps_own *ps_own_table(void)
{
    static MS_TLS struct ps_own *o;
    static MS_TLS int8_t denied;
    if (ms_unlikely(!o && !denied))
        o = ps_own_new(&denied);
    return o;
}

/* The keys of the chain links[0..n) of the thread's own frames, at most `max`: named and looked
 * up afresh. */
static int ps_own_keys(const struct pyborrow_link *links, int n, int max, uint64_t *keys)
{
    struct pyborrow_frame frames[PS_OWN_LINKS];
    int most = max < PS_OWN_LINKS ? max : PS_OWN_LINKS;
    return ps_raw_keys(frames, pyborrow_own_frames(links, n, frames, most), keys);
}

/* The entry `hint` names (an earlier capture's chain, pystack_keys), or NULL. */
static inline struct ps_own_chain *ps_own_hinted(struct ps_own *o, const void *hint)
{
    uintptr_t at = (uintptr_t)hint - (uintptr_t)o->chain;
    return at < sizeof o->chain ? (struct ps_own_chain *)(uintptr_t)hint : NULL;
}

/* The thread's own chain (`ts` its thread state), *n links of it, and its entry in `o` when
 * met before: the caller's guess (else the chain that followed the last one) is compared as it
 * is read, then the set. Without an entry the links are in `links`. */
static MS_HOT struct ps_own_chain *ps_own_read(struct ps_own *o, void *ts, int max,
                                               const void *hint, struct pyborrow_link *links,
                                               int *n)
{
    struct ps_own_chain *g = o ? ps_own_hinted(o, hint) : NULL;
    if (!g)
        g = o && o->last ? o->last->next : NULL;
    g = g && g->max == (uint32_t)max ? g : NULL;
    int same;
    *n = pyborrow_own_links(ts, links, PS_OWN_LINKS, g ? g->links : NULL, g ? (int)g->nlinks : 0,
                            &same);
    if (same)
        return g;
    return *n && o ? ps_own_find(o->chain[ps_own_set(links, *n)], links, *n, max) : NULL;
}

/* An entry for links[0..n) in place of its set's oldest; the caller fills its keys. */
static struct ps_own_chain *ps_own_claim(struct ps_own *o, const struct pyborrow_link *links, int n,
                                         int max)
{
    unsigned set = ps_own_set(links, n);
    struct ps_own_chain *c = &o->chain[set][o->next[set]++ % PS_OWN_WAYS];
    c->nlinks = (uint32_t)n;
    c->max = (uint32_t)max;
    c->next = NULL; /* what followed the chain it held says nothing of this one's */
    memcpy(c->links, links, (size_t)n * sizeof *links);
    return c;
}

static void ps_own_filled(struct ps_own_chain *c, int nkeys, uint8_t api)
{
    c->nkeys = (uint32_t)nkeys;
    c->api = api;
    c->token = ps_token_new();
}

/* The thread met chain c: the successor of the one before. Its keys and their token. */
static int ps_own_met(struct ps_own *o, struct ps_own_chain *c, struct pystack_keys *out,
                      uint32_t *token)
{
    if (o->last && o->last->next != c)
        o->last->next = c;
    o->last = c;
    out->keys = c->keys;
    out->chain = c;
    *token = c->token;
    return (int)c->nkeys;
}

/* A thread that released the GIL around the C call the hook runs in (`ts`: its own thread
 * state): its own frames, read raw. A chain met before (every frame at the same place and
 * instruction) gives the keys it gave then, without naming or a line lookup. */
static int ps_capture_own(void *ts, uint64_t *buf, int max, const void *hint,
                          struct pystack_keys *out, uint32_t *token)
{
    *token = 0;
    if (!ts)
        return 0;
    struct ps_own *o = ps_own_table();
    struct pyborrow_link links[PS_OWN_LINKS];
    int n;
    struct ps_own_chain *c = ps_own_read(o, ts, max, hint, links, &n);
    if (!n || !o)
        return n ? ps_own_keys(links, n, max, buf) : 0;
    if (!c) {
        c = ps_own_claim(o, links, n, max);
        ps_own_filled(c, ps_own_keys(links, n, max, c->keys), 0);
    }
    return ps_own_met(o, c, out, token);
}

/* The keys of this thread's frames through the C API: it holds the GIL. */
static int ps_api_keys(uint64_t *keys, int max)
{
    /* Frame objects are created on demand (3.11+) and, before 3.12, an allocation may run the
     * cyclic collector right there, whose finalizers could free CUDA memory on this thread
     * while the shim is inside a hook (the nested call would pass through unrecorded). */
    int gc_was_on = api.gc_disable ? api.gc_disable() : 0;
    void *frame = api.get_frame();
    if (frame)
        api.incref(frame); /* borrowed; owned like every frame from PyFrame_GetBack below */
    int n = 0;
    while (frame && n < max) {
        void *code = api.frame_code(frame);
        if (code) {
            uint32_t id = ps_code_find((uintptr_t)code);
            if (ms_unlikely(!id))
                id = ps_code_add(code);
            else if (ms_unlikely(!atomic_load_explicit(&ps_codes[id].pinned, memory_order_relaxed)))
                id = ps_code_pin(code, id);
            if (ms_unlikely(n == 0 && id && pyborrow_unchecked()))
                ps_check_borrowing(frame, code, id);
            api.decref(code);
            int line = id ? ps_line(frame, id) : 0;
            if (id)
                keys[n++] = PYSTACK_KEY_BIT | (uint64_t)id << 32 | (uint32_t)(line > 0 ? line : 0);
        }
        void *back = api.frame_back(frame);
        api.decref(frame);
        frame = back;
    }
    if (frame)
        api.decref(frame);
    if (gc_was_on)
        api.gc_enable();
    return n;
}

/* A thread holding the GIL: its frames through the API, which costs a frame object and a few
 * calls a frame. Once the layout has passed its check against the API, the chain is also read
 * raw, and a chain met before gives the keys the API gave for it: its code objects hold a
 * reference, so the same frames at the same instructions run the same code. Only a chain read
 * to its end is kept (the API reads on past PS_OWN_LINKS links). */
static int ps_capture_held(void *ts, uint64_t *buf, int max, const void *hint,
                           struct pystack_keys *out, uint32_t *token)
{
    *token = 0;
    struct ps_own *o = pyborrow_own_ready() ? ps_own_table() : NULL;
    if (!o)
        return ps_api_keys(buf, max);
    struct pyborrow_link links[PS_OWN_LINKS];
    int n;
    struct ps_own_chain *c = ps_own_read(o, ts, max, hint, links, &n);
    if (c && c->api)
        return ps_own_met(o, c, out, token);
    int k = ps_api_keys(buf, max);
    if (!n || n >= PS_OWN_LINKS || k > n)
        return k;
    if (!c)
        c = ps_own_claim(o, links, n, max);
    memcpy(c->keys, buf, (size_t)k * sizeof *buf);
    ps_own_filled(c, k, 1);
    return ps_own_met(o, c, out, token);
}

/* On a borrowing thread, the lender's frames after the thread's own n (at out->keys, token
 * `own`): both in buf when each has some. The token of them all: the own one's in the high half,
 * the lender's in the low half, 0 when either is unknown. */
static int ps_then_borrowed(int n, uint64_t *buf, int max, uint32_t own, struct pystack_keys *out)
{
    const uint64_t *lent = NULL;
    uint32_t lent_token = 0;
    int m = n < max && pyborrow_thread() ? ps_capture_borrowed(max - n, &lent, &lent_token) : 0;
    if (!m) {
        out->token = n && own ? (uint64_t)own << 32 : 0;
        return n;
    }
    if (!n) {
        out->keys = lent;
        out->token = lent_token;
        return m;
    }
    if (out->keys != buf)
        memcpy(buf, out->keys, (size_t)n * sizeof *buf);
    memcpy(buf + n, lent, (size_t)m * sizeof *buf);
    out->keys = buf;
    out->token = own && lent_token ? (uint64_t)own << 32 | lent_token : 0;
    return n + m;
}

int pystack_capture_ref(uint64_t *buf, int max, const void *hint, struct pystack_keys *out)
{
    *out = (struct pystack_keys){.keys = buf};
    if (ps_mode == PYSTACK_OFF || max <= 0)
        return 0;
    if (!atomic_load_explicit(&ps_resolved, memory_order_acquire)) {
        pthread_once(&ps_once, ps_resolve);
        atomic_store_explicit(&ps_resolved, 1, memory_order_release);
    }
    if (!ps_ok)
        return 0;
    void *own;
    uint32_t t;
    int n;
    if (ps_holds_gil(&own))
        n = ps_capture_held(own, buf, max, hint, out, &t);
    else if (api.frame_lasti)
        n = ps_capture_own(own, buf, max, hint, out, &t);
    else
        return 0;
    /* A worker running Python of its own (an operator written in Python, a hook) still works
     * for the waiting thread: its frames continue with the lender's. */
    return ps_then_borrowed(n, buf, max, t, out);
}

int pystack_capture(uint64_t *keys, int max)
{
    struct pystack_keys out;
    int n = pystack_capture_ref(keys, max, NULL, &out);
    if (n && out.keys != keys)
        memcpy(keys, out.keys, (size_t)n * sizeof *keys);
    return n;
}

int pystack_describe(uint64_t key, const char **file, uint32_t *file_id, const char **function,
                     uint32_t *line)
{
    uint32_t id = (uint32_t)(key >> 32) & 0x7fffffffu;
    if (!pystack_is_key(key) || !ps_codes || id == 0 || id >= PS_MAX_CODES ||
        !ps_codes[id].function)
        return -1;
    *file_id = ps_codes[id].file;
    *file = ps_file_paths[*file_id];
    *function = ps_codes[id].function;
    *line = (uint32_t)key;
    return 0;
}
