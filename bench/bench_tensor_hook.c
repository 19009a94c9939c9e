/* bench_tensor_hook: the shim's added cost per tensor (allocate + delete) through PyTorch's
 * allocator interface, measured on tests/e2e/fake_c10 (a libc10_cuda.so stand-in with the same
 * exported allocator object and layouts, on simcuda) so that nothing else of PyTorch is timed:
 * bare, then under LD_PRELOAD of the shim with MEMSHIM_TENSORS=off, with tensors recorded
 * without stacks, and with the default 24-frame stacks (trace on). Prints CPU ns per tensor
 * (the fastest of many batches) and the ns added. Asserts nothing about time; exits 1 when a
 * run fails.
 *
 *     bench_tensor_hook LIBMEMSHIM FAKE_LIBC10_CUDA [tensors]   (simcuda on LD_LIBRARY_PATH) */
#include "bench_preload.h"

#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 500

struct dataptr {
    void *w[4];
};
typedef struct dataptr (*allocate_fn)(void *self, size_t n);

static void *object;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* As PyTorch's callers do: a virtual call of allocate, later the DataPtr's deleter. */
static int tensors(long n)
{
    for (long i = 0; i < n; i++) {
        void **vptr = *(void ***)object;
        struct dataptr d = ((allocate_fn)vptr[2])(object, 4000);
        if (!d.w[0])
            return -1;
        ((void (*)(void *))d.w[1])(d.w[2]);
    }
    return 0;
}

static int load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void **slot = h ? dlsym(h, "_ZN3c104cuda20CUDACachingAllocator9allocatorE") : NULL;
    object = slot ? *slot : NULL;
    void *p;
    /* PyTorch's first CUDA call comes after its libraries are loaded: the shim patches then. */
    return object && cudaMalloc(&p, 256) == cudaSuccess && cudaFree(p) == cudaSuccess ? 0 : -1;
}

static int measure(long n, double *ns, double *unused)
{
    const char *lib = getenv("BENCH_FAKE_C10");
    if (!lib || load(lib) < 0 || tensors(n / 10 + 1) < 0)
        return -1;
    double best = 1e300;
    for (long done = 0; done < n; done += BATCH) {
        uint64_t t0 = now_ns();
        if (tensors(BATCH) < 0)
            return -1;
        double per = (double)(now_ns() - t0) / BATCH;
        best = per < best ? per : best;
    }
    *ns = best;
    *unused = 0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tensor_hook LIBMEMSHIM FAKE_LIBC10_CUDA [tensors]\n");
        return 2;
    }
    /* A child (bench_preload_run) gets LIBMEMSHIM and the count; the library path comes in the
     * environment. */
    if (getenv("BENCH_TENSOR_CHILD"))
        return bench_preload_child_main("BENCH_TENSOR_CHILD", measure, atol(argv[2]));
    setenv("BENCH_FAKE_C10", argv[2], 1);
    long n = argc > 3 ? atol(argv[3]) : 200000;
    double bare, unused;
    if (measure(n, &bare, &unused) < 0) {
        fprintf(stderr, "bench_tensor_hook: the fake allocator failed\n");
        return 1;
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char off[512], nostack[512], on[512];
    snprintf(off, sizeof off, "MEMSHIM_TENSORS=off MEMSHIM_TRACE=%s/bench_tensor-%%p.mst", tmp);
    snprintf(nostack, sizeof nostack, "MEMSHIM_STACK_DEPTH=0 MEMSHIM_TRACE=%s/bench_tensor-%%p.mst",
             tmp);
    snprintf(on, sizeof on, "MEMSHIM_TRACE=%s/bench_tensor-%%p.mst", tmp);
    const struct {
        const char *label, *env;
    } runs[] = {{"MEMSHIM_TENSORS=off", off},
                {"tensors, stacks off", nostack},
                {"tensors, 24-frame stacks", on}};
    printf("tensors of 4000 bytes (allocate + delete), %ld\n  %-26s %7.1f ns\n", n, "no shim",
           bare);
    int status = 0;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        double ns;
        if (bench_preload_run("BENCH_TENSOR_CHILD", argv[0], argv[1], n, runs[i].env, &ns,
                              &unused) < 0) {
            fprintf(stderr, "bench_tensor_hook: the run under the shim failed (%s)\n",
                    runs[i].label);
            status = 1;
            continue;
        }
        printf("  %-26s %7.1f ns (+%.0f ns)\n", runs[i].label, ns, ns - bare);
    }
    char rm[512];
    snprintf(rm, sizeof rm, "rm -f %s/bench_tensor-*.mst", tmp);
    if (system(rm) != 0)
        status = status ? status : 0;
    return status;
}
