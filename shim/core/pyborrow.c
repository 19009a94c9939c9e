/* pyborrow: raw reads of another Python thread's frames; see pyborrow.h. Offsets are those of
 * CPython's own structs (Include/internal/pycore_frame.h, pycore_code.h, cpython/pystate.h,
 * cpython/unicodeobject.h) on 64-bit platforms, per minor version. */
#include "pyborrow.h"

#include "arena.h"
#include "compat.h"
#include "log.h"
#include "real.h"
#include "thread_name.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PB_PREFIX_MAX         16 /* a thread name's room, with its NUL */
#define PB_NAME_MAX           256
#define PB_MAX_THREADS        256 /* bounds on a list or chain that went bad while read */
#define PB_MAX_LINKS          (PYBORROW_MAX_FRAMES + 32)
#define PB_MARKERS            8
#define PB_FRAME_BYTES        72  /* every frame field read, all layouts */
#define PB_CODE_BYTES         192 /* every code object field read, all layouts */
#define PB_OB_TYPE            8
#define PB_STR_LENGTH         16
#define PB_STR_STATE          32
#define PB_STR_ASCII          (3u << 5) /* compact and ascii, in the string's state bits */
#define PB_OWNED_BY_GENERATOR 1
#define PB_SELF_CHECKS        8 /* tries per thread of the check without the API */

struct pb_layout {
    unsigned version;            /* major << 8 | minor */
    uint16_t ts_next, ts_cframe; /* ts_cframe 0: the frame pointer is in the thread state */
    uint16_t frame_ptr;          /* in the _PyCFrame, else in the thread state */
    uint16_t fr_code, fr_previous, fr_instr, fr_owner;
    uint16_t co_filename, co_qualname, co_firsttraceable, co_code;
    uint16_t str_data;    /* sizeof(PyASCIIObject) */
    uint8_t cstack_owner; /* the owner of the C stack's entry frames; 0: none */
};

static const struct pb_layout pb_layouts[] = {
    {0x030b, 8, 56, 8, 32, 48, 56, 69, 112, 128, 168, 184, 48, 0},
    {0x030c, 8, 56, 0, 0, 8, 56, 70, 112, 128, 176, 192, 40, 3},
    {0x030d, 8, 0, 72, 0, 8, 56, 70, 112, 128, 184, 200, 40, 3},
};

enum { PB_NONE, PB_UNCHECKED, PB_ON, PB_OFF };

struct pb_link {
    uintptr_t at, code, instr, previous;
    uint8_t owner;
};

/* What this thread read last: the chain, and the frames it gave. */
struct pb_cache {
    uintptr_t ts, cframe;
    int pass; /* the pass_id the chain was read in; -1: none */
    int nlinks, nout;
    struct pb_link link[PB_MAX_LINKS];
    struct pyborrow_frame out[PYBORROW_MAX_FRAMES];
    unsigned char scratch[PB_MAX_LINKS][PB_FRAME_BYTES]; /* the chain read again */
};

static struct {
    void *(*interp_head)(void);
    void *(*thread_head)(void *);
    int (*addr2line)(void *, int);
    uintptr_t code_type;
} pb_api;

static _Atomic int pb_state = PB_NONE;
static _Atomic int pb_borrow;      /* pyborrow_configure ran: threads with the prefix borrow */
static _Atomic int pb_api_checked; /* pyborrow_check ran */
static const struct pb_layout *pb_lay;
static char pb_prefix[PB_PREFIX_MAX], pb_function[PB_NAME_MAX];
static pid_t pb_pid;
static int (*pb_pass_id)(void);
static _Atomic uintptr_t pb_markers[PB_MARKERS]; /* code objects named pb_function */
static MS_TLS int8_t pb_thread_is;               /* 0 not asked yet, 1 borrows, -1 not */
static MS_TLS struct pb_cache *pb_cache;

/* ---- reads ---- */

