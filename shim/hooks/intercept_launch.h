/* intercept_launch: kernel launches (cudaLaunchKernel, cudaLaunchKernelExC, CUDA 13's
 * __cudaLaunchKernel behind <<<>>>, cuLaunchKernel, cuLaunchKernelEx, with their per-thread
 * stream flavours), each recorded through access.h as one MST_OP_KERNEL named by the kernel's
 * symbol.
 *
 * Which allocations a kernel may touch: every 8-byte-aligned word of its parameters (structs
 * passed by value included; the layout from cudaFuncGetParamInfo / cuFuncGetParamInfo, asked
 * once per function and cached) that lies inside a tracked allocation or mapping. Each such
 * allocation is recorded once per launch as MST_ACCESS_MAYBE over its whole range, since a
 * kernel may index anywhere from the pointer it was given. Pointers stored in device memory
 * (an array of device pointers) are out of reach: the array itself is recorded, not what it
 * points to. With the `extra` form (CU_LAUNCH_PARAM_BUFFER_POINTER) the whole packed buffer is
 * scanned.
 *
 * A launch the shim cannot fully see into takes the blind path: a parameter array for a
 * function whose layout the runtime or driver will not give (a CUkernel passed as CUfunction,
 * a query that is missing or fails, the function table full), a layout or packed buffer longer
 * than what is scanned, or more allocations than one launch records. Such a kernel may write
 * any input of a recorded GEMM, so under recompute every dropped output is recomputed first
 * and every lineage forgotten (residency_forget_lineages); its accesses that were found are
 * recorded as usual. A failing first query cannot be told apart from a function without
 * parameters, so such a function launched with a parameter array takes the blind path too;
 * one launched with no array and no buffer is given nothing to write through. A learnt layout
 * costs the hot path one flag test. The wrappers' declarations come from hooks.def. */
#ifndef MEMSHIM_INTERCEPT_LAUNCH_H
#define MEMSHIM_INTERCEPT_LAUNCH_H

#include "intercept_driver.h"
#include "intercept_runtime.h"

#endif /* MEMSHIM_INTERCEPT_LAUNCH_H */
