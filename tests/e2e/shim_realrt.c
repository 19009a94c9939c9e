/* shim-realrt: loads the toolkit's real libcudart.so.13 (over the stub libcuda.so.1 the test
 * puts on the library path) and makes it initialise, so that it looks up every driver symbol
 * through dlsym. Prints the runtime's return codes, which must not change under the shim. */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        fprintf(stderr, "shim-realrt: %s\n", dlerror());
        return 1;
    }
    int (*cuda_free)(void *) = (int (*)(void *))dlsym(rt, "cudaFree");
    int (*device_count)(int *) = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
    int (*runtime_version)(int *) = (int (*)(int *))dlsym(rt, "cudaRuntimeGetVersion");
    if (!cuda_free || !device_count || !runtime_version)
        return 1;
    int n = -1, v = -1;
    printf("cudaFree(0) %d\n", cuda_free(NULL));
    int rc = device_count(&n);
    printf("cudaGetDeviceCount %d %d\n", rc, n);
    rc = runtime_version(&v);
    printf("cudaRuntimeGetVersion %d %d\n", rc, v);
    return 0;
}
