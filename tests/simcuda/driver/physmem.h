/* physmem: "physical" memory for VMM handles, as ranges of one sparse memfd.
 * A handle is an offset range of the file; mapping it at several addresses shares the same
 * pages, as mapping one CUmemGenericAllocationHandle twice does on a GPU. Thread-safe. */
#ifndef SIMCU_PHYSMEM_H
#define SIMCU_PHYSMEM_H

#include <stdbool.h>
#include <stdint.h>

/* The backing file, or -1 if it could not be created. */
int physmem_fd(void);
/* Takes size bytes (a multiple of the page size) of the file. */
bool physmem_alloc(uint64_t size, uint64_t *offset);
/* Gives the range back and drops its pages. */
void physmem_free(uint64_t offset, uint64_t size);

#endif
