/* spill-prog: workloads for MEMSHIM_POLICY=spill on simcuda, each checking every byte it wrote
 * against a host mirror (spill_check.py runs them under the shim and reads the stats).
 *
 *   spill-prog patterns CEILING SEED OPS  100 buffers totalling 3x CEILING, touched in random
 *                                         order by copies, GEMMs and kernels
 *   spill-prog hostlimit                  allocate until out of memory: a clean error, and
 *                                         everything allocated before still intact
 *   spill-prog threads CEILING            4 threads allocating, writing and checking at once
 *   spill-prog smallbufs CEILING SEED OPS 2000 buffers of 1-64 KiB (all in chunks) totalling
 *                                         3x CEILING, in four categories, touched, freed and
 *                                         reallocated in random order; out-of-memory probes
 *                                         and cuBLAS workspace retags along the way
 *
 * Exit 0 when every check passed, 1 on a mismatch or unexpected error (one line says which). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memshim/memshim.h"
#include "simcuda.h"

#include "e2e_check.h"

#define NBUF  100
#define GEMMN 32
#define MIB   (1024ull * 1024)

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (unsigned char)s;
    }
}

/* Kernel: xor every byte of p[0..n) with key. */
static void xor_kernel(void **params, const simcuda_launch *launch)
{
    (void)launch;
    unsigned char *p = *(unsigned char **)params[0];
    size_t n = *(size_t *)params[1];
    unsigned key = *(unsigned *)params[2];
    for (size_t i = 0; i < n; i++)
        p[i] ^= (unsigned char)key;
}

static void launch_xor(void *p, size_t n, unsigned key)
{
    void *args[] = {&p, &n, &key};
    CK(cudaLaunchKernel((const void *)xor_kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL));
}

static void check(const void *dev, const unsigned char *mirror, size_t n, int which)
{
    unsigned char *h = malloc(n);
    CK(cudaMemcpy(h, dev, n, cudaMemcpyDeviceToHost));
    if (memcmp(h, mirror, n) != 0) {
        size_t i = 0;
        while (h[i] == mirror[i])
            i++;
        fprintf(stderr, "FAIL: buffer %d differs at byte %zu of %zu\n", which, i, n);
        exit(1);
    }
    free(h);
}

/* The random operations both scenarios share, each applied to the device buffers and their host
 * mirrors alike. Check buffer a, then overwrite a random slice of it of at most `cap` bytes. */
static void op_check_rewrite(void **dev, unsigned char **mirror, const size_t *size, int a,
                             size_t cap)
{
    check(dev[a], mirror[a], size[a], a);
    size_t off = (size_t)(rnd() % size[a]), n = size[a] - off;
    n = n > cap ? cap : n;
    fill(mirror[a] + off, n, rnd());
    CK(cudaMemcpy((char *)dev[a] + off, mirror[a] + off, n, cudaMemcpyHostToDevice));
}

/* Copy buffer a into b, as much as both hold. */
static void op_copy(void **dev, unsigned char **mirror, const size_t *size, int a, int b)
{
    if (a == b)
        return;
    size_t n = size[a] < size[b] ? size[a] : size[b];
    CK(cudaMemcpy(dev[b], dev[a], n, cudaMemcpyDeviceToDevice));
    memcpy(mirror[b], mirror[a], n);
}

