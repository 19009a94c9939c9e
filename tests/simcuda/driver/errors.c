/* errors: cuGetErrorName and cuGetErrorString over the table in errors.def. */
#include "export.h"

#include <cuda.h>

#include <stddef.h>

static const struct {
    CUresult code;
    const char *name;
    const char *text;
} errors[] = {
#define SIMCU_ERROR(code, text) {code, #code, text},
#include "errors.def"
#undef SIMCU_ERROR
};

static int error_index(CUresult code)
{
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (errors[i].code == code)
            return (int)i;
    return -1;
}

SIMCU_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    int i = error_index(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = i < 0 ? NULL : errors[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

SIMCU_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    int i = error_index(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = i < 0 ? NULL : errors[i].text;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