static int pb_peek(uintptr_t addr, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)addr, n};
    return addr && process_vm_readv(pb_pid, &local, 1, &remote, 1, 0) == (ssize_t)n;
}

static uintptr_t pb_word(uintptr_t addr)
{
    uintptr_t w = 0;
    return pb_peek(addr, &w, sizeof w) ? w : 0;
}

static uintptr_t pb_field(const unsigned char *buf, unsigned off)
{
    uintptr_t w;
    memcpy(&w, buf + off, sizeof w);
    return w;
}

/* The thread state's innermost interpreter frame, complete or not, each word read by `word`;
 * *cframe the _PyCFrame that points to it (3.11, 3.12). */
static inline __attribute__((always_inline)) uintptr_t
pb_top_with(uintptr_t ts, uintptr_t (*word)(uintptr_t), uintptr_t *cframe)
{
    *cframe = 0;
    if (!pb_lay->ts_cframe)
        return word(ts + pb_lay->frame_ptr);
    *cframe = word(ts + pb_lay->ts_cframe);
    return *cframe ? word(*cframe + pb_lay->frame_ptr) : 0;
}

static uintptr_t pb_top_in(uintptr_t ts, uintptr_t *cframe)
{
    return pb_top_with(ts, pb_word, cframe);
}

static uintptr_t pb_top(uintptr_t ts)
{
    uintptr_t cframe;
    return pb_top_in(ts, &cframe);
}

static void pb_link_parse(const unsigned char *buf, uintptr_t at, struct pb_link *l)
{
    l->at = at;
    l->code = pb_field(buf, pb_lay->fr_code);
    l->previous = pb_field(buf, pb_lay->fr_previous);
    l->instr = pb_field(buf, pb_lay->fr_instr);
    l->owner = buf[pb_lay->fr_owner];
}

static int pb_link_read(uintptr_t at, struct pb_link *l)
{
    unsigned char buf[PB_FRAME_BYTES];
    if (!pb_peek(at, buf, sizeof buf))
        return 0;
    pb_link_parse(buf, at, l);
    return 1;
}

/* A code object's header, checked to be one. */
static int pb_is_code(const unsigned char *head)
{
    return pb_field(head, PB_OB_TYPE) == pb_api.code_type;
}

static int pb_code_read(uintptr_t code, unsigned char *buf)
{
    return pb_peek(code, buf, PB_CODE_BYTES) && pb_is_code(buf);
}

/* A frame the interpreter itself would show (PyFrame_GetBack skips the others): not an
 * entry frame of the C stack, and past its code's prologue. `code` holds the head of l's code
 * object, checked to be one. Its instruction offset in *lasti. */
static int pb_complete_with(const struct pb_link *l, const unsigned char *code, int *lasti)
{
    int32_t first;
    memcpy(&first, code + pb_lay->co_firsttraceable, sizeof first);
    uintptr_t start = l->code + pb_lay->co_code;
    if (l->instr < start || l->instr - start > (uintptr_t)INT32_MAX)
        return 0;
    if (l->owner != PB_OWNED_BY_GENERATOR && l->instr < start + 2 * (uintptr_t)first)
        return 0;
    *lasti = (int)(l->instr - start);
    return 1;
}

static int pb_entry(const struct pb_link *l)
{
    return pb_lay->cstack_owner && l->owner == pb_lay->cstack_owner;
}

static int pb_complete(const struct pb_link *l, int *lasti)
{
    unsigned char code[PB_CODE_BYTES];
    return !pb_entry(l) && pb_code_read(l->code, code) && pb_complete_with(l, code, lasti);
}

/* A compact ASCII string object's text. */
static int pb_string(uintptr_t str, char *out, size_t size)
{
    unsigned char head[64];
    if (!size || !pb_peek(str, head, pb_lay->str_data))
        return 0;
    uint32_t state;
    memcpy(&state, head + PB_STR_STATE, sizeof state);
    intptr_t len = (intptr_t)pb_field(head, PB_STR_LENGTH);
    if ((state & PB_STR_ASCII) != PB_STR_ASCII || len < 0)
        return 0;
    size_t n = (size_t)len < size - 1 ? (size_t)len : size - 1;
    if (n && !pb_peek(str + pb_lay->str_data, out, n))
        return 0;
    out[n] = '\0';
    return 1;
}

