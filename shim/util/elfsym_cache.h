/* elfsym_cache: names from the symbol tables of loaded modules' files, for the call sites: the
 * exported symbol dladdr would give (without dladdr's scan of the whole table), and the full
 * table's function (.symtab: static functions too) for the rules. Each module's file is opened
 * and mapped once, on its first lookup, and stays mapped; each table is indexed by address on
 * its first lookup. Called once per new call-site frame, never per allocation. */
#ifndef MEMSHIM_ELFSYM_CACHE_H
#define MEMSHIM_ELFSYM_CACHE_H

#include <stdint.h>

/* The function of module `path` containing `vaddr` (an address as in the file), or NULL;
 * vaddr's offset in it goes to *offset when not NULL. The name stays valid for the life of
 * the process. */
const char *elfsym_cache_name(const char *path, uint64_t vaddr, uint64_t *offset);

/* dladdr's answer for `vaddr` (an address as in the file) of module `path`, from the file's
 * .dynsym: 1 with the symbol's name (valid for the life of the process) and its address as in
 * the file, 0 when no exported symbol holds it, -1 when the file has no dynamic symbol table
 * that can be read (ask dladdr). */
int elfsym_cache_exported(const char *path, uint64_t vaddr, const char **name, uint64_t *start);

/* In a fork child: the lock made anew (a thread of the parent may have held it); the images
 * mapped so far stay valid. */
void elfsym_cache_atfork_child(void);

#endif /* MEMSHIM_ELFSYM_CACHE_H */
