/* intercept_cublaslt: cublasLtMatmul as one MST_OP_GEMM (shapes, transposes, batch strides,
 * bias, aux and scale pointers recovered from ltdesc's side table), and the descriptor calls
 * that keep that table current (hooks.def, BLAS_LIB_LT). */
#ifndef MEMSHIM_INTERCEPT_CUBLASLT_H
#define MEMSHIM_INTERCEPT_CUBLASLT_H

#include "real_blas.h"

/* Only this library's hooks: the lib argument picks the declaring macro. */
#define BLAS_DECL_BLAS_LIB_LT(name, ret, params) MS_EXPORT ret name params;
#define BLAS_DECL_BLAS_LIB_CUBLAS(name, ret, params)
#define BLAS_HOOK(lib, name, ret, params) BLAS_DECL_##lib(name, ret, params)
#include "hooks.def"
#undef BLAS_DECL_BLAS_LIB_LT
#undef BLAS_DECL_BLAS_LIB_CUBLAS

#endif /* MEMSHIM_INTERCEPT_CUBLASLT_H */
