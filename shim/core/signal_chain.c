/* signal_chain: see signal_chain.h. */
#include "signal_chain.h"

#include "compat.h"
#include "real.h"
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define SC_NSIG 65

typedef int (*sc_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* The program's action, double-buffered: the handler reads it without a lock. */
struct sc_slot {
    struct sigaction app[2];
    _Atomic unsigned cur;
    _Atomic int managed;
};

static const int sc_fatal[] = {SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT,
                               SIGBUS,  SIGFPE,  SIGUSR1,   SIGSEGV, SIGUSR2, SIGPIPE,
                               SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM,
                               SIGPROF, SIGIO,   SIGPWR,    SIGSYS};
/* Crashes and requests to stop: flushed even when the program handles them (its handler may
 * end the process by means the shim cannot see). Timers and user signals are not: a
 * profiler's SIGPROF would otherwise write the trace hundreds of times a second. */
static const int sc_flush_always[] = {SIGSEGV, SIGBUS, SIGILL,  SIGFPE, SIGTRAP, SIGSYS, SIGABRT,
                                      SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGXCPU, SIGXFSZ};

static struct sc_slot sc_slots[SC_NSIG];
static pthread_mutex_t sc_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(sc_sigaction_fn) sc_real_fn;

int signal_chain_real(int sig, const struct sigaction *act, struct sigaction *old)
{
    sc_sigaction_fn fn = atomic_load(&sc_real_fn);
    if (!fn) {
        fn = (sc_sigaction_fn)real_dlsym(RTLD_NEXT, "sigaction");
        atomic_store(&sc_real_fn, fn);
    }
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    return fn(sig, act, old);
}

int signal_chain_managed(int sig)
{
    return sig > 0 && sig < SC_NSIG && atomic_load(&sc_slots[sig].managed);
}

static struct sigaction sc_app(int sig)
{
    struct sc_slot *s = &sc_slots[sig];
    return s->app[atomic_load_explicit(&s->cur, memory_order_acquire)];
}

static void sc_set_app(int sig, const struct sigaction *a)
{
    struct sc_slot *s = &sc_slots[sig];
    unsigned next = atomic_load(&s->cur) ^ 1u;
    s->app[next] = *a;
    atomic_store_explicit(&s->cur, next, memory_order_release);
}

static int sc_is_ignore(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN;
}

static int sc_is_default(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static int sc_in(int sig, const int *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == sig)
            return 1;
    return 0;
}

static void sc_handler(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    struct sigaction app = sc_app(sig);
    if (sc_is_default(&app) || sc_in(sig, sc_flush_always, MS_ARRAY_LEN(sc_flush_always)))
        trace_flush_own();
    if (sc_is_ignore(&app)) {
        errno = saved;
        return;
    }
    if (sc_is_default(&app)) {
        /* The default action: put it in place; the re-raised signal (blocked while this
         * handler runs) is delivered on return. */
        struct sigaction dfl = {0};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        signal_chain_real(sig, &dfl, NULL);
        raise(sig);
        errno = saved;
        return;
    }
    if (app.sa_flags & SA_RESETHAND) {
        struct sigaction dfl = {0};
        dfl.sa_handler = SIG_DFL;
        sc_set_app(sig, &dfl);
    }
    errno = saved;
    if (app.sa_flags & SA_SIGINFO)
        app.sa_sigaction(sig, info, uc);
    else
        app.sa_handler(sig);
}

/* The kernel's action that stands for the program's `app`: the shim's handler with the
 * program's mask and restart/nodefer choices (SA_ONSTACK always: a stack-overflow handler
 * needs it, and it is harmless without an alternate stack). */
static struct sigaction sc_mine(const struct sigaction *app)
{
    struct sigaction mine = {0};
    mine.sa_sigaction = sc_handler;
    if (sc_is_default(app)) {
        sigemptyset(&mine.sa_mask);
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    } else {
        mine.sa_mask = app->sa_mask;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK | (app->sa_flags & (SA_RESTART | SA_NODEFER));
    }
    return mine;
}

void signal_chain_install(void)
{
    pthread_mutex_lock(&sc_mutex);
    for (size_t i = 0; i < MS_ARRAY_LEN(sc_fatal); i++) {
        int sig = sc_fatal[i];
        struct sigaction cur;
        if (atomic_load(&sc_slots[sig].managed) || signal_chain_real(sig, NULL, &cur) < 0 ||
            sc_is_ignore(&cur))
            continue;
        sc_set_app(sig, &cur);
        struct sigaction mine = sc_mine(&cur);
        if (signal_chain_real(sig, &mine, NULL) == 0)
            atomic_store(&sc_slots[sig].managed, 1);
    }
    pthread_mutex_unlock(&sc_mutex);
}

int signal_chain_set(int sig, const struct sigaction *act, struct sigaction *old)
{
    pthread_mutex_lock(&sc_mutex);
    struct sigaction prev = sc_app(sig);
    int rc = 0;
    if (act) {
        struct sigaction mine = sc_mine(act);
        rc = signal_chain_real(sig, sc_is_ignore(act) ? act : &mine, NULL);
        if (rc == 0)
            sc_set_app(sig, act);
    }
    pthread_mutex_unlock(&sc_mutex);
    if (rc == 0 && old)
        *old = prev;
    return rc;
}

void signal_chain_atfork_child(void)
{
    pthread_mutex_init(&sc_mutex, NULL);
}
