/* Streaming, validating reader of memshim traces. See reader.h. */
#include "reader.h"
#include "reader_struct.h"

#include "memshim/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

/* ALLOC records checked by vector where the CPU has AVX2 (see fast_alloc_short_vector). */
#if defined(__x86_64__) && defined(__GNUC__)
#define FAST_VECTOR 1
#include <immintrin.h>
#else
#define FAST_VECTOR 0
#endif

/* Regular files are mapped a window at a time: no copy out of the page cache, and memory stays
 * bounded by the window, not the trace. The window holds at least two of the longest records,
 * so a record always fits once the window starts at its page. Other files (pipes) are read
 * into a buffer. */
#define MAP_WINDOW (8u << 20)
_Static_assert(MAP_WINDOW >= 2 * (MST_MAX_RECORD + sizeof(struct mst_record_header)),
               "a record must fit in a window");
_Static_assert(READ_BUFFER >= MST_MAX_RECORD + sizeof(struct mst_record_header),
               "a record must fit in the read buffer");
/* The last time seen on each thread, beside the thread table rather than in it so that the hot
 * check needs no bounds branch: thread_last[min(id, nthread_last)], with UINT64_MAX for ids not
 * defined and in the sentinel at nthread_last, fails the `time >= last` test for unknown ids. */
static const uint64_t no_thread_last = UINT64_MAX;

static const char *const category_names[] = MST_CATEGORY_NAMES;
static const char *const kind_names[] = MST_KIND_NAMES;

static const uint32_t fixed_size[] = {
    [MST_REC_STRING] = sizeof(struct mst_rec_string),
    [MST_REC_MODULE] = sizeof(struct mst_rec_module),
    [MST_REC_FRAME] = sizeof(struct mst_rec_frame),
    [MST_REC_THREAD] = sizeof(struct mst_rec_thread),
    [MST_REC_DEVICE] = sizeof(struct mst_rec_device),
    [MST_REC_ALLOC] = sizeof(struct mst_rec_alloc_short), /* or mst_rec_alloc: alloc_need */
    [MST_REC_FREE] = sizeof(struct mst_rec_free_short),   /* or mst_rec_free: see free_need */
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
    [MST_REC_TENSOR_ALLOC] = sizeof(struct mst_rec_tensor_alloc),
    [MST_REC_TENSOR_FREE] = sizeof(struct mst_rec_tensor_free),
    [MST_REC_AUTOGRAD] = sizeof(struct mst_rec_autograd),
};
#define KIND_LAST MST_REC_AUTOGRAD
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
        "?",        "string", "module",      "frame",     "thread",    "device",   "alloc",
        "free",     "map",    "unmap",       "phase+",    "phase-",    "step",     "ceiling",
        "oom",      "retag",  "op",          "access",    "residency", "measure",  "summary",
        "checksum", "tensor", "tensor-free", "op-define", "op-repeat", "autograd",
    };
    return kind <= KIND_LAST ? names[kind] : "?";
}

const char *reader_residency_name(unsigned event)
{
    static const char *const names[] = {"?",    "spill",     "restore", "prefetch",
                                        "drop", "recompute", "host_use"};
    return event <= MST_RES_LAST ? names[event] : "?";
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

void *table_get(const struct id_table *t, uint32_t id)
{
    if (id >= t->cap || !t->known[id])
        return NULL;
    return (char *)t->items + (size_t)id * t->width;
}

/* Slot for a new definition of `id`; NULL if the id is implausible or memory ran out. */
void *table_define(struct id_table *t, uint32_t id)
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
void table_settle_dense(struct id_table *t)
{
    while (t->dense + 1 < t->cap && t->known[t->dense + 1])
        t->dense++;
}

/* Makes room in thread_last for thread `id` (just defined) and starts its clock at 0. */
int thread_clock_define(struct reader *r, uint32_t id)
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

/* ---- opening -------------------------------------------------------------------------------- */

/* Whether the trace magic starts anywhere in p[0, n): candidates by their first byte, so that
 * the search costs a memchr, not a comparison at every byte. */
static int has_magic(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while ((size_t)(end - p) >= MST_MAGIC_LEN) {
        p = memchr(p, MST_MAGIC[0], (size_t)(end - p) - MST_MAGIC_LEN + 1);
        if (!p)
            return 0;
        if (memcmp(p, MST_MAGIC, MST_MAGIC_LEN) == 0)
            return 1;
        p++;
    }
    return 0;
}

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
    if (end > from && has_magic(p + (from - r->buf_offset), (size_t)(end - from)))
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

void set_error(struct reader *r, enum reader_state state, uint64_t offset, const char *fmt, ...)
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
    /* not MAP_POPULATE: see map_ahead */
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, r->fd, (off_t)start);
    if (p == MAP_FAILED) {
        set_error(r, READER_IO_ERROR, pos, "mmap: %s", strerror(errno));
        r->eof = 1;
        return;
    }
    r->buf = p;
    r->buf_len = len;
    r->faulted_in = 0;
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
size_t reader_fill(struct reader *r, size_t want)
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
    size_t have = reader_fill(r, sizeof r->header);
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
    if (reader_fill(r, header_size) < header_size) {
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
    shape_free(r);
    free(r->path);
    free(r);
}

