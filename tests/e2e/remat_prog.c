/* remat-prog: workloads for MEMSHIM_POLICY=recompute on simcuda (remat_check.py runs them under
 * the shim with a ceiling of 8 granules and reads the trace). Matrices are N x N floats holding
 * small integers, so every product is exact and a wrong operand shows as a wrong value.
 * "Pressure" writes 8 filler buffers in turn: everything else is least recently used and leaves
 * the device (dropped when it has a valid lineage, else spilled).
 *
 *   remat-prog invalidate kernel|copy|memset
 *       C = A*B; pressure (C dropped); A overwritten by a kernel, a copy or a memset (C must be
 *       recomputed from the old A first); pressure again (C's lineage is gone: spilled); C read
 *       back must be the original product.
 *   remat-prog chain      C = A*B, E = C*D; pressure (both dropped); E read: C recomputed inside
 *                         E's recompute; E and C right.
 *   remat-prog exposed    C = A*B; C's address copied to the device in a pointer array;
 *                         pressure: C is spilled, never dropped; C right.
 *   remat-prog exposed_batched  the same, C's address seen only in a batched GEMM's pointer
 *                         array (uploaded with cudaMemcpyDefault, which is not scanned).
 *   remat-prog free       C = A*B; pressure (C dropped); A freed (C recomputed first); C right.
 *   remat-prog handle     C1 dropped, then a new workspace: C1 recomputed first; C2 dropped,
 *                         the same workspace again (nothing), then cublasDestroy: C2
 *                         recomputed first; both right.
 *   remat-prog blind rt|drv|far|far_extra  C = A*B; pressure (C dropped); A incremented by
 *                         a kernel the shim cannot see into: registered without parameter
 *                         information (its layout query fails), launched through cudaLaunchKernel
 *                         (rt) or cuLaunchKernel (drv); or with A's pointer behind 8 KiB of
 *                         parameters, past the words the shim scans, given as a parameter array
 *                         (far) or a packed buffer (far_extra). C must be recomputed from the old
 *                         A before the launch; pressure again; C right. With `none`, a kernel
 *                         without parameters launched without a parameter array instead: it
 *                         leaves C dropped (recomputed only when read).
 *   remat-prog fuzz SEED OPS [BUFS]  random GEMMs, kernels, copies, sets, frees and reads over
 *                         BUFS (24) buffers, every read checked bit for bit (see fuzz()).
 *   remat-prog readonly only|both  C = A*B; sum_kernel reads C through a pointer inside its
 *                         by-value struct parameter 0 (the checker declares it `readonly`) and,
 *                         with `both`, also through its plain pointer parameter 2; pressure;
 *                         the sum and C read back right (C dropped only with `only`).
 *
 * Prints "<scenario> ok" and the addresses of C (and E) for the checker; exit 1 on a mismatch. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

#include "e2e_check.h"

#define N       512 /* 1 MiB per matrix: its own range above MEMSHIM_SPILL_MIN=512k */
#define FILLERS 8

static const size_t bytes = sizeof(float) * N * N;
static cublasHandle_t blas;
static void *filler[FILLERS];

/* Kernel: p[i] += 1 for i < n floats. */
static void inc_kernel(void **params, const simcuda_launch *launch)
{
    (void)launch;
    float *p = *(float **)params[0];
    size_t n = *(size_t *)params[1];
    for (size_t i = 0; i < n; i++)
        p[i] += 1.0f;
}

/* Kernel: out[0] = sum of src.x[0..src.n) + (y ? y[0] : 0). The pointer sits at offset 8 of
 * the struct, so the shim must find it inside the parameter. */
struct sum_src {
    size_t n;
    const float *x;
};

static void sum_kernel(void **params, const simcuda_launch *launch)
{
    (void)launch;
    const struct sum_src *src = params[0];
    float *out = *(float **)params[1];
    const float *y = *(const float **)params[2];
    double sum = 0;
    for (size_t i = 0; i < src->n; i++)
        sum += src->x[i];
    out[0] = (float)sum + (y ? y[0] : 0.0f);
}

