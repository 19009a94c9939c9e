/* Streaming, validating reader of memshim traces. See reader.h. */
#include "reader.h"

#include "memshim/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Regular files are mapped a window at a time: no copy out of the page cache, and memory stays
 * bounded by the window, not the trace. The window holds at least two of the longest records,
 * so a record always fits once the window starts at its page. Other files (pipes) are read
 * into a buffer. */
#define MAP_WINDOW  (8u << 20)
#define READ_BUFFER (2u << 20)
_Static_assert(MAP_WINDOW >= 2 * (MST_MAX_RECORD + sizeof(struct mst_record_header)),
               "a record must fit in a window");
_Static_assert(READ_BUFFER >= MST_MAX_RECORD + sizeof(struct mst_record_header),
               "a record must fit in the read buffer");
/* Ids are dense and defined in order, give or take records reordered between threads; an id
 * far above every id seen so far is corruption, and this bound keeps a hostile file from
 * making the tables grow without limit. */
#define ID_SLACK           4096u
#define ID_MAX             (1u << 28)
#define SIZE_MAX_PLAUSIBLE (1ull << 52) /* 4 PiB: no device comes near it */

struct id_table {
    void *items;    /* array of entries of `width` bytes, indexed by id */
    uint8_t *known; /* 1 where an id was defined */
    uint32_t cap;
    /* Every id in 1..dense is defined: a reference at most `dense` (0, "none", included) is
     * valid with one comparison. Ids come nearly in order, so dense trails the highest id only
     * while a definition is late; references above it are checked in known[]. */
    uint32_t dense;
    uint32_t high; /* highest id defined */
    size_t width;
};

struct thread_slot {
    struct reader_thread t;
};

/* The last time seen on each thread, beside the thread table rather than in it so that the hot
 * check needs no bounds branch: thread_last[min(id, nthread_last)], with UINT64_MAX for ids not
 * defined and in the sentinel at nthread_last, fails the `time >= last` test for unknown ids. */
static const uint64_t no_thread_last = UINT64_MAX;

struct reader {
    char *path;
    int fd; /* -1 for a memory source */
    const uint8_t *mem;
    size_t mem_size;
    uint8_t *buf; /* file source: the mapped window, or READ_BUFFER bytes owned */
    int owns_buf;
    int mapped;         /* buf is a window of the file mapped at buf_offset */
    uint64_t file_size; /* of a mapped file, as of the last look */
    size_t buf_len;
    size_t buf_pos;
    uint64_t buf_offset; /* file offset of buf[0] */
    int eof;
    enum reader_state state;
    char error[640];
    struct mst_file_header header;
    char label[MST_LABEL_LEN]; /* from the header's extension; "" when absent */
    struct mst_rec_summary summary;
    int have_summary;
    uint64_t records, skipped; /* bytes consumed: buf_offset + buf_pos */
    struct id_table strings, frames, modules, threads, devices;
    uint64_t *thread_last; /* nthread_last + 1 entries (see no_thread_last) */
    uint32_t nthread_last;
    struct bus_slot *bus; /* a mapped file's window, for the SIGBUS handler */
};

static const char *const category_names[] = MST_CATEGORY_NAMES;
static const char *const kind_names[] = MST_KIND_NAMES;

static const uint32_t fixed_size[] = {
    [MST_REC_STRING] = sizeof(struct mst_rec_string),
    [MST_REC_MODULE] = sizeof(struct mst_rec_module),
    [MST_REC_FRAME] = sizeof(struct mst_rec_frame),
    [MST_REC_THREAD] = sizeof(struct mst_rec_thread),
    [MST_REC_DEVICE] = sizeof(struct mst_rec_device),
    [MST_REC_ALLOC] = sizeof(struct mst_rec_alloc),
    [MST_REC_FREE] = sizeof(struct mst_rec_free),
    [MST_REC_MAP] = sizeof(struct mst_rec_map),
    [MST_REC_UNMAP] = sizeof(struct mst_rec_map),
    [MST_REC_PHASE_PUSH] = sizeof(struct mst_rec_phase),
    [MST_REC_PHASE_POP] = sizeof(struct mst_rec_phase),
    [MST_REC_STEP] = sizeof(struct mst_rec_step),
    [MST_REC_CEILING] = sizeof(struct mst_rec_ceiling),
    [MST_REC_OOM] = sizeof(struct mst_rec_oom),
    [MST_REC_RETAG] = sizeof(struct mst_rec_retag),
    [MST_REC_OP] = sizeof(struct mst_rec_op),
    [MST_REC_ACCESS] = sizeof(struct mst_rec_access),
    [MST_REC_RESIDENCY] = sizeof(struct mst_rec_residency),
    [MST_REC_MEASURE] = sizeof(struct mst_rec_measure),
    [MST_REC_SUMMARY] = sizeof(struct mst_rec_summary),
};
#define KIND_LAST MST_REC_SUMMARY
/* Kinds above the last known one are skipped as newer; far above it they are garbage. */
#define KIND_PLAUSIBLE 255

const char *reader_category_name(unsigned category)
{
    return category < MST_CATEGORY_MAX ? category_names[category] : "?";
}

int reader_category_from_name(const char *name)
{
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        if (strcmp(name, category_names[i]) == 0)
            return i;
    return -1;
}

const char *reader_kind_name(unsigned kind)
{
    return kind < MST_KIND_MAX ? kind_names[kind] : "?";
}

const char *reader_record_kind_name(unsigned kind)
{
    static const char *const names[] = {
        "?",    "string", "module", "frame",  "thread",    "device",  "alloc",
        "free", "map",    "unmap",  "phase+", "phase-",    "step",    "ceiling",
        "oom",  "retag",  "op",     "access", "residency", "measure", "summary",
    };
    return kind <= KIND_LAST ? names[kind] : "?";
}

const char *reader_residency_name(unsigned event)
{
    static const char *const names[] = {"?", "spill", "restore", "prefetch", "drop", "recompute"};
    return event <= MST_RES_RECOMPUTE ? names[event] : "?";
}

const char *reader_policy_name(unsigned policy)
{
    static const char *const names[] = {"fail", "spill", "recompute", "auto"};
    return policy <= MST_POLICY_AUTO ? names[policy] : "?";
}