int pyborrow_names(uintptr_t code, char *file, size_t file_size, char *function,
                   size_t function_size)
{
    unsigned char buf[PB_CODE_BYTES];
    return pb_code_read(code, buf) &&
           pb_string(pb_field(buf, pb_lay->co_filename), file, file_size) &&
           pb_string(pb_field(buf, pb_lay->co_qualname), function, function_size);
}

int pyborrow_line(uintptr_t code, int lasti)
{
    return pb_api.addr2line((void *)code, lasti);
}

/* ---- the lender ---- */

static int pb_is_marker(uintptr_t code)
{
    for (unsigned i = 0; i < PB_MARKERS; i++) {
        uintptr_t m = atomic_load_explicit(&pb_markers[i], memory_order_relaxed);
        if (m == code)
            return 1;
        if (!m)
            break;
    }
    char file[PB_NAME_MAX], function[PB_NAME_MAX];
    if (!pyborrow_names(code, file, sizeof file, function, sizeof function) ||
        strcmp(function, pb_function) != 0)
        return 0;
    for (unsigned i = 0; i < PB_MARKERS; i++) {
        uintptr_t expect = 0;
        if (atomic_compare_exchange_strong(&pb_markers[i], &expect, code) || expect == code)
            break;
    }
    return 1;
}

/* The thread state's innermost complete frame. */
static int pb_first_complete(uintptr_t ts, struct pb_link *l, int *lasti)
{
    uintptr_t at = pb_top(ts);
    for (int i = 0; at && i < PB_MAX_LINKS; i++, at = l->previous) {
        if (!pb_link_read(at, l))
            return 0;
        if (pb_complete(l, lasti))
            return 1;
    }
    return 0;
}

/* The one thread state whose innermost frame runs the marker function; 0 when none or several. */
static uintptr_t pb_lender(void)
{
    void *interp = pb_api.interp_head();
    uintptr_t ts = interp ? (uintptr_t)pb_api.thread_head(interp) : 0, found = 0;
    for (int i = 0; ts && i < PB_MAX_THREADS; i++) {
        struct pb_link l;
        int lasti;
        if (pb_first_complete(ts, &l, &lasti) && pb_is_marker(l.code)) {
            if (found)
                return 0;
            found = ts;
        }
        ts = pb_word(ts + pb_lay->ts_next);
    }
    return found;
}

static int pb_walk(struct pb_cache *c, uintptr_t ts)
{
    c->ts = ts;
    c->nlinks = c->nout = 0;
    uintptr_t at = pb_top_in(ts, &c->cframe);
    while (at && c->nlinks < PB_MAX_LINKS) {
        struct pb_link *l = &c->link[c->nlinks];
        if (!pb_link_read(at, l))
            break;
        c->nlinks++;
        int lasti;
        if (c->nout < PYBORROW_MAX_FRAMES && pb_complete(l, &lasti))
            c->out[c->nout++] = (struct pyborrow_frame){l->code, lasti};
        at = l->previous;
    }
    /* It may have returned from the marker meanwhile. */
    if (!c->nout || !pb_is_marker(c->out[0].code))
        c->nlinks = c->nout = 0;
    return c->nout;
}

/* The chain this thread read last is still there, unchanged: the thread state's pointers to
 * its innermost frame and the chain's frames, all in one read. */
