/* trace: the shared double buffer and the file; see trace.h for the ordering contract. */
#include "trace.h"

#include "arena.h"
#include "clock.h"
#include "compat.h"
#include "file_claim.h"
#include "log.h"
#include "thread_name.h"
#include "memshim/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TRACE_BUF_SIZE    (1u << 20)
#define TRACE_NBUF        4u /* the ring: loggers run ahead of the flusher's write(2)s */
#define TRACE_MAX_TAIL    8192u
#define TRACE_SIGNAL_SPIN 100000 /* bounded waits in a signal handler (~ tens of ms) */

#define TRACE_GEN(s) ((uint32_t)((s) >> 32))
#define TRACE_OFF(s) ((uint32_t)(s))

/* A record is committed by the last store its logger makes: the low byte of its header's kind
 * (every kind is below 256, and a buffer is all zeros before it is used), so committing costs a
 * plain store where a shared counter would cost a locked add. The writer-out walks the records
 * and waits at the first whose kind is still 0. */
struct trace_buf {
    char *data;
    uint32_t checked;        /* records before this offset are known complete (writer-out only) */
    _Atomic uint64_t sealed; /* (generation + 1) << 32 | size once retired; 0 otherwise */
    _Atomic int free;        /* written out (or never used): may be swapped in */
};

enum trace_file_state { TRACE_FILE_NONE, TRACE_FILE_OPENING, TRACE_FILE_OPEN, TRACE_FILE_BROKEN };

static struct trace_config trace_cfg;
static char trace_template[1024];
static char trace_label[MST_LABEL_LEN];
static char trace_file_path[1024];
static int trace_on;
static struct trace_buf trace_bufs[TRACE_NBUF];
static _Atomic uint64_t trace_state;   /* generation << 32 | write offset in bufs[gen % NBUF] */
static _Atomic uint32_t trace_written; /* generations below this one are written out */
static atomic_flag trace_writing = ATOMIC_FLAG_INIT; /* held by the one write-out */
static _Atomic uint32_t trace_kick;                  /* futex: sealed buffers to write */
static _Atomic int trace_flusher_waiting;
static _Atomic int trace_file = TRACE_FILE_NONE;
static int trace_fd = -1;
static _Atomic int trace_file_pid; /* the process that created the file */
static _Atomic int trace_finished;
/* What a logger needs to know, in one load: TRACE_G_* bits mirroring trace_on,
 * trace_finished and trace_file. */
#define TRACE_G_ON       1
#define TRACE_G_FINISHED 2
#define TRACE_G_BROKEN   4
#define TRACE_G_NOFILE   8 /* no file yet (or being created): trace_touch creates it */
static _Atomic int trace_gate;
static _Atomic uint64_t trace_lost;
static _Atomic uint32_t trace_epoch = 1;
static _Atomic uint32_t trace_next_thread;
static _Atomic int trace_flusher_started;
static atomic_flag trace_flushing = ATOMIC_FLAG_INIT;

struct trace_thread_tls {
    uint32_t epoch;
    uint32_t id;
};
static MS_TLS struct trace_thread_tls trace_tls;

/* ---- file ---- */

