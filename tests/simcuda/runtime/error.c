#include "error.h"

#include <stdbool.h>

static _Thread_local cudaError_t last_error = cudaSuccess;

static bool is_known(cudaError_t err)
{
    switch (err) {
#define RT_ERROR(name, text) case name:
#include "error_names.def"
#undef RT_ERROR
        return true;
    default:
        return false;
    }
}

cudaError_t rt_error_from_cu(CUresult res)
{
    cudaError_t err = (cudaError_t)res;
    return is_known(err) ? err : cudaErrorUnknown;
}

cudaError_t rt_error_set(cudaError_t err)
{
    if (err != cudaSuccess)
        last_error = err;
    return err;
}

cudaError_t rt_error_cu(CUresult res)
{
    return rt_error_set(rt_error_from_cu(res));
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t err = last_error;
    last_error = cudaSuccess;
    return err;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define RT_ERROR(name, text)                                                                       \
    case name:                                                                                     \
        return #name;
#include "error_names.def"
#undef RT_ERROR
    default:
        return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define RT_ERROR(name, text)                                                                       \
    case name:                                                                                     \
        return text;
#include "error_names.def"
#undef RT_ERROR
    default:
        return "unrecognized error code";
    }
}