static int patterns(uint64_t ceiling, uint64_t seed, int ops)
{
    static void *dev[NBUF];
    static unsigned char *mirror[NBUF];
    static size_t size[NBUF];
    rng_state = seed | 1;
    size_t kparams[] = {sizeof(void *), sizeof(size_t), sizeof(unsigned)};
    if (simcudaRegisterKernel(xor_kernel, "xor_kernel", 3, kparams) != 0)
        die("simcudaRegisterKernel", 0);
    /* 90 spillable buffers and 10 small ones; sizes scaled so the total is 3x the ceiling. */
    uint64_t small_total = 0, weights = 0, w[NBUF];
    for (int i = 0; i < NBUF; i++) {
        if (i % 10 == 9) {
            size[i] = 4096 + (size_t)(rnd() % (256 * 1024));
            small_total += size[i];
        } else {
            w[i] = 100 + rnd() % 100;
            weights += w[i];
        }
    }
    uint64_t large_total = 3 * ceiling - small_total;
    for (int i = 0; i < NBUF; i++)
        if (i % 10 != 9)
            size[i] = (size_t)(large_total * w[i] / weights) & ~(size_t)7;
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
        die("cublasCreate", 0);
    for (int i = 0; i < NBUF; i++) {
        CK(cudaMalloc(&dev[i], size[i]));
        mirror[i] = malloc(size[i]);
        fill(mirror[i], size[i], seed * 1000 + (uint64_t)i);
        CK(cudaMemcpy(dev[i], mirror[i], size[i], cudaMemcpyHostToDevice));
    }
    for (int op = 0; op < ops; op++) {
        int a = (int)(rnd() % NBUF), b = (int)(rnd() % NBUF), c = (int)(rnd() % NBUF);
        switch (rnd() % 4) {
        case 0: /* read back and check, then overwrite a slice */
            op_check_rewrite(dev, mirror, size, a, 65536);
            break;
        case 1: /* device to device */
            op_copy(dev, mirror, size, a, b);
            break;
        case 2: /* GEMM on small integers (exact in float): C = A * B */
            if (a != b && b != c && a != c && size[a] >= 4 * GEMMN * GEMMN &&
                size[b] >= 4 * GEMMN * GEMMN && size[c] >= 4 * GEMMN * GEMMN) {
                float A[GEMMN * GEMMN], B[GEMMN * GEMMN], C[GEMMN * GEMMN];
                for (int i = 0; i < GEMMN * GEMMN; i++) {
                    A[i] = (float)(rnd() % 4);
                    B[i] = (float)(rnd() % 4);
                }
                memcpy(mirror[a], A, sizeof A);
                memcpy(mirror[b], B, sizeof B);
                CK(cudaMemcpy(dev[a], A, sizeof A, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(dev[b], B, sizeof B, cudaMemcpyHostToDevice));
                /* Touch other buffers in between, so A and B may be spilled by the GEMM. */
                int d = (int)(rnd() % NBUF);
                check(dev[d], mirror[d], size[d], d);
                for (int col = 0; col < GEMMN; col++)
                    for (int row = 0; row < GEMMN; row++) {
                        float s = 0;
                        for (int k = 0; k < GEMMN; k++)
                            s += A[k * GEMMN + row] * B[col * GEMMN + k];
                        C[col * GEMMN + row] = s;
                    }
                const float one = 1, zero = 0;
                if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMMN, GEMMN, GEMMN, &one, dev[a],
                                GEMMN, dev[b], GEMMN, &zero, dev[c],
                                GEMMN) != CUBLAS_STATUS_SUCCESS)
                    die("cublasSgemm", 0);
                memcpy(mirror[c], C, sizeof C);
            }
            break;
        default: { /* kernel */
            unsigned key = (unsigned)(rnd() & 0xff) | 1;
            launch_xor(dev[a], size[a], key);
            for (size_t i = 0; i < size[a]; i++)
                mirror[a][i] ^= (unsigned char)key;
        } break;
        }
    }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < NBUF; i++)
        check(dev[i], mirror[i], size[i], i);
    for (int i = 0; i < NBUF; i++) {
        CK(cudaFree(dev[i]));
        free(mirror[i]);
    }
    cublasDestroy(blas);
    printf("patterns ok: %d buffers, %d operations\n", NBUF, ops);
    return 0;
}

#define NSMALL    2000
#define SMALL_MIN 1024
#define SMALL_MAX 65536
#define SGEMMN    16 /* 1 KiB of floats: fits the smallest buffer */

/* Buffer i's category: three tagged through the app API, one left to the call-site rules. */
static void *small_alloc(int i, size_t n)
{
    static const char *const cats[] = {"activation", "parameter", "gradient", NULL};
    const char *cat = cats[i % 4];
    void *p = NULL;
    if (cat && MEMSHIM_TAG_PUSH(cat) != 0)
        die("memshim_tag_push", 0);
    CK(cudaMalloc(&p, n));
    if (cat)
        MEMSHIM_TAG_POP();
    return p;
}

/* A request above the ceiling fails cleanly (an OOM record: the trace's view of the budget at
 * that moment, which spill_check.py checks against its own replay) and changes nothing. */
static void oom_probe(uint64_t ceiling)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)(2 * ceiling));
    if (e != cudaErrorMemoryAllocation)
        die("a request above the ceiling did not fail with cudaErrorMemoryAllocation", (long)e);
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (total_b != ceiling || free_b > total_b)
        die("cudaMemGetInfo under the ceiling", (long)(total_b >> 20));
}

