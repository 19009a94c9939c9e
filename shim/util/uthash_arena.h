/* uthash_arena: include uthash with its tables in the shim's arena (never the application's
 * heap) and HASH_NONFATAL_OOM, so a failed growth degrades instead of calling exit(). Use
 * HASH_ADD_*_OOM below, which report whether the item went in. */
#ifndef MEMSHIM_UTHASH_ARENA_H
#define MEMSHIM_UTHASH_ARENA_H

#include "arena.h"

#ifndef HASH_NONFATAL_OOM
#define HASH_NONFATAL_OOM 1
#endif
#define uthash_malloc(sz)    arena_map(sz)
#define uthash_free(ptr, sz) arena_unmap((ptr), (sz))
/* Set by uthash when an add could not allocate; read by the _OOM macros below. */
#define uthash_nonfatal_oom(obj) (uthash_arena_failed = 1)

#include <uthash.h>

/* With HASH_NONFATAL_OOM uthash rolls an add back when it cannot allocate; `failed` says so. */
#define HASH_ADD_KEYPTR_OOM(hh, head, keyptr, keylen, add, failed)                                 \
    do {                                                                                           \
        int uthash_arena_failed = 0;                                                               \
        HASH_ADD_KEYPTR(hh, head, keyptr, keylen, add);                                            \
        (failed) = uthash_arena_failed;                                                            \
    } while (0)

#define HASH_ADD_OOM(hh, head, fieldname, keylen, add, failed)                                     \
    do {                                                                                           \
        int uthash_arena_failed = 0;                                                               \
        HASH_ADD(hh, head, fieldname, keylen, add);                                                \
        (failed) = uthash_arena_failed;                                                            \
    } while (0)

#endif /* MEMSHIM_UTHASH_ARENA_H */
