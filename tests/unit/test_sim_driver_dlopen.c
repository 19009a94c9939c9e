/* The driver reached the way libcudart reaches it: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2, and every other function through that. Not linked to libcuda. */
#include <criterion/criterion.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static void *lib;
static PFN_cuGetProcAddress_v12000 get_proc;

static void *proc(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CU_OK(get_proc(name, &fn, version, flags, &st));
    cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS, "%s", name);
    cr_assert_not_null(fn, "%s", name);
    return fn;
}

static void open_driver(void)
{
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    get_proc = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    cr_assert_not_null(get_proc);
}

TestSuite(dlopen, .init = open_driver);

Test(dlopen, allocate_copy_and_free_through_entry_points)
{
    PFN_cuInit_v2000 init = proc("cuInit", 2000, 0);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = proc("cuDevicePrimaryCtxRetain", 7000, 0);
    PFN_cuCtxSetCurrent_v4000 set_current = proc("cuCtxSetCurrent", 4000, 0);
    PFN_cuMemAlloc_v3020 alloc = proc("cuMemAlloc", 12000, 0);
    PFN_cuMemFree_v3020 free_ = proc("cuMemFree", 12000, 0);
    PFN_cuMemcpyHtoD_v7000_ptds htod =
        proc("cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    PFN_cuMemcpyDtoHAsync_v3020 dtoh = proc("cuMemcpyDtoHAsync", 13000, 0);
    CUcontext ctx;
    CU_OK(init(0));
    CU_OK(retain(&ctx, 0));
    CU_OK(set_current(ctx));
    CUdeviceptr p;
    CU_OK(alloc(&p, 64));
    char in[64] = "through cuGetProcAddress", out[64] = {0};
    CU_OK(htod(p, in, sizeof(in)));
    CU_OK(dtoh(out, p, sizeof(out), NULL));
    cr_assert_str_eq(out, in);
    CU_OK(free_(p));
}

Test(dlopen, entry_points_are_the_exported_variants)
{
    const struct {
        const char *name;
        int version;
        cuuint64_t flags;
        const char *symbol;
    } cases[] = {
        {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
        {"cuMemcpyHtoDAsync", 13000, 0, "cuMemcpyHtoDAsync_v2"},
        {"cuMemcpyHtoDAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuMemcpyHtoDAsync_v2_ptsz"},
        {"cuMemcpy", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpy_ptds"},
        {"cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuMemAllocAsync_ptsz"},
        {"cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemFreeAsync"},
        {"cuMemsetD8Async", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuMemsetD8Async_ptsz"},
        {"cuEventElapsedTime", 12000, 0, "cuEventElapsedTime"},
        {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
        {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
        {"cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"},
        {"cuStreamGetCtx", 12040, 0, "cuStreamGetCtx"},
        {"cuStreamGetCtx", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuStreamGetCtx_v2_ptsz"},
        {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        void *fn = proc(cases[i].name, cases[i].version, cases[i].flags);
        cr_assert_eq(fn, dlsym(lib, cases[i].symbol), "%s@%d", cases[i].name, cases[i].version);
    }
}

Test(dlopen, private_entry_points_reachable)
{
    cr_assert_eq(proc("simcuRegisterKernel", 13000, 0), dlsym(lib, "simcuRegisterKernel"));
    cr_assert_eq(proc("simcuStatsAdd", 13000, 0), dlsym(lib, "simcuStatsAdd"));
}

/* The table's function names, one per line of entry_points.def (both variants). */
static char table_names[512][128];
static int table_count;

static void read_table(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/simcuda/driver/entry_points.def",
             getenv("MEMSHIM_SOURCE_DIR"));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[512];
    while (fgets(line, sizeof(line), f) && table_count < 510) {
        char base[128];
        int version;
        char *fn = table_names[table_count], *pt = table_names[table_count + 1];
        *pt = 0;
        if (sscanf(line, "SIMCU_ENTRY(%127[^,], %d, %127[^)])", base, &version, fn) != 3 &&
            sscanf(line, "SIMCU_ENTRY_PT(%127[^,], %d, %127[^,], %127[^)])", base, &version, fn,
                   pt) != 4)
            continue;
        /* the lookup gives exactly the exported function the line names */
        void *want = dlsym(lib, fn);
        cr_assert_not_null(want, "%s is not exported", fn);
        cr_assert_eq(proc(base, version, 0), want, "%s@%d", base, version);
        if (*pt) {
            cr_assert_not_null(dlsym(lib, pt), "%s is not exported", pt);
            int from = version > 7000 ? version : 7000; /* per-thread streams: CUDA 7.0 */
            cr_assert_eq(proc(base, from, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
                         dlsym(lib, pt), "%s@%d per thread", base, from);
        }
        table_count += *pt ? 2 : 1;
    }
    fclose(f);
}

static bool in_table(const char *name)
{
    for (int i = 0; i < table_count; i++)
        if (strcmp(table_names[i], name) == 0)
            return true;
    return false;
}

Test(dlopen, every_table_entry_is_exported_and_found)
{
    read_table();
    cr_assert_gt(table_count, 100);
}

/* The other direction: nothing is exported that cuGetProcAddress cannot hand out. */
Test(dlopen, every_export_is_in_the_table)
{
    read_table();
    Dl_info info;
    cr_assert(dladdr(dlsym(lib, "cuInit"), &info));
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", info.dli_fname);
    FILE *nm = popen(cmd, "r");
    cr_assert_not_null(nm);
    char line[512], sym[256], type;
    int exports = 0;
    while (fgets(line, sizeof(line), nm)) {
        if (sscanf(line, "%*s %c %255s", &type, sym) != 2 || type != 'T')
            continue;
        cr_assert(in_table(sym), "%s is exported but not in entry_points.def", sym);
        exports++;
    }
    cr_assert_eq(pclose(nm), 0);
    cr_assert_eq(exports, table_count);
}