/* ---- iteration ----------------------------------------------------------------------------- */

/* The fixed part of an ALLOC of `length` payload bytes: the short form below the long one's. */
static inline uint32_t alloc_need(uint32_t length)
{
    return mst_alloc_is_short(length) ? sizeof(struct mst_rec_alloc_short)
                                      : sizeof(struct mst_rec_alloc);
}

/* An ALLOC as an mst_rec_alloc: the short form with stream 0 and its requested bytes. */
static inline void copy_alloc(struct mst_rec_alloc *a, const char *payload, uint32_t length)
{
    if (!mst_alloc_is_short(length)) {
        memcpy(a, payload, sizeof *a);
        return;
    }
    struct mst_rec_alloc_short s;
    memcpy(&s, payload, sizeof s);
    *a = mst_alloc_from_short(&s);
}

/* The fixed part of a FREE of `length` payload bytes: the short form below the long one's size. */
static inline uint32_t free_need(uint32_t length)
{
    return mst_free_is_short(length) ? sizeof(struct mst_rec_free_short)
                                     : sizeof(struct mst_rec_free);
}

/* A FREE as an mst_rec_free: the short form with stream 0, and size and site 0 (its ALLOC's,
 * which the reader does not keep). */
static inline void copy_free(struct mst_rec_free *f, const char *payload, uint32_t length)
{
    if (!mst_free_is_short(length)) {
        memcpy(f, payload, sizeof *f);
        return;
    }
    struct mst_rec_free_short s;
    memcpy(&s, payload, sizeof s);
    *f = (struct mst_rec_free){.time_ns = s.time_ns,
                               .addr = s.addr,
                               .thread = s.thread,
                               .kind = s.kind,
                               .device = s.device,
                               .flags = s.flags};
}

/* The fixed part of a record of `kind` with `length` payload bytes (a kind the reader knows). */
static inline uint32_t fixed_need(uint16_t kind, uint32_t length)
{
    return kind == MST_REC_FREE    ? free_need(length)
           : kind == MST_REC_ALLOC ? alloc_need(length)
                                   : fixed_size[kind];
}

/* Copies the fixed payload; the hot kinds with a constant size so the copy is inlined. */
static void copy_fixed(struct reader_record *rec, const char *payload, uint32_t need)
{
    if (rec->kind == MST_REC_ALLOC)
        copy_alloc(&rec->u.alloc, payload, rec->length);
    else if (rec->kind == MST_REC_FREE)
        copy_free(&rec->u.free, payload, rec->length);
    else
        memcpy(&rec->u, payload, need);
}