static int pb_same(struct pb_cache *c)
{
    if (!c->nlinks)
        return 0;
    unsigned char(*buf)[PB_FRAME_BYTES] = c->scratch;
    uintptr_t top[2] = {0, 0};
    struct iovec local[PB_MAX_LINKS + 2], remote[PB_MAX_LINKS + 2];
    int k = 0;
    if (pb_lay->ts_cframe) {
        local[k] = (struct iovec){&top[0], sizeof top[0]};
        remote[k++] = (struct iovec){(void *)(c->ts + pb_lay->ts_cframe), sizeof top[0]};
    }
    local[k] = (struct iovec){&top[1], sizeof top[1]};
    remote[k++] = (struct iovec){
        (void *)((pb_lay->ts_cframe ? c->cframe : c->ts) + pb_lay->frame_ptr), sizeof top[1]};
    for (int i = 0; i < c->nlinks; i++, k++) {
        local[k] = (struct iovec){buf[i], PB_FRAME_BYTES};
        remote[k] = (struct iovec){(void *)c->link[i].at, PB_FRAME_BYTES};
    }
    ssize_t want = (ssize_t)c->nlinks * PB_FRAME_BYTES + (ssize_t)sizeof top -
                   (pb_lay->ts_cframe ? 0 : (ssize_t)sizeof top[0]);
    if (process_vm_readv(pb_pid, local, (unsigned long)k, remote, (unsigned long)k, 0) != want ||
        (pb_lay->ts_cframe && top[0] != c->cframe) || top[1] != c->link[0].at)
        return 0;
    for (int i = 0; i < c->nlinks; i++) {
        struct pb_link l;
        pb_link_parse(buf[i], c->link[i].at, &l);
        const struct pb_link *o = &c->link[i];
        if (l.code != o->code || l.instr != o->instr || l.previous != o->previous ||
            l.owner != o->owner)
            return 0;
    }
    return 1;
}

int pyborrow_frames(const struct pyborrow_frame **out, int *same)
{
    if (!pb_cache && !(pb_cache = arena_alloc(sizeof *pb_cache)))
        return 0;
    struct pb_cache *c = pb_cache;
    int pass = pb_pass_id ? pb_pass_id() : -1;
    *same = c->nout && pass >= 0 && pass == c->pass;
    if (!*same && !(*same = pb_same(c))) {
        uintptr_t ts = pb_lender();
        if (!ts || !pb_walk(c, ts))
            return 0;
    }
    c->pass = pass;
    *out = c->out;
    return c->nout;
}

/* ---- this thread's own frames ---- */

/* A word of the calling thread's own chain, read directly: while a thread is inside a C call
 * its frames, and the code objects they reference, can neither change nor go away. */
static uintptr_t pb_own_word(uintptr_t addr)
{
    uintptr_t w;
    memcpy(&w, (const void *)addr, sizeof w);
    return w;
}

static int pb_self_check(uintptr_t ts);

MS_HOT int pyborrow_own_links(void *thread_state, struct pyborrow_link *links, int max,
                              const struct pyborrow_link *guess, int nguess, int *same)
{
    *same = 0;
    int st = atomic_load_explicit(&pb_state, memory_order_acquire); /* pb_lay is set */
    if (ms_unlikely(st == PB_UNCHECKED && thread_state) && pb_self_check((uintptr_t)thread_state))
        st = atomic_load_explicit(&pb_state, memory_order_acquire);
    if (st != PB_ON || !thread_state)
        return 0;
    /* The offsets in registers: the compiler cannot tell that the frames read do not alias
     * the layout, and would load them again for every link. */
    const uintptr_t previous = pb_lay->fr_previous, instr = pb_lay->fr_instr;
    uintptr_t cframe, at = pb_top_with((uintptr_t)thread_state, pb_own_word, &cframe);
    int n = 0;
    /* Along the guess nothing is stored: a chain met again is only compared. A guess holds
     * no null link, so the end of the chain (at == 0) ends this loop by the comparison. */
    nguess = nguess < max ? nguess : max;
    for (; n < nguess; n++, at = pb_own_word(at + previous))
        if (at != guess[n].at || pb_own_word(at + instr) != guess[n].instr)
            break;
    if (n == nguess && (!at || n == max)) {
        *same = n > 0;
        return n;
    }
    if (n) /* guess is NULL when there is none: memcpy's arguments may not be, even for 0 */
        memcpy(links, guess, (size_t)n * sizeof *links);
    for (; at && n < max; n++, at = pb_own_word(at + previous))
        links[n] = (struct pyborrow_link){at, pb_own_word(at + instr)};
    return n;
}

