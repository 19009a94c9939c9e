/* api: the optional application API of include/memshim/memshim.h, exported by libmemshim. */
#include "memshim/memshim.h"

#include "real.h"
#include "track.h"

MS_EXPORT int memshim_tag_push(const char *category)
{
    return category ? track_tag_push(category) : -1;
}

MS_EXPORT void memshim_tag_pop(void)
{
    track_tag_pop();
}

MS_EXPORT void memshim_step_begin(uint64_t n)
{
    track_step(n);
}

MS_EXPORT void memshim_flush(void)
{
    track_flush();
}