/* ---- id tables ---------------------------------------------------------------------------- */

static void table_init(struct id_table *t, size_t width)
{
    memset(t, 0, sizeof *t);
    t->width = width;
}

static void *table_get(const struct id_table *t, uint32_t id)
{
    if (id >= t->cap || !t->known[id])
        return NULL;
    return (char *)t->items + (size_t)id * t->width;
}

/* Slot for a new definition of `id`; NULL if the id is implausible or memory ran out. */
static void *table_define(struct id_table *t, uint32_t id)
{
    if (id >= ID_MAX || id > t->high + ID_SLACK)
        return NULL;
    if (id >= t->cap) {
        uint32_t cap = t->cap ? t->cap : 256;
        while (cap <= id)
            cap *= 2;
        void *items = realloc(t->items, (size_t)cap * t->width);
        if (!items)
            return NULL;
        t->items = items;
        uint8_t *known = realloc(t->known, cap);
        if (!known)
            return NULL;
        memset(known + t->cap, 0, cap - t->cap);
        t->known = known;
        t->cap = cap;
    }
    t->known[id] = 1;
    if (id > t->high)
        t->high = id;
    void *slot = (char *)t->items + (size_t)id * t->width;
    memset(slot, 0, t->width);
    return slot;
}

static void table_free(struct id_table *t, size_t name_offset)
{
    for (uint32_t id = 0; id < t->cap; id++) {
        if (t->known[id] && name_offset != (size_t)-1) {
            char **name = (char **)((char *)t->items + (size_t)id * t->width + name_offset);
            free(*name);
        }
    }
    free(t->items);
    free(t->known);
}

/* Moves `dense` past the ids defined (call after a definition is complete). */
static void table_settle_dense(struct id_table *t)
{
    while (t->dense + 1 < t->cap && t->known[t->dense + 1])
        t->dense++;
}

/* Makes room in thread_last for thread `id` (just defined) and starts its clock at 0. */
static int thread_clock_define(struct reader *r, uint32_t id)
{
    if (id >= r->nthread_last) {
        uint32_t n = r->threads.cap; /* > id: the table grew first */
        uint64_t *last = r->nthread_last ? realloc(r->thread_last, ((size_t)n + 1) * sizeof *last)
                                         : malloc(((size_t)n + 1) * sizeof *last);
        if (!last)
            return -1;
        for (uint32_t i = r->nthread_last; i <= n; i++)
            last[i] = UINT64_MAX;
        r->thread_last = last;
        r->nthread_last = n;
    }
    r->thread_last[id] = 0;
    return 0;
}

/* ---- a file truncated while mapped ---------------------------------------------------------- */

/* A page of a mapped window that lies wholly past the end of the file (another process truncated
 * the trace while it was read) raises SIGBUS when touched. While any reader holds a window, a
 * handler catches those faults: one inside a registered window maps zero pages over the rest of
 * that window, marks it faulted and lets the read go on, so the reader sees zeros where the file
 * ended, and the replay (which reads records in place) never faults on them either. Before
 * reporting an error the reader looks at the file's size again (file_shrank) and reports a
 * truncated tail instead of corruption. Faults elsewhere go to the previous disposition. */
#define BUS_SLOTS 64

struct bus_slot {
    volatile uintptr_t start, end; /* the window; end 0 while none is mapped */
    volatile sig_atomic_t faulted; /* the handler zero-filled part of the window */
    int used;
};

static struct bus_slot bus_slots[BUS_SLOTS];
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static int bus_users; /* slots in use; the handler is installed while > 0 */
static struct sigaction bus_previous;
static uintptr_t bus_page_size;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < BUS_SLOTS; i++) {
        struct bus_slot *b = &bus_slots[i];
        uintptr_t start = b->start, end = b->end;
        if (a < start || a >= end)
            continue;
        uintptr_t page = a & ~(bus_page_size - 1);
        if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1,
                 0) != MAP_FAILED) {
            b->faulted = 1;
            return;
        }
        break;
    }
    if ((bus_previous.sa_flags & SA_SIGINFO) && bus_previous.sa_sigaction) {
        bus_previous.sa_sigaction(sig, si, uc);
    } else if (!(bus_previous.sa_flags & SA_SIGINFO) && bus_previous.sa_handler != SIG_DFL &&
               bus_previous.sa_handler != SIG_IGN) {
        bus_previous.sa_handler(sig);
    } else {
        /* returning re-runs the faulting access, which now gets the default action */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGBUS, &dfl, NULL);
    }
}

/* A slot for a reader that maps its file, the handler installed with the first; NULL when all
 * are taken (the reader then reads the file instead). */
static struct bus_slot *bus_acquire(void)
{
    struct bus_slot *slot = NULL;
    pthread_mutex_lock(&bus_lock);
    for (int i = 0; i < BUS_SLOTS && !slot; i++)
        if (!bus_slots[i].used)
            slot = &bus_slots[i];
    if (slot && bus_users == 0) {
        bus_page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
        struct sigaction sa = {.sa_sigaction = bus_handler, .sa_flags = SA_SIGINFO | SA_NODEFER};
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &bus_previous) != 0)
            slot = NULL;
    }
    if (slot) {
        *slot = (struct bus_slot){.used = 1};
        bus_users++;
    }
    pthread_mutex_unlock(&bus_lock);
    return slot;
}

static void bus_release(struct bus_slot *slot)
{
    pthread_mutex_lock(&bus_lock);
    slot->end = 0;
    slot->start = 0;
    slot->used = 0;
    if (--bus_users == 0)
        sigaction(SIGBUS, &bus_previous, NULL);
    pthread_mutex_unlock(&bus_lock);
}

/* The window the handler watches: [p, p + len), or none when p is NULL. */
static void bus_watch(struct bus_slot *slot, const void *p, size_t len)
{
    slot->end = 0; /* never a moment with a stale end beside a new start */
    slot->start = (uintptr_t)p;
    slot->end = p ? (uintptr_t)p + len : 0;
}

static int bus_faulted(const struct reader *r)
{
    /* orders the flag's load after the reads of the window that may have set it */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return r->bus && r->bus->faulted;
}

