/* torch_alloc: see torch_alloc.h. Layouts assumed (c10/core/Allocator.h, stable since
 * PyTorch 1.x): c10::Allocator's virtual functions are two destructors, then
 * `DataPtr allocate(size_t)` (slot 2), `bool is_simple_data_ptr(const DataPtr &) const` (3),
 * `DeleterFnPtr raw_deleter() const` (4). DataPtr is 32 bytes, not trivially copyable, so a
 * call returns it through a hidden pointer, exactly as a C function returning a 32-byte
 * struct does on x86-64 (first argument) and aarch64 (x8); `this` comes next. Its words are
 * the data pointer, the deleter and the context of a std::unique_ptr (in libstdc++'s order),
 * and the device (type, index). The caching allocator hands out data == context. */
#include "torch_alloc.h"

#include "log.h"
#include "options.h"
#include "pyborrow.h"
#include "real.h"
#include "thread_name.h"
#include "trace.h"
#include "track.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define TA_LIBRARY          "libc10_cuda.so"
#define TA_SYMBOL           "_ZN3c104cuda20CUDACachingAllocator9allocatorE"
#define TA_TORCH_CPU        "libtorch_cpu.so"
#define TA_GRAPH_TASK_ID    "_ZN5torch8autograd25get_current_graph_task_idEv" /* int () */
#define TA_SLOT_ALLOCATE    2
#define TA_SLOT_RAW_DELETER 4
#define TA_PREFIX           2   /* offset-to-top and type_info, before the address point */
#define TA_SLOTS            160 /* copied: more than CUDAAllocator's virtual functions */
#define TA_DATAPTR_WORDS    4
#define TA_DEVICE_TYPE_CUDA 1
#define TA_BLOCK_ROUND      512 /* the caching allocator's block granule */
#define TA_NO_DELETER       (-1)

struct ta_dataptr {
    void *w[TA_DATAPTR_WORDS];
};

typedef struct ta_dataptr (*ta_allocate_fn)(void *self, size_t n);
typedef void (*ta_deleter_fn)(void *ctx);
typedef ta_deleter_fn (*ta_raw_deleter_fn)(const void *self);

enum ta_state { TA_UNTRIED, TA_TRYING, TA_ACTIVE, TA_OFF };

static _Atomic int ta_state = TA_UNTRIED;
static void **ta_object;    /* the allocator object: its first word is the vptr */
static void **ta_orig_vptr; /* its own table's address point */
static void *ta_table[TA_PREFIX + TA_SLOTS];
static ta_allocate_fn ta_real_allocate;
static ta_deleter_fn ta_real_deleter;
static _Atomic int ta_deleter_word = TA_NO_DELETER; /* learnt at the first allocation */

int torch_alloc_active(void)
{
    return atomic_load_explicit(&ta_state, memory_order_relaxed) == TA_ACTIVE;
}

static void ta_deleter(void *ctx)
{
    track_tensor_free((uint64_t)(uintptr_t)ctx);
    ta_real_deleter(ctx);
}

static ta_deleter_fn ta_raw_deleter(const void *self)
{
    (void)self;
    return ta_deleter;
}

/* Something did not look as expected: the object gets its own table back. Allocations in
 * flight finish through either table; both lead to the allocator's functions. */
static MS_COLD void ta_give_up(const char *why)
{
    int expect = TA_ACTIVE;
    if (!atomic_compare_exchange_strong(&ta_state, &expect, TA_OFF))
        return;
    __atomic_store_n(ta_object, (void *)ta_orig_vptr, __ATOMIC_RELEASE);
    log_error("PyTorch's CUDA allocator: %s; tensors are not recorded, only its segments", why);
}

/* Which word of a fresh DataPtr holds the deleter: exactly one word equals it, and the two
 * others before the device are the data pointer. */
static int ta_check_layout(const struct ta_dataptr *d)
{
    int at = TA_NO_DELETER;
    for (int i = 0; i < TA_DATAPTR_WORDS - 1; i++) {
        if (d->w[i] == (void *)ta_real_deleter) {
            if (at != TA_NO_DELETER)
                return TA_NO_DELETER;
            at = i;
        } else if (d->w[i] != d->w[0]) {
            return TA_NO_DELETER;
        }
    }
    return at > 0 ? at : TA_NO_DELETER;
}

/* The uncached path hands out the same four words with its own deleter: one word lies in
 * raw_deleter()'s library, the others are the data pointer. */