static int smallbufs(uint64_t ceiling, uint64_t seed, int ops)
{
    static void *dev[NSMALL];
    static unsigned char *mirror[NSMALL];
    static size_t size[NSMALL];
    static unsigned char wmirror[2][MIB];
    rng_state = seed | 1;
    size_t kparams[] = {sizeof(void *), sizeof(size_t), sizeof(unsigned)};
    if (simcudaRegisterKernel(xor_kernel, "xor_kernel", 3, kparams) != 0)
        die("simcudaRegisterKernel", 0);
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
        die("cublasCreate", 0);
    /* Two 1 MiB buffers (untagged) first: a chunk of their own that nothing touches, so it is
     * the oldest and goes first; later both become cuBLAS workspace (a retag) while it is away,
     * one is freed there and the other read back. */
    void *w[2];
    for (int i = 0; i < 2; i++) {
        CK(cudaMalloc(&w[i], MIB));
        fill(wmirror[i], MIB, seed * 7 + (uint64_t)i);
        CK(cudaMemcpy(w[i], wmirror[i], MIB, cudaMemcpyHostToDevice));
    }
    /* Sizes from 1 to 64 KiB, scaled so that the requests total 3x the ceiling. */
    uint64_t raw_total = 0, total = 0;
    for (int i = 0; i < NSMALL; i++) {
        size[i] = SMALL_MIN + (size_t)(rnd() % (SMALL_MAX - SMALL_MIN + 1));
        raw_total += size[i];
    }
    for (int i = 0; i < NSMALL; i++) {
        uint64_t s = (uint64_t)size[i] * 3 * ceiling / raw_total;
        size[i] = s < SMALL_MIN ? SMALL_MIN : s > SMALL_MAX ? SMALL_MAX : (size_t)s;
        total += size[i];
    }
    for (int i = 0; i < NSMALL; i++) {
        dev[i] = small_alloc(i, size[i]);
        mirror[i] = malloc(SMALL_MAX);
        fill(mirror[i], size[i], seed * 1000 + (uint64_t)i);
        CK(cudaMemcpy(dev[i], mirror[i], size[i], cudaMemcpyHostToDevice));
    }
    int frees = 0;
    for (int op = 0; op < ops; op++) {
        if (op == ops / 3)
            oom_probe(ceiling);
        if (op == 2 * ops / 3) {
            /* Retags while the chunk is away; a free there; a read brings the chunk back. */
            if (cublasSetWorkspace(blas, w[1], MIB) != CUBLAS_STATUS_SUCCESS ||
                cublasSetWorkspace(blas, w[0], MIB) != CUBLAS_STATUS_SUCCESS)
                die("cublasSetWorkspace", 0);
            CK(cudaFree(w[1]));
            check(w[0], wmirror[0], MIB, -1);
            oom_probe(ceiling);
        }
        int a = (int)(rnd() % NSMALL), b = (int)(rnd() % NSMALL), c = (int)(rnd() % NSMALL);
        switch (rnd() % 6) {
        case 0: /* read back and check, then overwrite a slice */
            op_check_rewrite(dev, mirror, size, a, SIZE_MAX);
            break;
        case 1: /* device to device */
            op_copy(dev, mirror, size, a, b);
            break;
        case 2: { /* kernel */
            unsigned key = (unsigned)(rnd() & 0xff) | 1;
            launch_xor(dev[a], size[a], key);
            for (size_t i = 0; i < size[a]; i++)
                mirror[a][i] ^= (unsigned char)key;
        } break;
        case 3: { /* memset a slice */
            size_t off = (size_t)(rnd() % size[a]), n = size[a] - off;
            int v = (int)(rnd() & 0xff);
            CK(cudaMemset((char *)dev[a] + off, v, n));
            memset(mirror[a] + off, v, n);
        } break;
        case 4: /* free (its chunk may be away) and allocate again at another size */
            CK(cudaFree(dev[a]));
            frees++;
            size[a] = SMALL_MIN + (size_t)(rnd() % (SMALL_MAX - SMALL_MIN + 1));
            dev[a] = small_alloc(a, size[a]);
            fill(mirror[a], size[a], rnd());
            CK(cudaMemcpy(dev[a], mirror[a], size[a], cudaMemcpyHostToDevice));
            break;
        default: /* GEMM on small integers (exact in float): C = A * B */
            if (a != b && b != c && a != c) {
                enum { N = SGEMMN };
                float A[N * N], B[N * N], C[N * N];
                for (int i = 0; i < N * N; i++) {
                    A[i] = (float)(rnd() % 4);
                    B[i] = (float)(rnd() % 4);
                }
                memcpy(mirror[a], A, sizeof A);
                memcpy(mirror[b], B, sizeof B);
                CK(cudaMemcpy(dev[a], A, sizeof A, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(dev[b], B, sizeof B, cudaMemcpyHostToDevice));
                for (int col = 0; col < N; col++)
                    for (int row = 0; row < N; row++) {
                        float s = 0;
                        for (int k = 0; k < N; k++)
                            s += A[k * N + row] * B[col * N + k];
                        C[col * N + row] = s;
                    }
                const float one = 1, zero = 0;
                if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, dev[a], N, dev[b], N,
                                &zero, dev[c], N) != CUBLAS_STATUS_SUCCESS)
                    die("cublasSgemm", 0);
                memcpy(mirror[c], C, sizeof C);
            }
            break;
        }
    }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < NSMALL; i++)
        check(dev[i], mirror[i], size[i], i);
    oom_probe(ceiling);
    /* Free in random order: blocks of chunks that are away, and chunks emptied there. */
    for (int i = NSMALL - 1; i > 0; i--) {
        int j = (int)(rnd() % (uint64_t)(i + 1));
        void *t = dev[i];
        dev[i] = dev[j];
        dev[j] = t;
    }
    for (int i = 0; i < NSMALL; i++) {
        CK(cudaFree(dev[i]));
        free(mirror[i]);
    }
    CK(cudaFree(w[0]));
    cublasDestroy(blas);
    printf("smallbufs ok: %d buffers (%llu KiB requested), %d operations, %d frees\n", NSMALL,
           (unsigned long long)(total >> 10), ops, frees);
    return 0;
}

