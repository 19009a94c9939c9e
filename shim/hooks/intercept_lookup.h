/* intercept_lookup: the doors through which programs and libraries look driver functions up —
 * cuGetProcAddress(_v2), the runtime's cudaGetDriverEntryPoint(ByVersion) (through
 * intercept_lookup_wrap) and dlsym. Each lookup resolves the real function first, then hands
 * out our wrapper of that exact ABI; names we do not wrap pass through untouched. */
#ifndef MEMSHIM_INTERCEPT_LOOKUP_H
#define MEMSHIM_INTERCEPT_LOOKUP_H

#include <stdint.h>

/* What a lookup of driver function `base` (as cuGetProcAddress names it) for `cuda_version`
 * and CU_GET_PROC_ADDRESS_* `flags` should hand out, given that the real lookup returned
 * `fn`: our wrapper of the same ABI, or fn itself for a function we do not wrap. */
void *intercept_lookup_wrap(const char *base, int cuda_version, uint64_t flags, void *fn);

/* Whether fn is one of our driver wrappers. */
int intercept_lookup_is_wrapper(const void *fn);

#endif /* MEMSHIM_INTERCEPT_LOOKUP_H */
