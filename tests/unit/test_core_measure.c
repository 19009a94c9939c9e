/* measure on simcuda: the link and GEMM rates come out positive and are recorded once per
 * device in the trace; MEMSHIM_COSTS forces any of them without measuring; a device out of
 * range is refused; concurrent first queries measure once. The rates themselves are printed
 * (never asserted: no timed assertions). */
#include <criterion/criterion.h>

#include "costs_parse.h"
#include "measure.h"
#include "options.h"
#include "real.h"
#include "trace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void setup(void)
{
    options_reset();
    cr_assert(real_driver_load(), "simcuda's libcuda.so.1 is on the library path");
    /* A program with cuBLAS in the process, as a PyTorch one has (found by name, like a
     * library a Python extension opened). */
    cr_assert(dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL), "%s", dlerror());
    measure_init();
}

TestSuite(measure, .init = setup);

Test(measure, measures_link_and_gemm_on_simcuda)
{
    struct measure_costs c;
    int r = measure_device(0, &c);
    fprintf(stderr,
            "measure: h2d %.2f GB/s, d2h %.2f GB/s (link %.2f ms); SGEMM %.2f GFLOP/s at n=%u "
            "(%.2f ms)\n",
            (double)c.h2d_bytes_per_s / 1e9, (double)c.d2h_bytes_per_s / 1e9,
            (double)c.link_ns / 1e6, (double)c.gemm_flops_per_s / 1e9, c.gemm_n,
            (double)c.gemm_ns / 1e6);
    cr_assert_eq(r, 0, "all three known: cuBLAS (simcuda) is linked in");
    cr_assert_gt(c.h2d_bytes_per_s, 0);
    cr_assert_gt(c.d2h_bytes_per_s, 0);
    cr_assert_gt(c.gemm_flops_per_s, 0);
    cr_assert_gt(c.gemm_n, 0);
    cr_assert_eq(c.forced, 0);
    /* measured once: a second call returns the same numbers */
    struct measure_costs d;
    cr_assert_eq(measure_device(0, &d), 0);
    cr_assert_eq(d.h2d_bytes_per_s, c.h2d_bytes_per_s);
    cr_assert_eq(d.gemm_flops_per_s, c.gemm_flops_per_s);
    cr_assert_eq(d.link_ns, c.link_ns);
    /* the queries use the same rates */
    cr_assert_eq(measure_spill_ns(0, 1000000000ull),
                 costs_ns_at(1000000000ull, c.d2h_bytes_per_s) +
                     costs_ns_at(1000000000ull, c.h2d_bytes_per_s));
    cr_assert_eq(measure_recompute_ns(0, 2000000000ull),
                 costs_ns_at(2000000000ull, c.gemm_flops_per_s));
}

Test(measure, forced_rates_are_not_measured)
{
    cr_assert_eq(options_set(OPT_COSTS, 0, "h2d=12g,d2h=6g,gemm=50t"), 0);
    struct measure_costs c;
    cr_assert_eq(measure_device(1, &c), 0);
    cr_assert_eq(c.h2d_bytes_per_s, 12000000000ull);
    cr_assert_eq(c.d2h_bytes_per_s, 6000000000ull);
    cr_assert_eq(c.gemm_flops_per_s, 50000000000000ull);
    cr_assert_eq(c.forced, MEASURE_F_H2D | MEASURE_F_D2H | MEASURE_F_GEMM);
    cr_assert_eq(c.link_ns, 0, "nothing timed");
    cr_assert_eq(c.gemm_n, 0);
    /* 12 GB: 2 s out at 6 GB/s, 1 s back at 12 GB/s; 50 TFLOP in 1 s */
    cr_assert_eq(measure_spill_ns(1, 12000000000ull), 3000000000ull);
    cr_assert_eq(measure_recompute_ns(1, 50000000000000ull), 1000000000ull);
}

Test(measure, missing_keys_are_measured)
{
    cr_assert_eq(options_set(OPT_COSTS, 0, "gemm=2t"), 0);
    struct measure_costs c;
    cr_assert_eq(measure_device(0, &c), 0);
    cr_assert_eq(c.gemm_flops_per_s, 2000000000000ull);
    cr_assert_eq(c.forced, MEASURE_F_GEMM);
    cr_assert_gt(c.h2d_bytes_per_s, 0);
    cr_assert_gt(c.link_ns, 0, "the link was timed");
}

Test(measure, bad_device)
{
    struct measure_costs c;
    cr_assert_eq(measure_device(-1, &c), -1);
    cr_assert_eq(measure_device(4096, &c), -1);
    cr_assert_eq(measure_spill_ns(-1, 10), MEASURE_UNKNOWN_NS);
    cr_assert_eq(measure_recompute_ns(4096, 10), MEASURE_UNKNOWN_NS);
}

