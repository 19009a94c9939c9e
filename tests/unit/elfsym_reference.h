/* The referee of elfsym_index (shared by test_core_elfsym and fuzz_elfsym): the symbol of kind
 * `w` holding vaddr, found by reading the whole table, by the rules elfsym_index.h states,
 * written again plainly. Functions: the first in table order; dladdr's kind (defined, not
 * thread-local): the one starting nearest below, the first in table order among equals. A
 * symbol of size 0 holds its own address; a name must end inside the table's strings. */
#ifndef MEMSHIM_TEST_ELFSYM_REFERENCE_H
#define MEMSHIM_TEST_ELFSYM_REFERENCE_H

#include "elfsym.h"

#include <string.h>

static inline int elfsym_reference_holds(const Elf64_Sym *s, uint64_t vaddr)
{
    return s->st_value <= vaddr && vaddr - s->st_value < (s->st_size ? s->st_size : 1);
}

static inline int elfsym_reference_named(const struct elfsym_table *t, const Elf64_Sym *s)
{
    return s->st_name < t->strsize &&
           memchr(t->strs + s->st_name, '\0', t->strsize - s->st_name) != NULL;
}

static inline const Elf64_Sym *elfsym_reference_find(const struct elfsym_table *t,
                                                     enum elfsym_which w, uint64_t vaddr)
{
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < t->count; i++) {
        const Elf64_Sym *s = &t->syms[i];
        int kind = w == ELFSYM_FULL
                       ? ELF64_ST_TYPE(s->st_info) == STT_FUNC
                       : s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) != STT_TLS;
        if (!kind || !elfsym_reference_holds(s, vaddr) || !elfsym_reference_named(t, s))
            continue;
        if (w == ELFSYM_FULL)
            return s;
        if (!best || s->st_value > best->st_value)
            best = s;
    }
    return best;
}

#endif /* MEMSHIM_TEST_ELFSYM_REFERENCE_H */
