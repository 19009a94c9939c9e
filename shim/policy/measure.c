/* measure: see measure.h. Everything here is cold except the queries' fast path, which reads
 * the published rates with atomic loads. The measurement itself runs under a per-device mutex
 * (a second thread must wait for the rates, not use zeros) and under the recursion guard, so
 * that what the real cuBLAS does inside our GEMM (its own allocations, launches) passes
 * through the hooks unrecorded. */
#include "measure.h"

#include "arena.h"
#include "budget.h"
#include "clock.h"
#include "compat.h"
#include "costs_parse.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "real.h"
#include "real_blas.h"
#include "trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* How many times a measurement may fail (with cuBLAS loaded, for the GEMM) before the rate
 * stays unknown. */
#define MEASURE_ATTEMPTS       3
#define MEASURE_GEMM_FIRST_N   64
#define MEASURE_LINK_MIN_BYTES (1ull << 20)

enum { LINK_PENDING, LINK_DONE };
enum { GEMM_PENDING, GEMM_DONE, GEMM_GAVE_UP };

struct measure_dev {
    pthread_mutex_t lock; /* held while measuring */
    _Atomic int link_state, gemm_state;
    _Atomic uint64_t h2d, d2h, gemm;  /* published rates; 0 unknown */
    int gemm_failures, link_failures; /* under lock */
    struct measure_costs info;        /* under lock: durations, n, forced */
};

/* Zero-initialised: a zeroed pthread_mutex_t is PTHREAD_MUTEX_INITIALIZER (glibc, musl). */
static struct measure_dev measure_devs[MS_MAX_DEVICES];

void measure_atfork_child(void)
{
    for (int d = 0; d < MS_MAX_DEVICES; d++) {
        struct measure_dev *m = &measure_devs[d];
        pthread_mutex_init(&m->lock, NULL);
        /* A rate is published only when its measurement is done: a pending one restarts. */
        m->gemm_failures = m->link_failures = 0;
    }
}

