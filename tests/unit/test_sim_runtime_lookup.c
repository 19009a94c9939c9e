/* The hard rule of simcuda's runtime and cuBLAS, checked from outside as memshim will see it:
 * neither links the driver; each dlsym()s only cuGetProcAddress_v2 from libcuda.so.1 and obtains
 * every other driver function through it, with cudaVersion 13000 and the per-thread-stream flag
 * for the _ptsz/_ptds variants. This executable defines dlsym, so (as a preloaded shim would) it
 * sees the libraries' dlsym calls, and hands them a counting cuGetProcAddress_v2. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define MAX_RECORDS 1024

typedef struct lookup {
    char symbol[64];
    int version;
    cuuint64_t flags;
} lookup;

static void *(*real_dlsym)(void *, const char *);
static __typeof__(&cuGetProcAddress_v2) real_lookup;
static char driver_dlsyms[MAX_RECORDS][64];
static int n_driver_dlsyms;
static lookup lookups[MAX_RECORDS];
static int n_lookups;

static CUresult counting_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult *status)
{
    if (n_lookups < MAX_RECORDS) {
        lookup *l = &lookups[n_lookups++];
        snprintf(l->symbol, sizeof l->symbol, "%s", symbol ? symbol : "");
        l->version = version;
        l->flags = flags;
    }
    return real_lookup(symbol, pfn, version, flags, status);
}

void *dlsym(void *handle, const char *symbol)
{
    if (!real_dlsym) {
        *(void **)&real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!real_dlsym)
            *(void **)&real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    }
    void *fn = real_dlsym(handle, symbol);
    if (strncmp(symbol, "cu", 2) != 0 || n_driver_dlsyms >= MAX_RECORDS)
        return fn;
    snprintf(driver_dlsyms[n_driver_dlsyms++], sizeof driver_dlsyms[0], "%s", symbol);
    if (fn && strcmp(symbol, "cuGetProcAddress_v2") == 0) {
        *(void **)&real_lookup = fn;
        return (void *)counting_lookup;
    }
    return fn;
}

static int count_dlsym(const char *symbol)
{
    int n = 0;
    for (int i = 0; i < n_driver_dlsyms; i++)
        n += strcmp(driver_dlsyms[i], symbol) == 0;
    return n;
}

static int count_lookup(const char *symbol, cuuint64_t flags)
{
    int n = 0;
    for (int i = 0; i < n_lookups; i++)
        n += strcmp(lookups[i].symbol, symbol) == 0 && lookups[i].flags == flags;
    return n;
}

Test(sim_lookup, runtime_reaches_the_driver_only_through_cuGetProcAddress)
{
    cr_assert_eq(cudaFree(NULL), cudaSuccess);
    cr_assert_eq(n_driver_dlsyms, 1, "driver symbols dlsym()ed: %d", n_driver_dlsyms);
    cr_assert_str_eq(driver_dlsyms[0], "cuGetProcAddress_v2");
    cr_assert_gt(n_lookups, 50);
    for (int i = 0; i < n_lookups; i++)
        cr_assert_eq(lookups[i].version, 13000, "%s asked with %d", lookups[i].symbol,
                     lookups[i].version);
    cr_assert_eq(count_lookup("cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT), 1);
    cr_assert_eq(count_lookup("cuGetProcAddress", CU_GET_PROC_ADDRESS_DEFAULT), 1);
    cr_assert_eq(count_lookup("cuMemcpyHtoDAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
                 1);
    cr_assert_eq(count_lookup("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), 1);
    cr_assert_eq(count_lookup("cuMemcpy", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), 1);
}

Test(sim_lookup, cublas_loads_its_own_view_of_the_driver)
{
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    int runtime_lookups = n_lookups;
    cr_assert_eq(count_dlsym("cuGetProcAddress_v2"), 1);
    cr_assert_eq(n_driver_dlsyms, 1);
    /* cuBLAS's workspace allocation and its GEMM counter both came through the lookup. */
    cr_assert_eq(count_lookup("cuMemAlloc", CU_GET_PROC_ADDRESS_DEFAULT), 1);
    cr_assert_eq(count_lookup("simcuStatsAdd", CU_GET_PROC_ADDRESS_DEFAULT), 1);
    cr_assert_eq(cudaFree(NULL), cudaSuccess);
    cr_assert_eq(count_dlsym("cuGetProcAddress_v2"), 2, "the runtime looks the driver up itself");
    cr_assert_gt(n_lookups, runtime_lookups);
    cr_assert_eq(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}
