/* copy: cuMemcpy* and cuMemset*, executed at once on the calling thread.
 * A device-side range must lie wholly in mapped, accessible memory: anything else is
 * CUDA_ERROR_INVALID_VALUE rather than a fault, as the real driver reports bad copies. */
#include "context.h"
#include "device.h"
#include "export.h"
#include "mapping.h"
#include "stats.h"
#include "stream.h"
#include "vaspace.h"

#include <string.h>
#include <sys/mman.h>

enum side { SIDE_HOST, SIDE_DEVICE };

static bool device_range_ok(uint64_t addr, uint64_t n, int prot)
{
    mapping_lock();
    bool ok = mapping_covers(addr, n, prot);
    mapping_unlock();
    return ok;
}

/* With unified addressing a pointer's own value says where it is. */
static enum side side_of(uint64_t addr)
{
    return vaspace_contains(addr, 1) ? SIDE_DEVICE : SIDE_HOST;
}

static enum stats_copy copy_kind(enum side dst, enum side src)
{
    if (src == SIDE_HOST)
        return dst == SIDE_HOST ? STATS_COPY_H2H : STATS_COPY_H2D;
    return dst == SIDE_HOST ? STATS_COPY_D2H : STATS_COPY_D2D;
}

static CUresult copy(uint64_t dst, enum side dst_side, uint64_t src, enum side src_side, uint64_t n,
                     CUstream stream)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(stream);
    if (rc != CUDA_SUCCESS || n == 0)
        return rc;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    if (dst_side == SIDE_DEVICE && !device_range_ok(dst, n, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    if (src_side == SIDE_DEVICE && !device_range_ok(src, n, PROT_READ))
        return CUDA_ERROR_INVALID_VALUE;
    /* Device-to-device copies move what kernels computed: nothing, without compute. */
    if (dst_side == SIDE_HOST || src_side == SIDE_HOST || device_compute())
        memmove((void *)dst, (const void *)src, n);
    stats_count_copy(copy_kind(dst_side, src_side), n);
    return CUDA_SUCCESS;
}

static CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return copy(dst, side_of(dst), src, side_of(src), n, stream);
}

SIMCU_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_unified(dst, src, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_unified(dst, src, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream)
{
    return copy_unified(dst, src, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                         CUstream hStream)
{
    return copy_unified(dst, src, ByteCount, hStream);
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream stream)
{
    return copy(dst, SIDE_DEVICE, (uint64_t)src, SIDE_HOST, n, stream);
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return copy((uint64_t)dst, SIDE_HOST, src, SIDE_DEVICE, n, stream);
}

static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
{
    return copy(dst, SIDE_DEVICE, src, SIDE_DEVICE, n, stream);
}

SIMCU_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return htod(dstDevice, srcHost, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount)
{
    return htod(dstDevice, srcHost, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return dtoh(dstHost, srcDevice, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return dtoh(dstHost, srcDevice, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount)
{
    return dtod(dstDevice, srcDevice, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount)
{
    return dtod(dstDevice, srcDevice, ByteCount, NULL);
}

SIMCU_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount, CUstream hStream)
{
    return htod(dstDevice, srcHost, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                                size_t ByteCount, CUstream hStream)
{
    return htod(dstDevice, srcHost, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    return dtoh(dstHost, srcDevice, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                                size_t ByteCount, CUstream hStream)
{
    return dtoh(dstHost, srcDevice, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream)
{
    return dtod(dstDevice, srcDevice, ByteCount, hStream);
}

SIMCU_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                                size_t ByteCount, CUstream hStream)
{
    return dtod(dstDevice, srcDevice, ByteCount, hStream);
}

/* One side of a 2D copy: its first byte, pitch and which memory it is in. */
struct plane {
    uint64_t addr;
    uint64_t pitch;
    enum side side;
};

static CUresult plane_of(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                         size_t pitch, struct plane *out)
{
    uint64_t base;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        base = (uint64_t)host;
        out->side = SIDE_HOST;
        break;
    case CU_MEMORYTYPE_DEVICE:
        base = dev;
        out->side = SIDE_DEVICE;
        break;
    case CU_MEMORYTYPE_UNIFIED:
        base = dev;
        out->side = side_of(dev);
        break;
    default:
        return CUDA_ERROR_NOT_SUPPORTED; /* CUDA arrays are not simulated */
    }
    if (!base)
        return CUDA_ERROR_INVALID_VALUE;
    out->addr = base + y * pitch + x;
    out->pitch = pitch;
    return CUDA_SUCCESS;
}

static bool plane_ok(const struct plane *p, size_t width, size_t height, int prot)
{
    if (height > 1 && p->pitch < width)
        return false;
    uint64_t extent = (height - 1) * p->pitch + width;
    return p->side == SIDE_HOST || device_range_ok(p->addr, extent, prot);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream stream)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(stream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->WidthInBytes == 0 || c->Height == 0)
        return CUDA_SUCCESS;
    struct plane src, dst;
    rc = plane_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch,
                  &src);
    if (rc == CUDA_SUCCESS)
        rc = plane_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                      c->dstPitch, &dst);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!plane_ok(&src, c->WidthInBytes, c->Height, PROT_READ) ||
        !plane_ok(&dst, c->WidthInBytes, c->Height, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t row = 0; row < c->Height; row++)
        memmove((void *)(dst.addr + row * dst.pitch), (const void *)(src.addr + row * src.pitch),
                c->WidthInBytes);
    stats_count_copy(copy_kind(dst.side, src.side), (uint64_t)c->WidthInBytes * c->Height);
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL);
}

SIMCU_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL);
}

SIMCU_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL);
}

