/* blas_status: status names, descriptions and version properties shared by the simulated
 * cuBLAS and cuBLASLt (each library exports them under its own prefix). */
#ifndef SIMCUDA_BLAS_STATUS_H
#define SIMCUDA_BLAS_STATUS_H

#include <cublas_api.h>

const char *blas_status_name(cublasStatus_t status);
const char *blas_status_string(cublasStatus_t status);

/* The cuBLAS version this simulation answers for (that of the CUDA 13 headers). */
cublasStatus_t blas_get_property(libraryPropertyType type, int *value);

#endif
