/* spill-prog: workloads for MEMSHIM_POLICY=spill on simcuda, each checking every byte it wrote
 * against a host mirror (spill_check.py runs them under the shim and reads the stats).
 *
 *   spill-prog patterns CEILING SEED OPS  100 buffers totalling 3x CEILING, touched in random
 *                                         order by copies, GEMMs and kernels
 *   spill-prog hostlimit                  allocate until out of memory: a clean error, and
 *                                         everything allocated before still intact
 *   spill-prog threads CEILING            4 threads allocating, writing and checking at once
 *
 * Exit 0 when every check passed, 1 on a mismatch or unexpected error (one line says which). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

#define NBUF  100
#define GEMMN 32
#define MIB   (1024ull * 1024)

static void die(const char *what, long code)
{
    fprintf(stderr, "FAIL: %s (%ld)\n", what, code);
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            die(#call, (long)e_);                                                                  \
    } while (0)

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
            check(dev[a], mirror[a], size[a], a);
            {
                size_t off = (size_t)(rnd() % size[a]), n = size[a] - off;
                n = n > 65536 ? 65536 : n;
                fill(mirror[a] + off, n, rnd());
                CK(cudaMemcpy((char *)dev[a] + off, mirror[a] + off, n, cudaMemcpyHostToDevice));
            }
            break;
        case 1: /* device to device */
            if (a != b) {
                size_t n = size[a] < size[b] ? size[a] : size[b];
                CK(cudaMemcpy(dev[b], dev[a], n, cudaMemcpyDeviceToDevice));
                memcpy(mirror[b], mirror[a], n);
            }
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
    fprintf(stderr, "usage: spill-prog patterns CEILING SEED OPS | hostlimit | threads CEILING\n");
    return 2;
}
