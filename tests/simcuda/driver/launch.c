/* launch: host-function kernels — registration, parameter layout and synchronous launch. */
#include "context.h"
#include "export.h"
#include "fatbin.h"
#include "stats.h"
#include "stream.h"

#include <simcuda.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FUNC_MAGIC  0x53494d46u /* "SIMF" */
#define MAX_THREADS 1024u
#define MAX_SHARED  232448u
#define MAX_PARAMS  4096

struct CUfunc_st {
    unsigned magic;
    simcuda_kernel_fn fn;
    char *name;
    int nparams;
    bool no_info; /* registered without parameter sizes: no layout to answer with */
    size_t *sizes;
    size_t *offsets;
    size_t total; /* bytes of the packed parameter buffer */
    struct CUfunc_st *next;
};

static struct {
    pthread_mutex_t lock;
    struct CUfunc_st *head;
} kernels = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t align_of(size_t size)
{
    size_t a = 1;
    while (a < size && a < 8)
        a *= 2;
    return a;
}

static struct CUfunc_st *make_function(simcuda_kernel_fn fn, const char *name, int nparams,
                                       const size_t *param_sizes)
{
    struct CUfunc_st *f = calloc(1, sizeof(*f));
    size_t n = nparams ? (size_t)nparams : 1;
    if (!f || !(f->name = strdup(name ? name : "kernel")) ||
        !(f->sizes = calloc(n, sizeof(size_t))) || !(f->offsets = calloc(n, sizeof(size_t)))) {
        if (f) {
            free(f->name);
            free(f->sizes);
        }
        free(f);
        return NULL;
    }
    f->magic = FUNC_MAGIC;
    f->fn = fn;
    f->nparams = nparams;
    f->no_info = nparams > 0 && !param_sizes;
    size_t off = 0;
    for (int i = 0; i < nparams && !f->no_info; i++) {
        size_t a = align_of(param_sizes[i]);
        off = (off + a - 1) / a * a;
        f->sizes[i] = param_sizes[i];
        f->offsets[i] = off;
        off += param_sizes[i];
    }
    f->total = off;
    return f;
}

SIMCU_EXPORT CUresult simcuRegisterKernel(simcuda_kernel_fn fn, const char *name, int nparams,
                                          const size_t *param_sizes, CUfunction *out)
{
    if (!fn || !out || nparams < 0 || nparams > MAX_PARAMS)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; param_sizes && i < nparams; i++)
        if (param_sizes[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&kernels.lock);
    struct CUfunc_st *f = kernels.head;
    while (f && f->fn != fn)
        f = f->next;
    if (!f && (f = make_function(fn, name, nparams, param_sizes))) {
        f->next = kernels.head;
        kernels.head = f;
    }
    pthread_mutex_unlock(&kernels.lock);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = f;
    return CUDA_SUCCESS;
}

/* A kernel of a fat binary: its device code cannot run here, so a launch validates and counts
 * it and does nothing. Its parameter layout is read from the fat binary (`image`, as
 * __cudaRegisterFatBinary got it; may be NULL) where it can be (fatbin.h), so that
 * cuFuncGetParamInfo and `extra` launches answer as the real driver's do. Not deduplicated:
 * each registration is a function of its own. */
SIMCU_EXPORT CUresult simcuRegisterNoopKernel(const char *name, const void *image, CUfunction *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *f = make_function(NULL, name, 0, NULL);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fatbin_params p;
    if (image && name && fatbin_params(image, name, &p) == 0) {
        free(f->sizes);
        free(f->offsets);
        f->nparams = p.n;
        f->sizes = p.sizes;
        f->offsets = p.offsets;
        f->total = p.total;
    } else {
        f->no_info = true;
    }
    pthread_mutex_lock(&kernels.lock);
    f->next = kernels.head;
    kernels.head = f;
    pthread_mutex_unlock(&kernels.lock);
    *out = f;
    return CUDA_SUCCESS;
}

static bool func_valid(CUfunction f)
{
    return f && f->magic == FUNC_MAGIC;
}

