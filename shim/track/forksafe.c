/* forksafe: see forksafe.h. */
#include "forksafe.h"

#include "arena.h"
#include "elfsym_cache.h"
#include "measure.h"
#include "residency.h"
#include "signal_chain.h"

#include <pthread.h>

static void forksafe_prepare(void)
{
    residency_atfork_prepare();
}

static void forksafe_parent(void)
{
    residency_atfork_parent();
}

static void forksafe_child(void)
{
    arena_atfork_child();
    elfsym_cache_atfork_child();
    measure_atfork_child();
    residency_atfork_child();
    signal_chain_atfork_child();
}

void forksafe_init(void)
{
    static int done;
    if (!done++)
        pthread_atfork(forksafe_prepare, forksafe_parent, forksafe_child);
}
