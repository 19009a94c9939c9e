#include "physmem.h"

#include "rangeset.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Sparse: only touched pages use memory. Device and host handles share the file. */
#define FILE_BYTES (1ull << 40)

static struct {
    pthread_mutex_t lock;
    int fd;
    struct rangeset free;
} pm = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};
static pthread_once_t pm_once = PTHREAD_ONCE_INIT;

static void create_file(void)
{
    int fd = memfd_create("simcuda-physmem", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)FILE_BYTES) != 0 ||
        !rangeset_init(&pm.free, 0, FILE_BYTES)) {
        fprintf(stderr, "simcuda: cannot create the physical memory file\n");
        if (fd >= 0)
            close(fd);
        return;
    }
    pm.fd = fd;
}

int physmem_fd(void)
{
    pthread_once(&pm_once, create_file);
    return pm.fd;
}

bool physmem_alloc(uint64_t size, uint64_t *offset)
{
    if (physmem_fd() < 0)
        return false;
    pthread_mutex_lock(&pm.lock);
    bool ok = rangeset_alloc(&pm.free, size, 4096, offset);
    pthread_mutex_unlock(&pm.lock);
    return ok;
}

void physmem_free(uint64_t offset, uint64_t size)
{
    fallocate(pm.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)size);
    pthread_mutex_lock(&pm.lock);
    rangeset_release(&pm.free, offset, size);
    pthread_mutex_unlock(&pm.lock);
}
