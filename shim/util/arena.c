/* arena: see arena.h. A lock-free bump pointer within chunks of 2 MiB (or a multiple), each on
 * a huge page where the system gives them for the asking (transparent huge pages in `madvise`
 * mode): the per-thread tables a hook reads (launches, stacks, shapes) are each touched once a
 * step, at scattered places, after the framework has pushed their translations out of the TLB,
 * and a page walk under a hypervisor costs several misses of its own. A chunk is then resident
 * whole once touched, where 4 KiB pages were resident one by one. A new chunk is mapped under a
 * spin flag by the thread that overflows the current one. */
#include "arena.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sched.h>

#define ARENA_HUGE (2u << 20) /* x86-64's and most arm64 kernels' huge page */

struct arena_chunk {
    _Atomic size_t used;
    size_t size;
    char *base;
};

static _Atomic(struct arena_chunk *) arena_current;
static atomic_flag arena_growing = ATOMIC_FLAG_INIT;
static _Atomic size_t arena_total;

void *arena_map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void arena_unmap(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

/* `size` (a multiple of ARENA_HUGE) on a boundary of ARENA_HUGE: mapped with room to align,
 * then trimmed. Huge pages are asked for, never required (madvise may fail: mode `never`). */
static char *arena_map_huge(size_t size)
{
    char *raw = arena_map(size + ARENA_HUGE);
    if (!raw)
        return NULL;
    char *mem = (char *)(((uintptr_t)raw + ARENA_HUGE - 1) & ~(uintptr_t)(ARENA_HUGE - 1));
    if (mem > raw)
        munmap(raw, (size_t)(mem - raw));
    munmap(mem + size, (size_t)(raw + ARENA_HUGE - mem));
    madvise(mem, size, MADV_HUGEPAGE);
    return mem;
}

static struct arena_chunk *arena_grow(struct arena_chunk *seen, size_t need)
{
    while (atomic_flag_test_and_set_explicit(&arena_growing, memory_order_acquire))
        sched_yield();
    struct arena_chunk *cur = atomic_load(&arena_current);
    if (cur == seen) {
        /* a chunk: the block and its header in whole huge pages, at least one */
        size_t size =
            (need + sizeof(struct arena_chunk) + 64 + ARENA_HUGE - 1) & ~(size_t)(ARENA_HUGE - 1);
        char *mem = arena_map_huge(size);
        if (mem) {
            struct arena_chunk *c = (struct arena_chunk *)mem;
            c->size = size;
            c->base = mem;
            atomic_store(&c->used, (sizeof(struct arena_chunk) + 15) & ~(size_t)15);
            atomic_fetch_add(&arena_total, size);
            atomic_store(&arena_current, c);
            cur = c;
        } else {
            cur = NULL;
        }
    }
    atomic_flag_clear_explicit(&arena_growing, memory_order_release);
    return cur;
}

void *arena_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct arena_chunk *c = atomic_load(&arena_current);
    for (;;) {
        if (c) {
            size_t off = atomic_fetch_add(&c->used, size);
            if (off + size <= c->size)
                return c->base + off;
        }
        c = arena_grow(c, size);
        if (!c)
            return NULL;
    }
}

void *arena_alloc_aligned(size_t size, size_t align)
{
    char *p = arena_alloc(size + (align > 16 ? align - 16 : 0));
    return p ? (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1)) : NULL;
}

void *arena_alloc_counted(_Atomic unsigned *made, unsigned max, size_t size, size_t align)
{
    return atomic_fetch_add(made, 1) < max ? arena_alloc_aligned(size, align) : NULL;
}

size_t arena_bytes(void)
{
    return atomic_load(&arena_total);
}

void arena_atfork_child(void)
{
    atomic_flag_clear(&arena_growing);
}
