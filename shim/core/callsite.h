/* callsite: the call stack above a CUDA call, interned to a small site id.
 *
 * Frames are captured with libunwind's unw_backtrace (local only, per-thread caching; a stack
 * seen before is recognised by stackmemo without unwinding it again) into a
 * stack buffer, the shim's own frames skipped, and interned as a prefix tree rooted at the
 * outermost frame: a node is (parent, ip) and a site is its innermost node. Each new node is
 * written once to the trace (MST_REC_FRAME) with its module (MST_REC_MODULE, once per module)
 * and symbol (MST_REC_STRING, once per name); known stacks are never symbolized again.
 *
 * Hot path: one hash over the captured vector and one probe of a lock-free table from that
 * hash to the site's node, verified frame by frame; only an unseen stack takes the mutex and
 * walks the uthash tree. Any internal failure (out of memory) degrades to site 0. */
#ifndef MEMSHIM_CALLSITE_H
#define MEMSHIM_CALLSITE_H

#include <stdint.h>

/* Once at load. depth 0 turns capture off (every site is 0). `static_skip`: how many of the
 * innermost frames belong to the shim when it is linked into the program itself (unit tests,
 * benchmarks); in libmemshim.so its frames are recognised by address instead. */
void callsite_init(unsigned depth, unsigned static_skip);
unsigned callsite_depth(void);

/* Capture and intern the current stack. 0 when off or on failure. */
uint32_t callsite_capture(void);
/* Intern a given stack (innermost first), as callsite_capture does after unwinding. */
uint32_t callsite_intern(void *const *ips, int n);

/* Category of a site from the rules (classify_site_from: CLASSIFY_FROM_USER set when the
 * user's file decided), cached on the site: -1 for no rule. */
int callsite_category(uint32_t site);
/* A site for messages: its innermost frames (symbol, else module+offset), up to the first
 * named caller, `a < b < c`; "?" when unknown. */
const char *callsite_describe(uint32_t site, char *buf, unsigned size);

/* One more than the highest site id so far (sites are 1 .. callsite_count() - 1). */
uint32_t callsite_count(void);

/* Forget every site (fork child: the new trace starts its ids again). */
void callsite_reset(void);
void callsite_lock(void);
void callsite_unlock(void);

#endif /* MEMSHIM_CALLSITE_H */
