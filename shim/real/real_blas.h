/* real_blas: the real cuBLAS and cuBLASLt functions behind the BLAS hooks of hooks.def.
 *
 * The shim never loads cuBLAS: a table is resolved only once the program has the library in
 * the process — the next definition after the shim (the program linked it), else a loaded
 * libcublas/libcublasLt found by name (opened RTLD_LOCAL, e.g. under a Python extension),
 * else whatever the program's own dlsym of a handle returned (intercept_lookup's dlsym hands
 * such lookups to real_blas_dlsym_pick). Slots only go from NULL to a function, once. */
#ifndef MEMSHIM_REAL_BLAS_H
#define MEMSHIM_REAL_BLAS_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include "compat.h"

/* __half is a C++ type; the cuBLAS ABI passes pointers to 16-bit storage. */
typedef uint16_t blas_half;

enum { BLAS_LIB_CUBLAS, BLAS_LIB_LT, BLAS_LIB_COUNT };

struct real_blas_table {
#define BLAS_HOOK(lib, name, ret, params) ret(*name) params;
#define BLAS_REAL(lib, name, ret, params) ret(*name) params;
#include "hooks.def"
};

extern struct real_blas_table real_blas;

/* The real function of a slot, resolving the table of its library first if it is empty;
 * NULL when the library is not in the process. */
#define REAL_BLAS(lib, name)                                                                       \
    (__atomic_load_n(&real_blas.name, __ATOMIC_ACQUIRE)                                            \
         ? __atomic_load_n(&real_blas.name, __ATOMIC_ACQUIRE)                                      \
         : (real_blas_resolve(lib), __atomic_load_n(&real_blas.name, __ATOMIC_ACQUIRE)))

/* Fill the empty slots of `lib` from the library if it is loaded. 1 when it was found. */
int real_blas_resolve(int lib);

/* The program looked `name` (a wrapped BLAS function) up in `handle`: returns what its dlsym
 * should hand out — our wrapper once the real function is known, the real lookup's result
 * otherwise (NULL with the C library's dlerror when the handle lacks it). The rest of that
 * library's slots are filled from the same handle. */
void *real_blas_dlsym(void *handle, const char *name, void *wrapper);

#endif /* MEMSHIM_REAL_BLAS_H */