/* inc_kernel again, registered without parameter information: the shim cannot learn where
 * its pointers are. */
static void inc_blind_kernel(void **params, const simcuda_launch *launch)
{
    inc_kernel(params, launch);
}

static void nop_kernel(void **params, const simcuda_launch *launch)
{
    (void)params;
    (void)launch;
}

/* inc_kernel with its pointer and count behind a large by-value parameter. */
#define FAR_BYTES 8192
struct far_params {
    char pad[FAR_BYTES];
    float *p;
    size_t n;
};

static void inc_far_kernel(void **params, const simcuda_launch *launch)
{
    inc_kernel(&params[1], launch);
}

static float *matrix(unsigned seed)
{
    float *h = malloc(bytes);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < (size_t)N * N; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        h[i] = (float)(s % 4);
    }
    return h;
}

static void *upload(const float *h)
{
    void *d;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* Column-major C = A * B on the host. */
static float *product(const float *a, const float *b)
{
    float *c = calloc((size_t)N * N, sizeof *c);
    for (int col = 0; col < N; col++)
        for (int k = 0; k < N; k++) {
            float bk = b[col * N + k];
            for (int row = 0; row < N; row++)
                c[col * N + row] += a[k * N + row] * bk;
        }
    return c;
}

static void gemm(const void *a, const void *b, void *c)
{
    const float one = 1, zero = 0;
    if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N) !=
        CUBLAS_STATUS_SUCCESS)
        die("cublasSgemm", 0);
}

static void check(const void *dev, const float *want, const char *what)
{
    float *h = malloc(bytes);
    CK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < (size_t)N * N; i++)
        if (h[i] != want[i]) {
            fprintf(stderr, "FAIL: %s differs at element %zu: %g, expected %g\n", what, i, h[i],
                    want[i]);
            exit(1);
        }
    free(h);
}

static void pressure(void)
{
    for (int i = 0; i < FILLERS; i++)
        CK(cudaMemset(filler[i], i, bytes));
}

static void setup(void)
{
    size_t kparams[] = {sizeof(void *), sizeof(size_t)};
    if (simcudaRegisterKernel(inc_kernel, "inc_kernel", 2, kparams) != 0)
        die("simcudaRegisterKernel", 0);
    size_t sparams[] = {sizeof(struct sum_src), sizeof(void *), sizeof(void *)};
    if (simcudaRegisterKernel(sum_kernel, "sum_kernel", 3, sparams) != 0)
        die("simcudaRegisterKernel", 0);
    if (simcudaRegisterKernel(inc_blind_kernel, "inc_blind_kernel", 2, NULL) != 0)
        die("simcudaRegisterKernel", 0);
    size_t fparams[] = {FAR_BYTES, sizeof(void *), sizeof(size_t)};
    if (simcudaRegisterKernel(inc_far_kernel, "inc_far_kernel", 3, fparams) != 0)
        die("simcudaRegisterKernel", 0);
    if (simcudaRegisterKernel(nop_kernel, "nop_kernel", 0, NULL) != 0)
        die("simcudaRegisterKernel", 0);
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
        die("cublasCreate", 0);
    for (int i = 0; i < FILLERS; i++)
        CK(cudaMalloc(&filler[i], bytes));
}

/* A small read of each, so that C (written before) is the least recently used of the three. */
static void touch(const void *a, const void *b)
{
    float x;
    CK(cudaMemcpy(&x, a, sizeof x, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&x, b, sizeof x, cudaMemcpyDeviceToHost));
}

/* C = A * B computed on the device, A and B used again since, then memory pressure: where the
 * scenarios that overwrite or free an input (or hide a write) start. */
struct dropped {
    float *ha, *want; /* A on the host, and what C must hold */
    void *a, *b, *c;
};

