/* torch_alloc: the tensors of PyTorch's CUDA caching allocator, seen from inside its segments.
 *
 * The allocator's own functions are hidden in libc10_cuda.so, so they cannot be interposed;
 * the library does export the allocator object (c10::cuda::CUDACachingAllocator::allocator,
 * an atomic pointer), and every CUDA tensor PyTorch creates is allocated through a virtual
 * call on it. Once, at the first CUDA call the shim sees, the object gets a copy of its
 * virtual table with two slots replaced: `allocate` (records the tensor, and hands out our
 * deleter in place of the allocator's) and `raw_deleter` (answers our deleter, so code that
 * compares a DataPtr's deleter with the allocator's still agrees). Our deleter records the
 * tensor's return and calls the allocator's. Everything this relies on is checked first,
 * and again at the first allocation; on any mismatch the object gets its own table back and
 * memshim says so in one line: segments are then recorded as before, nothing else changes.
 *
 * The module also tells pystack which threads are PyTorch's autograd threads and where
 * the thread that called backward() waits (shim/core/pyborrow.h), and links each tensor to
 * PyTorch's autograd node (MST_REC_AUTOGRAD): the node a backward tensor was allocated by, the
 * node a forward tensor was the first one after.
 *
 * All knowledge of PyTorch's layout lives in this module. A process without PyTorch pays one
 * dlopen(RTLD_NOLOAD) at its first CUDA call; without a trace (MEMSHIM_TRACE unset) nothing
 * is patched. */
#ifndef MEMSHIM_TORCH_ALLOC_H
#define MEMSHIM_TORCH_ALLOC_H

/* At a CUDA hook's entry: the first call tries to install (MEMSHIM_TENSORS), later ones
 * return at once. */
void torch_alloc_install(void);

/* Whether the allocator is hooked now (tests, the exit message). */
int torch_alloc_active(void);

#endif /* MEMSHIM_TORCH_ALLOC_H */