int pyborrow_own_frames(const struct pyborrow_link *links, int n, struct pyborrow_frame *out,
                        int max)
{
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        struct pb_link l;
        pb_link_parse((const unsigned char *)links[i].at, links[i].at, &l);
        int lasti;
        const unsigned char *code = (const unsigned char *)l.code;
        if (!pb_entry(&l) && code && pb_is_code(code) && pb_complete_with(&l, code, &lasti))
            out[k++] = (struct pyborrow_frame){l.code, lasti};
    }
    return k;
}

int pyborrow_thread(void)
{
    if (ms_likely(atomic_load_explicit(&pb_state, memory_order_relaxed) != PB_ON) ||
        !atomic_load_explicit(&pb_borrow, memory_order_acquire))
        return 0;
    if (ms_unlikely(!pb_thread_is))
        pb_thread_is = thread_name_has_prefix(pb_prefix) ? 1 : -1;
    return pb_thread_is > 0;
}

/* ---- set-up and the check ---- */

static void pb_atfork_child(void)
{
    pb_pid = getpid();
}

/* The layout of the process's CPython, resolved once: PB_UNCHECKED when it is one of
 * pb_layouts, PB_OFF otherwise. */
static void pb_layout_init(void)
{
    int expect = PB_NONE;
    if (!atomic_compare_exchange_strong(&pb_state, &expect, PB_OFF))
        return;
    const unsigned long *version = real_dlsym(RTLD_DEFAULT, "Py_Version");
    *(void **)&pb_api.interp_head = real_dlsym(RTLD_DEFAULT, "PyInterpreterState_Head");
    *(void **)&pb_api.thread_head = real_dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
    *(void **)&pb_api.addr2line = real_dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    pb_api.code_type = (uintptr_t)real_dlsym(RTLD_DEFAULT, "PyCode_Type");
    if (!version || !pb_api.interp_head || !pb_api.thread_head || !pb_api.addr2line ||
        !pb_api.code_type || sizeof(void *) != 8)
        return;
    for (size_t i = 0; i < MS_ARRAY_LEN(pb_layouts); i++)
        if (pb_layouts[i].version == *version >> 16)
            pb_lay = &pb_layouts[i];
    if (!pb_lay) {
        log_debug("Python %lx: frames are read only through the API, by threads holding the GIL",
                  *version);
        return;
    }
    pb_pid = getpid();
    pthread_atfork(NULL, NULL, pb_atfork_child);
    atomic_store(&pb_state, PB_UNCHECKED);
}

void pyborrow_init(void)
{
    pb_layout_init();
}

void pyborrow_configure(const char *thread_prefix, const char *function, int (*pass_id)(void))
{
    static atomic_flag once = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&once))
        return;
    pb_layout_init();
    pb_pass_id = pass_id;
    snprintf(pb_prefix, sizeof pb_prefix, "%s", thread_prefix);
    snprintf(pb_function, sizeof pb_function, "%s", function);
    atomic_store_explicit(&pb_borrow, 1, memory_order_release);
}

int pyborrow_unchecked(void)
{
    int st = atomic_load_explicit(&pb_state, memory_order_relaxed);
    return (st == PB_UNCHECKED || st == PB_ON) &&
           !atomic_load_explicit(&pb_api_checked, memory_order_relaxed);
}

int pyborrow_own_ready(void)
{
    return atomic_load_explicit(&pb_state, memory_order_acquire) == PB_ON &&
           atomic_load_explicit(&pb_api_checked, memory_order_relaxed);
}

