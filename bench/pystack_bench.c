/* pystack_bench: the cost of Python frames in a call site, measured inside a Python process.
 *
 * A library with the shim's core linked in, loaded by pystack_bench.py through ctypes.PyDLL so
 * that the calling thread holds the GIL, as a framework's allocation does. For one Python
 * stack depth it times, per call: callsite_capture with MEMSHIM_PY_STACKS off (native frames
 * only), the same with it on (native frames to the interpreter, then the Python frames), and
 * pystack_capture alone. The site is interned on the first call, so the loops time the steady
 * state a training loop sees. pystack_bench_once captures once, for the script to call from
 * freshly made Python frames (a new step's calls), whose frame objects the capture creates.
 * pystack_bench_borrow times a worker thread that borrows the frames of the Python thread
 * waiting for it (pyborrow.h), as PyTorch's autograd threads do. */
#include "callsite.h"
#include "options.h"
#include "pyborrow.h"
#include "pystack.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint32_t sink;

static double per_call_capture(int n)
{
    sink += callsite_capture(); /* first sight: interned here, not in the loop */
    uint64_t t = now_ns();
    for (int i = 0; i < n; i++)
        sink += callsite_capture();
    return (double)(now_ns() - t) / n;
}

static double per_call_pystack(int n, unsigned depth)
{
    uint64_t keys[OPT_MAX_STACK_DEPTH];
    uint64_t t = now_ns();
    for (int i = 0; i < n; i++)
        sink += (uint32_t)pystack_capture(keys, (int)depth);
    return (double)(now_ns() - t) / n;
}

/* ns per call: out[0] capture with Python frames off, out[1] on, out[2] pystack_capture
 * alone; out[3] the Python frames captured. Returns -1 when the C API was not found. */
__attribute__((visibility("default"))) int pystack_bench(int n, unsigned depth, double *out)
{
    static int ready;
    if (!ready) {
        callsite_init(depth, 0);
        pystack_init(PYSTACK_ON);
        ready = 1;
    }
    pystack_init(PYSTACK_ON);
    if (!pystack_available())
        return -1;
    uint64_t keys[OPT_MAX_STACK_DEPTH];
    out[3] = pystack_capture(keys, (int)depth);
    out[2] = per_call_pystack(n, depth);
    out[1] = per_call_capture(n);
    pystack_init(PYSTACK_OFF);
    out[0] = per_call_capture(n);
    pystack_init(PYSTACK_ON);
    return 0;
}

/* One capture with Python frames on or off; the site id. */
__attribute__((visibility("default"))) uint32_t pystack_bench_once(int python)
{
    pystack_init(python ? PYSTACK_ON : PYSTACK_OFF);
    return callsite_capture();
}

/* ---- borrowed frames ---- */

#define BORROW_THREAD   "pt_autograd_0"
#define BORROW_FUNCTION "_engine_run_backward"

static int bench_pass = -1;

static int bench_pass_id(void)
{
    return bench_pass;
}

struct borrow_run {
    const char *name;
    int n;
    double ns_pystack, ns_capture, frames;
    char *text;
    size_t size;
};

static void *borrow_worker(void *arg)
{
    struct borrow_run *b = arg;
    pthread_setname_np(pthread_self(), b->name);
    uint64_t keys[OPT_MAX_STACK_DEPTH];
    int n = pystack_capture(keys, OPT_MAX_STACK_DEPTH);
    b->frames = n;
    /* The first capture read and named the chain; the loops see it unchanged. */
    b->ns_pystack = per_call_pystack(b->n, OPT_MAX_STACK_DEPTH);
    b->ns_capture = per_call_capture(b->n);
    size_t at = 0;
    for (int i = 0; i < n && b->text && at < b->size; i++) {
        const char *file, *fn;
        uint32_t fid, line;
        if (pystack_describe(keys[i], &file, &fid, &fn, &line) == 0)
            at += (size_t)snprintf(b->text + at, b->size - at, "%s:%u %s\n", file, line, fn);
    }
    return NULL;
}

static int borrow_on_thread(struct borrow_run *b)
{
    pthread_t th;
    if (pthread_create(&th, NULL, borrow_worker, b) != 0)
        return -1;
    return pthread_join(th, NULL) == 0 ? 0 : -1;
}

/* With the GIL held (ctypes.PyDLL): sets borrowing up and checks its layout against this
 * thread's frames. 1 when threads may borrow. */
__attribute__((visibility("default"))) int pystack_bench_borrow_setup(unsigned depth)
{
    callsite_init(depth, 0);
    pystack_init(PYSTACK_ON);
    pyborrow_configure("pt_autograd_", BORROW_FUNCTION, bench_pass_id);
    uint64_t keys[OPT_MAX_STACK_DEPTH];
    pystack_capture(keys, (int)depth);
    return !pyborrow_unchecked();
}

/* Without the GIL (ctypes.CDLL), called from a Python function named _engine_run_backward:
 * a thread named pt_autograd_0 captures `n` times. out[0] ns per pystack_capture there, out[1]
 * ns per callsite_capture there, out[2] the frames it borrowed, when it cannot tell which pass
 * it works for (the chain is read again each time); out[3] and out[4] the same two when it
 * can (one pass id throughout, as PyTorch's graph task id); out[5] and out[6] on a thread of
 * another name (no borrowing). text gets the borrowed frames, one `file:line function` a
 * line. */
__attribute__((visibility("default"))) int pystack_bench_borrow(int n, double *out, char *text,
                                                                size_t size)
{
    struct borrow_run b = {BORROW_THREAD, n, 0, 0, 0, text, size};
    struct borrow_run pass = {BORROW_THREAD, n, 0, 0, 0, NULL, 0};
    struct borrow_run other = {"bench_worker", n, 0, 0, 0, NULL, 0};
    if (size)
        text[0] = '\0';
    bench_pass = -1;
    if (borrow_on_thread(&b) != 0)
        return -1;
    bench_pass = 1;
    int rc = borrow_on_thread(&pass);
    bench_pass = -1;
    if (rc != 0 || borrow_on_thread(&other) != 0)
        return -1;
    double v[] = {b.ns_pystack,    b.ns_capture,     b.frames,        pass.ns_pystack,
                  pass.ns_capture, other.ns_pystack, other.ns_capture};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        out[i] = v[i];
    return 0;
}
