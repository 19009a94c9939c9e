/* copy: cudaMemcpy*, cudaMemset* onto the driver's direction-specific copies, each in a legacy
 * and a per-thread-default-stream (_ptds/_ptsz) flavour resolved separately from the driver. */
#include <stdbool.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "api_ptsz.h"
#include "context.h"
#include "error.h"

typedef struct copy_sync_fns {
    __typeof__(&cuMemcpy) any;
    __typeof__(&cuMemcpyHtoD_v2) htod;
    __typeof__(&cuMemcpyDtoH_v2) dtoh;
    __typeof__(&cuMemcpyDtoD_v2) dtod;
} copy_sync_fns;

typedef struct copy_async_fns {
    __typeof__(&cuMemcpyAsync) any;
    __typeof__(&cuMemcpyHtoDAsync_v2) htod;
    __typeof__(&cuMemcpyDtoHAsync_v2) dtoh;
    __typeof__(&cuMemcpyDtoDAsync_v2) dtod;
} copy_async_fns;

static copy_sync_fns sync_fns(const rt_driver *drv, bool per_thread)
{
    if (per_thread)
        return (copy_sync_fns){drv->cuMemcpy_ptds, drv->cuMemcpyHtoD_v2_ptds,
                               drv->cuMemcpyDtoH_v2_ptds, drv->cuMemcpyDtoD_v2_ptds};
    return (copy_sync_fns){drv->cuMemcpy, drv->cuMemcpyHtoD_v2, drv->cuMemcpyDtoH_v2,
                           drv->cuMemcpyDtoD_v2};
}

static copy_async_fns async_fns(const rt_driver *drv, bool per_thread)
{
    if (per_thread)
        return (copy_async_fns){drv->cuMemcpyAsync_ptsz, drv->cuMemcpyHtoDAsync_v2_ptsz,
                                drv->cuMemcpyDtoHAsync_v2_ptsz, drv->cuMemcpyDtoDAsync_v2_ptsz};
    return (copy_async_fns){drv->cuMemcpyAsync, drv->cuMemcpyHtoDAsync_v2,
                            drv->cuMemcpyDtoHAsync_v2, drv->cuMemcpyDtoDAsync_v2};
}

/* Host-to-host copies need no device, so no driver call: a plain memmove on the calling thread. */
static CUresult copy_sync(const copy_sync_fns *f, void *dst, const void *src, size_t n,
                          enum cudaMemcpyKind kind)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToHost:
        memmove(dst, src, n);
        return CUDA_SUCCESS;
    case cudaMemcpyHostToDevice:
        return f->htod ? f->htod(d, src, n) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDeviceToHost:
        return f->dtoh ? f->dtoh(dst, s, n) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDeviceToDevice:
        return f->dtod ? f->dtod(d, s, n) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDefault:
        return f->any ? f->any(d, s, n) : CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_async(const copy_async_fns *f, void *dst, const void *src, size_t n,
                           enum cudaMemcpyKind kind, CUstream stream)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToHost:
        memmove(dst, src, n);
        return CUDA_SUCCESS;
    case cudaMemcpyHostToDevice:
        return f->htod ? f->htod(d, src, n, stream) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDeviceToHost:
        return f->dtoh ? f->dtoh(dst, s, n, stream) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDeviceToDevice:
        return f->dtod ? f->dtod(d, s, n, stream) : CUDA_ERROR_NOT_SUPPORTED;
    case cudaMemcpyDefault:
        return f->any ? f->any(d, s, n, stream) : CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static bool valid_kind(enum cudaMemcpyKind kind)
{
    return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

static cudaError_t memcpy_sync(bool per_thread, void *dst, const void *src, size_t count,
                               enum cudaMemcpyKind kind)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!valid_kind(kind))
        return rt_error_set(cudaErrorInvalidMemcpyDirection);
    if (count == 0)
        return cudaSuccess;
    copy_sync_fns f = sync_fns(drv, per_thread);
    return rt_error_cu(copy_sync(&f, dst, src, count, kind));
}

static cudaError_t memcpy_async(bool per_thread, void *dst, const void *src, size_t count,
                                enum cudaMemcpyKind kind, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!valid_kind(kind))
        return rt_error_set(cudaErrorInvalidMemcpyDirection);
    if (count == 0)
        return cudaSuccess;
    copy_async_fns f = async_fns(drv, per_thread);
    return rt_error_cu(copy_async(&f, dst, src, count, kind, (CUstream)stream));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return memcpy_sync(false, dst, src, count, kind);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return memcpy_sync(true, dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    return memcpy_async(false, dst, src, count, kind, stream);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream)
{
    return memcpy_async(true, dst, src, count, kind, stream);
}