/* Whether a mapped file is now shorter than the size it was mapped at; its size then in *size. */
static int file_shrank(const struct reader *r, uint64_t *size)
{
    struct stat st;
    if (!r->mapped || fstat(r->fd, &st) != 0 || (uint64_t)st.st_size >= r->file_size)
        return 0;
    *size = (uint64_t)st.st_size;
    return 1;
}

/* ---- opening -------------------------------------------------------------------------------- */

/* What a file two processes wrote at once looks like where its records stop making sense: a
 * second file header (both wrote from the start), or zeros (one truncated it while the other
 * went on writing at its own offset, leaving a hole). Said in the error, as the likely cause. */
static const char *interleave_hint(const struct reader *r, uint64_t offset)
{
    if (!r->buf || offset < r->buf_offset || offset >= r->buf_offset + r->buf_len)
        return "";
    /* From a little before the bad record (it may have begun inside the second header). */
    uint64_t from = offset - r->buf_offset > 4096 ? offset - 4096 : r->buf_offset;
    if (from == 0)
        from = 1; /* the file's own header */
    uint64_t end = r->buf_offset + r->buf_len;
    if (end > offset + (1u << 16))
        end = offset + (1u << 16);
    const uint8_t *p = r->buf; /* p[i - r->buf_offset] is the file's byte i */
    for (uint64_t i = from; i + MST_MAGIC_LEN <= end; i++)
        if (memcmp(p + (i - r->buf_offset), MST_MAGIC, MST_MAGIC_LEN) == 0)
            return " (a second trace header follows: two processes wrote this file; give "
                   "MEMSHIM_TRACE a %p)";
    size_t run = 0, longest = 0;
    for (uint64_t i = offset; i < end && i < offset + 256; i++) {
        run = p[i - r->buf_offset] == 0 ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    if (longest >= 32)
        return " (zeros where records should be: another process truncated this file while "
               "this one wrote it; give MEMSHIM_TRACE a %p)";
    return "";
}

static void set_error(struct reader *r, enum reader_state state, uint64_t offset, const char *fmt,
                      ...)
{
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* An invalid record of a file that shrank while it was read: what was read past the new end
     * were zeros (see bus_handler), so a record that does not end before it was cut off, not
     * corrupt. The header of a record starting before the end is still the file's own. */
    uint64_t size;
    if ((state == READER_CORRUPT || state == READER_TRUNCATED) && file_shrank(r, &size)) {
        struct mst_record_header h = {0};
        if (offset + sizeof h <= size && offset >= r->buf_offset &&
            offset + sizeof h <= r->buf_offset + r->buf_len)
            memcpy(&h, r->buf + (offset - r->buf_offset), sizeof h);
        if (offset + sizeof h + h.length > size) {
            state = READER_TRUNCATED;
            snprintf(why, sizeof why, "the file shrank to %llu bytes while it was read",
                     (unsigned long long)size);
        }
    }
    const char *what = state == READER_TRUNCATED  ? "truncated trace"
                       : state == READER_IO_ERROR ? "read error"
                                                  : "corrupt record";
    snprintf(r->error, sizeof r->error, "%s: %s at byte offset %llu: %s%s", r->path, what,
             (unsigned long long)offset, why,
             state == READER_CORRUPT && !strstr(why, "MEMSHIM_TRACE") ? interleave_hint(r, offset)
                                                                      : "");
    r->state = state;
}

static struct reader *reader_alloc(const char *name)
{
    struct reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->path = strdup(name ? name : "(memory)");
    r->fd = -1;
    table_init(&r->strings, sizeof(char *));
    table_init(&r->frames, sizeof(struct reader_frame));
    table_init(&r->modules, sizeof(struct reader_module));
    table_init(&r->threads, sizeof(struct thread_slot));
    table_init(&r->devices, sizeof(struct reader_device));
    r->thread_last = (uint64_t *)&no_thread_last;
    if (!r->path) {
        free(r);
        return NULL;
    }
    return r;
}

/* Maps the window that starts at the page holding the read position. */
static void remap(struct reader *r)
{
    uint64_t pos = r->buf_offset + r->buf_pos;
    uint64_t start = pos & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
    bus_watch(r->bus, NULL, 0);
    if (r->buf)
        munmap(r->buf, r->buf_len);
    r->buf = NULL;
    r->buf_offset = start;
    r->buf_pos = (size_t)(pos - start);
    r->buf_len = 0;
    /* never map past the end of the file as it is now: those pages would fault */
    uint64_t size;
    if (file_shrank(r, &size))
        r->file_size = size;
    uint64_t left = r->file_size > start ? r->file_size - start : 0;
    size_t len = left < MAP_WINDOW ? (size_t)left : MAP_WINDOW;
    if (len == 0) {
        r->eof = 1;
        return;
    }
    /* not MAP_POPULATE: the kernel's fault-around maps a page cache resident file about as
     * fast, and a window is not mapped before it is needed */
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, r->fd, (off_t)start);
    if (p == MAP_FAILED) {
        set_error(r, READER_IO_ERROR, pos, "mmap: %s", strerror(errno));
        r->eof = 1;
        return;
    }
    r->buf = p;
    r->buf_len = len;
    r->eof = start + len >= r->file_size;
    bus_watch(r->bus, p, len);
}

/* Mapped file: a new window once the current one runs short; at its end, a second look at
 * the size, since a trace may still be growing while it is read. */
static size_t available_mapped(struct reader *r, size_t want)
{
    size_t have = r->buf_len - r->buf_pos;
    if (r->eof) {
        struct stat st;
        if (r->state != READER_OK || fstat(r->fd, &st) != 0 ||
            (uint64_t)st.st_size <= r->buf_offset + r->buf_len)
            return have;
        r->file_size = (uint64_t)st.st_size;
    }
    remap(r);
    (void)want; /* a fresh window holds any record (see MAP_WINDOW) or reaches the end */
    return r->buf_len > r->buf_pos ? r->buf_len - r->buf_pos : 0;
}

