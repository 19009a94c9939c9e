/* What a prebuilt framework (PyTorch) needs from simcuda beyond a program written for it:
 * kernels registered from fat binaries, the <<<>>> configuration pair, function attributes and
 * occupancy, capture queries, stream priorities, NVML, unsimulated calls answering errors, and
 * SIMCUDA_COMPUTE=0. Each Criterion test runs in its own process, so a test can set the
 * environment before the libraries first read it. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define CHECK(call) cr_assert_eq((call), cudaSuccess, "%s", #call)

/* What nvcc's host code calls; host_runtime.h declares them only for C++. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);

/* A host stub's address is all the runtime keys a kernel by; its body never runs. */
static void stub_a(void) {}
static void stub_b(void) {}
static char fatbin[16];

static void register_stubs(void)
{
    void **h = __cudaRegisterFatBinary(fatbin);
    __cudaRegisterFunction(h, (const char *)stub_a, "_Z6kernelAPf", "kernelA", -1, NULL, NULL, NULL,
                           NULL, NULL);
    __cudaRegisterFunction(h, (const char *)stub_b, "_Z6kernelBv", "kernelB", -1, NULL, NULL, NULL,
                           NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
}

Test(sim_framework, fat_binary_kernels_launch_as_noops_with_their_names)
{
    register_stubs();
    float *p;
    CHECK(cudaMalloc((void **)&p, 4096));
    CHECK(cudaMemset(p, 0, 4096));
    void *args[] = {&p};
    CHECK(cudaLaunchKernel((const void *)stub_a, (dim3){4, 1, 1}, (dim3){256, 1, 1}, args, 0, 0));
    float host[1024];
    CHECK(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(host[i], 0.0f, "a no-op kernel wrote element %d", i);
    const char *name = NULL;
    CHECK(cudaFuncGetName(&name, (const void *)stub_b));
    cr_assert_str_eq(name, "_Z6kernelBv");
    CHECK(cudaFuncGetName(&name, (const void *)stub_a));
    cr_assert_str_eq(name, "_Z6kernelAPf");
    cr_assert_eq(
        cudaLaunchKernel((const void *)stub_b, (dim3){1, 1, 1}, (dim3){2048, 1, 1}, NULL, 0, 0),
        cudaErrorInvalidValue, "launches are checked as on a GPU");
    cr_assert_eq(cudaLaunchKernel((const void *)register_stubs, (dim3){1, 1, 1}, (dim3){1, 1, 1},
                                  NULL, 0, 0),
                 cudaErrorInvalidDeviceFunction);
    cudaKernel_t k;
    cudaError_t __cudaGetKernel(cudaKernel_t *, const void *);
    CHECK(__cudaGetKernel(&k, (const void *)stub_b));
    cr_assert_not_null(k);
    CHECK(cudaFree(p));
}

Test(sim_framework, call_configuration_pops_what_was_pushed)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    __cudaPushCallConfiguration((dim3){7, 2, 1}, (dim3){128, 1, 1}, 1024, (struct CUstream_st *)s);
    dim3 g, b;
    size_t shared;
    void *stream;
    CHECK(__cudaPopCallConfiguration(&g, &b, &shared, &stream));
    cr_assert(g.x == 7 && g.y == 2 && b.x == 128 && shared == 1024 && stream == (void *)s);
    CHECK(cudaStreamDestroy(s));
}

Test(sim_framework, attributes_occupancy_priorities_and_capture_queries)
{
    register_stubs();
    struct cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, (const void *)stub_a));
    cr_assert_eq(fa.maxThreadsPerBlock, 1024);
    cr_assert_eq(cudaFuncGetAttributes(&fa, (const void *)register_stubs),
                 cudaErrorInvalidDeviceFunction, "only registered kernels have attributes");
    CHECK(cudaFuncSetAttribute((const void *)stub_a, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               100 * 1024));
    int blocks;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)stub_a, 256, 0));
    cr_assert_eq(blocks, 8);
    int least, greatest;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cr_assert(greatest < least, "priorities %d..%d", least, greatest);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    int prio;
    CHECK(cudaStreamGetPriority(s, &prio));
    cr_assert_eq(prio, greatest);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    CHECK(cudaStreamIsCapturing(s, &st));
    cr_assert_eq(st, cudaStreamCaptureStatusNone);
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, cudaStreamCaptureModeGlobal);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorNotSupported);
    cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported);
    cudaEvent_t e;
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecordWithFlags(e, s, cudaEventRecordExternal));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventDestroy(e));
    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    cr_assert_str_eq(bus, "0000:00:00.0");
    int can = 1;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0);
    cudaIpcMemHandle_t ipc;
    cr_assert_eq(cudaIpcGetMemHandle(&ipc, NULL), cudaErrorNotSupported);
    CHECK(cudaStreamDestroy(s));
}