int trace_expand_path(char *out, size_t size, const char *tmpl, int pid, uint32_t rank)
{
    size_t n = 0;
    for (const char *p = tmpl; *p; p++) {
        char num[16];
        const char *add = num;
        if (p[0] == '%' && p[1] == 'p')
            snprintf(num, sizeof num, "%d", pid);
        else if (p[0] == '%' && p[1] == 'r')
            snprintf(num, sizeof num, "%u", rank == MST_NO_RANK ? 0 : rank);
        else if (p[0] == '%' && p[1] == '%')
            add = "%";
        else {
            num[0] = *p;
            num[1] = '\0';
            p--; /* one character consumed, not two */
        }
        p++;
        size_t len = strlen(add);
        if (n + len >= size)
            return -1;
        memcpy(out + n, add, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

int trace_open_private(const char *path)
{
    /* O_NONBLOCK: opening a FIFO someone planted must not hang the program. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
        log_error("%s: cannot open for writing: %s", path,
                  errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        log_error("%s: refusing to write: not a regular file owned by this user", path);
        close(fd);
        return -1;
    }
    if (fcntl(fd, F_SETFL, 0) < 0 || ftruncate(fd, 0) < 0) {
        log_error("%s: cannot truncate: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int trace_write_all(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(trace_fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A write-out: its CHECKSUM record first, then its records, so that a reader can tell a file
 * altered after it was written (the last record of the file stays the writer's last). */
static int trace_write_checked(const char *p, size_t len)
{
    struct {
        struct mst_record_header h;
        struct mst_rec_checksum c;
    } ck = {.h = {.kind = MST_REC_CHECKSUM, .length = sizeof(struct mst_rec_checksum)},
            .c = {.bytes = len, .crc32c = mst_crc32c(0, p, len)}};
    if (trace_write_all((const char *)&ck, sizeof ck) < 0)
        return -1;
    return trace_write_all(p, len);
}

static int trace_write_header(void)
{
    struct mst_file_label label = {{0}};
    if (trace_label[0])
        memcpy(label.label, trace_label, sizeof label.label - 1);
    struct mst_file_header h = {
        .version = MST_VERSION,
        .header_size = sizeof h + sizeof label,
        .pid = (uint32_t)getpid(),
        .rank = trace_cfg.rank,
        .stack_depth = trace_cfg.stack_depth,
        .clock_base_ns = clock_base_ns(),
        .wall_base_ns = clock_wall_base_ns(),
        .flags = trace_cfg.flags,
    };
    memcpy(h.magic, MST_MAGIC, MST_MAGIC_LEN);
    gethostname(h.host, sizeof h.host - 1);
    if (trace_write_all((const char *)&h, sizeof h) != 0)
        return -1;
    return trace_write_all((const char *)&label, sizeof label);
}

static void trace_set_file(int st)
{
    atomic_store(&trace_file, st);
    if (st == TRACE_FILE_NONE) {
        atomic_fetch_and(&trace_gate, ~TRACE_G_BROKEN);
        atomic_fetch_or(&trace_gate, TRACE_G_NOFILE);
    } else if (st == TRACE_FILE_OPEN) {
        atomic_fetch_and(&trace_gate, ~TRACE_G_NOFILE);
    } else if (st == TRACE_FILE_BROKEN) {
        atomic_fetch_or(&trace_gate, TRACE_G_BROKEN);
        atomic_fetch_and(&trace_gate, ~TRACE_G_NOFILE);
    }
}

static void *trace_flusher(void *arg);

static void trace_start_flusher(void)
{
    if (atomic_exchange(&trace_flusher_started, 1))
        return;
    /* Block every signal in the flusher so a process-directed signal never lands there. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, trace_flusher, NULL) == 0)
        pthread_detach(t);
    else
        log_error("cannot start the trace flusher thread; records are written as buffers fill");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The pid in a trace file's header: the process writing it, or one that did. */
static int trace_file_owner(int fd)
{
    struct mst_file_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, MST_MAGIC, MST_MAGIC_LEN))
        return 0;
    return (int)h.pid;
}

static int trace_open_file(void)
{
    if (trace_expand_path(trace_file_path, sizeof trace_file_path, trace_template, getpid(),
                          trace_cfg.rank) < 0) {
        log_error("MEMSHIM_TRACE=%.200s: the expanded file name is too long", trace_template);
        return -1;
    }
    char wanted[sizeof trace_file_path];
    memcpy(wanted, trace_file_path, sizeof wanted);
    trace_fd = file_claim_open(wanted, trace_file_owner, trace_file_path, sizeof trace_file_path);
    if (trace_fd < 0)
        return -1;
    atomic_store(&trace_file_pid, (int)getpid());
    if (trace_write_header() < 0) {
        log_error("%s: cannot write the trace: %s", trace_file_path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Create the file once; concurrent callers wait for the one that creates it. */
static int trace_ensure_file(int in_signal)
{
    int st = atomic_load(&trace_file);
    if (st == TRACE_FILE_NONE && !in_signal &&
        atomic_compare_exchange_strong(&trace_file, &st, TRACE_FILE_OPENING)) {
        int ok = trace_open_file() == 0;
        trace_set_file(ok ? TRACE_FILE_OPEN : TRACE_FILE_BROKEN);
        if (ok)
            trace_start_flusher();
        return ok ? 0 : -1;
    }
    for (int i = 0; st == TRACE_FILE_OPENING && i < TRACE_SIGNAL_SPIN; i += in_signal) {
        sched_yield();
        st = atomic_load(&trace_file);
    }
    return st == TRACE_FILE_OPEN ? 0 : -1;
}

/* ---- buffers ---- */

/* Wait (bounded in a signal handler) until every record in the first `size` bytes of `b` is
 * committed. 0 when they are. */
static int trace_wait_committed(struct trace_buf *b, uint32_t size, int in_signal)
{
    _Static_assert(MST_REC_SUMMARY < 256, "a record kind must fit the commit byte");
    /* In locals: the acquire loads would otherwise reload and store them at every record. */
    const char *data = b->data;
    uint32_t at = b->checked;
    for (int i = 0; at < size;) {
        const char *h = data + at;
        /* The loggers' lines are in their cores' caches, and each header is found from the one
         * before: without fetching ahead, the walk waits for a transfer at every line. */
        __builtin_prefetch(h + 512);
        if (atomic_load_explicit((const _Atomic uint8_t *)h, memory_order_acquire) == 0) {
            b->checked = at;
            if ((i += in_signal) >= TRACE_SIGNAL_SPIN)
                return -1;
            sched_yield(); /* its logger is copying it */
            continue;
        }
        uint32_t len;
        memcpy(&len, h + offsetof(struct mst_record_header, length), sizeof len);
        at += (uint32_t)sizeof(struct mst_record_header) + len;
    }
    b->checked = at;
    return 0;
}

/* Generations are compared by difference, so a wrap of the counter is harmless. */
static int trace_gen_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

/* Write out generation `gen` (the oldest not yet written) once it is sealed and its reserved
 * bytes are all committed; its buffer becomes free. Caller holds trace_writing. -1 when a
 * signal handler gave up waiting (nothing changed). */
static int trace_write_gen(uint32_t gen, int in_signal)
{
    struct trace_buf *b = &trace_bufs[gen % TRACE_NBUF];
    uint64_t seal;
    for (int i = 0;
         TRACE_GEN(seal = atomic_load_explicit(&b->sealed, memory_order_acquire)) != gen + 1;
         i += in_signal) {
        if (i >= TRACE_SIGNAL_SPIN)
            return -1;
        sched_yield(); /* its retirer is between the swap and the seal */
    }
    uint32_t size = TRACE_OFF(seal);
    if (size > 0 && trace_wait_committed(b, size, in_signal) < 0)
        return -1; /* a thread interrupted mid-copy; a later flush writes it */
    if (size > 0 && trace_ensure_file(in_signal) == 0) {
        if (trace_write_checked(b->data, size) < 0 && !in_signal) {
            log_error("%s: cannot write the trace (%s); tracing stops", trace_file_path,
                      strerror(errno));
            trace_set_file(TRACE_FILE_BROKEN);
        }
    } else if (size > 0) {
        atomic_fetch_add(&trace_lost, 1);
    }
    memset(b->data, 0, size); /* the commit bytes of its next use start at 0 */
    b->checked = 0;
    atomic_store_explicit(&b->sealed, 0, memory_order_relaxed);
    atomic_store_explicit(&b->free, 1, memory_order_release);
    atomic_store_explicit(&trace_written, gen + 1, memory_order_release);
    return 0;
}

/* Write out, in generation order, every generation before `upto`. One writer at a time (the
 * flusher, a flush, or a logger held up by a full ring); the others wait for it. 0 when all
 * of them are written. */
static int trace_drain(uint32_t upto, int in_signal)
{
    for (int i = 0;; i += in_signal) {
        uint32_t w = atomic_load_explicit(&trace_written, memory_order_acquire);
        if (!trace_gen_before(w, upto))
            return 0;
        if (i >= TRACE_SIGNAL_SPIN)
            return -1;
        if (!atomic_flag_test_and_set_explicit(&trace_writing, memory_order_acquire)) {
            int rc = 0;
            while (rc == 0 &&
                   trace_gen_before(w = atomic_load_explicit(&trace_written, memory_order_relaxed),
                                    upto))
                rc = trace_write_gen(w, in_signal);
            atomic_flag_clear_explicit(&trace_writing, memory_order_release);
            if (rc < 0)
                return -1;
            continue;
        }
        sched_yield();
    }
}

/* Take the buffer of generation `gen` (free once generation gen - TRACE_NBUF is written).
 * The crosser waits for it, writing the ring out itself when the flusher is behind (back
 * pressure: never drop); a flusher (`once`) gives up at once. */
static int trace_claim(uint32_t gen, int once, int in_signal)
{
    struct trace_buf *b = &trace_bufs[gen % TRACE_NBUF];
    for (int i = 0;; i += in_signal) {
        int expect = 1;
        if (atomic_compare_exchange_weak_explicit(&b->free, &expect, 0, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
        if (once || i >= TRACE_SIGNAL_SPIN)
            return -1;
        if (trace_drain(gen - TRACE_NBUF + 1, in_signal) == 0 &&
            atomic_load_explicit(&b->free, memory_order_acquire))
            continue;
        sched_yield();
    }
}

/* Hand the ring's sealed buffers to the flusher; a system call only when it sleeps. */
static void trace_kick_flusher(void)
{
    atomic_fetch_add(&trace_kick, 1);
    if (atomic_load(&trace_flusher_waiting))
        syscall(SYS_futex, &trace_kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Retire the generation in `seen` at its offset: it is sealed with its size (the flusher
 * writes it out) and the next buffer of the ring becomes current. The crosser owns the swap
 * (every other logger waits for it); a flusher swaps only if nobody logged since it looked.
 * 0: done; 1: try again. */
static int trace_swap(uint64_t seen, int in_signal, int by_crosser)
{
    uint32_t gen = TRACE_GEN(seen);
    struct trace_buf *old = &trace_bufs[gen % TRACE_NBUF];
    struct trace_buf *next = &trace_bufs[(gen + 1) % TRACE_NBUF];
    uint64_t seal = ((uint64_t)(gen + 1) << 32) | TRACE_OFF(seen);
    if (by_crosser) {
        /* Sealed before the swap is published, so a drain never waits for this seal. */
        atomic_store_explicit(&old->sealed, seal, memory_order_release);
        trace_claim(gen + 1, 0, 0);
        atomic_store(&trace_state, (uint64_t)(gen + 1) << 32);
        trace_kick_flusher();
        return 0;
    }
    if (trace_claim(gen + 1, 1, in_signal) < 0) {
        trace_drain(gen + 2 - TRACE_NBUF, in_signal); /* ring full: make room first */
        return 1;
    }
    if (!atomic_compare_exchange_strong(&trace_state, &seen, (uint64_t)(gen + 1) << 32)) {
        atomic_store_explicit(&next->free, 1, memory_order_release);
        return 1;
    }
    atomic_store_explicit(&old->sealed, seal, memory_order_release);
    return 0;
}

/* The current buffer's slot for a reservation at state `s` (before the add). The lines a few
 * records ahead are fetched for writing now: the ring is larger than a core's cache, so each
 * of its lines would otherwise miss right when a record is copied into it. (Past the end of
 * the buffer the prefetch is harmless: it never faults.) */
static inline char *trace_slot_at(uint64_t s)
{
    char *p = trace_bufs[TRACE_GEN(s) % TRACE_NBUF].data + TRACE_OFF(s);
    __builtin_prefetch(p + 512, 1, 3);
    return p;
}

/* A reservation that did not fit: the one thread that crossed the end retires the buffer at
 * its offset; the others wait for that swap (adding nothing meanwhile, so the offset cannot
 * run into the generation bits). Then retry. */
static MS_NOINLINE MS_COLD char *trace_take_slow(uint32_t len, uint64_t s)
{
    for (;;) {
        if (TRACE_OFF(s) <= TRACE_BUF_SIZE)
            trace_swap(s, 0, 1);
        else
            while (TRACE_OFF(atomic_load_explicit(&trace_state, memory_order_acquire)) >
                   TRACE_BUF_SIZE)
                sched_yield();
        s = atomic_fetch_add_explicit(&trace_state, len, memory_order_acq_rel);
        if (TRACE_OFF(s) + len <= TRACE_BUF_SIZE)
            return trace_slot_at(s);
    }
}

/* Reserve `len` bytes; returns where to copy them. */
static inline char *trace_take(uint32_t len)
{
    uint64_t s = atomic_fetch_add_explicit(&trace_state, len, memory_order_acq_rel);
    if (ms_likely(TRACE_OFF(s) + len <= TRACE_BUF_SIZE))
        return trace_slot_at(s);
    return trace_take_slow(len, s);
}

/* Publish the record whose header is at `h`: its kind's low byte, stored last. */
static inline void trace_publish(char *h, uint16_t kind)
{
    atomic_store_explicit((_Atomic uint8_t *)h, (uint8_t)kind, memory_order_release);
}

/* Whether a record may be logged now; a record refused because the file broke is counted. */
static inline int trace_open_gate(void)
{
    int g = atomic_load_explicit(&trace_gate, memory_order_relaxed);
    if (ms_likely((g & ~TRACE_G_NOFILE) == TRACE_G_ON))
        return 1;
    if (g == (TRACE_G_ON | TRACE_G_BROKEN))
        atomic_fetch_add_explicit(&trace_lost, 1, memory_order_relaxed);
    return 0;
}

MS_HOT void *trace_reserve(uint16_t kind, uint32_t len, struct trace_slot *slot)
{
    if (!trace_open_gate())
        return NULL;
    /* Kind 0 until the commit: the other bytes now, that one last. */
    struct mst_record_header h = {.kind = 0, .length = len};
    char *p = trace_take((uint32_t)sizeof h + len);
    memcpy(p, &h, sizeof h);
    slot->head = p;
    slot->kind = kind;
    return p + sizeof h;
}

MS_HOT void *trace_reserve_pair(uint16_t kind, uint32_t len, uint16_t kind2, uint32_t len2,
                                struct trace_slot *slot)
{
    if (!trace_open_gate())
        return NULL;
    /* The first record's kind commits both: the second's is written with the rest. */
    struct mst_record_header h = {.kind = 0, .length = len}, h2 = {.kind = kind2, .length = len2};
    char *p = trace_take(2 * (uint32_t)sizeof h + len + len2);
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h + len, &h2, sizeof h2);
    slot->head = p;
    slot->kind = kind;
    return p + sizeof h;
}

MS_HOT void trace_commit(const struct trace_slot *slot)
{
    trace_publish(slot->head, slot->kind);
}

void trace_record(uint16_t kind, const void *payload, size_t len, const void *tail, size_t tail_len)
{
    if (tail_len > TRACE_MAX_TAIL)
        tail_len = TRACE_MAX_TAIL;
    struct trace_slot slot;
    char *p = trace_reserve(kind, (uint32_t)(len + tail_len), &slot);
    if (!p)
        return;
    memcpy(p, payload, len);
    if (tail_len)
        memcpy(p + len, tail, tail_len);
    trace_commit(&slot);
}

void trace_record_group(const void *records, size_t len)
{
    if (len == 0 || len > TRACE_MAX_GROUP || !trace_open_gate())
        return;
    /* One commit byte for them all: the first record's, stored after the rest is copied. */
    char *p = trace_take((uint32_t)len);
    memcpy(p + 1, (const char *)records + 1, len - 1);
    trace_publish(p, (uint8_t)((const char *)records)[0]);
}

/* Swap the current buffer if it holds anything, then write out every generation before the
 * new current one (waiting for a write-out already running). Flushers are serialized among
 * themselves; a crosser may still swap concurrently. */
static void trace_flush_mode(int in_signal)
{
    int tries = 0;
    while (atomic_flag_test_and_set_explicit(&trace_flushing, memory_order_acquire)) {
        if (in_signal && ++tries >= TRACE_SIGNAL_SPIN)
            return; /* the interrupted thread was flushing: nothing safe to do */
        sched_yield();
    }
    for (tries = 0; tries < TRACE_SIGNAL_SPIN; tries += in_signal) {
        uint64_t s = atomic_load_explicit(&trace_state, memory_order_acquire);
        if (TRACE_OFF(s) > TRACE_BUF_SIZE) {
            sched_yield(); /* a crosser is swapping */
            continue;
        }
        if (TRACE_OFF(s) == 0 || trace_swap(s, in_signal, 0) == 0) {
            trace_drain(TRACE_GEN(s) + (TRACE_OFF(s) != 0), in_signal);
            break;
        }
        sched_yield();
    }
    atomic_flag_clear_explicit(&trace_flushing, memory_order_release);
}

void trace_flush(void)
{
    if (atomic_load(&trace_file) == TRACE_FILE_OPEN)
        trace_flush_mode(0);
}

void trace_flush_signal(void)
{
    if (atomic_load(&trace_file) == TRACE_FILE_OPEN)
        trace_flush_mode(1);
}

void trace_flush_own(void)
{
    if (atomic_load(&trace_file_pid) == (int)getpid())
        trace_flush_signal();
}

/* Writes sealed buffers as loggers kick it, and everything at least every flush_ms. */
static void *trace_flusher(void *arg)
{
    (void)arg;
    uint32_t epoch = atomic_load(&trace_epoch);
    uint64_t period = (uint64_t)trace_cfg.flush_ms * 1000000u, last = clock_now_ns();
    while (!atomic_load(&trace_finished) && atomic_load(&trace_epoch) == epoch) {
        uint32_t kick = atomic_load(&trace_kick);
        atomic_store(&trace_flusher_waiting, 1);
        uint64_t s = atomic_load(&trace_state), now = clock_now_ns();
        if (!trace_gen_before(atomic_load(&trace_written), TRACE_GEN(s)) && now - last < period) {
            uint64_t left = period - (now - last);
            struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
            syscall(SYS_futex, &trace_kick, FUTEX_WAIT_PRIVATE, kick, &ts, NULL, 0);
        }
        atomic_store(&trace_flusher_waiting, 0);
        trace_drain(TRACE_GEN(atomic_load(&trace_state)), 0);
        if (clock_now_ns() - last >= period) {
            trace_flush();
            last = clock_now_ns();
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

/* Generation 0 in buffer 0, every other buffer free, nothing written yet. */
static void trace_reset_ring(void)
{
    atomic_store(&trace_state, 0);
    for (unsigned i = 0; i < TRACE_NBUF; i++) {
        /* All zeros again (a fork child's copies hold the parent's records): the pages are
         * dropped, not written, so a child that never logs copies none of them. */
        if (trace_bufs[i].data)
            madvise(trace_bufs[i].data, TRACE_BUF_SIZE, MADV_DONTNEED);
        trace_bufs[i].checked = 0;
        atomic_store(&trace_bufs[i].sealed, 0);
        atomic_store(&trace_bufs[i].free, i != 0);
    }
    atomic_store(&trace_written, 0);
    atomic_flag_clear(&trace_writing);
    atomic_store(&trace_kick, 0);
    atomic_store(&trace_flusher_waiting, 0);
}

void trace_init(const struct trace_config *cfg)
{
    trace_cfg = *cfg;
    trace_on = 0;
    atomic_store(&trace_gate, 0);
    if (!cfg->path_template || !*cfg->path_template)
        return;
    snprintf(trace_template, sizeof trace_template, "%s", cfg->path_template);
    trace_cfg.path_template = trace_template;
    const char *label = cfg->label ? cfg->label : "";
    if (strlen(label) >= sizeof trace_label)
        log_error("MEMSHIM_LABEL is longer than %zu bytes; the trace keeps the first %zu",
                  sizeof trace_label - 1, sizeof trace_label - 1);
    snprintf(trace_label, sizeof trace_label, "%s", label);
    trace_cfg.label = trace_label;
    for (unsigned i = 0; i < TRACE_NBUF; i++) {
        if (!trace_bufs[i].data)
            trace_bufs[i].data = arena_map(TRACE_BUF_SIZE);
        if (!trace_bufs[i].data) {
            log_error("cannot map the trace buffers; no trace is written");
            return;
        }
    }
    trace_reset_ring();
    trace_on = 1;
    int st = atomic_load(&trace_file);
    atomic_store(&trace_gate,
                 TRACE_G_ON | (atomic_load(&trace_finished) ? TRACE_G_FINISHED : 0) |
                     (st == TRACE_FILE_BROKEN ? TRACE_G_BROKEN : 0) |
                     (st == TRACE_FILE_OPEN || st == TRACE_FILE_BROKEN ? 0 : TRACE_G_NOFILE));
}

MS_HOT int trace_enabled(void)
{
    return trace_on;
}

MS_HOT void trace_touch(void)
{
    if (ms_unlikely(atomic_load_explicit(&trace_gate, memory_order_acquire) ==
                    (TRACE_G_ON | TRACE_G_NOFILE)))
        trace_ensure_file(0);
}

/* A thread's first record (in this process): its id and THREAD record. */
static MS_NOINLINE MS_COLD uint32_t trace_new_thread(uint32_t epoch)
{
    trace_tls.epoch = epoch;
    trace_tls.id = atomic_fetch_add(&trace_next_thread, 1) + 1;
    struct mst_rec_thread rec = {.id = trace_tls.id, .os_tid = (uint32_t)syscall(SYS_gettid)};
    char name[THREAD_NAME_MAX];
    thread_name(name);
    trace_record(MST_REC_THREAD, &rec, sizeof rec, name, strlen(name));
    return trace_tls.id;
}

MS_HOT uint32_t trace_thread_id(void)
{
    uint32_t epoch = atomic_load_explicit(&trace_epoch, memory_order_relaxed);
    if (ms_likely(trace_tls.epoch == epoch))
        return trace_tls.id;
    return trace_new_thread(epoch);
}

uint32_t trace_epoch_now(void)
{
    return atomic_load_explicit(&trace_epoch, memory_order_relaxed);
}

void trace_finish(const struct mst_rec_summary *summary)
{
    if (!trace_on || atomic_load(&trace_finished))
        return;
    if (atomic_load(&trace_file) == TRACE_FILE_NONE) {
        atomic_store(&trace_finished, 1); /* no CUDA event: leave no file behind */
        atomic_fetch_or(&trace_gate, TRACE_G_FINISHED);
        return;
    }
    trace_record(MST_REC_SUMMARY, summary, sizeof *summary, NULL, 0);
    trace_flush();
    atomic_store(&trace_finished, 1);
    atomic_fetch_or(&trace_gate, TRACE_G_FINISHED);
}

uint64_t trace_events_lost(void)
{
    return atomic_load(&trace_lost);
}

const char *trace_path(void)
{
    return atomic_load(&trace_file) == TRACE_FILE_OPEN ? trace_file_path : "";
}

void trace_atfork_prepare(void) {}

void trace_atfork_parent(void) {}

void trace_atfork_child(void)
{
    /* The parent's buffered records belong to the parent's file: drop them, and start a new
     * file (new pid) at the child's first CUDA event. Threads did not survive the fork. */
    if (trace_fd >= 0)
        close(trace_fd);
    trace_fd = -1;
    trace_file_path[0] = '\0';
    trace_set_file(TRACE_FILE_NONE);
    trace_reset_ring();
    atomic_store(&trace_lost, 0);
    atomic_store(&trace_next_thread, 0);
    atomic_fetch_add(&trace_epoch, 1);
    atomic_store(&trace_flusher_started, 0);
    atomic_flag_clear(&trace_flushing);
}