static int ta_other_deleter(const struct ta_dataptr *d)
{
    Dl_info lib, info;
    int other = 0;
    if (!dladdr((void *)ta_real_deleter, &lib))
        return 0;
    for (int i = 1; i < TA_DATAPTR_WORDS - 1; i++) {
        if (d->w[i] == d->w[0])
            continue;
        if (other || !dladdr(d->w[i], &info) || info.dli_fbase != lib.dli_fbase)
            return 0;
        other = 1;
    }
    return other;
}

static int ta_deleter_index(const struct ta_dataptr *d)
{
    int at = atomic_load_explicit(&ta_deleter_word, memory_order_relaxed);
    if (at != TA_NO_DELETER)
        return d->w[at] == (void *)ta_real_deleter ? at : TA_NO_DELETER;
    at = ta_check_layout(d);
    if (at == TA_NO_DELETER && ta_other_deleter(d))
        ta_give_up("its first tensor has another deleter than raw_deleter(), as when caching is "
                   "off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: each tensor is then a cudaMalloc of "
                   "its own, recorded as such)");
    else if (at == TA_NO_DELETER)
        ta_give_up("its first tensor does not have the expected layout");
    else
        atomic_store(&ta_deleter_word, at);
    return at;
}

static int ta_device(const struct ta_dataptr *d)
{
    uint16_t dev;
    memcpy(&dev, &d->w[TA_DATAPTR_WORDS - 1], sizeof dev);
    return (dev & 0xff) == TA_DEVICE_TYPE_CUDA ? (int)(dev >> 8) : -1;
}

/* ---- autograd nodes ----
 * A tensor allocated in backward is linked to the node that made it, one allocated in forward
 * to the last node its thread created (an operation creates its backward node before its
 * kernel allocates the outputs): the analyzer then names, for a backward tensor, the forward
 * line of its operation. The running node comes from get_current_node() (exported), an owning
 * c10::intrusive_ptr returned through a hidden pointer as DataPtr is above. Its fields are read
 * at fixed offsets of torch::autograd::Node (torch/csrc/autograd/node.h): the vptr, then
 * c10::intrusive_ptr_target's count (strong references in the low 32 bits), then sequence_nr_,
 * topological_nr_, two bools and thread_id_. That layout came with Node deriving from
 * intrusive_ptr_target (Node::release_resources exported; before, it was held by shared_ptr,
 * another layout): without that symbol nothing is read. The reference get_current_node() adds
 * is dropped by decrementing the count: while a node runs the engine holds it twice (its task
 * and its NodeGuard), so the count stays above one and none of the work the last references
 * do (deletion, the Python object's reference) is skipped. A count below three is left alone
 * (one reference leaks) and turns the links off. */
#define TA_CURRENT_NODE  "_ZN5torch8autograd16get_current_nodeEv"
#define TA_NODE_RELEASE  "_ZN5torch8autograd4Node17release_resourcesEv"
#define TA_SEQUENCE_PEEK "_ZN2at15sequence_number4peekEv"
#define TA_THREAD_ID     "_ZN2at14RecordFunction15currentThreadIdEv"
#define TA_NODE_COUNT    8
#define TA_NODE_SEQ      16
#define TA_NODE_THREAD   40
#define TA_NODE_MIN_REFS 3
#define TA_NO_SEQ        UINT64_MAX /* AccumulateGrad's: it has no forward operation */
#define TA_MAX_THREAD_ID (1u << 20) /* currentThreadId() counts threads from 1 */
#define TA_ENGINE_THREAD "pt_autograd_"

struct ta_ret {
    void *w[4]; /* more than two words: returned through a hidden pointer, as intrusive_ptr is */
};
typedef struct ta_ret (*ta_current_node_fn)(void);
typedef uint64_t (*ta_u64_fn)(void);

static ta_current_node_fn ta_current_node;
static ta_u64_fn ta_seq_peek, ta_thread_id;
static _Atomic int ta_links;
static MS_TLS uint64_t ta_fwd_next;   /* peek() at this thread's last FORWARD link; 0: none */
static MS_TLS uint64_t ta_fwd_thread; /* currentThreadId() of this thread; 0: not asked yet */
static MS_TLS int8_t ta_engine;       /* this thread is the engine's: 1 yes, -1 no, 0 not known */

