/* intercept_lookup: cuGetProcAddress(_v2) and dlsym hand out our wrappers.
 *
 * Which wrapper: the one whose real function the lookup returned (identity, exact whenever the
 * driver hands out the functions it exports); failing that, the ABI the request selects by
 * the API's own rule — the newest variant of that name whose _vNNNN is <= the requested
 * version, in the stream flavour the flags ask for. Never simply the newest (HAMi-core #57). */
#include "intercept_lookup.h"

#include <dlfcn.h>
#include <string.h>

#include "intercept_cublas.h"
#include "intercept_cublaslt.h"
#include "intercept_driver.h"
#include "intercept_runtime.h"
#include "log.h"
#include "real.h"
#include "real_blas.h"
#include "torch_alloc.h"

static const struct lookup_entry {
    const char *sym;  /* the driver's symbol */
    const char *base; /* the name cuGetProcAddress is asked for */
    int minver;
    int ptds;
    void *wrapper;
    size_t slot; /* offset of the real function in the real table */
} entries[] = {
#define DRV_HOOK(cname, sym, base, minver, ptds, exported, ret, params)                            \
    {sym, base, minver, ptds, (void *)cname, offsetof(struct real_table, cname)},
#include "hooks.def"
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

static void *slot_of(const struct lookup_entry *e)
{
    return __atomic_load_n((void **)((char *)&real + e->slot), __ATOMIC_ACQUIRE);
}

int intercept_lookup_is_wrapper(const void *fn)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (entries[i].wrapper == fn)
            return 1;
    return 0;
}

static const struct lookup_entry *by_identity(const char *base, const void *fn)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (strcmp(entries[i].base, base) == 0 && slot_of(&entries[i]) == fn)
            return &entries[i];
    return NULL;
}

static const struct lookup_entry *by_rule(const char *base, int version, uint64_t flags)
{
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct lookup_entry *best = NULL;
    int flavours = 0; /* whether this name has a per-thread flavour at all */
    for (size_t i = 0; i < NENTRIES; i++)
        if (strcmp(entries[i].base, base) == 0 && entries[i].ptds)
            flavours = 1;
    for (size_t i = 0; i < NENTRIES; i++) {
        const struct lookup_entry *e = &entries[i];
        if (strcmp(e->base, base) != 0 || e->minver > version || (flavours && e->ptds != ptds))
            continue;
        if (!best || e->minver > best->minver)
            best = e;
    }
    return best;
}

void *intercept_lookup_wrap(const char *base, int cuda_version, uint64_t flags, void *fn)
{
    torch_alloc_install();
    if (!fn || !base || base[0] != 'c' || base[1] != 'u' || intercept_lookup_is_wrapper(fn))
        return fn;
    const struct lookup_entry *e = by_identity(base, fn);
    if (!e)
        e = by_rule(base, cuda_version, flags);
    if (!e)
        return fn;
    real_learn(e->sym, fn);
    return slot_of(e) ? e->wrapper : fn;
}

/* --- cuGetProcAddress --------------------------------------------------------------------------
 */

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult (*fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        real_driver_ready() ? REAL(cuGetProcAddress_v2) : NULL;
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = intercept_lookup_wrap(symbol, cudaVersion, flags, *pfn);
    return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    CUresult (*fn)(const char *, void **, int, cuuint64_t) =
        real_driver_ready() ? REAL(cuGetProcAddress) : NULL;
    if (!fn)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = intercept_lookup_wrap(symbol, cudaVersion, flags, *pfn);
    return r;
}

/* --- dlsym -------------------------------------------------------------------------------------
 */

/* What dlsym does with one request: return `result`, or, when `forward` is set, continue into
 * the C library's dlsym as if called directly by the program. */
struct dlsym_pick {
    void *result;
    void *forward;
};

/* No strcmp: while a sanitizer runtime initialises, its strcmp interceptor is not ready. */
REAL_UNSANITIZED static int same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* cuBLAS and cuBLASLt names go to real_blas (programs such as TensorFlow dlopen cuBLAS and
 * look its functions up); checked without a call, like same_name. */
/* The cuBLAS/cuBLASLt functions we wrap, by name: what a program's dlsym of one gets. */
static const struct blas_entry {
    const char *sym;
    void *wrapper;
} blas_entries[] = {
#define BLAS_HOOK(lib, name, ret, params) {#name, (void *)name},
#include "hooks.def"
};

static void *blas_wrapper(const char *name)
{
    for (size_t i = 0; i < MS_ARRAY_LEN(blas_entries); i++)
        if (strcmp(blas_entries[i].sym, name) == 0)
            return blas_entries[i].wrapper;
    return NULL;
}

REAL_UNSANITIZED static int is_blas_name(const char *name)
{
    static const char prefix[] = "cublas";
    if (!name)
        return 0;
    for (size_t i = 0; i + 1 < sizeof prefix; i++)
        if (name[i] != prefix[i])
            return 0;
    return 1;
}

REAL_UNSANITIZED static const struct lookup_entry *by_symbol(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (size_t i = 0; i < NENTRIES; i++)
        if (same_name(entries[i].sym, name))
            return &entries[i];
    return NULL;
}

