/* elfsym_cache: see elfsym_cache.h. A new call site names up to 24 frames, and PyTorch's first
 * steps meet thousands: each module's tables are indexed (elfsym_index.h) on their first
 * lookup, in arena memory, and kept. */
#include "elfsym_cache.h"

#include "arena.h"
#include "elfsym.h"
#include "elfsym_index.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELFSYM_CACHE_MODULES 256

struct elfsym_image {
    const void *data; /* NULL: could not be mapped, not tried again */
    size_t size;
    char path[512];
    struct elfsym_index index[2]; /* by enum elfsym_which */
    uint8_t state[2];             /* 0 not built yet, 1 built, 2 none */
};

static const struct elfsym_mem elfsym_arena = {arena_map, arena_unmap};

static struct elfsym_image elfsym_images[ELFSYM_CACHE_MODULES];
static unsigned elfsym_nimages;
static pthread_mutex_t elfsym_mutex = PTHREAD_MUTEX_INITIALIZER;

static void elfsym_map(struct elfsym_image *im, const char *path)
{
    snprintf(im->path, sizeof im->path, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            im->data = p;
            im->size = (size_t)st.st_size;
        }
    }
    close(fd);
}

static struct elfsym_image *elfsym_image_of(const char *path)
{
    for (unsigned i = 0; i < elfsym_nimages; i++)
        if (strcmp(elfsym_images[i].path, path) == 0)
            return &elfsym_images[i];
    if (elfsym_nimages == ELFSYM_CACHE_MODULES)
        return NULL;
    struct elfsym_image *im = &elfsym_images[elfsym_nimages++];
    elfsym_map(im, path);
    return im;
}

/* Built on first use, under elfsym_mutex; NULL when the image has no such table (or there is
 * no memory for its index). For PyTorch's libtorch_cpu.so the full table's index is 4.8 MB
 * (400,000 functions), built in about 25 ms. */
static const struct elfsym_index *elfsym_index_of(struct elfsym_image *im, enum elfsym_which w)
{
    if (im->state[w] == 0)
        im->state[w] =
            im->data && elfsym_index_build(&im->index[w], im->data, im->size, w, &elfsym_arena) == 0
                ? 1
                : 2;
    return im->state[w] == 1 ? &im->index[w] : NULL;
}

/* ---- lookups ---- */

/* The symbol of kind w holding vaddr in the file at path; *x gets the table's index (NULL when
 * the file has no such table). An index is never changed or freed once built, so what it
 * points to may be read after the lock is let go. */
static const Elf64_Sym *elfsym_cache_find(const char *path, enum elfsym_which w, uint64_t vaddr,
                                          const struct elfsym_index **x)
{
    *x = NULL;
    if (!path || !*path)
        return NULL;
    pthread_mutex_lock(&elfsym_mutex);
    struct elfsym_image *im = elfsym_image_of(path);
    *x = im ? elfsym_index_of(im, w) : NULL;
    pthread_mutex_unlock(&elfsym_mutex);
    return *x ? elfsym_index_find(*x, vaddr) : NULL;
}

const char *elfsym_cache_name(const char *path, uint64_t vaddr, uint64_t *offset)
{
    const struct elfsym_index *x;
    const Elf64_Sym *s = elfsym_cache_find(path, ELFSYM_FULL, vaddr, &x);
    if (s && offset)
        *offset = vaddr - s->st_value;
    return s ? elfsym_index_name(x, s) : NULL;
}

int elfsym_cache_exported(const char *path, uint64_t vaddr, const char **name, uint64_t *start)
{
    const struct elfsym_index *x;
    const Elf64_Sym *s = elfsym_cache_find(path, ELFSYM_DYNAMIC, vaddr, &x);
    if (s) {
        *name = elfsym_index_name(x, s);
        *start = s->st_value;
    }
    return !x ? -1 : s != NULL;
}

void elfsym_cache_atfork_child(void)
{
    pthread_mutex_init(&elfsym_mutex, NULL);
}
