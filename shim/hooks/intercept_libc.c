/* intercept_libc: see intercept_libc.h. */
#include "intercept_libc.h"

#include "compat.h"
#include "real.h"
#include "signal_chain.h"
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

/* execl's arguments on the stack; more than this is refused with E2BIG. */
#define LIBC_MAX_LIST_ARGS 4096

typedef int (*libc_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*libc_execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*libc_fexecve_fn)(int, char *const[], char *const[]);
typedef void (*libc_exit_fn)(int);
typedef sighandler_t (*libc_signal_fn)(int, sighandler_t);

static struct {
    _Atomic(libc_execve_fn) execve;
    _Atomic(libc_execvpe_fn) execvpe;
    _Atomic(libc_fexecve_fn) fexecve;
    _Atomic(libc_exit_fn) exit_, exit2;
    _Atomic(libc_signal_fn) signal;
} libc_real;

#define LIBC_REAL(field, name, type)                                                               \
    ({                                                                                             \
        type fn_ = atomic_load(&libc_real.field);                                                  \
        if (!fn_) {                                                                                \
            fn_ = (type)real_dlsym(RTLD_NEXT, name);                                               \
            atomic_store(&libc_real.field, fn_);                                                   \
        }                                                                                          \
        fn_;                                                                                       \
    })

void intercept_libc_init(void)
{
    (void)LIBC_REAL(execve, "execve", libc_execve_fn);
    (void)LIBC_REAL(execvpe, "execvpe", libc_execvpe_fn);
    (void)LIBC_REAL(fexecve, "fexecve", libc_fexecve_fn);
    (void)LIBC_REAL(exit_, "_exit", libc_exit_fn);
    (void)LIBC_REAL(exit2, "_Exit", libc_exit_fn);
    (void)LIBC_REAL(signal, "signal", libc_signal_fn);
    struct sigaction probe;
    signal_chain_real(SIGTERM, NULL, &probe); /* resolves sigaction */
}

/* ---- exec ---- */

static int libc_execvpe(const char *file, char *const argv[], char *const envp[])
{
    trace_flush_own();
    libc_execvpe_fn fn = LIBC_REAL(execvpe, "execvpe", libc_execvpe_fn);
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return fn(file, argv, envp);
}

MS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    trace_flush_own();
    libc_execve_fn fn = LIBC_REAL(execve, "execve", libc_execve_fn);
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return fn(path, argv, envp);
}

MS_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

MS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return libc_execvpe(file, argv, envp);
}

MS_EXPORT int execvp(const char *file, char *const argv[])
{
    return libc_execvpe(file, argv, environ);
}

MS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    trace_flush_own();
    libc_fexecve_fn fn = LIBC_REAL(fexecve, "fexecve", libc_fexecve_fn);
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return fn(fd, argv, envp);
}

/* The list forms: the arguments into a vector on the stack, then the vector form. `envp_out`
 * (execle) receives the pointer after the terminating NULL. */
static int libc_collect(const char *arg0, va_list ap, char **argv, char *const **envp_out)
{
    int n = 0;
    argv[n++] = (char *)arg0;
    while (arg0 && n < LIBC_MAX_LIST_ARGS) {
        char *a = va_arg(ap, char *);
        argv[n++] = a;
        if (!a)
            break;
    }
    if (n == LIBC_MAX_LIST_ARGS && argv[n - 1]) {
        errno = E2BIG;
        return -1;
    }
    if (envp_out)
        *envp_out = va_arg(ap, char *const *);
    return 0;
}

MS_EXPORT int execl(const char *path, const char *arg, ...)
{
    char *argv[LIBC_MAX_LIST_ARGS];
    va_list ap;
    va_start(ap, arg);
    int rc = libc_collect(arg, ap, argv, NULL);
    va_end(ap);
    return rc < 0 ? -1 : execve(path, argv, environ);
}

MS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    char *argv[LIBC_MAX_LIST_ARGS];
    va_list ap;
    va_start(ap, arg);
    int rc = libc_collect(arg, ap, argv, NULL);
    va_end(ap);
    return rc < 0 ? -1 : libc_execvpe(file, argv, environ);
}

MS_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *argv[LIBC_MAX_LIST_ARGS];
    char *const *envp = NULL;
    va_list ap;
    va_start(ap, arg);
    int rc = libc_collect(arg, ap, argv, &envp);
    va_end(ap);
    return rc < 0 ? -1 : execve(path, argv, envp);
}

/* ---- _exit ---- */

MS_EXPORT void _exit(int status)
{
    trace_flush_own();
    libc_exit_fn fn = LIBC_REAL(exit_, "_exit", libc_exit_fn);
    if (fn)
        fn(status);
    __builtin_trap(); /* unreachable: the C library always has _exit */
}

MS_EXPORT void _Exit(int status)
{
    trace_flush_own();
    libc_exit_fn fn = LIBC_REAL(exit2, "_Exit", libc_exit_fn);
    if (fn)
        fn(status);
    __builtin_trap();
}

/* ---- signals ---- */

MS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!signal_chain_managed(sig))
        return signal_chain_real(sig, act, old);
    return signal_chain_set(sig, act, old);
}

MS_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    if (!signal_chain_managed(sig)) {
        libc_signal_fn fn = LIBC_REAL(signal, "signal", libc_signal_fn);
        if (!fn) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return fn(sig, handler);
    }
    /* What the C library's signal() installs: BSD semantics. */
    struct sigaction act = {0}, old;
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
    if (signal_chain_set(sig, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}