static struct dlsym_pick wrap_symbol(const struct lookup_entry *e, void *handle, const char *name)
{
    struct dlsym_pick pick = {NULL, NULL};
    void *fn = real_dlsym(handle, name);
    if (!fn)
        return pick;
    real_learn(e->sym, fn);
    pick.result = slot_of(e) ? e->wrapper : fn;
    log_debug("dlsym %s: %s", name, pick.result == e->wrapper ? "memshim wrapper" : "real");
    return pick;
}

/* Called by the dlsym entry below with the program's arguments. A driver symbol we wrap is
 * looked up for real first (so a handle without it still gets NULL and a dlerror), its real
 * function noted, and our wrapper returned. Everything else — and RTLD_NEXT, whose meaning
 * depends on the caller — goes on to the C library's dlsym with the caller's own return
 * address (HAMi-core #279, #315), so the shim is not in the caller's place. */
__attribute__((used)) REAL_UNSANITIZED struct dlsym_pick
intercept_lookup_dlsym_pick(void *handle, const char *name)
{
    struct dlsym_pick pick = {NULL, NULL};
    const struct lookup_entry *e = handle == RTLD_NEXT ? NULL : by_symbol(name);
    if (e)
        return wrap_symbol(e, handle, name);
    if (handle != RTLD_NEXT && is_blas_name(name)) {
        void *wrapper = blas_wrapper(name);
        if (wrapper) {
            pick.result = real_blas_dlsym(handle, name, wrapper);
            return pick;
        }
    }
    if (name && name[0] == 'c' && name[1] == 'u')
        log_debug("dlsym %s: passed through", name); /* never while a sanitizer starts */
    pick.forward = real_libc_dlsym();
    return pick;
}

/* dlsym itself: a frame-less entry that asks intercept_lookup_dlsym_pick, then either returns
 * its result or jumps into the C library's dlsym with the program's arguments and return
 * address intact. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    endbr64\n"
        "    push %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    call intercept_lookup_dlsym_pick\n"
        "    add $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    test %rdx, %rdx\n"
        "    jz 1f\n"
        "    jmp *%rdx\n"
        "1:  ret\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    hint 34\n" /* bti c */
        "    stp x29, x30, [sp, #-32]!\n"
        ".cfi_def_cfa_offset 32\n"
        ".cfi_offset 29, -32\n"
        ".cfi_offset 30, -24\n"
        "    mov x29, sp\n"
        "    stp x0, x1, [sp, #16]\n"
        "    bl intercept_lookup_dlsym_pick\n"
        "    mov x16, x1\n"
        "    cbz x16, 1f\n"
        "    ldp x0, x1, [sp, #16]\n"
        "1:  ldp x29, x30, [sp], #32\n"
        ".cfi_def_cfa_offset 0\n"
        "    cbz x16, 2f\n"
        "    br x16\n"
        "2:  ret\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#else
#error "intercept_lookup: dlsym entry written for x86-64 and aarch64 only"
#endif

/* --- the runtime's driver entry points -------------------------------------------------------- */

#define RT_FN(name) (real_runtime_ready() ? REAL(name) : NULL)

/* The runtime asks the driver with its own version; the _ptsz entry's default is per-thread. */
static void *rt_wrap(const char *symbol, unsigned int version, unsigned long long flags, int ptsz,
                     void *fn)
{
    if (ptsz && flags == cudaEnableDefault)
        flags = cudaEnablePerThreadDefaultStream;
    return intercept_lookup_wrap(symbol, (int)version, flags, fn);
}

static cudaError_t entry_point(int ptsz, const char *symbol, void **funcPtr,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaError_t (*fn)(const char *, void **, unsigned long long,
                      enum cudaDriverEntryPointQueryResult *) =
        ptsz ? RT_FN(cudaGetDriverEntryPoint_ptsz) : RT_FN(cudaGetDriverEntryPoint);
    if (!fn)
        return cudaErrorInitializationError;
    cudaError_t r = fn(symbol, funcPtr, flags, driverStatus);
    if (r == cudaSuccess && funcPtr)
        *funcPtr = rt_wrap(symbol, CUDART_VERSION, flags, ptsz, *funcPtr);
    return r;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(0, symbol, funcPtr, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(1, symbol, funcPtr, flags, driverStatus);
}

static cudaError_t entry_point_by_version(int ptsz, const char *symbol, void **funcPtr,
                                          unsigned int cudaVersion, unsigned long long flags,
                                          enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaError_t (*fn)(const char *, void **, unsigned int, unsigned long long,
                      enum cudaDriverEntryPointQueryResult *) =
        ptsz ? RT_FN(cudaGetDriverEntryPointByVersion_ptsz)
             : RT_FN(cudaGetDriverEntryPointByVersion);
    if (!fn)
        return cudaErrorInitializationError;
    cudaError_t r = fn(symbol, funcPtr, cudaVersion, flags, driverStatus);
    if (r == cudaSuccess && funcPtr)
        *funcPtr = rt_wrap(symbol, cudaVersion, flags, ptsz, *funcPtr);
    return r;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point_by_version(0, symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t
cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                      unsigned long long flags,
                                      enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point_by_version(1, symbol, funcPtr, cudaVersion, flags, driverStatus);
}
