/* Calls into memshim's weak app API, switched by --no-tags. */
#include <stdio.h>

#include <memshim/memshim.h>

#include "apptags.h"

static bool enabled;

void apptags_enable(bool on)
{
    enabled = on;
}

void apptags_push(const char *category)
{
    if (enabled && MEMSHIM_TAG_PUSH(category) != 0)
        fprintf(stderr, "mlp-train: memshim refused the category '%s'\n", category);
}

void apptags_pop(void)
{
    if (enabled)
        MEMSHIM_TAG_POP();
}

void apptags_step_begin(uint64_t step)
{
    if (enabled)
        MEMSHIM_STEP_BEGIN(step);
}
