/* elfsym: name the function at an address of an ELF file from its full symbol table. Only for
 * messages on cold paths (the OOM screen): dladdr sees exported symbols alone, and the static
 * functions of a program are what tells its call sites apart. Opens and maps the file each
 * call; no allocation. */
#ifndef MEMSHIM_ELFSYM_H
#define MEMSHIM_ELFSYM_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* `vaddr` is an address as in the file (runtime address minus the load bias). Writes the
 * name of the function containing it and vaddr's offset in it; 0 when found, -1 otherwise. */
int elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t size, uint64_t *offset);

/* The same in an ELF file already in memory: the name (inside `data`, NUL-terminated) of the
 * function containing vaddr, or NULL. */
const char *elfsym_in_image(const void *data, size_t size, uint64_t vaddr, uint64_t *offset);

/* One symbol table of an ELF image in memory, its bounds checked against the image. */
struct elfsym_table {
    const Elf64_Sym *syms;
    size_t count;
    const char *strs;
    uint64_t strsize;
};

enum elfsym_which {
    ELFSYM_FULL,    /* .symtab, else .dynsym: the functions elfsym_in_image names */
    ELFSYM_DYNAMIC, /* .dynsym: the exported symbols dladdr searches */
};

/* 0 and the table in *t when the image has one of that kind, -1 otherwise. */
int elfsym_table_of(const void *data, size_t size, enum elfsym_which which, struct elfsym_table *t);

#endif /* MEMSHIM_ELFSYM_H */
