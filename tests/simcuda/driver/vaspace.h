/* vaspace: the simulated device's virtual address space.
 * One large PROT_NONE reservation; device pointers are addresses inside it. Memory is made
 * accessible only where something is mapped, so a stray access faults as on a GPU.
 * Thread-safe. */
#ifndef SIMCU_VASPACE_H
#define SIMCU_VASPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VASPACE_PAGE 4096ull

/* Takes size bytes of address space aligned to align; 0 when exhausted. */
uint64_t vaspace_alloc(uint64_t size, uint64_t align);
/* Takes exactly [addr, addr + size) if free. */
bool vaspace_take(uint64_t addr, uint64_t size);
/* Returns address space; the range must be unmapped first. */
void vaspace_release(uint64_t addr, uint64_t size);

bool vaspace_contains(uint64_t addr, uint64_t size);

/* Fresh zeroed read-write memory at [addr, addr + size). */
bool vaspace_map_anon(uint64_t addr, uint64_t size);
/* The file range [offset, offset + size) of fd at addr, inaccessible until protected. */
bool vaspace_map_file(uint64_t addr, uint64_t size, int fd, uint64_t offset);
/* prot is PROT_NONE, PROT_READ or PROT_READ | PROT_WRITE. */
bool vaspace_protect(uint64_t addr, uint64_t size, int prot);
/* Back to a PROT_NONE hole; the pages are dropped. */
bool vaspace_unmap(uint64_t addr, uint64_t size);

#endif
