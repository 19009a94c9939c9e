/* harden-prog: programs that put the shim in the hard places of a host process (harden_check.py
 * runs them under the shim and judges their traces, reports and exit statuses).
 *
 *   harden-prog basic                 allocate, copy and free a few buffers; exit 0
 *   harden-prog oom BYTES             one cudaMalloc of BYTES; prints its error code
 *   harden-prog fork THREADS CHILDREN THREADS threads allocate, copy and free without pause
 *                                     while the main thread forks CHILDREN children, one at a
 *                                     time, each of which allocates and frees once; a child
 *                                     stuck for 10 s says in whose code. Prints `forks N hung H
 *                                     failed F hung-outside-the-shim O`
 *   harden-prog hold MS               allocate one buffer (its trace file is created), then
 *                                     sleep MS milliseconds and exit
 *   harden-prog exec                  allocate 3 buffers, then execv itself as `exec2`, which
 *                                     allocates 2 more and exits
 *   harden-prog signal SIG            allocate 5 buffers, install a SIGUSR1 handler (after the
 *                                     shim's), raise SIGUSR1 (prints `handled`), then raise SIG
 *                                     with its default action (the process dies by it)
 *   harden-prog _exit                 allocate 5 buffers, then _exit(3)
 *   harden-prog stress THREADS PAIRS  THREADS threads each keep 6 allocations (1 KiB..4 MiB)
 *                                     live: PAIRS times one is checked (copied back), freed,
 *                                     reallocated and written by a copy; prints
 *                                     `stress copyfail C allocfail A mismatch M`
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e_check.h"

#define MIB (1024ull * 1024)

static void *alloc_n(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    return p;
}

static int cmd_basic(void)
{
    static char host[1 << 20];
    memset(host, 7, sizeof host);
    void *a = alloc_n(1 << 20), *b = alloc_n(3 * MIB);
    CK(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(host, a, sizeof host, cudaMemcpyDeviceToHost));
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 0;
}

static int cmd_oom(const char *bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, strtoull(bytes, NULL, 10));
    printf("oom %d\n", (int)e);
    return 0;
}

/* ---- threads that keep the shim busy ---- */

struct worker {
    pthread_t t;
    unsigned seed;
    long pairs; /* < 0: until told to stop */
    long copyfail, allocfail, mismatch;
};

static volatile int workers_stop;

static size_t worker_size(unsigned *seed)
{
    /* Mostly small (chunk-served under spill), some large (own ranges). */
    unsigned r = (unsigned)rand_r(seed);
    return r % 4 == 0 ? (size_t)(1 + r % 4) * MIB : (size_t)(1024 + r % (256 * 1024));
}

#define WORKER_SLOTS 6

/* Each slot's allocation carries a marker at both ends (the pass that wrote it). */
struct slot {
    void *p;
    size_t n;
    unsigned char mark;
};

static int slot_check(struct worker *w, struct slot *s, unsigned char *in)
{
    if (cudaMemcpy(in, s->p, 64, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(in + 64, (char *)s->p + s->n - 64, 64, cudaMemcpyDeviceToHost) != cudaSuccess) {
        w->copyfail++;
        return -1;
    }
    for (int i = 0; i < 128; i++)
        if (in[i] != (unsigned char)(s->mark ^ (i >= 64 ? 0x5a : 0))) {
            w->mismatch++;
            return -1;
        }
    return 0;
}

/* Allocate, write and read back, and free, keeping WORKER_SLOTS allocations live per thread
 * (so that spilled ones must come back for their copies). */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct slot slots[WORKER_SLOTS] = {{0}};
    unsigned char *out = malloc(4 * MIB), *in = malloc(4 * MIB);
    if (!out || !in)
        die("malloc", 0);
    for (long i = 0; (w->pairs < 0 ? !workers_stop : i < w->pairs); i++) {
        struct slot *s = &slots[(unsigned)rand_r(&w->seed) % WORKER_SLOTS];
        if (s->p) {
            slot_check(w, s, in);
            if (cudaFree(s->p) != cudaSuccess)
                die("cudaFree", 0);
            s->p = NULL;
        }
        size_t n = worker_size(&w->seed);
        if (cudaMalloc(&s->p, n) != cudaSuccess) {
            w->allocfail++;
            s->p = NULL;
            continue;
        }
        s->n = n;
        s->mark = (unsigned char)i;
        memset(out, s->mark, 64);
        memset(out + n - 64, s->mark ^ 0x5a, 64);
        if (cudaMemcpy(s->p, out, n, cudaMemcpyHostToDevice) != cudaSuccess) {
            w->copyfail++;
            cudaFree(s->p);
            s->p = NULL;
        }
    }
    for (int i = 0; i < WORKER_SLOTS; i++)
        if (slots[i].p)
            cudaFree(slots[i].p);
    free(out);
    free(in);
    return NULL;
}

static struct worker *workers_start(int n, long pairs)
{
    struct worker *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) {
        w[i].seed = 1234u + (unsigned)i;
        w[i].pairs = pairs;
        if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0)
            die("pthread_create", i);
    }
    return w;
}

static void workers_join(struct worker *w, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(w[i].t, NULL);
}

/* ---- fork while the shim is busy ---- */

/* Whether the code at pc belongs to the module whose file name contains `name`. */
static int frame_in(void *pc, const char *name)
{
    Dl_info info;
    return dladdr(pc, &info) && info.dli_fname && strstr(info.dli_fname, name);
}

static void on_stuck(int sig);

