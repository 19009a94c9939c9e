/* signal_chain: the trace is flushed before a signal ends the process, and the program keeps
 * its own signal handling. For every signal whose default action ends the process (not the
 * real-time ones) and that is not ignored at load, the shim's handler stays installed; the
 * program's sigaction()/signal() calls for it (hooked) set the action the shim's handler
 * chains to, and report it back as theirs. The handler flushes (bounded waits) when the
 * action in place is the default one, or when the signal is a crash or a request to stop
 * (SEGV, BUS, ILL, FPE, TRAP, SYS, ABRT, TERM, INT, QUIT, HUP, XCPU, XFSZ); then it runs the
 * program's handler, ignores the signal, or takes the default action. A program that ignores
 * the signal gets the kernel's SIG_IGN (no handler in between). */
#ifndef MEMSHIM_SIGNAL_CHAIN_H
#define MEMSHIM_SIGNAL_CHAIN_H

#include <signal.h>

/* Install the handler (once). */
void signal_chain_install(void);
/* 1 when the shim's handler manages `sig`. */
int signal_chain_managed(int sig);
/* The program's sigaction() for a managed signal: as the kernel's, with `old` the program's
 * own previous action. */
int signal_chain_set(int sig, const struct sigaction *act, struct sigaction *old);
/* fork child: the lock another thread may have held is free again. */
void signal_chain_atfork_child(void);
/* The C library's sigaction (the hook's real function). */
int signal_chain_real(int sig, const struct sigaction *act, struct sigaction *old);

#endif /* MEMSHIM_SIGNAL_CHAIN_H */
