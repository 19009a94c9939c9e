/* shim-local: loads shim_local_user (and with it libcudart) RTLD_LOCAL and allocates through
 * it, printing what shim-paths prints (see shim_paths.c) for shim_check.py. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    int (*alloc)(size_t, uintptr_t *) =
        lib ? (int (*)(size_t, uintptr_t *))dlsym(lib, "shim_local_alloc") : NULL;
    int (*release)(uintptr_t) = lib ? (int (*)(uintptr_t))dlsym(lib, "shim_local_free") : NULL;
    uintptr_t addr;
    if (!alloc || !release) {
        fprintf(stderr, "shim-local: %s\n", dlerror());
        return 1;
    }
    int rc = alloc(1000, &addr);
    printf("rc alloc %d\n", rc);
    if (rc != 0)
        return 1;
    printf("alloc 1 1024 0x%" PRIxPTR "\n", addr);
    printf("free 0x%" PRIxPTR "\n", addr);
    printf("rc free %d\n", release(addr));
    return 0;
}
