/* pystack_bench: the cost of Python frames in a call site, measured inside a Python process.
 *
 * A library with the shim's core linked in, loaded by pystack_bench.py through ctypes.PyDLL so
 * that the calling thread holds the GIL, as a framework's allocation does. For one Python
 * stack depth it times, per call: callsite_capture with MEMSHIM_PY_STACKS off (native frames
 * only), the same with it on (native frames to the interpreter, then the Python frames), and
 * pystack_capture alone. The site is interned on the first call, so the loops time the steady
 * state a training loop sees. pystack_bench_once captures once, for the script to call from
 * freshly made Python frames (a new step's calls), whose frame objects the capture creates. */
#include "callsite.h"
#include "options.h"
#include "pystack.h"

#include <stdint.h>
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