/* The record header at the read position, or -1 at the end (status set if not clean). */
static int next_header(struct reader *r, struct mst_record_header *h, size_t *have)
{
    uint64_t off = r->buf_offset + r->buf_pos;
    *have = r->buf_len - r->buf_pos;
    if (*have < sizeof *h)
        *have = reader_fill(r, sizeof *h);
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
        *have = reader_fill(r, total);
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
 * site is defined (or 0: at most the dense bound), the size plausible. Each check is a branch of
 * its own: combined into one, the compiler computes them all into flags, which takes more
 * instructions and registers than it has. The bounds branch of the thread's lookup costs less
 * than the clamp to the sentinel (see thread_last), which still fails the ids below the bound
 * that are not defined: `time + 1 > last` is `time >= last` except that it also fails time
 * UINT64_MAX, which an undefined thread's UINT64_MAX would let through. */
static inline __attribute__((always_inline)) int
fast_common(const struct fast_view *v, uint64_t time, uint32_t thread, uint32_t site, uint64_t size)
{
    if (__builtin_expect(site > v->frames, 0))
        return 0;
    if (__builtin_expect(thread >= v->nlast, 0))
        return 0;
    if (__builtin_expect(size > SIZE_MAX_PLAUSIBLE, 0))
        return 0;
    if (__builtin_expect(time + 1 <= v->last[thread], 0))
        return 0;
    v->last[thread] = time;
    return 1;
}

/* validate_alloc() and validate_free() for fast_record(), without messages. An ALLOC's checks
 * name fields both forms hold by the same names, in two different structs: a macro. */
#define FAST_ALLOC_FIELDS(v, a)                                                                    \
    ((a)->phase <= (v)->strings && (uint8_t)((a)->kind - 1) < MST_KIND_MAX - 1 &&                  \
     (a)->category < MST_CATEGORY_MAX &&                                                           \
     fast_common((v), (a)->time_ns, (a)->thread, (a)->site, (a)->size))

static inline __attribute__((always_inline)) int fast_alloc(const struct fast_view *v,
                                                            const struct mst_rec_alloc *a)
{
    return FAST_ALLOC_FIELDS(v, a);
}

/* The short form also says how much less than its size it asked for: no more than the size. */
static inline __attribute__((always_inline)) int
fast_alloc_short(const struct fast_view *v, const struct mst_rec_alloc_short *a)
{
    return a->unrequested <= a->size && FAST_ALLOC_FIELDS(v, a);
}

static inline __attribute__((always_inline)) int fast_free(const struct fast_view *v,
                                                           const struct mst_rec_free *f)
{
    return f->kind < MST_KIND_MAX && fast_common(v, f->time_ns, f->thread, f->site, f->size);
}

static inline __attribute__((always_inline)) int fast_free_short(const struct fast_view *v,
                                                                 const struct mst_rec_free_short *f)
{
    return f->kind < MST_KIND_MAX && fast_common(v, f->time_ns, f->thread, 0, 0);
}

/* A record header as one little-endian word: kind, reserved 0, length. */
#define HEADER_WORD(kind, length) ((uint64_t)(kind) | (uint64_t)(length) << 32)

/* What fast_record() reads at a record whatever its length: the header and the larger payload. */
#define FAST_NEED (sizeof(struct mst_record_header) + sizeof(struct mst_rec_alloc))

/* The ALLOC or FREE record at p, which make up almost all of a trace, when it lies whole in the
 * `left` bytes of the buffer (at least FAST_NEED) and passes validation: its size, its thread's
 * clock advanced. 0 sends it through the general path (other kinds, the buffer's end, anything
 * invalid), which repeats the checks and says what failed. The checks are those of
 * validate_alloc and validate_free. */
static inline __attribute__((always_inline)) size_t fast_record(const struct fast_view *v,
                                                                const uint8_t *p, size_t left)
{
    struct mst_record_header h;
    /* 4 KiB pages stop the hardware prefetcher at each page boundary of a mapped file */
    __builtin_prefetch(p + 2048);
    /* The usual records, of exactly their kind's size, are told by one comparison of the whole
     * header, which covers their length checks; each kind checks all of it in its own branch, so
     * values need not outlive the branch, which keeps them in registers. */
    uint64_t word;
    memcpy(&word, p, sizeof word);
    /* the short forms first: the shim writes them for every synchronous call */
    if (word == HEADER_WORD(MST_REC_ALLOC, sizeof(struct mst_rec_alloc_short)))
        return fast_alloc_short(v, (const void *)(p + sizeof h))
                   ? sizeof h + sizeof(struct mst_rec_alloc_short)
                   : 0;
    if (word == HEADER_WORD(MST_REC_FREE, sizeof(struct mst_rec_free_short)))
        return fast_free_short(v, (const void *)(p + sizeof h))
                   ? sizeof h + sizeof(struct mst_rec_free_short)
                   : 0;
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
    /* below the long form's size, the short form's with a tail; from it, the long form's (and
     * at most MST_MAX_RECORD) */
    if (h.kind == MST_REC_ALLOC && mst_alloc_is_short(h.length)) {
        if (h.length < sizeof(struct mst_rec_alloc_short) ||
            !fast_alloc_short(v, (const void *)(p + sizeof h)))
            return 0;
    } else if (h.kind == MST_REC_ALLOC) {
        if (h.length > MST_MAX_RECORD || !fast_alloc(v, (const void *)(p + sizeof h)))
            return 0;
    } else if (h.kind == MST_REC_FREE && mst_free_is_short(h.length)) {
        if (h.length < sizeof(struct mst_rec_free_short) ||
            !fast_free_short(v, (const void *)(p + sizeof h)))
            return 0;
    } else if (h.kind == MST_REC_FREE) {
        if (h.length > MST_MAX_RECORD || !fast_free(v, (const void *)(p + sizeof h)))
            return 0;
    } else {
        return 0;
    }
    return sizeof h + h.length;
}

static _Atomic int reader_vector = 1; /* see reader_vector_checks */

void reader_vector_checks(int on)
{
    atomic_store_explicit(&reader_vector, on != 0, memory_order_relaxed);
}

#if FAST_VECTOR
/* Whether fast_alloc_short() accepts a, told by one vector of the 32 bytes from its size on
 * (the last 4 past the record, within FAST_NEED of it): where every 32-bit field is within its
 * bound (thread: nlast - 1, which needs nlast at least 1; site, phase; the size's high half below
 * SIZE_MAX_PLAUSIBLE's; unrequested at most the size's low half) and then every byte (kind - 1,
 * category), their unsigned maxima with the bounds are the bounds. Stricter than the scalar
 * checks (a size of SIZE_MAX_PLAUSIBLE, or from 4 GiB with more unrequested than its low half):
 * 0 leaves those to them. With AVX2's three-operand forms, 11 instructions where the scalar
 * checks of these fields took 23. */
struct fast_bounds {
    __m256i minus, wide, bytes;
};

static inline __attribute__((always_inline, target("avx2"))) struct fast_bounds
fast_bounds_of(const struct fast_view *v)
{
    /* size (low, high), unrequested, thread, site, phase, kind ... flags, and 4 bytes beyond */
    return (struct fast_bounds){
        .minus = _mm256_set_epi32(0, 0xff, 0, 0, 0, 0, 0, 0),
        .wide = _mm256_set_epi32(-1, 0, (int)v->strings, (int)v->frames, (int)(v->nlast - 1), 0,
                                 (int)(SIZE_MAX_PLAUSIBLE >> 32) - 1, -1),
        .bytes = _mm256_set_epi32(
            0, (int)(0xffff0000u | (MST_CATEGORY_MAX - 1) << 8 | (MST_KIND_MAX - 2)), 0, 0, 0, 0, 0,
            0),
    };
}

static inline __attribute__((always_inline, target("avx2"))) int
fast_alloc_short_vector(const struct fast_view *v, const struct fast_bounds *b,
                        const struct mst_rec_alloc_short *a)
{
    _Static_assert(offsetof(struct mst_rec_alloc_short, size) + sizeof(__m256i) <=
                       FAST_NEED - sizeof(struct mst_record_header),
                   "the vector ends within FAST_NEED of the record");
    _Static_assert(offsetof(struct mst_rec_alloc_short, unrequested) == 24 &&
                       offsetof(struct mst_rec_alloc_short, thread) == 28 &&
                       offsetof(struct mst_rec_alloc_short, site) == 32 &&
                       offsetof(struct mst_rec_alloc_short, phase) == 36 &&
                       offsetof(struct mst_rec_alloc_short, kind) == 40 &&
                       offsetof(struct mst_rec_alloc_short, category) == 41,
                   "the fields where fast_bounds_of has their bounds");
    const __m256i x =
        _mm256_add_epi8(_mm256_loadu_si256((const void *)&a->size), b->minus); /* kind - 1 */
    /* the size's low half as the bound of unrequested */
    const __m256i wide = _mm256_blend_epi32(b->wide, _mm256_shuffle_epi32(x, 0xc4), 0x04);
    const __m256i over = _mm256_xor_si256(_mm256_max_epu8(_mm256_max_epu32(x, wide), b->bytes),
                                          _mm256_or_si256(wide, b->bytes));
    if (__builtin_expect(!_mm256_testz_si256(over, over), 0))
        return 0;
    const uint64_t time = a->time_ns;
    uint64_t *last = &v->last[a->thread];
    if (__builtin_expect(time + 1 <= *last, 0)) /* as in fast_common */
        return 0;
    *last = time;
    return 1;
}

/* fast_record() out of the loop below, for the records other than the short forms: inlined,
 * its bounds and their registers would push the loop's own onto the stack. The view by value,
 * so that the loop's copy is not taken for one that the stores of the loop may change. */
static __attribute__((noinline)) size_t fast_record_apart(struct fast_view v, const uint8_t *p,
                                                          size_t left)
{
    return fast_record(&v, p, left);
}

/* reader_next_refs()'s loop with the short ALLOC checked by fast_alloc_short_vector, for a
 * CPU with AVX2 and a trace with a thread defined: where it stops, with the refs it filled
 * before out_end in *n. */
static __attribute__((target("avx2"))) const uint8_t *
next_refs_vector(const struct fast_view *view, const uint8_t *p, const uint8_t *stop,
                 const uint8_t *end, const struct mst_record_header **out,
                 const struct mst_record_header **out_end, size_t *n)
{
    const struct fast_view v = *view; /* a local: the stores below cannot alias it */
    const struct fast_bounds bounds = fast_bounds_of(&v);
    const struct mst_record_header **first = out;
    /* rounds of the loop bounded by the position alone: fast_record() takes no record shorter
     * than a short FREE, so fewer records than refs has room for end before p + SHORTEST *
     * that room */
    enum { SHORTEST = sizeof(struct mst_record_header) + sizeof(struct mst_rec_free_short) };
    while (p < stop && out < out_end) {
        const size_t left = (size_t)(out_end - out);
        const uint8_t *round_end =
            (size_t)(stop - p) / SHORTEST >= left ? p + SHORTEST * left : stop;
        while (p < round_end) {
            size_t step;
            uint64_t word;
            memcpy(&word, p, sizeof word);
            __builtin_prefetch(p + 2048); /* as in fast_record */
            if (word == HEADER_WORD(MST_REC_ALLOC, sizeof(struct mst_rec_alloc_short))) {
                step = sizeof(struct mst_record_header) + sizeof(struct mst_rec_alloc_short);
                const void *a = p + sizeof(struct mst_record_header);
                if (__builtin_expect(!fast_alloc_short_vector(&v, &bounds, a), 0) &&
                    (step = fast_record_apart(v, p, (size_t)(end - p))) == 0)
                    goto done;
            } else if (word == HEADER_WORD(MST_REC_FREE, sizeof(struct mst_rec_free_short))) {
                step = sizeof(struct mst_record_header) + sizeof(struct mst_rec_free_short);
                if (!fast_free_short(&v, (const void *)(p + sizeof(struct mst_record_header))))
                    goto done;
            } else if ((step = fast_record_apart(v, p, (size_t)(end - p))) == 0) {
                goto done;
            }
            *out++ = (const struct mst_record_header *)(const void *)p;
            p += step;
        }
    }
done:
    *n = (size_t)(out - first);
    return p;
}
#endif

/* Fills rec from a record fast_record() accepted. */
static void fill_fast(const struct reader *r, struct reader_record *rec,
                      const struct mst_record_header *h)
{
    const char *payload = (const char *)(h + 1);
    uint32_t need = fixed_need(h->kind, h->length);
    rec->kind = h->kind;
    rec->length = h->length;
    rec->offset = r->buf_offset + (size_t)((const uint8_t *)h - r->buf);
    copy_fixed(rec, payload, need);
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

/* A prefetch of a page not yet mapped is dropped, so the pages that the prefetches of the next
 * batch reach (reader_fetch_ahead, fast_record) are mapped before it: one read every 64 KiB, the
 * span the kernel's fault-around maps of a page cache resident file a fault (more where the page
 * cache holds larger folios). MAP_POPULATE mapped them up front, but walked every page once more
 * after mapping it: on an AMD EPYC VM a third more kernel time than the faults that map them. */
static void map_ahead(struct reader *r)
{
    enum { FAULT_SPAN = 64u << 10 };
    if (!r->mapped)
        return;
    size_t to = r->buf_pos + reader_fetch_ahead(r) + FAULT_SPAN;
    to = to < r->buf_len ? to : r->buf_len;
    for (; r->faulted_in < to; r->faulted_in += FAULT_SPAN)
        (void)*(const volatile uint8_t *)(r->buf + r->faulted_in);
}

size_t reader_next_refs(struct reader *r, const struct mst_record_header **refs, size_t max)
{
    if (r->state != READER_OK || !r->buf || r->shapes.emitting)
        return 0;
    /* positions in locals: the stores to refs cannot alias them */
    const struct fast_view v = fast_view_of(r);
    const uint8_t *p = r->buf + r->buf_pos, *end = r->buf + r->buf_len;
    const struct mst_record_header **out = refs, **out_end = refs + max;
    /* past the last place where fast_record() has room, bounding the loop by one comparison;
     * p itself when there is none (a pointer inside the buffer, never NULL: pointers into
     * different objects do not compare) */
    const uint8_t *stop = (size_t)(end - p) >= FAST_NEED ? end - FAST_NEED + 1 : p;
    size_t step, n;
#if FAST_VECTOR
    if (v.nlast && atomic_load_explicit(&reader_vector, memory_order_relaxed) &&
        __builtin_cpu_supports("avx2")) {
        p = next_refs_vector(&v, p, stop, end, out, out_end, &n);
    } else
#endif
    {
        while (out < out_end && p < stop && (step = fast_record(&v, p, (size_t)(end - p))) != 0) {
            *out++ = (const struct mst_record_header *)(const void *)p;
            p += step;
        }
        n = (size_t)(out - refs);
    }
    if (bus_faulted(r))
        n = drop_past_end(r, refs, n);
    else
        r->buf_pos = (size_t)(p - r->buf);
    r->records += n;
    if (r->ahead.bytes)
        checksum_ahead(r);
    map_ahead(r);
    return n;
}

/* A checksummed write-out is summed while the one before it is handed out (checksum_ahead), a
 * write-out and its CHECKSUM record ahead of the read position: fetched LEAD bytes before the
 * sum reaches them, its lines are in the second-level cache when it does, and only those few are
 * held there at once. Without such a sum (its CHECKSUM record was not in the buffer yet) the
 * whole write-out is summed when its CHECKSUM record is read: fetched a write-out on, it is in
 * the cache then (capped at half the second-level cache, which also holds the write-out being
 * replayed). Without checksums the records come straight from memory: a quarter of a MiB ahead
 * keeps them coming. Never past the buffer: 0 (the record itself) when the distance does not fit
 * in what is left of it. */
size_t reader_fetch_ahead(const struct reader *r)
{
    enum { LEAD = 32u << 10, AHEAD_MAX = 1u << 20, AHEAD_PLAIN = 256u << 10 };
    size_t far = AHEAD_PLAIN;
    if (r->ahead.bytes)
        far = (size_t)(r->ahead.start - r->ahead.from) + LEAD;
    else if (r->last_checked)
        far = r->last_checked < AHEAD_MAX ? (size_t)r->last_checked : AHEAD_MAX;
    return far <= r->buf_len - r->buf_pos ? far : 0;
}

/* The next record a repeat stands for: 1 when rec holds it, 0 when none is due, -1 at an
 * error. */
static int next_emitted(struct reader *r, struct reader_record *rec)
{
    if (!r->shapes.emitting || r->state != READER_OK)
        return 0;
    int e = shape_emit(r, rec);
    if (e > 0)
        r->records++;
    return e;
}

int reader_next(struct reader *r, struct reader_record *rec)
{
    size_t step;
    int e = next_emitted(r, rec);
    if (e != 0)
        return e > 0 ? READER_RECORD : READER_END;
    const struct fast_view v = fast_view_of(r);
    if (r->state == READER_OK && r->buf && r->buf_len - r->buf_pos >= FAST_NEED &&
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
        if (h.kind == MST_REC_OP_DEFINE || h.kind == MST_REC_OP_REPEAT) {
            if (shape_record(r, off, h.kind, payload, h.length) != 0 ||
                (bus_faulted(r) && read_past_end(r, off, total)))
                return READER_END;
            if ((e = next_emitted(r, rec)) != 0)
                return e > 0 ? READER_RECORD : READER_END;
            continue;
        }
        if (h.kind > KIND_LAST || h.kind == MST_REC_CHECKSUM) {
            r->skipped++;
            continue;
        }
        uint32_t need = fixed_need(h.kind, h.length);
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
        if (validate(r, rec) != 0 || (bus_faulted(r) && read_past_end(r, off, total)) ||
            ((r->shapes.pending || r->shapes.filling) && shape_note(r, rec) != 0))
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
