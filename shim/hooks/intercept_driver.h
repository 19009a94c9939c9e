/* intercept_driver: the driver allocation entry points (cuMemAlloc_v2 and friends, the
 * virtual-memory calls, cuMemGetInfo_v2, the legacy v1 ABIs a lookup may ask for), each
 * translated into calls of track.h. Also the driver queries the runtime hooks share: which
 * device is current and what it is. */
#ifndef MEMSHIM_INTERCEPT_DRIVER_H
#define MEMSHIM_INTERCEPT_DRIVER_H

#include <stdint.h>

#include "real.h"
#include "track.h"

#define INTERCEPT_DECL_1(name, ret, params) MS_EXPORT ret name params;
#define INTERCEPT_DECL_0(name, ret, params) ret name params;
#define DRV_HOOK(cname, sym, base, minver, ptds, exported, ret, params)                            \
    INTERCEPT_DECL_##exported(cname, ret, params)
#include "hooks.def"

/* Describe device `ordinal` to track the first time it is used (name, memory, compute
 * capability from the real driver); loads libcuda.so.1 when the runtime has not yet. */
void intercept_driver_describe(int ordinal);

/* Ordinal of the current context's device, or 0 when there is none. */
int intercept_driver_current_device(void);
/* Whether the process sees exactly one device (known once the driver answers): its current
 * device is then 0, without asking. */
int intercept_single_device(void);

/* A pitched allocation is reserved at an upper bound before the call (the pitch is the
 * driver's choice); once the pitch is known, charge `actual` instead. Returns 0, or -1 when
 * the corrected charge crosses the ceiling (the reservation is then gone). */
int intercept_recharge(struct track_ticket *t, int device, enum mst_alloc_kind kind,
                       uint64_t actual);

/* Upper bound of a pitched row: every GPU aligns pitches to at most this many bytes. */
#define INTERCEPT_PITCH_ALIGN 512u

/* Bytes charged for a plain allocation: the request rounded up as the allocator does. */
static inline uint64_t intercept_plain_bytes(uint64_t size)
{
    return size > UINT64_MAX - 255 ? UINT64_MAX : (size + 255) & ~(uint64_t)255;
}

/* a * b, saturating instead of wrapping (the real call then fails on its own). */
static inline uint64_t intercept_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Bytes of a pitched allocation before its pitch is known. */
static inline uint64_t intercept_pitch_bound(uint64_t width, uint64_t rows)
{
    uint64_t row =
        width > UINT64_MAX - (INTERCEPT_PITCH_ALIGN - 1)
            ? UINT64_MAX
            : (width + INTERCEPT_PITCH_ALIGN - 1) & ~(uint64_t)(INTERCEPT_PITCH_ALIGN - 1);
    return intercept_mul(row, rows);
}

/* cudaMemGetInfo / cuMemGetInfo_v2 after a successful real call: report the ceiling through
 * whichever of the two out-arguments the caller passed. */
void intercept_mem_info(int device, size_t *free_bytes, size_t *total_bytes);

#endif /* MEMSHIM_INTERCEPT_DRIVER_H */