uint64_t measure_rate(uint64_t amount, uint64_t ns)
{
    if (ns == 0)
        return 0;
    unsigned __int128 r = (unsigned __int128)amount * 1000000000u / ns;
    return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

/* MEMSHIM_COSTS, read when a measurement starts (cold), so that it holds whether or not
 * measure_init ran. options.c already rejected a malformed value, with its message. */
static struct costs_rates measure_forced_load(void)
{
    struct costs_rates r = {0, 0, 0};
    if (costs_parse(options_str(OPT_COSTS), &r) != 0)
        memset(&r, 0, sizeof r);
    return r;
}

void measure_init(void)
{
    for (int d = 0; d < MS_MAX_DEVICES; d++) {
        struct measure_dev *m = &measure_devs[d];
        atomic_store(&m->link_state, LINK_PENDING);
        atomic_store(&m->gemm_state, GEMM_PENDING);
        atomic_store(&m->h2d, 0);
        atomic_store(&m->d2h, 0);
        atomic_store(&m->gemm, 0);
        m->gemm_failures = m->link_failures = 0;
        memset(&m->info, 0, sizeof m->info);
    }
}

/* ---- context: measure on `device` whatever the thread had current, then put it back ---- */

struct measure_ctx {
    CUcontext saved;
    int switched;
};

static int measure_ctx_enter(int device, struct measure_ctx *c)
{
    CUresult (*get)(CUcontext *) = REAL(cuCtxGetCurrent);
    CUresult (*set)(CUcontext) = REAL(cuCtxSetCurrent);
    CUresult (*getdev)(CUdevice *) = REAL(cuCtxGetDevice);
    CUresult (*retain)(CUcontext *, CUdevice) = REAL(cuDevicePrimaryCtxRetain);
    CUresult (*dget)(CUdevice *, int) = REAL(cuDeviceGet);
    CUresult (*init)(unsigned int) = REAL(cuInit);
    c->saved = NULL;
    c->switched = 0;
    if (!get || !set || !getdev || !retain || !dget)
        return -1;
    if (get(&c->saved) == CUDA_ERROR_NOT_INITIALIZED && init) {
        init(0);
        c->saved = NULL;
        if (get(&c->saved) != CUDA_SUCCESS)
            return -1;
    }
    CUdevice cur, want;
    if (dget(&want, device) != CUDA_SUCCESS)
        return -1;
    if (c->saved && getdev(&cur) == CUDA_SUCCESS && cur == want)
        return 0;
    /* No context, or another device's: the device's primary context, as the runtime uses. */
    CUcontext ctx = NULL;
    if (retain(&ctx, want) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS)
        return -1;
    c->switched = 1;
    return 0;
}

static void measure_ctx_leave(const struct measure_ctx *c)
{
    CUresult (*set)(CUcontext) = REAL(cuCtxSetCurrent);
    if (c->switched && c->saved && set)
        set(c->saved);
}

static int measure_sync(void)
{
    CUresult (*sync)(void) = REAL(cuCtxSynchronize);
    return sync && sync() == CUDA_SUCCESS ? 0 : -1;
}

/* Device memory for a probe, reserved under the ceiling first: on the smaller GPU the job
 * pretends to run on, the probe would take room too. */
static CUresult measure_dalloc(int device, CUdeviceptr *p, size_t bytes)
{
    CUresult (*dalloc)(CUdeviceptr *, size_t) = REAL(cuMemAlloc_v2);
    if (!dalloc)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (budget_reserve(device, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = dalloc(p, bytes);
    if (rc != CUDA_SUCCESS)
        budget_release(device, bytes);
    return rc;
}

static void measure_dfree(int device, CUdeviceptr p, size_t bytes)
{
    CUresult (*dfree)(CUdeviceptr) = REAL(cuMemFree_v2);
    if (dfree && dfree(p) == CUDA_SUCCESS)
        budget_release(device, bytes);
}

/* ---- host link ---- */

static void measure_link(struct measure_dev *m, int device)
{
    CUresult (*halloc)(void **, size_t, unsigned int) = REAL(cuMemHostAlloc);
    CUresult (*hfree)(void *) = REAL(cuMemFreeHost);
    CUresult (*htod)(CUdeviceptr, const void *, size_t) = REAL(cuMemcpyHtoD_v2);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t) = REAL(cuMemcpyDtoH_v2);
    size_t bytes = MEASURE_LINK_BYTES;
    uint64_t t0 = clock_now_ns();
    if (!htod || !dtoh)
        return;
    CUdeviceptr dev = 0;
    /* The device may be nearly full by now (we measure at the first need): smaller copies
     * measure less exactly, and are still a rate. */
    while (measure_dalloc(device, &dev, bytes) != CUDA_SUCCESS) {
        dev = 0;
        if (bytes <= MEASURE_LINK_MIN_BYTES)
            return;
        bytes /= 2;
    }
    void *host = NULL;
    int pinned = halloc && hfree && halloc(&host, bytes, 0) == CUDA_SUCCESS && host;
    if (!pinned) {
        /* Pageable memory: slower than what a spill to pinned memory would see, but a rate. */
        host = arena_map(bytes);
        if (!host) {
            measure_dfree(device, dev, bytes);
            return;
        }
    }
    uint64_t best_h2d = UINT64_MAX, best_d2h = UINT64_MAX;
    {
        /* No separate warm-up: the first try's page faults and set-up only make it slower,
         * and the best of the tries is kept. */
        int ok = 1;
        for (int i = 0; ok && i < MEASURE_LINK_TRIES; i++) {
            uint64_t a = clock_now_ns();
            ok = htod(dev, host, bytes) == CUDA_SUCCESS && measure_sync() == 0;
            uint64_t b = clock_now_ns();
            ok = ok && dtoh(host, dev, bytes) == CUDA_SUCCESS && measure_sync() == 0;
            uint64_t c = clock_now_ns();
            if (ok) {
                best_h2d = b - a < best_h2d ? b - a : best_h2d;
                best_d2h = c - b < best_d2h ? c - b : best_d2h;
            }
        }
        measure_dfree(device, dev, bytes);
        if (ok) {
            /* A copy faster than the clock's resolution counts as 1 ns. */
            atomic_store(&m->h2d, measure_rate(bytes, best_h2d ? best_h2d : 1));
            atomic_store(&m->d2h, measure_rate(bytes, best_d2h ? best_d2h : 1));
        }
    }
    if (pinned)
        hfree(host);
    else
        arena_unmap(host, bytes);
    m->info.link_ns = clock_now_ns() - t0;
    if (!pinned)
        log_debug("device %d: no page-locked memory for the link measurement; pageable used",
                  device);
}

/* ---- GEMM ---- */

struct measure_gemm_bufs {
    CUdeviceptr a, b, c;
    size_t bytes; /* of each */
    int device;
};

static void measure_gemm_free(struct measure_gemm_bufs *g)
{
    if (g->a)
        measure_dfree(g->device, g->a, g->bytes);
    if (g->b)
        measure_dfree(g->device, g->b, g->bytes);
    if (g->c)
        measure_dfree(g->device, g->c, g->bytes);
    g->a = g->b = g->c = 0;
}

/* Three n x n float matrices, A and B of ones (no denormals or NaNs to slow a CPU GEMM). */
static int measure_gemm_alloc(struct measure_gemm_bufs *g, int device, int n)
{
    CUresult (*set)(CUdeviceptr, unsigned int, size_t) = REAL(cuMemsetD32_v2);
    size_t elems = (size_t)n * (size_t)n;
    memset(g, 0, sizeof *g);
    g->device = device;
    g->bytes = elems * 4;
    if (!set || measure_dalloc(device, &g->a, g->bytes) != CUDA_SUCCESS ||
        measure_dalloc(device, &g->b, g->bytes) != CUDA_SUCCESS ||
        measure_dalloc(device, &g->c, g->bytes) != CUDA_SUCCESS ||
        set(g->a, 0x3f800000u, elems) != CUDA_SUCCESS ||
        set(g->b, 0x3f800000u, elems) != CUDA_SUCCESS || measure_sync() != 0) {
        measure_gemm_free(g);
        return -1;
    }
    return 0;
}

typedef __typeof__(real_blas.cublasSgemm_v2) measure_sgemm_fn;

/* ns of one SGEMM of size n, the better of `tries` after a warm-up call of the same size (a
 * new shape may load a kernel); 0 on failure. */
static uint64_t measure_gemm_once(cublasHandle_t h, measure_sgemm_fn sgemm,
                                  const struct measure_gemm_bufs *g, int n, int tries)
{
    const float one = 1.0f, zero = 0.0f;
    const float *a = (const float *)(uintptr_t)g->a, *b = (const float *)(uintptr_t)g->b;
    float *c = (float *)(uintptr_t)g->c;
    uint64_t best = UINT64_MAX;
    for (int i = -1; i < tries; i++) {
        uint64_t t0 = clock_now_ns();
        if (sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n) !=
                CUBLAS_STATUS_SUCCESS ||
            measure_sync() != 0)
            return 0;
        uint64_t ns = clock_now_ns() - t0;
        if (i >= 0 && ns < best)
            best = ns;
    }
    return best ? best : 1;
}

/* Real free device memory; 0 when unknown. */
static uint64_t measure_real_free(void)
{
    CUresult (*info)(size_t *, size_t *) = REAL(cuMemGetInfo_v2);
    size_t free_b = 0, total = 0;
    return info && info(&free_b, &total) == CUDA_SUCCESS ? free_b : 0;
}

/* The handle's own device memory (its workspace), under the ceiling: MEASURE_GEMM_WORKSPACE
 * reserved before it is created, and whatever more the device lost meanwhile reserved after.
 * Returns the bytes reserved, 0 when there is no room (nothing created then). */
static uint64_t measure_handle_create(int device, cublasHandle_t *h)
{
    cublasStatus_t (*create)(cublasHandle_t *) = REAL_BLAS(BLAS_LIB_CUBLAS, cublasCreate_v2);
    cublasStatus_t (*destroy)(cublasHandle_t) = REAL_BLAS(BLAS_LIB_CUBLAS, cublasDestroy_v2);
    uint64_t held = MEASURE_GEMM_WORKSPACE;
    if (budget_reserve(device, held) != 0)
        return 0;
    uint64_t before = measure_real_free();
    *h = NULL;
    if (create(h) != CUBLAS_STATUS_SUCCESS || !*h) {
        budget_release(device, held);
        return 0;
    }
    uint64_t after = measure_real_free();
    uint64_t used = before && after && before > after ? before - after : 0;
    if (used > held) {
        if (budget_reserve(device, used - held) != 0) {
            destroy(*h);
            budget_release(device, held);
            return 0;
        }
        held = used;
    }
    return held;
}

/* 1 measured, 0 cuBLAS not in the process or no room under the ceiling yet, -1 failed. */
static int measure_gemm(struct measure_dev *m, int device)
{
    cublasStatus_t (*create)(cublasHandle_t *) = REAL_BLAS(BLAS_LIB_CUBLAS, cublasCreate_v2);
    cublasStatus_t (*destroy)(cublasHandle_t) = REAL_BLAS(BLAS_LIB_CUBLAS, cublasDestroy_v2);
    measure_sgemm_fn sgemm = REAL_BLAS(BLAS_LIB_CUBLAS, cublasSgemm_v2);
    if (!create || !destroy || !sgemm)
        return 0;
    uint64_t t0 = clock_now_ns();
    cublasHandle_t h = NULL;
    uint64_t held = measure_handle_create(device, &h);
    if (!held)
        return 0;
    uint64_t best_ns = 0;
    int best_n = 0;
    for (int n = MEASURE_GEMM_FIRST_N; n <= MEASURE_GEMM_MAX_N; n *= 2) {
        struct measure_gemm_bufs g;
        if (measure_gemm_alloc(&g, device, n) != 0)
            break; /* no room for a larger one: keep the last size */
        uint64_t ns = measure_gemm_once(h, sgemm, &g, n, 1);
        /* The size to keep: one more try there, so that a descheduled call (a busy host)
         * neither stops the growth early nor sets the rate. */
        if (ns >= MEASURE_GEMM_MIN_NS || n == MEASURE_GEMM_MAX_N) {
            uint64_t again = ns ? measure_gemm_once(h, sgemm, &g, n, 2) : 0;
            ns = again && again < ns ? again : ns;
        }
        measure_gemm_free(&g);
        if (ns == 0)
            break;
        best_ns = ns;
        best_n = n;
        if (ns >= MEASURE_GEMM_MIN_NS)
            break;
    }
    destroy(h);
    measure_sync();
    budget_release(device, held);
    if (best_n == 0)
        return -1;
    uint64_t flops = 2ull * (uint64_t)best_n * (uint64_t)best_n * (uint64_t)best_n;
    atomic_store(&m->gemm, measure_rate(flops, best_ns));
    m->info.gemm_ns = clock_now_ns() - t0;
    m->info.gemm_n = (uint32_t)best_n;
    return 1;
}

/* ---- the measurement, once ---- */

static void measure_record(struct measure_dev *m, int device)
{
    struct mst_rec_measure r;
    memset(&r, 0, sizeof r);
    r.time_ns = clock_now_ns();
    r.h2d_bytes_per_s = atomic_load(&m->h2d);
    r.d2h_bytes_per_s = atomic_load(&m->d2h);
    r.gemm_flops_per_s = atomic_load(&m->gemm);
    r.device = (uint8_t)device;
    trace_record(MST_REC_MEASURE, &r, sizeof r, NULL, 0);
    log_info("device %d costs: host link %.2f GB/s to the device, %.2f GB/s back%s; SGEMM "
             "%.3f TFLOP/s%s; measured in %.2f ms",
             device, (double)r.h2d_bytes_per_s / 1e9, (double)r.d2h_bytes_per_s / 1e9,
             (m->info.forced & (MEASURE_F_H2D | MEASURE_F_D2H)) ? " (MEMSHIM_COSTS)" : "",
             (double)r.gemm_flops_per_s / 1e12,
             (m->info.forced & MEASURE_F_GEMM) ? " (MEMSHIM_COSTS)"
             : r.gemm_flops_per_s == 0         ? " (unknown: no cuBLAS yet)"
                                               : "",
             (double)(m->info.link_ns + m->info.gemm_ns) / 1e6);
}

/* Under m->lock. What is still to measure, measured; a record when anything changed. */
static void measure_locked(struct measure_dev *m, int device)
{
    int link = atomic_load(&m->link_state) == LINK_PENDING;
    int gemm = atomic_load(&m->gemm_state) == GEMM_PENDING;
    if (!link && !gemm)
        return;
    int changed = 0;
    const struct costs_rates forced = measure_forced_load();
    int guard = guard_enter();
    struct measure_ctx ctx;
    int have_ctx = (link && (!forced.h2d_bytes_per_s || !forced.d2h_bytes_per_s)) ||
                   (gemm && !forced.gemm_flops_per_s);
    if (have_ctx && measure_ctx_enter(device, &ctx) != 0) {
        /* No driver yet: nothing measured; the next query tries again. */
        if (guard)
            guard_leave();
        return;
    }
    if (link) {
        if (!forced.h2d_bytes_per_s || !forced.d2h_bytes_per_s) {
            measure_link(m, device);
            /* No room for even the smallest copy (the device full at the first need) or a
             * failed copy: try again at a later need, a few times. */
            if (!atomic_load(&m->h2d) && ++m->link_failures < MEASURE_ATTEMPTS)
                link = 0;
        }
    }
    if (link) {
        if (forced.h2d_bytes_per_s) {
            atomic_store(&m->h2d, forced.h2d_bytes_per_s);
            m->info.forced |= MEASURE_F_H2D;
        }
        if (forced.d2h_bytes_per_s) {
            atomic_store(&m->d2h, forced.d2h_bytes_per_s);
            m->info.forced |= MEASURE_F_D2H;
        }
        atomic_store(&m->link_state, LINK_DONE);
        changed = 1;
    }
    if (gemm) {
        if (forced.gemm_flops_per_s) {
            atomic_store(&m->gemm, forced.gemm_flops_per_s);
            m->info.forced |= MEASURE_F_GEMM;
            atomic_store(&m->gemm_state, GEMM_DONE);
            changed = 1;
        } else {
            int r = measure_gemm(m, device);
            if (r > 0) {
                atomic_store(&m->gemm_state, GEMM_DONE);
                changed = 1;
            } else if (r < 0 && ++m->gemm_failures >= MEASURE_ATTEMPTS) {
                atomic_store(&m->gemm_state, GEMM_GAVE_UP);
                log_info("device %d: the GEMM rate could not be measured; recompute is never "
                         "chosen by cost",
                         device);
            }
        }
    }
    if (have_ctx)
        measure_ctx_leave(&ctx);
    if (guard)
        guard_leave();
    if (changed)
        measure_record(m, device);
}

static struct measure_dev *measure_dev_of(int device)
{
    return device >= 0 && device < MS_MAX_DEVICES ? &measure_devs[device] : NULL;
}

/* The hot path's test: nothing left to try. A pending GEMM rate is worth a try only once
 * cuBLAS is known to be loaded (its slot filled by a hook), which costs one atomic load. */
static int measure_settled(struct measure_dev *m)
{
    if (atomic_load(&m->link_state) == LINK_PENDING)
        return 0;
    return atomic_load(&m->gemm_state) != GEMM_PENDING ||
           !__atomic_load_n(&real_blas.cublasSgemm_v2, __ATOMIC_ACQUIRE);
}

static struct measure_dev *measure_ensure(int device)
{
    struct measure_dev *m = measure_dev_of(device);
    if (m && !measure_settled(m)) {
        pthread_mutex_lock(&m->lock);
        measure_locked(m, device);
        pthread_mutex_unlock(&m->lock);
    }
    return m;
}

int measure_device(int device, struct measure_costs *out)
{
    struct measure_dev *m = measure_dev_of(device);
    if (!m)
        return -1;
    /* The explicit query also tries cuBLAS by name (the hot-path ones only by slot). */
    pthread_mutex_lock(&m->lock);
    measure_locked(m, device);
    struct measure_costs c = m->info;
    pthread_mutex_unlock(&m->lock);
    c.h2d_bytes_per_s = atomic_load(&m->h2d);
    c.d2h_bytes_per_s = atomic_load(&m->d2h);
    c.gemm_flops_per_s = atomic_load(&m->gemm);
    if (out)
        *out = c;
    return c.h2d_bytes_per_s && c.d2h_bytes_per_s && c.gemm_flops_per_s ? 0 : 1;
}

uint64_t measure_room_needed(int device)
{
    struct measure_dev *m = measure_dev_of(device);
    if (!m || measure_settled(m))
        return 0;
    const struct costs_rates forced = measure_forced_load();
    uint64_t link = 0, gemm = 0;
    if (atomic_load(&m->link_state) == LINK_PENDING &&
        (!forced.h2d_bytes_per_s || !forced.d2h_bytes_per_s))
        link = MEASURE_LINK_BYTES;
    if (atomic_load(&m->gemm_state) == GEMM_PENDING && !forced.gemm_flops_per_s &&
        __atomic_load_n(&real_blas.cublasSgemm_v2, __ATOMIC_ACQUIRE))
        gemm = MEASURE_GEMM_WORKSPACE + 3ull * MEASURE_GEMM_FIRST_N * MEASURE_GEMM_FIRST_N * 4;
    /* One after the other, each freed before the next. */
    return link > gemm ? link : gemm;
}

uint64_t measure_spill_ns(int device, uint64_t bytes)
{
    struct measure_dev *m = measure_ensure(device);
    if (!m)
        return MEASURE_UNKNOWN_NS;
    return costs_spill_ns(bytes, atomic_load(&m->d2h), atomic_load(&m->h2d));
}

uint64_t measure_recompute_ns(int device, uint64_t flops)
{
    struct measure_dev *m = measure_ensure(device);
    return m ? costs_ns_at(flops, atomic_load(&m->gemm)) : MEASURE_UNKNOWN_NS;
}