/* Bytes available at the read position, refilling the buffer from the file as needed. */
static size_t available(struct reader *r, size_t want)
{
    size_t have = r->buf_len - r->buf_pos;
    if (have >= want || r->fd < 0 || (r->eof && !r->mapped))
        return have;
    if (r->mapped)
        return available_mapped(r, want);
    memmove(r->buf, r->buf + r->buf_pos, have);
    r->buf_offset += r->buf_pos;
    r->buf_pos = 0;
    r->buf_len = have;
    while (r->buf_len < want && !r->eof) {
        ssize_t n = read(r->fd, r->buf + r->buf_len, READ_BUFFER - r->buf_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            set_error(r, READER_IO_ERROR, r->buf_offset + r->buf_len, "%s", strerror(errno));
            r->eof = 1;
        } else if (n == 0) {
            r->eof = 1;
        } else {
            r->buf_len += (size_t)n;
        }
    }
    return r->buf_len - r->buf_pos;
}

static int read_header(struct reader *r, char *err, size_t errlen)
{
    size_t have = available(r, sizeof r->header);
    if (have < offsetof(struct mst_file_header, pid)) {
        snprintf(err, errlen, "%s: not a memshim trace (%zu bytes, no header)", r->path, have);
        return -1;
    }
    const uint8_t *p = r->buf + r->buf_pos;
    if (memcmp(p, MST_MAGIC, MST_MAGIC_LEN) != 0) {
        snprintf(err, errlen, "%s: not a memshim trace (bad magic)", r->path);
        return -1;
    }
    uint16_t version, header_size;
    memcpy(&version, p + 8, 2);
    memcpy(&header_size, p + 10, 2);
    if (version != MST_VERSION) {
        snprintf(err, errlen, "%s: trace format version %u, this analyzer reads version %u",
                 r->path, version, MST_VERSION);
        return -1;
    }
    if (header_size < sizeof r->header) {
        snprintf(err, errlen, "%s: bad header size %u (expected at least %zu)", r->path,
                 header_size, sizeof r->header);
        return -1;
    }
    if (available(r, header_size) < header_size) {
        snprintf(err, errlen, "%s: truncated file header", r->path);
        return -1;
    }
    memcpy(&r->header, r->buf + r->buf_pos, sizeof r->header);
    r->header.host[MST_HOST_LEN - 1] = '\0';
    if (header_size >= sizeof r->header + sizeof(struct mst_file_label)) {
        memcpy(r->label, r->buf + r->buf_pos + sizeof r->header, sizeof r->label);
        r->label[sizeof r->label - 1] = '\0';
    }
    r->buf_pos += header_size;
    return 0;
}

