/* elfsym: the symbol tables of an ELF image in memory, found and checked to lie inside it, for
 * naming call-site frames (elfsym_index.h searches them, elfsym_cache.h keeps them): dladdr
 * sees exported symbols alone and reads its whole table per call, and the static functions of
 * a program (in .symtab) are what tells its call sites apart. No allocation. */
#ifndef MEMSHIM_ELFSYM_H
#define MEMSHIM_ELFSYM_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* One symbol table of an ELF image in memory, its bounds checked against the image. */
struct elfsym_table {
    const Elf64_Sym *syms;
    size_t count;
    const char *strs;
    uint64_t strsize;
};

enum elfsym_which {
    ELFSYM_FULL,    /* .symtab, else .dynsym: every function, static ones included */
    ELFSYM_DYNAMIC, /* .dynsym: the exported symbols dladdr searches */
};

/* 0 and the table in *t when the image has one of that kind, -1 otherwise. */
int elfsym_table_of(const void *data, size_t size, enum elfsym_which which, struct elfsym_table *t);

#endif /* MEMSHIM_ELFSYM_H */
