/* pystack: the Python frames of the thread making a CUDA call.
 *
 * Only CPython's exported C API is used, resolved once with dlsym in the process (libpython,
 * or a python executable that exports it); nothing is linked and no Python header is needed.
 * Each frame becomes a 64-bit key that cannot be a return address (bit 63 set): the code
 * object's small id and the line. callsite interns keys exactly like return addresses, and
 * asks pystack_describe for the file and function once per new frame node.
 *
 * Cost: a few calls per frame into the interpreter plus one lock-free probe per code object;
 * a code object seen for the first time is named once (co_filename, co_qualname or co_name)
 * and kept alive by a reference, so its address is never reused for another one.
 *
 * The Python calls may allocate on the interpreter's heap (frame objects are created on
 * demand). That is allowed because the capture runs in track_alloc_begin, before the real
 * CUDA call, with the GIL held by this thread: no CUDA call is in flight, and the interpreter
 * is in a state where C code may call it.
 *
 * A thread that released the GIL around the call it is in (PyTorch does around every
 * operator) has its frames read raw instead (pyborrow.h), and so has a worker that borrows
 * another thread's (PyTorch's autograd threads). */
#ifndef MEMSHIM_PYSTACK_H
#define MEMSHIM_PYSTACK_H

#include <stdint.h>

/* MEMSHIM_PY_STACKS values, in the order of their words (`1` and `0` mean on and off). */
enum { PYSTACK_AUTO, PYSTACK_ON, PYSTACK_OFF, PYSTACK_ON_1, PYSTACK_OFF_0 };

#define PYSTACK_KEY_BIT   (1ull << 63)
#define PYSTACK_MAX_FILES (1u << 16) /* file ids are below this */

/* Once at load: remember the mode. The API itself is looked up at the first capture, when the
 * interpreter is surely loaded. */
void pystack_init(int mode);

/* Write up to `max` frame keys, innermost first. 0 when off, when the thread runs no Python
 * code, or when it does not hold the GIL and its frames cannot be read raw. */
int pystack_capture(uint64_t *keys, int max);
/* The same without a copy. `hint`: the `chain` of an earlier capture of this thread that this
 * one likely repeats (NULL: none), compared first as the frames are read. A thread holding the
 * GIL reads its own chain raw too once the layout passed its check against the API, and a
 * chain met before gives the keys the API gave for it, without calling the API. */
struct pystack_keys {
    const uint64_t *keys; /* `buf`, or this thread's own copy until its next capture */
    uint64_t token;       /* nonzero when known: this thread's captures with it gave these keys */
    const void *chain;    /* the thread's own chain as met (NULL: none), for a later hint */
};
int pystack_capture_ref(uint64_t *buf, int max, const void *hint, struct pystack_keys *out);

static inline int pystack_is_key(uint64_t ip)
{
    return (ip & PYSTACK_KEY_BIT) != 0;
}

/* Whether `ip` lies in the interpreter (the object exporting the API): native frames from
 * there outwards are the interpreter's, which the Python frames replace. */
int pystack_in_interpreter(uint64_t ip);

/* The frame behind a key: its source file (with a small id, 1.., the same for every code
 * object of one file), function and line. -1 for an unknown key. Strings stay valid. */
int pystack_describe(uint64_t key, const char **file, uint32_t *file_id, const char **function,
                     uint32_t *line);

/* Whether the API was found (after the first capture). For tests and the debug log. */
int pystack_available(void);

#endif /* MEMSHIM_PYSTACK_H */
