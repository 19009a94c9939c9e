/* elfsym_index: one symbol table of an ELF image indexed by address, so that naming an address
 * bisects instead of reading the whole table. A library's tables are large (PyTorch's
 * libtorch_cpu.so: 546,000 symbols in .symtab, 76,000 in .dynsym), and a linear search, as
 * dladdr makes over .dynsym, costs over half a millisecond a lookup there.
 *
 * The index holds the table's symbols of one kind sorted by address (equal addresses in table
 * order), each with the last byte any symbol at or before it holds: a lookup bisects, then
 * steps back only over symbols that could still hold the address. The answers are those of a
 * search of the whole table: for ELFSYM_FULL the first function in table order that holds the
 * address, for ELFSYM_DYNAMIC the defined symbol starting nearest
 * below it that holds it (dladdr's choice; among aliases of one address, the first in table
 * order, where dladdr takes the first on its hash chain). Memory comes from the caller's
 * functions (the shim's arena: no application heap), 12 bytes a symbol, and twice 16 during
 * the build. */
#ifndef MEMSHIM_ELFSYM_INDEX_H
#define MEMSHIM_ELFSYM_INDEX_H

#include "elfsym.h"

struct elfsym_mem {
    void *(*map)(size_t bytes); /* NULL when out of memory */
    void (*unmap)(void *p, size_t bytes);
};

struct elfsym_index {
    struct elfsym_table tab;
    enum elfsym_which which;
    uint32_t *pos;   /* symbol numbers, by address */
    uint64_t *reach; /* reach[i]: the last byte any of the symbols pos[0..i] holds */
    uint32_t n;
};

/* Index the table of kind `which` of the image (which must stay mapped while the index is
 * used). 0 when built; -1 when the image has no such table, the table no such symbol, or
 * there is no memory (nothing kept). */
int elfsym_index_build(struct elfsym_index *x, const void *data, size_t size,
                       enum elfsym_which which, const struct elfsym_mem *mem);
void elfsym_index_release(struct elfsym_index *x, const struct elfsym_mem *mem);

/* The symbol holding `vaddr` (an address as in the file), or NULL. */
const Elf64_Sym *elfsym_index_find(const struct elfsym_index *x, uint64_t vaddr);

/* A symbol's name, NUL-terminated inside the table's strings, or NULL when it runs off them. */
const char *elfsym_index_name(const struct elfsym_index *x, const Elf64_Sym *s);

#endif /* MEMSHIM_ELFSYM_INDEX_H */
