/* elfsym_cache: names from the full symbol table (.symtab) of loaded modules, for the rules.
 * Each module's file is opened and mapped once, on its first lookup, and stays mapped; a
 * lookup then searches the mapping. Called once per call-site frame that dladdr could not
 * name (callsite_category caches per site), never per allocation. */
#ifndef MEMSHIM_ELFSYM_CACHE_H
#define MEMSHIM_ELFSYM_CACHE_H

#include <stdint.h>

/* The function of module `path` containing `vaddr` (an address as in the file), or NULL;
 * vaddr's offset in it goes to *offset when not NULL. The name stays valid for the life of
 * the process. */
const char *elfsym_cache_name(const char *path, uint64_t vaddr, uint64_t *offset);

/* In a fork child: the lock made anew (a thread of the parent may have held it); the images
 * mapped so far stay valid. */
void elfsym_cache_atfork_child(void);

#endif /* MEMSHIM_ELFSYM_CACHE_H */
