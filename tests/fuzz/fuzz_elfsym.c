/* libFuzzer target: symbol tables of an ELF image (shim/util/elfsym.c, elfsym_index.c). Any
 * bytes are read within bounds, and the index answers every address as a plain search of the
 * whole table does (tests/unit/elfsym_reference.h: for functions, the first in table order
 * holding the address; for dladdr's kind, the defined, non-TLS symbol starting nearest below
 * it, the first in table order among equals). libFuzzer's copy of the input is aligned as
 * malloc aligns, as a mapped image is.
 *
 * Seed: corpus/elfsym/small.so (3 KB: both tables, an alias, a static function, data, a TLS
 * symbol), built by `gcc -shared -fPIC -O1 -nostdlib -Wl,-z,noseparate-code
 * -Wl,-z,max-page-size=16 -Wl,-z,norelro` from two exported functions, one an alias, a
 * noinline static helper, an array and a __thread int. */
#include "../unit/elfsym_reference.h"
#include "elfsym.h"
#include "elfsym_index.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void *fz_map(size_t bytes)
{
    return malloc(bytes);
}

static void fz_unmap(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

static const struct elfsym_mem fz_mem = {fz_map, fz_unmap};

static void fz_check(const struct elfsym_index *x, enum elfsym_which w, uint64_t vaddr)
{
    if (elfsym_index_find(x, vaddr) != elfsym_reference_find(&x->tab, w, vaddr))
        abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    for (int w = ELFSYM_FULL; w <= ELFSYM_DYNAMIC; w++) {
        struct elfsym_index x;
        if (elfsym_index_build(&x, data, size, (enum elfsym_which)w, &fz_mem) != 0)
            continue;
        for (size_t i = 0; i < x.tab.count && i < 64; i++) {
            const Elf64_Sym *s = &x.tab.syms[i];
            uint64_t probes[] = {s->st_value,
                                 s->st_value - 1,
                                 s->st_value + 1,
                                 s->st_value + s->st_size - 1,
                                 s->st_value + s->st_size,
                                 UINT64_MAX,
                                 0};
            for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++)
                fz_check(&x, (enum elfsym_which)w, probes[p]);
        }
        elfsym_index_release(&x, &fz_mem);
    }
    return 0;
}
