/* launch: the runtime's kernel table (host function -> CUfunction) and launches. */
#ifndef SIMCUDA_RT_LAUNCH_H
#define SIMCUDA_RT_LAUNCH_H

#include <stdbool.h>

/* Records a fat binary's kernel: the host stub fn launches a no-op function named device_name
 * (kept, not copied: it lives in the registering library's image). False if out of memory. */
bool rt_kernel_declare(const void *fn, const char *device_name);

#endif
