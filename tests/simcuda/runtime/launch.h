/* launch: the runtime's kernel table (host function -> CUfunction) and launches. */
#ifndef SIMCUDA_RT_LAUNCH_H
#define SIMCUDA_RT_LAUNCH_H

#include <stdbool.h>

#include "driver_table.h"

/* Records a fat binary's kernel: the host stub fn launches a no-op function named device_name
 * whose parameter layout comes from image, the fat binary (both kept, not copied: they live in
 * the registering library's image). False if out of memory. */
bool rt_kernel_declare(const void *fn, const char *device_name, const void *image);

/* The CUfunction of a registered host function or cudaKernel_t, made now for a fat binary's
 * kernel; NULL for anything else. */
CUfunction rt_kernel_function(const rt_driver *drv, const void *fn);

#endif
