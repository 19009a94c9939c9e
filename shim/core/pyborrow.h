/* pyborrow: the Python frames a thread without any borrows from the thread waiting on it.
 *
 * A framework's worker thread (PyTorch's autograd threads, which run backward without the
 * GIL) allocates on behalf of a Python thread that is blocked in a C call until the work is
 * done: its Python stack is the one that says where the allocation comes from. A thread whose
 * name starts with the configured prefix, when exactly one thread of the interpreter has the
 * configured function as its innermost Python frame, gets that thread's frames.
 *
 * The other thread's frames cannot be read through the C API without the GIL (it creates
 * frame objects), so they are read raw, with the layout of CPython 3.11, 3.12 or 3.13
 * (PyThreadState, the interpreter frame, the code object, compact ASCII strings). Each read
 * goes through process_vm_readv on the process itself: a pointer that went stale (a thread
 * state freed, a frame popped) gives an error or old bytes, never a fault, and every code
 * object is checked to be one (its type is PyCode_Type). The layout is checked against the C
 * API on a thread holding the GIL (its own frame read both ways), or first, where a thread
 * without the GIL comes earlier, on that thread's own chain read through process_vm_readv;
 * until one passes nothing is read raw, and when the API disagrees raw reads are off for the
 * process.
 *
 * The same layout reads a thread's own frames where it released the GIL around a C call (a
 * hook runs inside one): directly, since the thread itself is the one that could change them,
 * and it is busy in the call. PyTorch releases the GIL around every operator, so without this
 * no tensor of a forward pass would have a Python frame.
 *
 * Cost: on a borrowing thread, nothing while the work it does is the same (pass_id); else one
 * process_vm_readv (the lender's innermost frame pointer and all its frames, compared with the
 * chain this thread saw last); only a different chain (a new backward() call site) walks the
 * thread list and reads code objects. Other threads pay one test of a flag. */
#ifndef MEMSHIM_PYBORROW_H
#define MEMSHIM_PYBORROW_H

#include <stddef.h>
#include <stdint.h>

#define PYBORROW_MAX_FRAMES 64

struct pyborrow_frame {
    uintptr_t code; /* the code object, checked to be one when read */
    int lasti;      /* the instruction's byte offset, as PyFrame_GetLasti gives it */
};

/* Resolves the layout of the process's CPython (3.11-3.13), for reads of a thread's own frames
 * where it released the GIL; they start once the layout passed its check. Idempotent. */
void pyborrow_init(void);

/* Threads named `thread_prefix`... borrow from the thread whose innermost Python function is
 * `function` (its co_qualname). Takes effect after the check against the C API. A process
 * without a supported CPython keeps borrowing off. Called once; later calls are ignored.
 * `pass_id` (optional) names, on a borrowing thread, the piece of work it does for the lender
 * (PyTorch's graph task id), -1 when it cannot tell: while it stays the same the lender is
 * still waiting in the same call, so the frames read for it are used again without a read. */
void pyborrow_configure(const char *thread_prefix, const char *function, int (*pass_id)(void));

/* Whether the layout still waits for its check against the API (a thread holding the GIL runs
 * it). */
int pyborrow_unchecked(void);

/* The check, on a thread holding the GIL whose innermost complete frame runs `code` at
 * `lasti` (PyFrame_GetLasti; -1 when unknown), `function` being the code's co_qualname. */
void pyborrow_check(void *thread_state, uintptr_t code, int lasti, const char *function);

/* Whether the layout passed its check against the API: then a thread holding the GIL may read
 * its own chain too (pyborrow_own_links), and its frames are the ones the API walks. */
int pyborrow_own_ready(void);
/* Whether this thread borrows (checked, and its name has the prefix). */
int pyborrow_thread(void);

/* The lender's frames, innermost first, in *out (this thread's copy, until its next call):
 * their count (0: no lender, or more than one), at most PYBORROW_MAX_FRAMES. *same is 1 when
 * the chain is exactly the one this thread read last time. */
int pyborrow_frames(const struct pyborrow_frame **out, int *same);

/* One frame of a chain as it lies in memory: its address and its instruction pointer (inside
 * its code object's bytecode, so the pair also tells the code object). */
struct pyborrow_link {
    uintptr_t at, instr;
};

/* The calling thread's own chain, innermost first, up to `max` links, read directly from
 * `thread_state` (its own, PyGILState_GetThisThreadState): for a thread that released the GIL
 * around a C call (PyTorch does around every operator), whose frames the API cannot give
 * without taking the GIL back, and which cannot change until the call returns. Three loads a
 * link, so that a caller can tell a chain it met before. 0 until the layout passed its check.
 * `guess` (NULL when nguess is 0): the chain the caller expects, `nguess` links as this
 * function gave them. *same is 1 when the chain is exactly that one, and then `links` is left
 * as it was; else the chain is in `links`. */
int pyborrow_own_links(void *thread_state, struct pyborrow_link *links, int max,
                       const struct pyborrow_link *guess, int nguess, int *same);

/* The frames the interpreter would show among links[0..n) from pyborrow_own_links, innermost
 * first, up to `max`: their count. */
int pyborrow_own_frames(const struct pyborrow_link *links, int n, struct pyborrow_frame *out,
                        int max);

/* The code object's co_filename and co_qualname, read raw; 0 when either is not a compact
 * ASCII string. Only for a code object pyborrow_frames just returned. */
int pyborrow_names(uintptr_t code, char *file, size_t file_size, char *function,
                   size_t function_size);

/* The source line of `lasti` in `code` (PyCode_Addr2Line, which only reads the code object's
 * immutable line table). */
int pyborrow_line(uintptr_t code, int lasti);

#endif /* MEMSHIM_PYBORROW_H */
