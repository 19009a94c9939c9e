/* mapping: every accessible range of device address space and what backs it.
 * The single answer to "what is at this device address" for frees, copies, pointer
 * attributes and address-range queries. Callers lock around compound operations. */
#ifndef SIMCU_MAPPING_H
#define SIMCU_MAPPING_H

#include <cuda.h>

#include <stdbool.h>
#include <stdint.h>

enum mapping_kind {
    MAPPING_ALLOC,   /* cuMemAlloc, cuMemAllocPitch, stream-ordered and pool allocations */
    MAPPING_MANAGED, /* cuMemAllocManaged */
    MAPPING_VMM,     /* a cuMemMap of a cuMemCreate handle */
    MAPPING_PINNED,  /* page-locked host memory from cuMemHostAlloc (outside the device range) */
    MAPPING_HOST_REGISTERED, /* host memory the program registered with cuMemHostRegister */
};

struct vmm_handle;

struct mapping {
    uint64_t base;
    uint64_t size;    /* bytes the caller asked for (a VMM mapping: the mapped size) */
    uint64_t span;    /* address space held, page-rounded */
    uint64_t charged; /* bytes counted against capacity (0 for VMM: the handle is charged) */
    enum mapping_kind kind;
    int prot;                  /* PROT_* the range currently has */
    struct vmm_handle *handle; /* MAPPING_VMM */
    CUmemoryPool pool;         /* MAPPING_ALLOC from a pool, else NULL */
    unsigned long long id;     /* unique, for CU_POINTER_ATTRIBUTE_BUFFER_ID */
};

void mapping_lock(void);
void mapping_unlock(void);

/* The following need the lock held. */
bool mapping_insert(struct mapping *m); /* assigns m->id */
/* The mapping containing addr, or NULL. Valid until the lock is dropped. */
struct mapping *mapping_find(uint64_t addr);
/* The mapping starting exactly at base, removed into *out. */
bool mapping_remove(uint64_t base, struct mapping *out);
/* Whether every byte of [addr, addr + size) is mapped with at least prot. */
bool mapping_covers(uint64_t addr, uint64_t size, int prot);
/* Whether any mapping overlaps [addr, addr + size). */
bool mapping_overlaps(uint64_t addr, uint64_t size);

#endif