Test(sim_framework, unsimulated_blas_answers_not_supported)
{
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    float x[4] = {1, 2, 3, 4}, r = 0;
    cr_assert_eq(cublasSdot(h, 4, x, 1, x, 1, &r), CUBLAS_STATUS_NOT_SUPPORTED);
    cr_assert_eq(cublasSetSmCountTarget(h, 66), CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

Test(sim_framework, driver_entry_points_a_framework_asks_for)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    const char *names[] = {"cuMemExportToShareableHandle", "cuMemImportFromShareableHandle",
                           "cuStreamWriteValue32", "cuOccupancyMaxActiveBlocksPerMultiprocessor"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(cudaGetDriverEntryPointByVersion(names[i], &fn, 12030, cudaEnableDefault, &q));
        cr_assert(fn && q == cudaDriverEntryPointSuccess, "%s", names[i]);
    }
    CHECK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12030, cudaEnableDefault,
                                           &q));
    uint32_t *p;
    CHECK(cudaMalloc((void **)&p, 64));
    CUresult (*write32)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = fn;
    cr_assert_eq(write32(NULL, (CUdeviceptr)p, 0xfeedu, 0), CUDA_SUCCESS);
    uint32_t v = 0;
    CHECK(cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost));
    cr_assert_eq(v, 0xfeedu);
    CHECK(cudaFree(p));
}

typedef int (*nvml_fn)();

Test(sim_framework, nvml_knows_the_device_by_bus_id_and_uuid)
{
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    cr_assert_not_null(nvml, "%s", dlerror());
    nvml_fn init = (nvml_fn)dlsym(nvml, "nvmlInit_v2");
    nvml_fn by_bus = (nvml_fn)dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_fn uuid = (nvml_fn)dlsym(nvml, "nvmlDeviceGetUUID");
    nvml_fn by_uuid = (nvml_fn)dlsym(nvml, "nvmlDeviceGetHandleByUUID");
    nvml_fn fabric = (nvml_fn)dlsym(nvml, "nvmlDeviceGetGpuFabricInfoV");
    nvml_fn procs = (nvml_fn)dlsym(nvml, "nvmlDeviceGetComputeRunningProcesses");
    cr_assert(init && by_bus && uuid && by_uuid && fabric && procs);
    void *dev = NULL, *again = NULL;
    cr_assert_eq(by_bus("0000:00:00.0", &dev), 1 /* UNINITIALIZED */);
    cr_assert_eq(init(), 0);
    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    cr_assert_eq(by_bus(bus, &dev), 0);
    cr_assert_eq(by_bus("0000:01:00.0", &again), 6 /* NOT_FOUND */);
    char id[96];
    cr_assert_eq(uuid(dev, id, (unsigned)sizeof id), 0);
    cr_assert_eq(by_uuid(id, &again), 0);
    cr_assert_eq(again, dev);
    unsigned char info[64];
    memset(info, 0xff, sizeof info);
    memcpy(info, &(unsigned){2u << 24 | 40}, 4); /* a version word: v2, 40 bytes */
    cr_assert_eq(fabric(dev, info), 0);
    cr_assert_eq(info[4 + 16 + 4 + 4], 0, "state NOT_SUPPORTED: no fabric");
    cr_assert_eq(info[36], 0xff, "nothing past the v2 fields is written");
    void *p;
    CHECK(cudaMalloc(&p, 8 << 20));
    struct {
        unsigned pid;
        unsigned long long used;
    } list[4];
    unsigned n = 4;
    cr_assert_eq(procs(dev, &n, list), 0);
    cr_assert(n == 1 && list[0].pid == (unsigned)getpid() && list[0].used >= (8u << 20));
    CHECK(cudaFree(p));
    dlclose(nvml);
}

/* SIMCUDA_COMPUTE=0: memsets, device copies and GEMMs are checked and counted but write
 * nothing, so memory no one else wrote is never touched. */
Test(sim_framework, compute_off_writes_nothing)
{
    setenv("SIMCUDA_COMPUTE", "0", 1);
    float *a, *c;
    CHECK(cudaMalloc((void **)&a, 4096));
    CHECK(cudaMalloc((void **)&c, 4096));
    float ones[1024];
    for (int i = 0; i < 1024; i++)
        ones[i] = 1.0f;
    CHECK(cudaMemcpy(a, ones, sizeof ones, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(c, 0x7f, 4096));
    CHECK(cudaMemcpy(c, a, 4096, cudaMemcpyDeviceToDevice));
    cublasHandle_t h;
    cr_assert_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    const float one = 1.0f, zero = 0.0f;
    cr_assert_eq(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 32, 32, 32, &one, a, 32, a, 32, &zero, c, 32),
        CUBLAS_STATUS_SUCCESS);
    cr_assert_eq(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 32, 32, 32, &one, a, 1, a, 32, &zero, c, 32),
        CUBLAS_STATUS_INVALID_VALUE, "arguments are still checked");
    float back[1024];
    CHECK(cudaMemcpy(back, c, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(back[i], 0.0f, "element %d was written", i);
    cr_assert_eq(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
    CHECK(cudaFree(a));
    CHECK(cudaFree(c));
}

/* A framework's worker thread (PyTorch's autograd threads) selects the device and then uses
 * libraries that need a current context: the primary context is current there, as the real
 * runtime makes it. */
static CUresult (*ctx_get_current)(CUcontext *);

static void *worker(void *out)
{
    if (cudaSetDevice(0) != cudaSuccess || ctx_get_current(out) != CUDA_SUCCESS)
        *(CUcontext *)out = NULL;
    return NULL;
}

Test(sim_framework, worker_threads_find_the_primary_context_current)
{
    enum cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", (void **)&ctx_get_current, 12000,
                                           cudaEnableDefault, &q));
    CHECK(cudaFree(NULL));
    CUcontext mine = NULL, theirs = NULL;
    cr_assert_eq(ctx_get_current(&mine), CUDA_SUCCESS);
    cr_assert_not_null(mine);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, worker, &theirs), 0);
    pthread_join(t, NULL);
    cr_assert_eq(theirs, mine, "the worker's context is the primary context");
}
