/* arena: memory for the shim's own tables, taken from mmap and never from the application's
 * heap, because the shim runs while CUDA calls (and their locks) are in flight. Small objects
 * are bump-allocated and never freed (tables grow; nodes are recycled by their owners); large
 * blocks (hash bucket arrays, trace buffers) are mapped and unmapped whole. */
#ifndef MEMSHIM_ARENA_H
#define MEMSHIM_ARENA_H

#include <stddef.h>

/* Zeroed, 16-byte aligned, never freed; NULL when the system is out of memory. Thread-safe. */
void *arena_alloc(size_t size);
/* The same, aligned to `align` (a power of two): a table whose entries must not straddle lines. */
void *arena_alloc_aligned(size_t size, size_t align);
/* One of at most `max` tables counted by *made (a thread's own, never freed: threads past the
 * limit go without), as arena_alloc_aligned; NULL past the limit or out of memory. */
void *arena_alloc_counted(_Atomic unsigned *made, unsigned max, size_t size, size_t align);
/* Zeroed, page-aligned block of its own mapping. */
void *arena_map(size_t size);
void arena_unmap(void *p, size_t size);

/* Bytes mapped for small objects so far (for tests and the exit summary). */
size_t arena_bytes(void);
/* fork child: a chunk another thread was mapping is given up (the flag it held is freed). */
void arena_atfork_child(void);

#endif /* MEMSHIM_ARENA_H */
