/* intercept_copy: copies and sets → access.h; see intercept_copy.h. Each wrapper passes
 * straight through below MEMSHIM_ACCESS=all or under the recursion guard (the runtime's own
 * driver copies are counted once, by the runtime hook). */
#include "intercept_copy.h"

#include "access.h"
#include "intercept_cublas.h"
#include "registry.h"

#define RT_FN(name)  (real_runtime_ready() ? REAL(name) : NULL)
#define DRV_FN(name) (real_driver_ready() ? REAL(name) : NULL)

#define NA 0xff /* dtype of a copy or set: not applicable */

/* Bytes from the first to the last byte of `rows` rows of `width` bytes, `pitch` apart. */
static uint64_t copy_envelope(uint64_t pitch, uint64_t width, uint64_t rows)
{
    if (width == 0 || rows == 0)
        return 0;
    uint64_t span = intercept_mul(pitch, rows - 1);
    return span > UINT64_MAX - width ? UINT64_MAX : span + width;
}

static int copy_tracked(uint64_t addr)
{
    return registry_containing(REGISTRY_ADDR, addr, NULL) ||
           registry_containing(REGISTRY_MAP, addr, NULL);
}

/* Whether the recording hook should run: level `all`, something that reads the record, and the
 * guard taken (leave it after). */
static inline int copy_enter(void)
{
    /* Work cuBLAS issues inside a GEMM belongs to the GEMM's record (its operands and
     * workspace are already resident and pinned): recording it again would count it twice. */
    return access_level() == ACCESS_ALL && access_recording() && !guard_in_blas() &&
           track_guard_enter();
}

/* Record one op with up to two ranges (size-0 ranges dropped). -1: do not make the call. */
static int copy_record(uint8_t kind, const char *name, uint64_t stream, struct access_range *r,
                       size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].size)
            r[k++] = r[i];
    if (k == 0)
        return 0;
    struct access_op op = {
        .kind = kind, .dtype_a = NA, .dtype_b = NA, .dtype_c = NA, .stream = stream, .name = name};
    return access_record(&op, r, k);
}

/* A copy between dst and src of `dbytes`/`sbytes` device bytes; dev_dst/dev_src say which sides
 * are device memory (-1: decide by the registry). */
static int copy_note(const char *name, uint64_t stream, uint64_t dst, uint64_t dbytes, int dev_dst,
                     uint64_t src, uint64_t sbytes, int dev_src)
{
    struct access_range r[2];
    size_t n = 0;
    /* A host source said to be host memory by the API (never one merely untracked, which may be
     * device memory): device addresses in it expose their ranges to recompute (residency.h). */
    if (dev_src == 0 && dev_dst == 1 && (sbytes == dbytes || sbytes == 0) && track_remat())
        track_scan_host((const void *)(uintptr_t)src, dbytes);
    if (dev_src < 0)
        dev_src = copy_tracked(src);
    if (dev_dst < 0)
        dev_dst = copy_tracked(dst);
    if (dev_src)
        r[n++] = (struct access_range){.addr = src, .size = sbytes, .mode = MST_ACCESS_READ};
    if (dev_dst)
        r[n++] = (struct access_range){.addr = dst, .size = dbytes, .mode = MST_ACCESS_WRITE};
    return copy_record(MST_OP_MEMCPY, name, stream, r, n);
}

static int set_note(const char *name, uint64_t stream, uint64_t dst, uint64_t bytes)
{
    struct access_range r = {.addr = dst, .size = bytes, .mode = MST_ACCESS_WRITE};
    return copy_record(MST_OP_MEMSET, name, stream, &r, 1);
}

/* Which sides of a runtime copy are device memory, by its kind. */
static void rt_sides(enum cudaMemcpyKind kind, int *dev_dst, int *dev_src)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
        *dev_dst = 0, *dev_src = 0;
        break;
    case cudaMemcpyHostToDevice:
        *dev_dst = 1, *dev_src = 0;
        break;
    case cudaMemcpyDeviceToHost:
        *dev_dst = 0, *dev_src = 1;
        break;
    case cudaMemcpyDeviceToDevice:
        *dev_dst = 1, *dev_src = 1;
        break;
    default: /* cudaMemcpyDefault, or a bad kind the real call rejects */
        *dev_dst = -1, *dev_src = -1;
        break;
    }
}

