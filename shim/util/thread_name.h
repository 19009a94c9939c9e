/* thread_name: the calling thread's name, as the kernel keeps it (prctl PR_GET_NAME), which is
 * how the shim recognises a framework's own threads (PyTorch's autograd engine names them
 * pt_autograd_<device>) and what it writes in a thread's trace record. A system call: callers
 * ask once per thread and keep the answer. */
#ifndef MEMSHIM_THREAD_NAME_H
#define MEMSHIM_THREAD_NAME_H

#define THREAD_NAME_MAX 16 /* a thread name's room, with its NUL */

/* The calling thread's name, NUL-terminated, in out[THREAD_NAME_MAX]. */
void thread_name(char *out);

/* Whether the calling thread's name starts with `prefix`. */
int thread_name_has_prefix(const char *prefix);

#endif /* MEMSHIM_THREAD_NAME_H */
