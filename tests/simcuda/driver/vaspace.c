#include "vaspace.h"

#include "rangeset.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>

/* 1 TiB of address space, halved until the kernel grants it. */
#define REGION_BYTES (1ull << 40)
#define REGION_MIN   (1ull << 34)

static struct {
    pthread_mutex_t lock;
    uint64_t base, size;
    struct rangeset free;
} va = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t va_once = PTHREAD_ONCE_INIT;

static void reserve_region(void)
{
    for (uint64_t size = REGION_BYTES; size >= REGION_MIN; size /= 2) {
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            continue;
        /* The first 2 MiB stay unused, so an underrun of the lowest allocation still lands
         * in the reservation and faults instead of touching host memory. */
        if (!rangeset_init(&va.free, (uint64_t)p + (2ull << 20), size - (2ull << 20))) {
            munmap(p, size);
            break;
        }
        va.base = (uint64_t)p;
        va.size = size;
        return;
    }
    fprintf(stderr, "simcuda: cannot reserve device address space\n");
}

static bool ready(void)
{
    pthread_once(&va_once, reserve_region);
    return va.size != 0;
}

uint64_t vaspace_alloc(uint64_t size, uint64_t align)
{
    uint64_t addr = 0;
    if (!ready())
        return 0;
    if (align < VASPACE_PAGE)
        align = VASPACE_PAGE;
    pthread_mutex_lock(&va.lock);
    if (!rangeset_alloc(&va.free, size, align, &addr))
        addr = 0;
    pthread_mutex_unlock(&va.lock);
    return addr;
}

bool vaspace_take(uint64_t addr, uint64_t size)
{
    if (!ready())
        return false;
    pthread_mutex_lock(&va.lock);
    bool ok = rangeset_take(&va.free, addr, size);
    pthread_mutex_unlock(&va.lock);
    return ok;
}

void vaspace_release(uint64_t addr, uint64_t size)
{
    pthread_mutex_lock(&va.lock);
    if (!rangeset_release(&va.free, addr, size))
        fprintf(stderr, "simcuda: address range %#llx+%llu released twice\n",
                (unsigned long long)addr, (unsigned long long)size);
    pthread_mutex_unlock(&va.lock);
}

bool vaspace_contains(uint64_t addr, uint64_t size)
{
    if (!ready())
        return false;
    return addr >= va.base && size <= va.size && addr - va.base <= va.size - size;
}

bool vaspace_map_anon(uint64_t addr, uint64_t size)
{
    void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return p != MAP_FAILED;
}

bool vaspace_map_file(uint64_t addr, uint64_t size, int fd, uint64_t offset)
{
    void *p = mmap((void *)addr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, (off_t)offset);
    return p != MAP_FAILED;
}

bool vaspace_protect(uint64_t addr, uint64_t size, int prot)
{
    return mprotect((void *)addr, size, prot) == 0;
}

bool vaspace_unmap(uint64_t addr, uint64_t size)
{
    void *p = mmap((void *)addr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return p != MAP_FAILED;
}
