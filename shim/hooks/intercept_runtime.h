/* intercept_runtime: the runtime allocation entry points we export (cudaMalloc and friends,
 * cudaMemGetInfo), each translated into calls of track.h; the runtime's lookups
 * (cudaGetDriverEntryPoint(ByVersion)) are in intercept_lookup.c with the others. The real runtime
 * then calls the driver through our driver wrappers; the recursion guard makes sure such an
 * allocation is counted once, by the runtime hook, with its kind. */
#ifndef MEMSHIM_INTERCEPT_RUNTIME_H
#define MEMSHIM_INTERCEPT_RUNTIME_H

#include "real.h"

#define RT_HOOK(name, ret, params) MS_EXPORT ret name params;
#include "hooks.def"

#endif /* MEMSHIM_INTERCEPT_RUNTIME_H */