/* Whether the code at pc belongs to this program (whatever its file is called). */
static int frame_in_program(void *pc)
{
    Dl_info here, info;
    return dladdr((void *)on_stuck, &here) && dladdr(pc, &info) && info.dli_fbase == here.dli_fbase;
}

/* The C library, or a sanitizer runtime standing in for part of it. */
static int frame_in_libc(void *pc)
{
    return frame_in(pc, "libc.so") || frame_in(pc, "libasan") || frame_in(pc, "libubsan");
}

/* A child stuck for 10 s: whose lock is it waiting on? Seen from this handler the stack is:
 * this handler, the shim's signal chain when it is preloaded (it calls the program's handler),
 * the C library's signal return, then the interrupted code: a lock or sched_yield in the C
 * library, then its caller. That caller names the module: exit 98 when it is libmemshim, 97
 * otherwise (simcuda's driver has no fork handling of its own). */
static void on_stuck(int sig)
{
    (void)sig;
    void *bt[64];
    int n = backtrace(bt, 64), i = 0;
    while (i < n && !frame_in_program(bt[i]))
        i++; /* a sanitizer's backtrace() may come before this handler */
    while (i < n && !frame_in_libc(bt[i]))
        i++; /* the handler and the shim's signal chain, up to the signal return */
    while (i < n && frame_in_libc(bt[i]))
        i++;
    Dl_info info;
    if (i < n && dladdr(bt[i], &info) && info.dli_fname) {
        fprintf(stderr, "child stuck in %s\n", info.dli_fname);
        _exit(strstr(info.dli_fname, "libmemshim") ? 98 : 97);
    }
    _exit(97);
}

static int fork_child(void)
{
    signal(SIGALRM, on_stuck);
    alarm(10);
    void *p = NULL;
    if (cudaMalloc(&p, 2 * MIB) != cudaSuccess)
        _exit(2);
    cudaFree(p);
    _exit(0);
}

static int cmd_fork(int nthreads, int children)
{
    alloc_n(1 << 20); /* the devices are probed before the threads start */
    struct worker *w = workers_start(nthreads, -1);
    int hung = 0, failed = 0, hung_elsewhere = 0;
    for (int i = 0; i < children; i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL); /* let the workers get inside the shim */
        pid_t pid = fork();
        if (pid < 0)
            die("fork", i);
        if (pid == 0)
            fork_child();
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 98)
            hung++;
        else if (WIFEXITED(st) && WEXITSTATUS(st) == 97)
            hung_elsewhere++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    workers_stop = 1;
    workers_join(w, nthreads);
    printf("forks %d hung %d failed %d hung-outside-the-shim %d\n", children, hung, failed,
           hung_elsewhere);
    return 0;
}

/* ---- exec, signals, _exit ---- */

static int cmd_exec(const char *self)
{
    for (int i = 0; i < 3; i++)
        alloc_n((size_t)(i + 1) * MIB);
    fflush(stdout);
    execl(self, self, "exec2", (char *)NULL);
    die("execl", 0);
    return 1;
}

static int cmd_exec2(void)
{
    alloc_n(5 * MIB);
    alloc_n(6 * MIB);
    return 0;
}

static void on_usr1(int sig)
{
    (void)sig;
    static const char msg[] = "handled\n";
    if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
        _exit(9);
}

static int cmd_signal(int sig)
{
    for (int i = 0; i < 5; i++)
        alloc_n(MIB);
    struct sigaction sa = {0}, old;
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, &old) != 0)
        die("sigaction", 0);
    /* The program sees its own previous action (the default), not the shim's handler. */
    printf("previous %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
    fflush(stdout);
    raise(SIGUSR1);
    raise(sig);
    die("survived the signal", sig);
    return 1;
}

static int cmd_exit(void)
{
    for (int i = 0; i < 5; i++)
        alloc_n(MIB);
    _exit(3);
}

static int cmd_stress(int nthreads, long pairs)
{
    alloc_n(1024); /* probe the device before the threads start */
    struct worker *w = workers_start(nthreads, pairs);
    workers_join(w, nthreads);
    long cf = 0, af = 0, mm = 0;
    for (int i = 0; i < nthreads; i++) {
        cf += w[i].copyfail;
        af += w[i].allocfail;
        mm += w[i].mismatch;
    }
    printf("stress copyfail %ld allocfail %ld mismatch %ld\n", cf, af, mm);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!strcmp(cmd, "basic"))
        return cmd_basic();
    if (!strcmp(cmd, "oom") && argc > 2)
        return cmd_oom(argv[2]);
    if (!strcmp(cmd, "fork") && argc > 3)
        return cmd_fork(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(cmd, "hold") && argc > 2) {
        alloc_n(MIB);
        struct timespec ts = {atoi(argv[2]) / 1000, (long)(atoi(argv[2]) % 1000) * 1000000};
        nanosleep(&ts, NULL);
        return 0;
    }
    if (!strcmp(cmd, "exec"))
        return cmd_exec(argv[0]);
    if (!strcmp(cmd, "exec2"))
        return cmd_exec2();
    if (!strcmp(cmd, "signal") && argc > 2)
        return cmd_signal(atoi(argv[2]));
    if (!strcmp(cmd, "_exit"))
        return cmd_exit();
    if (!strcmp(cmd, "stress") && argc > 3)
        return cmd_stress(atoi(argv[2]), atol(argv[3]));
    fprintf(stderr, "usage: see the comment at the top of harden_prog.c\n");
    return 2;
}
