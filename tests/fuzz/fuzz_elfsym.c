/* libFuzzer target: symbol tables of an ELF image (shim/util/elfsym.c, elfsym_index.c). Any
 * bytes are read within bounds, and the index answers every address as a plain search of the
 * whole table does (written again here, from the rules the index's header states): for
 * functions, the first in table order holding the address; for dladdr's kind, the defined,
 * non-TLS symbol starting nearest below it, the first in table order among equals.
 *
 * Seed: corpus/elfsym/small.so (3 KB: both tables, an alias, a static function, data, a TLS
 * symbol), built by `gcc -shared -fPIC -O1 -nostdlib -Wl,-z,noseparate-code
 * -Wl,-z,max-page-size=16 -Wl,-z,norelro` from two exported functions, one an alias, a
 * noinline static helper, an array and a __thread int. */
#include "elfsym.h"
#include "elfsym_index.h"

#include <stdlib.h>
#include <string.h>

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

static int fz_holds(const Elf64_Sym *s, uint64_t vaddr)
{
    return s->st_value <= vaddr && vaddr - s->st_value < (s->st_size ? s->st_size : 1);
}

static int fz_named(const struct elfsym_table *t, const Elf64_Sym *s)
{
    return s->st_name < t->strsize && memchr(t->strs + s->st_name, '\0', t->strsize - s->st_name);
}

static const Elf64_Sym *fz_search(const struct elfsym_table *t, enum elfsym_which w, uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < t->count; i++) {
        const Elf64_Sym *s = &t->syms[i];
        int kind = w == ELFSYM_FULL
                       ? ELF64_ST_TYPE(s->st_info) == STT_FUNC
                       : s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) != STT_TLS;
        if (!kind || !fz_holds(s, vaddr) || !fz_named(t, s))
            continue;
        if (w == ELFSYM_FULL)
            return s;
        if (!best || s->st_value > best->st_value)
            best = s;
    }
    return best;
}

static void fz_check(const struct elfsym_index *x, enum elfsym_which w, uint64_t vaddr)
{
    if (elfsym_index_find(x, vaddr) != fz_search(&x->tab, w, vaddr))
        abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* An image is mapped at a page boundary; libFuzzer's copy is aligned as malloc aligns. */
    uint64_t off;
    const char *n = elfsym_in_image(data, size, size > 8 ? data[size - 1] * 16ull : 0, &off);
    if (n && !memchr(n, '\0', size - (size_t)((const unsigned char *)n - data)))
        abort();
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