/* The device full at the first need: nothing can be timed, the rates stay unknown and are
 * measured at a later need, once there is room. */
Test(measure, full_device_is_measured_again_later)
{
    CUresult (*alloc)(CUdeviceptr *, size_t) = REAL(cuMemAlloc_v2);
    CUresult (*release)(CUdeviceptr) = REAL(cuMemFree_v2);
    CUresult (*init)(unsigned int) = REAL(cuInit);
    CUresult (*dget)(CUdevice *, int) = REAL(cuDeviceGet);
    CUresult (*retain)(CUcontext *, CUdevice) = REAL(cuDevicePrimaryCtxRetain);
    CUresult (*set)(CUcontext) = REAL(cuCtxSetCurrent);
    cr_assert(alloc && release && init && dget && retain && set);
    CUdevice dev;
    CUcontext ctx;
    cr_assert_eq(init(0), CUDA_SUCCESS);
    cr_assert_eq(dget(&dev, 0), CUDA_SUCCESS);
    cr_assert_eq(retain(&ctx, dev), CUDA_SUCCESS);
    cr_assert_eq(set(ctx), CUDA_SUCCESS);
    static CUdeviceptr held[4096];
    size_t n = 0;
    for (size_t size = 1ull << 32; size >= 64 << 10; size /= 2)
        while (n < 4096 && alloc(&held[n], size) == CUDA_SUCCESS)
            n++;
    cr_assert_lt(n, 4096);
    struct measure_costs c;
    cr_assert_eq(measure_device(0, &c), 1, "nothing could be measured");
    cr_assert_eq(c.h2d_bytes_per_s, 0);
    cr_assert_eq(c.gemm_flops_per_s, 0);
    cr_assert_eq(measure_spill_ns(0, 1), MEASURE_UNKNOWN_NS);
    while (n > 0)
        release(held[--n]);
    cr_assert_eq(measure_device(0, &c), 0, "measured at the next need");
    cr_assert_gt(c.h2d_bytes_per_s, 0);
    cr_assert_gt(c.gemm_flops_per_s, 0);
}

static void *query(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)measure_spill_ns(0, 1 << 20);
}

Test(measure, concurrent_first_queries_agree)
{
    enum { T = 8 };
    pthread_t th[T];
    for (int i = 0; i < T; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, query, NULL), 0);
    uintptr_t first = 0;
    for (int i = 0; i < T; i++) {
        void *r;
        pthread_join(th[i], &r);
        cr_assert_neq((uintptr_t)r, (uintptr_t)MEASURE_UNKNOWN_NS, "waited for the rates");
        if (i == 0)
            first = (uintptr_t)r;
        cr_assert_eq((uintptr_t)r, first, "measured once");
    }
}

/* One MEASURE record for the device, with the rates measure_device reports. */
Test(measure, records_one_measure_per_device)
{
    char dir[] = "/tmp/memshim-measure-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/t.mst", dir);
    struct trace_config cfg = {.path_template = path, .rank = MST_NO_RANK, .flush_ms = 50};
    trace_init(&cfg);
    trace_touch();
    cr_assert_eq(options_set(OPT_COSTS, 0, "h2d=3g"), 0);
    struct measure_costs c;
    cr_assert_eq(measure_device(0, &c), 0);
    cr_assert_eq(measure_device(0, &c), 0);
    measure_spill_ns(0, 1);
    trace_flush();
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    struct mst_file_header h;
    cr_assert_geq(n, sizeof h);
    memcpy(&h, buf, sizeof h);
    size_t off = h.header_size, found = 0;
    while (off + sizeof(struct mst_record_header) <= n) {
        struct mst_record_header rh;
        memcpy(&rh, buf + off, sizeof rh);
        off += sizeof rh;
        if (rh.kind == MST_REC_MEASURE) {
            struct mst_rec_measure m;
            cr_assert_eq(rh.length, sizeof m);
            memcpy(&m, buf + off, sizeof m);
            cr_assert_eq(m.device, 0);
            cr_assert_eq(m.h2d_bytes_per_s, 3000000000ull);
            cr_assert_eq(m.d2h_bytes_per_s, c.d2h_bytes_per_s);
            cr_assert_eq(m.gemm_flops_per_s, c.gemm_flops_per_s);
            found++;
        }
        off += rh.length;
    }
    cr_assert_eq(found, 1, "one record per device");
    unlink(path);
    rmdir(dir);
}
