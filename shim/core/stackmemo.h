/* stackmemo: unw_backtrace with a memory of the stacks this thread unwound before.
 *
 * A call site is captured on every allocation, and most come from a handful of paths that the
 * program takes again and again at the same stack depth (a training step repeats the previous
 * one). Unwinding costs about 90 instructions a frame; checking that a stack is one seen before
 * costs one load a frame: the return address of each frame is read back from the stack slot
 * where the unwinder found it last time.
 *
 * The memory is keyed by the caller's return address and stack pointer. An entry is used only
 * when every remembered return-address slot still holds the return address found there. Given
 * the same starting point, x86-64 unwinding reads nothing else for frames whose call frame
 * address is the stack pointer plus a constant, which is what compilers emit for fixed-size
 * frames (and for frame-pointer code, where the frame pointer is that same address). A frame
 * sized at run time (alloca) that moved outer frames while leaving every old slot holding its
 * old return address would be mistaken; the entries are learnt only where unw_backtrace and a
 * step-by-step unwind agree. Only the thread's own stack is remembered: a stack the program
 * made (a fiber's) may be freed and another mapped in its place, where an old slot could be
 * unmapped. Tables are per thread, from the arena, reused after a thread exits. */
#ifndef MEMSHIM_STACKMEMO_H
#define MEMSHIM_STACKMEMO_H

#include <stdint.h>

/* At load: the most frames a call will ask for (0: no memory, every call unwinds). Only the
 * first call counts. */
void stackmemo_init(unsigned max_frames);

/* fork child: the lock of the tables freed by exited threads, which another thread of the
 * parent may have held, is free. The tables stay: the child's stacks are the parent's. */
void stackmemo_atfork_child(void);

/* The return addresses of up to `want` frames, the caller's own first (frame 0 is in the
 * function that called this one), as unw_backtrace called there reports them; at most 128.
 * Frames found. `*frames` says where they are: in `ips`, or, for a remembered stack, in the
 * table (valid until this thread's next call), which a caller that derives what it needs from
 * `*chain` alone never has to copy.
 * `*chain`: 0, or a number naming this stack as remembered: two calls that get the same
 * nonzero number got the same frames (what a caller derives from them can be kept under it).
 * `hint`: NULL, or the `*frames` of an earlier call on this thread that got a remembered stack
 * (not its own `ips`): the caller's guess of this call's stack, checked first. A wrong or stale
 * guess costs a check, never a wrong answer. */
int stackmemo_backtrace(void **ips, int want, uint64_t *chain, void *const **frames,
                        void *const *hint);
/* Start fetching what checking a remembered stack will read (its entry in the table), given
 * the `frames` a call for `want` frames got: the caller's guess of its next capture. Any
 * pointer is harmless, a stale one only wasted. */
void stackmemo_prefetch(void *const *frames, int want);

#endif /* MEMSHIM_STACKMEMO_H */