static struct dropped dropped_product(void)
{
    float *hb = matrix(2);
    struct dropped d = {.ha = matrix(1)};
    d.want = product(d.ha, hb);
    d.a = upload(d.ha);
    d.b = upload(hb);
    CK(cudaMalloc(&d.c, bytes));
    gemm(d.a, d.b, d.c);
    touch(d.a, d.b);
    pressure();
    return d;
}

static int invalidate(const char *how)
{
    struct dropped d = dropped_product();
    void *a = d.a, *c = d.c;
    float *want = d.want;
    if (strcmp(how, "kernel") == 0) {
        size_t n = (size_t)N * N;
        void *args[] = {&a, &n};
        CK(cudaLaunchKernel((const void *)inc_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0,
                            NULL));
    } else if (strcmp(how, "copy") == 0) {
        float *hz = matrix(3);
        CK(cudaMemcpy(a, hz, bytes, cudaMemcpyHostToDevice));
        free(hz);
    } else if (strcmp(how, "memset") == 0) {
        CK(cudaMemset(a, 0, bytes));
    } else {
        die("unknown overwrite", 0);
    }
    pressure();
    check(c, want, "C");
    printf("invalidate %s ok C=%#llx\n", how, (unsigned long long)(uintptr_t)c);
    return 0;
}

/* A kernel whose layout the shim cannot learn writes A while C = A*B is dropped. */
static int blind(const char *api)
{
    int drv = strcmp(api, "drv") == 0, far = strcmp(api, "far") == 0,
        far_extra = strcmp(api, "far_extra") == 0, none = strcmp(api, "none") == 0;
    if (!drv && !far && !far_extra && !none && strcmp(api, "rt") != 0)
        die("blind rt|drv|far|far_extra|none", 0);
    struct dropped d = dropped_product();
    void *a = d.a, *c = d.c;
    float *ha = d.ha, *want = d.want;
    size_t n = (size_t)N * N;
    void *args[] = {&a, &n};
    float first;
    static struct far_params fp; /* zero padding: no pointer in it */
    fp.p = a;
    fp.n = n;
    void *far_args[] = {fp.pad, &fp.p, &fp.n};
    if (none) {
        CK(cudaLaunchKernel((const void *)nop_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL, 0,
                            NULL));
    } else if (far) {
        CK(cudaLaunchKernel((const void *)inc_far_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1},
                            far_args, 0, NULL));
    } else if (far_extra) {
        CUfunction f;
        size_t fparams[] = {FAR_BYTES, sizeof(void *), sizeof(size_t)}, size = sizeof fp;
        if (simcuRegisterKernel(inc_far_kernel, "inc_far_kernel", 3, fparams, &f) != CUDA_SUCCESS)
            die("simcuRegisterKernel", 0);
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &fp, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra);
        if (r != CUDA_SUCCESS)
            die("cuLaunchKernel", (long)r);
    } else if (drv) {
        CUfunction f;
        if (simcuRegisterKernel(inc_blind_kernel, "inc_blind_kernel", 2, NULL, &f) != CUDA_SUCCESS)
            die("simcuRegisterKernel", 0);
        CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
        if (r != CUDA_SUCCESS)
            die("cuLaunchKernel", (long)r);
    } else {
        CK(cudaLaunchKernel((const void *)inc_blind_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args,
                            0, NULL));
    }
    /* The kernel did run: A is the old A plus one. */
    CK(cudaMemcpy(&first, a, sizeof first, cudaMemcpyDeviceToHost));
    if (first != ha[0] + (none ? 0.0f : 1.0f))
        die("the kernel's write to A", (long)first);
    pressure();
    check(c, want, "C");
    printf("blind %s ok C=%#llx\n", api, (unsigned long long)(uintptr_t)c);
    return 0;
}