struct reader *reader_open(const char *path, char *err, size_t errlen)
{
    struct reader *r = reader_alloc(path);
    if (!r) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    /* O_NONBLOCK: a FIFO is refused below, never waited on for a writer. */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (r->fd >= 0 && (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        snprintf(err, errlen, "%s: not a regular file", path);
        reader_close(r);
        return NULL;
    }
    if (r->fd >= 0 && st.st_size > 0 && (r->bus = bus_acquire()) != NULL) {
        r->mapped = 1;
        r->file_size = (uint64_t)st.st_size;
    } else if (r->fd >= 0) {
        r->buf = malloc(READ_BUFFER);
        r->owns_buf = 1;
    }
    if (r->fd < 0 || (!r->mapped && !r->buf)) {
        snprintf(err, errlen, "%s: %s", path, r->fd < 0 ? strerror(errno) : "out of memory");
        reader_close(r);
        return NULL;
    }
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (read_header(r, err, errlen) < 0) {
        reader_close(r);
        return NULL;
    }
    return r;
}

struct reader *reader_open_memory(const void *data, size_t size, const char *name, char *err,
                                  size_t errlen)
{
    struct reader *r = reader_alloc(name);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->buf = (uint8_t *)data;
    r->buf_len = size;
    r->eof = 1;
    if (read_header(r, err, errlen) < 0) {
        reader_close(r);
        return NULL;
    }
    return r;
}

void reader_close(struct reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    if (r->owns_buf)
        free(r->buf);
    if (r->bus)
        bus_watch(r->bus, NULL, 0);
    if (r->mapped && r->buf)
        munmap(r->buf, r->buf_len);
    if (r->bus)
        bus_release(r->bus);
    table_free(&r->strings, 0);
    table_free(&r->frames, (size_t)-1);
    table_free(&r->modules, offsetof(struct reader_module, path));
    table_free(&r->threads, offsetof(struct thread_slot, t.name));
    table_free(&r->devices, offsetof(struct reader_device, name));
    if (r->nthread_last)
        free(r->thread_last);
    free(r->path);
    free(r);
}

/* ---- validation ---------------------------------------------------------------------------- */

/* Checks shared by records that carry a thread and a time: the thread is defined and its
 * clock does not run backwards. */
static int check_thread_time(struct reader *r, uint64_t off, uint32_t thread, uint64_t time_ns)
{
    if (!table_get(&r->threads, thread)) {
        set_error(r, READER_CORRUPT, off, "thread id %u not defined", thread);
        return -1;
    }
    uint64_t *last = &r->thread_last[thread];
    if (time_ns < *last) {
        set_error(r, READER_CORRUPT, off, "time %llu ns before the previous %llu ns on thread %u",
                  (unsigned long long)time_ns, (unsigned long long)*last, thread);
        return -1;
    }
    *last = time_ns;
    return 0;
}

static int check_ref(struct reader *r, uint64_t off, const struct id_table *t, uint32_t id,
                     const char *what)
{
    if (id == 0 || table_get(t, id))
        return 0;
    set_error(r, READER_CORRUPT, off, "%s id %u not defined", what, id);
    return -1;
}

static int check_range(struct reader *r, uint64_t off, unsigned v, unsigned lo, unsigned hi,
                       const char *what)
{
    if (v >= lo && v <= hi)
        return 0;
    set_error(r, READER_CORRUPT, off, "%s %u out of range", what, v);
    return -1;
}

static int check_size(struct reader *r, uint64_t off, uint64_t size)
{
    if (size <= SIZE_MAX_PLAUSIBLE)
        return 0;
    set_error(r, READER_CORRUPT, off, "implausible size %llu bytes", (unsigned long long)size);
    return -1;
}

static char *copy_name(const char *s, uint32_t len)
{
    char *c = malloc((size_t)len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

/* The table a definition record fills, and the id it defines. */
static struct id_table *definition_table(struct reader *r, const struct reader_record *rec,
                                         uint32_t *id)
{
    switch (rec->kind) {
    case MST_REC_STRING:
        *id = rec->u.string.id;
        return &r->strings;
    case MST_REC_MODULE:
        *id = rec->u.module.id;
        return &r->modules;
    case MST_REC_FRAME:
        *id = rec->u.frame.id;
        return &r->frames;
    case MST_REC_THREAD:
        *id = rec->u.thread.id;
        return &r->threads;
    default:
        *id = rec->u.device.ordinal;
        return &r->devices;
    }
}

/* Id ranges and, for frames, the ids a frame refers to. */
static int check_definition(struct reader *r, const struct reader_record *rec, uint32_t id)
{
    uint64_t off = rec->offset;
    if (rec->kind != MST_REC_THREAD && rec->kind != MST_REC_DEVICE && id == 0) {
        set_error(r, READER_CORRUPT, off, "%s id 0", reader_record_kind_name(rec->kind));
        return -1;
    }
    if (rec->kind == MST_REC_DEVICE && id > 255) {
        set_error(r, READER_CORRUPT, off, "device ordinal %u out of range", id);
        return -1;
    }
    if (rec->kind != MST_REC_FRAME)
        return 0;
    const struct mst_rec_frame *f = &rec->u.frame;
    return check_ref(r, off, &r->frames, f->parent, "parent frame") ||
           check_ref(r, off, &r->modules, f->module_id, "module") ||
           check_ref(r, off, &r->strings, f->symbol_id, "symbol string");
}

/* Fills a fresh table slot from the record; `name` (the record's tail) is taken over. */
static void store_definition(void *slot, const struct reader_record *rec, uint32_t id, char *name)
{
    switch (rec->kind) {
    case MST_REC_STRING:
        *(char **)slot = name;
        return;
    case MST_REC_MODULE:
        *(struct reader_module *)slot = (struct reader_module){.base = rec->u.module.base,
                                                               .size = rec->u.module.size,
                                                               .path = name,
                                                               .flags = rec->u.module.flags};
        return;
    case MST_REC_FRAME:
        free(name);
        *(struct reader_frame *)slot = (struct reader_frame){
            .parent = rec->u.frame.parent,
            .module_id = rec->u.frame.module_id,
            .symbol_id = rec->u.frame.symbol_id,
            .ip = rec->u.frame.ip,
            .module_offset = rec->u.frame.module_offset,
        };
        return;
    case MST_REC_THREAD:
        ((struct thread_slot *)slot)->t = (struct reader_thread){rec->u.thread.os_tid, name};
        return;
    default:
        *(struct reader_device *)slot = (struct reader_device){
            .ordinal = id,
            .cc_major = rec->u.device.cc_major,
            .cc_minor = rec->u.device.cc_minor,
            .total_bytes = rec->u.device.total_bytes,
            .ceiling_bytes = rec->u.device.ceiling_bytes,
            .name = name,
        };
        return;
    }
}

/* Stores a definition. A second definition of the same id is ignored: the first one is what
 * earlier records referred to. */
static int define(struct reader *r, struct reader_record *rec)
{
    uint32_t id;
    struct id_table *t = definition_table(r, rec, &id);
    if (check_definition(r, rec, id) != 0)
        return -1;
    if (table_get(t, id))
        return 0;
    void *slot = table_define(t, id);
    if (!slot) {
        set_error(r, READER_CORRUPT, rec->offset, "%s id %u implausible (highest so far %u)",
                  reader_record_kind_name(rec->kind), id, t->high);
        return -1;
    }
    char *name = copy_name(rec->tail, rec->tail_len);
    if (!name || (t == &r->threads && thread_clock_define(r, id) != 0)) {
        free(name);
        t->known[id] = 0;
        set_error(r, READER_IO_ERROR, rec->offset, "out of memory");
        return -1;
    }
    store_definition(slot, rec, id, name);
    table_settle_dense(t);
    return 0;
}

static int validate_alloc(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_alloc *a = &rec->u.alloc;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, a->thread, a->time_ns) ||
           check_ref(r, off, &r->frames, a->site, "site frame") ||
           check_ref(r, off, &r->strings, a->phase, "phase string") ||
           check_range(r, off, a->kind, 1, MST_KIND_MAX - 1, "allocation kind") ||
           check_range(r, off, a->category, 0, MST_CATEGORY_MAX - 1, "category") ||
           check_size(r, off, a->size);
}

static int validate_free(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_free *f = &rec->u.free;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, f->thread, f->time_ns) ||
           check_ref(r, off, &r->frames, f->site, "site frame") ||
           check_range(r, off, f->kind, 0, MST_KIND_MAX - 1, "allocation kind") ||
           check_size(r, off, f->size);
}

static int validate_oom(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_oom *o = &rec->u.oom;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, o->thread, o->time_ns) ||
           check_ref(r, off, &r->frames, o->site, "site frame") ||
           check_ref(r, off, &r->strings, o->phase, "phase string") ||
           check_range(r, off, o->kind, 0, MST_KIND_MAX - 1, "allocation kind");
}

static int validate(struct reader *r, struct reader_record *rec)
{
    const uint64_t off = rec->offset;
    switch (rec->kind) {
    case MST_REC_ALLOC:
        return validate_alloc(r, rec);
    case MST_REC_FREE:
        return validate_free(r, rec);
    case MST_REC_STRING:
    case MST_REC_MODULE:
    case MST_REC_FRAME:
    case MST_REC_THREAD:
    case MST_REC_DEVICE:
        return define(r, rec);
    case MST_REC_MAP:
    case MST_REC_UNMAP:
        return check_thread_time(r, off, rec->u.map.thread, rec->u.map.time_ns) ||
               check_size(r, off, rec->u.map.size);
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
        return check_thread_time(r, off, rec->u.phase.thread, rec->u.phase.time_ns) ||
               check_ref(r, off, &r->strings, rec->u.phase.name_id, "phase string");
    case MST_REC_STEP:
        return check_thread_time(r, off, rec->u.step.thread, rec->u.step.time_ns);
    case MST_REC_CEILING:
        return check_range(r, off, rec->u.ceiling.policy, 0, MST_POLICY_AUTO, "policy");
    case MST_REC_OOM:
        return validate_oom(r, rec);
    case MST_REC_RETAG:
        return check_range(r, off, rec->u.retag.category, 0, MST_CATEGORY_MAX - 1, "category");
    case MST_REC_OP:
        return check_thread_time(r, off, rec->u.op.thread, rec->u.op.time_ns) ||
               check_ref(r, off, &r->strings, rec->u.op.name_id, "op name string") ||
               check_range(r, off, rec->u.op.kind, MST_OP_GEMM, MST_OP_KERNEL, "op kind");
    case MST_REC_ACCESS:
        return check_range(r, off, rec->u.access.mode, 0, 7, "access mode");
    case MST_REC_RESIDENCY:
        return check_thread_time(r, off, rec->u.residency.thread, rec->u.residency.time_ns) ||
               check_range(r, off, rec->u.residency.event, MST_RES_SPILL, MST_RES_RECOMPUTE,
                           "residency event") ||
               check_size(r, off, rec->u.residency.bytes);
    case MST_REC_SUMMARY:
        r->summary = rec->u.summary;
        r->have_summary = 1;
        return 0;
    default:
        return 0;
    }
}