#define U(p) ((uint64_t)(uintptr_t)(p))

/* ---- runtime copies ---- */

static int rt_copy_note(const char *name, void *stream, void *dst, const void *src, uint64_t dbytes,
                        uint64_t sbytes, enum cudaMemcpyKind kind)
{
    int dd, ds;
    rt_sides(kind, &dd, &ds);
    return copy_note(name, U(stream), U(dst), dbytes, dd, U(src), sbytes, ds);
}

/* The body every runtime wrapper shares: fn is the real call, `note` records it. */
#define RT_WRAP(real_fn, note, call)                                                               \
    do {                                                                                           \
        if (!(real_fn))                                                                            \
            return cudaErrorInitializationError;                                                   \
        if (!copy_enter())                                                                         \
            return call;                                                                           \
        cudaError_t r_ = (note) < 0 ? cudaErrorMemoryAllocation : call;                            \
        access_done();                                                                             \
        track_guard_leave();                                                                       \
        return r_;                                                                                 \
    } while (0)

#define RT_MEMCPY(name)                                                                            \
    cudaError_t name(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)           \
    {                                                                                              \
        cudaError_t (*fn)(void *, const void *, size_t, enum cudaMemcpyKind) = RT_FN(name);        \
        RT_WRAP(fn, rt_copy_note(#name, NULL, dst, src, count, count, kind),                       \
                fn(dst, src, count, kind));                                                        \
    }
RT_MEMCPY(cudaMemcpy)
RT_MEMCPY(cudaMemcpy_ptds)

#define RT_MEMCPY_ASYNC(name)                                                                      \
    cudaError_t name(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,           \
                     cudaStream_t stream)                                                          \
    {                                                                                              \
        cudaError_t (*fn)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t) =       \
            RT_FN(name);                                                                           \
        RT_WRAP(fn, rt_copy_note(#name, stream, dst, src, count, count, kind),                     \
                fn(dst, src, count, kind, stream));                                                \
    }
RT_MEMCPY_ASYNC(cudaMemcpyAsync)
RT_MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

#define RT_MEMCPY_2D(name)                                                                         \
    cudaError_t name(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,       \
                     size_t height, enum cudaMemcpyKind kind)                                      \
    {                                                                                              \
        cudaError_t (*fn)(void *, size_t, const void *, size_t, size_t, size_t,                    \
                          enum cudaMemcpyKind) = RT_FN(name);                                      \
        RT_WRAP(fn,                                                                                \
                rt_copy_note(#name, NULL, dst, src, copy_envelope(dpitch, width, height),          \
                             copy_envelope(spitch, width, height), kind),                          \
                fn(dst, dpitch, src, spitch, width, height, kind));                                \
    }
RT_MEMCPY_2D(cudaMemcpy2D)
RT_MEMCPY_2D(cudaMemcpy2D_ptds)

#define RT_MEMCPY_2D_ASYNC(name)                                                                   \
    cudaError_t name(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,       \
                     size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)                 \
    {                                                                                              \
        cudaError_t (*fn)(void *, size_t, const void *, size_t, size_t, size_t,                    \
                          enum cudaMemcpyKind, cudaStream_t) = RT_FN(name);                        \
        RT_WRAP(fn,                                                                                \
                rt_copy_note(#name, stream, dst, src, copy_envelope(dpitch, width, height),        \
                             copy_envelope(spitch, width, height), kind),                          \
                fn(dst, dpitch, src, spitch, width, height, kind, stream));                        \
    }
RT_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync)
RT_MEMCPY_2D_ASYNC(cudaMemcpy2DAsync_ptsz)

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    cudaError_t (*fn)(void *, int, const void *, int, size_t) = RT_FN(cudaMemcpyPeer);
    RT_WRAP(fn, copy_note("cudaMemcpyPeer", 0, U(dst), count, 1, U(src), count, 1),
            fn(dst, dstDevice, src, srcDevice, count));
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                size_t count, cudaStream_t stream)
{
    cudaError_t (*fn)(void *, int, const void *, int, size_t, cudaStream_t) =
        RT_FN(cudaMemcpyPeerAsync);
    RT_WRAP(fn, copy_note("cudaMemcpyPeerAsync", U(stream), U(dst), count, 1, U(src), count, 1),
            fn(dst, dstDevice, src, srcDevice, count, stream));
}