static int chain(void)
{
    float *ha = matrix(1), *hb = matrix(2), *hd = matrix(4);
    float *wc = product(ha, hb);
    float *we = product(wc, hd);
    /* Products of products grow: still exact (below 2^24) at N = 512 with entries below 4. */
    void *a = upload(ha), *b = upload(hb), *d = upload(hd), *c, *e;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&e, bytes));
    gemm(a, b, c);
    gemm(c, d, e);
    touch(a, b);
    touch(d, a);
    pressure();
    check(e, we, "E");
    check(c, wc, "C");
    printf("chain ok C=%#llx E=%#llx\n", (unsigned long long)(uintptr_t)c,
           (unsigned long long)(uintptr_t)e);
    return 0;
}

static int exposed(void)
{
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb);
    void *a = upload(ha), *b = upload(hb), *c, *arr;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&arr, 3 * sizeof(void *)));
    gemm(a, b, c);
    void *ptrs[3] = {a, b, c}; /* as a batched GEMM's pointer array reaches the device */
    CK(cudaMemcpy(arr, ptrs, sizeof ptrs, cudaMemcpyHostToDevice));
    touch(a, b);
    pressure();
    check(c, want, "C");
    printf("exposed ok C=%#llx\n", (unsigned long long)(uintptr_t)c);
    return 0;
}

/* C's address reaches the device without a host-to-device copy the shim scans (kind
 * cudaMemcpyDefault), and a batched GEMM then reads C through that array: the GEMM's operand
 * read exposes C, which is spilled, never dropped, afterwards. */
static int exposed_batched(void)
{
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb), *want_d = product(want, hb);
    void *a = upload(ha), *b = upload(hb), *c, *d, *arr;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&d, bytes));
    CK(cudaMalloc(&arr, 3 * sizeof(void *)));
    gemm(a, b, c);
    void *ptrs[3] = {c, b, d};
    CK(cudaMemcpy(arr, ptrs, sizeof ptrs, cudaMemcpyDefault));
    const float one = 1, zero = 0;
    void **p = arr;
    if (cublasGemmBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one,
                            (const void *const *)&p[0], CUDA_R_32F, N, (const void *const *)&p[1],
                            CUDA_R_32F, N, &zero, &p[2], CUDA_R_32F, N, 1, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        die("cublasGemmBatchedEx", 0);
    touch(b, d);
    pressure();
    check(c, want, "C");
    check(d, want_d, "D");
    printf("exposed_batched ok C=%#llx\n", (unsigned long long)(uintptr_t)c);
    return 0;
}

static int free_input(void)
{
    struct dropped d = dropped_product();
    void *a = d.a, *c = d.c;
    float *want = d.want;
    CK(cudaFree(a));
    pressure();
    check(c, want, "C");
    printf("free ok C=%#llx\n", (unsigned long long)(uintptr_t)c);
    return 0;
}

/* The handle's state changes under dropped outputs: a new workspace recomputes C1 (the same
 * workspace set again does not), cublasDestroy recomputes C2. */
static int handle_change(void)
{
    float *ha = matrix(1), *hb = matrix(2), *hd = matrix(4);
    float *w1 = product(ha, hb), *w2 = product(hb, hd);
    void *a = upload(ha), *b = upload(hb), *d = upload(hd), *c1, *c2, *ws;
    CK(cudaMalloc(&c1, bytes));
    CK(cudaMalloc(&c2, bytes));
    CK(cudaMalloc(&ws, 4096));
    gemm(a, b, c1);
    touch(a, b);
    pressure();
    if (cublasSetWorkspace(blas, ws, 4096) != CUBLAS_STATUS_SUCCESS)
        die("cublasSetWorkspace", 0);
    printf("workspace set\n");
    fflush(stdout);
    gemm(b, d, c2);
    touch(b, d);
    pressure();
    if (cublasSetWorkspace(blas, ws, 4096) != CUBLAS_STATUS_SUCCESS)
        die("cublasSetWorkspace", 0);
    pressure(); /* C2, had it come back at the repeated workspace, would be spilled here */
    if (cublasDestroy(blas) != CUBLAS_STATUS_SUCCESS)
        die("cublasDestroy", 0);
    check(c2, w2, "C2");
    check(c1, w1, "C1");
    printf("handle ok C1=%#llx C2=%#llx\n", (unsigned long long)(uintptr_t)c1,
           (unsigned long long)(uintptr_t)c2);
    return 0;
}