/* Row by row through the 1-D copies, so the driver sees (and counts) every byte moved. */
static cudaError_t memcpy_2d(bool per_thread, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!valid_kind(kind))
        return rt_error_set(cudaErrorInvalidMemcpyDirection);
    if (width > dpitch || width > spitch)
        return rt_error_set(cudaErrorInvalidPitchValue);
    copy_sync_fns f = sync_fns(drv, per_thread);
    for (size_t row = 0; row < height && width > 0; row++) {
        CUresult res = copy_sync(&f, (char *)dst + row * dpitch, (const char *)src + row * spitch,
                                 width, kind);
        if (res != CUDA_SUCCESS)
            return rt_error_cu(res);
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind)
{
    return memcpy_2d(false, dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return memcpy_2d(true, dst, dpitch, src, spitch, width, height, kind);
}

static cudaError_t memset_sync(bool per_thread, void *devPtr, int value, size_t count)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess || count == 0)
        return err;
    __typeof__(&cuMemsetD8_v2) fn = per_thread ? drv->cuMemsetD8_v2_ptds : drv->cuMemsetD8_v2;
    if (!fn)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(fn((CUdeviceptr)devPtr, (unsigned char)value, count));
}

static cudaError_t memset_async(bool per_thread, void *devPtr, int value, size_t count,
                                cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess || count == 0)
        return err;
    __typeof__(&cuMemsetD8Async) fn = per_thread ? drv->cuMemsetD8Async_ptsz : drv->cuMemsetD8Async;
    if (!fn)
        return rt_error_set(cudaErrorNotSupported);
    return rt_error_cu(fn((CUdeviceptr)devPtr, (unsigned char)value, count, (CUstream)stream));
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return memset_sync(false, devPtr, value, count);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return memset_sync(true, devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(false, devPtr, value, count, stream);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(true, devPtr, value, count, stream);
}

static cudaError_t memcpy_2d_async(bool per_thread, void *dst, size_t dpitch, const void *src,
                                   size_t spitch, size_t width, size_t height,
                                   enum cudaMemcpyKind kind, cudaStream_t stream)
{
    const rt_driver *drv;
    cudaError_t err = rt_enter(&drv);
    if (err != cudaSuccess)
        return err;
    if (!valid_kind(kind))
        return rt_error_set(cudaErrorInvalidMemcpyDirection);
    if (width > dpitch || width > spitch)
        return rt_error_set(cudaErrorInvalidPitchValue);
    copy_async_fns f = async_fns(drv, per_thread);
    for (size_t row = 0; row < height && width > 0; row++) {
        CUresult res = copy_async(&f, (char *)dst + row * dpitch, (const char *)src + row * spitch,
                                  width, kind, (CUstream)stream);
        if (res != CUDA_SUCCESS)
            return rt_error_cu(res);
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream)
{
    return memcpy_2d_async(false, dst, dpitch, src, spitch, width, height, kind, stream);
}

cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t stream)
{
    return memcpy_2d_async(true, dst, dpitch, src, spitch, width, height, kind, stream);
}

/* Row by row through the 1-D sets. */
static cudaError_t memset_2d(bool per_thread, bool async, void *devPtr, size_t pitch, int value,
                             size_t width, size_t height, cudaStream_t stream)
{
    if (width > pitch && height > 1)
        return rt_error_set(cudaErrorInvalidPitchValue);
    for (size_t row = 0; row < height && width > 0; row++) {
        void *p = (char *)devPtr + row * pitch;
        cudaError_t err = async ? memset_async(per_thread, p, value, width, stream)
                                : memset_sync(per_thread, p, value, width);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return memset_2d(false, false, devPtr, pitch, value, width, height, NULL);
}

cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return memset_2d(true, false, devPtr, pitch, value, width, height, NULL);
}

cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream)
{
    return memset_2d(false, true, devPtr, pitch, value, width, height, stream);
}

cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream)
{
    return memset_2d(true, true, devPtr, pitch, value, width, height, stream);
}

/* Every simulated device shares the host's address space: a peer copy is a device copy. */
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    (void)dstDevice, (void)srcDevice;
    return memcpy_sync(false, dst, src, count, cudaMemcpyDeviceToDevice);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                size_t count, cudaStream_t stream)
{
    (void)dstDevice, (void)srcDevice;
    return memcpy_async(false, dst, src, count, cudaMemcpyDeviceToDevice, stream);
}
