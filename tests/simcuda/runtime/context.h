/* context: the runtime's current device per thread and the primary context behind it.
 *
 * Every runtime call that touches device state goes through rt_enter(): it loads the driver and
 * makes sure the calling thread has a current context. A context the program made current
 * through the driver API is adopted, as by the real runtime; otherwise the primary context of
 * the thread's device (0 unless cudaSetDevice chose another) is retained and made current. */
#ifndef SIMCUDA_RT_CONTEXT_H
#define SIMCUDA_RT_CONTEXT_H

#include "driver_table.h"

/* Loads the driver and binds a context. On failure records and returns the error. */
cudaError_t rt_enter(const rt_driver **out);

/* Loads the driver only (for calls that need no context). Records a failure. */
cudaError_t rt_enter_no_context(const rt_driver **out);

/* The calling thread's device ordinal. */
int rt_current_device(void);

/* Makes dev the calling thread's device and binds its primary context. */
cudaError_t rt_set_device(const rt_driver *drv, int dev);

/* Resets the primary context of the calling thread's device; the next call binds it afresh. */
cudaError_t rt_reset_device(const rt_driver *drv);

#endif