/* Allocate 4 MiB buffers until the shim says out of memory; all earlier ones must be intact. */
static int hostlimit(void)
{
    enum { MAX = 4096 };
    static void *dev[MAX];
    const size_t n = 4 * MIB;
    unsigned char *want = malloc(n), *got = malloc(n);
    int i;
    cudaError_t e = cudaSuccess;
    for (i = 0; i < MAX; i++) {
        e = cudaMalloc(&dev[i], n);
        if (e != cudaSuccess)
            break;
        fill(want, n, (uint64_t)i);
        CK(cudaMemcpy(dev[i], want, n, cudaMemcpyHostToDevice));
    }
    if (e != cudaErrorMemoryAllocation)
        die("expected cudaErrorMemoryAllocation at the host limit", (long)e);
    if (cudaGetLastError() != cudaErrorMemoryAllocation && 0)
        die("sticky error", 0);
    for (int j = 0; j < i; j++) {
        fill(want, n, (uint64_t)j);
        CK(cudaMemcpy(got, dev[j], n, cudaMemcpyDeviceToHost));
        if (memcmp(got, want, n) != 0)
            die("buffer lost after the out-of-memory", j);
    }
    for (int j = 0; j < i; j++)
        CK(cudaFree(dev[j]));
    printf("hostlimit ok: %d buffers before out of memory\n", i);
    free(want);
    free(got);
    return 0;
}

struct worker {
    int id;
    uint64_t bytes;
};

static void *thread_main(void *arg)
{
    struct worker *w = arg;
    enum { N = 12 };
    void *dev[N];
    unsigned char *mirror[N];
    size_t size[N];
    for (int i = 0; i < N; i++) {
        size[i] = (size_t)(w->bytes / N) + (size_t)i * 4096;
        mirror[i] = malloc(size[i]);
        fill(mirror[i], size[i], (uint64_t)(w->id * 100 + i));
        CK(cudaMalloc(&dev[i], size[i]));
        CK(cudaMemcpy(dev[i], mirror[i], size[i], cudaMemcpyHostToDevice));
    }
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < N; i++)
            check(dev[i], mirror[i], size[i], w->id * 100 + i);
    for (int i = 0; i < N; i++) {
        CK(cudaFree(dev[i]));
        free(mirror[i]);
    }
    return NULL;
}

static int threads(uint64_t ceiling)
{
    enum { T = 4 };
    pthread_t th[T];
    struct worker w[T];
    CK(cudaFree(0));
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){i, ceiling}; /* each thread alone: its whole ceiling */
        pthread_create(&th[i], NULL, thread_main, &w[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    printf("threads ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "patterns") == 0)
        return patterns(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), atoi(argv[4]));
    if (argc >= 2 && strcmp(argv[1], "hostlimit") == 0)
        return hostlimit();
    if (argc >= 3 && strcmp(argv[1], "threads") == 0)
        return threads(strtoull(argv[2], NULL, 0));
    if (argc >= 5 && strcmp(argv[1], "smallbufs") == 0)
        return smallbufs(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), atoi(argv[4]));
    fprintf(stderr, "usage: spill-prog patterns CEILING SEED OPS | hostlimit | threads CEILING | "
                    "smallbufs CEILING SEED OPS\n");
    return 2;
}
