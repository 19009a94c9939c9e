/* elfsym_cache: see elfsym_cache.h. */
#include "elfsym_cache.h"

#include "elfsym.h"

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
};

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

static const struct elfsym_image *elfsym_image_of(const char *path)
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

const char *elfsym_cache_name(const char *path, uint64_t vaddr, uint64_t *offset)
{
    if (!path || !*path)
        return NULL;
    pthread_mutex_lock(&elfsym_mutex);
    const struct elfsym_image *im = elfsym_image_of(path);
    uint64_t off;
    const char *n = im && im->data ? elfsym_in_image(im->data, im->size, vaddr, &off) : NULL;
    if (n && offset)
        *offset = off;
    pthread_mutex_unlock(&elfsym_mutex);
    return n;
}

void elfsym_cache_atfork_child(void)
{
    pthread_mutex_init(&elfsym_mutex, NULL);
}
