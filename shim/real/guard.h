/* guard: the per-thread state every layer of the shim may read, kept at the bottom so that no
 * module has to call upward for it (as heaptrack's RecursionGuard sits under its hooks).
 *
 * - The recursion guard: a hook that finds it held is running inside the shim's own work (a
 *   real function that calls back into a hooked one, the cost measurement's calls) and calls the
 *   real function directly.
 * - The depth of real cuBLAS/cuBLASLt calls in progress: what the library does inside one (a
 *   GEMM routed through cuBLASLt, its kernel launches) is part of the operation already
 *   recorded, so inner hooks pass it through.
 *
 * Thread-local, initial-exec: touching it never allocates. */
#ifndef MEMSHIM_GUARD_H
#define MEMSHIM_GUARD_H

/* Take the guard: 1 when taken, 0 when this thread already held it. */
int guard_enter(void);
/* Only after a guard_enter that returned 1. */
void guard_leave(void);
/* Whether this thread holds the guard. */
int guard_held(void);

/* Whether this thread is inside the real call of a recorded cuBLAS or cuBLASLt operation. */
int guard_in_blas(void);
/* Around that real call (cuBLAS, cuBLASLt hooks and recompute's replays). */
void guard_blas_enter(void);
void guard_blas_leave(void);

#endif /* MEMSHIM_GUARD_H */
