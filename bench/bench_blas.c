/* bench_blas: what the shim adds to one cuBLAS GEMM call, on simcuda with a 1x1x1 problem so
 * the hook's cost is not hidden under the arithmetic. Runs itself three times — without the
 * shim, under it with the default settings (no trace), and under it with a trace — and prints
 * ns per call and the added ns for cublasSgemm_v2, cublasGemmEx, cublasSgemmStridedBatched and
 * cublasLtMatmul. Asserts nothing about time.
 *
 *     bench_blas LIBMEMSHIM [calls]     (simcuda's libraries on LD_LIBRARY_PATH) */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>

extern char **environ;

#define NCASES 4
static const char *const case_names[NCASES] = {"cublasSgemm_v2", "cublasGemmEx",
                                               "cublasSgemmStridedBatched", "cublasLtMatmul"};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        if ((int)(call) != 0) {                                                                    \
            fprintf(stderr, "bench_blas: %s failed\n", #call);                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The measured side: ns per call of each case, best of three rounds, on one line. */
static int child(long calls)
{
    cublasHandle_t h;
    cublasLtHandle_t lt;
    float *a, *b, *c, *ws;
    const float one = 1.0f, zero = 0.0f;
    CK(cudaMalloc((void **)&a, 256));
    CK(cudaMalloc((void **)&b, 256));
    CK(cudaMalloc((void **)&c, 256));
    CK(cudaMalloc((void **)&ws, 4096));
    CK(cublasCreate_v2(&h));
    CK(cublasSetWorkspace_v2(h, ws, 4096));
    CK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t md;
    cublasLtMatrixLayout_t l;
    CK(cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 1, 1, 1));
    double best[NCASES];
    for (int i = 0; i < NCASES; i++)
        best[i] = 1e30;
    for (int round = 0; round < 3; round++) {
        for (int cs = 0; cs < NCASES; cs++) {
            uint64_t t0 = now_ns();
            for (long i = 0; i < calls; i++) {
                switch (cs) {
                case 0:
                    CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1, b, 1, &zero,
                                      c, 1));
                    break;
                case 1:
                    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_R_32F, 1, b,
                                    CUDA_R_32F, 1, &zero, c, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
                    break;
                case 2:
                    CK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1,
                                                 1, b, 1, 1, &zero, c, 1, 1, 2));
                    break;
                default:
                    CK(cublasLtMatmul(lt, md, &one, a, l, b, l, &zero, c, l, c, l, NULL, ws, 4096,
                                      NULL));
                    break;
                }
            }
            double ns = (double)(now_ns() - t0) / (double)calls;
            if (ns < best[cs])
                best[cs] = ns;
        }
    }
    for (int cs = 0; cs < NCASES; cs++)
        printf("%.1f ", best[cs]);
    printf("\n");
    return 0;
}

/* Run this program as a child with extra environment; its one line of numbers in out. */
static int spawn_child(const char *self, const char *calls, char *const extra[], double *out)
{
    char *env[256];
    size_t n = 0;
    for (char **e = environ; *e && n < 240; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "MEMSHIM_TRACE=", 14) != 0)
            env[n++] = *e;
    for (size_t i = 0; extra[i]; i++)
        env[n++] = extra[i];
    env[n++] = "BENCH_BLAS_CHILD=1";
    env[n] = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {(char *)self, (char *)calls, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char buf[512] = "";
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    char *p = buf;
    for (int i = 0; i < NCASES; i++)
        out[i] = strtod(p, &p);
    return 0;
}

int main(int argc, char **argv)
{
    long calls = argc > 2 ? atol(argv[2]) : 200000;
    if (getenv("BENCH_BLAS_CHILD"))
        return child(argc > 1 ? atol(argv[1]) : 200000);
    if (argc < 2) {
        fprintf(stderr, "usage: bench_blas LIBMEMSHIM [calls]\n");
        return 2;
    }
    char calls_s[32], preload[4096], trace[4096];
    snprintf(calls_s, sizeof calls_s, "%ld", calls);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", argv[1]);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(trace, sizeof trace, "MEMSHIM_TRACE=%s/bench_blas-%d.mst", tmp, (int)getpid());
    char *none[] = {NULL}, *shim[] = {preload, NULL}, *traced[] = {preload, trace, NULL};
    double base[NCASES], with[NCASES], with_trace[NCASES];
    if (spawn_child("/proc/self/exe", calls_s, none, base) != 0 ||
        spawn_child("/proc/self/exe", calls_s, shim, with) != 0 ||
        spawn_child("/proc/self/exe", calls_s, traced, with_trace) != 0) {
        fprintf(stderr, "bench_blas: a run failed (simcuda on LD_LIBRARY_PATH?)\n");
        return 1;
    }
    unlink(trace + strlen("MEMSHIM_TRACE="));
    printf("%ld calls of a 1x1x1 GEMM, ns per call (best of 3 rounds)\n", calls);
    printf("%-28s %10s %10s %10s %12s %10s\n", "entry point", "no shim", "shim", "ratio",
           "shim+trace", "added ns");
    for (int i = 0; i < NCASES; i++)
        printf("%-28s %10.1f %10.1f %10.2f %12.1f %10.1f\n", case_names[i], base[i], with[i],
               with[i] / base[i], with_trace[i], with[i] - base[i]);
    return 0;
}
