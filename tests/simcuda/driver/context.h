/* context: the primary context, created contexts and each thread's context stack. */
#ifndef SIMCU_CONTEXT_H
#define SIMCU_CONTEXT_H

#include <cuda.h>

#include <stdbool.h>

/* CUDA_SUCCESS when the driver is initialised and the thread has a live current context;
 * otherwise the error the real driver gives (NOT_INITIALIZED, INVALID_CONTEXT,
 * CONTEXT_IS_DESTROYED). Every call that needs a context starts with this. */
CUresult ctx_require(void);

/* The thread's current context, or NULL. */
CUcontext ctx_current(void);

bool ctx_valid(CUcontext ctx);

#endif