static void ta_links_resolve(void)
{
    void *cpu = dlopen(TA_TORCH_CPU, RTLD_LAZY | RTLD_NOLOAD);
    if (!cpu)
        return;
    *(void **)&ta_current_node = real_dlsym(cpu, TA_CURRENT_NODE);
    *(void **)&ta_seq_peek = real_dlsym(cpu, TA_SEQUENCE_PEEK);
    *(void **)&ta_thread_id = real_dlsym(cpu, TA_THREAD_ID);
    void *layout = real_dlsym(cpu, TA_NODE_RELEASE);
    dlclose(cpu);
    if (ta_current_node && ta_seq_peek && ta_thread_id && layout)
        atomic_store(&ta_links, 1);
    else
        log_debug("PyTorch's autograd: not the node layout memshim reads; backward tensors are "
                  "not linked to their forward lines");
}

static MS_COLD void ta_links_off(uint64_t count)
{
    int expect = 1;
    if (atomic_compare_exchange_strong(&ta_links, &expect, 0))
        log_error("PyTorch's autograd: a running node had %u references, fewer than the %d "
                  "expected; backward tensors are no longer linked to their forward lines",
                  (unsigned)(uint32_t)count, TA_NODE_MIN_REFS);
}

/* The number and forward thread of `node` (a reference of our own, dropped here) in *seq and
 * *fwd: 0 when they name a forward operation (AccumulateGrad's node has none). */
static int ta_node_read(char *node, uint64_t *seq, uint64_t *fwd)
{
    _Atomic uint64_t *count = (_Atomic uint64_t *)(void *)(node + TA_NODE_COUNT);
    uint64_t c = atomic_load_explicit(count, memory_order_relaxed);
    if ((uint32_t)c < TA_NODE_MIN_REFS) {
        ta_links_off(c);
        return -1;
    }
    memcpy(seq, node + TA_NODE_SEQ, sizeof *seq);
    memcpy(fwd, node + TA_NODE_THREAD, sizeof *fwd);
    atomic_fetch_sub_explicit(count, 1, memory_order_acq_rel);
    return *seq != TA_NO_SEQ && *fwd && *fwd < TA_MAX_THREAD_ID ? 0 : -1;
}

/* A CUDA node runs on the engine's thread for its device (named pt_autograd_<device>), so
 * other threads do not ask for the running node: they allocate in forward. */
static int ta_engine_thread(void)
{
    if (ms_unlikely(!ta_engine))
        ta_engine = thread_name_has_prefix(TA_ENGINE_THREAD) ? 1 : -1;
    return ta_engine > 0;
}

static void ta_link(struct track_tensor *t)
{
    char *node = ta_engine_thread() ? ta_current_node().w[0] : NULL;
    uint64_t seq, fwd;
    if (node) {
        if (ta_node_read(node, &seq, &fwd) == 0)
            track_tensor_autograd(t, MST_AUTOGRAD_BACKWARD, seq, fwd);
        return;
    }
    uint64_t next = ta_seq_peek();
    if (next == 0 || next == ta_fwd_next) /* no node yet, or its first tensor is linked */
        return;
    ta_fwd_next = next;
    if (!ta_fwd_thread)
        ta_fwd_thread = ta_thread_id();
    track_tensor_autograd(t, MST_AUTOGRAD_FORWARD, next - 1, ta_fwd_thread);
}

static struct ta_dataptr ta_allocate(void *self, size_t n)
{
    struct track_tensor t;
    track_tensor_begin(&t);
    struct ta_dataptr d = ta_real_allocate(self, n);
    int at = d.w[0] && torch_alloc_active() ? ta_deleter_index(&d) : TA_NO_DELETER;
    /* Not ours to follow (another deleter: caching off; or we gave up): no record. */
    if (at != TA_NO_DELETER) {
        d.w[at] = (void *)ta_deleter;
        uint64_t block = n < TA_BLOCK_ROUND
                             ? TA_BLOCK_ROUND
                             : (n + TA_BLOCK_ROUND - 1) / TA_BLOCK_ROUND * TA_BLOCK_ROUND;
        if (atomic_load_explicit(&ta_links, memory_order_relaxed))
            ta_link(&t);
        track_tensor_end(&t, (uint64_t)(uintptr_t)d.w[0], block, n, ta_device(&d));
    } else {
        track_tensor_end(&t, 0, 0, 0, -1);
    }
    return d;
}

/* Both the object's table and the slots we replace lie in libc10_cuda, and the copy does
 * not run past the end of the library's mapping. */
static const char *ta_check_table(void **vptr, const void *lib_base)
{
    Dl_info a, b, c;
    if (!dladdr(vptr - TA_PREFIX, &a) || a.dli_fbase != lib_base ||
        !dladdr(vptr + TA_SLOTS - 1, &b) || b.dli_fbase != lib_base)
        return "its virtual table is not where expected";
    if (!dladdr(vptr[TA_SLOT_ALLOCATE], &c) || c.dli_fbase != lib_base ||
        !dladdr(vptr[TA_SLOT_RAW_DELETER], &c) || c.dli_fbase != lib_base)
        return "its allocate/raw_deleter slots are not in " TA_LIBRARY;
    return NULL;
}

