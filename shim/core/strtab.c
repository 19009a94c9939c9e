/* strtab: a uthash table by content under one mutex (interning is a slow path: new symbols,
 * phase pushes), its memory from the arena; see strtab.h. */
#include "strtab.h"

#include "arena.h"
#include "classify.h"
#include "log.h"
#include "trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "uthash_arena.h"

struct strtab_node {
    struct strtab_entry e;
    UT_hash_handle hh;
};

static struct strtab_node *strtab_table;
static uint32_t strtab_next_id = 1;
static pthread_mutex_t strtab_mutex = PTHREAD_MUTEX_INITIALIZER;

void strtab_lock(void)
{
    pthread_mutex_lock(&strtab_mutex);
}

void strtab_unlock(void)
{
    pthread_mutex_unlock(&strtab_mutex);
}

static struct strtab_node *strtab_add(const char *s, size_t len)
{
    struct strtab_node *n = arena_alloc(sizeof *n + len + 1);
    if (!n)
        return NULL;
    char *copy = (char *)(n + 1);
    memcpy(copy, s, len);
    n->e.str = copy;
    n->e.len = (uint16_t)len;
    n->e.phase_category = -2;
    int failed = 0;
    HASH_ADD_KEYPTR_OOM(hh, strtab_table, copy, len, n, failed);
    if (failed)
        return NULL; /* the node stays in the arena, unused */
    n->e.id = strtab_next_id++;
    struct mst_rec_string rec = {.id = n->e.id};
    trace_record(MST_REC_STRING, &rec, sizeof rec, copy, len);
    return n;
}

const struct strtab_entry *strtab_intern(const char *s, size_t len)
{
    if (len > STRTAB_MAX_LEN)
        len = STRTAB_MAX_LEN;
    struct strtab_node *n;
    strtab_lock();
    HASH_FIND(hh, strtab_table, s, len, n);
    if (!n)
        n = strtab_add(s, len);
    strtab_unlock();
    return n ? &n->e : NULL;
}

int strtab_phase_category(const struct strtab_entry *e)
{
    /* Benign race: two threads may compute the same value. */
    int16_t c = __atomic_load_n(&e->phase_category, __ATOMIC_RELAXED);
    if (c == -2) {
        c = (int16_t)classify_phase_from(e->str);
        __atomic_store_n((int16_t *)&e->phase_category, c, __ATOMIC_RELAXED);
    }
    return c;
}

void strtab_reset(void)
{
    /* The old nodes and buckets are abandoned: after fork another thread may have held them. */
    strtab_table = NULL;
    strtab_next_id = 1;
    pthread_mutex_init(&strtab_mutex, NULL);
}