/* ---- iteration ----------------------------------------------------------------------------- */

/* Copies the fixed payload; the hot kinds with a constant size so the copy is inlined. */
static void copy_fixed(struct reader_record *rec, const char *payload, uint32_t need)
{
    if (rec->kind == MST_REC_ALLOC)
        memcpy(&rec->u.alloc, payload, sizeof rec->u.alloc);
    else if (rec->kind == MST_REC_FREE)
        memcpy(&rec->u.free, payload, sizeof rec->u.free);
    else
        memcpy(&rec->u, payload, need);
}

/* The record header at the read position, or -1 at the end (status set if not clean). */
static int next_header(struct reader *r, struct mst_record_header *h, size_t *have)
{
    uint64_t off = r->buf_offset + r->buf_pos;
    *have = r->buf_len - r->buf_pos;
    if (*have < sizeof *h)
        *have = available(r, sizeof *h);
    if (r->state != READER_OK || *have == 0)
        return -1;
    if (*have < sizeof *h) {
        set_error(r, READER_TRUNCATED, off, "%zu bytes left, a record header needs %zu", *have,
                  sizeof *h);
        return -1;
    }
    memcpy(h, r->buf + r->buf_pos, sizeof *h);
    if (h->length > MST_MAX_RECORD) {
        set_error(r, READER_CORRUPT, off, "record length %u exceeds the maximum %u", h->length,
                  MST_MAX_RECORD);
        return -1;
    }
    if (h->kind == 0 || h->kind > KIND_PLAUSIBLE) {
        set_error(r, READER_CORRUPT, off, "record kind %u", h->kind);
        return -1;
    }
    size_t total = sizeof *h + h->length;
    if (*have < total)
        *have = available(r, total);
    if (r->state != READER_OK)
        return -1;
    if (*have < total) {
        set_error(r, READER_TRUNCATED, off, "%s record of %zu bytes, only %zu in the file",
                  reader_record_kind_name(h->kind), total, *have);
        return -1;
    }
    return 0;
}

/* What the checks of fast_record() read, copied out of the reader into locals once per batch:
 * the stores of the hot loop (the thread clocks, the caller's refs) could alias the reader's own
 * fields as far as the compiler knows, which would reload them on every record. */
struct fast_view {
    uint64_t *last; /* thread_last */
    uint32_t nlast;
    uint32_t strings, frames; /* the tables' dense bounds */
};

static inline struct fast_view fast_view_of(const struct reader *r)
{
    return (struct fast_view){
        .last = r->thread_last,
        .nlast = r->nthread_last,
        .strings = r->strings.dense,
        .frames = r->frames.dense,
    };
}

/* The checks both kinds share: the thread is defined and its clock does not run backwards, the
 * site is defined (or 0: at most the dense bound), the size plausible. The thread's lookup has
 * no bounds branch (see thread_last); `time + 1 > last` is `time >= last` except that it also
 * fails time UINT64_MAX, which an undefined thread's UINT64_MAX would let through. */
static inline __attribute__((always_inline)) int
fast_common(const struct fast_view *v, uint64_t time, uint32_t thread, uint32_t site, uint64_t size)
{
    uint64_t *last = &v->last[thread < v->nlast ? thread : v->nlast];
    if (time + 1 <= *last || site > v->frames || size > SIZE_MAX_PLAUSIBLE)
        return 0;
    *last = time;
    return 1;
}

/* validate_alloc() and validate_free() for fast_record(), without messages. */
static inline __attribute__((always_inline)) int fast_alloc(const struct fast_view *v,
                                                            const struct mst_rec_alloc *a)
{
    return a->phase <= v->strings && (uint8_t)(a->kind - 1) < MST_KIND_MAX - 1 &&
           a->category < MST_CATEGORY_MAX &&
           fast_common(v, a->time_ns, a->thread, a->site, a->size);
}

static inline __attribute__((always_inline)) int fast_free(const struct fast_view *v,
                                                           const struct mst_rec_free *f)
{
    return f->kind < MST_KIND_MAX && fast_common(v, f->time_ns, f->thread, f->site, f->size);
}

/* A record header as one little-endian word: kind, reserved 0, length. */
#define HEADER_WORD(kind, length) ((uint64_t)(kind) | (uint64_t)(length) << 32)

/* The ALLOC or FREE record at p, which make up almost all of a trace, when it lies whole in the
 * `left` bytes of the buffer and passes validation: its size, its thread's clock advanced. 0
 * sends it through the general path (other kinds, the buffer's end, anything invalid), which
 * repeats the checks and says what failed. The checks are those of validate_alloc and
 * validate_free. */