/* ---- fuzz: random GEMMs, kernels, copies, sets, frees and reads over 24 buffers (48 MiB of
 * ranges under a 20 MiB ceiling). A GEMM's result is read back at once: that is the truth
 * every later read (after drops, recomputes and spills) must match bit for bit. ---- */

#define FZ_N   256 /* 256 KiB per buffer: its own 2 MiB range above MEMSHIM_SPILL_MIN=128k, */
#define FZ_BUF 24  /* or 8 to a chunk below the default 2 MiB */
#define FZ_MAX 96

static uint64_t fz_state;
static uint64_t fz_rnd(void)
{
    fz_state ^= fz_state << 13;
    fz_state ^= fz_state >> 7;
    fz_state ^= fz_state << 17;
    return fz_state;
}

static void fz_check(const void *dev, const float *mirror, size_t n, int which, int op)
{
    float *h = malloc(n);
    CK(cudaMemcpy(h, dev, n, cudaMemcpyDeviceToHost));
    if (memcmp(h, mirror, n) != 0) {
        size_t i = 0;
        while (memcmp(&h[i], &mirror[i], sizeof *h) == 0)
            i++;
        fprintf(stderr, "FAIL: buffer %d differs at element %zu after op %d: %g, expected %g\n",
                which, i, op, h[i], mirror[i]);
        exit(1);
    }
    free(h);
}

static void fz_upload(void *dev, float *mirror, size_t n)
{
    for (size_t i = 0; i < n / sizeof(float); i++)
        mirror[i] = (float)(fz_rnd() % 4);
    CK(cudaMemcpy(dev, mirror, n, cudaMemcpyHostToDevice));
}

static int fuzz(uint64_t seed, int ops, int nbuf)
{
    const size_t n = sizeof(float) * FZ_N * FZ_N, count = (size_t)FZ_N * FZ_N;
    void *dev[FZ_MAX];
    float *mirror[FZ_MAX];
    fz_state = seed | 1;
    if (nbuf < 1 || nbuf > FZ_MAX) {
        fprintf(stderr, "fuzz: 1 to %d buffers\n", FZ_MAX);
        return 2;
    }
    for (int i = 0; i < nbuf; i++) {
        mirror[i] = malloc(n);
        CK(cudaMalloc(&dev[i], n));
        fz_upload(dev[i], mirror[i], n);
    }
    int gemms = 0;
    for (int op = 0; op < ops; op++) {
        int a = (int)(fz_rnd() % (uint64_t)nbuf), b = (int)(fz_rnd() % (uint64_t)nbuf),
            c = (int)(fz_rnd() % (uint64_t)nbuf);
        switch (fz_rnd() % 10) {
        case 0:
        case 1:
        case 2:
        case 3: /* C = A * B, read back once as the truth */
            if (a != c && b != c) {
                const float one = 1, zero = 0;
                if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, FZ_N, FZ_N, FZ_N, &one, dev[a],
                                FZ_N, dev[b], FZ_N, &zero, dev[c], FZ_N) != CUBLAS_STATUS_SUCCESS)
                    die("cublasSgemm", op);
                CK(cudaMemcpy(mirror[c], dev[c], n, cudaMemcpyDeviceToHost));
                gemms++;
            }
            break;
        case 4: { /* kernel */
            void *p = dev[a];
            size_t cnt = count;
            void *args[] = {&p, &cnt};
            CK(cudaLaunchKernel((const void *)inc_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0,
                                NULL));
            for (size_t i = 0; i < count; i++)
                mirror[a][i] += 1.0f;
        } break;
        case 5: { /* part of it from the host */
            size_t off = (size_t)(fz_rnd() % count), len = (size_t)(fz_rnd() % 4096) + 1;
            len = off + len > count ? count - off : len;
            for (size_t i = 0; i < len; i++)
                mirror[a][off + i] = (float)(fz_rnd() % 4);
            CK(cudaMemcpy((float *)dev[a] + off, mirror[a] + off, len * sizeof(float),
                          cudaMemcpyHostToDevice));
        } break;
        case 6: /* device to device */
            if (a != b) {
                CK(cudaMemcpy(dev[b], dev[a], n, cudaMemcpyDeviceToDevice));
                memcpy(mirror[b], mirror[a], n);
            }
            break;
        case 7: { /* part of it set to zero */
            size_t off = (size_t)(fz_rnd() % count), len = (size_t)(fz_rnd() % 8192) + 1;
            len = off + len > count ? count - off : len;
            CK(cudaMemset((float *)dev[a] + off, 0, len * sizeof(float)));
            memset(mirror[a] + off, 0, len * sizeof(float));
        } break;
        case 8: /* freed and allocated again */
            CK(cudaFree(dev[a]));
            CK(cudaMalloc(&dev[a], n));
            fz_upload(dev[a], mirror[a], n);
            break;
        default:
            fz_check(dev[a], mirror[a], n, a, op);
            break;
        }
    }
    for (int i = 0; i < nbuf; i++)
        fz_check(dev[i], mirror[i], n, i, ops);
    for (int i = 0; i < nbuf; i++) {
        CK(cudaFree(dev[i]));
        free(mirror[i]);
    }
    printf("fuzz ok: %d operations, %d GEMMs\n", ops, gemms);
    return 0;
}

