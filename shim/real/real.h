/* real: the table of the real CUDA functions behind the hooks, generated from hooks.def.
 *
 * Runtime functions come from the libcudart that the program loaded (the next definition after
 * the shim, else a loaded libcudart.so.13/.12); driver functions from libcuda.so.1. Each table
 * is resolved once, as soon as its library is in the process; a slot the library lacks stays
 * NULL, and a lookup that hands out a real pointer for an empty slot fills it (real_learn).
 * When a library is missing, the hooks call nothing of the shim and return the API's
 * "not initialised" code, so the shim stays out of the way. */
#ifndef MEMSHIM_REAL_H
#define MEMSHIM_REAL_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "compat.h"

/* cuda.h maps the base names onto the current ABIs; hooks.def names every ABI explicitly. */
#undef cuGetProcAddress

/* For code on the dlsym path: sanitizer runtimes look their interceptors up through dlsym
 * while they initialise, before instrumented code may run. */
#define REAL_UNSANITIZED __attribute__((no_sanitize("address", "undefined")))

struct real_table {
#define RT_HOOK(name, ret, params)                                      ret(*name) params;
#define RT_REAL(name, ret, params)                                      ret(*name) params;
#define DRV_HOOK(cname, sym, base, minver, ptds, exported, ret, params) ret(*cname) params;
#define DRV_REAL(name, ret, params)                                     ret(*name) params;
#include "hooks.def"
};

extern struct real_table real;

/* The real function of a slot, or NULL. Slots only go from NULL to a function, once. */
#define REAL(name) __atomic_load_n(&real.name, __ATOMIC_ACQUIRE)

/* Resolve the runtime / driver table if its library is now loaded. Cheap once resolved;
 * returns 1 when the library was found. real_driver_load also dlopens libcuda.so.1 when it is
 * not loaded yet (for the runtime hooks, which describe a device before the runtime has
 * touched the driver). */
int real_runtime_ready(void);
int real_driver_ready(void);
int real_driver_load(void);
/* Whether the driver table is resolved already, without trying to resolve it: the test of a
 * pass-through that leaves everything else to its full hook. */
int real_driver_resolved(void);

/* The C library's dlsym, never the shim's override: called, and its address (NULL if the C
 * library has none under a known version). */
void *real_dlsym(void *handle, const char *name);
void *real_libc_dlsym(void) REAL_UNSANITIZED;

/* Record `fn` as the real function of the driver symbol `sym` if its slot is still empty
 * (a lookup handed it out). Returns the slot's function after the call, or NULL. */
void *real_learn(const char *sym, void *fn);

#endif /* MEMSHIM_REAL_H */