SIMCU_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                         size_t *paramSize)
{
    if (!func_valid(func))
        return CUDA_ERROR_INVALID_HANDLE;
    if (func->no_info)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (paramIndex >= (size_t)func->nparams || (!paramOffset && !paramSize))
        return CUDA_ERROR_INVALID_VALUE;
    if (paramOffset)
        *paramOffset = func->offsets[paramIndex];
    if (paramSize)
        *paramSize = func->sizes[paramIndex];
    return CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_valid(hfunc))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

/* Turns the extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &n,
 * CU_LAUNCH_PARAM_END} form into one pointer per parameter into buf. */
static CUresult params_from_extra(CUfunction f, void **extra, void **params)
{
    char *buf = NULL;
    size_t *size = NULL;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (!buf || !size || *size < f->total || f->no_info)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < f->nparams; i++)
        params[i] = buf + f->offsets[i];
    return CUDA_SUCCESS;
}

static bool dims_valid(const simcuda_launch *l)
{
    uint64_t threads = (uint64_t)l->block.x * l->block.y * l->block.z;
    return l->grid.x && l->grid.y && l->grid.z && l->grid.y <= 65535 && l->grid.z <= 65535 &&
           l->grid.x <= 2147483647u && threads && threads <= MAX_THREADS && l->block.z <= 64 &&
           l->shared_bytes <= MAX_SHARED;
}

static CUresult launch(CUfunction f, const simcuda_launch *l, void **kernelParams, void **extra)
{
    CUresult rc = ctx_require();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!func_valid(f))
        return CUDA_ERROR_INVALID_HANDLE;
    rc = stream_check(l->stream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dims_valid(l))
        return CUDA_ERROR_INVALID_VALUE;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE;
    void *stack_params[16];
    void **params = kernelParams;
    if (!kernelParams && f->nparams > 0) {
        if (!extra)
            return CUDA_ERROR_INVALID_VALUE;
        params = f->nparams <= 16 ? stack_params : malloc(f->nparams * sizeof(void *));
        if (!params)
            return CUDA_ERROR_OUT_OF_MEMORY;
        rc = params_from_extra(f, extra, params);
    }
    if (rc == CUDA_SUCCESS) {
        stats_count_kernel();
        if (f->fn)
            f->fn(params, l);
    }
    if (params != kernelParams && params != stack_params)
        free(params);
    return rc;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned shared, CUstream stream,
                              void **kernelParams, void **extra)
{
    simcuda_launch l = {
        .grid = {gx, gy, gz}, .block = {bx, by, bz}, .shared_bytes = shared, .stream = stream};
    return launch(f, &l, kernelParams, extra);
}

SIMCU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                         sharedMemBytes, hStream, kernelParams, extra);
}

SIMCU_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams, void **extra)
{
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                         sharedMemBytes, hStream, kernelParams, extra);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    simcuda_launch l = {
        .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
        .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
        .shared_bytes = config->sharedMemBytes,
        .stream = config->hStream,
    };
    return launch(f, &l, kernelParams, extra);
}

SIMCU_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra);
}

SIMCU_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                            void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra);
}

SIMCU_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                         sharedMemBytes, hStream, kernelParams, NULL);
}

SIMCU_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                     unsigned int gridDimY, unsigned int gridDimZ,
                                                     unsigned int blockDimX, unsigned int blockDimY,
                                                     unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void **kernelParams)
{
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                         sharedMemBytes, hStream, kernelParams, NULL);
}

/* Launches are synchronous and serial, so a cache preference changes nothing. */
SIMCU_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    return func_valid(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* As an H100 without register or shared-memory pressure: 2048 threads per multiprocessor, at
 * most 32 blocks. */
SIMCU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                  int blockSize,
                                                                  size_t dynamicSMemSize)
{
    if (!numBlocks || blockSize <= 0 || (unsigned)blockSize > MAX_THREADS ||
        dynamicSMemSize > MAX_SHARED)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_valid(func))
        return CUDA_ERROR_INVALID_HANDLE;
    int blocks = 2048 / blockSize;
    *numBlocks = blocks > 32 ? 32 : blocks;
    return CUDA_SUCCESS;
}