static inline __attribute__((always_inline)) size_t fast_record(const struct fast_view *v,
                                                                const uint8_t *p, size_t left)
{
    struct mst_record_header h;
    /* room for the larger payload: the loads below stay in the buffer whatever the length */
    if (left < sizeof h + sizeof(struct mst_rec_alloc))
        return 0;
    /* 4 KiB pages stop the hardware prefetcher at each page boundary of a mapped file */
    __builtin_prefetch(p + 2048);
    /* The usual records, of exactly their kind's size, are told by one comparison of the whole
     * header, which covers their length checks; each kind checks all of it in its own branch, so
     * values need not outlive the branch, which keeps them in registers. */
    uint64_t word;
    memcpy(&word, p, sizeof word);
    if (word == HEADER_WORD(MST_REC_ALLOC, sizeof(struct mst_rec_alloc)))
        return fast_alloc(v, (const void *)(p + sizeof h)) ? sizeof h + sizeof(struct mst_rec_alloc)
                                                           : 0;
    if (word == HEADER_WORD(MST_REC_FREE, sizeof(struct mst_rec_free)))
        return fast_free(v, (const void *)(p + sizeof h)) ? sizeof h + sizeof(struct mst_rec_free)
                                                          : 0;
    /* longer payloads (a newer writer's fields) or a nonzero reserved field */
    memcpy(&h, p, sizeof h);
    if (h.length > left - sizeof h)
        return 0;
    /* sizeof(struct) <= length <= MST_MAX_RECORD in one unsigned comparison */
    if (h.kind == MST_REC_ALLOC) {
        if (h.length - sizeof(struct mst_rec_alloc) >
                MST_MAX_RECORD - sizeof(struct mst_rec_alloc) ||
            !fast_alloc(v, (const void *)(p + sizeof h)))
            return 0;
    } else if (h.kind == MST_REC_FREE) {
        if (h.length - sizeof(struct mst_rec_free) > MST_MAX_RECORD - sizeof(struct mst_rec_free) ||
            !fast_free(v, (const void *)(p + sizeof h)))
            return 0;
    } else {
        return 0;
    }
    return sizeof h + h.length;
}

/* Fills rec from a record fast_record() accepted. */
static void fill_fast(const struct reader *r, struct reader_record *rec,
                      const struct mst_record_header *h)
{
    const char *payload = (const char *)(h + 1);
    uint32_t need;
    rec->kind = h->kind;
    rec->length = h->length;
    rec->offset = r->buf_offset + (size_t)((const uint8_t *)h - r->buf);
    if (rec->kind == MST_REC_ALLOC) {
        memcpy(&rec->u.alloc, payload, sizeof rec->u.alloc);
        need = sizeof rec->u.alloc;
    } else {
        memcpy(&rec->u.free, payload, sizeof rec->u.free);
        need = sizeof rec->u.free;
    }
    rec->tail = payload + need;
    rec->tail_len = rec->length - need;
}

/* After a SIGBUS in the window: keeps the records of refs[0..n) that end before the file's
 * new end, positions the reader at the first that does not (if any) and reports it truncated.
 * The records the loop accepted past the end were zeros that passed the checks. */
static size_t drop_past_end(struct reader *r, const struct mst_record_header **refs, size_t n)
{
    uint64_t size;
    if (!file_shrank(r, &size))
        size = UINT64_MAX;
    size_t keep = 0;
    const uint8_t *p = r->buf + r->buf_pos;
    for (; keep < n; keep++) {
        p = (const uint8_t *)refs[keep];
        if (r->buf_offset + (size_t)(p - r->buf) + sizeof *refs[keep] + refs[keep]->length > size)
            break;
        p += sizeof *refs[keep] + refs[keep]->length;
    }
    r->buf_pos = (size_t)(p - r->buf);
    if (keep < n)
        set_error(r, READER_TRUNCATED, r->buf_offset + r->buf_pos,
                  "the file shrank to %llu bytes while it was read", (unsigned long long)size);
    return keep;
}

/* After a SIGBUS in the window: whether the record just read, at `off` of `total` bytes, ran
 * past the file's new end (it is then reported truncated, not returned). */
static int read_past_end(struct reader *r, uint64_t off, size_t total)
{
    uint64_t size;
    if (!file_shrank(r, &size) || off + total <= size)
        return 0;
    set_error(r, READER_TRUNCATED, off, "the file shrank to %llu bytes while it was read",
              (unsigned long long)size);
    return 1;
}

size_t reader_next_refs(struct reader *r, const struct mst_record_header **refs, size_t max)
{
    if (r->state != READER_OK || !r->buf)
        return 0;
    /* positions in locals: the stores to refs cannot alias them */
    const struct fast_view v = fast_view_of(r);
    const uint8_t *p = r->buf + r->buf_pos, *end = r->buf + r->buf_len;
    const struct mst_record_header **out = refs, **out_end = refs + max;
    size_t step;
    while (out < out_end && (step = fast_record(&v, p, (size_t)(end - p))) != 0) {
        *out++ = (const struct mst_record_header *)(const void *)p;
        p += step;
    }
    size_t n = (size_t)(out - refs);
    if (bus_faulted(r))
        n = drop_past_end(r, refs, n);
    else
        r->buf_pos = (size_t)(p - r->buf);
    r->records += n;
    return n;
}

size_t reader_next_batch(struct reader *r, struct reader_record *recs, size_t max)
{
    enum { CHUNK = 64 };
    const struct mst_record_header *refs[CHUNK];
    size_t n = 0;
    while (n < max) {
        size_t want = max - n < CHUNK ? max - n : CHUNK;
        size_t k = reader_next_refs(r, refs, want);
        for (size_t i = 0; i < k; i++)
            fill_fast(r, &recs[n + i], refs[i]);
        n += k;
        if (k == want)
            continue;
        if (reader_next(r, &recs[n]) != READER_RECORD)
            break;
        n++;
    }
    return n;
}

#define CHECKSUM_MAX_BYTES (64u << 20) /* a write-out is one buffer of the shim's ring */
#define CHECKSUM_CHUNK     (1u << 20)

/* What the bytes a checksum covers show of how two writers mixed (see interleave_hint). */
struct crc_scan {
    uint32_t crc;
    int second_header;
    size_t zero_run, longest_zeros;
};

static void crc_scan_add(struct crc_scan *c, const uint8_t *p, size_t n)
{
    c->crc = mst_crc32c(c->crc, p, n);
    for (size_t i = 0; i < n; i++) {
        c->zero_run = p[i] ? 0 : c->zero_run + 1;
        if (c->zero_run > c->longest_zeros)
            c->longest_zeros = c->zero_run;
        if (p[i] == (uint8_t)MST_MAGIC[0] && n - i >= MST_MAGIC_LEN &&
            memcmp(p + i, MST_MAGIC, MST_MAGIC_LEN) == 0)
            c->second_header = 1;
    }
}

