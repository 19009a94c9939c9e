/* init: the library constructor. Options and the trace writer first (track_init), then the
 * real functions already loaded (the C library's exec, _exit and signal calls now: a vfork
 * child must not run the dynamic loader), then the NVTX injection variable. Everything is also safe
 * to reach before this runs (another library's constructor may call CUDA first): the real tables
 * resolve on first use. */
#include "intercept_libc.h"
#include "intercept_nvtx.h"
#include "real.h"
#include "track.h"

__attribute__((constructor)) static void init(void)
{
    track_init();
    intercept_libc_init();
    real_runtime_ready();
    real_driver_ready();
    intercept_nvtx_setup();
}