static int pb_listed(uintptr_t ts)
{
    void *interp = pb_api.interp_head();
    uintptr_t t = interp ? (uintptr_t)pb_api.thread_head(interp) : 0;
    for (int i = 0; t && i < PB_MAX_THREADS; i++, t = pb_word(t + pb_lay->ts_next))
        if (t == ts)
            return 1;
    return 0;
}

static const char *pb_verify(uintptr_t ts, uintptr_t code, int lasti, const char *function)
{
    struct pb_link l;
    int raw_lasti;
    char file[PB_NAME_MAX], name[PB_NAME_MAX];
    uintptr_t w;
    if (!pb_peek(ts, &w, sizeof w))
        return "process_vm_readv cannot read the process's own memory";
    if (!pb_listed(ts))
        return "the thread is not in its interpreter's list";
    if (!pb_first_complete(ts, &l, &raw_lasti) || l.code != code)
        return "the innermost frame read raw is not the interpreter's";
    if (lasti >= 0 && raw_lasti != lasti)
        return "the instruction read raw is not the interpreter's";
    if (pyborrow_names(code, file, sizeof file, name, sizeof name) && strcmp(name, function) != 0)
        return "the function name read raw is not the interpreter's";
    return NULL;
}

static void pb_log_on(const char *how)
{
    if (atomic_load_explicit(&pb_borrow, memory_order_acquire))
        log_debug("Python frames: the layout %s; read raw where the GIL is released; threads "
                  "named %s* borrow those of the thread in %s()",
                  how, pb_prefix, pb_function);
    else
        log_debug("Python frames: the layout %s; read raw where the GIL is released", how);
}

/* The API's word is final: it turns raw reads off even after the self-check let them on. */
void pyborrow_check(void *thread_state, uintptr_t code, int lasti, const char *function)
{
    if (atomic_exchange(&pb_api_checked, 1))
        return;
    const char *why = pb_verify((uintptr_t)thread_state, code, lasti, function);
    int was = atomic_exchange(&pb_state, why ? PB_OFF : PB_ON);
    if (why)
        log_error("Python frames: %s; frames are read only through the API, by threads holding "
                  "the GIL",
                  why);
    else if (was != PB_ON)
        pb_log_on("agrees with the API");
}

/* The whole chain reads, link by link, and ends within PB_MAX_LINKS: every pointer the direct
 * reads will follow, the links to the previous frames included, is one. */
static int pb_chain_reads(uintptr_t ts)
{
    uintptr_t at = pb_top(ts);
    for (int i = 0; at; i++) {
        struct pb_link l;
        if (i >= PB_MAX_LINKS || !pb_link_read(at, &l))
            return 0;
        at = l.previous;
    }
    return 1;
}

/* Without a thread holding the GIL to compare with, the layout is checked on the calling
 * thread's own chain read through process_vm_readv (a wrong offset gives an error, never a
 * fault): the thread state is in its interpreter's list, the chain reads to its end, and its
 * innermost complete frame holds a code object whose file and function read as strings, at
 * an instruction inside its bytecode. A few tries per thread (one in no Python code has no frame to
 * check), until the layout is on or off. */
static int pb_self_check(uintptr_t ts)
{
    static MS_TLS uint8_t tries;
    if (tries >= PB_SELF_CHECKS)
        return 0;
    tries++;
    struct pb_link l;
    int lasti;
    char file[PB_NAME_MAX], function[PB_NAME_MAX];
    uintptr_t w;
    if (!pb_peek(ts, &w, sizeof w) || !pb_listed(ts) || !pb_chain_reads(ts) ||
        !pb_first_complete(ts, &l, &lasti) ||
        !pyborrow_names(l.code, file, sizeof file, function, sizeof function))
        return 0;
    int expect = PB_UNCHECKED;
    if (atomic_compare_exchange_strong(&pb_state, &expect, PB_ON))
        pb_log_on("reads this thread's own frames");
    return 1;
}