static int readonly_param(const char *how)
{
    int both = strcmp(how, "both") == 0;
    if (!both && strcmp(how, "only") != 0)
        die("readonly only|both", 0);
    float *ha = matrix(1), *hb = matrix(2);
    float *want = product(ha, hb);
    void *a = upload(ha), *b = upload(hb), *c, *out;
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&out, sizeof(float)));
    gemm(a, b, c);
    struct sum_src src = {(size_t)N * N, c};
    const void *y = both ? c : NULL;
    void *args[] = {&src, &out, &y};
    CK(cudaLaunchKernel((const void *)sum_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
    float got;
    CK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    double sum = 0;
    for (size_t i = 0; i < (size_t)N * N; i++)
        sum += want[i];
    if (got != (float)sum + (both ? want[0] : 0.0f))
        die("sum_kernel's result", (long)got);
    touch(a, b);
    pressure();
    check(c, want, "C");
    printf("readonly %s ok C=%#llx\n", how, (unsigned long long)(uintptr_t)c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: remat-prog invalidate kernel|copy|memset | chain | exposed | exposed_batched | "
            "free | handle | readonly only|both | blind rt|drv|far|far_extra|none | fuzz",
            0);
    setup();
    if (argc >= 3 && strcmp(argv[1], "invalidate") == 0)
        return invalidate(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "blind") == 0)
        return blind(argv[2]);
    if (strcmp(argv[1], "chain") == 0)
        return chain();
    if (strcmp(argv[1], "exposed") == 0)
        return exposed();
    if (strcmp(argv[1], "exposed_batched") == 0)
        return exposed_batched();
    if (strcmp(argv[1], "free") == 0)
        return free_input();
    if (strcmp(argv[1], "handle") == 0)
        return handle_change();
    if (argc >= 3 && strcmp(argv[1], "readonly") == 0)
        return readonly_param(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "fuzz") == 0)
        return fuzz(strtoull(argv[2], NULL, 0), atoi(argv[3]), argc >= 5 ? atoi(argv[4]) : FZ_BUF);
    die("unknown scenario", 0);
}
