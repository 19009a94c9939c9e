/* forksafe: the shim across fork(). Every lock the shim takes is either held by the forking
 * thread across the fork (the residency lock: what it guards must be consistent in the child)
 * or re-initialised in the child together with the state it guards (registry shards, call
 * sites, strings, Python frames, the arena's growth flag, cost measurements, the trace ring),
 * so that a child forked while other threads are inside the shim never waits on a lock no
 * thread of its own will release. */
#ifndef MEMSHIM_FORKSAFE_H
#define MEMSHIM_FORKSAFE_H

/* Register the handlers; before track's own, so that its child handler (which allocates from
 * the arena) runs after the arena is usable. */
void forksafe_init(void);

#endif /* MEMSHIM_FORKSAFE_H */
