/* track: interim pass-through implementation of track.h (no ceiling, no trace) so the library
 * links while the core modules land; replaced by the real implementation. */
#include "track.h"

static __thread int track_guard_depth __attribute__((tls_model("initial-exec")));

void track_init(void) {}

void track_device_info(int ordinal, const char *name, uint64_t total_bytes, int cc_major,
                       int cc_minor)
{
    (void)ordinal, (void)name, (void)total_bytes, (void)cc_major, (void)cc_minor;
}

int track_device_known(int ordinal)
{
    (void)ordinal;
    return 1;
}

int track_alloc_begin(struct track_ticket *t, int device, enum mst_alloc_kind kind, uint64_t bytes,
                      uint64_t requested)
{
    *t = (struct track_ticket){
        .bytes = bytes, .requested = requested, .kind = (uint8_t)kind, .device = (uint8_t)device};
    return 0;
}

void track_alloc_end(struct track_ticket *t, int ok, int oom, uint64_t addr, uint64_t stream)
{
    (void)t, (void)ok, (void)oom, (void)addr, (void)stream;
}

int track_free(uint64_t addr, enum mst_alloc_kind kind, uint64_t stream)
{
    (void)addr, (void)kind, (void)stream;
    return 0;
}

void track_map(int device, uint64_t addr, uint64_t size, uint64_t handle)
{
    (void)device, (void)addr, (void)size, (void)handle;
}

void track_unmap(int device, uint64_t addr, uint64_t size)
{
    (void)device, (void)addr, (void)size;
}

void track_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    (void)device, (void)free_bytes, (void)total_bytes;
}

void track_phase_push(const char *name)
{
    (void)name;
}

void track_phase_pop(void) {}

void track_step(uint64_t n)
{
    (void)n;
}

int track_tag_push(const char *category)
{
    (void)category;
    return 0;
}

void track_tag_pop(void) {}

void track_flush(void) {}

int track_guard_enter(void)
{
    if (track_guard_depth)
        return 0;
    track_guard_depth = 1;
    return 1;
}

void track_guard_leave(void)
{
    track_guard_depth = 0;
}
