/* intercept_copy: the runtime and driver copies and sets (cudaMemcpy*, cudaMemset*, cuMemcpy*,
 * cuMemsetD*), each recorded through access.h as one MST_OP_MEMCPY or MST_OP_MEMSET with its
 * device ranges: the source READ, the destination WRITE. Host ranges are not recorded. A
 * pitched (2-D) range is recorded as its envelope, from its first byte to its last.
 * Which side of a copy is on the device: the kind or the function says so; where it leaves
 * that open (cudaMemcpyDefault, cuMemcpy, CU_MEMORYTYPE_UNIFIED) a side is a device range
 * when it lies in a tracked allocation or mapping. The wrappers' declarations come from
 * hooks.def (intercept_runtime.h, intercept_driver.h). */
#ifndef MEMSHIM_INTERCEPT_COPY_H
#define MEMSHIM_INTERCEPT_COPY_H

#include "intercept_driver.h"
#include "intercept_runtime.h"

#endif /* MEMSHIM_INTERCEPT_COPY_H */