SIMCU_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL);
}

SIMCU_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy_2d(pCopy, hStream);
}

SIMCU_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy_2d(pCopy, hStream);
}

/* Fills n elements of width bytes (1, 2 or 4) at dst with value. */
static CUresult fill(CUdeviceptr dst, uint32_t value, unsigned width, size_t n, CUstream stream)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(stream);
    if (rc != CUDA_SUCCESS || n == 0)
        return rc;
    if (dst % width || n > UINT64_MAX / width || !device_range_ok(dst, n * width, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    if (!device_compute())
        return CUDA_SUCCESS;
    if (width == 1) {
        memset((void *)dst, (int)value, n);
    } else if (width == 2) {
        uint16_t *p = (uint16_t *)dst;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint16_t)value;
    } else {
        uint32_t *p = (uint32_t *)dst;
        for (size_t i = 0; i < n; i++)
            p[i] = value;
    }
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fill(dstDevice, uc, 1, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fill(dstDevice, uc, 1, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fill(dstDevice, us, 2, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fill(dstDevice, us, 2, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fill(dstDevice, ui, 4, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fill(dstDevice, ui, 4, N, NULL);
}

SIMCU_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream)
{
    return fill(dstDevice, uc, 1, N, hStream);
}

SIMCU_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                           CUstream hStream)
{
    return fill(dstDevice, uc, 1, N, hStream);
}

SIMCU_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                       CUstream hStream)
{
    return fill(dstDevice, us, 2, N, hStream);
}

SIMCU_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                            CUstream hStream)
{
    return fill(dstDevice, us, 2, N, hStream);
}

SIMCU_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream)
{
    return fill(dstDevice, ui, 4, N, hStream);
}

SIMCU_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                            CUstream hStream)
{
    return fill(dstDevice, ui, 4, N, hStream);
}

/* The write is ordered with the stream's work, which has all completed by now. */
static CUresult write_value32(CUstream stream, CUdeviceptr addr, cuuint32_t value)
{
    CUresult rc = ctx_require();
    if (rc == CUDA_SUCCESS)
        rc = stream_check(stream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (addr % 4 || !device_range_ok(addr, 4, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    *(volatile uint32_t *)addr = value;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                              unsigned int flags)
{
    (void)flags;
    return write_value32(stream, addr, value);
}

SIMCU_EXPORT CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                   cuuint32_t value, unsigned int flags)
{
    (void)flags;
    return write_value32(stream, addr, value);
}
