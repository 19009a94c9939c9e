/* handle_maps: see handle_maps.h. Linear probing with backward-shift deletion; the table
 * doubles at half full. Out of memory: the handle is not followed, and its release frees at
 * once, as before mappings were counted. */
#include "handle_maps.h"

#include "arena.h"
#include "log.h"

#include <pthread.h>
#include <stddef.h>

#define HANDLE_MAPS_FIRST 256

struct handle_slot {
    uint64_t handle; /* 0: empty (the driver never hands out 0) */
    uint32_t maps;
    uint32_t released;
};

static pthread_mutex_t hm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle_slot *hm_slots;
static size_t hm_cap, hm_used;
static int hm_logged;

static size_t hm_home(uint64_t handle)
{
    uint64_t h = handle * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (hm_cap - 1);
}

static struct handle_slot *hm_find(uint64_t handle)
{
    if (!hm_cap)
        return NULL;
    for (size_t i = hm_home(handle);; i = (i + 1) & (hm_cap - 1)) {
        if (hm_slots[i].handle == handle)
            return &hm_slots[i];
        if (!hm_slots[i].handle)
            return NULL;
    }
}

static struct handle_slot *hm_put(struct handle_slot *slots, size_t cap, uint64_t handle)
{
    size_t i = (size_t)((handle * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
    while (slots[i].handle && slots[i].handle != handle)
        i = (i + 1) & (cap - 1);
    slots[i].handle = handle;
    return &slots[i];
}

static int hm_grow(void)
{
    size_t cap = hm_cap ? hm_cap * 2 : HANDLE_MAPS_FIRST;
    struct handle_slot *slots = arena_map(cap * sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < hm_cap; i++)
        if (hm_slots[i].handle)
            *hm_put(slots, cap, hm_slots[i].handle) = hm_slots[i];
    if (hm_slots)
        arena_unmap(hm_slots, hm_cap * sizeof *hm_slots);
    hm_slots = slots;
    hm_cap = cap;
    return 0;
}

/* Empty slot i, moving later entries of its cluster back so that lookups still find them. */
static void hm_erase(size_t i)
{
    size_t mask = hm_cap - 1;
    hm_slots[i] = (struct handle_slot){0};
    for (size_t j = (i + 1) & mask; hm_slots[j].handle; j = (j + 1) & mask) {
        size_t home = hm_home(hm_slots[j].handle);
        /* j's entry may move to i when i lies cyclically in [home, j). */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            hm_slots[i] = hm_slots[j];
            hm_slots[j] = (struct handle_slot){0};
            i = j;
        }
    }
    hm_used--;
}

void handle_maps_add(uint64_t handle)
{
    if (!handle)
        return;
    pthread_mutex_lock(&hm_lock);
    struct handle_slot *s = hm_find(handle);
    if (!s && (hm_used + 1) * 2 > hm_cap && hm_grow() != 0) {
        if (!hm_logged++)
            log_error("out of memory for the mapping counts; a handle released while mapped "
                      "is counted as freed at its release");
    } else if (!s) {
        s = hm_put(hm_slots, hm_cap, handle);
        s->maps = 0;
        s->released = 0;
        hm_used++;
    }
    if (s)
        s->maps++;
    pthread_mutex_unlock(&hm_lock);
}

int handle_maps_release(uint64_t handle)
{
    pthread_mutex_lock(&hm_lock);
    struct handle_slot *s = hm_find(handle);
    int mapped = s && s->maps > 0;
    if (mapped)
        s->released = 1;
    else if (s)
        hm_erase((size_t)(s - hm_slots));
    pthread_mutex_unlock(&hm_lock);
    return mapped;
}

int handle_maps_remove(uint64_t handle)
{
    pthread_mutex_lock(&hm_lock);
    struct handle_slot *s = hm_find(handle);
    int last = 0;
    if (s && s->maps > 0 && --s->maps == 0 && s->released) {
        last = 1;
        hm_erase((size_t)(s - hm_slots));
    }
    pthread_mutex_unlock(&hm_lock);
    return last;
}

void handle_maps_reset(void)
{
    /* In a fork child another thread of the parent may have held the lock: it is made anew,
     * never waited on, and the table is cleared (the child has no mappings of its own). */
    pthread_mutex_init(&hm_lock, NULL);
    for (size_t i = 0; i < hm_cap; i++)
        hm_slots[i] = (struct handle_slot){0};
    hm_used = 0;
}
