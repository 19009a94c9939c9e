/* real_blas: resolve the real cuBLAS/cuBLASLt functions once the program has loaded them. */
#include "real_blas.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <string.h>

#include "log.h"
#include "real.h"

struct real_blas_table real_blas;

static const struct blas_slot {
    const char *sym;
    size_t offset;
    int lib;
} blas_slots[] = {
#define BLAS_HOOK(lib, name, ret, params) {#name, offsetof(struct real_blas_table, name), lib},
#define BLAS_REAL(lib, name, ret, params) {#name, offsetof(struct real_blas_table, name), lib},
#include "hooks.def"
};

/* The library's file name starts with one of these, then '.' or '-' (wheels add a hash). */
static const char *const blas_lib_names[BLAS_LIB_COUNT] = {"libcublas", "libcublasLt"};
/* A probe symbol present in every version of each library. */
static const char *const blas_lib_probe[BLAS_LIB_COUNT] = {"cublasCreate_v2", "cublasLtCreate"};

static int blas_state[BLAS_LIB_COUNT]; /* 1 once every slot of the library had its chance */
/* A library's constructor may call into us while we look it up: never resolve re-entrantly. */
static MS_TLS int blas_resolving;

static int blas_in_shim(void *fn)
{
    Dl_info self, other;
    if (!dladdr((void *)&blas_in_shim, &self) || !dladdr(fn, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

static void **blas_slot_ptr(const struct blas_slot *s)
{
    return (void **)((char *)&real_blas + s->offset);
}

static void blas_slot_fill(const struct blas_slot *s, void *fn)
{
    void *expected = NULL;
    if (!fn || blas_in_shim(fn))
        return;
    __atomic_compare_exchange_n(blas_slot_ptr(s), &expected, fn, 0, __ATOMIC_RELEASE,
                                __ATOMIC_ACQUIRE);
}

static void blas_fill_from(void *handle, int lib)
{
    for (size_t i = 0; i < MS_ARRAY_LEN(blas_slots); i++)
        if (blas_slots[i].lib == lib &&
            !__atomic_load_n(blas_slot_ptr(&blas_slots[i]), __ATOMIC_ACQUIRE))
            blas_slot_fill(&blas_slots[i], real_dlsym(handle, blas_slots[i].sym));
}

struct blas_find {
    int lib;
    char path[PATH_MAX];
};

/* Only copied here; the library is opened after the walk, outside the loader's lock. */
static int blas_find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct blas_find *f = arg;
    const char *path = info->dlpi_name, *base;
    if (!path || !path[0] || strlen(path) >= sizeof f->path)
        return 0;
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(blas_lib_names[f->lib]);
    if (strncmp(base, blas_lib_names[f->lib], n) != 0 || (base[n] != '.' && base[n] != '-'))
        return 0;
    memcpy(f->path, path, strlen(path) + 1);
    return 1;
}

static int blas_resolve_now(int lib)
{
    void *probe = real_dlsym(RTLD_NEXT, blas_lib_probe[lib]);
    if (probe && !blas_in_shim(probe)) {
        blas_fill_from(RTLD_NEXT, lib);
        return 1;
    }
    struct blas_find f = {.lib = lib};
    dl_iterate_phdr(blas_find_loaded, &f);
    void *h = f.path[0] ? dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (!h)
        return 0;
    blas_fill_from(h, lib);
    dlclose(h); /* NOLOAD took a reference; the program's own keeps it loaded */
    return 1;
}

int real_blas_resolve(int lib)
{
    if (lib < 0 || lib >= BLAS_LIB_COUNT)
        return 0;
    if (__atomic_load_n(&blas_state[lib], __ATOMIC_ACQUIRE))
        return 1;
    if (blas_resolving)
        return 0;
    blas_resolving = 1;
    if (blas_resolve_now(lib))
        __atomic_store_n(&blas_state[lib], 1, __ATOMIC_RELEASE);
    blas_resolving = 0;
    return __atomic_load_n(&blas_state[lib], __ATOMIC_ACQUIRE);
}

void *real_blas_dlsym(void *handle, const char *name, void *wrapper)
{
    void *fn = real_dlsym(handle, name);
    if (!fn || blas_in_shim(fn))
        return fn;
    for (size_t i = 0; i < MS_ARRAY_LEN(blas_slots); i++) {
        if (strcmp(blas_slots[i].sym, name) != 0)
            continue;
        blas_slot_fill(&blas_slots[i], fn);
        /* A handle that has one function of the library has the rest (and, for libcublas,
         * its dependency libcublasLt): the program may never look those up itself. */
        blas_fill_from(handle, blas_slots[i].lib);
        int ours = __atomic_load_n(blas_slot_ptr(&blas_slots[i]), __ATOMIC_ACQUIRE) == fn;
        log_debug("dlsym %s: %s", name, ours ? "memshim wrapper" : "real");
        return ours ? wrapper : fn;
    }
    return fn;
}
