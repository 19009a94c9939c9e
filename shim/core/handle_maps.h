/* handle_maps: the live mappings of each cuMemCreate handle, so that a handle the program
 * releases while it is still mapped (the driver keeps the memory until the last unmap, and
 * the CUDA samples release right after mapping) stays charged until that unmap. Cold path
 * (virtual-memory calls): one mutex over an open-addressing table in arena memory. */
#ifndef MEMSHIM_HANDLE_MAPS_H
#define MEMSHIM_HANDLE_MAPS_H

#include <stdint.h>

/* A mapping of `handle` was made. */
void handle_maps_add(uint64_t handle);
/* The program releases `handle`: 1 when it is still mapped (now marked released; its free is
 * due at its last unmap), 0 when it is not (free it now). */
int handle_maps_release(uint64_t handle);
/* A mapping of `handle` went away: 1 when it was the last one of a released handle (free it
 * now), else 0. */
int handle_maps_remove(uint64_t handle);
/* Forget everything, the lock made anew (fork child, tests). */
void handle_maps_reset(void);

#endif /* MEMSHIM_HANDLE_MAPS_H */
