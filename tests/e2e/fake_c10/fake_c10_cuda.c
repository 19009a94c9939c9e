/* A stand-in for PyTorch's libc10_cuda.so, for what shim/hooks/torch_alloc.c relies on, without
 * PyTorch: the exported atomic pointer c10::cuda::CUDACachingAllocator::allocator, an object
 * whose first word points into a virtual table laid out as c10::Allocator's (two destructors,
 * allocate, is_simple_data_ptr, raw_deleter, then more slots), and DataPtrs as libstdc++ lays
 * them out (data, deleter, context, device). Tensors are 4 KiB slots of one 64 MiB segment from
 * cudaMalloc, handed out round-robin. FAKE_C10_LAYOUT=bad hands out a DataPtr whose context
 * differs from its data: the shim must give up and say so. FAKE_C10_LAYOUT=uncached hands out
 * tensors with another deleter than raw_deleter()'s, as PyTorch does with caching off. */
#include <cuda_runtime_api.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_SLOTS    172 /* more than the shim copies after the address point */
#define FAKE_SEGMENT  (64u << 20)
#define FAKE_TENSOR   4096u
#define FAKE_CUDA_DEV 0x0001u /* DeviceType::CUDA, index 0 */

struct fake_dataptr {
    void *w[4];
};

typedef void (*fake_fn)(void);

static char *fake_segment;
static unsigned fake_next;
static unsigned long fake_live;

static void fake_delete(void *ctx)
{
    (void)ctx;
    fake_live--;
}

static void fake_uncached_delete(void *ctx)
{
    fake_delete(ctx);
}

static struct fake_dataptr fake_allocate(void *self, size_t n)
{
    (void)self;
    struct fake_dataptr d = {{NULL, (void *)fake_delete, NULL, (void *)(uintptr_t)FAKE_CUDA_DEV}};
    if (!n || n > FAKE_TENSOR)
        return d;
    if (!fake_segment && cudaMalloc((void **)&fake_segment, FAKE_SEGMENT) != cudaSuccess)
        return d;
    char *p = fake_segment + (size_t)(fake_next++ % (FAKE_SEGMENT / FAKE_TENSOR)) * FAKE_TENSOR;
    const char *layout = getenv("FAKE_C10_LAYOUT");
    d.w[0] = p;
    d.w[2] = layout && strcmp(layout, "bad") == 0 ? p + 1 : p;
    if (layout && strcmp(layout, "uncached") == 0)
        d.w[1] = (void *)fake_uncached_delete;
    fake_live++;
    return d;
}

static void fake_destroy(void *self)
{
    (void)self;
}

static int fake_is_simple(const void *self, const void *dataptr)
{
    (void)self;
    (void)dataptr;
    return 1;
}

static void (*fake_raw_deleter(const void *self))(void *)
{
    (void)self;
    return fake_delete;
}

static fake_fn fake_vtable[2 + FAKE_SLOTS] = {
    NULL,
    NULL, /* offset to top, type_info */
    (fake_fn)fake_destroy,
    (fake_fn)fake_destroy,
    (fake_fn)fake_allocate,
    (fake_fn)fake_is_simple,
    (fake_fn)fake_raw_deleter,
};

static struct {
    fake_fn *vptr;
} fake_object = {fake_vtable + 2};

/* The symbol PyTorch exports (a std::atomic<CUDAAllocator *>: one pointer). */
__attribute__((visibility("default"))) void *_ZN3c104cuda20CUDACachingAllocator9allocatorE =
    &fake_object;

/* For the tests: tensors handed out and not yet deleted. */
__attribute__((visibility("default"))) unsigned long fake_c10_live(void)
{
    return fake_live;
}
