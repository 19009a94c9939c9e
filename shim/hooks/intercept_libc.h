/* intercept_libc: the C library calls that end or replace the process image, and those that
 * set signal actions. exec* in place and _exit/_Exit write out the trace records logged so
 * far (in the process that created the trace; not in a vfork child); an exec'd image that
 * loads the shim again takes a new trace name (file_claim), so nothing before the exec is
 * lost. sigaction and signal go through signal_chain for the signals it manages. Nothing else
 * changes: arguments and results pass through. */
#ifndef MEMSHIM_INTERCEPT_LIBC_H
#define MEMSHIM_INTERCEPT_LIBC_H

/* Resolve the real functions now (a vfork child must not run the dynamic loader). */
void intercept_libc_init(void);

#endif /* MEMSHIM_INTERCEPT_LIBC_H */
