/* intercept_cublas: the cuBLAS GEMM entry points we export (hooks.def, BLAS_LIB_CUBLAS), each
 * described to access.h as one MST_OP_GEMM with the exact byte ranges of its operands, and
 * cublasSetWorkspace_v2, whose buffer is tagged `workspace`. */
#ifndef MEMSHIM_INTERCEPT_CUBLAS_H
#define MEMSHIM_INTERCEPT_CUBLAS_H

#include "real_blas.h"

/* Only this library's hooks: the lib argument picks the declaring macro. */
#define BLAS_DECL_BLAS_LIB_CUBLAS(name, ret, params) MS_EXPORT ret name params;
#define BLAS_DECL_BLAS_LIB_LT(name, ret, params)
#define BLAS_HOOK(lib, name, ret, params) BLAS_DECL_##lib(name, ret, params)
#include "hooks.def"
#undef BLAS_DECL_BLAS_LIB_CUBLAS
#undef BLAS_DECL_BLAS_LIB_LT

/* Tag the allocation holding `ptr` as workspace (a RETAG the first time it is used so). */
void intercept_cublas_workspace(const void *ptr);

#endif /* MEMSHIM_INTERCEPT_CUBLAS_H */