/* ---- runtime sets ---- */

#define RT_MEMSET(name)                                                                            \
    cudaError_t name(void *devPtr, int value, size_t count)                                        \
    {                                                                                              \
        cudaError_t (*fn)(void *, int, size_t) = RT_FN(name);                                      \
        RT_WRAP(fn, set_note(#name, 0, U(devPtr), count), fn(devPtr, value, count));               \
    }
RT_MEMSET(cudaMemset)
RT_MEMSET(cudaMemset_ptds)

#define RT_MEMSET_ASYNC(name)                                                                      \
    cudaError_t name(void *devPtr, int value, size_t count, cudaStream_t stream)                   \
    {                                                                                              \
        cudaError_t (*fn)(void *, int, size_t, cudaStream_t) = RT_FN(name);                        \
        RT_WRAP(fn, set_note(#name, U(stream), U(devPtr), count),                                  \
                fn(devPtr, value, count, stream));                                                 \
    }
RT_MEMSET_ASYNC(cudaMemsetAsync)
RT_MEMSET_ASYNC(cudaMemsetAsync_ptsz)

#define RT_MEMSET_2D(name)                                                                         \
    cudaError_t name(void *devPtr, size_t pitch, int value, size_t width, size_t height)           \
    {                                                                                              \
        cudaError_t (*fn)(void *, size_t, int, size_t, size_t) = RT_FN(name);                      \
        RT_WRAP(fn, set_note(#name, 0, U(devPtr), copy_envelope(pitch, width, height)),            \
                fn(devPtr, pitch, value, width, height));                                          \
    }
RT_MEMSET_2D(cudaMemset2D)
RT_MEMSET_2D(cudaMemset2D_ptds)

#define RT_MEMSET_2D_ASYNC(name)                                                                   \
    cudaError_t name(void *devPtr, size_t pitch, int value, size_t width, size_t height,           \
                     cudaStream_t stream)                                                          \
    {                                                                                              \
        cudaError_t (*fn)(void *, size_t, int, size_t, size_t, cudaStream_t) = RT_FN(name);        \
        RT_WRAP(fn, set_note(#name, U(stream), U(devPtr), copy_envelope(pitch, width, height)),    \
                fn(devPtr, pitch, value, width, height, stream));                                  \
    }
RT_MEMSET_2D_ASYNC(cudaMemset2DAsync)
RT_MEMSET_2D_ASYNC(cudaMemset2DAsync_ptsz)

/* ---- driver copies ---- */

#define DRV_WRAP(real_fn, note, call)                                                              \
    do {                                                                                           \
        if (!(real_fn))                                                                            \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        if (!copy_enter())                                                                         \
            return call;                                                                           \
        CUresult r_ = (note) < 0 ? CUDA_ERROR_OUT_OF_MEMORY : call;                                \
        access_done();                                                                             \
        track_guard_leave();                                                                       \
        return r_;                                                                                 \
    } while (0)

/* cuMemcpy: unified addressing, either side may be host memory. */
#define DRV_MEMCPY(name)                                                                           \
    CUresult name(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)                              \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t) = DRV_FN(name);                           \
        DRV_WRAP(fn, copy_note(#name, 0, dst, ByteCount, -1, src, ByteCount, -1),                  \
                 fn(dst, src, ByteCount));                                                         \
    }
DRV_MEMCPY(cuMemcpy)
DRV_MEMCPY(cuMemcpy_ptds)

#define DRV_MEMCPY_ASYNC(name)                                                                     \
    CUresult name(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)            \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = DRV_FN(name);                 \
        DRV_WRAP(fn, copy_note(#name, U(hStream), dst, ByteCount, -1, src, ByteCount, -1),         \
                 fn(dst, src, ByteCount, hStream));                                                \
    }
DRV_MEMCPY_ASYNC(cuMemcpyAsync)
DRV_MEMCPY_ASYNC(cuMemcpyAsync_ptsz)

#define DRV_HTOD(name)                                                                             \
    CUresult name(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)                    \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, const void *, size_t) = DRV_FN(name);                          \
        DRV_WRAP(fn, copy_note(#name, 0, dstDevice, ByteCount, 1, U(srcHost), 0, 0),               \
                 fn(dstDevice, srcHost, ByteCount));                                               \
    }
DRV_HTOD(cuMemcpyHtoD_v2)
DRV_HTOD(cuMemcpyHtoD_v2_ptds)

#define DRV_DTOH(name)                                                                             \
    CUresult name(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)                          \
    {                                                                                              \
        CUresult (*fn)(void *, CUdeviceptr, size_t) = DRV_FN(name);                                \
        DRV_WRAP(fn, copy_note(#name, 0, U(dstHost), 0, 0, srcDevice, ByteCount, 1),               \
                 fn(dstHost, srcDevice, ByteCount));                                               \
    }
DRV_DTOH(cuMemcpyDtoH_v2)
DRV_DTOH(cuMemcpyDtoH_v2_ptds)

#define DRV_DTOD(name)                                                                             \
    CUresult name(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)                  \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t) = DRV_FN(name);                           \
        DRV_WRAP(fn, copy_note(#name, 0, dstDevice, ByteCount, 1, srcDevice, ByteCount, 1),        \
                 fn(dstDevice, srcDevice, ByteCount));                                             \
    }
DRV_DTOD(cuMemcpyDtoD_v2)
DRV_DTOD(cuMemcpyDtoD_v2_ptds)

#define DRV_HTOD_ASYNC(name)                                                                       \
    CUresult name(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)  \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, const void *, size_t, CUstream) = DRV_FN(name);                \
        DRV_WRAP(fn, copy_note(#name, U(hStream), dstDevice, ByteCount, 1, U(srcHost), 0, 0),      \
                 fn(dstDevice, srcHost, ByteCount, hStream));                                      \
    }
DRV_HTOD_ASYNC(cuMemcpyHtoDAsync_v2)
DRV_HTOD_ASYNC(cuMemcpyHtoDAsync_v2_ptsz)

#define DRV_DTOH_ASYNC(name)                                                                       \
    CUresult name(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)        \
    {                                                                                              \
        CUresult (*fn)(void *, CUdeviceptr, size_t, CUstream) = DRV_FN(name);                      \
        DRV_WRAP(fn, copy_note(#name, U(hStream), U(dstHost), 0, 0, srcDevice, ByteCount, 1),      \
                 fn(dstHost, srcDevice, ByteCount, hStream));                                      \
    }
DRV_DTOH_ASYNC(cuMemcpyDtoHAsync_v2)
DRV_DTOH_ASYNC(cuMemcpyDtoHAsync_v2_ptsz)

#define DRV_DTOD_ASYNC(name)                                                                       \
    CUresult name(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,                  \
                  CUstream hStream)                                                                \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = DRV_FN(name);                 \
        DRV_WRAP(fn,                                                                               \
                 copy_note(#name, U(hStream), dstDevice, ByteCount, 1, srcDevice, ByteCount, 1),   \
                 fn(dstDevice, srcDevice, ByteCount, hStream));                                    \
    }
DRV_DTOD_ASYNC(cuMemcpyDtoDAsync_v2)
DRV_DTOD_ASYNC(cuMemcpyDtoDAsync_v2_ptsz)

/* One side of a CUDA_MEMCPY2D: its first byte, and whether it is device memory (-1: decide by
 * the registry; arrays are opaque and not recorded). */
static void drv_2d_side(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                        size_t pitch, uint64_t *addr, int *is_dev)
{
    uint64_t off = intercept_mul(y, pitch);
    off = off > UINT64_MAX - x ? UINT64_MAX : off + x;
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
        *addr = dev + off, *is_dev = 1;
        break;
    case CU_MEMORYTYPE_UNIFIED:
        *addr = dev + off, *is_dev = -1;
        break;
    case CU_MEMORYTYPE_HOST:
        *addr = U(host) + off, *is_dev = 0;
        break;
    default:
        *addr = 0, *is_dev = 0;
        break;
    }
}

static int drv_2d_note(const char *name, uint64_t stream, const CUDA_MEMCPY2D *p)
{
    if (!p)
        return 0;
    uint64_t dst, src;
    int dd, ds;
    drv_2d_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch,
                &dst, &dd);
    drv_2d_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch,
                &src, &ds);
    return copy_note(name, stream, dst, copy_envelope(p->dstPitch, p->WidthInBytes, p->Height), dd,
                     src, copy_envelope(p->srcPitch, p->WidthInBytes, p->Height), ds);
}