/* The `n` bytes at file offset `start`, read apart from the window; -1 when the file ends
 * before them (a tail cut short: not this check's to judge). */
static int file_crc(const struct reader *r, uint64_t start, uint64_t n, struct crc_scan *c)
{
    if (r->fd < 0) {
        if (start > r->buf_len || n > r->buf_len - start)
            return -1;
        crc_scan_add(c, r->buf + start, (size_t)n);
        return 0;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || start > (uint64_t)st.st_size || n > (uint64_t)st.st_size - start)
        return -1;
    uint8_t *chunk = malloc(CHECKSUM_CHUNK);
    if (!chunk)
        return -1;
    for (uint64_t done = 0; done < n;) {
        size_t want = n - done < CHECKSUM_CHUNK ? (size_t)(n - done) : CHECKSUM_CHUNK;
        ssize_t got = pread(r->fd, chunk, want, (off_t)(start + done));
        if (got <= 0) {
            free(chunk);
            return -1;
        }
        crc_scan_add(c, chunk, (size_t)got);
        done += (uint64_t)got;
    }
    free(chunk);
    return 0;
}

/* A CHECKSUM record: the bytes after it are the ones the writer wrote, or the trace is corrupt
 * (a bit flipped on disk or in a copy, a file edited, two processes writing it). */
static int check_checksum(struct reader *r, uint64_t start, const struct mst_rec_checksum *c)
{
    if (c->bytes > CHECKSUM_MAX_BYTES) {
        set_error(r, READER_CORRUPT, start, "checksum record covering %llu bytes, more than %u",
                  (unsigned long long)c->bytes, CHECKSUM_MAX_BYTES);
        return -1;
    }
    struct crc_scan scan = {0};
    if (file_crc(r, start, c->bytes, &scan) != 0 || scan.crc == c->crc32c)
        return 0;
    const char *cause = scan.second_header ? "a second trace header among them: two processes "
                                             "wrote this file; give MEMSHIM_TRACE a %p"
                        : scan.longest_zeros >= 32
                            ? "zeros among them: another process truncated this file while "
                              "this one wrote it; give MEMSHIM_TRACE a %p"
                            : "the file was changed after it was written";
    set_error(r, READER_CORRUPT, start,
              "the %llu bytes from here do not match their checksum (CRC-32C %08x, written "
              "%08x): %s",
              (unsigned long long)c->bytes, scan.crc, c->crc32c, cause);
    return -1;
}

int reader_next(struct reader *r, struct reader_record *rec)
{
    size_t step;
    const struct fast_view v = fast_view_of(r);
    if (r->state == READER_OK && r->buf &&
        (step = fast_record(&v, r->buf + r->buf_pos, r->buf_len - r->buf_pos))) {
        fill_fast(r, rec, (const struct mst_record_header *)(const void *)(r->buf + r->buf_pos));
        if (bus_faulted(r) && read_past_end(r, rec->offset, step))
            return READER_END;
        r->buf_pos += step;
        r->records++;
        return READER_RECORD;
    }
    for (;;) {
        struct mst_record_header h;
        size_t have;
        if (r->state != READER_OK || next_header(r, &h, &have) != 0)
            return READER_END;
        uint64_t off = r->buf_offset + r->buf_pos;
        const char *payload = (const char *)r->buf + r->buf_pos + sizeof h;
        size_t total = sizeof h + h.length;
        r->buf_pos += total;
        if (h.kind == MST_REC_CHECKSUM && h.length >= sizeof(struct mst_rec_checksum)) {
            struct mst_rec_checksum c;
            memcpy(&c, payload, sizeof c);
            if (check_checksum(r, off + total, &c) != 0)
                return READER_END;
            continue;
        }
        if (h.kind > KIND_LAST) {
            r->skipped++;
            continue;
        }
        uint32_t need = fixed_size[h.kind];
        if (h.length < need) {
            set_error(r, READER_CORRUPT, off, "%s record of %u payload bytes, needs %u",
                      reader_record_kind_name(h.kind), h.length, need);
            return READER_END;
        }
        rec->kind = h.kind;
        rec->length = h.length;
        rec->offset = off;
        copy_fixed(rec, payload, need);
        rec->tail = payload + need;
        rec->tail_len = h.length - need;
        if (validate(r, rec) != 0 || (bus_faulted(r) && read_past_end(r, off, total)))
            return READER_END;
        r->records++;
        return READER_RECORD;
    }
}

/* ---- accessors ----------------------------------------------------------------------------- */

enum reader_state reader_status(const struct reader *r)
{
    return r->state;
}

const char *reader_error(const struct reader *r)
{
    return r->error;
}

const char *reader_path(const struct reader *r)
{
    return r->path;
}

const char *reader_label(const struct reader *r)
{
    return r->label;
}

const struct mst_file_header *reader_header(const struct reader *r)
{
    return &r->header;
}

const struct mst_rec_summary *reader_summary(const struct reader *r)
{
    return r->have_summary ? &r->summary : NULL;
}

uint64_t reader_records(const struct reader *r)
{
    return r->records;
}

uint64_t reader_skipped(const struct reader *r)
{
    return r->skipped;
}

uint64_t reader_bytes(const struct reader *r)
{
    return r->buf_offset + r->buf_pos;
}

const char *reader_string(const struct reader *r, uint32_t id)
{
    char **s = table_get(&r->strings, id);
    return s ? *s : "";
}

const struct reader_frame *reader_frame(const struct reader *r, uint32_t id)
{
    return id ? table_get(&r->frames, id) : NULL;
}

const struct reader_module *reader_module(const struct reader *r, uint32_t id)
{
    return id ? table_get(&r->modules, id) : NULL;
}

const struct reader_thread *reader_thread(const struct reader *r, uint32_t id)
{
    struct thread_slot *t = table_get(&r->threads, id);
    return t ? &t->t : NULL;
}

const struct reader_device *reader_device(const struct reader *r, uint32_t ordinal)
{
    return table_get(&r->devices, ordinal);
}

uint32_t reader_device_count(const struct reader *r)
{
    return r->devices.cap ? r->devices.high + 1 : 0;
}