static const char *ta_patch(void **object, const void *lib_base)
{
    void **vptr = (void **)__atomic_load_n(object, __ATOMIC_ACQUIRE);
    const char *why = ta_check_table(vptr, lib_base);
    if (why)
        return why;
    ta_deleter_fn deleter = ((ta_raw_deleter_fn)vptr[TA_SLOT_RAW_DELETER])(object);
    Dl_info d;
    if (!deleter || !dladdr((void *)deleter, &d) || d.dli_fbase != lib_base)
        return "its raw_deleter() is not a function of " TA_LIBRARY;
    memcpy(ta_table, vptr - TA_PREFIX, sizeof ta_table);
    ta_real_allocate = (ta_allocate_fn)vptr[TA_SLOT_ALLOCATE];
    ta_real_deleter = deleter;
    ta_table[TA_PREFIX + TA_SLOT_ALLOCATE] = (void *)ta_allocate;
    ta_table[TA_PREFIX + TA_SLOT_RAW_DELETER] = (void *)ta_raw_deleter;
    ta_object = object;
    ta_orig_vptr = vptr;
    atomic_store(&ta_state, TA_ACTIVE);
    __atomic_store_n(object, (void *)(ta_table + TA_PREFIX), __ATOMIC_RELEASE);
    return NULL;
}

static void ta_try(void)
{
    void *lib = dlopen(TA_LIBRARY, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) {
        if (options_uint(OPT_TENSORS) == OPT_TENSORS_ON)
            log_error("MEMSHIM_TENSORS=on, but the process has not loaded PyTorch's CUDA library "
                      "(" TA_LIBRARY ") at its first CUDA call: no tensors are recorded");
        return;
    }
    void **slot = real_dlsym(lib, TA_SYMBOL);
    Dl_info info;
    void **object = slot ? __atomic_load_n((void ***)slot, __ATOMIC_ACQUIRE) : NULL;
    const char *why = !slot                             ? "no " TA_SYMBOL " in " TA_LIBRARY
                      : !object || !dladdr(slot, &info) ? "no allocator object yet"
                                                        : ta_patch(object, info.dli_fbase);
    dlclose(lib);
    if (why) {
        log_error("PyTorch's CUDA allocator: %s; tensors are not recorded, only its segments", why);
        return;
    }
    ta_links_resolve();
    log_debug("PyTorch's CUDA allocator: tensors are recorded");
}

/* Backward runs on the engine's threads (named pt_autograd_<device>) without the GIL, while
 * the thread that called backward() waits in the engine, its innermost Python frame torch's
 * _engine_run_backward (torch/autograd/graph.py, the one way into the engine since 2.3). */
static void ta_lend_frames(void)
{
    void *lib = dlopen(TA_LIBRARY, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib)
        return;
    /* The engine thread's graph task (a thread_local it reads), -1 outside one: the caller of
     * backward() waits until its graph task is done, so its frames stay as they were. */
    void *cpu = dlopen(TA_TORCH_CPU, RTLD_LAZY | RTLD_NOLOAD);
    int (*graph_task)(void) = NULL;
    if (cpu)
        *(void **)&graph_task = real_dlsym(cpu, TA_GRAPH_TASK_ID);
    pyborrow_configure(TA_ENGINE_THREAD, "_engine_run_backward", graph_task);
    if (cpu)
        dlclose(cpu);
    dlclose(lib);
}

static MS_NOINLINE MS_COLD void torch_alloc_try_install(void)
{
    int expect = TA_UNTRIED;
    if (!atomic_compare_exchange_strong(&ta_state, &expect, TA_TRYING))
        return;
    ta_lend_frames();
    /* Without a trace the records would go nowhere: the allocator is left alone. */
    if (options_uint(OPT_TENSORS) != OPT_TENSORS_OFF && trace_enabled())
        ta_try();
    expect = TA_TRYING;
    atomic_compare_exchange_strong(&ta_state, &expect, TA_OFF);
}

/* Every runtime allocation comes here: after the first, one load. */
MS_HOT void torch_alloc_install(void)
{
    if (ms_unlikely(atomic_load_explicit(&ta_state, memory_order_relaxed) == TA_UNTRIED))
        torch_alloc_try_install();
}