#define DRV_MEMCPY_2D(name)                                                                        \
    CUresult name(const CUDA_MEMCPY2D *pCopy)                                                      \
    {                                                                                              \
        CUresult (*fn)(const CUDA_MEMCPY2D *) = DRV_FN(name);                                      \
        DRV_WRAP(fn, drv_2d_note(#name, 0, pCopy), fn(pCopy));                                     \
    }
DRV_MEMCPY_2D(cuMemcpy2D_v2)
DRV_MEMCPY_2D(cuMemcpy2D_v2_ptds)
DRV_MEMCPY_2D(cuMemcpy2DUnaligned_v2)
DRV_MEMCPY_2D(cuMemcpy2DUnaligned_v2_ptds)

#define DRV_MEMCPY_2D_ASYNC(name)                                                                  \
    CUresult name(const CUDA_MEMCPY2D *pCopy, CUstream hStream)                                    \
    {                                                                                              \
        CUresult (*fn)(const CUDA_MEMCPY2D *, CUstream) = DRV_FN(name);                            \
        DRV_WRAP(fn, drv_2d_note(#name, U(hStream), pCopy), fn(pCopy, hStream));                   \
    }
DRV_MEMCPY_2D_ASYNC(cuMemcpy2DAsync_v2)
DRV_MEMCPY_2D_ASYNC(cuMemcpy2DAsync_v2_ptsz)

/* ---- driver sets: N elements of 1, 2 or 4 bytes ---- */

#define DRV_MEMSET(name, type, width)                                                              \
    CUresult name(CUdeviceptr dstDevice, type v, size_t N)                                         \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, type, size_t) = DRV_FN(name);                                  \
        DRV_WRAP(fn, set_note(#name, 0, dstDevice, intercept_mul(N, width)), fn(dstDevice, v, N)); \
    }
DRV_MEMSET(cuMemsetD8_v2, unsigned char, 1)
DRV_MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1)
DRV_MEMSET(cuMemsetD16_v2, unsigned short, 2)
DRV_MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2)
DRV_MEMSET(cuMemsetD32_v2, unsigned int, 4)
DRV_MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4)

#define DRV_MEMSET_ASYNC(name, type, width)                                                        \
    CUresult name(CUdeviceptr dstDevice, type v, size_t N, CUstream hStream)                       \
    {                                                                                              \
        CUresult (*fn)(CUdeviceptr, type, size_t, CUstream) = DRV_FN(name);                        \
        DRV_WRAP(fn, set_note(#name, U(hStream), dstDevice, intercept_mul(N, width)),              \
                 fn(dstDevice, v, N, hStream));                                                    \
    }
DRV_MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1)
DRV_MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1)
DRV_MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2)
DRV_MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2)
DRV_MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4)
DRV_MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4)
