/* procaddr: cuGetProcAddress over the single entry-point table in entry_points.def. */
#include "device.h"
#include "export.h"

#include <simcuda.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define PER_THREAD_FIRST_VERSION 7000

/* The private tables behind the real driver's API are what a library with its own static CUDA
 * runtime needs (cuDNN, NCCL, cuFFT, cuSOLVER, Triton's launcher): none exists here. Saying so
 * once on stderr names the missing piece, where the library's own error would not. */
SIMCU_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    static atomic_bool said;
    (void)pExportTableId;
    if (ppExportTable)
        *ppExportTable = NULL;
    if (!atomic_exchange(&said, true))
        fprintf(stderr, "simcuda: cuGetExportTable is not simulated: libraries with their own "
                        "static CUDA runtime (cuDNN, NCCL, cuFFT, cuSOLVER, Triton) cannot run "
                        "on simcuda\n");
    return CUDA_ERROR_NOT_SUPPORTED;
}

struct entry {
    const char *name;
    int version;      /* first CUDA version whose ABI this pointer has */
    void *fn;         /* legacy default stream */
    void *per_thread; /* per-thread default stream variant, or NULL */
};

static const struct entry entries[] = {
#define SIMCU_ENTRY(base, version, fn)            {#base, version, (void *)fn, NULL},
#define SIMCU_ENTRY_PT(base, version, fn, per_th) {#base, version, (void *)fn, (void *)per_th},
#include "entry_points.def"
#undef SIMCU_ENTRY
#undef SIMCU_ENTRY_PT
};

/* The newest entry named symbol whose version is <= cudaVersion; *known says whether any
 * entry has that name at all. */
static const struct entry *find_entry(const char *symbol, int cudaVersion, bool *known)
{
    const struct entry *best = NULL;
    *known = false;
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        if (strcmp(entries[i].name, symbol) != 0)
            continue;
        *known = true;
        if (entries[i].version <= cudaVersion && (!best || entries[i].version > best->version))
            best = &entries[i];
    }
    return best;
}

SIMCU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{
    const cuuint64_t known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (pfn)
        *pfn = NULL;
    if (!symbol || !pfn || (flags & ~known_flags) || cudaVersion > DEVICE_DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;
    bool known;
    const struct entry *e = find_entry(symbol, cudaVersion, &known);
    if (!e) {
        if (symbolStatus)
            *symbolStatus = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    /* DEFAULT means legacy here: the driver itself is not built for per-thread streams.
     * Per-thread variants exist from CUDA 7.0 on (the _v7000_ptsz/_ptds typedefs). */
    bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
                      cudaVersion >= PER_THREAD_FIRST_VERSION;
    *pfn = per_thread && e->per_thread ? e->per_thread : e->fn;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
