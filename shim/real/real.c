/* real: resolve the real CUDA functions once, through the right library handle. */
#include "real.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

struct real_table real;

enum { LIB_RUNTIME, LIB_DRIVER };

static const struct real_slot {
    const char *sym;
    size_t offset;
    int lib;
} real_slots[] = {
#define RT_HOOK(name, ret, params) {#name, offsetof(struct real_table, name), LIB_RUNTIME},
#define RT_REAL(name, ret, params) {#name, offsetof(struct real_table, name), LIB_RUNTIME},
#define DRV_HOOK(cname, sym, base, minver, ptds, exported, ret, params)                            \
    {sym, offsetof(struct real_table, cname), LIB_DRIVER},
#define DRV_REAL(name, ret, params) {#name, offsetof(struct real_table, name), LIB_DRIVER},
#include "hooks.def"
};

#define NSLOTS (sizeof(real_slots) / sizeof(real_slots[0]))

static int runtime_state;     /* 1 once resolved */
static int driver_state;      /* 1 once resolved */
static int driver_load_tried; /* racy on purpose: at worst two dlopens */
/* A library's constructor may look symbols up while we dlopen it: never resolve re-entrantly. */
static MS_TLS int resolving;

static void *(*libc_dlsym)(void *, const char *);

REAL_UNSANITIZED void *real_libc_dlsym(void)
{
    void *(*fn)(void *, const char *) = __atomic_load_n(&libc_dlsym, __ATOMIC_ACQUIRE);
    if (!fn) {
        /* dlvsym, not dlsym: the latter would be our own override. 2.34 moved dlsym into libc;
         * 2.2.5 (x86-64) and 2.17 (aarch64) are the older base versions. */
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
        for (size_t i = 0; !fn && i < sizeof(versions) / sizeof(versions[0]); i++)
            fn = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
        __atomic_store_n(&libc_dlsym, fn, __ATOMIC_RELEASE);
    }
    return (void *)fn;
}

void *real_dlsym(void *handle, const char *name)
{
    void *(*fn)(void *, const char *) = (void *(*)(void *, const char *))real_libc_dlsym();
    return fn ? fn(handle, name) : NULL;
}

/* Whether fn lies inside libmemshim itself: such a pointer must never become a "real" one. */
static int in_shim(void *fn)
{
    Dl_info self, other;
    if (!dladdr((void *)&in_shim, &self) || !dladdr(fn, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

static int slot_fill(const struct real_slot *s, void *fn)
{
    void **slot = (void **)((char *)&real + s->offset);
    void *expected = NULL;
    if (!fn || in_shim(fn))
        return 0;
    __atomic_compare_exchange_n(slot, &expected, fn, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE);
    return 1;
}

static void fill_from(void *handle, int lib)
{
    for (size_t i = 0; i < NSLOTS; i++)
        if (real_slots[i].lib == lib)
            slot_fill(&real_slots[i], real_dlsym(handle, real_slots[i].sym));
}

/* A loaded libcudart by any name (Python wheels have shipped it as libcudart-<hash>.so.N):
 * the first loaded object whose path names cudart. Only copied here; it is opened after the
 * walk, outside the loader's lock. */
static int find_cudart(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    const char *name = info->dlpi_name;
    if (!name || !strstr(name, "libcudart") || strlen(name) >= PATH_MAX)
        return 0;
    memcpy(out, name, strlen(name) + 1);
    return 1;
}

/* libcudart: the next definition after the shim; a libcudart opened RTLD_LOCAL is not in the
 * global scope, so fall back to a loaded one found by name. */
static int resolve_runtime(void)
{
    void *h = NULL;
    if (real_dlsym(RTLD_NEXT, "cudaMalloc")) {
        fill_from(RTLD_NEXT, LIB_RUNTIME);
        return 1;
    }
    char path[PATH_MAX] = "";
    dl_iterate_phdr(find_cudart, path);
    if (path[0])
        h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h || !real_dlsym(h, "cudaMalloc") || in_shim(real_dlsym(h, "cudaMalloc")))
        return 0;
    fill_from(h, LIB_RUNTIME);
    return 1;
}

static int resolve_driver(int may_load)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h && may_load && !__atomic_exchange_n(&driver_load_tried, 1, __ATOMIC_RELAXED)) {
        h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    }
    if (!h)
        return 0;
    fill_from(h, LIB_DRIVER); /* the handle is kept: libcuda stays loaded for the hooks */
    return 1;
}

/* No lock: resolution only fills empty slots (compare-and-swap), so two threads resolving at
 * once do the same harmless work, and a lock here could meet the dynamic loader's lock in the
 * opposite order (a constructor calling a hook while another thread resolves). */
static MS_NOINLINE MS_COLD int resolve_slow(int *state, int (*how)(int), int arg)
{
    if (resolving)
        return 0;
    resolving = 1;
    if (how(arg))
        __atomic_store_n(state, 1, __ATOMIC_RELEASE);
    resolving = 0;
    return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

/* Every hook asks first; after the first answer it is one load. */
static MS_HOT int resolve(int *state, int (*how)(int), int arg)
{
    return __atomic_load_n(state, __ATOMIC_ACQUIRE) ? 1 : resolve_slow(state, how, arg);
}

static int resolve_runtime_arg(int unused)
{
    (void)unused;
    return resolve_runtime();
}

MS_HOT int real_runtime_ready(void)
{
    return resolve(&runtime_state, resolve_runtime_arg, 0);
}

MS_HOT int real_driver_ready(void)
{
    return resolve(&driver_state, resolve_driver, 0);
}

MS_HOT int real_driver_resolved(void)
{
    return __atomic_load_n(&driver_state, __ATOMIC_ACQUIRE);
}

int real_driver_load(void)
{
    return resolve(&driver_state, resolve_driver, 1);
}

void *real_learn(const char *sym, void *fn)
{
    for (size_t i = 0; i < NSLOTS; i++) {
        if (strcmp(real_slots[i].sym, sym) != 0)
            continue;
        slot_fill(&real_slots[i], fn);
        return __atomic_load_n((void **)((char *)&real + real_slots[i].offset), __ATOMIC_ACQUIRE);
    }
    return NULL;
}
