/* libFuzzer target for simcuda's fat-binary reader (tests/simcuda/driver/fatbin.c): the input is
 * a kernel name, a NUL, then a fat-binary container of nvcc's. Whatever the headers, cubins and
 * attributes claim, no byte outside the input may be read and every layout it returns must be
 * consistent (each parameter inside the total). Seeds: tests/fuzz/corpus/fatbin, containers of
 * tests/simcuda/fatbin's program, plain and zstd-compressed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size < 256 ? size : 256);
    if (!nul)
        return 0;
    size_t skip = (size_t)(nul - data) + 1;
    if (skip == size)
        return 0;
    /* A copy of exactly its size: a read past its end is the sanitizer's to catch. */
    uint8_t *c = malloc(size - skip);
    if (!c)
        return 0;
    memcpy(c, data + skip, size - skip);
    struct fatbin_params p;
    if (fatbin_params_in(c, size - skip, (const char *)data, &p) == 0) {
        for (int i = 0; i < p.n; i++)
            if (p.offsets[i] + p.sizes[i] > p.total)
                abort();
        free(p.offsets);
        free(p.sizes);
    }
    free(c);
    return 0;
}
